"""Shared pieces of the model tests: finite-difference derivatives of any datafit, and a
datafit of no family."""
import signal
from contextlib import contextmanager

import numpy as np

from riskset.core.interface import Datafit

def reference_values(path, key_words: int = 1) -> dict:
    """The numbers of a reference text file written by a ``make.R``: each line 'KEY... v1 v2 ...'
    (``key_words`` words of key: one as a string, more as a tuple) -> an array; '#' lines skipped."""
    out = {}
    for line in open(path).read().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        words = line.split()
        key = words[0] if key_words == 1 else tuple(words[:key_words])
        out[key] = np.array(words[key_words:], float)
    return out


#: A guard against a true hang, never a speed limit: a test's run may include compiling kernels on a
#: cold Numba cache (up to a minute a family on a loaded machine), and what the guard catches runs
#: for hours. No test asserts on elapsed time otherwise.
HANG_SECONDS = 900


@contextmanager
def hang_guard(seconds=HANG_SECONDS):
    """Fail a hang instead of the run (a guard, not a speed limit: see ``HANG_SECONDS``)."""
    def fail(signum, frame):
        raise TimeoutError(f"no answer within {seconds} s (a hang)")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


class BareDatafit(Datafit):
    """A datafit with only the required core, as stubs, and no capability (no device kernels)."""

    def kernel_data(self): ...
    def new_state(self, beta): ...
    def loglik(self, state): ...
    def gradient(self, state): ...
    def hessian(self, state, columns): ...
    def local_quadratic(self, state, columns): ...
    def data_weights(self): ...
    def missing_information(self): ...


def loglik_at(datafit, beta):
    return datafit.loglik(datafit.new_state(np.asarray(beta, dtype=float)))


def check_derivatives(datafit, beta, *, rel=1e-6, step=1e-5):
    """Assert gradient, coordinate() and hessian() of ``datafit`` match central differences."""
    beta = np.asarray(beta, dtype=float)
    p = datafit.n_coef
    state = datafit.new_state(beta)
    grad = datafit.gradient(state)
    hess = datafit.hessian(state, np.arange(p))
    fd_grad = np.empty(p)
    fd_hess = np.empty((p, p))
    for j in range(p):
        e = np.zeros(p)
        e[j] = step
        fd_grad[j] = (loglik_at(datafit, beta + e) - loglik_at(datafit, beta - e)) / (2 * step)
        gp = datafit.gradient(datafit.new_state(beta + e))
        gm = datafit.gradient(datafit.new_state(beta - e))
        fd_hess[:, j] = (gp - gm) / (2 * step)
        g_j, h_j = datafit.coordinate(state, j)
        assert np.isclose(g_j, grad[j], rtol=1e-10, atol=1e-10), (j, g_j, grad[j])
        assert np.isclose(h_j, hess[j, j], rtol=1e-10, atol=1e-10), (j, h_j, hess[j, j])
    scale = max(1.0, np.abs(grad).max())
    assert np.allclose(grad, fd_grad, rtol=rel, atol=rel * scale), np.abs(grad - fd_grad).max()
    hscale = max(1.0, np.abs(hess).max())
    assert np.allclose(hess, fd_hess, rtol=rel, atol=rel * hscale), np.abs(hess - fd_hess).max()
    assert np.allclose(hess, hess.T, atol=1e-10 * hscale)


def check_move(datafit, beta, j, delta):
    """Assert that move() leaves the same state as a fresh one at the moved coefficients."""
    beta = np.asarray(beta, dtype=float)
    state = datafit.new_state(beta)
    datafit.move(state, j, delta)
    moved = beta.copy()
    moved[j] += delta
    fresh = datafit.new_state(moved)
    assert np.isclose(datafit.loglik(state), datafit.loglik(fresh), rtol=1e-12, atol=1e-10)
    for k in range(datafit.n_coef):
        assert np.allclose(datafit.coordinate(state, k), datafit.coordinate(fresh, k), rtol=1e-10, atol=1e-10)


