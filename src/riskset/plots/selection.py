"""Plots for model selection and uncertainty: CV curve, coefficient paths, forest plot."""
from __future__ import annotations

import numpy as np


def _axes(ax, figsize=(6.4, 4.2)):
    import matplotlib

    if ax is not None:
        return ax.figure, ax
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=figsize)


def _finish(fig, path):
    if path is not None:
        fig.tight_layout()
        fig.savefig(path, dpi=120)
    return fig


def plot_cv(cv, path=None, ax=None):
    """Mean held-out log-likelihood (+- 1 standard error) against the prior variance."""
    fig, ax = _axes(ax)
    s = cv.summary.sort_values("variance")
    ax.errorbar(s["variance"], s["mean"], yerr=s["se"].fillna(0), marker="o", ms=3, capsize=2)
    ax.axvline(cv.selected_variance, color="C3", ls="--", label=f"selected {cv.selected_variance:.3g}")
    ax.set_xscale("log")
    ax.set_xlabel("prior variance")
    ax.set_ylabel("held-out log-likelihood")
    ax.set_title("Cross-validation")
    ax.legend()
    return _finish(fig, path)


def plot_path(path_table, path=None, ax=None, top: int = 20):
    """Coefficient paths against the prior variance; the ``top`` largest are labelled."""
    fig, ax = _axes(ax)
    table = path_table.drop(columns=[c for c in ("intercept",) if c in path_table.columns])
    v = table.index.to_numpy()
    final = table.iloc[-1].abs().sort_values(ascending=False)
    for name in table.columns:
        ax.plot(v, table[name], lw=1, color="0.6" if name not in final.index[:top] else None)
    for name in final.index[:top]:
        ax.annotate(name, (v[-1], table[name].iloc[-1]), fontsize=7, xytext=(3, 0), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("prior variance")
    ax.set_ylabel("coefficient")
    ax.set_title("Regularization path")
    return _finish(fig, path)


def plot_forest(table, path=None, ax=None, title="Intervals", exponentiate: bool = False):
    """Forest plot: one row per coefficient with its estimate and interval."""
    n = len(table)
    fig, ax = _axes(ax, figsize=(6.4, 1.0 + 0.28 * n))
    y = np.arange(n)[::-1]
    est, lo, hi = (table[c].to_numpy() for c in ("estimate", "lower", "upper"))
    if exponentiate:
        est, lo, hi = np.exp(est), np.exp(lo), np.exp(hi)
    ax.hlines(y, lo, hi, color="C0")
    ax.plot(est, y, "o", color="C0", ms=4)
    ax.axvline(1.0 if exponentiate else 0.0, color="0.5", lw=0.8, ls=":")
    ax.set_yticks(y, table["name"].tolist())
    ax.set_xlabel("exp(coefficient)" if exponentiate else "coefficient")
    ax.set_title(title)
    if exponentiate:
        ax.set_xscale("log")
    return _finish(fig, path)
