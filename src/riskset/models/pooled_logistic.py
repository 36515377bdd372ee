"""Pooled logistic regression on virtual person-intervals (memory-efficient, Cyclops ch. 5).

Follow-up time T_i of subject i is cut into intervals of width ``interval_width``:
K_i = ceil(T_i / width) intervals, interval k covering ((k-1) width, k width]. The
outcome is y_ik = 1 only in interval K_i and only if status_i = 1 (a censored
subject keeps a y = 0 row for the interval of censoring). The discrete hazard is

    logit h_i(k) = beta0 + sum_m gamma0_m f_m(k) + sum_j beta_j z_ij + sum_{j,m} gamma_jm z_ij f_m(k)

with fixed effects beta, and time-varying effects gamma on the functions f of the
interval index k = 1, 2, ... named in ``time_effects`` ('linear' k, 'quadratic' k^2,
'cubic' k^3, 'log' log k, or a user function of the index array).

The log-likelihood is the Bernoulli log-likelihood of the materialized
person-period table (``glm(y ~ ..., family = binomial)`` on it), but the table is
never built: the state is O(N) per-subject sums over their intervals and the
kernels (:mod:`riskset.kernels.cpu.pooled`) walk (subject, interval) pairs by index
arithmetic. Coefficient names: ``intercept``, the covariates, then the time terms
``t`` (``t^2``, ``t^3``, ``log(t)``, ``<f>(t)``) of the intercept and ``<cov>:t``
(etc.) of each covariate.

Predictions: ``predict(fit, data, 'hazard')`` (N x K discrete hazards per interval),
``'survival'`` (S(k) = prod_{l <= k} (1 - h(l))) and ``'link'`` (logit h).
"""
from __future__ import annotations

import warnings

import numpy as np

from riskset.data.dataset import Dataset
from riskset.exceptions import DataWarning, InputError
from riskset.kernels.cpu import pooled as pooled_kernels
from riskset.models.base import Datafit, FitState, LocalQuadratic, Model, no_weight, refuse_kind, require_information
from riskset.validation import coef_mapping, flag, positive_number

_BUILTIN = {
    "linear": ("t", lambda k: k),
    "quadratic": ("t^2", lambda k: k * k),
    "cubic": ("t^3", lambda k: k ** 3),
    "log": ("log(t)", np.log),
}


def _time_function(spec):
    """(label, vectorized function of the interval index) for one time-effect spec."""
    if isinstance(spec, str):
        if spec not in _BUILTIN:
            raise InputError(f"unknown time effect {spec!r}; use one of {sorted(_BUILTIN)} or a function")
        return _BUILTIN[spec]
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str) and callable(spec[1]):
        return spec
    if callable(spec):
        return f"{getattr(spec, '__name__', 'f')}(t)", spec
    raise InputError(f"a time effect is 'linear', 'quadratic', 'cubic', 'log', a function or (label, function); "
                     f"got {spec!r}")


#: Largest interval index K = ceil(time / interval_width) that float64 counts exactly (2^53).
MAX_INTERVAL_INDEX = 2 ** 53
#: With time effects the fit visits every person-interval on each update of the intercept or a time
#: term (some 3e7 per second and thread): the default ``max_person_intervals`` beyond which it refuses
#: (1e8 is already minutes per cycle), and the count beyond which it warns that the fit will be slow.
MAX_PERSON_INTERVALS = 10 ** 8
SLOW_PERSON_INTERVALS = 10 ** 7
#: With time effects the table of f_m(k), k = 1..K, is stored: the largest K allowed.
MAX_TIME_TABLE = 10 ** 7
#: ``predict`` returns an (n_rows, n_intervals) matrix: the most values it builds.
MAX_PREDICTION_VALUES = 10 ** 8


