"""Benchmark: 10,000 SEIR parameter sets, riskset.ode vs other integrators.

    PYTHONPATH=src python benchmarks/bench_ode.py [--n 10000] [--scipy-subset 200]

Problem: log-uniform beta in [0.1, 2], sigma and gamma in [0.05, 1] per day,
N = 1e6 with 10 initially infected, 366 daily outputs (t = 0..365),
rtol = atol = 1e-6. Every method is checked against a tight reference
(riskset at rtol = atol = 1e-12, itself cross-checked against scipy's DOP853
at 1e-12 on a few tasks); the error is max |x - ref| / max(|ref|, 1) over
tasks, times and states.

Compared: riskset CPU (numba prange over all cores), a Python loop over
scipy's solve_ivp(RK45) (timed on a subset and extrapolated), numbalsoda
(if installed) and diffrax + JAX vmap (if installed; optional). Also prints
the step-count predictor's R^2 on held-out tasks and the lockstep efficiency
(bundles of 32) with and without sorting, for SEIR and for the TMDD model.
Not part of the test suite. numbalsoda and diffrax are optional: install
them (``pip install numbalsoda jax diffrax``; numbalsoda builds from source
and needs a Fortran compiler) or their rows say "not available".
"""

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

import numba  # noqa: E402

from riskset.ode import solve_batch  # noqa: E402

N_POP = 1e6
I0 = 10.0


def sample(n, seed):
    rng = np.random.default_rng(seed)
    lo = np.log([0.1, 0.05, 0.05])
    hi = np.log([2.0, 1.0, 1.0])
    return np.exp(rng.uniform(lo, hi, size=(n, 3)))


def rel_err(x, ref):
    return float(np.nanmax(np.abs(x - ref) / np.maximum(np.abs(ref), 1.0)))


def scipy_loop(P, y0, t, rtol, atol, method="RK45"):
    from scipy.integrate import solve_ivp

    out = np.empty((P.shape[0], t.size, 4))
    for i in range(P.shape[0]):
        beta, sigma, gamma = P[i]

        def f(_t, y, beta=beta, sigma=sigma, gamma=gamma):
            S, E, I, R = y
            inf = beta * S * I / (S + E + I + R)
            return [-inf, inf - sigma * E, sigma * E - gamma * I, gamma * I]

        sol = solve_ivp(f, (t[0], t[-1]), y0, method=method, t_eval=t,
                        rtol=rtol, atol=atol)
        out[i] = sol.y.T
    return out


def bench_numbalsoda(P, y0, t, rtol, atol):
    try:
        import numbalsoda  # noqa: F401
        from numbalsoda import dop853, lsoda_sig  # noqa: F401
    except Exception as exc:  # not installed / not buildable
        return None, f"not available ({type(exc).__name__}: {exc})"
    from numba import cfunc

    @cfunc(lsoda_sig)
    def rhs(t, u, du, p):
        S, E, I, R = u[0], u[1], u[2], u[3]
        inf = p[0] * S * I / (S + E + I + R)
        du[0] = -inf
        du[1] = inf - p[1] * E
        du[2] = p[1] * E - p[2] * I
        du[3] = p[2] * I

    from numbalsoda import dop853 as solver
    addr = rhs.address
    out = np.empty((P.shape[0], t.size, 4))
    solver(addr, y0, t, data=P[0].copy(), rtol=rtol, atol=atol)  # warm
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(P.shape[0]):
        usol, ok = solver(addr, y0, t, data=P[i].copy(), rtol=rtol,
                          atol=atol)
        out[i] = usol
    return ((time.perf_counter() - t0, time.process_time() - c0, out),
            "dop853, 1 core, Python loop")


