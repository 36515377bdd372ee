"""Fan chart: quantile bands over tasks of one state against time."""

import numpy as np

DEFAULT_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def fan_quantiles(values, quantiles=DEFAULT_QUANTILES):
    """``(len(quantiles), n_times)`` quantiles over tasks, ignoring NaN."""
    v = np.asarray(values, float)
    q = np.asarray(quantiles, float)
    if np.any((q < 0) | (q > 1)):
        raise ValueError("quantiles must lie in [0, 1]")
    if v.shape[0] == 0:
        return np.full((q.size, v.shape[1]), np.nan)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        return np.nanquantile(v, q, axis=0)


def fan_chart(result, state, quantiles=DEFAULT_QUANTILES, ax=None,
              color="C0", title=None, path=None, only_success=True,
              xlabel="time", ylabel=None):
    """Plot quantile bands of ``state`` over the tasks of ``result``.

    Bands are drawn between symmetric pairs of ``quantiles`` (outer pairs
    lighter) and the median (if 0.5 is among them) as a line. Uses the
    matplotlib object API only (safe with the Agg backend / no display).
    ``ylabel`` defaults to the state's name; the y ticks carry thousands
    separators. Returns the Axes; with ``path`` the figure is also saved there.
    """
    if ax is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(7, 4))
        ax = fig.add_subplot(1, 1, 1)
    else:
        fig = ax.figure
    vals = result.state(state)
    if only_success:
        vals = vals[result.success]
    qs = sorted(float(x) for x in quantiles)
    Q = fan_quantiles(vals, qs)
    t = result.t
    k = len(qs)
    npairs = k // 2
    for i in range(npairs):
        lo, hi = Q[i], Q[k - 1 - i]
        alpha = 0.15 + 0.5 * (i + 1) / max(npairs, 1) * 0.6
        ax.fill_between(t, lo, hi, color=color, alpha=alpha, linewidth=0,
                        label=f"{qs[i]:.0%}-{qs[k - 1 - i]:.0%}")
    if k % 2 == 1:
        ax.plot(t, Q[npairs], color=color, lw=1.5,
                label=f"{qs[npairs]:.0%} (median)" if qs[npairs] == 0.5
                else f"{qs[npairs]:.0%}")
    from matplotlib.ticker import FuncFormatter

    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel or state)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.6g}"))
    ax.set_title(title or f"{result.model_name}: {state} over "
                 f"{vals.shape[0]} parameter sets")
    ax.legend(loc="best", fontsize="small", title="quantile over parameter sets",
              title_fontsize="small", frameon=False)
    if path is not None:
        fig.savefig(path, dpi=120, bbox_inches="tight")
    return ax
