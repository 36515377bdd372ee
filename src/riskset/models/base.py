"""Models: the user-facing side of a likelihood family, and helpers the families share.

The solver's side of a family, :class:`~riskset.core.interface.Datafit`, lives in the
bottom layer (:mod:`riskset.core`) and is re-exported here for the family modules.

A *model* (:class:`Model`) is the user-facing specification: which columns of a
:class:`~riskset.data.Dataset` it reads, its options (ties, intercept, competing
event codes ...), how to build its datafit, and how to predict from a fit.

Sign convention everywhere: ``l`` is the log-likelihood, which is *maximized*;
``gradient = dl/dbeta`` and ``hessian = d2l/dbeta2`` (negative semi-definite).
"""
from __future__ import annotations

import inspect
import warnings
import weakref
from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from riskset.core.interface import SEPARABILITY_REACH, Datafit, FitState, LocalQuadratic  # noqa: F401
from riskset.data.dataset import first_names
from riskset.exceptions import DataWarning, InputError
from riskset.kernels.cpu.separability import constant_columns


def risk_set_block_work(datafit: Datafit, columns: np.ndarray) -> float:
    """``Datafit.hessian_work`` of a risk-set family (Cox, Fine-Gray): its block's walk visits
    each row's non-zeros of ``columns`` once per column (the risk-set sums run over all of
    A): ~ nnz_A x |A|."""
    return float(datafit.products.nnz(np.asarray(columns, dtype=np.int64))) * len(columns)


def carry_static_gradient(datafit: Datafit, view: Datafit) -> None:
    """Give ``view``, a reweighting of a risk-set family's ``datafit`` (Cox, Fine-Gray), the
    static part of its gradient, X' (c * event), from ``datafit``'s where that one has it, over
    the rows whose weight changed (:meth:`~riskset.core.products.column_products.ColumnProducts.dot_changed`:
    a training fold's held-out event rows, read from a kept copy of the event rows where X has
    no row-major copy); else ``view`` computes it on first use."""
    if "gx0" in datafit.__dict__:
        gx0 = datafit.products.dot_changed(datafit.gx0, datafit.cw * datafit.event, view.cw * view.event,
                                           support=np.flatnonzero(datafit.event == 1))
        if gx0 is not None:
            view.gx0 = gx0


def require_information(datafit: Datafit, model: str) -> Datafit:
    """``datafit``, or InputError if its likelihood carries no information
    (:meth:`Datafit.missing_information`)."""
    problem = datafit.missing_information()
    if problem:
        raise InputError(f"the {model} model cannot be fitted: {problem}")
    return datafit


def no_weight(weights: np.ndarray, what: str = "row") -> str | None:
    """The problem of case ``weights`` none of which is positive, or None."""
    if np.any(weights > 0):
        return None
    return f"no {what} has a positive weight ({weights.size} {what}s), so the likelihood carries no information"


def weight_overflow(state) -> str | None:
    """The problem of a risk-set family's state whose weights w = c exp(eta - shift) overflowed
    (the coefficients diverge), or None."""
    if not np.all(np.isfinite(state.eta)) or not np.all(np.isfinite(state.w)):
        return "the linear predictor overflowed (exp(eta) is not finite): coefficients diverge"
    return None


def drop_constant_covariates(X: sp.csc_matrix, names: list, warn: bool) -> tuple[sp.csc_matrix, list]:
    """X and names without the zero-variance columns (no information in a risk-set
    likelihood: a constant shifts every risk score alike); warns naming them if ``warn``.
    ``X`` must have no duplicate entries."""
    if not X.shape[1]:
        return X, names
    const = constant_columns(X.indptr, X.data, X.shape[0])
    if not const.any():
        return X, names
    if warn:
        bad = [names[j] for j in np.flatnonzero(const)]
        warnings.warn(f"dropped {len(bad)} covariate(s) with zero variance (constant, no information): "
                      f"{first_names(bad)}",
                      DataWarning, stacklevel=5)
    keep = np.flatnonzero(~const)
    return X[:, keep], [names[j] for j in keep]


