"""The device datafit: the solver's :class:`~riskset.models.base.Datafit` interface on a GPU.

A :class:`DeviceDatafit` wraps a prepared CPU datafit, copies X (CSC) and every
per-row array to the device once, and keeps the fit state there. It always holds
``R`` replicates (row weightings of one X; ``R = 1`` for an ordinary fit): state
arrays are (R, N) on the device and every kernel launches one block per replicate.

Family subclasses implement four device operations:

* ``_sweep(state, coords, mask, beta, l1, l2, radius, mode, fixed, out)``: one launch
  of the persistent sweep kernel (all coordinates of a CCD cycle, steps computed on
  the device; ``mode`` 1 reports (g, h) of one coordinate, ``mode`` 2 applies a given
  step);
* ``_refresh(state)``: exact recomputation of the per-row state from eta;
* ``_loglik_all(state)``: the log-likelihood of every replicate (device reduction);
* ``_host_state(state, r)`` / ``_cpu_view(r)``: a CPU state and datafit for the
  rarely called ``gradient``, ``hessian`` and ``diagnose`` (copied to the host).
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from riskset.models.base import Datafit, FitState

from .device import state_dtype, threads_per_block


class DeviceState(FitState):
    """State of R replicates on the device (``d`` holds the device arrays)."""

    def __init__(self, eta_dev, beta):
        self.d = {"eta": eta_dev}
        self.n_rep = beta.shape[0]
        self.beta = beta  # (R, P) host copy of the coefficients the state is at

    @property
    def eta(self):
        """Linear predictor of replicate 0 on the host (copied)."""
        return self.d["eta"].copy_to_host()[0].astype(np.float64)


class DeviceDatafit(Datafit):
    """Base of the device datafits; see the module docstring."""

    family_name = "?"

    def __init__(self, cpu: Datafit, dtype="float64", weights: np.ndarray | None = None):
        # Datafit.__init__ is not called: X and the static arrays are the CPU datafit's.
        self.cpu = cpu
        self.names = cpu.names
        self.dtype = state_dtype(dtype)
        self.nt = threads_per_block()
        self.X, self.offset = cpu.X, cpu.offset
        self.indptr, self.indices, self.values = cpu.indptr, cpu.indices, cpu.values
        self.itype = np.int32 if self.n_rows < 2**31 - 1 else np.int64
        self._static = None
        self.weights = None if weights is None else np.atleast_2d(np.asarray(weights, dtype=np.float64))
        self.n_rep = 1 if self.weights is None else self.weights.shape[0]
        self._ones_mask = None
        self._per_rep = None  # weight-dependent device arrays, built lazily

    @property
    def n_coef(self) -> int:
        return self.cpu.n_coef

    def __getattr__(self, name):
        # anything family-specific that is not on the device (e.g. Cox ``order``, ``rs``)
        if name == "cpu" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.cpu, name)

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
        view._ones_mask = None
        view._per_rep = None
        view.__dict__.pop("_dummy_arrays", None)
        view.__dict__.pop("_mode_placeholders", None)
        view.__dict__.pop('_cpu_views', None)
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
        if np.all(beta == beta[0]):  # e.g. every replicate starting at zero: one product
            eta = np.broadcast_to(self.cpu.linear_predictor(beta[0].copy()), (beta.shape[0], self.n_rows))
        else:
            eta = np.stack([self.cpu.linear_predictor(b) for b in beta])
        state = DeviceState(cuda.to_device(np.ascontiguousarray(eta, dtype=np.float64)), beta.copy())
        self._allocate(state)
        self._refresh(state)
        return state

    def loglik(self, state):
        return float(self._loglik_all(state)[0])

    def cycle(self, state, coords, beta, l1, l2, radius):
        p = self.n_coef
        coords = np.ascontiguousarray(coords, dtype=np.int64)
        if coords.size == 0:
            return
        if self._ones_mask is None:
            self._ones_mask = cuda.to_device(np.ones((1, p), np.uint8))
        b = cuda.to_device(np.ascontiguousarray(beta, dtype=np.float64).reshape(1, p))
        rad = cuda.to_device(np.ascontiguousarray(radius, dtype=np.float64).reshape(1, p))
        self._sweep(state, cuda.to_device(coords), self._ones_mask, b,
                    cuda.to_device(np.ascontiguousarray(l1, dtype=np.float64).reshape(1, p)),
                    cuda.to_device(np.ascontiguousarray(l2, dtype=np.float64).reshape(1, p)), rad, 0, None, None)
        beta[:] = b.copy_to_host()[0]
        radius[:] = rad.copy_to_host()[0]
        state.beta[0] = beta

    def coordinate(self, state, j):
        out = cuda.to_device(np.zeros((self.n_rep, 2)))
        self._sweep(state, cuda.to_device(np.array([j], np.int64)), *self._dummy(), 1, None, out)
        g, h = out.copy_to_host()[0]
        return float(g), float(h)

    def move(self, state, j, delta):
        fixed = cuda.to_device(np.full(self.n_rep, float(delta)))
        self._sweep(state, cuda.to_device(np.array([j], np.int64)), *self._dummy(), 2, fixed, None)
        state.beta[:, j] += delta

    def _dummy(self):
        """mask, beta, l1, l2, radius for the single-coordinate modes (never written there)."""
        cached = self.__dict__.get("_dummy_arrays")
        if cached is None or cached[0].shape[0] != self.n_rep:
            r, p = self.n_rep, self.n_coef
            z = cuda.to_device(np.zeros((r, p)))
            cached = (cuda.to_device(np.ones((r, p), np.uint8)), z, z, z, cuda.to_device(np.ones((r, p))))
            self.__dict__["_dummy_arrays"] = cached
        return cached

    def _mode_arrays(self, fixed, out):
        """``fixed`` and ``out`` of the sweep kernels, with cached zero placeholders for the
        ones a mode does not use (mode 0 reads neither; modes 1 and 2 pass their own)."""
        cached = self.__dict__.get("_mode_placeholders")
        if cached is None or cached[0].shape[0] != self.n_rep:
            cached = (cuda.to_device(np.zeros(self.n_rep)), cuda.to_device(np.zeros((self.n_rep, 2))))
            self.__dict__["_mode_placeholders"] = cached
        return (cached[0] if fixed is None else fixed), (cached[1] if out is None else out)

    def gradient(self, state):
        return self._cpu_view(0).gradient(self._host_state(state, 0))

    def hessian(self, state, columns):
        return self._cpu_view(0).hessian(self._host_state(state, 0), columns)

    # the separation test's host-side questions (riskset.solver.separation): the CPU datafit's answers
    def reach(self, direction):
        return self.cpu.reach(direction)

    def univariable_separation(self, columns):
        return self.cpu.univariable_separation(columns)

    @property
    def exact_separability(self):
        return self.cpu.exact_separability

    def separation_pattern(self, name, direction):
        return self.cpu.separation_pattern(name, direction)

    def information_scale(self, state, columns):
        return self._cpu_view(0).information_scale(self._host_state(state, 0), columns)

    def diagnose(self, state, beta):
        return self._cpu_view(0).diagnose(self._host_state(state, 0), beta)

    # -- helpers for replicates ---------------------------------------------------------
    def _cpu_view(self, r):
        """CPU datafit with the weights of replicate r (host fallbacks, polishing)."""
        if self.weights is None:
            return self.cpu
        cache = self.__dict__.setdefault("_cpu_views", {})
        if r not in cache:
            cache[r] = self._cpu_reweight(self.weights[r])
            if cache[r] is None:
                raise NotImplementedError(f"{self.family_name}: cannot reweight the CPU datafit")
        return cache[r]

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

    def _sweep(self, state, coords, mask, beta, l1, l2, radius, mode, fixed, out):  # pragma: no cover
        raise NotImplementedError

    def _cpu_reweight(self, w):  # pragma: no cover
        raise NotImplementedError
