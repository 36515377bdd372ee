"""Conditional likelihoods over strata: conditional logistic and conditional Poisson.

**Conditional Poisson** (log-rate ``alpha_s + x beta + offset`` with one nuisance rate
alpha_s per stratum, eliminated by conditioning on the stratum's total count n_s):
the counts of a stratum are multinomial with probabilities ``w_r / W_s``,
``w = exp(eta)``, ``W_s = sum_{r in s} w_r``::

    l = sum_s [ sum_{r in s} y_r eta_r - n_s log W_s ]

(the multinomial log-likelihood without the constant log(n_s! / prod y_r!)). Its
maximizer equals the Poisson fit with one fixed effect per stratum (gnm's
``eliminate``). SCCS (:mod:`riskset.models.sccs`) is this model on eras.

**Conditional logistic** (matched sets; y = 1 for cases, m_s cases among n_s rows)::

    l = sum_s [ sum_{cases} eta_r - log sum_{|S| = m_s} exp(sum_{r in S} eta_r) ]

``ties='exact'`` (default, as R's clogit): the denominator is the elementary
symmetric polynomial e_m(w), computed by the recursion of Gail et al. (1981),
O(n_s m_s) per stratum; ``ties='breslow'`` replaces it by ``W_s^{m_s}`` (the
multinomial form above with n_s = m_s). For 1:n sets (m_s = 1) both are the same
and take the O(nnz_j) multinomial path.

Sparse CCD (see :mod:`riskset.kernels.cpu.conditional`): the gradient and Hessian of
coefficient j cost O(nnz_j) for multinomial strata, O(n_s m_s) per touched exact
stratum (its whole denominator is recomputed along column j; exact n:m sets are
small in practice). The weights are computed relative to the stratum's largest eta
(w = exp(eta - shift), to which l is invariant: no overflow with an uncentered covariate).
A move updates eta and w at the non-zeros (w *= exp(delta x); one exp per move for
indicator columns: w *= exp(delta)) and W_s by the difference; the log-likelihood
pass once per cycle recomputes every w and W_s from eta, so rounding cannot build up.
A whole CCD sweep runs in one compiled call (the family's kernels on the shared sweep of
:mod:`riskset.core.sweep`); a coordinate at its prior center is screened by dl/dbeta_j
alone, which needs neither second moments nor, for exact strata, the second-derivative
polynomial.

Case weights must be constant within a stratum (a weight per matched set / person,
e.g. a bootstrap count or a cross-validation fold indicator); they multiply the
stratum's contribution. ``reweighted`` gives such a weighting as a view sharing X.

``backend="gpu"`` runs the same formulas on the device (:mod:`riskset.kernels.gpu.conditional`;
exact sets of up to 64 cases).
"""
from __future__ import annotations

from abc import abstractmethod
from functools import cached_property

import warnings

import numba
import numpy as np

from riskset.core.design import column_runs
from riskset.data.dataset import Dataset
from riskset.exceptions import DataWarning, InputError
from riskset.kernels.cpu import conditional as conditional_kernels
from riskset.models.cox import CoxDatafit
from riskset.core.interface import Reweightable, RunsOnDevice
from riskset.models.base import (Datafit, FitState, LocalQuadratic, Model, refuse_kind, require_information,
                                 weight_overflow, HAZARD_KINDS, NO_RESPONSE)


