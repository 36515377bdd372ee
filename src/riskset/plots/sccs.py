"""The age and season effects of a self-controlled case series: the fitted rate ratio over
the months of the year and over age, centred on their mean log (as SelfControlledCaseSeries'
``plotSeasonality`` and ``plotAgeEffect`` draw them)."""
from __future__ import annotations

import numpy as np

from riskset.plots.layout import fit_to_canvas

LINE_COLOR = "#1f4e9c"


def plot_time_effects(curves: dict, path=None):
    """One panel per curve of ``curves`` (:func:`riskset.data.sccs_time.time_effect_curves`:
    ``"season"`` with columns month, rr; ``"age"`` with age_years, rr), rate ratio on a log axis.

    >>> import pandas as pd
    >>> season = pd.DataFrame({"month": range(1, 13), "rr": [1.2] * 6 + [0.8] * 6})
    >>> fig = plot_time_effects({"season": season})
    >>> [a.get_xlabel() for a in fig.axes]
    ['month of the year']
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    panels = [k for k in ("season", "age") if k in curves]
    fig, axes = plt.subplots(1, max(len(panels), 1), figsize=(4.2 * max(len(panels), 1), 3.4), squeeze=False)
    for number, (ax, kind) in enumerate(zip(axes[0], panels)):
        curve = curves[kind]
        x = curve["month"] if kind == "season" else curve["age_years"]
        ax.plot(x, curve["rr"], color=LINE_COLOR, linewidth=1.6, marker="o" if kind == "season" else None,
                markersize=3.5)
        ax.axhline(1.0, color="0.4", linewidth=0.7)
        ax.set_yscale("log")
        low, high = float(np.min(curve["rr"])), float(np.max(curve["rr"]))
        span = max(high / low, 1.25) ** 0.15
        bottom, top = min(low, 1.0) / span, max(high, 1.0) * span
        ax.set_ylim(bottom, top)
        ticks = [t for t in (0.25, 0.5, 0.67, 0.8, 1.0, 1.25, 1.5, 2.0, 4.0) if bottom <= t <= top]
        ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
        ax.minorticks_off()
        if kind == "season":
            ax.set_xticks(range(1, 13))
            ax.set_xlabel("month of the year")
            ax.set_title("season", fontsize=10)
        else:
            ax.set_xlabel("age (years)")
            ax.set_title("age", fontsize=10)
        if number == 0:
            ax.set_ylabel("rate ratio (to the mean)")
        ax.grid(axis="y", color="0.9", linewidth=0.6)
    fit_to_canvas(fig)
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


__all__ = ["plot_time_effects"]
