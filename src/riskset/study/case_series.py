"""A self-controlled case series in one call, as SelfControlledCaseSeries runs one around
Cyclops: the era table from person-level observation, exposure and outcome tables (risk and
pre-exposure windows, age and season as splines), the conditional Poisson fit, and the
incidence rate ratios with profile-likelihood intervals, the fitted age and season effects,
the attrition, a plot and a summary.

Every exposure column (a drug's risk window, its pre-exposure window) is an estimate; the
spline columns are nuisance terms, never penalized (SelfControlledCaseSeries'
``allowRegularization = FALSE``). Without a prior the model is unpenalized; with one (or
with ``cv``, an L1 prior whose variance is cross-validated) the exposures outside
``exposures_of_interest`` are shrunk, as when hundreds of drugs enter one model.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from riskset.api import fit as fit_model
from riskset.data.dataset import Dataset
from riskset.data.sccs_builder import build_sccs
from riskset.data.sccs_time import time_effect_curves
from riskset.exceptions import InputError
from riskset.results import FitResult
from riskset.selection.cv import CVResult, cross_validate
from riskset.solver.prior import Laplace, Prior
from riskset.study.progress import StepProgress, strata_without_events_expected

COLUMNS = {"person": "person_id", "start": "start", "end": "end", "drug": "drug", "date": "date", "birth": "birth"}


@dataclass
class CaseSeriesStudy:
    """What :func:`case_series` found: the era table (``data``), the fit, its cross-validation
    where run, the ``estimates`` (one row per exposure column: incidence rate ratio, interval,
    p-value, outcomes and days in the window), the fitted ``time_effects`` (``"season"``,
    ``"age"``: rate ratio curves centred on their mean) and the ``attrition``."""

    data: Dataset
    fit: FitResult
    cv: CVResult | None
    estimates: pd.DataFrame
    time_effects: dict
    attrition: pd.DataFrame

    def summary(self) -> str:
        """A one-page text summary: attrition, the model and the incidence rate ratios."""
        t = self.data.meta["time_effects"]
        terms = [f"age ({len(t.age_columns)} spline columns)"] * bool(t.age_columns) + \
                [f"season ({len(t.season_columns)} spline columns)"] * bool(t.season_columns)
        shown = self.estimates[["exposure", "irr", "lower", "upper", "p", "outcomes", "days"]].copy()
        for count in ("outcomes", "days"):
            if np.all(shown[count] == np.round(shown[count])):
                shown[count] = shown[count].round().astype(np.int64)
        pre = self.estimates.exposure.str.endswith(" pre-exposure")
        lines = ["Self-controlled case series: conditional Poisson on "
                 f"{self.data.n_rows} eras of {self.attrition.set_index('step').at['cases', 'count']} cases",
                 "", "Attrition:", self.attrition.to_string(index=False), "",
                 "Model: " + ", ".join([f"{(~pre).sum()} exposure windows"] + [f"{pre.sum()} pre-exposure windows"]
                                       * bool(pre.any()) + terms)
                 + (f"; L1 prior, variance {self.cv.selected_variance:.3g} by cross-validation"
                    if self.cv is not None else ""),
                 "", f"Incidence rate ratios ({self.estimates.interval.iloc[0]} intervals):",
                 shown.to_string(index=False, float_format=lambda v: f"{v:.4g}")]
        if "season" in self.time_effects:
            s = self.time_effects["season"]
            lines += ["", f"Season: rate ratio {s.rr.min():.3g} (month {int(s.month[s.rr.idxmin()])}) to "
                          f"{s.rr.max():.3g} (month {int(s.month[s.rr.idxmax()])}) of the mean"]
        if "age" in self.time_effects:
            a = self.time_effects["age"]
            lines += [f"Age: rate ratio {a.rr.min():.3g} (age {a.age_years[a.rr.idxmin()]:.0f}) to "
                      f"{a.rr.max():.3g} (age {a.age_years[a.rr.idxmax()]:.0f}) of the mean"]
        if not self.fit.converged:
            lines.append(f"NOTE: the fit did not converge: {self.fit.message}")
        return "\n".join(lines)

    def save(self, folder: str) -> list[str]:
        """Write the estimates, the model's coefficients, the attrition, the age and season
        curves, the plots and the summary into ``folder``; returns the paths written."""
        from riskset.plots.sccs import plot_time_effects
        from riskset.plots.selection import plot_forest

        os.makedirs(folder, exist_ok=True)
        out = {name: os.path.join(folder, name) for name in (
            "estimates.csv", "model.csv", "attrition.csv", "irr.png", "summary.txt")}
        self.estimates.to_csv(out["estimates.csv"], index=False)
        self.fit.coef_table().to_csv(out["model.csv"], index=False)
        self.attrition.to_csv(out["attrition.csv"], index=False)
        forest = self.estimates.assign(name=self.estimates.exposure, estimate=np.log(self.estimates.irr),
                                       lower=np.log(self.estimates.lower), upper=np.log(self.estimates.upper))
        plot_forest(forest, out["irr.png"], title="Incidence rate ratios", exponentiate=True, top=None,
                    xlabel="incidence rate ratio, log scale")
        for kind, curve in self.time_effects.items():
            out[f"{kind}.csv"] = os.path.join(folder, f"{kind}.csv")
            curve.to_csv(out[f"{kind}.csv"], index=False)
        if self.time_effects:
            out["time_effects.png"] = os.path.join(folder, "time_effects.png")
            plot_time_effects(self.time_effects, out["time_effects.png"])
        with open(out["summary.txt"], "w") as f:
            f.write(self.summary() + "\n")
        return list(out.values())


def case_series(observation: pd.DataFrame, exposures: pd.DataFrame, outcomes: pd.DataFrame, *,
                risk_window: tuple = (0.0, 0.0), anchor: str = "end", pre_exposure: float | None = None,
                age_knots=5, season_knots=5, inclusive_end: bool = False, columns: dict | None = None,
                prior: Prior | None = None, cv: dict | None = None, exposures_of_interest=None,
                level: float = 0.95, n_jobs: int | None = None, progress: bool = True) -> CaseSeriesStudy:
    """Run a self-controlled case series on person-level tables (module docstring).

    observation, exposures, outcomes : the tables of :func:`riskset.build_sccs` (one
        observation period per person with its birth date; exposure eras per drug; outcome dates).
    risk_window, anchor : the risk window [exposure start + ``risk_window[0]``, exposure
        ``anchor`` + ``risk_window[1]``); default the exposure era itself.
    pre_exposure : length of a pre-exposure window before every exposure (None: none).
    age_knots, season_knots : spline knots (numbers or the knots themselves; None leaves the
        effect out), SelfControlledCaseSeries' defaults 5 and 5. Age needs a birth column.
    columns : the tables' column names, role -> name, for roles person, start, end, drug,
        date and birth (defaults ``person_id``, ``start``, ``end``, ``drug``, ``date``, ``birth``).
    prior, cv : a prior on the exposures not of interest (its variance fixed), or
        cross-validation arguments (:func:`riskset.cross_validate`) choosing an L1 variance;
        default none: every exposure unpenalized.
    exposures_of_interest : exposure columns never penalized and given profile intervals
        (default: every exposure column).

    >>> from riskset.simulate_sccs import simulate_case_series
    >>> sim = simulate_case_series(n=6000, seed=2)
    >>> study = case_series(sim.observation, sim.exposures, sim.outcomes, pre_exposure=30, progress=False)
    >>> study.estimates.exposure.tolist()[:2]
    ['drug_a', 'drug_a pre-exposure']
    >>> bool(study.estimates.lower.iloc[0] < 2.0 < study.estimates.upper.iloc[0])
    True
    """
    names = {**COLUMNS, **dict(columns or {})}
    unknown = set(names) - set(COLUMNS)
    if unknown:
        raise InputError(f"columns: unknown role(s) {sorted(unknown)}; the roles are {', '.join(COLUMNS)}")
    if age_knots is not None and names["birth"] not in observation.columns:
        raise InputError(f"age as a spline needs the birth date: the observation table has no column "
                         f"{names['birth']!r}; name it with columns={{'birth': ...}} or pass age_knots=None")
    if len(risk_window) != 2:
        raise InputError(f"risk_window takes (start, end) offsets, got {risk_window!r}")
    steps = StepProgress(progress, 3 + (cv is not None), "case series")
    steps.next("era table")
    data = build_sccs(observation, exposures, outcomes, person=names["person"], start=names["start"],
                      end=names["end"], drug=names["drug"], date=names["date"], birth=names["birth"],
                      risk_window_start=risk_window[0], risk_window_end=risk_window[1], risk_window_anchor=anchor,
                      pre_exposure=pre_exposure, inclusive_end=inclusive_end, age_knots=age_knots,
                      season_knots=season_knots)
    effects = data.meta["time_effects"]
    splines = list(effects.age_columns + effects.season_columns)
    exposure_columns = [c for c in data.covariate_names if c not in splines]
    interest = exposure_columns if exposures_of_interest is None else list(exposures_of_interest)
    missing = [c for c in interest if c not in exposure_columns]
    if missing:
        raise InputError(f"exposures_of_interest: {missing} are not exposure columns of the era table "
                         f"({', '.join(exposure_columns)})")
    cv_result = None
    if cv is not None:
        steps.next("cross-validation")
        base = Laplace(exclude=splines + interest) if prior is None else _excluding(prior, splines + interest)
        with strata_without_events_expected():
            cv_result = cross_validate(data, "sccs", base, n_jobs=n_jobs, progress=False, refit=False, **cv)
        prior = cv_result.prior
    elif prior is not None:
        prior = _excluding(prior, splines + interest)
    steps.next("conditional Poisson fit")
    with strata_without_events_expected():
        fit = fit_model(data, "sccs", prior, profile=interest, level=level, n_jobs=n_jobs)
    steps.next("estimates")
    estimates = _estimates(fit, data, exposure_columns, level)
    steps.close()
    return CaseSeriesStudy(data=data, fit=fit, cv=cv_result, estimates=estimates,
                           time_effects=time_effect_curves(fit.coef, effects), attrition=_attrition(data))


def _excluding(prior: Prior, names) -> Prior:
    return replace(prior, exclude=tuple(dict.fromkeys(tuple(prior.exclude) + tuple(names))))


def _estimates(fit: FitResult, data: Dataset, exposure_columns, level) -> pd.DataFrame:
    """One row per exposure column: its rate ratio, interval and p-value, and the outcomes and
    days observed in its window."""
    table = fit.coef_table(level).set_index("name").loc[exposure_columns]
    X = data.X.tocsc()[:, [data.covariate_names.index(c) for c in exposure_columns]]
    inside = X.T.astype(bool).astype(np.float64)
    return pd.DataFrame({
        "exposure": exposure_columns, "irr": np.exp(table.estimate.to_numpy()),
        "lower": np.exp(table.lower.to_numpy()), "upper": np.exp(table.upper.to_numpy()), "p": table.p.to_numpy(),
        "interval": table.interval.to_numpy(), "log_irr": table.estimate.to_numpy(), "se": table.se.to_numpy(),
        "outcomes": inside @ np.asarray(data.y), "days": inside @ np.exp(data.offset)})


def _attrition(data: Dataset) -> pd.DataFrame:
    c = data.meta["sccs"]
    return pd.DataFrame({"step": ["persons", "cases", "outcomes outside observation", "eras", "outcome events"],
                         "count": [c["persons"], c["cases"], c["outcomes_dropped_outside"], c["eras"],
                                   int(c["events"])]})


__all__ = ["CaseSeriesStudy", "case_series"]
