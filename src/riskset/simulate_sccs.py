"""Simulated person-level data for a self-controlled case series: observation periods,
exposure eras and outcomes, with known incidence rate ratios and age and season effects.

Each person is observed for 1 to 6 years from a date in 2012-2017, aged 20 to 80 at the
start. Every drug has a Poisson number of exposure eras (mean ``exposures_per_drug``) of
14 to 90 days starting anywhere in the observation period (independently of the outcome, as
the case series assumes). Outcomes are a Poisson process of rate, per day::

    baseline_rate * exp(age(t) + season(t)) * prod_d irr_d^[t exposed to d]
                  * pre_exposure_irr^[t in the pre_exposure_days before an era of the first drug]

with ``age(t) = -age_curvature * ((age in years - 50) / 30)^2`` and ``season(t) =
season_amplitude * cos(2 pi (month - 1) / 12)`` (highest in January), drawn exactly by
thinning a process of constant rate. The risk window of an era is the era itself, [start,
end), so :func:`riskset.data.sccs_builder.build_sccs` with its default window (and
``pre_exposure=pre_exposure_days``) is the true model, up to age being constant within a
month.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from riskset import validation as check
from riskset.exceptions import InputError

DEFAULT_IRR = {"drug_a": 2.0, "drug_b": 1.0, "drug_c": 0.5}
FIRST_START = np.datetime64("2012-01-01").astype(np.int64)
LAST_START = np.datetime64("2017-12-31").astype(np.int64)


class CaseSeriesTables(NamedTuple):
    """Person-level tables of a case series (dates as ``datetime64``) and the true effects."""
    observation: pd.DataFrame  # person_id, start, end, birth
    exposures: pd.DataFrame  # person_id, drug, start, end
    outcomes: pd.DataFrame  # person_id, date
    truth: dict


def simulate_case_series(n: int = 20_000, *, irr: dict | None = None, pre_exposure_irr: float = 0.5,
                         pre_exposure_days: float = 30.0, season_amplitude: float = 0.4,
                         age_curvature: float = 0.5, baseline_rate: float = 1e-4, exposures_per_drug: float = 0.7,
                         seed: int | None = 0) -> CaseSeriesTables:
    """Simulate ``n`` persons' observation periods, exposures and outcomes (module docstring).

    irr : drug name -> true incidence rate ratio during its exposure eras (default
        ``{"drug_a": 2.0, "drug_b": 1.0, "drug_c": 0.5}``).
    pre_exposure_irr, pre_exposure_days : the rate ratio in the days before an era of the
        first drug (contra-indication lowers it; 1: no such effect).

    >>> sim = simulate_case_series(n=2000, seed=1)
    >>> sorted(sim.truth["irr"].items())
    [('drug_a', 2.0), ('drug_b', 1.0), ('drug_c', 0.5)]
    >>> list(sim.outcomes.columns), bool(sim.outcomes.person_id.nunique() > 100)
    (['person_id', 'date'], True)
    """
    n = check.positive_int("n", n)
    irr = dict(DEFAULT_IRR if irr is None else irr)
    if not irr:
        raise InputError("irr must name at least one drug")
    for name, value in irr.items():
        check.positive_number(f"irr[{name!r}]", value)
    for name, value in (("pre_exposure_irr", pre_exposure_irr), ("pre_exposure_days", pre_exposure_days),
                        ("baseline_rate", baseline_rate)):
        check.positive_number(name, value)
    for name, value in (("season_amplitude", season_amplitude), ("age_curvature", age_curvature),
                        ("exposures_per_drug", exposures_per_drug)):
        check.positive_number(name, value, allow_zero=True)
    if seed is not None:
        check.seed("seed", seed)
    rng = np.random.default_rng(seed)

    person = np.arange(1, n + 1)
    obs_start = rng.integers(FIRST_START, LAST_START + 1, n)
    obs_end = obs_start + rng.integers(365, 6 * 365 + 1, n)
    birth = obs_start - np.round(rng.uniform(20, 80, n) * 365.25).astype(np.int64)

    drugs = list(irr)
    eras = [_exposure_eras(rng, obs_start, obs_end, exposures_per_drug) for _ in drugs]
    pre = [(who, start - pre_exposure_days, start) for who, start, _ in eras[:1]]

    # thinning: candidates at the largest rate, kept with probability rate(t) / largest rate
    log_bound = (season_amplitude + sum(max(np.log(v), 0.0) for v in irr.values())
                 + max(np.log(pre_exposure_irr), 0.0))
    count = rng.poisson(baseline_rate * np.exp(log_bound) * (obs_end - obs_start))
    who = np.repeat(np.arange(n), count)
    t = obs_start[who] + rng.random(who.size) * (obs_end - obs_start)[who]
    log_rate = _age_log_rr((t - birth[who]) / 365.25, age_curvature) + _season_log_rr(t, season_amplitude)
    for (e_who, e_start, e_end), ratio in zip(eras, irr.values()):
        log_rate += np.log(ratio) * _inside(who, t, e_who, e_start, e_end)
    for p_who, p_start, p_end in pre:
        log_rate += np.log(pre_exposure_irr) * _inside(who, t, p_who, p_start, p_end)
    kept = rng.random(who.size) < np.exp(log_rate - log_bound)
    who, t = who[kept], np.floor(t[kept]).astype(np.int64)
    order = np.lexsort((t, who))

    day = "datetime64[D]"
    observation = pd.DataFrame({"person_id": person, "start": obs_start.astype(day), "end": obs_end.astype(day),
                                "birth": birth.astype(day)})
    exposures = pd.concat([pd.DataFrame({"person_id": person[w], "drug": name, "start": s.astype(day),
                                         "end": e.astype(day)}) for name, (w, s, e) in zip(drugs, eras)],
                          ignore_index=True).sort_values(["person_id", "start"], ignore_index=True)
    outcomes = pd.DataFrame({"person_id": person[who[order]], "date": t[order].astype(day)})
    months = np.arange(1, 13)
    ages = np.arange(20, 81, 5)
    truth = {"irr": irr, "pre_exposure_irr": {drugs[0]: pre_exposure_irr}, "pre_exposure_days": pre_exposure_days,
             "season_log_rr": dict(zip(months.tolist(), (season_amplitude * np.cos(2 * np.pi * (months - 1) / 12))
                                       .tolist())),
             "age_log_rr": dict(zip(ages.tolist(), _age_log_rr(ages, age_curvature).tolist())),
             "baseline_rate_per_day": baseline_rate, "risk_window": "[exposure start, exposure end)"}
    return CaseSeriesTables(observation, exposures, outcomes, truth)


def _exposure_eras(rng, obs_start, obs_end, per_person):
    """Exposure eras of one drug: a Poisson number per person, 14 to 90 days, starting uniformly
    within the observation period. Returns (person index, start day, end day)."""
    count = rng.poisson(per_person, obs_start.size)
    who = np.repeat(np.arange(obs_start.size), count)
    start = obs_start[who] + np.floor(rng.random(who.size) * (obs_end - obs_start)[who]).astype(np.int64)
    return who, start, start + rng.integers(14, 91, who.size)


def _inside(who, t, w_who, w_start, w_end) -> np.ndarray:
    """1 where time ``t`` of person ``who`` lies in one of the windows [w_start, w_end) of that
    person (windows may overlap): windows started by t minus windows ended by t, per person."""
    scale = 4.0 * max(float(np.max(np.abs(w_end), initial=1.0)), float(np.max(np.abs(t), initial=1.0)))
    key = who * scale + t
    started = np.searchsorted(np.sort(w_who * scale + w_start), key, side="right")
    ended = np.searchsorted(np.sort(w_who * scale + w_end), key, side="right")
    return (started - ended > 0).astype(np.float64)


def _age_log_rr(age_years, curvature):
    return -curvature * ((np.asarray(age_years, dtype=np.float64) - 50.0) / 30.0) ** 2


def _season_log_rr(days, amplitude):
    month = np.floor(days).astype(np.int64).astype("datetime64[D]").astype("datetime64[M]").astype(np.int64) % 12
    return amplitude * np.cos(2 * np.pi * month / 12)


__all__ = ["CaseSeriesTables", "simulate_case_series"]
