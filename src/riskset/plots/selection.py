"""Plots for model selection and uncertainty: CV curve, coefficient paths, forest plot.

Readable with hundreds of covariates: the forest plot shows the ``top`` coefficients
largest in absolute value (non-zero ones) with a height that grows per row up to a cap,
and the path plot labels its ``top`` curves with names spread apart so they never overlap.
``labels`` maps covariate names (e.g. numeric covariate ids) to the text to show.
"""
from __future__ import annotations

import numpy as np

from riskset.plots.layout import fit_to_canvas

#: Forest plot: inches per row, inches for title and axis, and the height cap (inches).
ROW_HEIGHT, FRAME_HEIGHT, MAX_HEIGHT = 0.25, 1.3, 16.0
#: Smallest label font (points) when a capped forest plot shrinks its rows.
MIN_FONT = 4.0
#: Longest coefficient label drawn (characters); longer ones end in an ellipsis.
MAX_LABEL = 60


def _axes(ax, figsize=(6.4, 4.2)):
    import matplotlib

    if ax is not None:
        return ax.figure, ax
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=figsize)


def _finish(fig, path, owned: bool):
    """Lay out a figure the plot made (:func:`riskset.plots.layout.fit_to_canvas`: a plain
    ``savefig`` keeps every label and value column) and save it to ``path`` if given."""
    if owned:
        fit_to_canvas(fig)
    if path is not None:
        fig.savefig(path, dpi=120, bbox_inches=None if owned else "tight")
    return fig


def _display_names(names, labels):
    """Names to print: ``labels[name]`` where given (a dict or Series), else the name itself;
    longer than ``MAX_LABEL`` characters (OHDSI covariate names can be 150), cut with an ellipsis."""
    mapping = {} if labels is None else dict(labels)
    shown = [str(mapping.get(n, n)) for n in names]
    return [s if len(s) <= MAX_LABEL else s[:MAX_LABEL - 1].rstrip() + "\u2026" for s in shown]


def plot_cv(cv, path=None, ax=None):
    """Mean held-out log-likelihood (+- 1 standard error) against the prior variance.

    Examples
    --------
    >>> import riskset
    >>> d = riskset.simulate(n=300, p=5, model="logistic", seed=1)
    >>> cv = riskset.cross_validate(d, "logistic", riskset.Laplace(gamma=1.0), n_grid=3, n_folds=3,
    ...                             progress=False)
    >>> cv.plot().axes[0].get_xscale()
    'log'
    """
    owned = ax is None
    fig, ax = _axes(ax)
    s = cv.summary.sort_values("variance")
    ax.errorbar(s["variance"], s["mean"], yerr=s["se"].fillna(0), marker="o", ms=3, capsize=2)
    ax.axvline(cv.selected_variance, color="C3", ls="--")
    ax.set_xscale("log")
    ax.set_xlabel("prior variance (log scale)")
    ax.set_ylabel("held-out log-likelihood (mean \u00b1 1 SE)")
    n_splits = len(cv.scores[["repeat", "fold"]].drop_duplicates())
    ax.set_title(f"Cross-validation over {n_splits} held-out folds: "
                 f"selected variance {cv.selected_variance:.3g} (dashed)", fontsize=10)
    return _finish(fig, path, owned)


def plot_path(path_table, path=None, ax=None, top: int | None = 10, labels=None):
    """Coefficient paths against the prior variance; the ``top`` largest at the widest prior are named.

    ``top=None`` names every curve. Names are spread vertically so they never overlap;
    a thin line joins each name to the end of its curve. ``labels`` maps names to the
    text shown; by default ``path_table.attrs['labels']`` (set by
    :func:`riskset.regularization_path` from the covariate reference table).

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"a": [0.0, 0.5, 1.0], "b": [0.0, -0.1, -0.3]},
    ...                      index=pd.Index([0.01, 0.1, 1.0], name="variance"))
    >>> fig = plot_path(table, top=1)
    >>> [t.get_text() for t in fig.axes[0].texts]
    ['a']
    """
    labels = path_table.attrs.get("labels") if labels is None else labels
    owned = ax is None
    fig, ax = _axes(ax)
    table = path_table.drop(columns=[c for c in ("intercept",) if c in path_table.columns])
    v = table.index.to_numpy()
    final = table.iloc[-1].abs().sort_values(ascending=False)
    named = list(final.index[:len(final) if top is None else top])
    for name in table.columns:
        if name not in named:
            ax.plot(v, table[name], lw=0.8, color="0.7")
    colors = [ax.plot(v, table[name], lw=1.2)[0].get_color() for name in named]
    ax.set_xscale("log")
    ax.set_xlabel("prior variance (log scale; weaker penalty to the right)")
    ax.set_ylabel("coefficient")
    shown = f"the {len(named)} largest named" if len(named) < table.shape[1] else "all named"
    ax.set_title(f"Regularization path: {table.shape[1]} coefficients, {shown}")
    _name_curve_ends(ax, v[-1], table[named].iloc[-1].to_numpy(), _display_names(named, labels), colors)
    return _finish(fig, path, owned)


def _name_curve_ends(ax, x_end, y_ends, names, colors, fontsize=7):
    """Write ``names`` right of the axes at the curves' end heights, pushed apart to one line each."""
    if len(names) == 0:
        return
    fig = ax.figure
    fig.canvas.draw()  # fixes the y limits and the axes' size in pixels
    lo, hi = ax.get_ylim()
    axes_px = ax.get_window_extent().height
    gap = (hi - lo) * (fontsize * 1.25 * fig.dpi / 72) / axes_px  # one text line, in data units
    order = np.argsort(y_ends)
    placed = _spread(np.asarray(y_ends, float)[order], gap, lo, hi)
    for k, i in enumerate(order):
        ax.annotate(names[i], xy=(x_end, y_ends[i]), xycoords="data",
                    xytext=(1.02, (placed[k] - lo) / (hi - lo)), textcoords="axes fraction",
                    va="center", fontsize=fontsize, color=colors[i], annotation_clip=False,
                    arrowprops=dict(arrowstyle="-", color="0.6", lw=0.5, shrinkA=0, shrinkB=0))


