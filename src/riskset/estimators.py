"""scikit-learn estimators: a thin layer over :func:`riskset.fit`.

``CoxRegression``, ``FineGrayRegression``, ``LogisticRegression`` and
``PoissonRegression`` follow
scikit-learn's conventions (``fit(X, y)``, ``predict``, ``score``, ``get_params`` /
``set_params``), so they work in a :class:`sklearn.pipeline.Pipeline`, with
:func:`sklearn.base.clone` and in :class:`sklearn.model_selection.GridSearchCV`.
Each ``fit`` builds a :class:`~riskset.data.Dataset` with :func:`riskset.from_arrays`
(dense or scipy.sparse ``X``; a pandas DataFrame keeps its column names as
coefficient names) and calls :func:`riskset.fit`; the
:class:`~riskset.results.FitResult` is kept as ``fit_result_``.

The prior is given by parameters a grid search can vary:

- ``penalty``: ``None`` (maximum likelihood, the default, as :func:`riskset.fit`),
  ``'laplace'`` (:func:`riskset.Laplace`), ``'normal'`` (:func:`riskset.Normal`) or
  ``'elastic_net'`` (:func:`riskset.ElasticNet`): the prior kinds of riskset; scikit-learn's
  names ``'l1'``, ``'l2'`` and ``'elasticnet'`` mean the same
  (:func:`riskset.spec.prior_kind`);
- ``variance``: the prior variance (Cyclops' parametrization: larger means weaker
  shrinkage, like scikit-learn's ``C``). For ``'laplace'`` it is the Laplace variance
  ``2 / gamma**2``. For ``'elastic_net'`` the Laplace part has variance
  ``variance / l1_ratio`` and the Normal part ``variance / (1 - l1_ratio)``, so
  ``l1_ratio`` 1 and 0 give the ``'laplace'`` and ``'normal'`` priors of that variance;
- ``exclude``: covariate names left unpenalized (the treatment of interest);
- or ``prior``: any riskset prior (:class:`riskset.Prior`, :func:`riskset.BAR`,
  :func:`riskset.IHT`, :func:`riskset.Jeffreys`, :func:`riskset.Hierarchical`), instead of the
  three above.

Survival targets are structured arrays with a boolean event field and a float time
field, as scikit-survival's ``Surv.from_arrays`` (see :func:`survival_target`), or
two-column arrays / DataFrames ``(time, event)``; competing-risks targets have an
integer status field instead (:func:`competing_risks_target`).

A fit that does not converge raises :class:`NotConvergedError` (carrying the
unconverged FitResult) rather than leaving an estimator whose predictions and scores
look right but are not: in a grid search that candidate's score is then NaN, with
scikit-learn's FitFailedWarning saying why.

scikit-learn (>= 1.6) is an optional dependency: ``pip install 'riskset[sklearn]'``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.special import expit

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
    from sklearn.metrics import d2_tweedie_score
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data
except ImportError as err:  # pragma: no cover - exercised only without scikit-learn
    raise ImportError("riskset.estimators needs scikit-learn >= 1.6: pip install 'riskset[sklearn]'") from err

from riskset.api import AnyPrior, fit as riskset_fit
from riskset.data.dataset import first_names
from riskset.data.ingest import from_arrays
from riskset.exceptions import InputError
from riskset.kernels.cpu.concordance import concordance_counts
from riskset.solver.prior import ElasticNet, Laplace, NoPrior, Normal, Prior, as_prior
from riskset.spec import prior_kind

#: The prior kinds ``penalty`` names (besides None), in riskset's spelling.
PENALTY_KINDS = ("laplace", "normal", "elastic_net")


class NotConvergedError(RuntimeError):
    """``fit`` stopped before convergence; ``fit_result`` holds the unconverged fit."""

    def __init__(self, message: str, fit_result):
        super().__init__(message)
        self.fit_result = fit_result


# -- survival targets and concordance -----------------------------------------------------
def survival_target(event, time) -> np.ndarray:
    """A survival target ``y`` for :class:`CoxRegression`: a structured array with a
    boolean ``event`` and a float ``time`` field (as scikit-survival's
    ``Surv.from_arrays``).

    Examples
    --------
    >>> y = survival_target([1, 0, 1], [2.0, 3.5, 1.0])
    >>> y["event"].tolist(), y["time"].tolist()
    ([True, False, True], [2.0, 3.5, 1.0])
    """
    event, time = np.asarray(event), np.asarray(time)
    if event.ndim != 1 or time.ndim != 1 or event.shape != time.shape:
        raise InputError(f"event and time must be 1-D of the same length; got shapes {event.shape} and {time.shape}")
    y = np.empty(event.shape[0], dtype=[("event", bool), ("time", np.float64)])
    y["event"] = _event_indicator(event)
    y["time"] = _numeric(time, "time")
    return y


def competing_risks_target(status, time) -> np.ndarray:
    """A competing-risks target ``y`` for :class:`FineGrayRegression`: a structured array
    with an integer ``status`` field (0 censored, 1 event of interest, other codes
    competing events) and a float ``time`` field.

    Examples
    --------
    >>> y = competing_risks_target([1, 0, 2], [2.0, 3.5, 1.0])
    >>> y["status"].tolist(), y["time"].tolist()
    ([1, 0, 2], [2.0, 3.5, 1.0])
    """
    status, time = np.asarray(status), np.asarray(time)
    if status.ndim != 1 or time.ndim != 1 or status.shape != time.shape:
        raise InputError(f"status and time must be 1-D of the same length; got shapes {status.shape} and {time.shape}")
    y = np.empty(status.shape[0], dtype=[("status", np.int64), ("time", np.float64)])
    y["status"] = _status_codes(status)
    y["time"] = _numeric(time, "time")
    return y


def concordance_index(time, event, risk) -> float:
    """Harrell's concordance index of risk scores (higher = earlier event).

    Over the comparable pairs (i has an event at t_i, j is still at risk: t_j > t_i, or
    t_j == t_i and j censored), the share where i has the higher risk, ties in risk
    counting one half; as scikit-survival's ``concordance_index_censored`` and
    lifelines' ``concordance_index`` (given ``-risk``). O(n log n).

    Examples
    --------
    >>> concordance_index([1.0, 2.0, 3.0], [1, 1, 0], [3.0, 2.0, 1.0])
    1.0
    """
    time = _numeric(np.asarray(time), "time")
    event = _event_indicator(np.asarray(event))
    risk = _numeric(np.asarray(risk), "risk")
    if not time.shape == event.shape == risk.shape:
        raise InputError(f"time, event and risk must have the same length; got {time.shape[0]}, "
                         f"{event.shape[0]} and {risk.shape[0]}")
    order = np.lexsort((event, -time))  # descending time, censored rows first within a time
    ranks, rank = np.unique(risk, return_inverse=True)
    concordant, tied, comparable = concordance_counts(time, event, rank.astype(np.int64), order, ranks.shape[0])
    if comparable == 0:
        raise InputError("no comparable pairs: the concordance index needs an event before another row's "
                         "event or censoring time")
    return (concordant + 0.5 * tied) / comparable


def _event_indicator(event: np.ndarray) -> np.ndarray:
    if event.dtype == bool:
        return event
    values = _numeric(event, "event")
    bad = (values != 0) & (values != 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"the event indicator must be 0/1 or False/True; row {i} has {values[i]:g}")
    return values == 1


def _numeric(values: np.ndarray, what: str) -> np.ndarray:
    if values.dtype.kind not in "biuf":
        raise InputError(f"{what} must be numeric, got dtype {values.dtype}")
    values = values.astype(np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{what} is not finite ({values[i]}) at row {i}")
    return values


def _survival_arrays(y) -> tuple[np.ndarray, np.ndarray]:
    """(time, event) of a structured (event, time) array or a two-column (time, event) table."""
    time, event = _time_and_code(y, "b", "boolean event", "riskset.estimators.survival_target(event, time)")
    return time, _event_indicator(event)


def _competing_arrays(y) -> tuple[np.ndarray, np.ndarray]:
    """(time, status code) of a structured (status, time) array or a two-column (time, status) table."""
    time, status = _time_and_code(y, "biu", "integer status", "riskset.estimators.competing_risks_target(status, time)")
    return time, _status_codes(status)


def _time_and_code(y, code_kinds: str, code_field: str, builder: str) -> tuple[np.ndarray, np.ndarray]:
    """(time, code column) of a structured array with one field of a dtype kind in
    ``code_kinds`` and one time field, or of a two-column (time, code) table."""
    if isinstance(y, pd.DataFrame):
        y = y.to_numpy()
    y = np.asarray(y)
    if y.dtype.names is not None:
        fields = y.dtype.names
        codes = [f for f in fields if y.dtype[f].kind in code_kinds]
        if len(fields) != 2 or len(codes) != 1:
            raise InputError(f"a structured survival target needs one {code_field} field and one float time field "
                             f"({builder} builds it); got fields "
                             f"{', '.join(f'{f!r} ({y.dtype[f]})' for f in fields)}")
        time_field = next(f for f in fields if f != codes[0])
        return _numeric(y[time_field], "time"), y[codes[0]]
    if y.ndim != 2 or y.shape[1] != 2:
        raise InputError(f"y must be a survival target: a structured array from {builder}, or two columns "
                         f"(time, {code_field.split()[-1]}); got an array of shape {y.shape}")
    return _numeric(y[:, 0], "time (column 0 of y)"), y[:, 1]


def _status_codes(status: np.ndarray) -> np.ndarray:
    values = _numeric(status, "status")
    fractional = values != np.round(values)
    if fractional.any():
        i = int(np.flatnonzero(fractional)[0])
        raise InputError(f"status codes must be integers (0 censored, 1 event of interest, 2 ... competing events); "
                         f"row {i} has {values[i]:g}")
    return values.astype(np.int64)


# -- the common layer over riskset.fit ---------------------------------------------------------
class _RisksetEstimator(BaseEstimator):
    """Prior, solver settings and the fit shared by the estimators.

    Subclasses name the riskset ``_model``, translate ``y`` into Dataset outcome
    arrays (``_outcome``) and may add model options (``_model_options``).
    """

    _model: str

    def __init__(self, penalty=None, *, variance=1.0, l1_ratio=0.5, exclude=(), prior=None, tol=1e-10,
                 max_iter=1000, backend="cpu"):
        self.penalty = penalty
        self.variance = variance
        self.l1_ratio = l1_ratio
        self.exclude = exclude
        self.prior = prior
        self.tol = tol
        self.max_iter = max_iter
        self.backend = backend

    def fit(self, X, y, sample_weight=None):
        """Fit the model by :func:`riskset.fit`; ``sample_weight`` are case weights."""
        if y is None:
            raise InputError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        X = self._design(X, reset=True)
        self._check_feature_names(self._feature_names())
        weights = None if sample_weight is None else _sample_weight(sample_weight, X.shape[0])
        outcome = self._outcome(y, weights)
        if weights is not None:
            outcome["weights"] = weights
        data = from_arrays(X, covariate_names=self._feature_names(), **outcome)
        result = riskset_fit(data, self._model, self._resolved_prior(), tol=self.tol, max_iter=self.max_iter,
                             backend=self.backend, **self._model_options())
        if not result.converged:
            raise NotConvergedError(f"{type(self).__name__} did not converge: {result.message}", result)
        self.fit_result_ = result
        self.n_iter_ = result.n_iter
        self.coef_ = result.coef.reindex(self._feature_names()).fillna(0.0).to_numpy()
        return self

    def _outcome(self, y, sample_weight) -> dict:
        """Dataset outcome arrays (``from_arrays`` keywords) of the target ``y``."""
        raise NotImplementedError

    def _model_options(self) -> dict:
        return {}

    def _check_feature_names(self, names: list[str]) -> None:
        """Raise InputError for covariate names the model cannot take."""

    def _linear_predictor(self, X) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X = self._design(X, reset=False)
        return np.asarray(X @ self.coef_).ravel()

    def _design(self, X, reset: bool):
        """X as a float matrix (sparse kept), its shape and names checked against the fit."""
        if isinstance(X, pd.DataFrame):
            text = [c for c in X.columns if not (pd.api.types.is_numeric_dtype(X[c]) or X[c].dtype == bool)]
            if text:
                raise InputError(f"column {text[0]!r} of X is not numeric (dtype {X[text[0]].dtype}): encode it "
                                 "first, e.g. with sklearn's OneHotEncoder in a Pipeline")
        X = validate_data(self, X, reset=reset, accept_sparse=("csr", "csc", "coo"), dtype=np.float64,
                          ensure_all_finite=False)
        values = X.data if sp.issparse(X) else X
        if not np.all(np.isfinite(values)):
            self._raise_non_finite(sp.coo_matrix(X) if sp.issparse(X) else X)
        return X

    def _raise_non_finite(self, X):
        if sp.issparse(X):
            k = int(np.flatnonzero(~np.isfinite(X.data))[0])
            row, col, value = X.row[k], X.col[k], X.data[k]
        else:
            row, col = np.argwhere(~np.isfinite(X))[0]
            value = X[row, col]
        shown = "NaN" if np.isnan(value) else value
        raise InputError(f"covariate {self._feature_names()[col]!r} is {shown} at row {row} of X: "
                         "impute or drop it first")

    def _feature_names(self) -> list[str]:
        if hasattr(self, "feature_names_in_"):
            return [str(n) for n in self.feature_names_in_]
        return [f"x{j}" for j in range(self.n_features_in_)]

    def _resolved_prior(self) -> AnyPrior:
        """The riskset Prior of the parameters (validated here, not in ``__init__``, as
        scikit-learn requires)."""
        if self.prior is not None:
            if self.penalty is not None:
                raise InputError(f"give either prior= or penalty= ({self.penalty!r}), not both")
            return as_prior(self.prior)
        kind = prior_kind(self.penalty) if isinstance(self.penalty, str) else self.penalty
        if kind is not None and kind not in PENALTY_KINDS:
            raise InputError(f"penalty must be 'l1', 'l2', 'elasticnet' or None, not {self.penalty!r} "
                             f"(or riskset's names of the first three: 'laplace', 'normal', 'elastic_net')")
        if kind is None:
            return NoPrior()
        variance = _number(self.variance, "variance")
        if not (np.isfinite(variance) and variance > 0):
            raise InputError(f"variance must be a positive finite number, got {self.variance!r}")
        exclude = (self.exclude,) if isinstance(self.exclude, str) else tuple(self.exclude)
        if kind == "laplace":
            return Laplace(variance=variance, exclude=exclude)
        if kind == "normal":
            return Normal(variance, exclude=exclude)
        return _elastic_net(variance, self.l1_ratio, exclude)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags


def _number(value, name: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}") from None


def _sample_weight(sample_weight, n_rows: int) -> np.ndarray:
    weights = _numeric(column_or_1d(sample_weight), "sample_weight")
    if weights.shape[0] != n_rows:
        raise InputError(f"sample_weight has {weights.shape[0]} values for {n_rows} rows of X")
    if not np.any(weights > 0):
        raise InputError("sample_weight are all zero (or negative): no row would count in the fit")
    return weights


def _elastic_net(variance: float, l1_ratio, exclude) -> Prior:
    """Laplace part of variance ``variance / l1_ratio`` plus Normal part of variance
    ``variance / (1 - l1_ratio)`` (gamma = sqrt(2 / Laplace variance))."""
    r = _number(l1_ratio, "l1_ratio")
    if not 0 <= r <= 1:
        raise InputError(f"l1_ratio must be in [0, 1], got {l1_ratio!r}")
    normal_variance = variance / (1 - r) if r < 1 else np.inf
    return ElasticNet(gamma=float(np.sqrt(2 * r / variance)), variance=normal_variance, exclude=exclude)


class _GLMEstimator(_RisksetEstimator):
    """A GLM estimator: an unpenalized intercept when ``fit_intercept``."""

    def _model_options(self):
        return {"intercept": bool(self.fit_intercept)}

    def _check_feature_names(self, names):
        if self.fit_intercept and "intercept" in names:
            raise InputError("X has a column named 'intercept', the name of the model's own intercept: rename the "
                             "column, or drop it and keep fit_intercept=True")

    def fit(self, X, y, sample_weight=None):
        super().fit(X, y, sample_weight)
        self.intercept_ = float(self.fit_result_.coef["intercept"]) if self.fit_intercept else 0.0
        return self

    def _linear_predictor(self, X):
        return super()._linear_predictor(X) + self.intercept_


# -- the estimators -----------------------------------------------------------------------------
class CoxRegression(_RisksetEstimator):
    """Cox proportional hazards regression (``riskset.fit(..., 'cox')``).

    Parameters
    ----------
    penalty, variance, l1_ratio, exclude, prior
        The prior (see the module docstring); no penalty by default.
    ties : {'breslow', 'efron'}
    tol, max_iter, backend
        As :func:`riskset.fit`.

    ``fit(X, y)`` takes ``y`` from :func:`survival_target` (or scikit-survival's
    ``Surv``), or a two-column (time, event) array. ``predict`` returns the risk score
    x beta (higher = earlier event, as scikit-survival); ``score`` is Harrell's
    concordance index (:func:`concordance_index`).

    Attributes
    ----------
    coef_ : log hazard ratios, one per column of X (0 for a column the fit dropped,
        e.g. constant). fit_result_ : the :class:`~riskset.results.FitResult`.
    n_features_in_, feature_names_in_ : as scikit-learn.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100, 2))
    >>> y = survival_target(rng.random(100) < 0.7, rng.exponential(np.exp(-X[:, 0])))
    >>> model = CoxRegression(penalty="normal", variance=10.0).fit(X, y)
    >>> bool(model.coef_[0] > 0.5), bool(model.score(X, y) > 0.6)
    (True, True)
    """

    _model = "cox"

    def __init__(self, penalty=None, *, variance=1.0, l1_ratio=0.5, exclude=(), prior=None, ties="breslow",
                 tol=1e-10, max_iter=1000, backend="cpu"):
        super().__init__(penalty, variance=variance, l1_ratio=l1_ratio, exclude=exclude, prior=prior, tol=tol,
                         max_iter=max_iter, backend=backend)
        self.ties = ties

    def _model_options(self):
        return {"ties": self.ties}

    def _outcome(self, y, sample_weight):
        time, event = _survival_arrays(y)
        return {"time": time, "status": event.astype(np.int64)}

    def predict(self, X) -> np.ndarray:
        """Risk score x beta of each row (log relative hazard)."""
        return self._linear_predictor(X)

    def score(self, X, y) -> float:
        """Harrell's concordance index of ``predict(X)`` against the survival target ``y``."""
        time, event = _survival_arrays(y)
        return concordance_index(time, event, self.predict(X))