class ConditionalDatafit(Datafit, Reweightable, RunsOnDevice):
    """Stratified multinomial / exact conditional log-likelihood.

    Parameters (rows already sorted by stratum, strata coded 0..S-1 ascending)
    ----------
    X : csc (n_rows, p), or (n, p) with ``rows``; y : responses (counts or 0/1 case indicators);
    strata : non-decreasing stratum codes; offset : fixed part of eta;
    stratum_weight : c_s per stratum (None = 1);
    exact_m : per stratum, number of cases for strata using the exact conditional
        likelihood (0 = multinomial form);
    rows : the rows of X (Dataset rows) that are the datafit's rows, in order (None: all,
        as they are); ``y``, ``strata`` and ``offset`` are in this order.
    """

    sweep_passes = 10.0  # stratum sums refreshed per moved coordinate (Datafit.sweep_passes)

    device_datafit = "conditional:ConditionalDeviceDatafit"

    def __init__(self, X, y, strata, offset=None, stratum_weight=None, exact_m=None, rows=None):
        super().__init__(X, offset, rows)
        strata = np.ascontiguousarray(strata, dtype=np.int64)
        n_strata = int(strata[-1]) + 1 if strata.size else 0
        if strata.size and np.any(np.diff(strata) < 0):
            raise ValueError("rows must be sorted by stratum")
        self.row_stratum = strata
        self.stratum_ptr = np.searchsorted(strata, np.arange(n_strata + 1)).astype(np.int64)
        self.n_strata = n_strata
        self.y_raw = np.ascontiguousarray(y, dtype=np.float64)
        self._set_stratum_weights(np.ones(n_strata) if stratum_weight is None else stratum_weight)
        self.exact_m = (np.zeros(n_strata, np.int64) if exact_m is None
                        else np.ascontiguousarray(exact_m, dtype=np.int64))
        self.rows = np.arange(self.n_rows) if rows is None else rows  # Dataset row of each datafit row
        self.col_runs, self.run_start, self.run_stratum = column_runs(
            self.indptr, self.indices, self.row_stratum)
        self.max_m = int(self.exact_m.max()) if n_strata else 0

    def _set_stratum_weights(self, c_s):
        """c_s and what depends on it: y = c_s y_raw, n_s and the static sum_r y_r x_rj per column."""
        self.c_s = np.ascontiguousarray(c_s, dtype=np.float64)
        self.__dict__.pop("hessian_rank", None)
        self.y = self.y_raw * self.c_s[self.row_stratum]
        self.n_s = np.bincount(self.row_stratum, weights=self.y, minlength=self.n_strata).astype(np.float64)
        self.xy = self.products.dot(np.arange(self.n_coef), self.y)

    @cached_property
    def hessian_rank(self) -> int:
        """The Hessian is a sum over strata of a covariance of x across the stratum's rows (of
        the rows' own x in the multinomial form, of sums of m rows' in the exact one): rank at
        most (rows - 1) per stratum of positive weight with an event (a matched pair: one)."""
        counted = (self.c_s > 0) & (self.n_s > 0)
        return int(np.maximum(np.diff(self.stratum_ptr)[counted] - 1, 0).sum())

    def data_weights(self):
        """Case weights in Dataset row order: each row carries its stratum's weight c_s."""
        return self.scatter_to_data_rows(self.rows, self.c_s[self.row_stratum])

    def reweighted(self, weights):
        """The same datafit with case weights ``weights`` (Dataset row order; constant within each
        stratum, as for the models' ``weights``), sharing X and the strata; weight 0 removes a stratum."""
        w = np.asarray(weights, dtype=np.float64)[self.rows]
        c_s = w[self.stratum_ptr[:-1]] if self.n_rows else np.zeros(0)
        bad = np.flatnonzero(w != c_s[self.row_stratum])
        if bad.size:
            i = bad[0]
            raise InputError(f"conditional models need weights constant within each stratum; row {self.rows[i]} "
                             f"has weight {w[i]}, the first row of its stratum {c_s[self.row_stratum[i]]}")
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._set_stratum_weights(c_s)
        return new

    def missing_information(self):
        """None if some stratum of positive weight has an event and more than one row (a
        conditional likelihood compares rows within a stratum)."""
        size = np.diff(self.stratum_ptr)
        weighted = self.c_s > 0
        with_event = weighted & (self.n_s > 0)
        if np.any(with_event & (size >= 2)):
            return None
        if not weighted.any():
            return (f"no stratum has a positive weight ({self.n_strata} strata), so the likelihood carries "
                    "no information")
        if not with_event.any():
            return (f"no stratum of positive weight has an event ({int(weighted.sum())} such strata), so the "
                    "likelihood carries no information")
        return (f"all {int(with_event.sum())} strata of positive weight with an event have a single row: a "
                "conditional likelihood compares rows within strata, so it carries no information")

    def new_state(self, beta):
        """State at ``beta``. It owns every array a sweep writes (the exact likelihood's
        polynomial work vectors B, dB, d2B included), so states of one datafit can be
        swept in parallel threads."""
        state = FitState(np.ascontiguousarray(self.linear_predictor(beta), dtype=np.float64))
        state.w = np.empty(self.n_rows)
        state.W = np.empty(self.n_strata)
        state.B, state.dB, state.d2B = (np.zeros(self.max_m + 1) for _ in range(3))
        conditional_kernels.refresh_weights(state.eta, state.w, state.W, self.stratum_ptr)
        state.kernel = conditional_kernels.State(eta=state.eta, w=state.w, W=state.W, B=state.B, dB=state.dB,
                                                 d2B=state.d2B)
        return state

    def loglik(self, state):
        return conditional_kernels.loglik(state.eta, state.w, state.W, self.y, self.n_s, self.stratum_ptr,
                                          self.exact_m, self.c_s, state.B)

    kernels = conditional_kernels.KERNELS

    def kernel_data(self):
        return conditional_kernels.Data(col_runs=self.col_runs, run_start=self.run_start, run_stratum=self.run_stratum,
                                        indices=self.indices, values=self.values, value_shift=self.value_shift,
                                        indicator=self.indicator, xy=self.xy, stratum_ptr=self.stratum_ptr,
                                        n_s=self.n_s, exact_m=self.exact_m, c_s=self.c_s, multinomial=self.max_m == 0,
                                        parallel=numba.get_num_threads() > 1)

    def device_record(self) -> conditional_kernels.Device:
        """What the device datafit copies besides the design (:class:`~riskset.kernels.cpu.conditional.Device`)."""
        return conditional_kernels.Device(data=self.kernel_data(), y_raw=self.y_raw)

    def residuals(self, state):
        """dl/deta per row."""
        out = np.empty(self.n_rows)
        conditional_kernels.residuals(state.w, state.W, self.y, self.n_s, self.stratum_ptr, self.exact_m,
                                      self.c_s, out)
        return out

    def gradient(self, state):
        return self.products.dot(np.arange(self.n_coef), self.residuals(state))

    def slopes(self, state, coefs):
        """X' r over the columns of ``coefs`` only (r: :meth:`residuals`)."""
        return self.products.dot(np.asarray(coefs, dtype=np.int64), self.residuals(state))

    def diagnose(self, state, beta):
        return weight_overflow(state)

    def separation_pattern(self, name, direction):
        extreme = "largest" if direction > 0 else "smallest"
        return f"{name!r} separates the outcome within strata: every case has the {extreme} value in its stratum"

    def information_scale(self, state, columns):
        """sum_r n_s (w_r / W_s) x_rj^2: the within-stratum second moment, before the squared
        stratum mean is subtracted (a bound on I_jj without cancellation), in one pass over the
        columns (no squared copy of X: the KKT check of an unpenalized fit asks for it each time)."""
        p, c = np.empty(self.n_rows), np.empty(self.n_rows)
        conditional_kernels.row_shares(state.w, self.n_s, self.stratum_ptr, p, c)
        return self.products.dot2(np.asarray(columns, dtype=np.int64), c)[1]

    def local_quadratic(self, state, columns):
        """Gradient, a diagonal scale and ``b -> H b`` on ``columns`` for multinomial strata
        (None with exact ones): with p_r = w_r / W_s and c_r = n_s p_r,
        H b = -X' (c (u - mean_s^p u)) for u = X b (:func:`~riskset.kernels.cpu.conditional.centered_rows`),
        O(nnz of the columns + N) per product; X^2' c bounds -h_jj from above."""
        if np.any(self.exact_m > 0):
            return None
        cols = np.ascontiguousarray(columns, dtype=np.int64)
        p, c = np.empty(self.n_rows), np.empty(self.n_rows)
        conditional_kernels.row_shares(state.w, self.n_s, self.stratum_ptr, p, c)
        grad = self.products.dot(cols, self.residuals(state))
        u, z = np.empty(self.n_rows), np.empty(self.n_rows)

        columns = self.products.on_columns(cols)

        def hessian_times(b):
            columns.times(b, u)
            conditional_kernels.centered_rows(u, p, c, self.stratum_ptr, z)
            return -columns.dot(z)

        return LocalQuadratic(grad, self.products.dot2(cols, c)[1], hessian_times)

    def hessian(self, state, columns):
        """The block on ``columns``: multinomial strata from the columns' row-major copy in one
        compiled pass (no N-sized temporaries), exact strata by their recursion."""
        columns = np.asarray(columns, dtype=np.int64)
        k = len(columns)
        H = np.zeros((k, k))
        rptr, rcol, rval = self.products.rows_of(columns)
        conditional_kernels.multinomial_hessian_block(rptr, rcol, rval, k, state.w, self.n_s, self.stratum_ptr,
                                                      self.exact_m, H)
        if np.any(self.exact_m > 0):
            sub = self.design.to_csc(columns).tocsr()
            sub.sort_indices()
            conditional_kernels.exact_hessian_block(sub.indptr.astype(np.int64), sub.indices.astype(np.int64),
                                                    sub.data, k, state.w, self.stratum_ptr, self.exact_m, self.c_s, H)
        return H


