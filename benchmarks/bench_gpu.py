"""GPU backend on a real CUDA device: fit times against the CPU, O(N) passes against the
memory-bandwidth floor, and batched cross-validation replicates.

    python benchmarks/bench_gpu.py                       # N = 100,000 and 1,000,000, P = 1,000, 5% density
    python benchmarks/bench_gpu.py --n 100000 --models cox --dtypes float64

Tables:

1. ``fit``: L1 Cox, Fine-Gray and logistic, riskset.fit with backend='cpu' against
   backend='gpu' (float64 and float32); JIT compilation is done beforehand on tiny data
   and not timed. Also the largest coefficient difference to the CPU fit.
   Single GPU fits run over the whole grid (``--layouts grid``: cooperative kernels, one block
   per multiprocessor) and/or in one block (``block``, the replicate layout).
2. ``pass``: one O(N) pass of each kind (GLM state refresh, GLM log-likelihood, Cox
   exact state + log-likelihood) and one whole CCD sweep, against the floor
   ``bytes moved / bandwidth``, the bandwidth measured by a device-to-device copy.
3. ``cv``: ``riskset.cross_validate`` at one variance, 10 folds x 10 repetitions at
   ``--cv-n`` rows (first dtype): on the device, the 100 splits as one batch (one block per
   split), against one CPU thread (one repetition, extrapolated); the held-out score of the
   first repetition, whose folds both share, shows they agree.

4. ``profile``: one GPU fit per model at the largest N (first dtype) under cProfile
   (where the host waits: a kernel's time shows in the call that synchronizes after it).

``--backends cpu`` runs the CPU side alone (no device needed: the one-thread baseline in
a process beside the GPU runs, as ``benchmarks/gpu_device_run.sh`` does); ``--backends
gpu`` the GPU side alone (compare the printed objectives). Needs a CUDA GPU (numba-cuda)
otherwise; it refuses to run in Numba's simulator.

Recorded results: docs/benchmarks.md, section 'bench_gpu.py'.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from _common import cached_simulation, load, print_table


def fail(msg: str) -> None:
    print(f"bench_gpu: {msg}", file=sys.stderr)
    sys.exit(2)


def check_device(allow_simulator=False):
    from numba import config

    if config.ENABLE_CUDASIM and allow_simulator:  # smoke test of this script on tiny sizes
        print("device: Numba CUDA simulator (smoke test; timings meaningless)\n")
        return
    if config.ENABLE_CUDASIM:
        fail("needs a real CUDA GPU; NUMBA_ENABLE_CUDASIM=1 is set and the simulator would take days at these sizes")
    from riskset.kernels.gpu import require_device

    try:
        require_device()
    except RuntimeError as err:
        fail(str(err))
    from numba import cuda

    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
    free, total = cuda.current_context().get_memory_info()
    print(f"device: {name}, compute capability {dev.compute_capability}, {total / 2**30:.1f} GiB "
          f"({free / 2**30:.1f} GiB free)\n")


def dataset(model, n, p, density, seed=0):
    """``riskset simulate`` data; Fine-Gray: the Cox data with a third of the events
    turned into competing events (status 2)."""
    import riskset

    X, out = load(cached_simulation("cox" if model == "fine_gray" else model, n, p, density, seed))
    names = [f"x{j}" for j in range(p)]
    kw = {k: out[k] for k in ("y", "time", "status", "offset") if k in out}
    if model == "fine_gray":
        status = kw["status"].copy()
        status[(status == 1) & (np.random.default_rng(seed).random(n) < 1 / 3)] = 2
        kw["status"] = status
    return riskset.Dataset(X=X, covariate_names=names, row_ids=np.arange(n), **kw)


def sync():
    """Wait for the device (a no-op in a process that never used it: the CPU baseline)."""
    from numba import cuda

    if cuda.is_available():
        cuda.synchronize()


def timed(fn, repeat=1):
    best = np.inf
    out = None
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        out = fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return out, best


def copy_bandwidth(nbytes=1 << 30):
    """Device-to-device copy bandwidth in bytes/s (read + write counted)."""
    from numba import cuda

    a = cuda.device_array(nbytes // 8, dtype=np.float64)
    b = cuda.device_array(nbytes // 8, dtype=np.float64)
    b.copy_to_device(a)
    _, sec = timed(lambda: b.copy_to_device(a), repeat=5)
    return 2 * nbytes / sec


def set_layout(layout):
    """Single fits over the whole grid (cooperative kernels, the default) or in one block."""
    from riskset.kernels.gpu import cox, fine_gray, glm

    for cls in (cox.CoxDeviceDatafit, fine_gray.FineGrayDeviceDatafit, glm.GLMDeviceDatafit):  # with whole-grid sweeps
        cls.single_fit_grid = layout == "grid"


def warm_up(models, dtypes, layouts=(), gpu=True, large=True):
    """Compile every kernel a timed fit launches: tiny fits, unpenalized over more than
    ``DENSE_NEWTON_MAX`` coefficients so that the polish takes conjugate-gradient steps (the
    device Hessian-vector kernels; the first GPU fit of a process otherwise spends seconds
    compiling them). Then one fit at the shape of large data, which takes other kernel variants
    (a first fit at N = 1M otherwise compiles them, ~10 s): more than ``CACHED_ROWS`` rows and
    over two non-zeros per row (products over a row-major copy) and more than ``NARROW_SLOTS``
    event times (risk-set kernels on uint32 slot indices); ``large=False`` (the simulator's
    smoke test) leaves it out."""
    import riskset
    from riskset.core.products.column_products import CACHED_ROWS
    from riskset.data.risksets import NARROW_SLOTS
    from riskset.solver.newton import DENSE_NEWTON_MAX

    for model in models:
        large_n = max(CACHED_ROWS, 3 * NARROW_SLOTS) + 1000
        shapes = [(400, DENSE_NEWTON_MAX + 5, 0.05)] + ([(large_n, 5, 0.6)] if large else [])
        for n, p, density in shapes:
            data = riskset.simulate(n=n, p=p, model="cox" if model == "fine_gray" else model, seed=1, density=density)
            if model == "fine_gray":
                data.status[::3] *= 2  # some competing events
            for lay in layouts if gpu else ():
                set_layout(lay)
                for dt in dtypes:
                    riskset.fit(data, model, riskset.Normal(variance=1.0), backend="gpu", dtype=dt)
            set_layout("grid")
            riskset.fit(data, model, riskset.Normal(variance=1.0))


def kernel_report():
    """Registers per thread of the compiled sweep kernels (a block of 1024 threads needs at most
    64; the risk-set families fall back to 256 threads)."""
    from riskset.kernels.gpu import cox, fine_gray, glm

    for name, kernel in (("cox block", cox.sweep_kernel), ("cox grid", cox.sweep_grid_kernel),
                         ("cox exact state grid", cox.sync_grid_kernel), ("cox gradient", cox.gradient_kernel),
                         ("cox Hessian rows", cox.hessian_rows_kernel), ("fine_gray block", fine_gray.sweep_kernel),
                         ("fine_gray grid", fine_gray.sweep_grid_kernel), ("glm grid", glm.sweep_grid_kernel)):
        try:
            regs = sorted(set(kernel.get_regs_per_thread().values()))
        except Exception as err:  # not compiled in this run, or no such query
            regs = f"n/a ({type(err).__name__})"
        print(f"registers per thread, {name}: {regs}")
    print(flush=True)


def gamma_for(model, n):
    # a moderately strong penalty: tens of non-zero coefficients, as in the papers' CV optimum
    return 0.02 * n ** 0.5 * (2.0 if model in ("cox", "fine_gray") else 1.0)


FIT_COLUMNS = ["model", "N", "backend", "layout", "dtype", "seconds", "speedup", "cycles", "nonzero", "objective",
               "max_rel_diff", "converged"]


def fit_table(args):
    """CPU (one thread) and GPU fits of each model and size; with ``--backends gpu`` alone the
    CPU side is left to another process (same data, same objective printed to compare)."""
    import riskset

    rows = []
    for n in args.n:
        for model in args.models:
            data = dataset(model, n, args.p, args.density)
            prior = riskset.Laplace(gamma=gamma_for(model, n))
            group, cpu = [], None
            if "cpu" in args.backends:
                cpu, t_cpu = timed(lambda: riskset.fit(data, model, prior, tol=args.tol), args.repeat)
                group.append(dict(model=model, N=n, backend="cpu 1 thread", dtype="float64", seconds=t_cpu,
                                  cycles=cpu.n_iter, nonzero=int(np.count_nonzero(cpu.coef.values)),
                                  objective=f"{cpu.objective:.12g}", max_rel_diff=0.0, converged=cpu.converged))
            runs = [(lay, dt) for lay in args.layouts for dt in args.dtypes] if "gpu" in args.backends else []
            for lay, dt in runs:
                set_layout(lay)
                try:
                    gpu, t_gpu = timed(lambda: riskset.fit(data, model, prior, tol=args.tol, backend="gpu", dtype=dt),
                                       args.repeat)
                except Exception as err:  # one failing family must not hide the others' figures
                    group.append(dict(model=model, N=n, backend="gpu", layout=lay, dtype=dt,
                                      converged=f"ERROR {err!r}"[:200]))
                    continue
                finally:
                    set_layout("grid")
                g = gpu.coef.to_numpy()
                row = dict(model=model, N=n, backend="gpu", layout=lay, dtype=dt, seconds=t_gpu, cycles=gpu.n_iter,
                           nonzero=int(np.count_nonzero(g)), objective=f"{gpu.objective:.12g}", converged=gpu.converged)
                if cpu is not None:
                    c = cpu.coef.to_numpy()
                    row.update(speedup=t_cpu / t_gpu,
                               max_rel_diff=float(np.max(np.abs(g - c) / np.maximum(np.abs(c), 1e-3))))
                group.append(row)
            print_table(group, FIT_COLUMNS)
            print(flush=True)
            rows += group
    print("== fit: CPU vs GPU ==")
    print_table(rows, FIT_COLUMNS)
    print()


def profile_fits(args):
    """Where a GPU fit's time goes, by host function (cProfile; a kernel's time shows in the
    host call that waits for it: the copy of beta back after each sweep)."""
    import cProfile
    import pstats

    import riskset

    n = max(args.n)
    for model in args.models:
        data = dataset(model, n, args.p, args.density)
        prior = riskset.Laplace(gamma=gamma_for(model, n))
        for dt in args.dtypes[:1]:
            prof = cProfile.Profile()
            sync()
            t0 = time.perf_counter()
            prof.enable()
            try:
                res = riskset.fit(data, model, prior, tol=args.tol, backend="gpu", dtype=dt)
                sync()
            except Exception as err:
                print(f"== profile: {model} N={n} {dt}: ERROR {err!r}")
                continue
            finally:
                prof.disable()
            print(f"== profile: {model} N={n} {dt}: {time.perf_counter() - t0:.2f} s, {res.n_iter} cycles, "
                  f"converged={res.converged}, objective {res.objective!r} ==")
            pstats.Stats(prof).sort_stats("cumulative").print_stats(28)
            pstats.Stats(prof).sort_stats("tottime").print_stats(15)


def pass_table(args, bandwidth):
    import riskset
    from riskset.kernels.gpu import to_device

    rows = []
    for n in args.n:
        for model in args.models:
            data = dataset(model, n, args.p, args.density)
            m = riskset.models.get_model(model)
            cpu_df = m.datafit(data)
            for lay, dt in [(lay, dt) for lay in args.layouts for dt in args.dtypes]:
                set_layout(lay)
                dev = to_device(cpu_df, dtype=dt)
                sz = np.dtype(dt).itemsize
                p = dev.n_coef
                rng = np.random.default_rng(0)
                beta = np.zeros(p)
                k = min(50, p)
                beta[rng.choice(p, k, replace=False)] = rng.normal(scale=0.1, size=k)
                state = dev.new_state(beta)
                nnz = cpu_df.design.nnz + (n if getattr(cpu_df, "first", 0) else 0)
                if model in ("cox", "fine_gray"):
                    ns = cpu_df.rs.n_slots if model == "cox" else cpu_df.n_slots
                    kinds = {"exact state + loglik": (lambda: dev._loglik_all(state),
                                                                  n * (8 + 2 * sz + 8 + 1) + 12 * ns * 8)}
                else:
                    kinds = {"state refresh": (lambda: dev._refresh(state), n * (8 + 2 * sz + 3 * sz)),
                             "loglik": (lambda: dev._loglik_all(state), n * (8 + 2 * sz))}
                prior = np.zeros((p, 3))
                prior[:, 0] = gamma_for(model, n)  # rows (l1, l2, center)
                radius = np.ones(p)
                b = beta.copy()
                # a full sweep: per coordinate a reduce over the column, then the move
                risk_set = model in ("cox", "fine_gray")
                per_nz = 4 + sz + (8 + 2 * sz if risk_set else 2 * sz)
                per_move = (16 + 2 * sz + 8) if risk_set else (16 + 2 * sz + 3 * sz + 2 * sz)
                kinds["CCD sweep (all P coordinates)"] = (
                    lambda: dev.sweep(state, np.arange(p), b, prior, radius),
                    nnz * (per_nz + per_move))
                for kind, (fn, nbytes) in kinds.items():
                    fn()
                    _, sec = timed(fn, repeat=3)
                    floor = nbytes / bandwidth
                    rows.append(dict(model=model, N=n, layout=lay, dtype=dt, pass_=kind, ms=1e3 * sec,
                                     floor_ms=1e3 * floor, of_floor=floor / sec, GB=nbytes / 1e9))
                set_layout("grid")
    print(f"== pass: one O(N) pass vs the bandwidth floor (device copy bandwidth {bandwidth / 1e9:.0f} GB/s) ==")
    for r in rows:
        r["pass"] = r.pop("pass_")
    print_table(rows, ["model", "N", "layout", "dtype", "pass", "GB", "ms", "floor_ms", "of_floor"])
    print()


def cv_table(args):
    """``riskset.cross_validate`` at one variance (the fit table's penalty), 10 folds x 10
    repetitions, refit off: on the device (every split in one batch, one block per split) and
    on one CPU thread (the first repetition, times the repetitions). Both score the held-out
    log-likelihood; the first repetition's folds are the same on both."""
    import riskset

    rows = []
    n = args.cv_n
    K, reps = args.folds, args.repeats
    for model in args.models:
        data = dataset(model, n, args.p, args.density)
        gamma = gamma_for(model, n)
        prior = riskset.Laplace(gamma=gamma)

        def cv(n_repeats, **backend):
            return riskset.cross_validate(data, model, prior, variances=[2.0 / gamma**2], n_folds=K,
                                          n_repeats=n_repeats, refit=False, progress=False, n_jobs=1, tol=args.tol,
                                          **backend)

        def first_repeat(res):
            return float(res.scores.loc[res.scores["repeat"] == 0, "score"].mean())

        for dt in args.dtypes[:1]:
            res, sec = timed(lambda: cv(reps, backend="gpu", dtype=dt))
            rows.append(dict(model=model, N=n, splits=K * reps, backend="gpu, one batch", dtype=dt, seconds=sec,
                             converged=int(res.scores["converged"].sum()), first_repeat_score=first_repeat(res)))
        if args.cv_cpu:
            res, sec = timed(lambda: cv(1))
            rows.append(dict(model=model, N=n, splits=K * reps, backend=f"cpu 1 thread (1 repeat, x {reps})",
                             dtype="float64", seconds=sec * reps, converged=int(res.scores["converged"].sum()) * reps,
                             first_repeat_score=first_repeat(res)))
    print(f"== cv: {K}-fold x {reps} repetitions at one variance ==")
    print_table(rows, ["model", "N", "splits", "backend", "dtype", "seconds", "converged", "first_repeat_score"])
    print()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--p", type=int, default=1000)
    ap.add_argument("--density", type=float, default=0.05)
    ap.add_argument("--models", nargs="+", default=["cox", "fine_gray", "logistic"])
    ap.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--cv-n", type=int, default=1_000_000)
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--backends", nargs="+", default=["cpu", "gpu"], choices=["cpu", "gpu"],
                    help="fit table: both (speedups and coefficient differences) or one (another process runs the "
                         "other side, e.g. the CPU baseline beside the GPU runs)")
    ap.add_argument("--layouts", nargs="+", default=["grid", "block"], choices=["grid", "block"],
                    help="single GPU fits over the whole grid (cooperative kernels; families that have them) and/or "
                         "in one block")
    ap.add_argument("--repeat", type=int, default=2,
                    help="fit table: best of this many fits (the first at a new size may still compile kernels)")
    ap.add_argument("--cv-cpu", action=argparse.BooleanOptionalAction, default=True,
                    help="cv table: also time the CPU's cross-validation (one repetition, extrapolated)")
    ap.add_argument("--skip", nargs="*", default=[], choices=["fit", "pass", "cv", "profile"])
    ap.add_argument("--allow-simulator", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.backends == ["cpu"]:  # the CPU baseline alone: no device needed
        warm_up(args.models, [], gpu=False)
        return fit_table(args)
    check_device(args.allow_simulator)
    warm_up(args.models, args.dtypes, args.layouts, large=not args.allow_simulator)
    kernel_report()
    bandwidth = copy_bandwidth(1 << 20 if args.allow_simulator else 1 << 30)
    print(f"device copy bandwidth: {bandwidth / 1e9:.0f} GB/s\n", flush=True)
    if "fit" not in args.skip:
        fit_table(args)
    if "profile" not in args.skip:
        profile_fits(args)
    if "pass" not in args.skip:
        pass_table(args, bandwidth)
    if "cv" not in args.skip:
        cv_table(args)


if __name__ == "__main__":
    main()
