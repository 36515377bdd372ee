"""The study population: which rows of a cohort data set are in, their treatment, and how they
are adjusted (propensity score, matched set or stratum, weight), with its attrition.

Every step of a study (:mod:`riskset.study.propensity`, :mod:`riskset.study.adjustment`)
takes a :class:`Population` and returns a new one with one more attrition row, as
CohortMethod's population data frame carries its ``metaData$attrition``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from riskset.data.dataset import Dataset, check_dataset, row_label
from riskset.exceptions import InputError

#: What each estimand weighs the comparison by (CohortMethod's ``targetEstimator``).
ESTIMANDS = {"ate": "average treatment effect", "att": "average treatment effect in the treated (target)",
             "atu": "average treatment effect in the untreated (comparator)",
             "ato": "average treatment effect in the overlap population"}


@dataclass(frozen=True)
class Population:
    """Rows of a data set in a comparative study, target (treatment 1) against comparator (0).

    rows : positions of the rows in the data set the study started from.
    treatment : 0/1 per row.
    propensity : the propensity score per row, once estimated.
    strata : matched-set or propensity-stratum code per row (0..K-1), after matching or stratifying.
    weights : inverse-probability-of-treatment weight per row, after weighting.
    estimand : what the adjustment estimates (:data:`ESTIMANDS`), once adjusted.
    strata_kind : what ``strata`` are: "matched set" or "PS stratum".
    attrition : one row per step: ``step``, ``target`` and ``comparator`` row counts.
    treatment_name : the covariate of the data that holds the treatment.
    """

    rows: np.ndarray
    treatment: np.ndarray
    treatment_name: str
    propensity: np.ndarray | None = None
    strata: np.ndarray | None = None
    weights: np.ndarray | None = None
    estimand: str | None = None
    strata_kind: str | None = None
    attrition: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["step", "target", "comparator"]))

    @classmethod
    def of(cls, data: Dataset, treatment: str = "treatment") -> "Population":
        """Every row of ``data``, with the 0/1 covariate ``treatment`` (both values present).

        >>> from riskset.simulate import simulate_cohort
        >>> Population.of(simulate_cohort(n=400, p=10, seed=3)).attrition
                    step  target  comparator
        0  original data     186         214
        """
        check_dataset("data", data)
        if treatment not in data.covariate_names:
            raise InputError(f"treatment {treatment!r} is not a covariate of the data (the covariates: "
                             f"{', '.join(map(repr, data.covariate_names[:5]))} ...)")
        values = data.X[:, data.covariate_index([treatment])[0]].toarray().ravel()
        bad = (values != 0) & (values != 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"treatment {treatment!r} must be 0 (comparator) or 1 (target); found {values[i]:g} "
                             f"at {row_label(data.row_ids, i)}")
        if values.min() == values.max():
            raise InputError(f"treatment {treatment!r} has one value ({values[0]:g}) in all {values.size} rows: "
                             "a comparison needs a target and a comparator cohort")
        start = cls(rows=np.arange(data.n_rows), treatment=values.astype(np.int8), treatment_name=treatment)
        return start.counted("original data")

    @property
    def size(self) -> int:
        return int(self.rows.size)

    def counted(self, step: str) -> "Population":
        """The same population with an attrition row for ``step``."""
        target = int(np.sum(self.treatment == 1))
        row = pd.DataFrame({"step": [step], "target": [target], "comparator": [self.size - target]})
        table = row if self.attrition.empty else pd.concat([self.attrition, row], ignore_index=True)
        return replace(self, attrition=table)

    def keep(self, mask: np.ndarray, step: str, **changes) -> "Population":
        """The rows where ``mask`` holds (their per-row arrays with them), counted as ``step``;
        ``changes`` replace fields (given for the kept rows)."""
        mask = np.asarray(mask, dtype=bool)
        kept = {name: (None if getattr(self, name) is None else getattr(self, name)[mask])
                for name in ("rows", "treatment", "propensity", "strata", "weights")}
        kept.update(changes)
        return replace(self, **kept).counted(step)

    def target_rows(self) -> np.ndarray:
        return self.treatment == 1

    def outcome_data(self, data: Dataset) -> Dataset:
        """The rows of ``data`` in the population for the outcome model: stratified by matched
        set or propensity stratum, weighted by the inverse-probability weights (times any case
        weights of the data), as the population is adjusted."""
        sub = data.subset(self.rows)
        changes, roles = {}, dict(sub.meta.get("roles", {}))
        if self.strata is not None:
            changes.update(strata=np.unique(self.strata, return_inverse=True)[1].astype(np.int64), strata_labels=None)
            roles["strata"] = self.strata_kind or "strata"
        if self.weights is not None:
            w = self.weights if sub.weights is None else self.weights * sub.weights
            changes["weights"] = w
            roles["weights"] = "IPTW" if sub.weights is None else f"IPTW x {roles.get('weights', 'weights')}"
        return replace(sub, meta={**sub.meta, "roles": roles}, **changes)
