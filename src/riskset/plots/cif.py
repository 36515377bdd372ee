"""Cumulative incidence curves (Aalen-Johansen) by group, with confidence bands and a
numbers-at-risk table below, as the Kaplan-Meier plot (matplotlib)."""
from __future__ import annotations

import numpy as np
from scipy import special

from riskset.competing_risks import aalen_johansen
from riskset.plots.km import thin_steps
from riskset.plots.layout import fit_to_canvas
from riskset.plots.risk_table import add_risk_table, figure_with_table


def plot_cif(time, status, group=None, weights=None, *, event_of_interest: int = 1, censor_code: int = 0,
             competing_events=None, show_competing: bool = False, conf_int: bool = True, level: float = 0.95,
             risk_table: bool = True, risk_times=None, ax=None, xlabel: str = "time",
             ylabel: str = "cumulative incidence", title: str | None = None):
    """Plot the Aalen-Johansen cumulative incidence of the event of interest, one curve per
    group, with pointwise confidence bands and a numbers-at-risk table.

    Parameters
    ----------
    time, status, group, weights : as for :func:`riskset.competing_risks.aalen_johansen`.
    show_competing : also draw the cumulative incidence of the competing events (dashed).
    conf_int : draw the pointwise band at ``level``: the variance of ``cmprsk::cuminc``
        (:func:`riskset.competing_risks.cif_variance`) on the log(-log) scale, so that the band
        stays inside (0, 1): F^exp(+-z sqrt(V) / (F log F)).
    risk_table : the numbers at risk (all causes) under the plot at ``risk_times``
        (default: the x ticks), as :func:`riskset.plots.plot_km`.
    ax : existing axes to draw into; without it, a new figure laid out so that a plain
        ``fig.savefig(path)`` keeps every label and the table.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> fig = plot_cif([1, 2, 3, 4, 5, 6], [1, 2, 0, 1, 1, 0], group=[0, 0, 0, 1, 1, 1])
    >>> fig.axes[1].get_title(loc="left")
    'Number at risk'
    """
    import matplotlib.pyplot as plt

    time = np.asarray(time, dtype=np.float64)
    aj = aalen_johansen(time, status, group=group, weights=weights, event_of_interest=event_of_interest,
                        censor_code=censor_code, competing_events=competing_events)
    groups = [None] if group is None else list(aj["group"].unique())
    owned = ax is None
    fig, ax, table_ax = figure_with_table(ax, len(groups), risk_table)
    parts = [aj if g is None else aj[aj["group"] == g] for g in groups]
    labels = ["all" if g is None else str(g) for g in groups]
    colors = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    colors = [colors[i % len(colors)] for i in range(len(groups))]
    z = special.ndtri(0.5 + level / 2)
    span = (0.0, float(np.max(time)) or 1.0)
    top = 0.0
    for part, label, color in zip(parts, labels, colors):
        lower, upper = _band(part["cif"].to_numpy(), part["variance"].to_numpy(), z)
        # at most one knot per 1/2000 of the time axis: the same picture, fast at millions of rows
        t, f, f2, lo, hi = thin_steps(part["time"].to_numpy(), part["cif"].to_numpy(),
                                      part["cif_competing"].to_numpy(), lower, upper, span=span)
        t, f, f2, lo, hi = (np.r_[0.0, a] for a in (t, f, f2, lo, hi))
        ax.step(t, f, where="post", color=color, label=label if group is not None else "event of interest")
        top = max(top, f.max(), hi.max() if conf_int else 0.0)
        if conf_int:
            ax.fill_between(t, lo, hi, step="post", color=color, alpha=0.15, linewidth=0)
        if show_competing:
            ax.step(t, f2, where="post", color=color, linestyle="--",
                    label="competing" if group is None else f"{label} (competing)")
            top = max(top, f2.max())
    ax.set_ylim(0, min(1.0, 1.1 * top + 0.02))
    ax.set_xlim(0, span[1] * 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if group is not None or show_competing:
        ax.legend(loc="best", frameon=False)
    if risk_table:
        add_risk_table(table_ax, ax, parts, labels, colors, span, risk_times, xlabel)
    if owned:
        fit_to_canvas(fig)
    return fig


def _band(cif, variance, z):
    """Pointwise band of the cumulative incidence on the log(-log) scale (inside (0, 1));
    the estimate itself where it is 0 or 1 or has no variance."""
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = z * np.sqrt(np.maximum(variance, 0.0)) / np.abs(cif * np.log(cif))
        lower, upper = cif ** np.exp(spread), cif ** np.exp(-spread)
    inside = (cif > 0) & (cif < 1) & np.isfinite(spread)
    return np.where(inside, lower, cif), np.where(inside, upper, cif)
