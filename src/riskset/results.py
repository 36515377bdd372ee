"""The result of a fit: coefficients, tidy tables, prediction, JSON round trip."""
from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy import special

from riskset import validation as check
from riskset.data.dataset import check_dataset, describe_roles
from riskset.exceptions import DataWarning, InputError
from riskset.models.base import get_model, model_class
from riskset.solver.ccd import AT_GAMMA_MAX, CONVERGED, DOES_NOT_EXIST, NOT_CONVERGED, fit_status
from riskset.solver.prior import AdaptiveRidge, HierarchicalPrior, JeffreysPrior, Prior, prior_from_dict

#: How ``FitResult.variance`` reads in a summary.
_VARIANCE_TEXT = {"model-based": "model-based (inverse observed information)",
                  "robust": "robust (sandwich, as cmprsk::crr)",
                  "robust cox": "robust (sandwich, as coxph(robust = TRUE))",
                  "robust given-G": "robust (sandwich, the censoring weights taken as known)"}

#: How ``FitResult.status`` reads in a summary.
_STATUS_TEXT = {CONVERGED: "converged", NOT_CONVERGED: "NOT CONVERGED", DOES_NOT_EXIST: "ESTIMATE DOES NOT EXIST"}


@dataclass
class FitResult:
    """A fitted model.

    Attributes
    ----------
    model_name, model_options : the model and its options (e.g. ties, intercept).
    coef : pandas.Series of estimates, indexed by coefficient name.
    se : pandas.Series of standard errors, NaN where not computed (penalized coefficients).
    variance : which standard errors ``se`` holds: ``'model-based'`` (inverse observed
        information) or ``'robust'`` (sandwich, as ``cmprsk::crr``: a Fine-Gray fit's default,
        ``riskset.fit(..., variance='model-based')`` for the other); said by
        :meth:`summary` and by ``coef_table().attrs['variance']``.
    loglik : log-likelihood at the estimate; objective: penalized log-likelihood.
    converged, message, n_iter : how the solver ended.
    kkt : the largest violation of the optimality (KKT) conditions at the estimate,
        relative to the largest L1 rate (without an L1 prior, in standard errors: each
        coefficient's violation over sqrt(I_jj + l2_j)): how close to the optimum
        "converged" is (at most ``kkt_tol``, 1e-4 by default).
    status : 'converged', 'not_converged' or 'estimate_does_not_exist' (monotone
        likelihood: the likelihood keeps increasing along some unpenalized coefficients).
    diverging : those coefficients, name -> +1 / -1 (the direction); ``coef`` holds the
        last iterate there, which :meth:`coef_table` shows as +-inf.
    gamma_max : smallest L1 rate at which every penalized coefficient is zero.
    aliased : names of the coefficients not defined because of singularities (their
        column is a linear combination of earlier ones); held at 0 in ``coef`` (so that
        predictions work), NaN in :meth:`coef_table` (R prints NA).
    fixed : coefficients held at given values (``riskset.fit(..., fixed=)``), name -> value:
        not estimated, no standard error; :meth:`coef_table` notes them.
    prior : the prior used.
    intervals : DataFrame of confidence intervals (profile likelihood), if computed.
    timings : seconds spent, by step.
    roles : which data columns played the roles that change a fit besides outcome and
        covariates: ``weights`` (case weights), ``strata`` (with ``n_strata``, and
        ``strata_ignored_by`` when the model does not use strata), ``offset``; empty
        when the fit was unweighted, unstratified and without offset (see :func:`fit_roles`).
    labels : display name of each coefficient that has one (from the data's covariate
        reference table, :func:`coef_labels`); coefficients stay keyed by name (id).

    ``print(fit)`` gives a short summary; :meth:`summary` the full table.

    Examples
    --------
    >>> import riskset
    >>> data = riskset.simulate(n=500, p=8, model="logistic", seed=1)
    >>> riskset.fit(data, "logistic", riskset.Laplace(gamma=2.0))
    FitResult: logistic model, converged after 1 cycle, 500 rows
      prior: laplace, gamma=2
      4 of 9 coefficients non-zero, log-likelihood -292.13
      coef: intercept -0.9597, x6 -0.2292, x3 -0.1928, x1 0.1561
      fit.summary() for the full table, fit.coef_table() as a DataFrame
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
    prior: Prior | AdaptiveRidge | JeffreysPrior | HierarchicalPrior
    n_rows: int
    gamma_max: float | None = None
    intervals: pd.DataFrame | None = None
    timings: dict = field(default_factory=dict)
    roles: dict = field(default_factory=dict)
    aliased: list = field(default_factory=list)
    labels: dict = field(default_factory=dict)
    diverging: dict = field(default_factory=dict)
    kkt: float = float("nan")
    variance: str = "model-based"
    fixed: dict = field(default_factory=dict)
    normalize: str | None = None
    threads: int = 1
    sharding: dict = field(default_factory=dict)

    @property
    def status(self) -> str:
        return fit_status(self.converged, self.diverging)

    def __repr__(self) -> str:
        """Status, size, prior, fit and the first few coefficients (largest in absolute value)."""
        status = _STATUS_TEXT.get(self.status, self.status)
        status = status if self.converged else f"{status} ({self.message})"
        nonzero = int(np.count_nonzero(self.coef.drop(self.aliased).to_numpy()))
        return "\n".join([
            f"FitResult: {self.model_name} model, {status} {self._when()}, {self.n_rows:,} rows",
            f"  prior: {_describe_prior(self.prior)}{self._normalized()}",
            f"  {nonzero:,} of {len(self.coef):,} coefficients non-zero{self._aliased_note()}, "
            f"log-likelihood {self.loglik:.6g}",
            f"  coef: {self._largest_coefficients()}",
            "  fit.summary() for the full table, fit.coef_table() as a DataFrame"])

    def _where(self) -> str:
        """Where the fit ran: its threads, or its shards and workers and the traffic with them."""
        if not self.sharding:
            return f"{self.threads} thread{'s' if self.threads != 1 else ''}"
        s = self.sharding
        return (f"{s['shards']} shards on {s['workers']} worker{'s' if s['workers'] != 1 else ''} "
                f"({s['rounds']} rounds, {s['bytes_exchanged'] / 1e6:.3g} MB exchanged)")

    def _normalized(self) -> str:
        return (f" on covariates normalized by {self.normalize} (coefficients shown on the original scale)"
                if self.normalize else "")

    def rescaled(self, scale: pd.Series, normalize: str) -> "FitResult":
        """This fit of normalized covariates (coefficient b_j of x_j * scale_j) on the original
        scale: coefficients, standard errors, interval bounds and fixed values times ``scale``
        (by coefficient name; 1 where absent)."""
        factor = scale.reindex(self.coef.index).fillna(1.0)
        out = replace(self, coef=self.coef * factor, se=self.se * factor, normalize=normalize,
                      fixed={n: v * float(factor[n]) for n, v in self.fixed.items()})
        if self.intervals is not None:
            by_name = factor.reindex(self.intervals["name"]).to_numpy()
            out.intervals = self.intervals.assign(lower=self.intervals["lower"] * by_name,
                                                  upper=self.intervals["upper"] * by_name)
        return out

    def _when(self) -> str:
        """When the fit ended: 'after 3 cycles', or at the start, saying how (no cycle ran)."""
        if self.n_iter > 0 and self.sharding:
            return f"after {self.n_iter} outer Newton iteration{'s' if self.n_iter != 1 else ''}"
        if self.n_iter > 0:
            return f"after {_cycles(self.n_iter)}"
        if self.converged and self.message == AT_GAMMA_MAX:
            return "at the start: the prior's centers are the optimum"
        if self.converged:
            return "at the start, by Newton steps before any cycle"
        return "at the start"

    def _aliased_note(self) -> str:
        return f" ({len(self.aliased):,} aliased: not defined)" if self.aliased else ""

    def _largest_coefficients(self, k: int = 5) -> str:
        """The ``k`` non-zero coefficients largest in absolute value, 'name (label) value', then how many more."""
        nonzero = self.coef[(self.coef != 0) & ~self.coef.index.isin(self.aliased)]
        top = nonzero.reindex(nonzero.abs().sort_values(ascending=False, kind="stable").index[:k])
        shown = [f"{name}{f' ({self.labels[name]})' if name in self.labels else ''} "
                 f"{self.diverging[name] * np.inf if name in self.diverging else value:.4g}"
                 for name, value in top.items()]
        more = len(nonzero) - len(shown)
        return (", ".join(shown) + (f", ... ({more:,} more)" if more > 0 else "")) if shown else "all zero"

    @property
    def model(self):
        return get_model(self.model_name, **self.model_options)

    def coef_table(self, level: float = 0.95) -> pd.DataFrame:
        """Tidy table: name, estimate, se, z, p, Wald interval, exp(estimate) and interval.

        Profile-likelihood intervals, when computed, replace the Wald ones (column
        ``interval`` says which; the Wald ones stay beside them as ``wald_lower`` and
        ``wald_upper``). ``table.attrs['roles']`` says which columns were
        used as weights, strata and offset (:attr:`roles`), ``table.attrs['variance']``
        which standard errors ``se`` are (:attr:`variance`). Aliased coefficients (column
        ``aliased``) have NaN estimates, as R's NA. When the data came with a covariate
        reference table, a ``covariate_name`` column follows ``name`` (the coefficient's
        own name, e.g. the intercept's, where it has no label).
        A coefficient whose estimate does not exist shows estimate +-inf, no standard error,
        its bound on that side +-inf, and ``note`` says so.
        """
        z = special.ndtri(0.5 + check.probability("level", level) / 2)
        aliased = self.coef.index.isin(self.aliased)
        t = pd.DataFrame({"name": self.coef.index, "estimate": np.where(aliased, np.nan, self.coef.to_numpy()),
                          "se": self.se.to_numpy()})
        t["z"] = t["estimate"] / t["se"]
        t["p"] = 2 * special.ndtr(-np.abs(t["z"]))
        t["lower"] = t["estimate"] - z * t["se"]
        t["upper"] = t["estimate"] + z * t["se"]
        t["interval"] = np.where(t["se"].notna(), "wald", "")
        if self.labels:
            t.insert(1, "covariate_name", self.display_names(t["name"]))
        self._mark_diverging(t)
        t.loc[t["name"].isin(list(self.fixed)), "note"] = "fixed (held at this value, not estimated)"
        if self.intervals is not None:
            prof = self.intervals.set_index("name")
            hit = t["name"].isin(prof.index)
            t["wald_lower"], t["wald_upper"] = t["lower"], t["upper"]  # kept beside the profile interval
            t.loc[hit, "lower"] = prof.loc[t.loc[hit, "name"], "lower"].to_numpy()
            t.loc[hit, "upper"] = prof.loc[t.loc[hit, "name"], "upper"].to_numpy()
            t.loc[hit, "interval"] = "profile"
        t["aliased"] = aliased
        ratio = model_class(self.model_name).ratio_name
        if ratio:
            with np.errstate(over="ignore"):  # a ratio past 1e308 is inf, as R's exp
                t[ratio] = np.exp(t["estimate"].to_numpy())
                t[f"{ratio}_lower"] = np.exp(t["lower"].to_numpy())
                t[f"{ratio}_upper"] = np.exp(t["upper"].to_numpy())
        t.attrs["roles"] = dict(self.roles)
        t.attrs["variance"] = self.variance
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

    def summary(self, level: float = 0.95, *, full_table: str = "fit.coef_table()") -> str:
        """A printable summary: status line and coefficient table (intervals at ``level``).

        The table shows the non-zero coefficients, the aliased and the profiled ones; a line
        says how many zero coefficients it leaves out and where every row is (``full_table``:
        ``riskset fit`` names its ``--out`` file).
        """
        status = _STATUS_TEXT.get(self.status, self.status)
        head = (f"{self.model_name} model, {self.n_rows} rows, prior {self.prior!r}{self._normalized()}, "
                f"{self._where()}\n"
                f"{status} {self._when()} ({self.message}), KKT violation {self.kkt:.1e}\n"
                f"roles: {describe_roles(self.roles)}\n"
                f"log-likelihood {self.loglik:.6f}, penalized {self.objective:.6f}")
        if self.gamma_max is not None:
            head += f", gamma_max {self.gamma_max:.6g}"
        head += f"\nstandard errors: {self._variance_text()}"
        ties = self._ties_note()
        if ties:
            head += f"\nties: {ties}"
        if self.aliased:
            head += f"\n{len(self.aliased)} coefficient(s) not defined because of singularities (aliased, NaN)"
        if self.fixed:
            head += ("\nfixed (held, not estimated): "
                     + ", ".join(f"{name} = {value:g}" for name, value in self.fixed.items()))
        table = self.coef_table(level)
        profiled = table["name"].isin(self.intervals["name"]) if self.intervals is not None else False
        shown = table[(table["estimate"] != 0) | table["aliased"] | profiled]
        if len(shown) < len(table):
            head += (f"\n{len(table) - len(shown):,} of {len(table):,} coefficients are zero and not shown; "
                     f"every row: {full_table}")
        if shown.empty:
            return head
        with pd.option_context("display.width", 120):
            return head + "\n" + shown.to_string(index=False, float_format=lambda v: f"{v:.5g}")

    def _variance_text(self) -> str:
        """Which standard errors the table shows, for the summary."""
        if self.se.isna().all():
            return "none (penalized coefficients have none: profile= intervals or riskset.bootstrap)"
        kind = "given-G" if "censor_weights" in self.roles else self.model_name
        text = _VARIANCE_TEXT.get(f"{self.variance} {kind}", _VARIANCE_TEXT.get(self.variance, self.variance))
        if self.model_name == "least_squares":  # l = -RSS/2: the residual variance is taken as 1 (Cyclops)
            df_resid = self.n_rows - int(np.isfinite(self.se).sum())
            sigma = np.sqrt(-2.0 * self.loglik / df_resid) if df_resid > 0 else np.nan
            text += (f", with unit residual variance (Cyclops' convention); R's lm multiplies them by the "
                     f"residual standard error sqrt(RSS / (n - p)) = {sigma:.6g}")
        return text

    def _ties_note(self) -> str:
        """'Breslow (R's coxph default is Efron: ties='efron')' where the family has ties and R's default differs."""
        ties = self.model_options.get("ties")
        if ties is None:
            return ""
        r_ties = model_class(self.model_name).r_ties
        note = f" (R's coxph default is {r_ties.capitalize()}: ties={r_ties!r})" if r_ties and r_ties != ties else ""
        return ties.capitalize() + note

    def display_names(self, names) -> list[str]:
        """The label of each of coefficient ``names``, the name itself where it has none."""
        return [self.labels.get(n, n) for n in names]

    def linear_predictor(self, data) -> np.ndarray:
        """X beta + offset for a Dataset, matching coefficients to covariates by name
        (checked by :meth:`check_covariates`); ``intercept`` adds a constant.
        """
        self.check_covariates(data)
        pos = {n: i for i, n in enumerate(data.covariate_names)}
        cols = [pos[n] for n in self.coef.index if n in pos]
        beta = np.array([self.coef[n] for n in self.coef.index if n in pos])
        full = np.zeros(data.n_covariates)  # X times a zero-padded beta: no copy of X's columns
        full[cols] = beta
        eta = data.X @ full
        if "intercept" in self.coef.index and "intercept" not in pos:
            eta = eta + self.coef["intercept"]
        if data.offset is not None:
            eta = eta + data.offset
        return np.asarray(eta)

    def check_covariates(self, data) -> None:
        """Check that ``data`` has the covariates of this fit, before predicting.

        A sparse (OHDSI) prediction set lists no zero values, so a covariate of the fit
        may be absent from it; the policy:

        - none of the fit's covariates is in ``data`` (names from other data, e.g.
          ``'x0'`` against covariate ids): InputError naming both sides;
        - covariates of ``data`` the fit does not know: ignored, with a DataWarning naming them;
        - covariates of the fit with a non-zero coefficient missing from ``data``: taken
          as 0 everywhere, with a DataWarning naming them.
        """
        model = self.model
        covariate = {n: model.covariate_of(n) for n in self.coef.index}
        fitted = [c for c in dict.fromkeys(covariate.values()) if c is not None]
        given = set(data.covariate_names)
        if fitted and given and not given.intersection(fitted):
            raise InputError(f"none of the fit's covariates is in the data: the fit has {_some(fitted)}, "
                             f"the data have {_some(data.covariate_names)}; predict from data with the "
                             f"covariate names of the fitted data")
        known = set(fitted)
        unknown = [n for n in data.covariate_names if n not in known]
        if unknown:
            warnings.warn(f"{len(unknown)} covariate(s) of the data are not in the fit and are ignored: "
                          f"{_some(unknown)}", DataWarning, stacklevel=3)
        missing = list(dict.fromkeys(c for n, c in covariate.items()
                                     if c is not None and c not in given and self.coef[n] != 0))
        if missing:
            warnings.warn(f"{len(missing)} covariate(s) with a non-zero coefficient are not in the data and are "
                          f"taken as 0 for every row: {_some(missing)}", DataWarning, stacklevel=3)

    def predict(self, data, kind: str = "link") -> np.ndarray:
        """Model predictions for ``data``; ``kind`` as R's predict names it where R has it: ``'link'``
        (x beta + offset; ``'lp'`` for the models of hazards), a GLM's ``'response'`` (its mean, as
        R's predict.glm; also ``'probability'`` / ``'rate'``), ``'risk'`` (exp(link): Cox, Fine-Gray,
        conditional models, which refuse ``'response'`` as R's predict.coxph has none). An
        unknown kind raises an InputError listing the model's kinds.

        Covariates are matched by name; see :meth:`check_covariates` for missing and
        unknown ones.
        """
        check_dataset("data", data)
        return self.model.predict(self, data, kind)

    # -- persistence --------------------------------------------------------------
    def to_spec(self, *, columns: dict, data: str = "data.csv", covariates=None) -> dict:
        """A case.json specification that fits this model again: :func:`riskset.spec.spec_from_fit`."""
        from riskset.spec import spec_from_fit

        return spec_from_fit(self, columns=columns, data=data, covariates=covariates)

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
            "kkt": None if np.isnan(self.kkt) else float(self.kkt),
            "variance": self.variance,
            "n_rows": self.n_rows,
            "gamma_max": self.gamma_max,
            "prior": self.prior.to_dict(),
            "nonzero": int(np.count_nonzero(self.coef.to_numpy())),
            "timings": self.timings,
            "threads": self.threads,
            **({"sharding": dict(self.sharding)} if self.sharding else {}),
            "roles": self.roles,
            "aliased": list(self.aliased),
            "fixed": dict(self.fixed),
            "labels": self.labels,
        }
        if self.normalize:
            d["normalize"] = self.normalize
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
        """Load a fit saved by :meth:`to_json` (a path or the JSON text).

        A file that is not a saved fit raises an InputError naming it.
        """
        text, where = _json_text(source)
        try:
            d = json.loads(text)
            se = {k: (np.nan if v is None else v) for k, v in d["se"].items()}
            intervals = pd.DataFrame(d["intervals"]) if "intervals" in d else None
            return cls(model_name=d["model"], model_options=d["model_options"],
                       coef=pd.Series(d["coef"], dtype=float), se=pd.Series(se, dtype=float), loglik=d["loglik"],
                       objective=d["penalized_loglik"], converged=d["converged"], message=d["message"],
                       n_iter=d["n_iter"], prior=prior_from_dict(d["prior"]), n_rows=d["n_rows"],
                       gamma_max=d["gamma_max"], intervals=intervals, timings=d.get("timings", {}),
                       roles=d.get("roles", {}), aliased=d.get("aliased", []),
                       labels=d.get("labels", {}), diverging=d.get("diverging", {}),
                       kkt=np.nan if d.get("kkt") is None else d["kkt"],
                       variance=d.get("variance", "model-based"), fixed=d.get("fixed", {}),
                       normalize=d.get("normalize"), threads=d.get("threads", 1),
                       sharding=d.get("sharding", {}))
        except json.JSONDecodeError as e:
            raise InputError(f"{where} is not JSON ({e.msg} at line {e.lineno}, column {e.colno}); "
                             f"give a file written by FitResult.to_json or 'riskset fit --out FILE.json'") from None
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            raise InputError(f"{where} is not a saved riskset fit ({type(e).__name__}: {e}); give a file "
                             f"written by FitResult.to_json or 'riskset fit --out FILE.json'") from None


def fit_roles(data, model) -> dict:
    """Which columns of ``data`` played a role in a fit of ``model`` besides outcome and
    covariates: ``weights``, ``strata`` (and ``n_strata``), ``offset``.

    Column names come from ``data.meta['roles']`` (set by the builders); strata that
    the model does not use are reported in ``strata_ignored_by``; Fine-Gray's given
    censoring weights in ``censor_weights``.

    >>> import riskset
    >>> d = riskset.from_arrays([[1.0], [0.0]], y=[1, 0], weights=[1.0, 2.0])
    >>> fit_roles(d, riskset.models.base.get_model("logistic"))
    {'weights': 'array'}
    """
    columns = data.meta.get("roles", {})
    roles = {}
    if data.weights is not None:
        roles["weights"] = columns.get("weights", "weights")
    if data.strata is not None:
        roles["strata"] = columns.get("strata", "strata")
        roles["n_strata"] = data.n_strata
        if not model.uses_strata:
            roles["strata_ignored_by"] = model.name
    if data.offset is not None:
        roles["offset"] = columns.get("offset", "offset")
    if data.censor_weights is not None:
        roles["censor_weights"] = columns.get("censor_weights", "censor_weights")
    return roles


def coef_labels(data, model, names) -> dict:
    """Display name of each coefficient in ``names`` whose covariate has a label in
    ``data.covariate_labels``; a coefficient of part of a covariate (a time-varying
    interval ``'1002(0,365]'``) keeps its suffix (``'age 20-24(0,365]'``).

    >>> import riskset
    >>> d = riskset.from_arrays([[1.0], [0.0]], y=[1, 0], covariate_names=["1002"])
    >>> d = d.with_covariate_labels({"1002": "age 20-24"})
    >>> coef_labels(d, riskset.models.base.get_model("logistic", intercept=True), ["intercept", "1002"])
    {'1002': 'age 20-24'}
    """
    labels = {}
    for name in names:
        covariate = model.covariate_of(name)
        if covariate in data.covariate_labels:
            suffix = name[len(covariate):] if name.startswith(covariate) else ""
            labels[name] = data.covariate_labels[covariate] + suffix
    return labels


def _json_text(source) -> tuple[str, str]:
    """(text, how to name it in messages) of JSON text or a path."""
    if isinstance(source, str) and source.lstrip().startswith("{"):
        return source, "the JSON text"
    try:
        with open(source) as f:
            return f.read(), f"file {str(source)!r}"
    except (OSError, TypeError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read a saved fit from {source!r}: {e}") from None


def _some(names, k: int = 10) -> str:
    """The first ``k`` of ``names``, quoted, for messages."""
    names = list(names)
    return ", ".join(map(repr, names[:k])) + (f" ... ({len(names)} in all)" if len(names) > k else "")


def _describe_prior(prior: Prior | AdaptiveRidge | JeffreysPrior | HierarchicalPrior) -> str:
    """'laplace, gamma=20' from the prior's dictionary; a BAR, IHT or Jeffreys prior as its call."""
    if not isinstance(prior, Prior):
        return repr(prior)
    d = prior.to_dict()
    return ", ".join([str(d.pop("kind"))] + [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                                             for k, v in d.items()])


__all__ = ["FitResult", "coef_labels", "fit_roles"]


def _cycles(n: int) -> str:
    """'1 cycle', '3 cycles'."""
    return f"{n} cycle" if n == 1 else f"{n} cycles"