class FineGrayRegression(_RisksetEstimator):
    """Fine-Gray subdistribution hazards regression (``riskset.fit(..., 'fine_gray')``).

    Parameters
    ----------
    penalty, variance, l1_ratio, exclude, prior
        The prior (see the module docstring); no penalty by default.
    event_of_interest, censor_code : int
        Status codes (every other code is a competing event).
    tol, max_iter, backend
        As :func:`riskset.fit`.

    ``fit(X, y)`` takes ``y`` from :func:`competing_risks_target`, or a two-column
    (time, status) array. ``predict`` returns the risk score x beta (log
    subdistribution hazard ratio); ``score`` is the concordance index of the event of
    interest for competing risks (Wolbers et al. 2009): a row with a competing event
    stays comparable with every later event of interest, as it stays in the
    subdistribution risk set.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 1))
    >>> t_event, t_competing = rng.exponential(np.exp(-X[:, 0])), rng.exponential(1.0, 200)
    >>> status = np.where(t_event < t_competing, 1, 2) * (rng.random(200) < 0.8)
    >>> y = competing_risks_target(status, np.minimum(t_event, t_competing))
    >>> model = FineGrayRegression().fit(X, y)
    >>> bool(model.coef_[0] > 0.5), bool(model.score(X, y) > 0.6)
    (True, True)
    """

    _model = "fine_gray"

    def __init__(self, penalty=None, *, variance=1.0, l1_ratio=0.5, exclude=(), prior=None, event_of_interest=1,
                 censor_code=0, tol=1e-10, max_iter=1000, backend="cpu"):
        super().__init__(penalty, variance=variance, l1_ratio=l1_ratio, exclude=exclude, prior=prior, tol=tol,
                         max_iter=max_iter, backend=backend)
        self.event_of_interest = event_of_interest
        self.censor_code = censor_code

    def _model_options(self):
        return {"event_of_interest": self.event_of_interest, "censor_code": self.censor_code}

    def _outcome(self, y, sample_weight):
        time, status = _competing_arrays(y)
        return {"time": time, "status": status}

    def predict(self, X) -> np.ndarray:
        """Risk score x beta of each row (log subdistribution hazard ratio)."""
        return self._linear_predictor(X)

    def score(self, X, y) -> float:
        """Concordance index of ``predict(X)`` for the event of interest (competing
        events count as never failing from it)."""
        time, status = _competing_arrays(y)
        competing = (status != self.event_of_interest) & (status != self.censor_code)
        never = np.where(competing, time.max() + 1.0, time)  # beyond every time: in every risk set
        return concordance_index(never, status == self.event_of_interest, self.predict(X))


