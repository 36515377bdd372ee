"""Generalized linear models with independent rows: logistic, Poisson, least squares.

Log-likelihoods (weights w_i, linear predictor eta_i = x_i beta + offset_i):

- logistic: sum w (y eta - log(1 + e^eta)), y in {0, 1}
- Poisson:  sum w (y eta - e^eta - log y!), y >= 0 counts; offset = log exposure
- least squares: -1/2 sum w (y - eta)^2 (Gaussian with unit variance)
"""
from __future__ import annotations

import copy

import numba
import numpy as np

from riskset import validation as check
from riskset.data.dataset import Dataset, row_label
from riskset.exceptions import InputError
from riskset.kernels.cpu import glm as glm_kernels
from riskset.kernels.cpu import separability as separability_kernels
from riskset.core.interface import ClosedFormStart, ExactSeparation, Reweightable, RunsOnDevice, SlopeRows
from riskset.models.base import Datafit, FitState, LocalQuadratic, Model, no_weight, refuse_kind, require_information

#: Moves of the linear predictor against a row's outcome, relative to the largest move, that
#: :meth:`GLMDatafit.recedes` counts as rounding of X d (a row on the separating hyperplane).
RECESSION_RTOL = 1e-10


class GLMDatafit(Datafit, Reweightable, SlopeRows, ClosedFormStart, ExactSeparation, RunsOnDevice):
    """Datafit of a GLM family with canonical link (kernels in ``kernels.cpu.glm``).

    With ``intercept=True`` coefficient 0 is an implicit column of ones, so the
    user's X is used as is (no copy of the non-zeros); coefficient j >= 1 is column
    j - 1 of X.
    """

    device_datafit = "glm:GLMDeviceDatafit"

    def __init__(self, family: int, X, y, weights=None, offset=None, intercept: bool = False):
        super().__init__(X, offset)
        self.family = family
        self.first = int(intercept)
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.w = np.ones(self.n_rows) if weights is None else np.ascontiguousarray(weights, dtype=np.float64)

    @property
    def n_coef(self):
        return self.design.n_cols + self.first

    def coef_of_column(self, j):
        return j + self.first

    def columns(self, coefs) -> np.ndarray:
        """The CSC column of each coefficient, -1 for the intercept (a column of ones for
        :class:`~riskset.core.products.column_products.ColumnProducts`)."""
        return np.asarray(coefs, dtype=np.int64) - self.first

    def missing_information(self):
        return no_weight(self.w)

    def reweighted(self, weights):
        view = copy.copy(self)
        view.w = np.ascontiguousarray(weights, dtype=np.float64)
        return view

    def data_weights(self):
        """Case weights (rows are Dataset rows)."""
        return self.w.copy()

    def new_state(self, beta):
        rows = np.empty((self.n_rows, glm_kernels.N_FIELDS))
        glm_kernels.fill_rows(self.family, self.linear_predictor(beta), self.y, self.w, rows)
        state = FitState(rows[:, glm_kernels.ETA])
        state.rows = rows
        state.kernel = glm_kernels.State(rows=rows)
        return state

    def loglik(self, state):
        return glm_kernels.loglik(self.family, state.rows, self.products.bounds)

    kernels = glm_kernels.KERNELS

    def kernel_data(self):
        """The kernels' static record; its chunks run in parallel where this thread's kernels have
        more than one thread (``numba.get_num_threads()``, see :mod:`riskset.backend`)."""
        return glm_kernels.Data(family=self.family, first=self.first, indptr=self.indptr, indices=self.indices,
                                values=self.values, value_shift=self.value_shift, indicator=self.indicator,
                                parallel=numba.get_num_threads() > 1)

    def device_record(self) -> glm_kernels.Device:
        """What the device datafit copies besides the design (:class:`~riskset.kernels.cpu.glm.Device`)."""
        return glm_kernels.Device(data=self.kernel_data(), y=self.y)

    def gradient(self, state):
        return self.slopes(state, np.arange(self.n_coef))

    def slopes(self, state, coefs):
        """X_c' resid over the columns of ``coefs`` only."""
        return self.products.dot(self.columns(coefs), glm_kernels.field(state.rows, glm_kernels.RESID))

    def slope_rows(self, state):
        """(a copy of resid, the norm of each coefficient's column): the slopes are X_c' resid."""
        norms = self.products.column_norms(self.columns(np.arange(self.n_coef)))  # the intercept's ones: sqrt(N)
        return glm_kernels.field(state.rows, glm_kernels.RESID), norms

    def hessian(self, state, columns):
        return -self.products.gram(self.columns(columns), glm_kernels.field(state.rows, glm_kernels.CURV))

    def information_scale(self, state, columns):
        """(X_A ** 2)' curv, the exact diagonal of the information (the local quadratic's
        curvature, without its gradient: the KKT check has that already)."""
        return self.products.dot2(self.columns(columns), glm_kernels.field(state.rows, glm_kernels.CURV))[1]

    def local_quadratic(self, state, columns):
        """Gradient X_A' resid, exact diagonal (X_A ** 2)' curv and ``b -> -X_A' (curv X_A b)``
        on ``columns`` (O(nnz) per product:
        :meth:`~riskset.core.products.column_products.ColumnProducts.gram_operator`); with the
        intercept in A, its column of -H, X_A' curv (the same pass as the diagonal)."""
        cols = self.columns(columns)
        curv = glm_kernels.field(state.rows, glm_kernels.CURV)
        grad = self.products.dot(cols, glm_kernels.field(state.rows, glm_kernels.RESID))
        gram = self.products.gram_operator(cols, curv)

        def hessian_times(b):
            return -gram(b)

        coupling, diagonal = self.products.dot2(cols, curv)
        ones = np.flatnonzero(cols < 0)
        if not ones.size:
            return LocalQuadratic(grad, diagonal, hessian_times)
        return LocalQuadratic(grad, diagonal, hessian_times, intercept=int(ones[0]), coupling=coupling)

    def unpenalized_start(self, beta, coefs):
        """The intercept alone, every covariate's coefficient 0 and the offset constant: its
        score sum w (y - mu) = 0 makes mu the weighted mean outcome, so the intercept is that
        mean through the link (logit, log, identity) less the offset. None otherwise, and
        where the mean is at the edge of the family's range (the estimate does not exist)."""
        if not self.first or list(coefs) != [0] or np.any(beta[1:] != 0) or np.ptp(self.offset) > 0:
            return None
        total = float(np.sum(self.w))
        mean = float(self.w @ self.y) / total if total > 0 else np.nan
        if self.family == glm_kernels.LOGISTIC:
            eta = np.log(mean / (1.0 - mean)) if 0.0 < mean < 1.0 else np.nan
        elif self.family == glm_kernels.POISSON:
            eta = np.log(mean) if mean > 0.0 else np.nan
        else:
            eta = mean
        if not np.isfinite(eta):
            return None
        start = beta.copy()
        start[0] = eta - self.offset[0]
        return start

    def diagnose(self, state, beta):
        """A non-finite linear predictor, residual or curvature (the fitted mean and its weight),
        or None. exp(eta) is not checked: a logistic row's overflows at eta > 709 where its mean
        is 1 and its log-likelihood term finite (Poisson's overflow is its mean's, caught here)."""
        fields = [glm_kernels.ETA, glm_kernels.RESID, glm_kernels.CURV]
        if np.all(np.isfinite(state.rows[:, fields])):
            return None
        return "the linear predictor or a fitted mean is not finite"

    def univariable_separation(self, columns):
        """Exact O(nnz) check (:func:`riskset.kernels.cpu.separability.class_ranges`).

        A row may have its linear predictor pushed to +inf (logistic y = 1), to -inf
        (logistic y = 0, Poisson y = 0) or neither (Poisson y > 0, least squares). Covariate
        x with the intercept separates towards +inf iff some threshold c has every row
        with x > c able to go up and every row with x < c able to go down, i.e.
        ``max(x | cannot go up) <= min(x | cannot go down)`` with x not constant
        (eta = b (x - c), b -> inf); without an intercept c = 0. The intercept alone
        diverges iff every row can go the same way (e.g. no event at all).
        """
        columns = np.asarray(columns, dtype=np.int64)
        row_class = np.where(self.w > 0, self._row_classes(), -1).astype(np.int64)
        sizes = np.bincount(row_class[row_class >= 0], minlength=3).astype(np.int64)
        ranges = np.empty((columns.size, 3, 2))
        is_x = columns >= self.first
        x_ranges = np.empty((int(is_x.sum()), 3, 2))
        separability_kernels.class_ranges(self.indptr, self.indices, self.values, self.value_shift,
                                          columns[is_x] - self.first, row_class, sizes, x_ranges)
        ranges[is_x] = x_ranges
        ranges[~is_x, :, 0] = np.where(sizes > 0, 1.0, np.inf)  # the intercept: x = 1
        ranges[~is_x, :, 1] = np.where(sizes > 0, 1.0, -np.inf)
        lo, hi = ranges[:, :, 0], ranges[:, :, 1]
        not_up_lo, not_up_hi = np.minimum(lo[:, 1], lo[:, 2]), np.maximum(hi[:, 1], hi[:, 2])
        not_down_lo, not_down_hi = np.minimum(lo[:, 0], lo[:, 2]), np.maximum(hi[:, 0], hi[:, 2])
        varies = lo.min(axis=1) < hi.max(axis=1)
        moves = (lo.min(axis=1) < 0) | (hi.max(axis=1) > 0)
        free_threshold = is_x & bool(self.first)  # the intercept shifts the threshold c
        up = np.where(free_threshold, varies & (not_up_hi <= not_down_lo),
                      moves & (not_up_hi <= 0) & (not_down_lo >= 0))
        down = np.where(free_threshold, varies & (not_down_hi <= not_up_lo),
                        moves & (not_down_hi <= 0) & (not_up_lo >= 0))
        return up.astype(np.int64) - down.astype(np.int64)

    def recedes(self, direction):
        """Exact (Albert & Anderson 1984): every row of positive weight has its linear predictor
        moved only the way it may go (:meth:`_row_classes`: x_i d >= 0 where it may go up, <= 0
        where down, = 0 where neither), up to 1e-10 of the largest move (rounding of X d).

        >>> import riskset, numpy as np
        >>> x = np.array([[0.0], [1.0], [2.0]])
        >>> datafit = LogisticRegression().datafit(riskset.from_arrays(x, y=np.array([0, 1, 1.0])))
        >>> datafit.recedes(np.array([-0.5, 1.0])), datafit.recedes(np.array([-1.5, 1.0]))  # x > 0.5, x > 1.5
        (True, False)
        """
        moved = self.linear_predictor(direction) - self.offset
        tol = RECESSION_RTOL * float(np.max(np.abs(moved), initial=0.0))
        row_class = self._row_classes()[self.w > 0]
        moved = moved[self.w > 0]
        return bool(tol > 0 and np.all(moved[row_class == 0] >= -tol) and np.all(moved[row_class == 1] <= tol)
                    and np.all(np.abs(moved[row_class == 2]) <= tol))

    def _row_classes(self) -> np.ndarray:
        """0: the row's eta may go to +inf only, 1: to -inf only, 2: neither (see
        :meth:`univariable_separation`)."""
        if self.family == glm_kernels.LOGISTIC:
            return np.where(self.y > 0, 0, 1)
        if self.family == glm_kernels.POISSON:
            return np.where(self.y > 0, 2, 1)
        return np.full(self.n_rows, 2)

    def separation_pattern(self, name, direction):
        if self.family == glm_kernels.LOGISTIC:
            order = ">=" if direction > 0 else "<="
            return f"{name!r} separates the outcome: every row with y = 1 has {name} {order} every row with y = 0"
        extreme = "largest" if direction > 0 else "smallest"
        return f"every event occurs at the {extreme} value of {name!r}"


