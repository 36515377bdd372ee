"""The empirical-calibration plot (EmpiricalCalibration's ``plotCalibrationEffect``): each
negative control's estimate against its standard error, the region where a traditional test
calls p < 0.05 (outside the dashed lines) and where the calibrated test does (outside the
shaded funnel of the empirical null), and the outcome of interest marked.
"""
from __future__ import annotations

import numpy as np

from riskset.plots.propensity import COMPARATOR_COLOR, TARGET_COLOR
from riskset.plots.selection import _axes, _finish

Z = 1.959963984540054


def plot_calibration(null_mean: float, null_sd: float, log_rr, se, path=None, ax=None, *, estimate=None,
                     label: str = "outcome of interest"):
    """Negative-control estimates ``log_rr`` (x, ratio scale) against their standard errors
    ``se`` (y), with the null N(``null_mean``, ``null_sd``^2); ``estimate`` = (log_rr, se) of the
    outcome of interest, drawn as a diamond.

    >>> fig = plot_calibration(0.1, 0.05, [0.0, 0.2, 0.15], [0.1, 0.2, 0.3], estimate=(-0.35, 0.1))
    >>> fig.axes[0].get_xscale()
    'log'
    """
    fig, ax = _axes(ax, figsize=(5.6, 4.2))
    owned = ax.figure is fig and len(fig.axes) == 1
    x, s = np.asarray(log_rr, dtype=np.float64), np.asarray(se, dtype=np.float64)
    top = float(np.nanmax(np.r_[s, [estimate[1]] if estimate is not None else [], 0.1])) * 1.1
    grid = np.linspace(0.0, top, 200)
    half = Z * np.sqrt(null_sd ** 2 + grid ** 2)
    ax.fill_betweenx(grid, np.exp(null_mean - half), np.exp(null_mean + half), color="0.88", zorder=0,
                     label="calibrated p >= 0.05")
    ax.plot(np.exp(-Z * grid), grid, color="0.4", linestyle="--", linewidth=0.8, label="traditional p = 0.05")
    ax.plot(np.exp(Z * grid), grid, color="0.4", linestyle="--", linewidth=0.8)
    ax.scatter(np.exp(x), s, s=14, color=COMPARATOR_COLOR, alpha=0.75, linewidths=0,
               label=f"negative controls ({x.size})")
    if estimate is not None:
        ax.scatter([np.exp(estimate[0])], [estimate[1]], marker="D", s=40, color=TARGET_COLOR, label=label, zorder=3)
    ax.axvline(1.0, color="0.2", linewidth=0.6)
    ax.set_xscale("log")
    span = float(np.nanmax(np.abs(np.r_[x, null_mean + half[-1], [estimate[0]] if estimate is not None else []])))
    ax.set_xlim(np.exp(-span * 1.1), np.exp(span * 1.1))
    ticks = [t for t in (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 10.0) if np.exp(-span * 1.1) <= t <= np.exp(span * 1.1)]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_ylim(top, 0)  # the most precise estimates at the top, as EmpiricalCalibration draws it
    ax.set_xlabel("Effect estimate (ratio)")
    ax.set_ylabel("Standard error of the log estimate")
    ax.set_title(f"empirical null: mean {null_mean:.3f}, sd {null_sd:.3f} (log scale)", fontsize=9)
    ax.legend(fontsize=7, loc="lower left", framealpha=0.9)
    return _finish(fig, path, owned=owned)