class LogisticRegression(ClassifierMixin, _GLMEstimator):
    """Binary logistic regression (``riskset.fit(..., 'logistic')``).

    Parameters
    ----------
    penalty, variance, l1_ratio, exclude, prior
        The prior (see the module docstring); no penalty by default. The intercept is
        never penalized.
    fit_intercept : bool
    tol, max_iter, backend
        As :func:`riskset.fit`.

    ``y`` has two classes (any labels); ``classes_[1]`` is the modelled one.
    ``predict`` gives classes, ``predict_proba`` their probabilities,
    ``decision_function`` the log odds of ``classes_[1]``; ``score`` is the accuracy.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> y = np.where(X[:, 0] + rng.normal(size=200) > 0, "case", "control")
    >>> model = LogisticRegression(penalty="laplace", variance=1.0).fit(X, y)
    >>> model.classes_.tolist(), bool(model.score(X, y) > 0.7)
    (['case', 'control'], True)
    >>> model.predict_proba(X[:1]).round(2)
    array([[0.56, 0.44]])
    """

    _model = "logistic"

    def __init__(self, penalty=None, *, variance=1.0, l1_ratio=0.5, exclude=(), prior=None, fit_intercept=True,
                 tol=1e-10, max_iter=1000, backend="cpu"):
        super().__init__(penalty, variance=variance, l1_ratio=l1_ratio, exclude=exclude, prior=prior, tol=tol,
                         max_iter=max_iter, backend=backend)
        self.fit_intercept = fit_intercept

    def _outcome(self, y, sample_weight):
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        classes, codes = np.unique(y, return_inverse=True)
        if classes.shape[0] > 2:
            raise InputError(f"Only binary classification is supported: y has {classes.shape[0]} classes "
                             f"({first_names(classes.tolist(), k=5)})")
        counted = classes if sample_weight is None else np.unique(y[sample_weight > 0])
        if counted.shape[0] < 2:
            extra = "" if sample_weight is None else " among the rows with positive sample_weight"
            raise InputError(f"y has only one class{extra} ({counted[0]!r}): logistic regression needs two")
        self.classes_ = classes
        return {"y": codes.astype(np.float64)}

    def decision_function(self, X) -> np.ndarray:
        """Log odds of ``classes_[1]``."""
        return self._linear_predictor(X)

    def predict_proba(self, X) -> np.ndarray:
        """Probabilities of ``classes_[0]`` and ``classes_[1]``, one row per row of X."""
        p = expit(self.decision_function(X))
        return np.column_stack([1 - p, p])

    def predict(self, X) -> np.ndarray:
        """The more probable class of each row."""
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


