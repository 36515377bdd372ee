"""The result of a fit: coefficients, tidy tables, prediction, JSON round trip."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from riskset.solver.prior import Prior

#: Name of exp(coef) in the coefficient table, by model.
_RATIO_NAMES = {"cox": "hazard_ratio", "fine_gray": "subdistribution_hazard_ratio", "logistic": "odds_ratio",
                "conditional_logistic": "odds_ratio", "pooled_logistic": "odds_ratio", "poisson": "rate_ratio",
                "conditional_poisson": "rate_ratio", "sccs": "incidence_rate_ratio"}


@dataclass
class FitResult:
    """A fitted model.

    Attributes
    ----------
    model_name, model_options : the model and its options (e.g. ties, intercept).
    coef : pandas.Series of estimates, indexed by coefficient name.
    se : pandas.Series of standard errors (inverse observed information), NaN where
        not computed (penalized coefficients).
    loglik : log-likelihood at the estimate; objective: penalized log-likelihood.
    converged, message, n_iter : how the solver ended.
    status : 'converged', 'not_converged' or 'estimate_does_not_exist' (monotone
        likelihood: the likelihood keeps increasing along some unpenalized coefficients).
    diverging : those coefficients, name -> +1 / -1 (the direction); ``coef`` holds the
        last iterate there, which :meth:`coef_table` shows as +-inf.
    gamma_max : smallest L1 rate at which every penalized coefficient is zero.
    prior : the prior used.
    intervals : DataFrame of confidence intervals (profile likelihood), if computed.
    timings : seconds spent, by step.
    """

    model_name: str
    model_options: dict
    coef: pd.Series
    se: pd.Series
    loglik: float
    objective: float
    converged: bool
    message: str
    n_iter: int
    prior: Prior
    n_rows: int
    gamma_max: float | None = None
    intervals: pd.DataFrame | None = None
    timings: dict = field(default_factory=dict)
    status: str = ""
    diverging: dict = field(default_factory=dict)

    def __post_init__(self):
        if not self.status:
            self.status = ("estimate_does_not_exist" if self.diverging else
                           "converged" if self.converged else "not_converged")

    @property
    def model(self):
        from riskset.models.base import get_model

        return get_model(self.model_name, **self.model_options)

    def coef_table(self, level: float = 0.95) -> pd.DataFrame:
        """Tidy table: name, estimate, se, z, p, Wald interval, exp(estimate) and interval.

        Profile-likelihood intervals, when computed, replace the Wald ones (column
        ``interval`` says which). A coefficient whose estimate does not exist shows estimate
        +-inf, no standard error, its bound on that side +-inf, and ``note`` says so.
        """
        z = stats.norm.ppf(0.5 + level / 2)
        t = pd.DataFrame({"name": self.coef.index, "estimate": self.coef.to_numpy(), "se": self.se.to_numpy()})
        t["z"] = t["estimate"] / t["se"]
        t["p"] = 2 * stats.norm.sf(np.abs(t["z"]))
        t["lower"] = t["estimate"] - z * t["se"]
        t["upper"] = t["estimate"] + z * t["se"]
        t["interval"] = np.where(t["se"].notna(), "wald", "")
        self._mark_diverging(t)
        if self.intervals is not None:
            prof = self.intervals.set_index("name")
            hit = t["name"].isin(prof.index)
            t.loc[hit, "lower"] = prof.loc[t.loc[hit, "name"], "lower"].to_numpy()
            t.loc[hit, "upper"] = prof.loc[t.loc[hit, "name"], "upper"].to_numpy()
            t.loc[hit, "interval"] = "profile"
        ratio = _RATIO_NAMES.get(self.model_name)
        if ratio:
            t[ratio] = np.exp(t["estimate"])
            t[f"{ratio}_lower"] = np.exp(t["lower"])
            t[f"{ratio}_upper"] = np.exp(t["upper"])
        return t

    def _mark_diverging(self, table: pd.DataFrame) -> None:
        """Estimate and bound +-inf, no standard error, and a note for the diverging coefficients."""
        table["note"] = ""
        for name, direction in self.diverging.items():
            row = table["name"] == name
            table.loc[row, ["se", "z", "p"]] = np.nan
            table.loc[row, "estimate"] = direction * np.inf
            table.loc[row, "upper" if direction > 0 else "lower"] = direction * np.inf
            table.loc[row, "note"] = f"estimate does not exist (-> {'+' if direction > 0 else '-'}inf)"

    def summary(self) -> str:
        """A printable summary: status line and coefficient table."""
        status = {"converged": "converged", "not_converged": "NOT CONVERGED",
                  "estimate_does_not_exist": "ESTIMATE DOES NOT EXIST"}.get(self.status, self.status)
        head = (f"{self.model_name} model, {self.n_rows} rows, prior {self.prior.to_dict()}\n"
                f"{status} after {self.n_iter} cycles ({self.message})\n"
                f"log-likelihood {self.loglik:.6f}, penalized {self.objective:.6f}")
        if self.gamma_max is not None:
            head += f", gamma_max {self.gamma_max:.6g}"
        with pd.option_context("display.width", 120, "display.max_rows", 60):
            return head + "\n" + self.coef_table().to_string(index=False, float_format=lambda v: f"{v:.5g}")

    def linear_predictor(self, data) -> np.ndarray:
        """X beta + offset for a Dataset, matching coefficients to covariates by name.

        Covariates of ``data`` the fit does not know are ignored; coefficients
        without a covariate in ``data`` (all-zero columns) contribute nothing;
        ``intercept`` adds a constant.
        """
        pos = {n: i for i, n in enumerate(data.covariate_names)}
        cols = [pos[n] for n in self.coef.index if n in pos]
        beta = np.array([self.coef[n] for n in self.coef.index if n in pos])
        eta = data.X[:, cols] @ beta if cols else np.zeros(data.n_rows)
        if "intercept" in self.coef.index and "intercept" not in pos:
            eta = eta + self.coef["intercept"]
        if data.offset is not None:
            eta = eta + data.offset
        return np.asarray(eta)

    def predict(self, data, kind: str = "link") -> np.ndarray:
        """Model predictions for ``data`` (kinds depend on the model: link, probability, rate, ...)."""
        return self.model.predict(self, data, kind)

    # -- persistence --------------------------------------------------------------
    def to_dict(self) -> dict:
        d = {
            "model": self.model_name,
            "model_options": self.model_options,
            "coef": {k: float(v) for k, v in self.coef.items()},
            "se": {k: (None if np.isnan(v) else float(v)) for k, v in self.se.items()},
            "loglik": self.loglik,
            "penalized_loglik": self.objective,
            "converged": bool(self.converged),
            "status": self.status,
            "diverging": dict(self.diverging),
            "message": self.message,
            "n_iter": self.n_iter,
            "n_rows": self.n_rows,
            "gamma_max": self.gamma_max,
            "prior": self.prior.to_dict(),
            "nonzero": int(np.count_nonzero(self.coef.to_numpy())),
            "timings": self.timings,
        }
        if self.intervals is not None:
            d["intervals"] = self.intervals.to_dict(orient="records")
        return d

    def to_json(self, path=None) -> str:
        """JSON text of the fit; written to ``path`` if given."""
        text = json.dumps(self.to_dict(), indent=2)
        if path is not None:
            with open(path, "w") as f:
                f.write(text + "\n")
        return text

    @classmethod
    def from_json(cls, source) -> "FitResult":
        """Load a fit saved by :meth:`to_json` (a path or the JSON text)."""
        text = source if str(source).lstrip().startswith("{") else open(source).read()
        d = json.loads(text)
        se = {k: (np.nan if v is None else v) for k, v in d["se"].items()}
        intervals = pd.DataFrame(d["intervals"]) if "intervals" in d else None
        return cls(model_name=d["model"], model_options=d["model_options"], coef=pd.Series(d["coef"], dtype=float),
                   se=pd.Series(se, dtype=float), loglik=d["loglik"], objective=d["penalized_loglik"],
                   converged=d["converged"], message=d["message"], n_iter=d["n_iter"],
                   prior=Prior.from_dict(d["prior"]), n_rows=d["n_rows"], gamma_max=d["gamma_max"],
                   intervals=intervals, timings=d.get("timings", {}), status=d.get("status", ""),
                   diverging=d.get("diverging", {}))


__all__ = ["FitResult"]
