"""Dormand-Prince 5(4) step math shared by the CPU and GPU backends.

The integrator reproduces scipy's ``RK45`` (``scipy/integrate/_ivp/rk.py``)
step for step:

* Butcher tableau ``C, A, B``, error estimator ``E`` and the 4th-order dense
  output matrix ``P`` (Shampine's optimal ``c6``) are the ones of scipy's RK45;
* error control (Hairer, Norsett & Wanner, Sec. II.4): ``scale = atol +
  max(|y|, |y_new|) * rtol``, ``err = RMS(h * K^T E / scale)``, accepted when
  ``err < 1``; the step factor is ``SAFETY * err**(-1/5)`` clipped to
  ``[MIN_FACTOR, MAX_FACTOR] = [0.2, 10]``, with ``MAX_FACTOR`` when ``err == 0``
  and no growth right after a rejection;
* the first step comes from ``select_initial_step`` (same algorithm as scipy);
* the minimum step is ``10 * ulp(t)``; a step below it gives
  ``STEP_UNDERFLOW``;
* values at the output times are *interpolated* with the dense output
  ``y_old + h * (K^T P) [x, x^2, x^3, x^4]``, ``x = (t_out - t_old) / h``,
  exactly as ``solve_ivp(..., t_eval=...)`` does, so output times never
  shorten the steps.

Everything here is written as plain Python on scalars and preallocated arrays
(no allocation, no numpy calls) so that the *same source* can be compiled by
``numba.njit`` for the CPU and by ``numba.cuda.jit(device=True)`` for the GPU:
:func:`make_integrator` takes the decorator as an argument.

Per-task statistics are written to an int64 vector ``stats`` of length
:data:`N_STATS`: ``[status, n_accepted, n_rejected, nfev]``.
"""

import math

# --- status codes ----------------------------------------------------------
SUCCESS = 0
MAX_STEPS = 1
STEP_UNDERFLOW = 2
NONFINITE = 3

STATUS_NAMES = {
    SUCCESS: "success",
    MAX_STEPS: "max_steps",
    STEP_UNDERFLOW: "step_underflow",
    NONFINITE: "nonfinite",
}

N_STATS = 4
ST_STATUS = 0
ST_ACCEPTED = 1
ST_REJECTED = 2
ST_NFEV = 3

N_STAGES = 6  # K has N_STAGES + 1 rows (the last one is f(t_new, y_new))

# --- step-size control constants (scipy.integrate._ivp.rk) ------------------
SAFETY = 0.9
MIN_FACTOR = 0.2
MAX_FACTOR = 10.0
ERROR_EXPONENT = -1.0 / 5.0  # -1 / (error_estimator_order + 1)
INITIAL_STEP_EXPONENT = 1.0 / 5.0

# --- tableau (scipy RK45) --------------------------------------------------
C2 = 1.0 / 5.0
C3 = 3.0 / 10.0
C4 = 4.0 / 5.0
C5 = 8.0 / 9.0

A21 = 1.0 / 5.0
A31 = 3.0 / 40.0
A32 = 9.0 / 40.0
A41 = 44.0 / 45.0
A42 = -56.0 / 15.0
A43 = 32.0 / 9.0
A51 = 19372.0 / 6561.0
A52 = -25360.0 / 2187.0
A53 = 64448.0 / 6561.0
A54 = -212.0 / 729.0
A61 = 9017.0 / 3168.0
A62 = -355.0 / 33.0
A63 = 46732.0 / 5247.0
A64 = 49.0 / 176.0
A65 = -5103.0 / 18656.0

B1 = 35.0 / 384.0
B3 = 500.0 / 1113.0
B4 = 125.0 / 192.0
B5 = -2187.0 / 6784.0
B6 = 11.0 / 84.0

E1 = -71.0 / 57600.0
E3 = 71.0 / 16695.0
E4 = -71.0 / 1920.0
E5 = 17253.0 / 339200.0
E6 = -22.0 / 525.0
E7 = 1.0 / 40.0

