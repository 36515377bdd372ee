"""``riskset demo``: a small new-user cohort study on simulated data.

1. Simulate a cohort (treatment, sparse baseline covariates, time to event) and store
   it in a DuckDB database as OHDSI long tables.
2. Read it back with SQL: the propensity-score data (treatment as outcome) and the
   outcome data.
3. Fit an L1 propensity-score model (logistic) and an L1 Cox outcome model with the
   treatment unpenalized, each prior variance chosen by 5-fold cross-validation;
   report the hazard ratio with its profile-likelihood interval against the truth,
   and draw Kaplan-Meier curves by treatment and the cross-validation curve.
"""
from __future__ import annotations

import os
import time

import numpy as np

import riskset
from riskset.data.export import write_duckdb
from riskset.simulate import simulate_cohort

PS_OUTCOMES = """SELECT o.row_id, COALESCE(t.value, 0) AS y FROM outcomes o
                 LEFT JOIN covariates t ON t.row_id = o.row_id AND t.covariate_id = 'treatment'"""
PS_COVARIATES = "SELECT row_id, covariate_id, value FROM covariates WHERE covariate_id <> 'treatment'"
COX_OUTCOMES = "SELECT row_id, time, status FROM outcomes"
COX_COVARIATES = "SELECT row_id, covariate_id, value FROM covariates"


def run_demo(n: int = 20_000, out: str = "riskset-demo", seed: int = 1, p: int = 200) -> int:
    t0 = time.perf_counter()
    os.makedirs(out, exist_ok=True)
    database = os.path.join(out, "cohort.duckdb")
    cohort = simulate_cohort(n=n, p=p, seed=seed)
    if os.path.exists(database):
        os.remove(database)
    write_duckdb(cohort, database)
    print(f"Simulated {n} patients, {p} baseline covariates, {int(cohort.status.sum())} outcome events; "
          f"true hazard ratio {cohort.meta['true_hazard_ratio']}.\nStored in {database}.")

    ps_data = riskset.from_duckdb(database, PS_OUTCOMES, PS_COVARIATES)
    ps_cv = riskset.cross_validate(ps_data, "logistic", riskset.Laplace(gamma=1.0), n_folds=5, n_grid=8,
                                   seed=seed, progress=False)
    ps = ps_cv.fit
    ps_prob = ps.predict(ps_data, "probability")
    chosen = [c for c in ps.coef.index if c != "intercept" and ps.coef[c] != 0]
    print(f"\nPropensity-score model (L1 logistic, cross-validated variance {ps_cv.selected_variance:.3g}): "
          f"{len(chosen)} of {len(ps.coef) - 1} covariates selected; "
          f"propensity scores range {ps_prob.min():.3f} to {ps_prob.max():.3f}.")

    data = riskset.from_duckdb(database, COX_OUTCOMES, COX_COVARIATES)
    crude = riskset.fit(data.select(["treatment"]), "cox")
    cox_cv = riskset.cross_validate(data, "cox", riskset.Laplace(gamma=1.0, exclude=["treatment"]), n_folds=5,
                                    n_grid=8, seed=seed, progress=False, refit=False)
    cox = riskset.fit(data, "cox", cox_cv.prior, profile=["treatment"])
    row = cox.coef_table().set_index("name").loc["treatment"]
    print(f"\nCox outcome model (L1, treatment unpenalized, cross-validated variance "
          f"{cox_cv.selected_variance:.3g}): {int((cox.coef != 0).sum())} non-zero coefficients, "
          f"converged: {cox.converged}.")
    print(f"Crude hazard ratio (treatment alone): {np.exp(crude.coef['treatment']):.3f}")
    print(f"Adjusted hazard ratio: {row['hazard_ratio']:.3f} "
          f"(95% profile-likelihood interval {row['hazard_ratio_lower']:.3f} to {row['hazard_ratio_upper']:.3f}); "
          f"truth {cohort.meta['true_hazard_ratio']}")

    cox.to_json(os.path.join(out, "cox_fit.json"))
    cox_cv.plot(os.path.join(out, "cox_cross_validation.png"))
    _km_plot(cohort, os.path.join(out, "kaplan_meier.png"))
    print(f"\nWrote cox_fit.json, kaplan_meier.png and cox_cross_validation.png into {out}/ "
          f"in {time.perf_counter() - t0:.1f} s.")
    return 0


def _km_plot(cohort, path):
    import matplotlib

    matplotlib.use("Agg")
    from riskset.plots.km import plot_km

    treated = cohort.X[:, 0].toarray().ravel() > 0
    fig = plot_km(cohort.time, cohort.status, np.where(treated, "treated", "comparator"),
                  title="Outcome-free survival by treatment", xlabel="years")
    fig.savefig(path, dpi=120, bbox_inches="tight")
