"""The numbers-at-risk table under a survival or cumulative incidence plot."""
from __future__ import annotations

import numpy as np


def figure_with_table(ax, n_rows: int, risk_table: bool, figsize=(7, 4.5)):
    """(figure, curve axes, table axes or None); a new figure gives the table a row of its own
    (one line per group under a header line); given ``ax``, the table goes below it."""
    import matplotlib.pyplot as plt

    if not risk_table:
        if ax is None:
            fig, ax = plt.subplots(figsize=(figsize[0], figsize[1] - 0.5))
        return ax.figure, ax, None
    table_height = 0.45 + 0.22 * n_rows  # inches
    if ax is None:
        fig, (ax, table_ax) = plt.subplots(2, 1, figsize=(figsize[0], figsize[1] + table_height), sharex=True,
                                           gridspec_kw={"height_ratios": [figsize[1], table_height],
                                                        "hspace": 0.35})
        return fig, ax, table_ax
    fraction = table_height / ax.figure.get_size_inches()[1] / ax.get_position().height
    table_ax = ax.inset_axes([0.0, -0.25 - fraction, 1.0, fraction], sharex=ax)
    return ax.figure, ax, table_ax


def numbers_at(part, ticks) -> np.ndarray:
    """Number (weight) at risk at each tick: ``n_risk`` at the first distinct time >= the tick
    of a table of distinct times (Kaplan-Meier or Aalen-Johansen), 0 past the last."""
    first = np.searchsorted(part["time"].to_numpy(), ticks, side="left")
    return np.r_[part["n_risk"].to_numpy(), 0.0][first]


def table_fonts():
    """(numbers, header) font sizes in points from the figure's rc settings: the tick labels'
    and the axis labels' (the family is the figure's own, ``font.family``)."""
    import matplotlib.pyplot as plt
    from matplotlib.font_manager import FontProperties

    return (FontProperties(size=plt.rcParams["xtick.labelsize"]).get_size_in_points(),
            FontProperties(size=plt.rcParams["axes.labelsize"]).get_size_in_points())


def add_risk_table(table_ax, ax, parts, labels, colors, span, risk_times, xlabel) -> None:
    """The numbers at risk of each group's table of distinct times (``parts``) under ``ax``, at
    ``risk_times`` (default: the x ticks within ``span``), which become the x ticks."""
    ticks = [t for t in ax.get_xticks() if 0 <= t <= span[1]] if risk_times is None else list(risk_times)
    ax.set_xticks(ticks)
    ax.set_xlim(0, span[1] * 1.02)
    draw_risk_table(table_ax, ax, labels, [numbers_at(part, ticks) for part in parts], ticks, colors, xlabel)


def draw_risk_table(table_ax, ax, labels, at_risk, ticks, colors, xlabel) -> None:
    """Numbers at risk as text centred under the time ticks of ``ax``, one coloured row per
    group, in the figure's tick label font."""
    size, header = table_fonts()
    texts = [[f"{v:,.0f}" if float(v).is_integer() else f"{v:,.1f}" for v in row] for row in at_risk]
    widest = max((len(x) for row in texts for x in row), default=1)
    table_ax.set_ylim(len(labels) - 0.5, -0.5)
    table_ax.tick_params(axis="x", labelbottom=False, bottom=False)
    # group names sit left of the first column, which is centred on t = 0: pad by half its width
    table_ax.set_yticks(range(len(labels)), labels)
    table_ax.tick_params(axis="y", length=0, pad=4 + 0.3 * size * widest, labelsize=size)
    for tick_label, color in zip(table_ax.get_yticklabels(), colors):
        tick_label.set_color(color)
    for side in table_ax.spines.values():
        side.set_visible(False)
    table_ax.set_title("Number at risk", fontsize=header, loc="left")
    for r, row in enumerate(texts):
        for t, text in zip(ticks, row):
            table_ax.text(t, r, text, ha="center", va="center", fontsize=size)
    ax.tick_params(axis="x", labelbottom=True)
    ax.set_xlabel(xlabel)