def bench_diffrax(P, y0, t, rtol, atol):
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        import diffrax
        import jax.numpy as jnp
    except Exception as exc:
        return None, f"not available ({type(exc).__name__})"

    def vf(_t, y, p):
        S, E, I, R = y
        inf = p[0] * S * I / (S + E + I + R)
        return jnp.stack([-inf, inf - p[1] * E, p[1] * E - p[2] * I,
                          p[2] * I])

    term = diffrax.ODETerm(vf)
    solver = diffrax.Dopri5()
    ctrl = diffrax.PIDController(rtol=rtol, atol=atol)
    saveat = diffrax.SaveAt(ts=jnp.asarray(t))

    def one(p):
        sol = diffrax.diffeqsolve(term, solver, t0=float(t[0]),
                                  t1=float(t[-1]), dt0=None,
                                  y0=jnp.asarray(y0), args=p, saveat=saveat,
                                  stepsize_controller=ctrl,
                                  max_steps=100_000)
        return sol.ys

    fn = jax.jit(jax.vmap(one))
    Pj = jnp.asarray(P)
    c0 = time.perf_counter()
    fn(Pj[:8]).block_until_ready()
    fn(Pj).block_until_ready()  # compile for the full shape
    comp = time.perf_counter() - c0
    t0, cpu0 = time.perf_counter(), time.process_time()
    ys = fn(Pj).block_until_ready()
    el, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return (el, cpu, np.asarray(ys)), (f"Dopri5 + PID, jit(vmap), "
                                  f"compile+first run {comp:.1f} s")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--scipy-subset", type=int, default=200)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-diffrax", action="store_true")
    ap.add_argument("--skip-pk", action="store_true",
                    help="skip the TMDD predictor section")
    a = ap.parse_args(argv)

    n, rtol, atol = a.n, 1e-6, 1e-6
    P = sample(n, a.seed)
    y0 = np.array([N_POP - I0, 0.0, I0, 0.0])
    t = np.arange(0.0, 366.0)
    cores = numba.get_num_threads()
    print(f"SEIR batch: {n} parameter sets, {t.size} outputs, rtol=atol="
          f"{rtol:g}; numba threads: {cores}; cpu count {os.cpu_count()}; "
          f"load average at start {os.getloadavg()[0]:.2f}")

    # --- compile (cached on disk after the first run) + tight reference ----
    c0 = time.perf_counter()
    solve_batch("seir", P[:4], y0, t, progress=False)
    compile_s = time.perf_counter() - c0
    r0 = time.perf_counter()
    ref = solve_batch("seir", P, y0, t, rtol=1e-12, atol=1e-12,
                      progress=False)
    ref_s = time.perf_counter() - r0
    assert ref.success.all()
    chk = np.linspace(0, n - 1, 5).astype(int)
    dop = scipy_loop(P[chk], y0, t, 1e-12, 1e-12, method="DOP853")
    print(f"reference: riskset rtol=atol=1e-12 in {ref_s:.2f} s; vs scipy "
          f"DOP853 1e-12 on {len(chk)} tasks: max rel diff "
          f"{rel_err(ref.states[chk], dop):.1e}; first call (compile or "
          f"cache load) {compile_s:.2f} s")

    rows = []

    def timed(fn, repeat=1):
        best = None
        for _ in range(repeat):
            w0, c0 = time.perf_counter(), time.process_time()
            r = fn()
            w, c = time.perf_counter() - w0, time.process_time() - c0
            if best is None or w < best[0]:
                best = (w, c, r)
        return best

    # --- riskset CPU ---------------------------------------------------------
    w, c, res = timed(lambda: solve_batch("seir", P, y0, t, rtol=rtol,
                                          atol=atol, progress=False),
                      a.repeat)
    rows.append(("riskset cpu (prange)", cores, w, c,
                 rel_err(res.states, ref.states),
                 f"best of {a.repeat}; mean accepted steps "
                 f"{res.n_accepted.mean():.0f}"))
    w, c, resb = timed(lambda: solve_batch(
        "seir", P, y0, t, rtol=rtol, atol=atol, progress=False, bundle=True,
        pilot_size=min(1000, n // 5), seed=1), a.repeat)
    assert np.array_equal(resb.states, res.states)
    rows.append(("riskset cpu, bundled", cores, w, c,
                 rel_err(resb.states, ref.states),
                 f"pilot {min(1000, n // 5)} + sorted rest"))

    # --- scipy loop ------------------------------------------------------------
    k = min(a.scipy_subset, n)
    sub = np.random.default_rng(a.seed + 1).choice(n, k, replace=False)
    w, c, sc = timed(lambda: scipy_loop(P[sub], y0, t, rtol, atol))
    sc_w, sc_c = w * n / k, c * n / k
    rows.append(("scipy solve_ivp RK45 loop", 1, sc_w, sc_c,
                 rel_err(sc, ref.states[sub]),
                 f"{k} tasks in {w:.1f} s, extrapolated"))
    # riskset and scipy take the same steps: confirm on the subset
    same = np.max(np.abs(sc - res.states[sub])
                  / np.maximum(np.abs(res.states[sub]), 1.0))
    print(f"riskset vs scipy RK45 at the same tolerance (subset): max rel "
          f"diff {same:.1e}")

    # --- numbalsoda ------------------------------------------------------------
    r, note = bench_numbalsoda(P, y0, t, rtol, atol)
    if r is None:
        rows.append(("numbalsoda", 1, math.nan, math.nan, math.nan, note))
    else:
        rows.append(("numbalsoda", 1, r[0], r[1], rel_err(r[2], ref.states),
                     note))

    # --- diffrax + JAX -----------------------------------------------------------
    if a.skip_diffrax:
        rows.append(("diffrax + JAX vmap", 0, math.nan, math.nan, math.nan,
                     "skipped"))
    else:
        r, note = bench_diffrax(P, y0, t, rtol, atol)
        if r is None:
            rows.append(("diffrax + JAX vmap", 0, math.nan, math.nan,
                         math.nan, note))
        else:
            rows.append(("diffrax + JAX vmap (CPU)", os.cpu_count(), r[0],
                         r[1], rel_err(r[2], ref.states), note))

    # --- table -------------------------------------------------------------------
    print()
    print(f"time for all {n} tasks (scipy: extrapolated from its subset); "
          "cpu = process CPU time over all threads; 'per core' compares "
          "CPU time, robust to other load on the machine")
    hdr = (f"{'method':26s} {'cores':>5s} {'wall [s]':>9s} {'cpu [s]':>8s} "
           f"{'tasks/s':>8s} {'vs scipy':>9s} {'per core':>9s} "
           f"{'max rel err':>11s}  note")
    print(hdr)
    print("-" * len(hdr))
    for name, ncores, el, cpu, err, note in rows:
        if math.isnan(el):
            print(f"{name:26s} {'-':>5s} {'-':>9s} {'-':>8s} {'-':>8s} "
                  f"{'-':>9s} {'-':>9s} {'-':>11s}  {note}")
            continue
        print(f"{name:26s} {ncores:5d} {el:9.3f} {cpu:8.3f} {n / el:8.0f} "
              f"{sc_w / el:8.0f}x {sc_c / cpu:8.0f}x {err:11.1e}  {note}")

    info = resb.bundling
    print()
    print(f"step-count predictor (degree {info.degree}, pilot "
          f"{len(info.pilot_idx)}): R^2 on {n - len(info.pilot_idx)} "
          f"held-out tasks = {info.r2_heldout:.3f} (in-sample "
          f"{info.r2_pilot:.3f})")
    print(f"lockstep efficiency, bundles of 32: unsorted "
          f"{info.efficiency_unsorted:.3f}, sorted by prediction "
          f"{info.efficiency_sorted:.3f}, as launched (pilot first) "
          f"{info.efficiency_executed:.3f}, sorted by true steps "
          f"{info.efficiency_oracle:.3f}")
    steps = res.n_steps
    print(f"steps per task: min {steps.min()}, median "
          f"{int(np.median(steps))}, max {steps.max()}")
    if not a.skip_pk:
        bench_pk(n, a.seed)
    return 0


def bench_pk(n, seed):
    """Step-count predictor on the two-compartment TMDD (nimotuzumab-like)
    model: log-uniform parameters over a range that includes stiff corners
    (fast binding), so step counts are heavy-tailed."""
    from riskset.ode import pk_initial_state

    rng = np.random.default_rng(seed + 7)
    names = ["kel", "kcp", "kpc", "Vc", "kon", "koff", "kint", "ksyn",
             "kdeg"]
    lo = np.log([0.005, 0.01, 0.01, 2.0, 0.1, 0.01, 0.01, 0.05, 0.01])
    hi = np.log([0.05, 0.1, 0.1, 5.0, 5.0, 1.0, 0.5, 1.0, 0.5])
    P = np.exp(rng.uniform(lo, hi, size=(n, len(names))))
    dose = np.exp(rng.uniform(np.log(100.0), np.log(400.0), n))
    Y0 = pk_initial_state(dose, P)
    t = np.arange(0.0, 673.0, 4.0)  # 4 weeks, every 4 h
    solve_batch("pk", P[:2], Y0[:2], t, progress=False)  # compile / load
    w0, c0 = time.perf_counter(), time.process_time()
    r = solve_batch("pk", P, Y0, t, rtol=1e-6, atol=1e-6, bundle=True,
                    pilot_size=min(1000, n // 5), seed=1, progress=False)
    w, c = time.perf_counter() - w0, time.process_time() - c0
    info = r.bundling
    steps = r.n_steps
    print()
    print(f"PK TMDD model, {n} tasks, {t.size} outputs, rtol=atol=1e-6: "
          f"riskset cpu {w:.2f} s wall, {c:.2f} s cpu; steps per task min "
          f"{steps.min()}, median {int(np.median(steps))}, max "
          f"{steps.max()}; status {np.bincount(r.status, minlength=4)}")
    print(f"  predictor degree {info.degree}, {info.target} target: R^2 on "
          f"{n - len(info.pilot_idx)} held-out tasks = "
          f"{info.r2_heldout:.3f}")
    print(f"  lockstep efficiency, bundles of 32: unsorted "
          f"{info.efficiency_unsorted:.3f}, sorted by prediction "
          f"{info.efficiency_sorted:.3f}, as launched "
          f"{info.efficiency_executed:.3f}, sorted by true steps "
          f"{info.efficiency_oracle:.3f}")


if __name__ == "__main__":
    sys.exit(main())
