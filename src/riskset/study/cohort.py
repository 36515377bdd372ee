"""A comparative cohort study in one call, as CohortMethod runs one: the propensity model,
optional trimming, an adjustment (matching, stratification or weighting), covariate balance,
and the outcome model on the adjusted population with a profile-likelihood interval (and
optionally bootstrap intervals) for the treatment's effect.

The outcome model follows CohortMethod's choices: on matched sets or propensity strata Cox is
stratified by them and logistic / Poisson become conditional logistic / Poisson; Fine-Gray
has no strata and fits the matched or stratified population as it is; weights enter as case
weights. The covariates enter the outcome model only with ``outcome_covariates=True``, then
L1-penalized with a cross-validated variance and the treatment unpenalized (the seed paper's
"limited form of adjustment for residual confounding").
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.special import ndtri

from riskset.api import fit as fit_model
from riskset.data.dataset import Dataset
from riskset.exceptions import InputError
from riskset.results import FitResult
from riskset.selection.bootstrap import BootstrapResult, bootstrap
from riskset.selection.cv import COHORT_METHOD_CV, CVResult, cross_validate
from riskset.solver.prior import Laplace
from riskset.study.adjustment import iptw, match_on_ps, stratify_by_ps, trim_by_ps, trim_to_equipoise, truncate_iptw
from riskset.selection.executors import run_tasks
from riskset.study.balance import balance_summary, covariate_balance
from riskset.study.calibration import EmpiricalNull, calibrate_ci, calibrate_p, fit_null
from riskset.study.population import ESTIMANDS, Population
from riskset.study.progress import StepProgress, strata_without_events_expected
from riskset.study.propensity import PropensityModel, fit_propensity, preference_score

ADJUSTMENTS = ("match", "stratify", "iptw", "none")
OUTCOME_MODELS = {"cox": "cox", "fine_gray": "fine_gray", "logistic": "conditional_logistic",
                  "poisson": "conditional_poisson"}  # -> the model on matched sets or strata


@dataclass
class CohortStudy:
    """What :func:`cohort_study` found: the propensity model, the population before (``scored``)
    and after adjustment (``population``), the balance table, the outcome fit (its model on the
    adjusted population), its cross-validation and bootstrap where run, and the ``estimate``
    table of the treatment's effect; with negative controls, their estimates
    (``negative_controls``), the empirical ``null``, and the calibrated p-value and interval in
    ``estimate``."""

    propensity: PropensityModel
    scored: Population
    population: Population
    balance: pd.DataFrame
    outcome: FitResult
    outcome_cv: CVResult | None
    bootstrap: BootstrapResult | None
    estimate: pd.DataFrame
    negative_controls: pd.DataFrame | None = None
    null: EmpiricalNull | None = None

    def attrition(self) -> pd.DataFrame:
        """Rows of each cohort after every step."""
        return self.population.attrition

    def summary(self) -> str:
        """A one-page text summary: attrition, balance, the propensity model and the estimate."""
        b = balance_summary(self.balance)
        row = self.estimate.iloc[0]
        columns = self.outcome.coef_table().columns
        ratio = columns[columns.str.endswith("_ratio")]
        lines = [f"Comparative cohort study: {self.outcome.model_name} outcome model, "
                 f"{self.population.estimand or 'no adjustment'}"
                 + (f" ({ESTIMANDS[self.population.estimand]})" if self.population.estimand else ""),
                 "", "Attrition:", self.attrition().to_string(index=False), "",
                 f"Propensity model: {int((self.propensity.fit.coef.drop('intercept') != 0).sum())} of "
                 f"{len(self.propensity.fit.coef) - 1} covariates non-zero"
                 + (f", variance {self.propensity.cv.selected_variance:.3g} by cross-validation"
                    if self.propensity.cv is not None else ""),
                 f"Balance: largest |standardized difference| {b['max_before']:.3f} before "
                 f"({b['max_before_covariate']}), {b['max_after']:.3f} after ({b['max_after_covariate']}); "
                 "share above 0.1: "
                 f"{b['share_above_before']:.1%} before, {b['share_above_after']:.1%} after", "",
                 f"Treatment effect ({ratio[0] if len(ratio) else 'coefficient'}):",
                 self.estimate.to_string(index=False)]
        if self.null is not None:
            lines += ["", f"Calibration: {self.null}; calibrated p {row.calibrated_p:.3g}, calibrated interval "
                          f"{np.exp(row.calibrated_lower):.3f} to {np.exp(row.calibrated_upper):.3f} (ratio)"]
        if not row.converged:
            lines.append(f"NOTE: the outcome fit did not converge: {self.outcome.message}")
        return "\n".join(lines)

    def save(self, folder: str) -> list[str]:
        """Write every table (attrition, balance, propensity model, estimate), the two plots and the
        summary into ``folder``; returns the paths written."""
        from riskset.plots.propensity import plot_balance, plot_ps_distribution

        os.makedirs(folder, exist_ok=True)
        out = {name: os.path.join(folder, name) for name in (
            "attrition.csv", "balance.csv", "propensity_model.csv", "estimate.csv", "outcome_model.csv",
            "preference_score.png", "balance.png", "summary.txt")}
        self.attrition().to_csv(out["attrition.csv"], index=False)
        self.balance.to_csv(out["balance.csv"], index=False)
        self.propensity.coefficients().to_csv(out["propensity_model.csv"], index=False)
        self.estimate.to_csv(out["estimate.csv"], index=False)
        self.outcome.coef_table().to_csv(out["outcome_model.csv"], index=False)
        panels = {"before adjustment": self.scored, f"after adjustment ({self.population.attrition.step.iloc[-1]})":
                  self.population}
        plot_ps_distribution({title: (preference_score(p.propensity, p.treatment), p.treatment)
                              for title, p in panels.items()}, out["preference_score.png"])
        plot_balance(self.balance, out["balance.png"])
        if self.null is not None:
            from riskset.plots.calibration import plot_calibration

            extra = {name: os.path.join(folder, name) for name in ("negative_controls.csv", "calibration.png")}
            self.negative_controls.to_csv(extra["negative_controls.csv"], index=False)
            row = self.estimate.iloc[0]
            plot_calibration(self.null.mean, self.null.sd, self.negative_controls.log_rr, self.negative_controls.se,
                             extra["calibration.png"], estimate=(row.estimate, _interval_se(row.lower, row.upper)))
            out.update(extra)
        with open(out["summary.txt"], "w") as f:
            f.write(self.summary() + "\n")
        return list(out.values())


def cohort_study(data: Dataset, outcome_model: str = "cox", *, treatment: str = "treatment",
                 adjustment: str = "match", caliper: float = 0.2, max_ratio: int = 1, n_strata: int = 10,
                 estimand: str = "ate", max_weight: float | None = None, trim: float | None = None,
                 equipoise: tuple | None = None, ps_prior=None, ps_cv: dict | None = None,
                 outcome_covariates: bool = False, outcome_cv: dict | None = None, n_boot: int = 0,
                 negative_controls: dict | None = None, seed: int = 1, n_jobs: int | None = None,
                 executor=None, progress: bool = True, **model_options) -> CohortStudy:
    """Run a comparative cohort study of ``treatment`` (a 0/1 covariate of ``data``) on the
    outcome of ``data`` (module docstring).

    adjustment : "match" (``caliper`` in SDs of the logit score, ``max_ratio``), "stratify"
        (``n_strata`` quantiles), "iptw" (``estimand`` ate/att/ato, weights truncated at
        ``max_weight``) or "none".
    trim, equipoise : drop extreme scores first (``trim`` fraction, symmetric) or keep the
        ``equipoise`` bounds of the preference score.
    ps_prior, ps_cv : the propensity model's prior (default cross-validated, ``ps_cv``
        arguments of :func:`riskset.cross_validate`, CohortMethod's by default).
    outcome_covariates, outcome_cv : also put the covariates in the outcome model, L1 with a
        cross-validated variance (``outcome_cv``, CohortMethod's by default).
    n_boot : bootstrap draws of the outcome model (0: none).
    negative_controls : outcomes known not to be caused by the treatment, name -> their outcome
        fields over the rows of ``data`` ({"time": ..., "status": ...}, or {"y": ...}): each is
        fitted as the outcome is, on the same adjusted population, and their estimates give
        the empirical null that calibrates the outcome's p-value and interval
        (:mod:`riskset.study.calibration`). They fan out over ``n_jobs`` threads, or over a Dask
        ``executor`` (as :func:`riskset.cross_validate` takes it).

    >>> import riskset
    >>> from riskset.simulate import simulate_cohort
    >>> study = cohort_study(simulate_cohort(n=4000, p=20, seed=3), ps_prior=riskset.Laplace(variance=1.0),
    ...                      progress=False)
    >>> study.attrition().step.tolist()
    ['original data', 'propensity score', 'matched on propensity score']
    >>> bool(study.estimate.converged.iloc[0])
    True
    """
    if adjustment not in ADJUSTMENTS:
        raise InputError(f"adjustment must be one of {', '.join(ADJUSTMENTS)}, got {adjustment!r}")
    if outcome_model not in OUTCOME_MODELS:
        raise InputError(f"outcome_model must be one of {', '.join(OUTCOME_MODELS)}, got {outcome_model!r}")
    controls = _check_controls(negative_controls, data)
    steps = StepProgress(progress, 4 + bool(outcome_covariates) + bool(n_boot) + bool(controls))
    steps.next("propensity model")
    model, scored = fit_propensity(data, treatment=treatment, prior=ps_prior, cv=ps_cv, seed=seed, n_jobs=n_jobs)
    population = scored
    if trim is not None:
        population = trim_by_ps(population, trim)
    if equipoise is not None:
        population = trim_to_equipoise(population, equipoise)
    steps.next(adjustment)
    population = _adjust(population, adjustment, caliper, max_ratio, n_strata, estimand, max_weight)
    steps.next("balance")
    balance = covariate_balance(data, scored, population)
    outcome_data = population.outcome_data(data)
    name = OUTCOME_MODELS[outcome_model] if population.strata is not None else outcome_model
    if population.strata is None or name == "fine_gray":
        outcome_data = _without_strata(outcome_data)
    cv_result = None
    if outcome_covariates:
        steps.next("outcome cross-validation")
        cv_result = cross_validate(outcome_data, name, Laplace(exclude=[treatment]), n_jobs=n_jobs, progress=False,
                                   refit=False, **(COHORT_METHOD_CV if outcome_cv is None else outcome_cv),
                                   **model_options)
        prior = cv_result.prior
    else:
        outcome_data, prior = outcome_data.select([treatment]), None
    steps.next("outcome model")
    outcome = _Outcome(outcome_data, name, prior, treatment, population.rows, model_options)
    fit = outcome.fit(outcome_data, n_jobs)
    boot = None
    if n_boot:
        steps.next("bootstrap")
        boot = bootstrap(outcome_data, name, prior, n_boot=n_boot, seed=seed, n_jobs=n_jobs, progress=False,
                         **model_options)
    estimate = _estimate(fit, boot, treatment, outcome_data, population)
    control_table, null = None, None
    if controls:
        steps.next("negative controls")
        control_table = pd.DataFrame(run_tasks(_control_estimate, outcome, list(controls.items()), n_jobs=n_jobs,
                                               executor=executor, progress=False))
        null = fit_null(control_table.log_rr, control_table.se)
        estimate = _calibrated(estimate, null)
    steps.close()
    return CohortStudy(propensity=model, scored=scored, population=population, balance=balance, outcome=fit,
                       outcome_cv=cv_result, bootstrap=boot, estimate=estimate, negative_controls=control_table,
                       null=null)


@dataclass(frozen=True)
class _Outcome:
    """How the outcome model is fitted: its data on the adjusted population, model, prior and
    options; ``rows`` maps the population's rows to the study data's (for negative controls)."""

    data: Dataset
    model: str
    prior: object
    treatment: str
    rows: np.ndarray
    options: dict

    def fit(self, data: Dataset, n_jobs=None) -> FitResult:
        with strata_without_events_expected():
            return fit_model(data, self.model, self.prior, profile=[self.treatment], n_jobs=n_jobs, **self.options)


def _control_estimate(outcome: _Outcome, control) -> dict:
    """The estimate of one negative control: the outcome's fit with the control's outcome fields."""
    name, fields = control
    fit = outcome.fit(replace(outcome.data, **{f: v[outcome.rows] for f, v in fields.items()}), n_jobs=1)
    row = fit.coef_table().set_index("name").loc[outcome.treatment]
    return {"outcome": name, "log_rr": row.estimate, "se": _interval_se(row.lower, row.upper), "lower": row.lower,
            "upper": row.upper, "converged": bool(fit.converged)}


def _interval_se(lower: float, upper: float, level: float = 0.95) -> float:
    """The standard error an interval implies, (upper - lower) / (2 z) (CohortMethod's seLogRr)."""
    return float((upper - lower) / (2 * ndtri(0.5 + level / 2)))


def _calibrated(estimate: pd.DataFrame, null: EmpiricalNull) -> pd.DataFrame:
    """``estimate`` with its calibrated p-value and interval against ``null`` (log scale)."""
    row = estimate.iloc[0]
    se = _interval_se(row.lower, row.upper)
    ci = calibrate_ci(null, [row.estimate], [se]).iloc[0]
    return estimate.assign(calibrated_p=calibrate_p(null, [row.estimate], [se])[0], calibrated_estimate=ci.log_rr,
                           calibrated_lower=ci.lower, calibrated_upper=ci.upper)


def _check_controls(controls, data: Dataset) -> dict:
    """The negative controls as name -> {field: array over the data's rows}, checked."""
    if not controls:
        return {}
    checked = {}
    for name, fields in dict(controls).items():
        if not isinstance(fields, dict) or not fields or not set(fields) <= {"time", "status", "y"}:
            raise InputError(f"negative control {name!r}: give its outcome fields as a dict, {{'time': ..., "
                             f"'status': ...}} or {{'y': ...}}, got {fields!r:.60}")
        arrays = {f: np.asarray(v) for f, v in fields.items()}
        for f, v in arrays.items():
            if v.shape != (data.n_rows,):
                raise InputError(f"negative control {name!r}: {f} has shape {v.shape}, the data {data.n_rows} rows")
        checked[str(name)] = arrays
    return checked


def _adjust(population, adjustment, caliper, max_ratio, n_strata, estimand, max_weight) -> Population:
    if adjustment == "match":
        return match_on_ps(population, caliper=caliper, max_ratio=max_ratio)
    if adjustment == "stratify":
        return stratify_by_ps(population, n_strata)
    if adjustment == "iptw":
        weighted = iptw(population, estimand)
        return weighted if max_weight is None else truncate_iptw(weighted, max_weight)
    return population


def _without_strata(data: Dataset) -> Dataset:
    roles = {k: v for k, v in data.meta.get("roles", {}).items() if k != "strata"}
    return replace(data, strata=None, strata_labels=None, meta={**data.meta, "roles": roles})


def _estimate(fit: FitResult, boot: BootstrapResult | None, treatment: str, data: Dataset,
              population: Population) -> pd.DataFrame:
    """One row: the treatment's estimate, its ratio and intervals, the rows and events per cohort."""
    row = fit.coef_table().set_index("name").loc[treatment]
    t = population.treatment == 1
    events = (data.status == 1) if data.status is not None else (np.asarray(data.y) > 0)
    out = {"treatment": treatment, "estimate": row.estimate, "se": row.se, "lower": row.lower, "upper": row.upper,
           "interval": row.interval, "p": row.p}
    for col in fit.coef_table().columns:
        if col.endswith("_ratio") or col.endswith("_ratio_lower") or col.endswith("_ratio_upper"):
            out[col] = row[col]
    if boot is not None:
        b = boot.table.set_index("name").loc[treatment]
        out.update(bootstrap_lower=b.lower, bootstrap_upper=b.upper)
    out.update(target_rows=int(t.sum()), comparator_rows=int((~t).sum()), target_events=int(events[t].sum()),
               comparator_events=int(events[~t].sum()), converged=bool(fit.converged))
    return pd.DataFrame([out])