# dense output matrix P (7 x 4); row 2 (index 1) is zero
P11 = 1.0
P12 = -8048581381.0 / 2820520608.0
P13 = 8663915743.0 / 2820520608.0
P14 = -12715105075.0 / 11282082432.0
P32 = 131558114200.0 / 32700410799.0
P33 = -68118460800.0 / 10900136933.0
P34 = 87487479700.0 / 32700410799.0
P42 = -1754552775.0 / 470086768.0
P43 = 14199869525.0 / 1410260304.0
P44 = -10690763975.0 / 1880347072.0
P52 = 127303824393.0 / 49829197408.0
P53 = -318862633887.0 / 49829197408.0
P54 = 701980252875.0 / 199316789632.0
P62 = -282668133.0 / 205662961.0
P63 = 2019193451.0 / 616988883.0
P64 = -1453857185.0 / 822651844.0
P72 = 40617522.0 / 29380423.0
P73 = -110615467.0 / 29380423.0
P74 = 69997945.0 / 29380423.0

TINY_STEP_AT_ZERO = 10.0 * 5e-324  # 10 * (nextafter(0, inf) - 0)
# 10 * ulp(t) <= 10 * 2**-52 * |t| for t != 0
MIN_STEP_BOUND = 10.0 * 2.0 ** -52


def tableau():
    """Return scipy-shaped ``(C, A, B, E, P)`` numpy arrays (for tests/docs)."""
    import numpy as np

    C = np.array([0.0, C2, C3, C4, C5, 1.0])
    A = np.array([
        [0, 0, 0, 0, 0],
        [A21, 0, 0, 0, 0],
        [A31, A32, 0, 0, 0],
        [A41, A42, A43, 0, 0],
        [A51, A52, A53, A54, 0],
        [A61, A62, A63, A64, A65],
    ])
    B = np.array([B1, 0.0, B3, B4, B5, B6])
    E = np.array([E1, 0.0, E3, E4, E5, E6, E7])
    P = np.array([
        [P11, P12, P13, P14],
        [0, 0, 0, 0],
        [0, P32, P33, P34],
        [0, P42, P43, P44],
        [0, P52, P53, P54],
        [0, P62, P63, P64],
        [0, P72, P73, P74],
    ])
    return C, A, B, E, P


# ---------------------------------------------------------------------------
# backend-neutral helpers (compiled by the decorator given to make_integrator)
# ---------------------------------------------------------------------------

