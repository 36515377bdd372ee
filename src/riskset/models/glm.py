"""Generalized linear models with independent rows: logistic, Poisson, least squares.

Log-likelihoods (weights w_i, linear predictor eta_i = x_i beta + offset_i):

- logistic: sum w (y eta - log(1 + e^eta)), y in {0, 1}
- Poisson:  sum w (y eta - e^eta - log y!), y >= 0 counts; offset = log exposure
- least squares: -1/2 sum w (y - eta)^2 (Gaussian with unit variance)
"""
from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp

from riskset.data.dataset import Dataset, row_label
from riskset.exceptions import InputError
from riskset.kernels.cpu import glm as kernels
from riskset.models.base import (Datafit, FitState, LocalQuadratic, Model, indicator_columns, no_weight,
                                 require_information, sparse_product)

# |linear predictor| beyond which a fitted mean is 0 or 1 to double precision.
_SEPARATION_ETA = 25.0


class GLMDatafit(Datafit):
    """Datafit of a GLM family with canonical link (kernels in ``kernels.cpu.glm``).

    With ``intercept=True`` coefficient 0 is an implicit column of ones, so the
    user's X is used as is (no copy of the non-zeros); coefficient j >= 1 is column
    j - 1 of X.
    """

    def __init__(self, family: int, X, y, weights=None, offset=None, intercept: bool = False):
        super().__init__(X, offset)
        self.family = family
        self.first = int(intercept)
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.w = np.ones(self.n_rows) if weights is None else np.ascontiguousarray(weights, dtype=np.float64)
        self.indicator = indicator_columns(self.indptr, self.values)

    @property
    def n_coef(self):
        return self.X.shape[1] + self.first

    def linear_predictor(self, beta):
        eta = sparse_product(self.X, beta[self.first:]) + self.offset
        return eta + beta[0] if self.first else eta

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
        rows = np.empty((self.n_rows, kernels.N_FIELDS))
        rows[:, kernels.ETA] = self.linear_predictor(beta)
        rows[:, kernels.Y] = self.y
        rows[:, kernels.W] = self.w
        kernels.refresh_rows(self.family, rows)
        state = FitState(rows[:, kernels.ETA])
        state.rows = rows
        return state

    def loglik(self, state):
        return kernels.loglik(self.family, state.rows)

    def coordinate(self, state, j):
        return kernels.coordinate(self.indptr, self.indices, self.values, j - self.first, state.rows)

    def move(self, state, j, delta):
        kernels.move(self.family, self.indptr, self.indices, self.values, self.indicator, j - self.first, delta,
                     state.rows)

    def cycle(self, state, coords, beta, l1, l2, radius):
        kernels.cycle(self.family, self.first, self.indptr, self.indices, self.values, self.indicator, coords, beta,
                      l1, l2, radius, state.rows)

    def gradient(self, state):
        resid = np.ascontiguousarray(state.rows[:, kernels.RESID])
        grad = self.X.T @ resid
        return np.r_[resid.sum(), grad] if self.first else grad

    def design_columns(self, columns) -> sp.csc_matrix:
        """Columns of the full design (the intercept as ones) as a sparse matrix."""
        cols = [sp.csc_matrix(np.ones((self.n_rows, 1))) if j < self.first else self.X[:, [j - self.first]]
                for j in columns]
        return sp.hstack(cols, format="csc") if cols else sp.csc_matrix((self.n_rows, 0))

    def hessian(self, state, columns):
        Xc = self.design_columns(columns)
        return -np.asarray((Xc.T @ sp.diags(state.rows[:, kernels.CURV]) @ Xc).todense())

    def local_quadratic(self, state, columns):
        """Gradient, exact diagonal and ``b -> H b`` on ``columns`` (O(nnz) per product)."""
        Xc = self.design_columns(columns)
        curv = np.ascontiguousarray(state.rows[:, kernels.CURV])
        grad = Xc.T @ np.ascontiguousarray(state.rows[:, kernels.RESID])
        return LocalQuadratic(grad, Xc.multiply(Xc).T @ curv, lambda b: -(Xc.T @ (curv * (Xc @ b))))

    def diagnose(self, state, beta):
        """Report separation: fitted means of exactly 0 or 1 with diverging coefficients."""
        if self.family == kernels.GAUSSIAN:
            return None
        if self.family == kernels.POISSON:
            extreme = state.eta < -_SEPARATION_ETA
        else:
            extreme = np.abs(state.eta) > _SEPARATION_ETA
        if not np.any(extreme & (self.w > 0)):
            return None
        scale = abs(self.X).max(axis=0).toarray().ravel()
        worst = int(np.argmax(np.abs(beta) * np.r_[np.ones(self.first), scale]))
        what = "0 or 1" if self.family == kernels.LOGISTIC else "0"
        return (f"did not converge: fitted means of {what} at {int(extreme.sum())} row(s) "
                f"(|linear predictor| > {_SEPARATION_ETA:g}); coefficient {self.coef_label(worst)!r} is diverging "
                f"({beta[worst]:.3g}). A covariate separates the outcome (perfect prediction): "
                "add a prior (penalty) or remove the covariate")


class _GLM(Model):
    family: int
    required: str = "y"

    def __init__(self, intercept: bool = True):
        self.intercept = bool(intercept)

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
        data.require("y", model=self.name)
        self.validate_response(data.y, data.row_ids)
        return require_information(GLMDatafit(self.family, data.X, data.y, data.weights, data.offset,
                                              intercept=self.intercept), self.name)

    def validate_response(self, y, row_ids):
        """Raise InputError for responses outside the family's support."""

    def predict(self, fit, data, kind="link"):
        eta = fit.linear_predictor(data)
        if kind == "link":
            return eta
        if kind == self.mean_kind:
            return self.mean(eta)
        raise InputError(f"kind: {self.name} predictions are 'link' or {self.mean_kind!r}, not {kind!r}")


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
    family = kernels.LOGISTIC
    mean_kind = "probability"

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
    family = kernels.POISSON
    mean_kind = "rate"

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
    family = kernels.GAUSSIAN
    mean_kind = "response"

    @staticmethod
    def mean(eta):
        return eta
