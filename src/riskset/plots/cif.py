"""Cumulative incidence curves (Aalen-Johansen) by group, with matplotlib."""
from __future__ import annotations

import numpy as np

from riskset.competing_risks import aalen_johansen
from riskset.plots.km import thin_steps


def plot_cif(time, status, group=None, weights=None, *, event_of_interest: int = 1, censor_code: int = 0,
             competing_events=None, show_competing: bool = False, ax=None, xlabel: str = "time",
             ylabel: str = "cumulative incidence", title: str | None = None):
    """Plot the Aalen-Johansen cumulative incidence of the event of interest, one curve per group.

    Parameters
    ----------
    time, status, group, weights : as for :func:`riskset.competing_risks.aalen_johansen`.
    show_competing : also draw the cumulative incidence of the competing events (dashed).
    ax : existing axes to draw into.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    aj = aalen_johansen(time, status, group=group, weights=weights, event_of_interest=event_of_interest,
                        censor_code=censor_code, competing_events=competing_events)
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4.5))
    else:
        fig = ax.figure
    groups = [None] if group is None else list(aj["group"].unique())
    colors = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    top = 0.0
    span = (0.0, float(np.max(time)) or 1.0)
    for i, g in enumerate(groups):
        part = aj if g is None else aj[aj["group"] == g]
        # at most one knot per 1/2000 of the time axis: the same picture, fast at millions of rows
        t, f, f2 = thin_steps(part["time"].to_numpy(), part["cif"].to_numpy(), part["cif_competing"].to_numpy(),
                              span=span)
        t, f, f2 = np.r_[0.0, t], np.r_[0.0, f], np.r_[0.0, f2]
        color = colors[i % len(colors)]
        ax.step(t, f, where="post", color=color, label="all" if g is None else str(g))
        top = max(top, f.max())
        if show_competing:
            ax.step(t, f2, where="post", color=color, linestyle="--",
                    label="competing" if g is None else f"{g} (competing)")
            top = max(top, f2.max())
    ax.set_ylim(0, min(1.0, 1.1 * top + 0.02))
    ax.set_xlim(left=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if group is not None or show_competing:
        ax.legend(loc="best", frameon=False)
    return fig
