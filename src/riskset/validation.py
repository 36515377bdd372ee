"""Checks of user arguments at the door: each raises an InputError naming the argument
and the value, so a bad argument never surfaces as a traceback from NumPy or pandas.

Also the one rule by which users name coefficients: a coefficient is named by its
string, and an integer covariate id (``1000`` or ``numpy.int64(1000)``, as OHDSI
covariate ids are) names the covariate whose name is its decimal string ``'1000'``.

>>> positive_int("n_boot", 200)
200
>>> coef_names("exclude", [1000, "treatment"])
['1000', 'treatment']
"""
from __future__ import annotations

import functools
import numbers
import warnings

import numpy as np

from riskset.exceptions import InputError


def _is_integer(value) -> bool:
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_real(value) -> bool:
    return isinstance(value, (numbers.Real, np.floating, np.integer)) and not isinstance(value, (bool, np.bool_))


def positive_int(name: str, value, minimum: int = 1) -> int:
    """``value`` as an int, which must be an integer >= ``minimum``."""
    if not _is_integer(value) or value < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def flag(name: str, value) -> bool:
    """A yes/no option: True, False (or 1, 0); never the truth of a string such as 'maybe'."""
    if isinstance(value, (bool, np.bool_)) or (_is_integer(value) and value in (0, 1)):
        return bool(value)
    raise InputError(f"{name} must be True or False, got {value!r}")


def seed(name: str, value) -> int:
    """A random seed: an integer >= 0."""
    return positive_int(name, value, minimum=0)


def positive_number(name: str, value, *, allow_zero: bool = False, allow_inf: bool = False) -> float:
    """``value`` as a float, which must be > 0 (>= 0 with ``allow_zero``) and finite
    (or +inf with ``allow_inf``)."""
    ok = _is_real(value) and not np.isnan(value) and (value >= 0 if allow_zero else value > 0)
    if ok and not allow_inf:
        ok = bool(np.isfinite(value))
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        what = "a number" if allow_inf else "a finite number"
        raise InputError(f"{name} must be {what} {bound}, got {value!r}")
    return float(value)


def finite_number(name: str, value) -> float:
    """``value`` as a float, which must be a finite number."""
    if not _is_real(value) or not np.isfinite(value):
        raise InputError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def probability(name: str, value) -> float:
    """A level or proportion strictly between 0 and 1."""
    if not _is_real(value) or not 0 < value < 1:
        raise InputError(f"{name} must be a number strictly between 0 and 1, got {value!r}")
    return float(value)


def one_of(name: str, value, choices) -> str:
    """``value``, which must be one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise InputError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def finite_numbers(name: str, values) -> np.ndarray:
    """``values`` as a 1-d float array of finite numbers."""
    try:
        arr = np.atleast_1d(np.asarray(values, dtype=np.float64))
    except (TypeError, ValueError):
        raise InputError(f"{name} must be numbers, got {values!r}") from None
    if arr.ndim != 1 or not np.all(np.isfinite(arr)):
        raise InputError(f"{name} must be finite numbers, got {values!r}")
    return arr


def coef_name(name: str, value) -> str:
    """The coefficient a user means by ``value``: a string as is, an integer covariate
    id as its decimal string (``1000 -> '1000'``)."""
    if isinstance(value, str):
        return value
    if _is_integer(value):
        return str(int(value))
    raise InputError(f"{name}: a coefficient is named by a string or an integer covariate id, got {value!r}")


def coef_names(name: str, values) -> list[str]:
    """:func:`coef_name` of each of ``values``; a single string or id is one name."""
    if values is None:
        return []
    if isinstance(values, str) or _is_integer(values):
        values = [values]
    return [coef_name(name, v) for v in values]


def coef_mapping(name: str, mapping) -> dict:
    """A mapping keyed by coefficients (per-coefficient variances, cut points, warm
    starts) with its keys as :func:`coef_name`."""
    if mapping is None:
        return {}
    if not hasattr(mapping, "items"):
        raise InputError(f"{name} must be a mapping from coefficient name to value, got {mapping!r}")
    return {coef_name(name, k): v for k, v in mapping.items()}


def fixed_values(name: str, mapping) -> dict:
    """:func:`coef_mapping` of coefficients held at values: each value a finite number (float)."""
    out = {}
    for key, value in coef_mapping(name, mapping).items():
        number = value if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
            value, bool) else None
        if number is None or not np.isfinite(number):
            raise InputError(f"{name}[{key!r}] must be a finite number, got {value!r}")
        out[key] = float(number)
    return out


def known_names(name: str, values, known) -> list[str]:
    """:func:`coef_names` of ``values``, each of which must be in ``known``."""
    names = coef_names(name, values)
    known = set(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(f"{name} names unknown coefficient(s): {', '.join(map(repr, unknown))}")
    return names


def renamed(**old_to_new):
    """Decorator: keyword arguments renamed ``old=new`` keep working, with a DeprecationWarning
    naming the new keyword; giving both the old and the new one raises an InputError.

    >>> @renamed(weight="weights")
    ... def build(*, weights=None):
    ...     return weights
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     build(weight="w"), str(caught[0].message)
    ('w', 'build(weight=...) is deprecated; use build(weights=...) (same meaning)')
    """
    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            for old, new in old_to_new.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise InputError(f"{func.__name__}: give {new}= only ({old}= is its old name), not both")
                warnings.warn(f"{func.__name__}({old}=...) is deprecated; use {func.__name__}({new}=...) "
                              f"(same meaning)", DeprecationWarning, stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return wrapper

    return decorate


def solver_settings(tol, max_iter, kkt_tol=1.0) -> None:
    """The stopping rule of the coordinate-descent cycles: ``tol`` > 0, ``max_iter`` >= 1,
    ``kkt_tol`` > 0."""
    positive_number("tol", tol)
    positive_int("max_iter", max_iter)
    positive_number("kkt_tol", kkt_tol)


__all__ = ["coef_mapping", "coef_name", "coef_names", "finite_number", "finite_numbers", "known_names", "one_of",
           "positive_int", "positive_number", "probability", "renamed", "seed", "solver_settings"]