def make_integrator(rhs, jit, n_states, jit_task=None):
    """Build ``integrate_task`` for the right-hand side ``rhs``.

    Parameters
    ----------
    rhs : function ``rhs(t, y, p, dydt)`` already compiled with ``jit``
        (or compilable by it when called from a jitted function).
    jit : decorator, ``numba.njit(...)`` or ``numba.cuda.jit(device=True)``.
    n_states : number of states; a compile-time constant of the generated
        code, so that the loops over states are unrolled (all arrays passed
        in must have this many states).
    jit_task : decorator for ``integrate_task`` itself (default ``jit``);
        the CPU backend inlines it into its parallel loop.

    Returns
    -------
    integrate_task(p, y0, t0, t_eval, rtol, atol, max_steps, out, stats,
                   K, Q, y, ynew, ytmp)
        Integrates one task and writes ``out[len(t_eval), n]`` and ``stats``.
        ``K`` (7 x n), ``Q`` (4 x n), ``y``, ``ynew``, ``ytmp`` (n) are
        caller-provided work arrays (heap on the CPU, thread-local on the
        GPU).
    """
    NS = int(n_states)

    # Python's min/max semantics for two floats (builtin min/max do not
    # compile inside CUDA device functions)
    def _fmin(a, b):
        return b if b < a else a

    fmin = jit(_fmin)

    def _fmax(a, b):
        return b if b > a else a

    fmax = jit(_fmax)

    def _is_finite(x):
        return not (math.isnan(x) or math.isinf(x))

    is_finite = jit(_is_finite)

    def _min_step(t):
        """``10 * (nextafter(t, +inf) - t)`` for t >= 0 (as scipy)."""
        at = abs(t)
        if at == 0.0:
            return TINY_STEP_AT_ZERO
        m, e = math.frexp(at)
        return 10.0 * math.ldexp(1.0, e - 53)

    min_step_of = jit(_min_step)

    def _select_initial_step(t0, y, f0, p, interval, rtol, atol, ytmp, f1):
        # scipy.integrate._ivp.common.select_initial_step, max_step = inf
        n = NS
        if interval == 0.0:
            return 0.0
        s0 = 0.0
        s1 = 0.0
        for j in range(n):
            sc = atol[j] + abs(y[j]) * rtol
            s0 += (y[j] / sc) ** 2
            s1 += (f0[j] / sc) ** 2
        rn = math.sqrt(float(n))
        d0 = math.sqrt(s0) / rn
        d1 = math.sqrt(s1) / rn
        if d0 < 1e-5 or d1 < 1e-5:
            h0 = 1e-6
        else:
            h0 = 0.01 * d0 / d1
        h0 = fmin(h0, interval)
        for j in range(n):
            ytmp[j] = y[j] + h0 * f0[j]
        rhs(t0 + h0, ytmp, p, f1)
        s2 = 0.0
        for j in range(n):
            sc = atol[j] + abs(y[j]) * rtol
            s2 += ((f1[j] - f0[j]) / sc) ** 2
        d2 = math.sqrt(s2) / rn / h0
        if d1 <= 1e-15 and d2 <= 1e-15:
            h1 = fmax(1e-6, h0 * 1e-3)
        else:
            h1 = math.pow(0.01 / fmax(d1, d2), INITIAL_STEP_EXPONENT)
        return fmin(fmin(100.0 * h0, h1), interval)

    select_initial_step = jit(_select_initial_step)

    def _rk_step(t, h, y, p, K, ynew, ytmp):
        """Stages 2..7 of DOPRI5; K[0] must hold f(t, y). Returns nothing;
        ynew = 5th-order solution, K[6] = f(t + h, ynew)."""
        n = NS
        for j in range(n):
            ytmp[j] = y[j] + (K[0, j] * A21) * h
        rhs(t + C2 * h, ytmp, p, K[1])
        for j in range(n):
            ytmp[j] = y[j] + (K[0, j] * A31 + K[1, j] * A32) * h
        rhs(t + C3 * h, ytmp, p, K[2])
        for j in range(n):
            ytmp[j] = y[j] + (K[0, j] * A41 + K[1, j] * A42
                              + K[2, j] * A43) * h
        rhs(t + C4 * h, ytmp, p, K[3])
        for j in range(n):
            ytmp[j] = y[j] + (K[0, j] * A51 + K[1, j] * A52 + K[2, j] * A53
                              + K[3, j] * A54) * h
        rhs(t + C5 * h, ytmp, p, K[4])
        for j in range(n):
            ytmp[j] = y[j] + (K[0, j] * A61 + K[1, j] * A62 + K[2, j] * A63
                              + K[3, j] * A64 + K[4, j] * A65) * h
        rhs(t + h, ytmp, p, K[5])
        for j in range(n):
            ynew[j] = y[j] + h * (K[0, j] * B1 + K[2, j] * B3 + K[3, j] * B4
                                  + K[4, j] * B5 + K[5, j] * B6)
        rhs(t + h, ynew, p, K[6])

    rk_step = jit(_rk_step)

    def _error_norm(h, y, ynew, K, rtol, atol):
        n = NS
        s = 0.0
        for j in range(n):
            e = (K[0, j] * E1 + K[2, j] * E3 + K[3, j] * E4 + K[4, j] * E5
                 + K[5, j] * E6 + K[6, j] * E7) * h
            sc = atol[j] + fmax(abs(y[j]), abs(ynew[j])) * rtol
            s += (e / sc) ** 2
        return math.sqrt(s) / math.sqrt(float(n))

    error_norm = jit(_error_norm)

    def _dense_coeffs(K, Q):
        """Q = (K^T P)^T: the 4 polynomial coefficients of each state."""
        n = NS
        for j in range(n):
            k1 = K[0, j]
            k3 = K[2, j]
            k4 = K[3, j]
            k5 = K[4, j]
            k6 = K[5, j]
            k7 = K[6, j]
            Q[0, j] = k1 * P11
            Q[1, j] = (k1 * P12 + k3 * P32 + k4 * P42 + k5 * P52 + k6 * P62
                       + k7 * P72)
            Q[2, j] = (k1 * P13 + k3 * P33 + k4 * P43 + k5 * P53 + k6 * P63
                       + k7 * P73)
            Q[3, j] = (k1 * P14 + k3 * P34 + k4 * P44 + k5 * P54 + k6 * P64
                       + k7 * P74)

    dense_coeffs = jit(_dense_coeffs)

    def _dense(t_old, h, t_out, y, Q, out_row):
        """Shampine's 4th-order interpolant between t_old and t_old + h:
        ``y_old + h * (Q0 x + Q1 x^2 + Q2 x^3 + Q3 x^4)``."""
        n = NS
        x = (t_out - t_old) / h
        x2 = x * x
        x3 = x2 * x
        x4 = x3 * x
        for j in range(n):
            out_row[j] = h * (Q[0, j] * x + Q[1, j] * x2 + Q[2, j] * x3
                              + Q[3, j] * x4) + y[j]

    dense = jit(_dense)

    def _fill_nan(out, start):
        nan = math.nan
        for i in range(start, out.shape[0]):
            for j in range(NS):
                out[i, j] = nan

    fill_nan = jit(_fill_nan)

    def _integrate_task(p, y0, t0, t_eval, rtol, atol, max_steps, out, stats,
                        K, Q, y, ynew, ytmp):
        n = NS
        nt = t_eval.shape[0]
        for k in range(N_STATS):
            stats[k] = 0
        n_acc = 0
        n_rej = 0
        nfev = 0
        # ---- input checks: non-finite parameters/initial states flag the task
        for j in range(n):
            if not is_finite(y0[j]):
                stats[ST_STATUS] = NONFINITE
                fill_nan(out, 0)
                return
        for k in range(p.shape[0]):
            if not is_finite(p[k]):
                stats[ST_STATUS] = NONFINITE
                fill_nan(out, 0)
                return
        for j in range(n):
            y[j] = y0[j]
        t = t0
        tf = t_eval[nt - 1]
        ie = 0
        while ie < nt and t_eval[ie] <= t:
            for j in range(n):
                out[ie, j] = y[j]
            ie += 1
        if ie == nt:
            stats[ST_STATUS] = SUCCESS
            return
        rhs(t, y, p, K[0])
        nfev += 1
        for j in range(n):
            if not is_finite(K[0, j]):
                stats[ST_STATUS] = NONFINITE
                stats[ST_NFEV] = nfev
                fill_nan(out, ie)
                return
        h_abs = select_initial_step(t, y, K[0], p, tf - t, rtol, atol,
                                    ytmp, K[1])
        nfev += 1
        status = SUCCESS
        while t < tf:
            if n_acc + n_rej >= max_steps:
                status = MAX_STEPS
                break
            # min_step = 10 ulp(t) <= MIN_STEP_BOUND * |t|: the exact value
            # (two libm calls) is only needed for steps below the bound
            if t == 0.0:
                ms_bound = TINY_STEP_AT_ZERO
            else:
                ms_bound = MIN_STEP_BOUND * abs(t)
            min_step = 0.0
            if h_abs < ms_bound:
                min_step = min_step_of(t)
                if h_abs < min_step:
                    h_abs = min_step
            step_rejected = False
            accepted = False
            t_new = t
            h = 0.0
            while not accepted:
                if h_abs < ms_bound:
                    if min_step == 0.0:
                        min_step = min_step_of(t)
                    if h_abs < min_step:
                        status = STEP_UNDERFLOW
                        break
                if n_acc + n_rej >= max_steps:
                    status = MAX_STEPS
                    break
                h = h_abs
                t_new = t + h
                if t_new > tf:
                    t_new = tf
                h = t_new - t
                h_abs = abs(h)
                rk_step(t, h, y, p, K, ynew, ytmp)
                nfev += 6
                err = error_norm(h, y, ynew, K, rtol, atol)
                if err < 1.0:
                    if err == 0.0:
                        factor = MAX_FACTOR
                    else:
                        factor = fmin(MAX_FACTOR,
                                      SAFETY * math.pow(err, ERROR_EXPONENT))
                    if step_rejected:
                        factor = fmin(1.0, factor)
                    h_abs *= factor
                    accepted = True
                else:
                    # NaN error (non-finite trial state) also lands here
                    factor = SAFETY * math.pow(err, ERROR_EXPONENT)
                    if not (factor > MIN_FACTOR):
                        factor = MIN_FACTOR
                    h_abs *= factor
                    step_rejected = True
                    n_rej += 1
            if not accepted:
                break
            n_acc += 1
            # dense output at every t_eval in (t, t_new]
            if ie < nt and t_eval[ie] <= t_new:
                dense_coeffs(K, Q)
                while ie < nt and t_eval[ie] <= t_new:
                    dense(t, h, t_eval[ie], y, Q, out[ie])
                    ie += 1
            t = t_new
            for j in range(n):
                y[j] = ynew[j]
                K[0, j] = K[6, j]
        # output times the task did not reach (failure) are NaN
        fill_nan(out, ie)
        stats[ST_STATUS] = status
        stats[ST_ACCEPTED] = n_acc
        stats[ST_REJECTED] = n_rej
        stats[ST_NFEV] = nfev

    return (jit_task or jit)(_integrate_task)
