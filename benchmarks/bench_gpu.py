"""GPU backend on a real CUDA device: fit times against the CPU, O(N) passes against the
memory-bandwidth floor, and batched cross-validation replicates.

    python benchmarks/bench_gpu.py                       # N = 100,000 and 1,000,000, P = 1,000, 5% density
    python benchmarks/bench_gpu.py --n 100000 --models cox --dtypes float64

Tables:

1. ``fit``: L1 Cox, Fine-Gray and logistic, riskset.fit with backend='cpu' against
   backend='gpu' (float64 and float32); JIT compilation is done beforehand on tiny data
   and not timed. Also the largest coefficient difference to the CPU fit.
2. ``pass``: one O(N) pass of each kind (GLM state refresh, GLM log-likelihood, Cox
   exact state + log-likelihood) and one whole CCD sweep, against the floor
   ``bytes moved / bandwidth``, the bandwidth measured by a device-to-device copy.
3. ``cv``: 10-fold x 10-repetition cross-validation at N = 1,000,000 as 100 replicates
   fitted at once by ``riskset.solver.replicates.fit_replicates`` on the device batch
   ``riskset.kernels.gpu.replicate_batch`` (one block per replicate),
   against the CPU time of one replicate fit times 100 (both without the host Newton
   polish: cross-validation scores held-out likelihoods, not coefficients to 1e-15).

Needs a CUDA GPU (numba-cuda); it refuses to run in Numba's simulator.
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
    from numba import cuda

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


def warm_up(models, dtypes):
    import riskset

    for model in models:
        data = riskset.simulate(n=100, p=5, model="cox" if model == "fine_gray" else model, seed=1)
        if model == "fine_gray":
            data.status[::3] *= 2  # some competing events
        for dt in dtypes:
            riskset.fit(data, model, riskset.Laplace(gamma=5.0), backend="gpu", dtype=dt)
        riskset.fit(data, model, riskset.Laplace(gamma=5.0))


def gamma_for(model, n):
    # a moderately strong penalty: tens of non-zero coefficients, as in the papers' CV optimum
    return 0.02 * n ** 0.5 * (2.0 if model in ("cox", "fine_gray") else 1.0)


def fit_table(args):
    import riskset

    rows = []
    for n in args.n:
        for model in args.models:
            data = dataset(model, n, args.p, args.density)
            prior = riskset.Laplace(gamma=gamma_for(model, n))
            cpu, t_cpu = timed(lambda: riskset.fit(data, model, prior, tol=args.tol))
            rows.append(dict(model=model, N=n, backend="cpu", dtype="float64", seconds=t_cpu, cycles=cpu.n_iter,
                             nonzero=int(np.count_nonzero(cpu.coef.values)), max_rel_diff=0.0))
            for dt in args.dtypes:
                gpu, t_gpu = timed(lambda: riskset.fit(data, model, prior, tol=args.tol, backend="gpu", dtype=dt))
                c, g = cpu.coef.to_numpy(), gpu.coef.to_numpy()
                rows.append(dict(model=model, N=n, backend="gpu", dtype=dt, seconds=t_gpu, cycles=gpu.n_iter,
                                 nonzero=int(np.count_nonzero(g)), speedup=t_cpu / t_gpu,
                                 max_rel_diff=float(np.max(np.abs(g - c) / np.maximum(np.abs(c), 1e-3)))))
            print_table(rows[-1 - len(args.dtypes):], ["model", "N", "backend", "dtype", "seconds", "speedup",
                                                       "cycles", "nonzero", "max_rel_diff"])
            print()
    print("== fit: CPU vs GPU ==")
    print_table(rows, ["model", "N", "backend", "dtype", "seconds", "speedup", "cycles", "nonzero", "max_rel_diff"])
    print()


def pass_table(args, bandwidth):
    import riskset
    from riskset.kernels.gpu import to_device

    rows = []
    for n in args.n:
        for model in args.models:
            data = dataset(model, n, args.p, args.density)
            m = riskset.models.get_model(model)
            cpu_df = m.datafit(data)
            for dt in args.dtypes:
                dev = to_device(cpu_df, dtype=dt)
                sz = np.dtype(dt).itemsize
                p = dev.n_coef
                rng = np.random.default_rng(0)
                beta = np.zeros(p)
                k = min(50, p)
                beta[rng.choice(p, k, replace=False)] = rng.normal(scale=0.1, size=k)
                state = dev.new_state(beta)
                nnz = cpu_df.X.nnz + (n if getattr(cpu_df, "first", 0) else 0)
                if model in ("cox", "fine_gray"):
                    ns = cpu_df.rs.n_slots if model == "cox" else cpu_df.n_slots
                    kinds = {"exact state + loglik (one block)": (lambda: dev._loglik_all(state),
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
                kinds["CCD sweep (all P coordinates, one block)"] = (
                    lambda: dev.sweep(state, np.arange(p), b, prior, radius),
                    nnz * (per_nz + per_move))
                for kind, (fn, nbytes) in kinds.items():
                    fn()
                    _, sec = timed(fn, repeat=3)
                    floor = nbytes / bandwidth
                    rows.append(dict(model=model, N=n, dtype=dt, pass_=kind, ms=1e3 * sec, floor_ms=1e3 * floor,
                                     of_floor=floor / sec, GB=nbytes / 1e9))
    print(f"== pass: one O(N) pass vs the bandwidth floor (device copy bandwidth {bandwidth / 1e9:.0f} GB/s) ==")
    for r in rows:
        r["pass"] = r.pop("pass_")
    print_table(rows, ["model", "N", "dtype", "pass", "GB", "ms", "floor_ms", "of_floor"])
    print()


def cv_table(args):
    import riskset
    from riskset.kernels.gpu import replicate_batch
    from riskset.solver.ccd import SolverOptions, fit_ccd
    from riskset.solver.replicates import fit_replicates

    rows = []
    n = args.cv_n
    K, reps = args.folds, args.repeats
    for model in args.models:
        data = dataset(model, n, args.p, args.density)
        m = riskset.models.get_model(model)
        df = m.datafit(data)
        p = df.n_coef
        rng = np.random.default_rng(0)
        W = np.empty((K * reps, n))
        for rep in range(reps):
            fold = rng.permutation(n) % K
            for k in range(K):
                W[rep * K + k] = (fold != k).astype(float)
        l1 = np.full(p, gamma_for(model, n))
        if model in ("logistic", "poisson", "least_squares"):
            l1[0] = 0.0  # the intercept
        options = SolverOptions(tol=args.tol, polish_max_active=0)
        for dt in args.dtypes:
            res, sec = timed(lambda: fit_replicates(replicate_batch(df, W, dt), l1, 0.0, options=options))
            rows.append(dict(model=model, N=n, replicates=K * reps, backend="gpu batched", dtype=dt, seconds=sec,
                             converged=int(res.converged.sum()), cycles_max=int(res.n_iter.max())))
        # CPU: two replicate fits, extrapolated
        t = []
        for r in range(2):
            view = df.reweighted(W[r])
            _, s = timed(lambda: fit_ccd(view, l1, np.zeros(p), options=options))
            t.append(s)
        rows.append(dict(model=model, N=n, replicates=K * reps, backend=f"cpu sequential (2 fits, x {K * reps // 2})",
                         dtype="float64", seconds=float(np.mean(t)) * K * reps))
    print(f"== cv: {K}-fold x {reps} repetitions as one batch ==")
    print_table(rows, ["model", "N", "replicates", "backend", "dtype", "seconds", "converged", "cycles_max"])
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
    ap.add_argument("--skip", nargs="*", default=[], choices=["fit", "pass", "cv"])
    ap.add_argument("--allow-simulator", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    check_device(args.allow_simulator)
    warm_up(args.models, args.dtypes)
    bandwidth = copy_bandwidth(1 << 20 if args.allow_simulator else 1 << 30)
    if "fit" not in args.skip:
        fit_table(args)
    if "pass" not in args.skip:
        pass_table(args, bandwidth)
    if "cv" not in args.skip:
        cv_table(args)


if __name__ == "__main__":
    main()
