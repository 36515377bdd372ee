"""Analysis specifications (``case.json``): one fit described as a JSON file.

A specification names the model, the data file, the role of each data column, the
covariates, the model's options and the prior. It is what ``riskset fit --spec``
reads, what :func:`spec_from_fit` (or ``FitResult.to_spec``) writes from a fit, and
the format of the reference cases in ``tests/reference/``.

The format
----------
::

    {
      "model": "cox",                      # any registered model (required)
      "data": "data.csv",                  # CSV beside the spec (default data.csv)
      "columns": {"time": "days", "status": "died", "strata": "site"},
      "covariates": ["treatment", "age"],  # default: every column without a role
      "ties": "efron",                     # model options, as top-level fields
      "penalty": {"type": "elastic_net", "gamma": 2.0, "variance": 0.5,
                  "unpenalized": ["treatment"], "variances": {"age": 10.0}},
      "fixed": {"age": 0.02}               # coefficients held at values (optional)
    }

``columns``
    role -> column name; the roles are those of :func:`riskset.from_frame`:
    ``y, time, status, start, stop, strata, offset, exposure, weights, subject``.
Model options
    top-level fields read by the model's ``from_spec``, with the names of its
    constructor arguments: ``ties``, ``time_varying``, ``formulation`` (cox);
    ``intercept`` (logistic, poisson, least_squares); ``event_of_interest``,
    ``competing_events``, ``censor_code``, ``variance`` ('robust' or 'model-based': the
    standard errors shown) (fine_gray); ``interval_width``,
    ``time_effects``, ``horizon``, ``max_person_intervals`` (pooled_logistic);
    ``ties`` (conditional models). Other top-level fields (``title``, ``expected``,
    ...) are notes for people and are ignored.
``fixed``
    coefficient name -> value: coefficients held at those values while the others are
    fitted (:func:`riskset.fit`'s ``fixed``, Cyclops' ``fixedCoefficients``).
``penalty``
    ``type`` is one of

    - ``none`` (maximum likelihood, the default when ``penalty`` is absent);
    - ``l1`` (Laplace, lasso): ``gamma`` (penalty ``gamma |beta|``) or ``variance``
      (Cyclops' parametrization, ``gamma = sqrt(2 / variance)``), not both;
    - ``l2`` (normal, ridge): ``variance`` (penalty ``beta^2 / (2 variance)``);
    - ``elastic_net``: both ``gamma`` and ``variance``;
    - ``bar`` (broken adaptive ridge) and ``iht`` (iterative hard thresholding, with
      ``max_nonzero``, its K): ``penalty`` ("bic", the default, or a number) and the
      settings of :func:`riskset.BAR` by name (``initial_variance``, ``tolerance``,
      ``max_iterations``, ``threshold``, ``delta``, ``fit_best_subset``), no strength;
    - ``jeffreys`` (Firth): ``coefs``, the coefficients in the determinant (default all),
      and ``max_iter``;
    - ``hierarchical``: ``groups`` (covariate -> group), ``group_variance`` and ``variance``
      (:func:`riskset.Hierarchical`; ``variance`` may be left to ``--cv``).

    ``l1`` and ``l2`` are the names of Cyclops' case files, and a specification written
    by riskset uses them; the names of the prior kinds (``riskset.Prior("laplace")``,
    ``riskset fit --prior``), ``laplace`` and ``normal``, are read as well, and so is
    scikit-learn's ``elasticnet``: :func:`prior_kind` reads every spelling, and
    :data:`PENALTY_TYPE_NAMES` gives the names written.

    ``unpenalized`` lists coefficients left unpenalized (the API's ``exclude``);
    ``variances`` maps coefficient names to their own variance (the API's
    ``variances``: for ``l1`` the Laplace variance of that coefficient, otherwise its
    normal variance); ``means`` maps coefficient names to their prior mean (a location
    prior: the API's ``means``, shrinking towards that value instead of 0). Any other key
    is an error.

What a spec does not hold
    Cross-validation, bootstrap, profile intervals and where the fit runs (backend,
    dtype, jobs, Dask) are steps applied *to* an analysis, so they are command-line
    options that combine with any spec (``riskset fit --spec case.json --cv 10
    --bootstrap 200 --backend gpu``). A spec written from a cross-validated fit holds
    the chosen prior, so fitting it again reproduces the fit without the search.
"""
from __future__ import annotations

