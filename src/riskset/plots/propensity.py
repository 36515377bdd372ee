"""Plots of a comparative study: the preference-score distributions of the two cohorts and the
covariate balance before against after adjustment (CohortMethod's ``plotPs`` and
``plotCovariateBalanceScatterPlot``), readable with 10,000 covariates and millions of rows
(histogram densities, small translucent points).
"""
from __future__ import annotations

import numpy as np

from riskset.plots.selection import _axes, _finish

TARGET_COLOR, COMPARATOR_COLOR = "#D55E00", "#0072B2"
#: Bins of the score densities on [0, 1].
BINS = 60


def plot_ps_distribution(panels, path=None, *, score_name: str = "Preference score", equipoise=(0.3, 0.7)):
    """Densities of the score in the target and comparator cohorts, one panel per entry of
    ``panels`` (title -> (scores, treatment 0/1)), e.g. {"before matching": ..., "after
    matching": ...}; ``equipoise`` bounds shaded (None: not drawn). Each panel says the rows
    of each cohort and, for a preference score, the share in equipoise.

    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> t = rng.random(500) < 0.4
    >>> fig = plot_ps_distribution({"all": (np.clip(rng.normal(0.4 + 0.2 * t, 0.1), 0, 1), t)})
    >>> fig.axes[0].get_xlabel()
    'Preference score'
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels) + 0.6, 3.6), sharey=True, squeeze=False)
    edges = np.linspace(0.0, 1.0, BINS + 1)
    for ax, (title, (scores, treatment)) in zip(axes[0], panels.items()):
        scores, treatment = np.asarray(scores, dtype=np.float64), np.asarray(treatment) == 1
        if equipoise is not None:
            ax.axvspan(*equipoise, color="0.92", zorder=0)
        for rows, color, label in ((treatment, TARGET_COLOR, "target"), (~treatment, COMPARATOR_COLOR, "comparator")):
            density, _ = np.histogram(scores[rows], bins=edges, density=True)
            ax.fill_between(edges[:-1], density, step="post", color=color, alpha=0.35, linewidth=0)
            ax.step(edges[:-1], density, where="post", color=color, linewidth=1.0,
                    label=f"{label} (n = {int(rows.sum()):,})")
        if equipoise is not None:
            share = np.mean((scores >= equipoise[0]) & (scores <= equipoise[1]))
            title = f"{title}\n{share:.0%} in equipoise ({equipoise[0]:g}-{equipoise[1]:g})"
        ax.set_title(title, fontsize=9)
        ax.set_xlim(0, 1)
        ax.set_xlabel(score_name)
        ax.legend(fontsize=7, framealpha=0.8, loc="best")
    axes[0][0].set_ylabel("Density")
    return _finish(fig, path, owned=True)


def plot_balance(table, path=None, ax=None, threshold: float = 0.1):
    """|Standardized difference| of every covariate after adjustment against before (a
    :func:`riskset.study.covariate_balance` table), the ``threshold`` marked; the counts above
    it before and after, and the worst covariate after, named on the plot.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"covariate": ["a", "b"], "std_diff_before": [0.3, -0.05],
    ...                   "std_diff_after": [0.02, 0.01]})
    >>> plot_balance(t).axes[0].get_xlabel()
    'Before adjustment: |standardized difference|'
    """
    fig, ax = _axes(ax, figsize=(4.8, 4.6))
    owned = ax.figure is fig and len(fig.axes) == 1
    before, after = table.std_diff_before.abs().to_numpy(), table.std_diff_after.abs().to_numpy()
    shown = np.isfinite(before) & np.isfinite(after)
    size = 6 if shown.sum() > 2000 else 14
    ax.scatter(before[shown], after[shown], s=size, alpha=0.35 if shown.sum() > 2000 else 0.7,
               color=COMPARATOR_COLOR, linewidths=0)
    top = float(np.nanmax(np.r_[before[shown], after[shown], threshold * 1.5])) * 1.05
    ax.plot([0, top], [0, top], color="0.6", linewidth=0.8, linestyle=":")
    ax.axhline(threshold, color=TARGET_COLOR, linewidth=0.8, linestyle="--")
    ax.axvline(threshold, color=TARGET_COLOR, linewidth=0.8, linestyle="--")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel("Before adjustment: |standardized difference|")
    ax.set_ylabel("After adjustment: |standardized difference|")
    n = int(shown.sum())
    note = (f"{n:,} covariates\nabove {threshold:g}: {int(np.sum(before[shown] > threshold)):,} before, "
            f"{int(np.sum(after[shown] > threshold)):,} after")
    if n:
        worst = int(np.flatnonzero(shown)[np.argmax(after[shown])])
        name = str(table.label.iloc[worst] if "label" in table else table.covariate.iloc[worst])
        note += f"\nlargest after: {name[:40]} ({after[worst]:.3f})"
    ax.text(0.03, 0.97, note, transform=ax.transAxes, va="top", fontsize=7.5,
            bbox=dict(boxstyle="round", facecolor="white", edgecolor="0.8"))
    return _finish(fig, path, owned=owned)