def n_intervals(time, width) -> np.ndarray:
    """K = ceil(time / width), robust to floating-point round-off at exact multiples.

    Raises InputError when a K would exceed :data:`MAX_INTERVAL_INDEX` (or is not finite).

    >>> n_intervals([0.5, 1.0, 2.5], 0.5)
    array([1, 2, 5])
    """
    r = np.asarray(time, dtype=np.float64) / width
    too_many = r > MAX_INTERVAL_INDEX
    if too_many.any():
        i = int(np.flatnonzero(too_many)[0])
        t = np.ravel(time)[i]
        raise InputError(f"pooled_logistic: time {t:g} with interval_width={width:g} makes {r.flat[i]:.3g} "
                         f"intervals, more than can be counted ({MAX_INTERVAL_INDEX:.2g}): use a wider "
                         f"interval_width (or check the time unit)")
    k = np.ceil(r)
    near = np.abs(r - np.round(r)) <= 1e-9 * np.maximum(1.0, np.abs(r))
    return np.where(near, np.round(r), k).astype(np.int64)


class PooledLogisticDatafit(Datafit):
    """Bernoulli log-likelihood over virtual person-intervals.

    ``X`` is the *subject-level* covariate matrix; the datafit's coefficients are the
    virtual columns ``(src[v], fidx[v])``: subject covariate src (-1 = the constant 1)
    times time function fidx (0 = the constant 1).
    """

    def __init__(self, Z, K, d, src, fidx, ftab, weights=None, offset=None):
        super().__init__(Z, offset)
        self.n_intervals = np.ascontiguousarray(K, dtype=np.int64)
        self.d = np.ascontiguousarray(d, dtype=np.float64)
        self.src = np.ascontiguousarray(src, dtype=np.int64)
        self.fidx = np.ascontiguousarray(fidx, dtype=np.int64)
        self.ftab = np.ascontiguousarray(ftab, dtype=np.float64)
        self.nf = self.ftab.shape[0]
        self.wt = np.ones(self.n_rows) if weights is None else np.ascontiguousarray(weights, dtype=np.float64)
        self.rows = np.arange(self.n_rows)  # Dataset row of each subject row (set by the model)
        # static event sums: sum_i wt d c F_m(K_i)
        self.ysum = np.empty(len(self.src))
        for m in range(self.nf):
            at_event = self.wt * self.d * (self.ftab[m, self.n_intervals] if m else 1.0)  # F_0 = 1 (one-column ftab)
            sel, sums = self._column_sums(m, at_event)
            self.ysum[sel] = sums

    def _column_sums(self, m, per_subject):
        """(columns, sum_i c_i v_i) of the virtual columns c_i F_m(k) (c = 1 where src < 0)."""
        sel = np.flatnonzero(self.fidx == m)
        src = self.src[sel]
        sums = np.full(sel.size, per_subject.sum())
        cov = src >= 0
        sums[cov] = self.products.dot(src[cov], per_subject)
        return sel, sums

    @property
    def n_coef(self) -> int:
        return len(self.src)

    @property
    def n_person_periods(self) -> int:
        return int(self.n_intervals.sum(dtype=np.float64))  # float: K_i may be up to 2^53 each

    def lin(self, beta):
        """Per-subject coefficient of each time function, shape (nf, N)."""
        beta = np.asarray(beta, dtype=np.float64)
        lin = np.zeros((self.nf, self.n_rows))
        for m in range(self.nf):
            sel = np.flatnonzero(self.fidx == m)
            dense = sel[self.src[sel] < 0]
            cov = sel[self.src[sel] >= 0]
            lin[m] += beta[dense].sum()
            if cov.size:
                lin[m] += self.products.times(self.src[cov], beta[cov])
        lin[0] += self.offset
        return lin

    def missing_information(self):
        """None if some subject of positive weight has an event (without one every
        person-period is a non-event and the hazard has no estimate)."""
        problem = no_weight(self.wt, "subject")
        if problem or np.any((self.wt > 0) & (self.d > 0)):
            return problem
        return (f"no subject with an event has a positive weight ({int(np.sum(self.d > 0))} event(s)), so the "
                "likelihood carries no information")

    def linear_predictor(self, beta):
        raise NotImplementedError("pooled logistic rows are virtual; use lin(beta)")

    def reach(self, direction):
        """A bound on max |x d| over the person-period rows: sum_m max_i |lin_m,i| max_k |f_m(k)|."""
        lin = self.lin(direction) - self.lin(np.zeros_like(direction))
        f_max = np.max(np.abs(self.ftab[:, 1:]), axis=1, initial=0.0)
        f_max[0] = 1.0  # F_0 = 1
        return float(np.sum(np.max(np.abs(lin), axis=1, initial=0.0) * f_max))

    def new_state(self, beta):
        lin = np.ascontiguousarray(self.lin(beta))
        state = FitState(lin)
        state.lin = lin
        n = self.n_rows
        state.G = np.empty((self.nf, n))
        state.H = np.empty((self.nf, n))
        state.SP = np.empty(n)
        pooled_kernels.refresh_all(lin, self.n_intervals, self.wt, self.ftab, state.G, state.H, state.SP)
        state.kernel = pooled_kernels.State(lin=lin, G=state.G, H=state.H, SP=state.SP)
        return state

    def loglik(self, state):
        return pooled_kernels.loglik(state.lin, self.n_intervals, self.wt, self.d, self.ftab, state.SP)

    def data_weights(self):
        """Case weights in Dataset row order (0 for subjects dropped with follow-up time 0)."""
        return self.scatter_to_data_rows(self.rows, self.wt)

    kernels = pooled_kernels.KERNELS

    def kernel_data(self):
        return pooled_kernels.Data(indptr=self.indptr, indices=self.indices, values=self.values,
                                   value_shift=self.value_shift, src=self.src, fidx=self.fidx, ysum=self.ysum,
                                   n_intervals=self.n_intervals, weights=self.wt, ftab=self.ftab)

    def gradient(self, state):
        g = self.ysum.copy()
        for m in range(self.nf):
            sel, sums = self._column_sums(m, state.G[m])
            g[sel] -= sums
        return g

    def _moments(self, state, columns):
        """(time function of each column, the functions used, their pairs (a, b) with a <= b,
        and each pair's per-subject second moments Q_ab, :func:`~riskset.kernels.cpu.pooled.cross_moments`)."""
        fm = self.fidx[columns]
        used = np.unique(fm)
        pairs = [(a, b) for i, a in enumerate(used) for b in used[i:]]
        ma = np.array([p[0] for p in pairs], dtype=np.int64)
        mb = np.array([p[1] for p in pairs], dtype=np.int64)
        Q = np.empty((len(pairs), self.n_rows))
        pooled_kernels.cross_moments(state.lin, self.n_intervals, self.wt, self.ftab, ma, mb, Q)
        return fm, used, pairs, Q

    def hessian(self, state, columns):
        """Blocks -C_a' diag(Q_ab) C_b of the pairs (a, b) of time functions, C_a the
        subject-level factors of the columns with function a (:meth:`ColumnProducts.gram`
        over the distinct factors of the pair: a covariate may carry several functions)."""
        columns = np.asarray(columns, dtype=np.int64)
        k = len(columns)
        fm, used, pairs, Q = self._moments(state, columns)
        factors = self.src[columns]  # -1: the constant, the products' column of ones
        H = np.zeros((k, k))
        for q, (a, b) in enumerate(pairs):
            ia = np.flatnonzero(fm == a)
            ib = np.flatnonzero(fm == b)
            distinct, at = np.unique(factors[np.r_[ia, ib]], return_inverse=True)
            gram = self.products.gram(distinct, Q[q])
            block = -gram[np.ix_(at[:ia.size], at[ia.size:])]
            H[np.ix_(ia, ib)] = block
            H[np.ix_(ib, ia)] = block.T
        return H

    def local_quadratic(self, state, columns):
        """Gradient, diagonal scale and ``b -> H b`` on ``columns`` (the block of :meth:`hessian`,
        never formed): H b = -sum_a C_a' sum_b diag(Q_ab) C_b b_b over the time functions a, b
        of the columns, C_a their subject-level factors; O(nnz of the factors + N) per function
        and pair per product. The diagonal of -H is (C_a ** 2)' Q_aa, exact."""
        columns = np.asarray(columns, dtype=np.int64)
        fm, used, pairs, Q = self._moments(state, columns)
        at = {a: np.flatnonzero(fm == a) for a in used}
        factors = {a: self.src[columns[at[a]]] for a in used}  # -1: the products' column of ones
        grad, curvature = self.ysum[columns].copy(), np.empty(columns.size)
        for a in used:
            grad[at[a]] -= self.products.dot(factors[a], state.G[a])
        for q, (a, b) in enumerate(pairs):
            if a == b:
                curvature[at[a]] = self.products.dot2(factors[a], Q[q])[1]

        def hessian_times(v):
            u = {a: self.products.times(factors[a], v[at[a]]) for a in used}
            z = {a: np.zeros(self.n_rows) for a in used}
            for q, (a, b) in enumerate(pairs):
                z[a] += Q[q] * u[b]
                if a != b:
                    z[b] += Q[q] * u[a]
            out = np.empty(columns.size)
            for a in used:
                out[at[a]] = -self.products.dot(factors[a], z[a])
            return out

        return LocalQuadratic(grad, curvature, hessian_times)


