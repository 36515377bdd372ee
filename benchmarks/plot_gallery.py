"""Render every riskset plot at realistic sizes into benchmarks/gallery/ (run by hand).

Kaplan-Meier at 100, 10,000 and 1,000,000 rows (the 1M plot is timed), cumulative
incidence at 10,000 rows, cross-validation curve, coefficient path and bootstrap
forest plot with 5 and 500 covariates, and the ODE fan chart. Small CV and bootstrap
settings keep the whole run to a few minutes on two cores.

    PYTHONPATH=src python benchmarks/plot_gallery.py [--out DIR] [--dpi 100]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

import riskset  # noqa: E402
from riskset.ode import solve_batch  # noqa: E402
from riskset.plots import plot_cif, plot_km  # noqa: E402
from riskset.simulate import simulate_cohort  # noqa: E402

GALLERY = os.path.join(os.path.dirname(__file__), "gallery")


def save(fig, out, name, dpi):
    """Save and close ``fig`` as a 128-colour PNG (a third of the bytes, the same picture); print its
    size and return the seconds matplotlib took to render it."""
    from PIL import Image

    path = os.path.join(out, name)
    t0 = time.perf_counter()
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    seconds = time.perf_counter() - t0
    plt.close(fig)
    Image.open(path).convert("RGB").quantize(128).save(path, optimize=True)
    h, w = plt.imread(path).shape[:2]
    print(f"  {name}: {w} x {h} px, {os.path.getsize(path) / 1024:.0f} KB")
    return seconds


def km_plots(out, dpi):
    """Kaplan-Meier by treatment at three cohort sizes, and one cumulative incidence plot."""
    for n, label in ((100, "100"), (10_000, "10k"), (1_000_000, "1M")):
        cohort = simulate_cohort(n=n, p=5, n_confounders=2, seed=1)
        arm = np.where(cohort.X[:, 0].toarray().ravel() > 0, "treated", "comparator")
        t0 = time.perf_counter()
        fig = plot_km(cohort.time, cohort.status, arm, xlabel="years",
                      title=f"Outcome-free survival by treatment ({n:,} patients)")
        seconds = time.perf_counter() - t0
        seconds += save(fig, out, f"km_{label}.png", dpi)
        print(f"  plot_km and savefig at {n:,} rows: {seconds:.2f} s")
        if n == 10_000:
            rng = np.random.default_rng(3)
            status = cohort.status * np.where(rng.random(n) < 0.3, 2, 1)  # 30% of events compete
            fig = plot_cif(cohort.time, status, arm, show_competing=True, xlabel="years",
                           title=f"Cumulative incidence by treatment ({n:,} patients)")
            save(fig, out, "cif_10k.png", dpi)


def selection_plots(out, dpi):
    """CV curve, regularization path and bootstrap forest plot for 5 and 500 covariates."""
    for p, n in ((5, 2_000), (500, 5_000)):
        data = riskset.simulate(n=n, p=p, model="cox", seed=4)
        prior = riskset.Laplace(gamma=1.0)
        t0 = time.perf_counter()
        cv = riskset.cross_validate(data, "cox", prior, n_grid=8, n_folds=3, progress=False)
        save(cv.plot(), out, f"cv_p{p}.png", dpi)
        path = riskset.regularization_path(data, "cox", prior, n_grid=15, progress=False)
        save(riskset.plots.plot_path(path), out, f"path_p{p}.png", dpi)
        boot = riskset.bootstrap(data, "cox", cv.prior, n_boot=20, progress=False)
        save(boot.plot(), out, f"forest_p{p}.png", dpi)
        print(f"  selection plots for {p} covariates: {time.perf_counter() - t0:.1f} s")


def fan_plot(out, dpi):
    """SEIR fan chart over 200 parameter sets (R0 between 1.5 and 6)."""
    rng = np.random.default_rng(0)
    params = np.exp(rng.uniform(np.log([0.3, 0.15, 0.1]), np.log([0.6, 0.3, 0.2]), size=(200, 3)))
    res = solve_batch("seir", params, [1e6 - 10, 0, 10, 0], np.arange(0, 181.0), rtol=1e-6, atol=1e-6)
    ax = res.fan_chart("I", xlabel="days", ylabel="infectious (I), of a population of 1,000,000")
    save(ax.figure, out, "ode_fan.png", dpi)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=GALLERY)
    ap.add_argument("--dpi", type=int, default=100)
    ap.add_argument("--only", choices=("km", "selection", "fan"), help="render one group of plots")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for name, render in (("km", km_plots), ("selection", selection_plots), ("fan", fan_plot)):
        if args.only in (None, name):
            print(name)
            render(args.out, args.dpi)


if __name__ == "__main__":
    main()