import difflib
import json
import os
from typing import Any

import numpy as np
import pandas as pd

from riskset.data.ingest import from_frame
from riskset.exceptions import InputError
from riskset.models.base import Model, get_model
from riskset.solver.prior import (BAR, IHT, SETTINGS, AdaptiveRidge, Hierarchical, HierarchicalPrior, Jeffreys,
                                  JeffreysPrior, Prior)
from riskset.solver.prior_kinds import KINDS
from riskset.validation import fixed_values

#: case.json column roles -> keyword of :func:`riskset.from_frame`.
COLUMN_ROLES = ("y", "time", "status", "start", "stop", "strata", "offset", "exposure", "weights", "subject",
                "censor_weights")


#: Fields a specification must have, and the JSON type of each field it may have.
REQUIRED_FIELDS = ("model",)
FIELD_TYPES = {"model": str, "data": str, "columns": dict, "covariates": list, "penalty": dict, "fixed": dict}
#: Spellings of model options that specifications written for other tools use (the models'
#: ``from_spec`` read them).
OPTION_ALIASES = ("competing_event",)

#: Other spellings of the prior kinds that inputs accept: Cyclops' case files and scikit-learn's
#: ``penalty`` (read by :func:`prior_kind`).
PRIOR_KIND_SPELLINGS = {"l1": "laplace", "l2": "normal", "elasticnet": "elastic_net"}
#: The penalty types a specification is written with, where they are not the prior kind's name.
PENALTY_TYPE_NAMES = {"laplace": "l1", "normal": "l2"}
#: penalty type (a prior kind) -> (strength keys it needs, strength keys it may have).
PENALTY_TYPES = {"none": ((), ()), "laplace": ((), ("gamma", "variance")), "normal": (("variance",), ()),
                 "elastic_net": (("gamma", "variance"), ())}
PENALTY_KEYS = ("type", "gamma", "variance", "unpenalized", "variances", "means")
#: The types of the sparse-selection priors (BrokenAdaptiveRidge, IterativeHardThresholding) and
#: their keys: the packages' argument names (``penalty``: 'bic' or a number; ``max_nonzero``: K).
SELECTION_TYPES = ("bar", "iht")
SELECTION_KEYS = ("type", "penalty", "max_nonzero", "unpenalized", *SETTINGS)
#: The keys of a Jeffreys (Firth) penalty: the coefficients in its determinant (default all).
JEFFREYS_KEYS = ("type", "coefs", "max_iter")
#: The keys of a hierarchical normal penalty (``variance`` may be left to cross-validation).
HIERARCHICAL_KEYS = ("type", "variance", "group_variance", "groups", "unpenalized")


def load_spec(path: str) -> tuple[dict, pd.DataFrame]:
    """The specification at ``path`` and its data table; InputError names the file and what is wrong."""
    with open(path) as f:
        try:
            spec = json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise InputError(f"specification {path!r} is not valid JSON: {err}") from None
    check_spec(spec, path)
    data_path = os.path.join(os.path.dirname(os.path.abspath(path)), spec.get("data", "data.csv"))
    if not os.path.exists(data_path):
        raise InputError(f"specification {path!r}: its data file {data_path!r} does not exist (name another "
                         f"with \"data\": \"FILE.csv\")")
    try:
        return spec, pd.read_csv(data_path)
    except ValueError as err:  # empty, malformed or not text (pandas parser errors are ValueErrors)
        raise InputError(f"specification {path!r}: cannot read its data file {data_path!r} as CSV: {err}") from None