class PoissonRegression(RegressorMixin, _GLMEstimator):
    """Poisson regression of counts with log link (``riskset.fit(..., 'poisson')``).

    Parameters
    ----------
    penalty, variance, l1_ratio, exclude, prior
        The prior (see the module docstring); no penalty by default. The intercept is
        never penalized.
    fit_intercept : bool
    tol, max_iter, backend
        As :func:`riskset.fit`.

    ``predict`` returns the expected count exp(x beta); ``score`` is D², the share of
    the Poisson deviance explained (:func:`sklearn.metrics.d2_tweedie_score` with
    ``power=1``, as scikit-learn's ``PoissonRegressor``). For rates per person-time,
    use :func:`riskset.from_frame` with ``exposure=`` and :func:`riskset.fit`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> y = rng.poisson(np.exp(0.5 + 0.8 * X[:, 0]))
    >>> model = PoissonRegression().fit(X, y)
    >>> round(model.intercept_, 1), round(float(model.coef_[0]), 1)
    (0.6, 0.8)
    """

    _model = "poisson"

    def __init__(self, penalty=None, *, variance=1.0, l1_ratio=0.5, exclude=(), prior=None, fit_intercept=True,
                 tol=1e-10, max_iter=1000, backend="cpu"):
        super().__init__(penalty, variance=variance, l1_ratio=l1_ratio, exclude=exclude, prior=prior, tol=tol,
                         max_iter=max_iter, backend=backend)
        self.fit_intercept = fit_intercept

    def _outcome(self, y, sample_weight):
        return {"y": _numeric(column_or_1d(y, dtype=np.float64, warn=True), "y")}

    def predict(self, X) -> np.ndarray:
        """Expected count exp(x beta) of each row."""
        return np.exp(self._linear_predictor(X))

    def score(self, X, y, sample_weight=None) -> float:
        """D²: 1 - deviance / deviance of the mean-only model (Poisson deviance)."""
        return d2_tweedie_score(y, self.predict(X), sample_weight=sample_weight, power=1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.positive_only = True
        return tags


__all__ = ["CoxRegression", "FineGrayRegression", "LogisticRegression", "NotConvergedError", "PoissonRegression",
           "competing_risks_target", "concordance_index", "survival_target"]
