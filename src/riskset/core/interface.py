"""The interface between likelihoods and the solver: :class:`Datafit` and its state.

A *datafit* is one log-likelihood family bound to one prepared data set (rows in the
order the family needs, e.g. Cox rows sorted by stratum and descending time). The
solver, selection, inference and results talk to a datafit only through the methods
declared here; every loop over rows lives in a compiled kernel behind them. A family's
CPU kernels are the four functions of the compiled contract
(:mod:`riskset.core.sweep`), over a named record of static arrays (:meth:`Datafit.kernel_data`)
and one of state arrays (``FitState.kernel``), both declared in the family's kernel module;
``coordinate``, ``move`` and ``sweep`` are written once here on top of them. A device datafit
(:mod:`riskset.kernels.gpu.base`) implements the same methods with device kernels.

The contract is a required core (:class:`Datafit`: state, log-likelihood, gradient,
Hessian block and local quadratic, the compiled kernels, case weights) and named
capabilities a family declares by inheriting them, which the callers test with
``isinstance``: :class:`Reweightable` (replicates as views of one prepared datafit),
:class:`SlopeRows` (screened KKT checks), :class:`ClosedFormStart` (the restricted start),
:class:`ExactSeparation` (a direct test of monotone likelihood) and :class:`RunsOnDevice`
(GPU kernels).

Sign convention everywhere: ``l`` is the log-likelihood, which is *maximized*;
``gradient = dl/dbeta`` and ``hessian = d2l/dbeta2`` (negative semi-definite).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np
import scipy.sparse as sp

from riskset.core.products.column_products import ColumnProducts
from riskset.core.design import CompactCSC, canonical_csc, take_rows
from riskset.core.step import CENTER, L1
from riskset.core.sweep import CompiledFamily

#: Fewest rows at which :meth:`Datafit.sweep` screens resting coordinates by a gradient: below,
#: the state a sweep reads at random fits the cache and a resting coordinate costs about its
#: slope (docs/performance.md, "Measurements behind the code's constants and paths") ...
SCREENED_SWEEP_ROWS = 2**18
#: ... and fewest resting coordinates in the sweep.
SCREENED_SWEEP_MIN = 64


@dataclass
class LocalQuadratic:
    """Second-order model of the log-likelihood on a set of columns A at one state.

    gradient : dl/dbeta_A.
    curvature : positive diagonal scale of -H_AA (a Jacobi preconditioner; it may bound
        the exact diagonal from above).
    hessian_times : ``b -> H_AA b`` in O(nnz of the columns (+ N)) per product.
    intercept, coupling : where A holds a coordinate coupled to every other (a GLM's
        intercept beside uncentred covariates), its position in A and its column of -H_AA:
        the Newton step's preconditioner then centres the others on it
        (:func:`riskset.solver.newton.newton_step`).
    """

    gradient: np.ndarray
    curvature: np.ndarray
    hessian_times: Callable[[np.ndarray], np.ndarray]
    intercept: int | None = None
    coupling: np.ndarray | None = None


class FitState:
    """Mutable state of one fit: the linear predictor and family-specific arrays.

    ``eta`` holds X @ beta (+ offset) in the datafit's row order. Families add their
    own arrays (exp(eta), risk-set sums ...) as attributes, and ``kernel``: the named record
    of the state arrays their compiled kernels read and write (the same arrays).

    ``synced``: the family's exact recomputation of those arrays from ``eta`` (which its
    log-likelihood, gradient and Hessian start from) is current: set by the family, cleared
    by every :meth:`Datafit.move` and :meth:`Datafit.sweep`, so that a state is recomputed
    once between moves, not once per question (a polish trial asks three); ``loglik``, the
    log-likelihood of the synced arrays once asked (None until then; a fit's end asks again
    for the last trial's).
    """

    kernel: tuple = ()  # the family's state record (a NamedTuple)
    synced: bool = False
    loglik: float | None = None

    def __init__(self, eta: np.ndarray):
        self.eta = eta


class Likelihood(ABC):
    """What the Newton solvers need of a log-likelihood over coefficients: a state at
    ``beta``, its value, gradient, Hessian block and matrix-free local quadratic, and the
    reach of a direction. :class:`Datafit` (one prepared data set, with compiled coordinate
    kernels) is one; :class:`riskset.sharded.ShardedDatafit` (rows on many workers, each
    question a reduction) is another, fitted by the outer Newton loop of
    :mod:`riskset.solver.proximal_newton` alone.
    """

    #: Coefficient names, set by the caller that builds the likelihood (for messages).
    names: list[str] | None = None

    @property
    @abstractmethod
    def n_coef(self) -> int:
        """The number of coefficients."""

    def coef_label(self, j: int) -> str:
        return self.names[j] if self.names is not None else f"#{j}"

    @abstractmethod
    def new_state(self, beta: np.ndarray) -> FitState:
        """State at coefficients ``beta`` (all aggregates computed)."""

    @abstractmethod
    def loglik(self, state: FitState) -> float:
        """Log-likelihood at the state."""

    @abstractmethod
    def gradient(self, state: FitState) -> np.ndarray:
        """Full gradient dl/dbeta, shape (n_coef,)."""

    def slopes(self, state: FitState, coefs: np.ndarray) -> np.ndarray:
        """dl/dbeta of the coefficients ``coefs`` alone (here from the full gradient; a family
        whose gradient is a product of the columns with a row vector reads only theirs)."""
        return self.gradient(state)[coefs]

    @abstractmethod
    def hessian(self, state: FitState, columns: np.ndarray) -> np.ndarray:
        """Dense block d2l/dbeta_a dbeta_b for a, b in ``columns`` (a small set)."""

    @property
    @abstractmethod
    def hessian_rank(self) -> int:
        """An upper bound on the rank of the log-likelihood's Hessian, whatever the
        coefficients: more active coordinates without a quadratic penalty than this make the
        Newton block singular (the solver then leaves them to coordinate steps)."""

    def hessian_work(self, columns: np.ndarray) -> float:
        """The work of forming :meth:`hessian` on ``columns`` (stored non-zeros visited): the
        solver forms the block for a Newton step only up to
        :data:`~riskset.solver.newton.DENSE_WORK_MAX`, beyond which conjugate gradients on
        Hessian-vector products cost less. None counted by default: a Gram block costs
        about a product of the columns' rows (the GLMs; the risk-set families override)."""
        return 0.0

    @abstractmethod
    def local_quadratic(self, state: FitState, columns: np.ndarray) -> "LocalQuadratic | None":
        """The log-likelihood's gradient and Hessian on ``columns`` without forming the
        Hessian (matrix-free Newton steps on large active sets), or ``None`` where the
        family has no such form for this data (the solver then forms :meth:`hessian`)."""

    def information_scale(self, state: FitState, columns: np.ndarray) -> np.ndarray:
        """Per column, a bound on the observed information I_jj computed without cancellation
        (e.g. sum w x^2 over the risk sets, before the squared risk-set mean is subtracted).
        An I_jj that is a rounding residue of this scale means the coefficient has no
        information (a covariate constant within every stratum); see
        :func:`riskset.inference.aliased_coefficients`. Default: the local quadratic's
        curvature, else the exact diagonal."""
        quad = self.local_quadratic(state, columns)
        return quad.curvature if quad is not None else -np.diag(self.hessian(state, columns))

    @abstractmethod
    def diagnose(self, state: FitState, beta: np.ndarray) -> str | None:
        """What is wrong with a state the solver reached (a non-finite linear predictor or
        family array), or None. The solver ends a fit with this message."""

    @abstractmethod
    def reach(self, direction: np.ndarray) -> float:
        """max_i |x_i direction|: how far a step ``direction`` moves the linear predictor of
        any row (the unit of the separation test, :mod:`riskset.solver.separation`)."""


class Datafit(Likelihood):
    """A log-likelihood over the rows of one prepared design matrix.

    Attributes
    ----------
    design : riskset.core.design.CompactCSC, shape (n_rows, n_coef)
        Design in model row order, canonical CSC (sorted indices, no duplicates), the
        values of its indicator columns not stored. Intercepts are explicit dense columns.
    offset : ndarray, shape (n_rows,)
        Fixed part of the linear predictor.
    """

    #: What a full CCD sweep costs, in gradients (passes over X): an order of magnitude
    #: (a GLM ~5; conditional strata ~10; a risk-set family ~30, its sums refreshed per moved
    #: coordinate). The solver opens a warm start near its
    #: optimum with a gradient and a Newton polish in place of a sweep where a sweep costs at
    #: least :data:`riskset.solver.entrants.OPENING_SWEEP_PASSES` (:func:`~riskset.solver.entrants.opening_entrants`).
    sweep_passes: ClassVar[float] = 5.0

    def __init__(self, X: sp.csc_matrix, offset: np.ndarray | None = None, rows: np.ndarray | None = None):
        """``X`` (any sparse or dense matrix) becomes :attr:`design`, canonical and compact; with
        ``rows`` (distinct rows of X, in the datafit's order) it is ``X[rows]``, built in O(nnz)
        (:mod:`riskset.core.design`). ``offset`` is in datafit row order."""
        X = canonical_csc(X)
        self.design = take_rows(X, rows) if rows is not None else CompactCSC.of(X)
        n = self.design.n_rows
        self.offset = np.zeros(n) if offset is None else np.ascontiguousarray(offset, dtype=np.float64)
        self.has_offset = bool(np.any(self.offset))  # else X beta is the linear predictor (no pass adding zeros)
        # products of column sets with vectors (its row-major copy is built on first use and
        # shared, like the design, by the reweighted views)
        self.products = ColumnProducts(self.design)

    # the design's arrays as the kernels read them: the value of non-zero k of column j is
    # values[k + value_shift[j]] (CompactCSC); indicator[j]: column j's values are all 1
    @property
    def indptr(self) -> np.ndarray:
        return self.design.indptr

    @property
    def indices(self) -> np.ndarray:
        return self.design.indices

    @property
    def values(self) -> np.ndarray:
        return self.design.values

    @property
    def value_shift(self) -> np.ndarray:
        return self.design.value_shift

    @property
    def indicator(self) -> np.ndarray:
        return self.design.unit

    @property
    def n_rows(self) -> int:
        return self.design.n_rows

    @property
    def n_coef(self) -> int:
        return self.design.n_cols

    def column(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Row indices and values of the non-zeros of column j."""
        return self.design.column(j)

    def coef_of_column(self, j: int) -> int:
        """The coefficient of column j of ``X`` (families with implicit columns, such as a
        GLM's intercept, shift it)."""
        return j

    def columns(self, coefs) -> np.ndarray:
        """The column of ``X`` of each coefficient, the inverse of :meth:`coef_of_column`
        (families with implicit columns shift it: a GLM's intercept is -1, the column of ones of
        :class:`~riskset.core.products.column_products.ColumnProducts`)."""
        return np.asarray(coefs, dtype=np.int64)

    def linear_predictor(self, beta: np.ndarray) -> np.ndarray:
        """X beta + offset, reading only the columns of non-zero coefficients (a product asked
        again is kept: :meth:`~riskset.core.products.column_products.ColumnProducts.times_recurring`)."""
        nz = np.flatnonzero(beta)
        eta = self.products.times_recurring(self.columns(nz), beta[nz])
        if self.has_offset:
            eta += self.offset
        return eta

    def reach(self, direction: np.ndarray) -> float:
        """max_i |x_i direction|: how far a step ``direction`` moves the linear predictor of
        any row (the unit of the separation test, :mod:`riskset.solver.separation`)."""
        moved = self.linear_predictor(direction) - self.linear_predictor(np.zeros_like(direction))
        return float(np.max(np.abs(moved), initial=0.0))

    # -- the solver interface -------------------------------------------------------
    #: The family's compiled kernels (:func:`riskset.core.sweep.compile_family`); a family
    #: with variants (Cox's O(N) scan formulation) sets it per instance.
    kernels: CompiledFamily

    @abstractmethod
    def kernel_data(self) -> tuple:
        """The named record of the static arrays the family's kernels read (built on each
        call: reweighted views share X but not their case weights); a device datafit's is the
        tuple of device arrays its sweep kernel takes, in the kernel's order (CUDA kernels
        take flat arguments)."""

    def loglik_at(self, beta: np.ndarray) -> float:
        """Log-likelihood at ``beta``, no state kept (a held-out score; a family may read only
        the rows of positive weight)."""
        return self.loglik(self.new_state(beta))

    def coordinate(self, state: FitState, j: int) -> tuple[float, float]:
        """(dl/dbeta_j, d2l/dbeta_j^2) at the state."""
        return self.kernels.coordinate(self.kernel_data(), state.kernel, j)

    def move(self, state: FitState, j: int, delta: float) -> None:
        """Apply beta_j += delta: update eta at the non-zeros of column j and any aggregate."""
        state.synced = False
        self.kernels.move(self.kernel_data(), state.kernel, j, delta)

    def sweep(self, state: FitState, coords: np.ndarray, beta: np.ndarray, prior: np.ndarray,
              radius: np.ndarray) -> None:
        """One CCD sweep over ``coords`` in order, in one compiled call (at scale, below, three):
        Newton steps under the penalty table ``prior`` (:class:`riskset.core.penalty.Penalty`),
        trust-region half-widths ``radius``; updates ``beta``, ``radius`` and the state in place.

        At scale (:data:`SCREENED_SWEEP_ROWS` rows or more), a sweep that moves some coordinates
        and meets at least :data:`SCREENED_SWEEP_MIN` resting ones (penalized, at their centers)
        screens those by their slopes (:meth:`slopes`): the others are swept first, then the
        resting ones whose slope there beats their L1 rate (each re-tested at its turn); a
        resting coordinate moves only if |g_j| > l1_j. The compiled sweep reads g_j down
        column j at scattered rows of the state, a cache miss per non-zero once the state
        outgrows the cache; a gradient streams X (several times cheaper). A resting
        coordinate screened out may come to move after an entrant before it: the KKT check finds
        it (its gradient reads every slope that no bound clears, :mod:`riskset.solver.screening`)."""
        coords = np.ascontiguousarray(coords, dtype=np.int64)
        resting = (prior[coords, L1] > 0) & (beta[coords] == prior[coords, CENTER])
        n_resting = int(np.count_nonzero(resting))
        if self.n_rows < SCREENED_SWEEP_ROWS or n_resting < SCREENED_SWEEP_MIN or n_resting == coords.size:
            self._compiled_sweep(state, coords, beta, prior, radius)
            return
        self._compiled_sweep(state, coords[~resting], beta, prior, radius)
        rest = coords[resting]
        slope = self.slopes(state, rest)
        self._compiled_sweep(state, rest[np.abs(slope) > prior[rest, L1]], beta, prior, radius)

    def _compiled_sweep(self, state: FitState, coords: np.ndarray, beta: np.ndarray, prior: np.ndarray,
                        radius: np.ndarray) -> None:
        """The one compiled call over ``coords`` (contiguous int64: :meth:`sweep` made them so)."""
        state.synced = False
        self.kernels.sweep(self.kernel_data(), state.kernel, coords, beta, prior, radius)

    @property
    def hessian_rank(self) -> int:
        """An upper bound on the rank of the log-likelihood's Hessian, whatever the
        coefficients: more active coordinates without a quadratic penalty than this make the
        Newton block singular (the solver then leaves them to coordinate steps). Here the rows
        (a GLM's curvature is a sum of one rank-one term per row); the risk-set families count
        the curvature of their risk sets."""
        return self.n_rows

    @abstractmethod
    def data_weights(self) -> np.ndarray:
        """This datafit's case weights in Dataset row order, as
        :meth:`Reweightable.reweighted` takes them (``reweighted(data_weights())`` is this
        datafit): one per Dataset row up to the last row the datafit reads, 0 for rows it left
        out (e.g. strata without events). The points of a profile likelihood on the GPU are
        replicates with these weights."""

    @staticmethod
    def scatter_to_data_rows(rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Weights of the datafit rows placed at their Dataset ``rows`` (0 at Dataset rows no
        datafit row comes from), up to the last Dataset row used.

        >>> Datafit.scatter_to_data_rows(np.array([2, 0, 2]), np.array([3.0, 1.0, 3.0])).tolist()
        [1.0, 0.0, 3.0]
        """
        out = np.zeros(int(np.max(rows, initial=-1)) + 1)
        out[rows] = weights
        return out

    def diagnose(self, state: FitState, beta: np.ndarray) -> str | None:
        """What is wrong with a state the solver reached (a non-finite linear predictor or
        family array), or None. The solver ends a fit with this message."""
        return None if np.all(np.isfinite(state.eta)) else "the linear predictor is not finite"

    def univariable_separation(self, columns: np.ndarray) -> np.ndarray:
        """Per coefficient of ``columns``: +1 (-1) if its likelihood alone, the others at 0,
        increases for ever as it goes to +inf (-inf): monotone likelihood, separation; 0 if not.

        Generic rule (every family): the profile g(b) = l(b e_j) is concave, so it increases
        for ever iff its slope g'(0) is positive and stays >= 0 far out, at |b| max|x_j| =
        :data:`SEPARABILITY_REACH`, where every row behind the leading value of its risk set
        has a relative weight below e^-REACH x (its gap). O(rows + nnz_j) per column (one
        state); families with a direct test (:class:`ExactSeparation`) override it. A covariate whose
        rows behind the leader are closer than ~1e-7 of its range may go unnoticed (0).
        """
        columns = np.asarray(columns, dtype=np.int64)
        zero = np.zeros(self.n_coef)
        at_zero = self.new_state(zero)
        out = np.zeros(columns.size, dtype=np.int64)
        for a, j in enumerate(columns):
            slope = self.coordinate(at_zero, j)[0]
            unit = zero.copy()
            unit[j] = 1.0
            reach = self.reach(unit)
            if not (reach > 0 and abs(slope) > 0 and np.isfinite(slope)):
                continue
            unit[j] = np.sign(slope) * SEPARABILITY_REACH / reach
            try:
                far = self.coordinate(self.new_state(unit), j)[0]
            except ArithmeticError:  # a risk sum that rounded to zero far out: no answer
                continue
            if np.isfinite(far) and np.sign(slope) * far >= -1e-7 * abs(slope):
                out[a] = int(np.sign(slope))
        return out

    def separation_pattern(self, name: str, direction: int) -> str:
        """What the data look like when coefficient ``name`` alone separates (for messages)."""
        extreme = "largest" if direction > 0 else "smallest"
        return f"every event has the {extreme} value of {name!r} in its risk set"

    @abstractmethod
    def missing_information(self) -> str | None:
        """Why the likelihood, with the datafit's case weights, carries no information about
        the coefficients (no row of positive weight, no event compared with another row ...),
        or None. Checked when a model builds its datafit (:func:`require_information`) and for
        every training set and draw of cross-validation and the bootstrap."""


# -- capabilities a family declares by inheriting them -----------------------------------------

class Reweightable(ABC):
    """New case weights without a new preparation: replicates of cross-validation and the
    bootstrap are reweighted views of one datafit (a family without it is prepared again
    for each replicate)."""

    @abstractmethod
    def reweighted(self, weights: np.ndarray) -> Datafit | None:
        """The same datafit with case weights ``weights`` (Dataset row order), sharing X and
        every static structure; weight 0 removes a row. None where these weights cannot be
        applied in place (a device batch whose CPU view cannot)."""


class SlopeRows(ABC):
    """Each slope is a product of its column with one row vector: the screened KKT checks of
    :mod:`riskset.solver.screening` bound how far a slope moved without reading its column."""

    @abstractmethod
    def slope_rows(self, state: FitState) -> tuple[np.ndarray, np.ndarray]:
        """(r, norms): dl/dbeta_j = a_j +- x_j' r with a_j the same at every state and
        ``norms[j]`` = ||x_j||_2 (x_j: coefficient j's column; r a copy where the state changes
        in place): between two states slope j moves by at most norms[j] ||r - r'||_2."""


class ClosedFormStart(ABC):
    """The log-likelihood's maximum over a set of coefficients, the others held, in closed
    form where it has one: the solver's restricted start (the unpenalized coefficients
    fitted, the penalized ones at their centers) begins there."""

    @abstractmethod
    def unpenalized_start(self, beta: np.ndarray, coefs: np.ndarray) -> np.ndarray | None:
        """``beta`` with the coefficients ``coefs`` at that maximum, or None where this set
        has no closed form."""


class ExactSeparation(ABC):
    """A direct test of monotone likelihood read from the data, where the generic reading of
    the slope far out (:meth:`Datafit.univariable_separation`) can be misled by rows of very
    large weight: only an exact answer may declare a divergence the ray test of
    :mod:`riskset.solver.separation` cannot resolve."""

    @abstractmethod
    def univariable_separation(self, columns: np.ndarray) -> np.ndarray:
        """As :meth:`Datafit.univariable_separation`, exactly."""

    @abstractmethod
    def recedes(self, direction: np.ndarray) -> bool:
        """Whether the log-likelihood never decreases along ``direction`` from any point (a
        direction of recession)."""


class RunsOnDevice:
    """The family has GPU kernels: ``device_datafit`` names its device datafit class
    ("module:Class", the module under :mod:`riskset.kernels.gpu`), imported only when a fit
    asks for the GPU backend (:func:`riskset.kernels.gpu.to_device`)."""

    device_datafit: ClassVar[str]

    def device_record(self) -> tuple:
        """The named record of what the device datafit copies to the device besides the design
        (:attr:`Datafit.design`): the kernels' record (:meth:`Datafit.kernel_data`) by default;
        a family whose device reads more declares a record of its own in its kernel module
        (e.g. :class:`riskset.kernels.cpu.cox_records.DeviceCox`). The device datafit reads its
        named fields and no other attribute of the CPU datafit."""
        return self.kernel_data()  # type: ignore[attr-defined]  # a RunsOnDevice is a Datafit


#: |b| max|x_j| at which :meth:`Datafit.univariable_separation` reads the slope far out.
SEPARABILITY_REACH = 50.0