def check_spec(spec, path: str = "specification") -> None:
    """Raise InputError unless ``spec`` is a JSON object with a model and fields of the right types.

    >>> check_spec({"model": "cox", "columns": ["time"]}, "case.json")
    Traceback (most recent call last):
    riskset.exceptions.InputError: case.json: field 'columns' must be a JSON object, not list
    """
    if not isinstance(spec, dict):
        raise InputError(f"{path}: a specification is a JSON object ({{\"model\": ..., ...}}), "
                         f"not {type(spec).__name__}")
    missing = [f for f in REQUIRED_FIELDS if f not in spec]
    if missing:
        raise InputError(f"{path}: the specification lacks the field(s) {', '.join(map(repr, missing))}")
    json_names = {str: "string", dict: "JSON object", list: "list"}
    for field, kind in FIELD_TYPES.items():
        if field in spec and spec[field] is not None and not isinstance(spec[field], kind):
            raise InputError(f"{path}: field {field!r} must be a {json_names[kind]}, not {type(spec[field]).__name__}")
    _check_misspelled_fields(spec, path)


def _check_misspelled_fields(spec: dict, path: str) -> None:
    """InputError for a field that is a near miss of an option ('tie' for 'ties'): it would be
    ignored and the model fitted without it. Other unknown fields are notes (title, expected ...).

    >>> _check_misspelled_fields({"model": "cox", "tie": "efron", "title": "lung"}, "case.json")
    Traceback (most recent call last):
    riskset.exceptions.InputError: case.json: field 'tie' is not an option of the cox model; did you mean 'ties'?
    """
    get_model("logistic")  # imports and registers the built-in families
    cls = Model.registry.get(spec["model"])
    options = [] if cls is None else cls.option_names()
    known = set(FIELD_TYPES) | set(options) | set(OPTION_ALIASES)
    for field in spec:
        close = [] if field in known else difflib.get_close_matches(field, sorted(known), n=1, cutoff=0.8)
        if close:
            raise InputError(f"{path}: field {field!r} is not an option of the {spec['model']} model; "
                             f"did you mean {close[0]!r}?")


def is_supported(spec: dict) -> bool:
    """Whether a registered regression model handles this specification."""
    get_model("logistic")  # imports and registers the built-in families
    return spec.get("model") in Model.registry


def prior_kind(name: str) -> str:
    """The prior kind that ``name`` spells: riskset's own names ('none', 'laplace', 'normal',
    'elastic_net', 'bar', ...) as they are, Cyclops' and scikit-learn's 'l1', 'l2' and
    'elasticnet' as 'laplace', 'normal' and 'elastic_net'. The one place where those
    spellings are read (a spec's penalty type, an estimator's ``penalty``).

    >>> prior_kind("l1"), prior_kind("laplace"), prior_kind("elasticnet")
    ('laplace', 'laplace', 'elastic_net')
    """
    return PRIOR_KIND_SPELLINGS.get(name, name)


def prior_from_penalty(penalty: dict | None) -> Prior | AdaptiveRidge | JeffreysPrior | HierarchicalPrior:
    """The prior of a spec's ``penalty`` entry (see the module docstring).

    >>> prior_from_penalty({"type": "elastic_net", "gamma": 1.0, "variance": 2.0}).to_dict()
    {'kind': 'elastic_net', 'gamma': 1.0, 'variance': 2.0}
    >>> prior_from_penalty({"type": "l2", "varaince": 2.0})
    Traceback (most recent call last):
    riskset.exceptions.InputError: penalty: unknown key(s) 'varaince'; a penalty of type 'l2' has type, gamma, ...
    """
    penalty = dict(penalty or {})
    written = penalty.get("type", "none")  # as the file spells it, for the messages
    kind = prior_kind(written) if isinstance(written, str) else written
    keys = {"jeffreys": JEFFREYS_KEYS, "hierarchical": HIERARCHICAL_KEYS}.get(
        kind, SELECTION_KEYS if kind in SELECTION_TYPES else PENALTY_KEYS)
    unknown = [k for k in penalty if k not in keys]
    if unknown:
        raise InputError(f"penalty: unknown key(s) {', '.join(map(repr, unknown))}; a penalty of type "
                         f"{written!r} has {', '.join(keys)}")
    if kind in SELECTION_TYPES:
        return _selection_prior(penalty)
    if kind == "hierarchical":
        if "groups" not in penalty or "group_variance" not in penalty:
            raise InputError("penalty: type 'hierarchical' needs 'groups' (covariate -> group) and 'group_variance'")
        return Hierarchical(penalty.get("variance"), penalty["group_variance"], groups=penalty["groups"],
                            exclude=tuple(penalty.get("unpenalized", ())))
    if kind == "jeffreys":
        return Jeffreys(penalty.get("coefs", ()), max_iter=penalty.get("max_iter", 100))
    if kind not in PENALTY_TYPES:
        written_types = [PENALTY_TYPE_NAMES.get(k, k) for k in PENALTY_TYPES]
        raise InputError(f"penalty: unknown type {written!r}; the types are "
                         f"{', '.join([*written_types, *SELECTION_TYPES, 'jeffreys', 'hierarchical'])}")
    needed, either = PENALTY_TYPES[kind]
    _check_strength(penalty, written, needed, either)
    if kind == "none":
        return Prior("none")
    strength = {k: penalty[k] for k in ("gamma", "variance") if k in penalty}
    if kind == "laplace" and "variance" in strength:  # Cyclops' parametrization: variance = 2 / gamma^2
        strength = {"gamma": float(np.sqrt(2.0 / _positive("penalty variance", strength["variance"])))}
    return Prior(kind, **strength, exclude=tuple(penalty.get("unpenalized", ())),
                 variances=penalty.get("variances") or {}, means=penalty.get("means") or {})


