"""The device datafit: the solver's :class:`~riskset.core.interface.Datafit` interface on a GPU.

A :class:`DeviceDatafit` wraps a prepared CPU datafit, copies X (CSC, its ``design``) and
every per-row array (the named fields of its device record,
:meth:`~riskset.core.interface.RunsOnDevice.device_record`) to the device once, and keeps the
fit state there. It always holds
``R`` replicates (row weightings of one X; ``R = 1`` for an ordinary fit): state
arrays are (R, N) on the device and every kernel launches one block per replicate,
except a single fit of a family with a whole-grid sweep (``sweep_grid_kernel``: GLMs,
right-censored Cox, Fine-Gray), whose kernels run cooperatively over one block per
multiprocessor.

``sweep``, ``coordinate`` and ``move`` are launches of the family's persistent sweep
kernel (:mod:`.sweep`: modes 0, 1 and 2), ``gradient`` of its gradient kernel, written
here once; a family subclass supplies

* ``sweep_kernel`` (and ``sweep_grid_kernel``), ``gradient_kernel`` and
  ``kernel_data()``: its specializations of the sweep and the gradient and the tuple of
  static device arrays they read; ``state_fields``: the names of the state arrays they
  take (``state.kernel``);
* ``_make_static()``, ``_allocate(state)``: the device arrays;
* ``_refresh(state)``: exact recomputation of the per-row state from eta;
* ``_loglik_all(state)``: the log-likelihood of every replicate (device reduction);
* ``_cpu_reweight(w)``: the CPU datafit of one weighting, for ``hessian``,
  ``local_quadratic`` and ``diagnose`` (on a CPU state rebuilt from the coefficients),
  and the gradient of a float32 state.

Every other method of the interface is explicit here: questions about the data (names,
reach, separation, missing information) are the CPU datafit's.
"""
from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from riskset.core.interface import Datafit, FitState, Reweightable

from .device import device_copy, grid_blocks, simulator_enabled, state_dtype, threads_per_block


class DeviceState(FitState):
    """State of R replicates on the device: ``d`` holds the device arrays by name and
    ``kernel`` the tuple of them the family's sweep reads and writes (the same arrays)."""

    def __init__(self, eta_dev, beta):
        self.d = {"eta": eta_dev}
        self.n_rep = beta.shape[0]
        self.beta = beta  # (R, P) host copy of the coefficients the state is at

    @property
    def eta(self):
        """Linear predictor of replicate 0 on the host (copied)."""
        return self.d["eta"].copy_to_host()[0].astype(np.float64)


class Spare(NamedTuple):
    """Device arguments of the sweep kernel that a launch does not use: an all-on coordinate
    mask and zero coefficients (also the radius) and prior for the single-coordinate modes,
    the step ``fixed`` and the report ``out`` of the modes that do not read or write them,
    the grid partials of the one-block driver."""

    mask: object
    beta: object
    prior: object
    fixed: object
    out: object
    partial: object