#: The standard errors a fit may show (:attr:`Model.variance`).
VARIANCES = ("model-based", "robust")


class Model(ABC):
    """User-facing model specification; subclasses register themselves by ``name``.

    Subclasses define which :class:`~riskset.data.Dataset` fields they need, build a
    :class:`Datafit`, and name the coefficients (e.g. adding ``intercept``).
    """

    name: ClassVar[str]
    registry: ClassVar[dict[str, type["Model"]]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            Model.registry[cls.name] = cls

    @abstractmethod
    def datafit(self, data) -> Datafit:
        """Validate ``data`` for this model and build its datafit."""

    @abstractmethod
    def coef_names(self, data) -> list[str]:
        """Names of the datafit's coefficients, in datafit column order."""

    def shard_datafit(self, data) -> Datafit | None:
        """The datafit of one shard of a data set split over workers (:mod:`riskset.sharded`),
        the shards' log-likelihoods adding up to the whole data's; None where the shard's rows
        carry no information alone (they add nothing). Every covariate column is kept (the
        whole data decide which carry information; :attr:`drops_constant_covariates`), and
        nothing is said of rows the model drops: the client checks the whole data."""
        raise InputError(f"the {self.name} model cannot be fitted on sharded data")

    #: Whether the model drops covariates constant over its rows (no information in a
    #: risk-set likelihood); a sharded fit drops those constant over every shard.
    drops_constant_covariates: ClassVar[bool] = False

    def _prepared(self, data, warn: bool):
        """``self.prepare(data, warn=...)`` computed once per data set, for families whose
        ``datafit()`` and ``coef_names()`` share a preparation (e.g. dropped covariates)."""
        cached = getattr(self, "_cache", None)
        if cached is not None and cached[0]() is data:
            return cached[1]
        if warn:
            p = self.prepare(data)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DataWarning)
                p = self.prepare(data, warn=False)
        try:
            self._cache = (weakref.ref(data), p)
        except TypeError:  # not weak-referenceable: no caching
            pass
        return p

    #: Whether the model reads the data's strata (stratified Cox, conditional models, SCCS).
    uses_strata: ClassVar[bool] = False

    #: Whether the model reads the data's ``censor_weights`` (Fine-Gray); the others refuse them.
    reads_censor_weights: ClassVar[bool] = False

    def check_roles(self, data) -> None:
        """Refuse a data role the model would silently ignore (censoring weights outside Fine-Gray)."""
        if data.censor_weights is not None and not self.reads_censor_weights:
            raise InputError(f"the {self.name} model does not use censoring weights (a role of the Fine-Gray "
                             f"model's data): leave the censor_weights column out")

    #: The ties R's function for this family uses by default where riskset's default differs
    #: (Cox: ``"efron"``, coxph's), said in a fit's summary; None where they agree.
    r_ties: ClassVar[str | None] = None

    #: The standard errors a fit shows: ``"model-based"`` (inverse observed information) or
    #: ``"robust"`` (a sandwich: Fine-Gray's default, as cmprsk::crr; a Cox option).
    variance: ClassVar[str] = "model-based"

    #: Name of exp(coefficient) in the coefficient table and its interval columns
    #: (``"hazard_ratio"``, ``"odds_ratio"``, ``"rate_ratio"`` ...); None where
    #: exp(coefficient) is no ratio of the model (least squares), which has no such columns.
    ratio_name: ClassVar[str | None] = None

    #: What cross-validation folds and bootstrap draws keep whole when the data name no
    #: subjects (subjects are always kept whole): ``"row"``, or ``"stratum"`` for a
    #: likelihood conditional on the stratum (a matched set, a case's eras).
    resampling_unit: ClassVar[str] = "row"

    #: Status code of the event that folds are balanced on and held-out rows are scored
    #: by; a model with a choice of events (Fine-Gray) sets its own.
    event_of_interest: int = 1

    @classmethod
    def option_names(cls) -> list[str]:
        """The keyword options of the model's constructor: what :func:`get_model`, a
        specification and ``--option`` accept."""
        return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]

    def unpenalized_names(self) -> list[str]:
        """Coefficients that are never penalized whatever the prior (e.g. the intercept)."""
        return []

    def covariate_of(self, coef_name: str) -> str | None:
        """The data covariate that coefficient ``coef_name`` multiplies, or None for the
        intercept and other terms of no covariate (predictions match covariates by it)."""
        return None if coef_name in self.unpenalized_names() else coef_name

    @classmethod
    def from_spec(cls, spec: dict) -> "Model":
        """Build the model from a case.json-style specification (model options only)."""
        return cls()

    def options(self) -> dict:
        """Constructor keyword arguments, for saving a fit as JSON."""
        return {}

    def predict(self, fit, data, kind: str = "link") -> np.ndarray:
        """Predictions for ``data`` from ``fit``; ``kind='link'`` is the linear predictor."""
        if kind != "link":
            refuse_kind(self.name, kind, ["link"])
        return fit.linear_predictor(data)