def _selection_prior(penalty: dict) -> AdaptiveRidge:
    """The BAR / IHT prior of a ``penalty`` entry (keys: :data:`SELECTION_KEYS`)."""
    kind = penalty["type"]
    if kind == "iht" and "max_nonzero" not in penalty:
        raise InputError("penalty: type 'iht' lacks the field 'max_nonzero' (K, the most non-zero coefficients)")
    if kind == "bar" and "max_nonzero" in penalty:
        raise InputError("penalty: type 'bar' has no 'max_nonzero' (that is type 'iht')")
    settings = {k: penalty[k] for k in SETTINGS if k in penalty}
    exclude = tuple(penalty.get("unpenalized", ()))
    if kind == "iht":
        return IHT(penalty["max_nonzero"], penalty.get("penalty", "bic"), exclude=exclude, **settings)
    return BAR(penalty.get("penalty", "bic"), exclude=exclude, **settings)


def _check_strength(penalty: dict, penalty_type: str, needed: tuple, either: tuple) -> None:
    """The strength keys of a penalty of type ``penalty_type`` (as the file spells it)."""
    given = [k for k in ("gamma", "variance") if k in penalty]
    missing = [k for k in needed if k not in penalty]
    if missing:
        raise InputError(f"penalty: type {penalty_type!r} lacks the field {' and '.join(map(repr, missing))}")
    if either and len(set(given) & set(either)) != 1:
        raise InputError(f"penalty: type {penalty_type!r} takes one of {' or '.join(map(repr, either))}, got "
                         f"{', '.join(map(repr, given)) or 'neither'}")
    extra = [k for k in given if k not in needed + either]
    if extra:
        raise InputError(f"penalty: type {penalty_type!r} has no {' or '.join(map(repr, extra))}")
    if penalty_type == "none" and (penalty.get("unpenalized") or penalty.get("variances") or penalty.get("means")):
        raise InputError("penalty: type 'none' penalizes nothing, so 'unpenalized', 'variances' and 'means' do "
                         "not apply")


