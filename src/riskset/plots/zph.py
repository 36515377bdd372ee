"""Scaled Schoenfeld residuals against transformed time, one panel per coefficient, with a
smooth of them and the estimate (R's ``plot(cox.zph(fit))``): a slope is a departure from
proportional hazards."""
from __future__ import annotations

import numpy as np

from riskset.plots.layout import fit_to_canvas

def plot_zph(zph, columns=None, *, ncols: int = 2):
    """One panel per coefficient of ``zph`` (:func:`riskset.diagnostics.cox_zph`): the
    scaled residuals against the transformed event times (points), their running mean over a
    window of a fifth of the events (line: an estimate of beta(t)), and the fit's constant
    estimate (dashed), titled with the test's p-value. Under proportional hazards the line
    stays near the dashed one.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> import riskset
    >>> data = riskset.simulate(n=300, p=2, model="cox", seed=2)
    >>> fig = plot_zph(riskset.cox_zph(riskset.fit(data, "cox"), data))
    >>> len([ax for ax in fig.axes if ax.get_visible()])
    2
    """
    import matplotlib.pyplot as plt

    names = list(zph.y.columns) if columns is None else list(columns)
    rows = -(-len(names) // ncols)
    fig, axes = plt.subplots(rows, ncols, figsize=(4.2 * ncols, 3.2 * rows), squeeze=False)
    order = np.argsort(zph.x, kind="stable")
    x = zph.x[order]
    for ax, name in zip(axes.ravel(), names):
        y = zph.y[name].to_numpy()[order]
        ax.plot(x, y, ".", ms=3, color="0.55", alpha=0.6)
        window = max(5, y.size // 5)
        kernel = np.ones(window) / window
        smooth = np.convolve(y, kernel, mode="valid")
        centre = np.convolve(x, kernel, mode="valid")
        ax.plot(centre, smooth, color="C0", lw=1.5, label="running mean")
        ax.axhline(zph.estimate[name], color="C3", ls="--", lw=1, label="estimate (constant effect)")
        p = zph.table.loc[name, "p"]
        ax.set_title(f"{name}: PH test p = {p:.3g}", fontsize=10)
        ax.set_xlabel(f"time ({zph.transform} scale)")
        ax.set_ylabel(f"beta(t) for {name}")
    for ax in axes.ravel()[len(names):]:
        ax.set_visible(False)
    axes.ravel()[0].legend(loc="best", frameon=False, fontsize=8)
    fig.subplots_adjust(hspace=0.5, wspace=0.3)  # a panel's title clear of the axis label above it
    fit_to_canvas(fig)
    return fig