class _GLM(Model):
    family: int
    required: str = "y"

    def __init__(self, intercept: bool = True):
        self.intercept = check.flag("intercept", intercept)

    def options(self):
        return {"intercept": self.intercept}

    @classmethod
    def from_spec(cls, spec):
        return cls(intercept=spec.get("intercept", True))

    def coef_names(self, data: Dataset):
        return (["intercept"] if self.intercept else []) + list(data.covariate_names)

    def unpenalized_names(self):
        return ["intercept"] if self.intercept else []

    def datafit(self, data: Dataset) -> GLMDatafit:
        return require_information(self.shard_datafit(data), self.name)

    def shard_datafit(self, data: Dataset) -> GLMDatafit:
        data.require("y", model=self.name)
        self.validate_response(data.y, data.row_ids)
        return GLMDatafit(self.family, data.X, data.y, data.weights, data.offset, intercept=self.intercept)

    def validate_response(self, y, row_ids):
        """Raise InputError for responses outside the family's support."""

    def predict(self, fit, data, kind="link"):
        eta = fit.linear_predictor(data)
        if kind == "link":
            return eta
        if kind in (self.mean_kind, "response"):  # R's predict.glm(type = "response"): the mean
            return self.mean(eta)
        refuse_kind(self.name, kind, list(dict.fromkeys(["link", "response", self.mean_kind])))