#: The prediction kinds of the models of hazards (Cox, Fine-Gray, the conditional models), R's
#: predict.coxph names among them: 'link' (= R's 'lp') is x beta + offset, 'risk' exp(link).
HAZARD_KINDS = ("link", "lp", "risk")

#: Why those models refuse R's ``type = "response"`` (R's predict.coxph has none either).
NO_RESPONSE = ("; 'response' has no single meaning for a model of hazards (R's predict.coxph has no "
               "type 'response'): 'link' ('lp') is x beta, 'risk' exp(x beta)")


def refuse_kind(model: str, kind, accepted, why: str = ""):
    """Raise the InputError of a prediction ``kind`` that ``model`` does not know: it lists the
    ``accepted`` kinds (R's names included) and says ``why`` where a kind R users type is refused.

    >>> refuse_kind("cox", "response", ["link", "lp", "risk"])
    Traceback (most recent call last):
    ...
    riskset.exceptions.InputError: kind: cox predictions are 'link', 'lp' or 'risk', not 'response'
    """
    names = [repr(k) for k in accepted]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    raise InputError(f"kind: {model} predictions are {listed}, not {kind!r}{why}")


def get_model(name: str, **options) -> Model:
    """The registered model called ``name`` (e.g. 'logistic', 'cox'), with options.

    Unknown model names and option names raise an InputError listing the known ones.

    >>> get_model("cox", ties="efron").options()
    {'ties': 'efron'}
    """
    cls = model_class(name)
    known_options = cls.option_names()
    unknown = [k for k in options if k not in known_options]
    if unknown:
        raise InputError(f"unknown option(s) {', '.join(map(repr, unknown))} for the {name} model; "
                         f"its options: {', '.join(known_options) or 'none'}")
    return cls(**options)


def model_class(name: str) -> type[Model]:
    """The registered model class called ``name``: its class attributes (e.g.
    :attr:`Model.ratio_name`) without building a model. Unknown names raise an InputError
    listing the known ones."""
    import riskset.models  # noqa: F401  (registers the built-in families)

    if not isinstance(name, str) or name not in Model.registry:
        known = ", ".join(sorted(Model.registry))
        raise InputError(f"unknown model {name!r}; known models: {known}")
    return Model.registry[name]


def as_model(model, **options) -> Model:
    """A configured model instance as is, or the registered model ``model`` with
    ``options`` (the ``model`` argument of ``riskset.fit`` and the selection tools)."""
    if isinstance(model, Model):
        if options:
            raise InputError(f"option(s) {', '.join(map(repr, options))} given with a configured {model.name} "
                             f"model instance; pass them to its constructor instead")
        return model
    return get_model(model, **options)