class DeviceDatafit(Datafit, Reweightable):
    """Base of the device datafits; see the module docstring."""

    family_name = "?"
    #: the family's persistent sweep kernel (:func:`riskset.kernels.gpu.sweep.compile_sweep`)
    sweep_kernel = None
    #: its full gradient (:func:`riskset.kernels.gpu.sweep.compile_gradient`)
    gradient_kernel = None
    #: names in ``state.d`` of the state arrays the sweep kernel takes, in its order
    state_fields: tuple = ()
    #: the family's sweep of a single fit (R = 1) over the whole grid (cooperative launch), if any
    sweep_grid_kernel = None
    #: False once a cooperative launch failed in this process: single fits then sweep in one block
    single_fit_grid = True
    #: whether the family computes ``local_quadratic`` on the device (:meth:`_polish_on_device`)
    device_quadratic = False

    @property
    def helper_threads(self) -> int:
        """Threads per block of the helper kernels (per-column dots and scatters, per-row
        scalings): the sweep's, at most 256 (4 in the simulator, where every thread is a
        Python thread)."""
        return min(self.nt, 256)

    def __init__(self, cpu: Datafit, dtype="float64", weights: np.ndarray | None = None):
        # Datafit.__init__ is not called: the design and the static arrays are the CPU datafit's
        # (the device holds a value per non-zero: Datafit.design.full_values).
        self.cpu = cpu
        self.names = cpu.names
        self.dtype = state_dtype(dtype)
        self.nt = threads_per_block()
        self.design, self.offset = cpu.design, cpu.offset
        self.itype = np.int32 if self.n_rows < 2**31 - 1 else np.int64
        self._static = None
        self.weights = None if weights is None else np.atleast_2d(np.asarray(weights, dtype=np.float64))
        self.n_rep = 1 if self.weights is None else self.weights.shape[0]
        self._per_rep = None  # weight-dependent device arrays, built lazily
        self._cpu_views = {}
        self._spare_arrays = None
        self._partial = None

    @property
    def n_coef(self) -> int:
        return self.cpu.n_coef

    # -- static device arrays, shared by every view ----------------------------------
    def _dev_static(self):
        if self._static is None:
            self._static = self._make_static()
        return self._static

    def replicates(self, weights: np.ndarray) -> "DeviceDatafit":
        """A batch of R weightings (rows in the datafit's input order), sharing the device X."""
        view = type(self).__new__(type(self))
        view.__dict__.update(self.__dict__)
        view.weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        self._check_weights(view.weights)
        view.n_rep = view.weights.shape[0]
        view._static = self._dev_static()
        view._per_rep = None
        view._cpu_views = {}
        view._spare_arrays = None
        view._partial = None
        return view

    def _check_weights(self, weights):
        """Replicate weights are in Dataset row order: one per Dataset row the datafit reads."""
        n = self.cpu.data_weights().shape[0]
        if weights.shape[1] < n:
            raise ValueError(f"replicate weights have {weights.shape[1]} columns; the data set has at least {n} rows")

    def data_weights(self):
        """Case weights of replicate 0 (the one the solver interface fits) in Dataset row order."""
        return self.cpu.data_weights() if self.weights is None else self.weights[0].copy()

    def reweighted(self, weights):
        if self._cpu_reweight(np.asarray(weights, dtype=np.float64)) is None:
            return None
        return self.replicates(np.asarray(weights, dtype=np.float64)[None, :])

    # -- the solver interface (replicate 0) ----------------------------------------------
    def new_state(self, beta):
        beta = np.atleast_2d(np.asarray(beta, dtype=np.float64))
        if beta.shape[0] == 1 and self.n_rep > 1:
            beta = np.repeat(beta, self.n_rep, axis=0)
        if self._grid() and self.dtype == np.float64:
            eta = self._device_linear_predictor(beta[0])
        elif np.all(beta == beta[0]):  # e.g. every replicate starting at zero: one product
            eta = device_copy(np.broadcast_to(self.cpu.linear_predictor(beta[0].copy()), (beta.shape[0], self.n_rows)),
                              np.float64)
        else:
            eta = device_copy(np.stack([self.cpu.linear_predictor(b) for b in beta]), np.float64)
        state = DeviceState(eta, beta.copy())
        self._allocate(state)
        state.kernel = tuple(state.d[name] for name in self.state_fields)
        self._refresh(state)
        return state

    def _device_linear_predictor(self, beta):
        """(1, N) device array offset + X beta of a single fit, summed on the device (the device
        X's columns are the coefficients) from a device copy of the offset."""
        from numba import cuda

        from .columns import scatter_columns

        s = self._dev_static()
        if "offset" not in s:
            s["offset"] = device_copy(np.reshape(self.cpu.offset, (1, self.n_rows)), np.float64)
        eta = cuda.device_array((1, self.n_rows), dtype=np.float64)
        eta.copy_to_device(s["offset"])
        nz = np.flatnonzero(beta)
        if nz.size:
            scatter_columns[max(1, min(nz.size, 4096)), self.helper_threads](
                s["indptr"], s["indices"], s["values"], device_copy(nz), device_copy(beta[nz], np.float64), eta)
        return eta

    def loglik(self, state):
        return float(self._loglik_all(state)[0])

    def sweep(self, state, coords, beta, prior, radius):
        """One CCD sweep of replicate 0 over ``coords`` in one kernel launch, under the penalty
        table ``prior`` (P, 3); updates ``beta``, ``radius`` and the state in place."""
        coords = np.ascontiguousarray(coords, dtype=np.int64)
        if coords.size == 0:
            return
        p = self.n_coef
        beta_d = device_copy(np.reshape(beta, (1, p)), np.float64)
        radius_d = device_copy(np.reshape(radius, (1, p)), np.float64)
        prior_d = device_copy(np.reshape(prior, (1, p, 3)), np.float64)
        self.sweep_batch(state, device_copy(coords), self._spare().mask[:1], beta_d, prior_d, radius_d)
        beta[:] = beta_d.copy_to_host()[0]
        radius[:] = radius_d.copy_to_host()[0]
        state.beta[0] = beta

    def sweep_batch(self, state, coords, mask, beta, prior, radius):
        """Mode 0 of the sweep kernel on device arrays: replicate r sweeps ``coords`` where
        ``mask[r]`` is set, under ``prior[r]`` (R, P, 3)."""
        spare = self._spare()
        self._launch_sweep(state, coords, mask, beta, prior, radius, 0, spare.fixed, spare.out)

    def coordinate(self, state, j):
        spare = self._spare()
        out = device_copy(np.zeros((self.n_rep, 2)))
        self._launch_sweep(state, device_copy(np.array([j], np.int64)), spare.mask, spare.beta, spare.prior,
                           spare.beta, 1, spare.fixed, out)
        g, h = out.copy_to_host()[0]
        return float(g), float(h)

    def move(self, state, j, delta):
        spare = self._spare()
        fixed = device_copy(np.full(self.n_rep, float(delta)))
        self._launch_sweep(state, device_copy(np.array([j], np.int64)), spare.mask, spare.beta, spare.prior,
                           spare.beta, 2, fixed, spare.out)
        state.beta[:, j] += delta

    def _spare(self) -> "Spare":
        """Arguments of the sweep kernel that a launch does not use (never written there)."""
        if self._spare_arrays is None:
            r, p = self.n_rep, self.n_coef
            self._spare_arrays = Spare(device_copy(np.ones((r, p), np.uint8)), device_copy(np.zeros((r, p))),
                                       device_copy(np.zeros((r, p, 3))), device_copy(np.zeros(r)),
                                       device_copy(np.zeros((r, 2))), device_copy(np.zeros((2, 2, 1))))
        return self._spare_arrays

    def _launch_sweep(self, state, coords, mask, beta, prior, radius, mode, fixed, out):
        """One launch of the family's sweep kernel: over the whole grid for a single fit that
        can (:meth:`_grid`), else one block per replicate."""
        args = (self.kernel_data(), state.kernel, coords, mask, beta, prior, radius, mode, fixed, out)
        if not self._launch_grid(self.sweep_grid_kernel, *args, self._grid_partial()):
            self._launch(self.sweep_kernel, *args, self._spare().partial)

    def _launch(self, kernel, *args):
        kernel[self.n_rep, self.nt](*args)

    def _grid(self) -> bool:
        """Whether this datafit runs its single fit over the whole grid."""
        return self.n_rep == 1 and self.sweep_grid_kernel is not None and type(self).single_fit_grid

    def _grid_partial(self):
        """Block partial sums of the grid reductions (2 slots, 2 values, one per block)."""
        if self._grid() and self._partial is None:
            self._partial = device_copy(np.zeros((2, 2, grid_blocks(self.nt))))
        return self._partial

    def _launch_grid(self, kernel, *args) -> bool:
        """Launch a cooperative kernel over one block per multiprocessor if :meth:`_grid`;
        False where not, or where the device refuses the launch (with a warning; single fits
        then run in one block): e.g. no cooperative launch, or too many registers for the
        block size (tried again at 256 threads first)."""
        if not self._grid():
            return False
        sizes = [self.nt] + ([256] if self.nt > 256 and not simulator_enabled() else [])
        for nt in sizes:
            try:
                kernel[grid_blocks(nt), nt](*args)
                self.nt = nt
                return True
            except Exception as err:
                if simulator_enabled():
                    raise
                error = err
        warnings.warn(f"cooperative whole-grid kernel unavailable ({type(error).__name__}: {error}); "
                      "single fits run in one block", RuntimeWarning, stacklevel=3)
        type(self).single_fit_grid = False
        return False

    def gradient(self, state):
        return self.gradients(state, [0])[0]

    def gradients(self, state, rows=None) -> np.ndarray:
        """dl/dbeta of the replicates ``rows`` (all by default), (len(rows), P). A float64 state's
        on the device: its exact recomputation from eta, then one block per (coefficient,
        replicate) (the family's ``gradient_kernel``); a float32 state's on the host from the
        coefficients, in float64 (one in the state's precision could not show a KKT violation
        below about 1e-7)."""
        rows = list(range(self.n_rep) if rows is None else rows)
        if self.dtype != np.float64:
            return np.array([self._cpu_view(r).gradient(self._host_state(state, r)) for r in rows]).reshape(
                len(rows), self.n_coef)
        from numba import cuda

        self._refresh(state)
        out = cuda.device_array((self.n_rep, self.n_coef), dtype=np.float64)
        self.gradient_kernel[(self.n_coef, self.n_rep), self.helper_threads](self.kernel_data(), state.kernel, out)
        return out.copy_to_host()[rows]

    def hessian(self, state, columns):
        return self._cpu_view(0).hessian(self._host_state(state, 0), columns)

    def local_quadratic(self, state, columns):
        """The host's, from a CPU state rebuilt from the coefficients; families with
        :attr:`device_quadratic` compute it on the device where :meth:`_polish_on_device`."""
        return self._cpu_view(0).local_quadratic(self._host_state(state, 0), columns)

    def _polish_on_device(self) -> bool:
        """Whether this datafit's Newton polish runs on the device: a family with a device
        ``local_quadratic`` (:attr:`device_quadratic`), a single fit over the whole grid, float64."""
        return self.device_quadratic and self._grid() and self.dtype == np.float64

    def _column_dots(self, cols, v, out):
        """(x_j' v, (x_j ** 2)' v) for the columns j of the device array ``cols``, into the
        (len(cols), 2) device array ``out`` and back to the host (:func:`.columns.column_dots`)."""
        from .columns import column_dots

        s = self._dev_static()
        column_dots[max(1, min(cols.shape[0], 4096)), self.helper_threads](s["indptr"], s["indices"], s["values"], cols,
                                                                           v, out)
        return out.copy_to_host()

    def information_scale(self, state, columns):
        """The local quadratic's curvature (the CPU families' scale: GLMs define it so, Cox
        by the default) on the device where the polish runs there, else the host's."""
        if self._polish_on_device():
            return self.local_quadratic(state, columns).curvature
        return self._cpu_view(0).information_scale(self._host_state(state, 0), columns)

    def diagnose(self, state, beta):
        return self._cpu_view(0).diagnose(self._host_state(state, 0), beta)

    # -- host-side questions about the data: the CPU datafit's answers --------------------------
    def coef_of_column(self, j):
        return self.cpu.coef_of_column(j)

    def linear_predictor(self, beta):
        return self.cpu.linear_predictor(beta)

    def reach(self, direction):
        return self.cpu.reach(direction)

    def univariable_separation(self, columns):
        return self.cpu.univariable_separation(columns)

    def separation_pattern(self, name, direction):
        return self.cpu.separation_pattern(name, direction)

    def missing_information(self):
        return self._cpu_view(0).missing_information()

    # -- helpers for replicates ---------------------------------------------------------
    def _cpu_view(self, r):
        """CPU datafit with the weights of replicate r (host fallbacks, polishing)."""
        if self.weights is None:
            return self.cpu
        if r not in self._cpu_views:
            self._cpu_views[r] = self._cpu_reweight(self.weights[r])
            if self._cpu_views[r] is None:
                raise NotImplementedError(f"{self.family_name}: cannot reweight the CPU datafit")
        return self._cpu_views[r]

    def host_eta(self, state) -> np.ndarray:
        """(R, N) linear predictors, float64, on the host."""
        return state.d["eta"].copy_to_host().astype(np.float64)

    def _host_state(self, state, r):
        """A CPU state of replicate r (rebuilt exactly from its coefficients)."""
        return self._cpu_view(r).new_state(state.beta[r].copy())

    # -- family hooks ----------------------------------------------------------------------
    def _make_static(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _allocate(self, state):  # pragma: no cover
        raise NotImplementedError

    def _refresh(self, state):  # pragma: no cover
        raise NotImplementedError

    def _loglik_all(self, state) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _cpu_reweight(self, w):  # pragma: no cover
        raise NotImplementedError