class LogisticRegression(_GLM):
    """Logistic regression: P(y = 1) = 1 / (1 + exp(-eta)).

    Examples
    --------
    >>> import riskset, numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2)); y = (X[:, 0] + rng.normal(size=200) > 0).astype(float)
    >>> fit = riskset.fit(riskset.from_arrays(X, y=y), model="logistic")
    >>> bool(fit.converged), fit.coef.index.tolist()
    (True, ['intercept', 'x0', 'x1'])
    """

    name = "logistic"
    family = glm_kernels.LOGISTIC
    mean_kind = "probability"
    ratio_name = "odds_ratio"

    @staticmethod
    def mean(eta):
        return 1.0 / (1.0 + np.exp(-eta))

    def validate_response(self, y, row_ids):
        bad = (y != 0) & (y != 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"logistic regression needs y in {{0, 1}}; {row_label(row_ids, i)} has y = {y[i]}")


class PoissonRegression(_GLM):
    """Poisson regression of counts with log link; offset = log(exposure)."""

    name = "poisson"
    family = glm_kernels.POISSON
    mean_kind = "rate"
    ratio_name = "rate_ratio"

    @staticmethod
    def mean(eta):
        return np.exp(eta)

    def validate_response(self, y, row_ids):
        bad = y < 0
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"Poisson counts must be >= 0; {row_label(row_ids, i)} has y = {y[i]}")


class LeastSquares(_GLM):
    """Least squares (Gaussian, unit variance): loglik = -RSS / 2."""

    name = "least_squares"
    family = glm_kernels.GAUSSIAN
    mean_kind = "response"

    @staticmethod
    def mean(eta):
        return eta