# -- preparing a Dataset ----------------------------------------------------------------
def _label(data: Dataset, s) -> str:
    labels = data.strata_labels
    return repr(labels[s]) if labels is not None and s < len(labels) else repr(int(s))


def stratum_weights(data: Dataset, strata: np.ndarray, n_strata: int, model: str):
    """Per-stratum weights c_s from row weights, which must be constant within a stratum."""
    if data.weights is None:
        return None
    w = np.asarray(data.weights, dtype=np.float64)
    lo = np.full(n_strata, np.inf)
    hi = np.full(n_strata, -np.inf)
    np.minimum.at(lo, strata, w)
    np.maximum.at(hi, strata, w)
    bad = np.flatnonzero(hi > lo)
    if bad.size:
        raise InputError(f"the {model} model needs weights constant within each stratum; stratum "
                         f"{_label(data, bad[0])} has weights from {lo[bad[0]]} to {hi[bad[0]]}")
    return lo


def sorted_by_stratum(data: Dataset, keep_strata: np.ndarray | None = None):
    """(rows in stratum order, new stratum codes of those rows) keeping ``keep_strata`` (mask)."""
    strata = np.asarray(data.strata, dtype=np.int64)
    rows = np.argsort(strata, kind="stable")
    if keep_strata is not None:
        rows = rows[keep_strata[strata[rows]]]
    old = strata[rows]
    _, codes = np.unique(old, return_inverse=True)
    return rows, codes.astype(np.int64), old


