"""Kaplan-Meier curves by group with a numbers-at-risk table below (matplotlib).

Readable at any cohort size: the step curves and bands are reduced to at most a few
thousand knots (below a pixel), censoring marks are thinned to one per slice of the
time axis, and the at-risk table is drawn as text aligned on the time ticks.
"""
from __future__ import annotations

import numpy as np

from riskset.plots.layout import fit_to_canvas
from riskset.plots.risk_table import add_risk_table, figure_with_table
from riskset.survival import kaplan_meier
from riskset.validation import renamed

#: Knots kept per curve: one per 1/STEP_BINS of the time axis, far below a pixel.
STEP_BINS = 2000


@renamed(conf_level="level")
def plot_km(time, status, group=None, weights=None, *, conf_int: bool = True, level: float = 0.95,
            risk_table: bool = True, risk_times=None, censor_marks: str = "thin", max_censor_marks: int = 40,
            ax=None, xlabel: str = "time", ylabel: str = "survival probability", title: str | None = None):
    """Plot Kaplan-Meier curves (one per group) with confidence bands and an at-risk table.

    Parameters
    ----------
    time, status, group, weights : arrays as for :func:`riskset.survival.kaplan_meier`.
    conf_int : draw the pointwise confidence band (log scale, Greenwood) at ``level``
        (old name ``conf_level``, deprecated).
    risk_table : add a numbers-at-risk table below the plot, at ``risk_times``
        (default: the x ticks).
    censor_marks : ``"thin"`` (default) marks censoring with at most one tick per
        ``1 / max_censor_marks`` of the time axis per curve, so at most ``max_censor_marks``
        per curve (the legend says when marks were thinned); ``"all"`` marks every
        censoring time; ``"none"`` draws no marks.
    ax : existing axes to draw into (the table is then placed below it); without it, a
        new figure laid out so that a plain ``fig.savefig(path)`` keeps every label and the
        table (:func:`riskset.plots.layout.fit_to_canvas`). The table uses the figure's
        tick label font.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> fig = plot_km([1, 2, 2, 3, 4], [1, 1, 0, 1, 0], xlabel="years")
    >>> fig.axes[0].get_xlabel()
    'years'
    """
    import matplotlib.pyplot as plt

    if censor_marks not in ("thin", "all", "none"):
        raise ValueError(f"censor_marks must be 'thin', 'all' or 'none', got {censor_marks!r}")
    time = np.asarray(time, dtype=np.float64)
    km = kaplan_meier(time, status, group=group, weights=weights, level=level)
    owned = ax is None
    fig, ax, table_ax = figure_with_table(ax, n_rows=km["group"].nunique() if group is not None else 1,
                                          risk_table=risk_table)
    groups = [None] if group is None else list(km["group"].unique())
    parts = [km if g is None else km[km["group"] == g] for g in groups]
    labels = ["all" if g is None else str(g) for g in groups]
    colors = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    colors = [colors[i % len(colors)] for i in range(len(groups))]
    span = (0.0, float(time.max()) or 1.0)
    thinned = False
    for part, label, color in zip(parts, labels, colors):
        _draw_curve(ax, part, color, label, conf_int, span)
        if censor_marks != "none":
            thinned |= _draw_censor_marks(ax, part, color, span, None if censor_marks == "all" else max_censor_marks)
    ax.set_ylim(0, 1.02)
    ax.set_xlim(0, span[1] * 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    _legend(ax, group is not None, censor_marks != "none" and (km["n_censor"] > 0).any(), thinned)
    if risk_table:
        add_risk_table(table_ax, ax, parts, labels, colors, span, risk_times, xlabel)
    if owned:
        fit_to_canvas(fig)
    return fig


def thin_steps(t, *values, n_bins: int = STEP_BINS, span=None):
    """Keep the last knot in each of ``n_bins`` slices of the time axis.

    A right-continuous step function drawn through these knots differs from the full
    one by less than one slice horizontally, i.e. by less than a pixel.
    """
    lo, hi = span if span is not None else (t[0], t[-1])
    slice_of = np.minimum(np.floor((t - lo) / max(hi - lo, 1e-300) * n_bins), n_bins - 1).astype(np.int64)
    keep = np.r_[slice_of[1:] != slice_of[:-1], True]
    return (t[keep],) + tuple(v[keep] for v in values)


def _draw_curve(ax, part, color, label, conf_int, span):
    """Survival step curve from (0, 1), with its confidence band."""
    t, s, lo, hi = thin_steps(part["time"].to_numpy(), part["survival"].to_numpy(),
                               part["lower"].fillna(0.0).to_numpy(), part["upper"].fillna(0.0).to_numpy(),
                               span=span)
    t, s, lo, hi = np.r_[0.0, t], np.r_[1.0, s], np.r_[1.0, lo], np.r_[1.0, hi]
    ax.step(t, s, where="post", color=color, label=label)
    if conf_int:
        ax.fill_between(t, lo, hi, step="post", color=color, alpha=0.15, linewidth=0)


def _draw_censor_marks(ax, part, color, span, max_marks) -> bool:
    """Tick marks at censoring times on the curve; with ``max_marks``, at most one per
    ``1 / max_marks`` of the time axis. Returns whether any mark was dropped."""
    cens = part[part["n_censor"].to_numpy() > 0]
    t, s = cens["time"].to_numpy(), cens["survival"].to_numpy()
    if max_marks is not None and t.size > 0:
        t_kept, s_kept = thin_steps(t, s, n_bins=max_marks, span=span)
    else:
        t_kept, s_kept = t, s
    ax.plot(t_kept, s_kept, "|", color=color, ms=6)
    return t_kept.size < t.size


def _legend(ax, by_group: bool, has_marks: bool, thinned: bool):
    """Group colours, and what the tick marks mean (and that they were thinned)."""
    from matplotlib.lines import Line2D

    handles, labels = ax.get_legend_handles_labels() if by_group else ([], [])
    if has_marks:
        handles.append(Line2D([], [], color="0.3", marker="|", linestyle="none", ms=6))
        labels.append("censored (marks thinned)" if thinned else "censored")
    if handles:
        ax.legend(handles, labels, loc="best", frameon=False)