def _positive(what: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or not np.isfinite(value):
        raise InputError(f"{what} must be a positive number, got {value!r}")
    return float(value)


def penalty_from_prior(prior: Prior | AdaptiveRidge | JeffreysPrior | HierarchicalPrior) -> dict:
    """The spec ``penalty`` entry of a prior (inverse of :func:`prior_from_penalty`).

    >>> penalty_from_prior(Prior("laplace", gamma=2.0, exclude=["treatment"]))
    {'type': 'l1', 'gamma': 2.0, 'unpenalized': ['treatment']}
    """
    if isinstance(prior, (JeffreysPrior, HierarchicalPrior)):
        d = prior.to_dict()
        if "exclude" in d:
            d["unpenalized"] = d.pop("exclude")
        return {"type": d.pop("kind"), **d}
    if isinstance(prior, AdaptiveRidge):
        d = prior.to_dict()
        d = {"type": d.pop("kind"), **d, "unpenalized": d.pop("exclude")}
        return {k: v for k, v in d.items() if k != "unpenalized" or v}
    penalty: dict[str, Any] = {"type": PENALTY_TYPE_NAMES.get(prior.kind, prior.kind)}
    fields = KINDS[prior.kind].strength_fields
    if "gamma" in fields:  # None: a strength left to be chosen (Laplace())
        penalty["gamma"] = None if prior.gamma is None else float(prior.gamma)
    if "variance" in fields:
        penalty["variance"] = None if prior.variance is None else float(prior.variance)
    if prior.exclude:
        penalty["unpenalized"] = list(prior.exclude)
    if prior.variances:
        penalty["variances"] = {k: float(v) for k, v in prior.variances.items()}
    if prior.means:
        penalty["means"] = dict(prior.means)
    return penalty


def analysis_from_spec(spec: dict, frame: pd.DataFrame, path: str = "specification"):
    """The (dataset, model, prior) that a specification describes, checked."""
    check_spec(spec, path)
    try:
        model = Model.registry[spec["model"]].from_spec(spec) if is_supported(spec) else get_model(spec["model"])
        prior = prior_from_penalty(spec.get("penalty"))
    except KeyError as err:  # a field the model needs
        raise InputError(f"{path}: the specification lacks the field {err.args[0]!r} (model "
                         f"{spec['model']!r})") from None
    except InputError as err:
        raise InputError(f"{path}: {err}") from None
    return dataset_from_spec(spec, frame), model, prior


def spec_fixed(spec: dict, path: str = "specification") -> dict:
    """The coefficients specification ``spec`` holds at values (its ``fixed`` field), checked:
    name -> finite number."""
    try:
        return fixed_values("fixed", spec.get("fixed"))
    except InputError as err:
        raise InputError(f"{path}: {err}") from None


def dataset_from_spec(spec: dict, frame: pd.DataFrame):
    columns = spec.get("columns", {})
    unknown = set(columns) - set(COLUMN_ROLES)
    if unknown:
        raise InputError(f"unknown column role(s) in specification: {', '.join(sorted(unknown))}; the roles are "
                         f"{', '.join(COLUMN_ROLES)}")
    return from_frame(frame, covariates=spec.get("covariates"), **columns)


def spec_from_fit(fit_result, *, columns: dict, data: str = "data.csv", covariates=None) -> dict:
    """A specification that fits ``fit_result`` (a :class:`~riskset.results.FitResult`) again:
    its model, options and prior.

    A fit does not know which columns of its table held the outcome, so ``columns``
    (role -> column, as in the spec) and ``data`` (the CSV beside the spec) are
    given; ``covariates`` default to the covariates of the fit's coefficients.

    >>> import json, riskset
    >>> frame = riskset.simulate(n=200, p=3, model="logistic", seed=1).to_frame()  # doctest: +SKIP
    >>> f = riskset.fit(riskset.from_frame(frame, y="y"), "logistic", riskset.Normal(1.0))  # doctest: +SKIP
    >>> json.dump(spec_from_fit(f, columns={"y": "y"}), open("case.json", "w"))  # doctest: +SKIP
    """
    model = fit_result.model
    if covariates is None:
        covariates = [c for c in dict.fromkeys(model.covariate_of(n) for n in fit_result.coef.index) if c is not None]
    spec = {"model": fit_result.model_name, "data": data, "columns": dict(columns),
            "covariates": [str(c) for c in covariates]}
    spec |= _jsonable(model.options())
    spec["penalty"] = penalty_from_prior(fit_result.prior)
    return spec


def _jsonable(options: dict) -> dict:
    """Model options as JSON values; a user function (e.g. a pooled-logistic time effect) has none."""
    try:
        return json.loads(json.dumps(options))
    except TypeError as err:
        raise InputError(f"the model options {options!r} cannot be written to a specification ({err}); "
                         f"use the built-in names of time effects") from None