class _Conditional(Model):
    """Shared plumbing: validation, stratum sorting and datafit building."""

    uses_strata = True
    resampling_unit = "stratum"  # the likelihood is conditional on the stratum

    def coef_names(self, data):
        return list(data.covariate_names)

    def datafit(self, data: Dataset) -> Datafit:
        return require_information(self._build(data, shard=False), self.name)

    def shard_datafit(self, data: Dataset) -> Datafit | None:
        return self._build(data, shard=True)

    @abstractmethod
    def _build(self, data: Dataset, shard: bool) -> Datafit | None:
        """The datafit of ``data`` (None for a ``shard`` whose strata all carry no information)."""

    def predict(self, fit, data, kind="link"):
        """'link' (R's 'lp') = x beta + offset, 'risk' = exp(link), 'probability' the row's share of
        its stratum (needs ``strata``); R's 'response' is refused, as R's predict.coxph has none."""
        eta = fit.linear_predictor(data)
        if kind in ("link", "lp"):
            return eta
        if kind == "risk":
            return np.exp(eta)
        if kind in ("probability", "share"):
            # within-stratum share exp(eta_r) / sum_{stratum} exp(eta) (multinomial probability)
            data.require("strata", model=self.name)
            st = np.asarray(data.strata)
            e = np.exp(eta - np.max(eta))
            return e / np.bincount(st, weights=e)[st]
        refuse_kind(self.name, kind, HAZARD_KINDS + ("probability",), NO_RESPONSE +
                    "; 'probability' the share of its stratum's events a row expects")


class ConditionalPoisson(_Conditional):
    """Conditional Poisson regression: Poisson counts with a rate per stratum conditioned out.

    Needs ``y`` (counts >= 0) and ``strata``; ``offset`` = log(exposure time).
    Strata with no event carry no information and are dropped (with a DataWarning).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from riskset.data.dataset import Dataset
    >>> from riskset.solver.ccd import fit_ccd
    >>> d = Dataset(X=sp.csc_matrix(np.array([[1.0], [0.0], [1.0], [0.0]])), covariate_names=["drug"],
    ...             row_ids=np.arange(4), y=np.array([2.0, 1.0, 3.0, 1.0]), strata=np.array([0, 0, 1, 1]))
    >>> res = fit_ccd(ConditionalPoisson().datafit(d), np.zeros(1), np.zeros(1))
    >>> round(float(np.exp(res.beta[0])), 6)  # (2 + 3) / (1 + 1)
    2.5
    """

    name = "conditional_poisson"
    ratio_name = "rate_ratio"

    def _build(self, data: Dataset, shard: bool) -> ConditionalDatafit | None:
        data.require("y", model=self.name)
        data.require("strata", model=self.name)
        y = np.asarray(data.y, dtype=np.float64)
        bad = y < 0
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"{self.name} counts must be >= 0; row {data.row_ids[i]!r} has y = {y[i]} "
                             f"({int(bad.sum())} negative count(s))")
        strata = np.asarray(data.strata, dtype=np.int64)
        n_strata = int(strata.max()) + 1
        total = np.bincount(strata, weights=y, minlength=n_strata)
        present = np.bincount(strata, minlength=n_strata) > 0
        keep = total > 0
        n_drop = int((present & ~keep).sum())
        if n_drop and not shard:
            warnings.warn(f"{self.name}: dropped {n_drop} stratum/strata without any event "
                          f"({int(present.sum()) - n_drop} kept); they carry no information",
                          DataWarning, stacklevel=4)
        if not keep.any():
            if shard:
                return None
            raise InputError(f"{self.name}: no stratum has an event (all counts are 0)")
        c_all = stratum_weights(data, strata, n_strata, self.name)
        rows, codes, old = sorted_by_stratum(data, keep)
        c_s = None if c_all is None else c_all[np.unique(old)]
        offset = None if data.offset is None else np.asarray(data.offset)[rows]
        datafit = ConditionalDatafit(data.X, y[rows], codes, offset, c_s, rows=rows)
        datafit.row_ids = data.row_ids[rows]
        return datafit