class PooledLogistic(Model):
    """Pooled logistic regression from subject-level (time, status, covariates).

    Parameters
    ----------
    interval_width : float > 0
        Width of the discrete-time intervals (same unit as ``time``).
    time_effects : dict, optional
        ``{'intercept' | covariate: spec or [spec, ...]}``; spec is 'linear',
        'quadratic', 'cubic', 'log', a function of the interval-index array
        (1, 2, ...), or ``(label, function)``. The intercept's terms model the
        baseline hazard shape, a covariate's terms its time-varying effect.
    intercept : bool
        Include the intercept beta0 (default True).
    horizon : int, optional
        Number of intervals returned by ``predict`` when the data have no ``time``.
    max_person_intervals : float
        With ``time_effects``, the most person-intervals a fit accepts (default
        :data:`MAX_PERSON_INTERVALS`, 1e8): each update of the intercept or a time term visits
        them all, so more is refused up front; raise it knowingly for a long fit. Without time
        effects the count does not matter (closed-form sums).

    The intercept and its time terms are never penalized.

    Examples
    --------
    >>> m = PooledLogistic(30, {"intercept": "linear", "age": "linear"})
    >>> m.time_terms(["age", "sex"])
    [('intercept', 't'), ('age', 'age:t')]
    """

    name = "pooled_logistic"
    ratio_name = "odds_ratio"

    def __init__(self, interval_width, time_effects=None, intercept: bool = True, horizon: int | None = None,
                 max_person_intervals: float = MAX_PERSON_INTERVALS):
        self.interval_width = positive_number("interval_width", interval_width)
        self.time_effects = coef_mapping("time_effects", time_effects)  # integer covariate ids as names
        self.intercept = flag("intercept", intercept)
        self.horizon = horizon
        self.max_person_intervals = positive_number("max_person_intervals", max_person_intervals)
        # distinct time functions, in order of first use
        self._functions = []  # (label, func)
        self._terms = []  # (term, label)
        for term, specs in self.time_effects.items():
            for spec in (specs if isinstance(specs, list) else [specs]):
                label, func = _time_function(spec)
                if label not in [f[0] for f in self._functions]:
                    self._functions.append((label, func))
                self._terms.append((term, label))

    def options(self):
        # user functions stay callables here (fit.model rebuilds the model in this session); only
        # the built-in names survive a JSON round trip of the fit
        return {"interval_width": self.interval_width, "time_effects": dict(self.time_effects),
                "intercept": self.intercept, "horizon": self.horizon,
                "max_person_intervals": self.max_person_intervals}

    @classmethod
    def from_spec(cls, spec):
        if "interval_width" not in spec:
            raise InputError("the pooled_logistic model needs 'interval_width'")
        return cls(spec["interval_width"], spec.get("time_effects"), spec.get("intercept", True),
                   spec.get("horizon"), spec.get("max_person_intervals", MAX_PERSON_INTERVALS))

    # -- names and structure -----------------------------------------------------------
    def time_terms(self, covariate_names):
        """[(term, coefficient name)] of the time-varying terms, intercept's first."""
        out = []
        for term, label in self._terms:
            if term == "intercept":
                out.append((term, label))
        for name in covariate_names:
            for term, label in self._terms:
                if term == name:
                    out.append((term, f"{name}:{label}"))
        return out

    def _check_terms(self, data):
        unknown = [t for t, _ in self._terms if t != "intercept" and t not in data.covariate_names]
        if unknown:
            raise InputError(f"time_effects name unknown covariate(s): {', '.join(map(repr, sorted(set(unknown))))}")

    def coef_names(self, data):
        self._check_terms(data)
        return ((["intercept"] if self.intercept else []) + list(data.covariate_names)
                + [name for _, name in self.time_terms(data.covariate_names)])

    def unpenalized_names(self):
        out = ["intercept"] if self.intercept else []
        return out + [label for term, label in self._terms if term == "intercept"]

    def _structure(self, data):
        """Virtual columns: (src, fidx) arrays."""
        labels = [f[0] for f in self._functions]
        src, fidx = [], []
        if self.intercept:
            src.append(-1)
            fidx.append(0)
        src += list(range(data.n_covariates))
        fidx += [0] * data.n_covariates
        pos = {n: i for i, n in enumerate(data.covariate_names)}
        for term, name in self.time_terms(data.covariate_names):
            label = name.split(":", 1)[1] if term != "intercept" else name
            src.append(-1 if term == "intercept" else pos[term])
            fidx.append(1 + labels.index(label))
        return np.array(src, dtype=np.int64), np.array(fidx, dtype=np.int64)

    def function_table(self, kmax: int) -> np.ndarray:
        """ftab[m, k] = f_m(k) for k = 0..kmax (row 0 = constant 1; column 0 unused)."""
        tab = np.ones((1 + len(self._functions), kmax + 1))
        k = np.arange(1, kmax + 1, dtype=np.float64)
        for m, (label, func) in enumerate(self._functions, start=1):
            with np.errstate(all="ignore"):  # non-finite values are reported below
                vals = np.asarray(func(k), dtype=np.float64)
            if vals.shape != k.shape or not np.all(np.isfinite(vals)):
                raise InputError(f"time function {label!r} must return one finite value per interval index "
                                 f"1..{kmax}")
            tab[m, 1:] = vals
            tab[m, 0] = 0.0
        return tab

    def intervals(self, time) -> np.ndarray:
        return n_intervals(time, self.interval_width)

    def _fit_function_table(self, K, time) -> np.ndarray:
        """The table the fit's kernels read, after refusing work that grows too large.

        Without time functions the kernels sum each subject's intervals in closed form and
        need only the constant (one column): the cost is then independent of the width.
        With time functions every person-interval is visited and the table has K columns.
        """
        if not self._functions:
            return np.ones((1, 1))
        kmax = int(K.max())
        total = float(K.sum(dtype=np.float64))
        counts = (f"interval_width={self.interval_width:g} makes {total:.3g} person-intervals (largest time "
                  f"{float(time.max()):g} -> {kmax:.3g} intervals)")
        if kmax > MAX_TIME_TABLE:
            raise InputError(f"{self.name}: {counts}; with time_effects the values of the time functions are stored "
                             f"for every interval, and the limit is {MAX_TIME_TABLE:.0e}: use a wider interval_width")
        if total > self.max_person_intervals:
            raise InputError(f"{self.name}: {counts}; with time_effects every person-interval is visited on each "
                             f"update, and the limit is max_person_intervals={self.max_person_intervals:.3g}: use a "
                             f"wider interval_width (or raise max_person_intervals for a fit of hours)")
        if total > SLOW_PERSON_INTERVALS:
            warnings.warn(f"{self.name}: {counts}; with time_effects every person-interval is visited on each "
                          f"update, so the fit may take minutes (a wider interval_width is faster)", DataWarning,
                          stacklevel=4)
        return self.function_table(kmax)

    # -- datafit -------------------------------------------------------------------------
    def datafit(self, data: Dataset) -> PooledLogisticDatafit:
        data.require("time", model=self.name)
        data.require("status", model=self.name)
        self._check_terms(data)
        time = np.asarray(data.time, dtype=np.float64)
        status = np.asarray(data.status, dtype=np.float64)
        bad = time < 0
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"{self.name}: follow-up time must be >= 0; row {data.row_ids[i]!r} has time {time[i]}")
        bad = (status != 0) & (status != 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"{self.name} needs status 0 (censored) or 1 (event); row {data.row_ids[i]!r} has "
                             f"status {status[i]:g}")
        K = self.intervals(time)
        zero = K == 0
        rows = np.arange(data.n_rows)
        if zero.any():
            warnings.warn(f"{self.name}: dropped {int(zero.sum())} subject(s) with follow-up time 0 "
                          "(no interval at risk)", DataWarning, stacklevel=3)
            rows = np.flatnonzero(~zero)
            if rows.size == 0:
                raise InputError(f"{self.name}: every subject has follow-up time 0")
        src, fidx = self._structure(data)
        ftab = self._fit_function_table(K[rows], time[rows])
        Z = data.X if not zero.any() else data.X[rows].tocsc()
        w = None if data.weights is None else np.asarray(data.weights)[rows]
        off = None if data.offset is None else np.asarray(data.offset)[rows]
        datafit = PooledLogisticDatafit(Z, K[rows], status[rows], src, fidx, ftab, w, off)
        datafit.rows = rows
        return require_information(datafit, self.name)

    # -- prediction ----------------------------------------------------------------------
    def _beta(self, fit, data):
        names = self.coef_names(data)
        coef = fit.coef
        missing = [n for n in names if n not in coef.index]
        if missing:
            raise InputError(f"the fit has no coefficient(s) {', '.join(map(repr, missing))} for these data")
        return np.array([coef[n] for n in names], dtype=np.float64)

    def link(self, fit, data, n_intervals: int | None = None) -> np.ndarray:
        """logit of the discrete hazard, shape (n_rows, n_intervals)."""
        if n_intervals is None:
            if self.horizon is not None:
                n_intervals = int(self.horizon)
            elif data.time is not None:
                n_intervals = int(self.intervals(data.time).max())
            else:
                raise InputError("give n_intervals (or the model's horizon) to predict without a time column")
        if data.n_rows * float(n_intervals) > MAX_PREDICTION_VALUES:
            raise InputError(f"{self.name} predictions for {data.n_rows} rows x {n_intervals:.3g} intervals would be "
                             f"more than {MAX_PREDICTION_VALUES:.0e} values: give a smaller n_intervals (or horizon), "
                             f"or predict for fewer rows")
        src, fidx = self._structure(data)
        ftab = self.function_table(n_intervals)
        Z = data.X
        lin = np.zeros((ftab.shape[0], data.n_rows))
        beta = self._beta(fit, data)
        for v in range(len(src)):
            lin[fidx[v]] += beta[v] if src[v] < 0 else beta[v] * Z[:, src[v]].toarray().ravel()
        if data.offset is not None:
            lin[0] += data.offset
        return lin.T @ ftab[:, 1:]

    def hazard(self, fit, data, n_intervals: int | None = None) -> np.ndarray:
        """Discrete hazard h_i(k) for intervals k = 1..n_intervals, shape (n_rows, n_intervals)."""
        return 1.0 / (1.0 + np.exp(-self.link(fit, data, n_intervals)))

    def survival(self, fit, data, n_intervals: int | None = None) -> np.ndarray:
        """Survival at the end of interval k: S(k) = prod_{l <= k} (1 - h(l))."""
        return np.cumprod(1.0 - self.hazard(fit, data, n_intervals), axis=1)

    def covariate_of(self, coef_name):
        for term, label in self._terms:
            if coef_name == f"{term}:{label}":
                return term
        return super().covariate_of(coef_name)

    def predict(self, fit, data, kind="hazard"):
        fit.check_covariates(data)
        if kind == "link":
            return self.link(fit, data)
        if kind == "hazard":
            return self.hazard(fit, data)
        if kind == "survival":
            return self.survival(fit, data)
        refuse_kind("pooled_logistic", kind, ["link", "hazard", "survival"])


def person_period_table(data: Dataset, interval_width: float):
    """The materialized person-period rows (subject index, interval k, y) - for tests and checks.

    O(N K) memory: this is what :class:`PooledLogistic` avoids.
    """
    K = n_intervals(data.time, interval_width)
    subject = np.repeat(np.arange(data.n_rows), K)
    start = np.cumsum(K) - K
    k = np.arange(K.sum()) - np.repeat(start, K) + 1
    y = ((k == K[subject]) & (np.asarray(data.status)[subject] == 1)).astype(np.float64)
    return subject, k, y


__all__ = ["PooledLogistic", "PooledLogisticDatafit", "n_intervals", "person_period_table"]