def _spread(y_sorted, gap, lo, hi):
    """Positions >= ``gap`` apart, as close to the sorted ``y_sorted`` as a push up then down allows."""
    y = np.array(y_sorted, float)
    for k in range(1, y.size):  # push up what is too close to the one below
        y[k] = max(y[k], y[k - 1] + gap)
    top = max(hi, lo + gap * (y.size - 1))
    y[-1] = min(y[-1], top)
    for k in range(y.size - 2, -1, -1):  # then down what went past the top
        y[k] = min(y[k], y[k + 1] - gap)
    return y


def select_rows(table, top: int | None):
    """The forest plot's rows: all when ``top`` is None or there are at most ``top``; else the
    non-zero estimates, the ``top`` largest in absolute value, sorted by estimate."""
    if top is None or len(table) <= top:
        return table
    nonzero = table[table["estimate"] != 0]
    chosen = nonzero.loc[nonzero["estimate"].abs().sort_values(ascending=False).index[:top]]
    return chosen.sort_values("estimate", ascending=False)


def plot_forest(table, path=None, ax=None, title="Intervals", exponentiate: bool = False,
                top: int | None = 30, labels=None, xlabel: str | None = None, values: bool = True):
    """Forest plot: one row per coefficient with its estimate and interval.

    Parameters
    ----------
    table : DataFrame with columns name, estimate, lower, upper (log scale for ratio models).
    exponentiate : show exp(estimate) and its interval on a log axis (hazard, odds or rate
        ratios, the convention for those models).
    top : with more rows than ``top``, show only the ``top`` non-zero estimates largest in
        absolute value, sorted by estimate; the subtitle says how many were left out.
        ``top=None`` shows every row.
    labels : mapping from name to the label to print (e.g. covariate id to description);
        by default the table's ``covariate_name`` column where it has one (coefficient
        and bootstrap tables of data with a covariate reference table).
    xlabel : axis label; default "coefficient" or "exp(coefficient), log scale".
    values : print "estimate (lower to upper)" in a column right of the plot.

    The height grows by ``ROW_HEIGHT`` inches per row up to ``MAX_HEIGHT``; beyond that
    the row labels shrink (down to ``MIN_FONT`` points).

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"name": ["a", "b", "c"], "estimate": [0.5, 0.0, -1.0],
    ...                   "lower": [0.1, -0.2, -1.5], "upper": [0.9, 0.3, -0.4]})
    >>> fig = plot_forest(t, top=2)
    >>> [x.get_text() for x in fig.axes[0].get_yticklabels()]
    ['a', 'c']
    """
    if labels is None and "covariate_name" in table.columns:
        labels = dict(zip(table["name"], table["covariate_name"]))
    shown = select_rows(table, top)
    n = len(shown)
    owned = ax is None
    fig, ax = _axes(ax, figsize=(6.4, min(FRAME_HEIGHT + ROW_HEIGHT * max(n, 1), MAX_HEIGHT)))
    y = np.arange(n)[::-1]
    est, lo, hi = (shown[c].to_numpy(dtype=float) for c in ("estimate", "lower", "upper"))
    if exponentiate:
        est, lo, hi = np.exp(est), np.exp(lo), np.exp(hi)
    ax.hlines(y, lo, hi, color="C0")
    ax.plot(est, y, "o", color="C0", ms=4)
    ax.axvline(1.0 if exponentiate else 0.0, color="0.5", lw=0.8, ls=":")
    fontsize = _row_font_size(ax, n)
    ax.set_yticks(y, _display_names(shown["name"], labels), fontsize=fontsize)
    ax.set_ylim(-0.7, n - 0.3)
    if exponentiate:
        _ratio_axis(ax)
    if values:
        _value_column(ax, y, est, lo, hi, fontsize, "ratio" if exponentiate else "estimate")
    ax.set_xlabel(xlabel or ("exp(coefficient), log scale" if exponentiate else "coefficient"))
    ax.set_title(title if n == len(table) else
                 f"{title}\nthe {n} largest of {len(table)} coefficients ({(table['estimate'] == 0).sum()} are zero)",
                 fontsize=10)
    return _finish(fig, path, owned)


def _ratio_axis(ax):
    """Log x axis with ticks at 1, 2, 5 times powers of ten, written plainly (0.5, 1, 2; not 10^0)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _row_font_size(ax, n_rows):
    """Label font (points) that fits one line per row of ``ax``: 9 points, smaller when rows are thin."""
    ax_points = ax.get_position().height * ax.figure.get_size_inches()[1] * 72
    return max(MIN_FONT, min(9.0, 0.8 * ax_points / max(n_rows, 1)))


def _value_column(ax, y, est, lo, hi, fontsize, what):
    """"estimate (lower to upper)" right of the axes, one per row, under a header."""
    import matplotlib.transforms as mtransforms

    right = mtransforms.blended_transform_factory(ax.transAxes, ax.transData)
    for row, e, a, b in zip(y, est, lo, hi):
        ax.text(1.03, row, f"{e:.2f} ({a:.2f} to {b:.2f})", transform=right, va="center", fontsize=fontsize)
    ax.text(1.03, 1.0, f"{what} (interval)", transform=ax.transAxes, va="bottom", fontsize=fontsize,
            fontweight="bold")
