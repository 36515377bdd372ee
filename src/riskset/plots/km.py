"""Kaplan-Meier curves by group with a numbers-at-risk table below (matplotlib)."""
from __future__ import annotations

import numpy as np

from riskset.survival import kaplan_meier, numbers_at_risk


def plot_km(time, status, group=None, weights=None, *, conf_int: bool = True, conf_level: float = 0.95,
            risk_table: bool = True, risk_times=None, ax=None, xlabel: str = "time",
            ylabel: str = "survival probability", title: str | None = None):
    """Plot Kaplan-Meier curves (one per group) with confidence bands and an at-risk table.

    Parameters
    ----------
    time, status, group, weights : arrays as for :func:`riskset.survival.kaplan_meier`.
    conf_int : draw the pointwise confidence band (log scale, Greenwood).
    risk_table : add a numbers-at-risk table below the plot, at ``risk_times``
        (default: the x ticks).
    ax : existing axes to draw into (the table is then placed below it).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    time = np.asarray(time, dtype=np.float64)
    km = kaplan_meier(time, status, group=group, weights=weights, conf_level=conf_level)
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 5 if risk_table else 4))
    else:
        fig = ax.figure
    groups = [None] if group is None else list(km["group"].unique())
    colors = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    for i, g in enumerate(groups):
        part = km if g is None else km[km["group"] == g]
        t = np.r_[0.0, part["time"].to_numpy()]
        s = np.r_[1.0, part["survival"].to_numpy()]
        color = colors[i % len(colors)]
        ax.step(t, s, where="post", color=color, label="all" if g is None else str(g))
        cens = part["n_censor"].to_numpy() > 0
        ax.plot(part["time"].to_numpy()[cens], part["survival"].to_numpy()[cens], "|", color=color, ms=6)
        if conf_int:
            lo = np.r_[1.0, part["lower"].fillna(0.0).to_numpy()]
            hi = np.r_[1.0, part["upper"].fillna(0.0).to_numpy()]
            ax.fill_between(t, lo, hi, step="post", color=color, alpha=0.15, linewidth=0)
    ax.set_ylim(0, 1.02)
    ax.set_xlim(left=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if group is not None:
        ax.legend(loc="best", frameon=False)
    if risk_table:
        ticks = [t for t in ax.get_xticks() if 0 <= t <= time.max()] if risk_times is None else list(risk_times)
        ax.set_xticks(ticks)
        nar = numbers_at_risk(time, ticks, group=group, weights=weights)
        rows = [str(g) for g in nar.index]
        cells = [[f"{v:.0f}" if float(v).is_integer() else f"{v:.1f}" for v in r] for r in nar.to_numpy()]
        fig.subplots_adjust(bottom=0.12 + 0.05 * len(rows))
        tab = ax.table(cellText=cells, rowLabels=rows, colLabels=None, cellLoc="center",
                       bbox=[0.0, -0.18 - 0.07 * len(rows), 1.0, 0.07 * len(rows)], edges="open")
        tab.auto_set_font_size(False)
        tab.set_fontsize(8)
        ax.text(0.0, -0.16, "Number at risk", transform=ax.transAxes, fontsize=8, ha="left", va="bottom")
        # align table columns with the ticks
        lo, hi = ax.get_xlim()
        width = 1.0 / max(len(ticks), 1)
        for (r, c), cell in tab.get_celld().items():
            if c >= 0:
                x = (ticks[c] - lo) / (hi - lo)
                cell.set_x(x - width / 2)
                cell.set_width(width)
    return fig