class ConditionalLogistic(_Conditional):
    """Conditional logistic regression for matched sets (1:n and n:m).

    Parameters
    ----------
    ties : {'exact', 'breslow', 'efron'}
        'exact' (default): the exact conditional likelihood (R's clogit default);
        'breslow': the Breslow approximation (the Cox partial likelihood with all
        rows of a set tied, clogit(method='breslow')); 'efron': Efron's (clogit(method =
        'efron'), Cyclops' clr_efron: the Cox partial likelihood of the set, all tied at one
        time, with Efron ties; the Cox datafit computes it). Identical for 1:n sets.

    Needs ``y`` (1 = case, 0 = control) and ``strata`` (the matched set). Sets without
    a case or without a control are dropped with a DataWarning giving the count.
    """

    name = "conditional_logistic"
    ratio_name = "odds_ratio"

    def __init__(self, ties: str = "exact"):
        if ties not in ("exact", "breslow", "efron"):
            raise InputError(f"ties must be 'exact', 'breslow' or 'efron', not {ties!r}")
        self.ties = ties

    def options(self):
        return {"ties": self.ties}

    @classmethod
    def from_spec(cls, spec):
        return cls(ties=spec.get("ties", "exact"))

    def _build(self, data: Dataset, shard: bool) -> Datafit | None:
        data.require("y", model=self.name)
        data.require("strata", model=self.name)
        y = np.asarray(data.y, dtype=np.float64)
        bad = (y != 0) & (y != 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"{self.name} needs y = 1 (case) or 0 (control); row {data.row_ids[i]!r} "
                             f"has y = {y[i]}")
        strata = np.asarray(data.strata, dtype=np.int64)
        n_strata = int(strata.max()) + 1
        size = np.bincount(strata, minlength=n_strata)
        cases = np.bincount(strata, weights=y, minlength=n_strata).astype(np.int64)
        present = size > 0
        no_case = present & (cases == 0)
        no_control = present & (cases == size)
        keep = present & ~no_case & ~no_control
        if (no_case.any() or no_control.any()) and not shard:
            warnings.warn(f"{self.name}: dropped {int(no_case.sum())} matched set(s) without a case and "
                          f"{int(no_control.sum())} without a control ({int(keep.sum())} kept)",
                          DataWarning, stacklevel=4)
        if not keep.any():
            if shard:
                return None
            raise InputError(f"{self.name}: no matched set has both a case and a control")
        c_all = stratum_weights(data, strata, n_strata, self.name)
        rows, codes, old = sorted_by_stratum(data, keep)
        kept = np.unique(old)
        c_s = None if c_all is None else c_all[kept]
        m = cases[kept]
        exact_m = np.where(m >= 2, m, 0) if self.ties == "exact" else None
        offset = None if data.offset is None else np.asarray(data.offset)[rows]
        if self.ties == "efron":  # each set a stratum of a Cox model, every row at one time
            datafit = CoxDatafit(data.X[rows], np.ones(rows.size), y[rows].astype(np.uint8), strata=codes,
                            weights=None if c_s is None else c_s[codes], offset=offset, ties="efron")
            datafit.data_rows = np.ascontiguousarray(rows[datafit.order])
            return datafit
        datafit = ConditionalDatafit(data.X, y[rows], codes, offset, c_s, exact_m, rows=rows)
        datafit.row_ids = data.row_ids[rows]
        return datafit


__all__ = ["ConditionalDatafit", "ConditionalLogistic", "ConditionalPoisson"]