def shard_rows(rng, no_event, n_shards):
    """Rows split at random into shards of unequal sizes (tests of sharded likelihoods): with 2
    shards or more the first holds one row and (from 3) the second only rows of ``no_event`` (a
    mask: a shard without events)."""
    n = no_event.shape[0]
    if n_shards == 1:
        return [np.arange(n)]
    rows = rng.permutation(n)
    parts = [rows[:1]]
    rest = rows[1:]
    if n_shards >= 3:
        others = rest[no_event[rest]]
        chosen = others[:max(1, others.size // 4)]
        parts.append(np.sort(chosen))
        rest = rng.permutation(np.setdiff1d(rest, chosen))
    k = n_shards - len(parts)
    cuts = np.sort(rng.choice(np.arange(1, rest.size), size=k - 1, replace=False)) if k > 1 else []
    parts += [np.sort(part) for part in np.split(rest, cuts)]
    return parts


def rows_of(a, rows):
    """``a[rows]``, or None for an absent array."""
    return None if a is None else a[rows]


def assert_same_as_datafit(datafit, beta, cols, v, ll, gradient, curvature, Hv):
    """A sharded likelihood's log-likelihood, gradient, Jacobi curvature and H_AA v at ``beta``
    (``cols`` = A) against the one-machine ``datafit``'s."""
    state = datafit.new_state(beta)
    ref_ll, ref_g = datafit.loglik(state), datafit.gradient(state)
    H = datafit.hessian(state, np.arange(datafit.n_coef))
    ref_Hv = H[np.ix_(cols, cols)] @ v
    assert abs(ll - ref_ll) <= 1e-12 * abs(ref_ll)
    np.testing.assert_allclose(gradient, ref_g, rtol=0, atol=1e-10 * np.abs(ref_g).max())
    np.testing.assert_allclose(Hv, ref_Hv, rtol=0, atol=1e-9 * np.abs(ref_Hv).max())
    assert np.all(curvature >= -np.diag(H) - 1e-12 * np.abs(np.diag(H)).max())


def numpy_risk_sets(time, status, start=None, strata=None, weights=None):
    """The risk sets as riskset built them before its compiled preparation (np.lexsort, np.unique,
    searchsorted on (stratum, time code) keys): the reference that
    ``riskset.data.risksets.build_risk_sets`` must equal array for array."""
    from riskset.data.risksets import RiskSets

    time = np.asarray(time, dtype=np.float64)
    n = time.shape[0]
    status = np.asarray(status).astype(np.uint8)
    strata = np.zeros(n, np.int64) if strata is None else np.asarray(strata, dtype=np.int64)
    weights = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    has_start = start is not None
    start_ = np.full(n, -np.inf) if start is None else np.asarray(start, dtype=np.float64)
    order = np.lexsort((-status.astype(np.int64), -time, strata)).astype(np.int64)
    t, s, st, ev, cw = time[order], strata[order], start_[order], status[order], weights[order]
    n_strata = int(s.max()) + 1 if n else 0
    uniq = np.unique(np.concatenate([t, st[np.isfinite(st)]]))
    mult = np.int64(uniq.shape[0] + 2)

    def key(strat, tt):
        code = np.searchsorted(uniq, tt, side="left").astype(np.int64) + 1
        code[np.isneginf(tt)] = 0
        return strat * mult + code

    evmask = ev == 1
    ev_key = np.unique(key(s[evmask], t[evmask]))
    ev_strat = ev_key // mult
    ev_time = uniq[(ev_key % mult) - 1]
    k_per_stratum = np.bincount(ev_strat, minlength=n_strata)
    n_slots = ev_key.shape[0] + n_strata
    itype = np.int32 if n_slots < 2**31 - 1 else np.int64
    ke = (np.searchsorted(ev_key, key(s, t), side="right") + s).astype(itype)
    ks = (np.searchsorted(ev_key, key(s, st), side="right") + s).astype(itype)
    offsets = np.concatenate([[0], np.cumsum(k_per_stratum + 1)]).astype(np.int64)
    slot_stratum = np.repeat(np.arange(n_strata, dtype=np.int64), k_per_stratum + 1)
    slot_time = np.full(n_slots, np.inf)
    slot_time[np.arange(ev_key.shape[0], dtype=np.int64) + ev_strat] = ev_time
    slot_first = np.zeros(n_slots, np.uint8)
    slot_first[offsets[:-1]] = 1
    slot_last = np.zeros(n_slots, np.uint8)
    slot_last[offsets[1:] - 1] = 1
    eslot = ke[evmask] - 1
    slot_d = np.bincount(eslot, weights=cw[evmask], minlength=n_slots).astype(np.float64)
    slot_m = np.bincount(eslot, weights=(cw[evmask] > 0), minlength=n_slots).astype(np.float64)
    return RiskSets(order=order, ks=ks, ke=ke, event=ev.astype(np.uint8), row_stratum=s, slot_time=slot_time,
                    slot_stratum=slot_stratum, slot_first=slot_first, slot_last=slot_last, slot_d=slot_d,
                    slot_m=slot_m, has_start=has_start)
