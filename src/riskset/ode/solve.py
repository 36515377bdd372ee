"""``solve_batch``: integrate one ODE model for many parameter sets at once."""

import math
import time
import warnings
from collections.abc import Mapping

import numpy as np

from . import bundling as _bundling
from . import dopri
from .models import get_model
from .result import BatchResult

EPS = np.finfo(float).eps
DEFAULT_CPU_CHUNK = 4096
DEFAULT_GPU_CHUNK = 1 << 18
DEFAULT_SIM_CHUNK = 64
MIN_TASKS_FOR_BUNDLING = 32


def _as_frame_like(x):
    """DataFrame or Mapping -> dict of 1-D arrays (column order kept)."""
    if hasattr(x, "columns") and hasattr(x, "__getitem__"):
        return {str(c): np.asarray(x[c]) for c in x.columns}, x
    if isinstance(x, Mapping):
        return {str(k): np.atleast_1d(np.asarray(v)) for k, v in x.items()}, x
    return None, x


def _to_float(a, what):
    try:
        return np.asarray(a, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be numeric: {exc}") from None


def parse_inputs(model, params, y0=None, set_ids=None):
    """Normalise ``params``/``y0`` to float arrays ``(n, n_p)``/``(n, n_s)``.

    ``params`` is an array ``(n_tasks, n_params)`` (columns in the model's
    parameter order; a 1-D array is one task) or a DataFrame / mapping with
    one column per parameter name; it may also hold the initial states (one
    column per state name) when ``y0`` is not given, and a ``set`` column of
    task labels. ``y0`` is ``(n_states,)`` (same for every task),
    ``(n_tasks, n_states)``, or a mapping / DataFrame by state name.
    """
    pn, sn = list(model.param_names), list(model.state_names)
    cols, original = _as_frame_like(params)
    index_labels = None
    if cols is not None:
        names = list(cols)
        missing = [c for c in pn if c not in cols]
        if missing:
            raise ValueError(
                f"missing parameter column(s) {missing} for model "
                f"{model.name!r}; expected parameters {pn}")
        state_cols = [c for c in names if c in sn]
        allowed = set(pn) | set(sn) | {"set"}
        unknown = [c for c in names if c not in allowed]
        if unknown:
            raise ValueError(
                f"unknown column(s) {unknown} in parameters for model "
                f"{model.name!r}; expected parameters {pn}"
                + (f", optionally initial states {sn}" if sn else "")
                + " and 'set'")
        lens = {len(v) for v in cols.values()}
        if len(lens) > 1:
            raise ValueError("parameter columns have different lengths")
        P = np.column_stack([_to_float(cols[c], f"parameter {c!r}")
                             for c in pn]) if pn else \
            np.zeros((lens.pop() if lens else 0, 0))
        if state_cols:
            if y0 is not None:
                raise ValueError(
                    f"initial states given twice: as columns {state_cols} "
                    "of params and as y0")
            miss_s = [c for c in sn if c not in cols]
            if miss_s:
                raise ValueError(
                    f"missing initial-state column(s) {miss_s}; expected "
                    f"states {sn}")
            y0 = np.column_stack([_to_float(cols[c], f"state {c!r}")
                                  for c in sn])
        if set_ids is None and "set" in cols:
            set_ids = np.asarray(cols["set"])
        if set_ids is None and hasattr(original, "index") and \
                not isinstance(original, Mapping):
            idx = np.asarray(original.index)
            if not (idx.dtype.kind in "iu" and np.array_equal(
                    idx, np.arange(len(idx)))):
                index_labels = idx
    else:
        P = _to_float(params, "params")
        if P.ndim == 1:
            P = P[None, :] if len(pn) > 0 or P.size == 0 else P[:, None]
        if P.ndim != 2:
            raise ValueError(
                f"params must be 2-D (n_tasks, n_params), got shape "
                f"{P.shape}")
        if P.shape[1] != len(pn):
            raise ValueError(
                f"model {model.name!r} takes {len(pn)} parameter(s) {pn}, "
                f"got {P.shape[1]} column(s)")
    n = P.shape[0]
    if y0 is None:
        raise ValueError(
            f"initial states are required: pass y0 or put columns {sn} in "
            "params")
    ycols, _ = _as_frame_like(y0)
    if ycols is not None:
        miss = [c for c in sn if c not in ycols]
        extra = [c for c in ycols if c not in sn]
        if miss or extra:
            raise ValueError(
                f"y0 columns must be the states {sn}; missing {miss}, "
                f"unknown {extra}")
        Y = np.column_stack([_to_float(ycols[c], f"state {c!r}")
                             for c in sn])
    else:
        Y = _to_float(y0, "y0")
    if Y.ndim == 1:
        if Y.shape[0] != len(sn):
            raise ValueError(
                f"model {model.name!r} has {len(sn)} state(s) {sn}, y0 has "
                f"{Y.shape[0]}")
        Y = np.broadcast_to(Y, (n, len(sn)))
    if Y.ndim != 2 or Y.shape[1] != len(sn):
        raise ValueError(
            f"model {model.name!r} has {len(sn)} state(s) {sn}; y0 has shape "
            f"{Y.shape}")
    if Y.shape[0] == 1 and n > 1:
        Y = np.broadcast_to(Y, (n, len(sn)))
    if Y.shape[0] != n:
        raise ValueError(
            f"y0 has {Y.shape[0]} rows but params has {n} tasks")
    if set_ids is None:
        set_ids = index_labels if index_labels is not None else np.arange(n)
    set_ids = np.asarray(set_ids)
    if set_ids.shape != (n,):
        raise ValueError(f"set_ids must have length {n}")
    # fresh, writeable, C-ordered copies: one compiled signature for all
    # inputs (numba specialises on read-only arrays, e.g. broadcast views)
    return (np.array(P, dtype=np.float64, order="C", copy=True),
            np.array(Y, dtype=np.float64, order="C", copy=True), set_ids)


def check_times(t_eval, t0=None):
    t = _to_float(t_eval, "t_eval")
    if t.ndim == 0:
        t = t[None]
    if t.ndim != 1 or t.size == 0:
        raise ValueError("t_eval must be a non-empty 1-D array of times")
    if not np.all(np.isfinite(t)):
        raise ValueError("t_eval must be finite")
    if t.size > 1 and not np.all(np.diff(t) > 0):
        bad = int(np.flatnonzero(np.diff(t) <= 0)[0])
        raise ValueError(
            "output times must be strictly increasing: "
            f"t_eval[{bad}] = {t[bad]!r} >= t_eval[{bad + 1}] = "
            f"{t[bad + 1]!r}")
    if t0 is None:
        t0 = float(t[0])
    t0 = float(t0)
    if not math.isfinite(t0):
        raise ValueError("t0 must be finite")
    if t0 > t[0]:
        raise ValueError(f"t0 = {t0} is after the first output time {t[0]}")
    return np.array(t, dtype=np.float64, order="C", copy=True), t0


def check_tolerances(rtol, atol, n_states):
    try:
        rtol = float(rtol)
    except (TypeError, ValueError):
        raise ValueError("rtol must be a positive number") from None
    if not (math.isfinite(rtol) and rtol > 0):
        raise ValueError(f"rtol must be > 0 and finite, got {rtol!r}")
    a = _to_float(atol, "atol")
    if a.ndim == 0:
        a = np.full(n_states, float(a))
    if a.shape != (n_states,):
        raise ValueError(
            f"atol must be a scalar or have one entry per state "
            f"({n_states}), got shape {a.shape}")
    if not (np.all(np.isfinite(a)) and np.all(a > 0)):
        raise ValueError(f"atol must be > 0 and finite, got {atol!r}")
    if rtol < 100 * EPS:
        warnings.warn(f"rtol={rtol} is too small; using {100 * EPS:.3g} "
                      "(as scipy does)", RuntimeWarning, stacklevel=3)
        rtol = 100 * EPS
    return rtol, np.array(a, dtype=np.float64, order="C", copy=True)


def _backend_module(backend):
    if backend == "cpu":
        from . import cpu
        return cpu
    if backend in ("gpu", "cuda"):
        from . import gpu
        gpu.check_available()
        return gpu
    raise ValueError(f"backend must be 'cpu' or 'gpu', got {backend!r}")


def solve_batch(model, params, y0=None, t_eval=None, *, t0=None, rtol=1e-6,
                atol=1e-6, backend="cpu", bundle=None, bundle_size=32,
                pilot_size=None, degree="auto", target="auto",
                max_steps=100_000,
                progress=True, chunk_size=None, seed=0, set_ids=None):
    """Integrate ``model`` for every parameter set with Dormand-Prince 5(4).

    Parameters
    ----------
    model : :class:`~riskset.ode.models.Model` or ``"seir"`` / ``"pk"``.
    params : array ``(n_tasks, n_params)`` or DataFrame/mapping with one
        column per parameter name (and optionally per state name and
        ``set``); see :func:`parse_inputs`.
    y0 : initial states, ``(n_states,)``, ``(n_tasks, n_states)`` or by name.
    t_eval : strictly increasing output times; the solution there comes from
        the dense output (steps are not shortened to hit them).
    t0 : start time (default ``t_eval[0]``).
    rtol, atol : tolerances (> 0; ``atol`` scalar or one per state), with
        the meaning of scipy's ``solve_ivp``.
    backend : ``"cpu"`` (numba ``prange`` over tasks, all cores) or ``"gpu"``
        (numba-CUDA, one task per thread; RuntimeError without a GPU unless
        ``NUMBA_ENABLE_CUDASIM=1``).
    bundle : sort tasks by a regression-predicted step count (default: on
        for the GPU, off for the CPU). Batches under 32 tasks are never
        bundled.
    bundle_size : tasks per bundle for the lockstep-efficiency diagnostics
        (a warp: 32).
    pilot_size : number of random pilot tasks used to fit the predictor
        (default 10%, 64..1000; at most half of the batch).
    degree : 1, 2 or "auto" -- polynomial degree of the step predictor in
        the log-features.
    target : "linear", "log" or "auto" -- regress the step count or its
        logarithm ("auto": chosen with degree by validation on the pilot).
    max_steps : maximum attempted (accepted + rejected) steps per task;
        tasks hitting it get status 1 (``max_steps``).
    progress : show a tqdm progress bar when the batch spans several chunks.
    chunk_size : tasks per parallel launch (progress granularity).
    seed : seed of the pilot subset.
    set_ids : labels of the tasks (default: a ``set`` column, a non-default
        DataFrame index, or ``0..n-1``).

    Returns
    -------
    :class:`~riskset.ode.result.BatchResult`, in the caller's task order.
    """
    start = time.perf_counter()
    model = get_model(model)
    if t_eval is None:
        raise ValueError("t_eval (output times) is required")
    t_eval, t0 = check_times(t_eval, t0)
    P, Y0, set_ids = parse_inputs(model, params, y0, set_ids)
    rtol, atol_v = check_tolerances(rtol, atol, model.n_states)
    if int(max_steps) < 1:
        raise ValueError("max_steps must be >= 1")
    max_steps = int(max_steps)
    backend = str(backend).lower()
    mod = _backend_module(backend)

    n = P.shape[0]
    nt = t_eval.shape[0]
    out = np.empty((n, nt, model.n_states))
    stats = np.zeros((n, dopri.N_STATS), dtype=np.int64)

    if bundle is None:
        bundle = backend != "cpu"
    bundle = bool(bundle) and n >= MIN_TASKS_FOR_BUNDLING

    if chunk_size is None:
        if backend == "cpu":
            chunk_size = max(DEFAULT_CPU_CHUNK, -(-n // 100))
        else:
            from . import gpu
            if gpu.simulator_enabled():
                chunk_size = DEFAULT_SIM_CHUNK
            else:
                # keep a launch's output buffer near 1 GB of device memory
                per_task = 8 * nt * model.n_states
                chunk_size = int(min(DEFAULT_GPU_CHUNK,
                                     max(4096, 2 ** 30 // per_task)))
    chunk_size = max(1, int(chunk_size))

    pbar = None
    if progress and n > chunk_size:
        from tqdm.auto import tqdm
        pbar = tqdm(total=n, unit="task", desc=f"ode {model.name} "
                    f"({backend})", leave=False)
    run_args = (model, P, Y0, t0, t_eval, rtol, atol_v, max_steps)
    info = None
    try:
        if bundle:
            rng = np.random.default_rng(seed)
            ps = (_bundling.default_pilot_size(n) if pilot_size is None
                  else int(pilot_size))
            ps = max(2, min(n // 2, ps))  # leave tasks to sort/evaluate
            pilot = rng.permutation(_bundling.choose_pilot(n, ps, rng))
            mod.run_tasks(*run_args, pilot, out, stats,
                          chunk_size=chunk_size, pbar=pbar)
            feats = _bundling.raw_features(P, Y0)
            steps = (stats[:, dopri.ST_ACCEPTED]
                     + stats[:, dopri.ST_REJECTED]).astype(float)
            ok = stats[pilot, dopri.ST_STATUS] != dopri.NONFINITE
            rest, info = _bundling.plan_order(feats, pilot, steps[pilot],
                                              degree, fit_mask=ok,
                                              target=target)
            mod.run_tasks(*run_args, rest, out, stats,
                          chunk_size=chunk_size, pbar=pbar)
        else:
            mod.run_tasks(*run_args, np.arange(n), out, stats,
                          chunk_size=chunk_size, pbar=pbar)
    finally:
        if pbar is not None:
            pbar.close()

    n_acc = stats[:, dopri.ST_ACCEPTED].copy()
    n_rej = stats[:, dopri.ST_REJECTED].copy()
    if info is not None:
        _bundling.finish_diagnostics(
            info, n_acc + n_rej, bundle_size,
            valid=stats[:, dopri.ST_STATUS] != dopri.NONFINITE)
    return BatchResult(
        t=t_eval, states=out, status=stats[:, dopri.ST_STATUS].astype(np.int32),
        n_accepted=n_acc, n_rejected=n_rej,
        nfev=stats[:, dopri.ST_NFEV].copy(),
        state_names=tuple(model.state_names),
        param_names=tuple(model.param_names), set_ids=set_ids,
        params=P, y0=np.array(Y0), model_name=model.name, backend=backend,
        rtol=rtol, atol=atol_v, bundling=info,
        elapsed=time.perf_counter() - start)
