"""One fit on every core: the parallel kernels of the risk-set families and the thread plumbing.

The data are large enough for the parallel paths (a stratum of more than
``BLOCKED_SLOTS`` event times: the blocked scans; many small strata: one stratum per
task; a column of more than two ``WALK_CHUNK``s of non-zeros, made small here: its walk and
move by chunks). A fit on 2 threads equals the one-thread fit (its serial code) to 1e-12, the
blocked scans give the same bits on 1 and 2 threads, and the refresh of only the strata a
move touched equals a refresh of all of them.
"""
import numba
import numpy as np
import pytest
import scipy.sparse as sp

import riskset
from riskset.backend import Backend, kernel_threads, serial_kernel_pool
from riskset.kernels.cpu import cox as cox_kernels
from riskset.kernels.cpu import cox_aggregates, cox_hessian, cox_rows, cox_walks, fine_gray_walks
from riskset.models.cox import CoxDatafit

TWO = numba.config.NUMBA_NUM_THREADS >= 2
needs_two = pytest.mark.skipif(not TWO, reason="needs NUMBA_NUM_THREADS >= 2")


def design(n, p=6, density=0.2, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=density, format="csc", random_state=seed, data_rvs=lambda k: rng.normal(size=k))
    eta = X @ np.linspace(-0.5, 0.5, p)
    return rng, X, eta


def survival(n=40_000, ties=False, start=False, strata=False, seed=0):
    """A data set whose first stratum has more than BLOCKED_SLOTS distinct event times; with
    ``strata`` also 6000 small strata (about 2.5 slots each)."""
    n = n + 20_000 if strata else n
    rng, X, eta = design(n, seed=seed)
    t = rng.exponential(1.0 / np.exp(eta))
    c = rng.exponential(1.0, n)
    time, status = np.minimum(t, c), (t <= c).astype(float)
    if ties:  # a few event times shared by 2-3 rows (Efron)
        time = np.round(time, 5) + 1e-6
    kw = {}
    if start:
        kw["start"] = np.where(rng.random(n) < 0.3, time * rng.random(n), 0.0)
    if strata:
        kw["strata"] = np.where(np.arange(n) < 40_000, 0, 1 + rng.integers(0, 6000, n))
    return riskset.from_arrays(X, time=time, status=status, **kw)


def fit_on(threads, data, model="cox", prior=riskset.Normal(variance=1.0), **options):
    return riskset.fit(data, model, prior, n_jobs=threads, **options)


CASES = {
    "plain": dict(),
    "stratified": dict(strata=True),
    "efron": dict(ties=True),
    "start_stop": dict(start=True),
}


@needs_two
@pytest.mark.parametrize("case", list(CASES))
def test_cox_fit_on_two_threads_equals_the_serial_fit(case):
    """Equal to 1e-12 (one thread scans a large stratum's slots in one pass, two in blocks) and
    the same bits on every run of two threads."""
    data = survival(**CASES[case])
    ties = "efron" if case == "efron" else "breslow"
    one = fit_on(1, data, ties=ties)
    two = fit_on(2, data, ties=ties)
    again = fit_on(2, data, ties=ties)
    assert one.converged and two.converged
    np.testing.assert_array_equal(two.coef.to_numpy(), again.coef.to_numpy())
    np.testing.assert_allclose(two.coef.to_numpy(), one.coef.to_numpy(), rtol=1e-12, atol=1e-12)
    assert two.objective == pytest.approx(one.objective, rel=1e-12)


@needs_two
@pytest.mark.parametrize("case", ["plain", "stratified", "efron"])
def test_chunked_walks_and_moves_equal_one_walk(case, monkeypatch):
    """Columns walked and moved by chunks of 64 non-zeros: on 1 and 2 threads the same bits
    (from the same aggregates: one thread refreshes a large stratum by another scan), (g, h)
    equal to the walk of the whole column in one chunk to 1e-12, the screen's g is the walk's
    g bit for bit, and a move leaves the same bits as the serial move."""
    arrays = survival_arrays(**CASES[case])
    ties = "efron" if case == "efron" else "breslow"
    monkeypatch.setattr(cox_walks, "WALK_CHUNK", 64)
    df = CoxDatafit(*arrays, ties=ties)
    monkeypatch.setattr(cox_walks, "WALK_CHUNK", 1 << 30)
    whole = CoxDatafit(*arrays, ties=ties)
    assert np.diff(df.indptr).min() > 2 * df.walk_chunk
    beta = np.linspace(-0.3, 0.3, df.n_coef)
    serial, chunked, one_chunk = df.new_state(beta), df.new_state(beta), whole.new_state(beta)
    for j in range(df.n_coef):
        with kernel_threads(2):
            g2, h2 = df.coordinate(chunked, j)  # refreshed first
            assert df.kernels.gradient(df.kernel_data(), chunked.kernel, j) == g2
            gw, hw = whole.coordinate(one_chunk, j)
        with kernel_threads(1):
            assert df.coordinate(chunked, j) == (g2, h2)  # the aggregates are current: no refresh
            df.move(serial, j, 0.1 * (j + 1))
            whole.move(one_chunk, j, 0.1 * (j + 1))
        with kernel_threads(2):
            df.move(chunked, j, 0.1 * (j + 1))
        assert g2 == pytest.approx(gw, rel=1e-12) and h2 == pytest.approx(hw, rel=1e-12)
        for name in ("eta", "w"):
            np.testing.assert_array_equal(getattr(chunked, name), getattr(serial, name))
        for name in ("ex", "ev"):
            np.testing.assert_array_equal(getattr(chunked.sums, name), getattr(serial.sums, name))


@needs_two
@pytest.mark.parametrize("case", ["plain", "stratified"])
def test_a_fit_with_chunked_walks_on_two_threads_equals_the_serial_fit(case, monkeypatch):
    monkeypatch.setattr(cox_walks, "WALK_CHUNK", 64)
    data = survival(**CASES[case])
    one, two, again = fit_on(1, data), fit_on(2, data), fit_on(2, data)
    assert one.converged and two.converged
    np.testing.assert_array_equal(two.coef.to_numpy(), again.coef.to_numpy())
    np.testing.assert_allclose(two.coef.to_numpy(), one.coef.to_numpy(), rtol=1e-12, atol=1e-12)


def test_the_data_take_the_parallel_paths():
    """The cases above reach the blocked scans and the parallel small strata."""
    df = CoxDatafit(*survival_arrays(strata=True))
    sizes = np.diff(df.slot_ptr)
    assert sizes.max() >= cox_aggregates.BLOCKED_SLOTS
    assert sizes[sizes < cox_aggregates.BLOCKED_SLOTS].sum() >= cox_aggregates.PARALLEL_SLOTS


def survival_arrays(**kw):
    data = survival(**kw)
    return data.X, data.time, data.status, data.start, data.strata


def competing_risks(n=30_000, seed=3):
    rng, X, eta = design(n, seed=seed)
    t1 = rng.exponential(1.0 / np.exp(eta))
    t2 = rng.exponential(2.0, t1.shape[0])
    c = rng.exponential(1.5, t1.shape[0])
    time = np.minimum(np.minimum(t1, t2), c)
    status = np.where(time == c, 0, np.where(time == t1, 1, 2))
    return riskset.from_arrays(X, time=time, status=status)


@needs_two
@pytest.mark.parametrize("chunk", [64, fine_gray_walks.WALK_CHUNK])
def test_fine_gray_fit_on_two_threads_equals_the_serial_fit(chunk, monkeypatch):
    """Chunks fixed by the data, their parts added in order: the same bits on 1 and 2 threads
    (chunks of 64 non-zeros: about 90 a column, walked and moved in parallel)."""
    monkeypatch.setattr(fine_gray_walks, "WALK_CHUNK", chunk)
    data = competing_risks()
    one, two = fit_on(1, data, "fine_gray"), fit_on(2, data, "fine_gray")
    assert one.converged and two.converged
    np.testing.assert_array_equal(two.coef.to_numpy(), one.coef.to_numpy())
    assert two.objective == one.objective


@needs_two
def test_fine_gray_walks_by_chunks_equal_one_walk_and_the_scan(monkeypatch):
    """A column walked by chunks of 64 non-zeros (on 1 and on 2 threads: the same bits) against
    the walk in one chunk and the O(N) scan: (g, h) equal to 1e-12 and 1e-10, the screen's g
    is the walk's g bit for bit, and a chunked move leaves the serial move's bits."""
    data = competing_risks()
    monkeypatch.setattr(fine_gray_walks, "WALK_CHUNK", 64)
    chunked = riskset.models.get_model("fine_gray").datafit(data)
    monkeypatch.setattr(fine_gray_walks, "WALK_CHUNK", 1 << 30)
    whole = riskset.models.get_model("fine_gray").datafit(data)
    scan = riskset.models.get_model("fine_gray", formulation="scan").datafit(data)
    assert np.diff(chunked.indptr).min() > 2 * chunked.walk_chunk
    beta = np.linspace(-0.3, 0.3, chunked.n_coef)
    states = {name: df.new_state(beta) for name, df in [("one", chunked), ("two", chunked), ("whole", whole),
                                                         ("scan", scan)]}
    for j in range(chunked.n_coef):
        with kernel_threads(1):
            g1, h1 = chunked.coordinate(states["one"], j)
            chunked.move(states["one"], j, 0.1 * (j + 1))
            gw, hw = whole.coordinate(states["whole"], j)
            whole.move(states["whole"], j, 0.1 * (j + 1))
            gs, hs = scan.coordinate(states["scan"], j)
            scan.move(states["scan"], j, 0.1 * (j + 1))
        with kernel_threads(2):
            g2, h2 = chunked.coordinate(states["two"], j)
            assert chunked.kernels.gradient(chunked.kernel_data(), states["two"].kernel, j) == g2
            chunked.move(states["two"], j, 0.1 * (j + 1))
        assert (g2, h2) == (g1, h1)
        assert g1 == pytest.approx(gw, rel=1e-12) and h1 == pytest.approx(hw, rel=1e-12)
        assert g1 == pytest.approx(gs, rel=1e-10) and h1 == pytest.approx(hs, rel=1e-10)
        for name in ("eta", "w", "W", "Wc"):
            np.testing.assert_array_equal(getattr(states["two"], name), getattr(states["whole"], name))


@needs_two
@pytest.mark.parametrize("case", ["plain", "efron", "start_stop"])
def test_blocked_scans_give_the_same_bits_on_one_and_two_threads(case):
    kw = CASES[case]
    df = CoxDatafit(*survival_arrays(**kw), ties="efron" if case == "efron" else "breslow")
    beta = np.linspace(-0.3, 0.3, df.n_coef)
    out = []
    for threads in (1, 2):
        state = df.new_state(beta)
        with kernel_threads(threads):
            cox_aggregates.refresh_blocked(0, df.slot_ptr[1], df.slots(), state.sums, True)
        s = state.sums
        out.append(np.concatenate([s.D, s.Q1, s.A1c, s.A2c, s.R1, s.T2]))
    np.testing.assert_array_equal(out[0], out[1])
    serial = df.new_state(beta)  # one thread: one serial scan per stratum
    np.testing.assert_allclose(out[0][:4 * df.rs.n_slots],
                               np.concatenate([serial.sums.D, serial.sums.Q1, serial.sums.A1c, serial.sums.A2c]),
                               rtol=1e-13)


@pytest.mark.parametrize("case", list(CASES))
def test_each_exit_slot_lies_in_one_piece_of_rows(case):
    """The pieces of rows (cox_rows.row_pieces) that the parallel sums by exit slot run over hold
    every row of a slot (and of an event's slot, ke - 1) in one piece, and no piece crosses a stratum."""
    df = CoxDatafit(*survival_arrays(**CASES[case]), ties="efron" if case == "efron" else "breslow")
    ptr, piece_stratum = df.row_pieces
    piece = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
    assert ptr.size > 8  # several pieces: the parallel paths run
    for slots in (df.ke, np.where(df.event == 1, df.ke - 1, -1)):
        keep = slots >= 0
        first = np.full(df.rs.n_slots + 1, -1)
        first[slots[keep]] = piece[keep]
        assert np.all(first[slots[keep]] == piece[keep])  # one piece per slot (the last write is every write)
    np.testing.assert_array_equal(df.rs.row_stratum, piece_stratum[piece])


@needs_two
@pytest.mark.parametrize("case", list(CASES))
def test_the_passes_over_rows_give_the_same_bits_on_one_and_two_threads(case):
    """The state's sums by exit slot, the rows' hazard terms and a Hessian-vector product's
    row weights (over the pieces of rows in parallel) are the same numbers on 1 and 2 threads."""
    df = CoxDatafit(*survival_arrays(**CASES[case]), ties="efron" if case == "efron" else "breslow")
    state = df.new_state(np.linspace(-0.3, 0.3, df.n_coef))
    ns = df.rs.n_slots
    u = np.sin(np.arange(df.n_rows))
    out = []
    for threads in (1, 2):
        w, shift = np.empty(df.n_rows), np.empty(df.n_strata)
        sums = state.sums._replace(ex=np.empty(ns), en=np.empty(ns), ev=np.empty(ns))  # the state's aggregates
        v, z, U1, E1u, C = np.empty(df.n_rows), np.empty(df.n_rows), np.empty(ns), np.empty(ns), np.empty(ns)
        with kernel_threads(threads):
            cox_rows.weights_and_slot_sums(state.eta, df.rows(), df.slots(), w, shift, sums)
            cox_hessian.row_hazard_terms(state.w, df.rows(), df.slots(), state.sums, v)
            cox_hessian.hessian_vector_rows(u, state.w, v, df.rows(), df.slots(), state.sums, U1, E1u, C, z)
        out.append(np.concatenate([w, shift, sums.ex, sums.en, sums.ev, v, z]))
    np.testing.assert_array_equal(out[0], out[1])
    np.testing.assert_array_equal(out[0][:df.n_rows], state.w)


@pytest.mark.parametrize("case", ["plain", "efron", "start_stop"])
def test_a_hessian_vector_product_over_pieces_equals_the_formed_block_times_the_vector(case):
    """A stratum of more than BLOCKED_SLOTS event times, rows in many pieces: the Hessian-vector
    product (its passes over rows in parallel) equals the dense block's product."""
    df = CoxDatafit(*survival_arrays(**CASES[case]), ties="efron" if case == "efron" else "breslow")
    assert df.slot_ptr[1] >= cox_aggregates.BLOCKED_SLOTS
    state = df.new_state(np.linspace(-0.3, 0.3, df.n_coef))
    cols = np.arange(df.n_coef)
    b = np.linspace(1.0, -1.0, df.n_coef)
    np.testing.assert_allclose(df.local_quadratic(state, cols).hessian_times(b), df.hessian(state, cols) @ b,
                               rtol=1e-11)


def small_strata_datafit(n=3000, seed=1):
    rng, X, eta = design(n, seed=seed)
    time = rng.exponential(1.0 / np.exp(eta))
    status = (rng.random(n) < 0.7).astype(float)
    return CoxDatafit(X, time, status, strata=rng.integers(0, 400, n))


def test_the_sweep_and_the_datafit_call_one_compiled_refresh():
    """The sweep refreshes the strata of ``col_strata`` with ``full`` = cox.PARTIAL, the datafit
    ``all_strata`` with a bool: Numba types both alike (PARTIAL a bool, not the literal ``False``;
    one dtype of strata), so that both call one compiled refresh and its parallel scans (a
    second specialisation cost seconds of a first fit's compile time)."""
    df = small_strata_datafit()
    assert numba.typeof(df.all_strata) == numba.typeof(df.col_strata)
    assert numba.typeof(cox_kernels.PARTIAL) == numba.typeof(True)


@pytest.mark.parametrize("moves", [1, 3, cox_kernels.MOVED_COLUMNS + 2])
def test_refresh_of_the_moved_strata_equals_a_full_refresh(moves):
    """A coordinate after ``moves`` moves refreshes only the strata of the moved columns (all of
    them once more columns moved than the state lists): the aggregates of a full refresh."""
    df = small_strata_datafit()
    state = df.new_state(np.zeros(df.n_coef))
    for k in range(moves):
        df.move(state, k % df.n_coef, 0.1 * (k + 1))
    assert np.all(state.moved[0] == (moves if moves <= cox_kernels.MOVED_COLUMNS else cox_kernels.ALL_MOVED))
    g, h = df.coordinate(state, 0)
    assert state.moved[0] == 0
    partial = (state.sums.D.copy(), state.sums.A1c.copy(), state.sums.A2c.copy())
    df._refresh(state)
    for a, b in zip(partial, (state.sums.D, state.sums.A1c, state.sums.A2c)):
        np.testing.assert_array_equal(a, b)
    assert (g, h) == df.coordinate(state, 0)


def test_a_column_touches_only_the_strata_of_its_rows():
    df = small_strata_datafit()
    assert df.col_strata.dtype == np.int32  # up to one entry per non-zero: the narrow type
    for j in range(df.n_coef):
        rows = df.indices[df.indptr[j]:df.indptr[j + 1]]
        np.testing.assert_array_equal(df.col_strata[df.strata_ptr[j]:df.strata_ptr[j + 1]],
                                      np.unique(df.rs.row_stratum[rows]))


def test_kernel_threads_are_set_for_the_fit_and_restored():
    before = numba.get_num_threads()
    with kernel_threads(10_000):
        assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS
        with Backend.of("cpu", n_jobs=1).fit_threads():
            assert numba.get_num_threads() == 1
        assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS
    assert numba.get_num_threads() == before


def test_replicate_workers_run_serial_kernels():
    """k Python threads of a replicate batch never run k x n_jobs kernel threads."""
    with kernel_threads(2), serial_kernel_pool(2) as pool:
        assert set(pool.map(lambda _: numba.get_num_threads(), range(8))) == {1}
    with Backend.of("cpu", n_jobs=2).threads() as pool:
        assert set(pool.map(lambda _: numba.get_num_threads(), range(8))) == {1}


@needs_two
@pytest.mark.parametrize("model", ["logistic", "poisson"])
def test_glm_fits_give_the_same_bits_on_one_and_two_threads(model):
    """Columns (and the intercept) of more than two chunks of entries run their sums and moves by
    chunks in parallel on two threads, one after another on one: the same chunks, added in the
    same order, the same bits."""
    from riskset.kernels.cpu import glm as glm_kernels

    n = 6 * glm_kernels.CHUNK
    rng, X, eta = design(n, p=5, density=0.5, seed=4)
    y = rng.random(n) < 1 / (1 + np.exp(-eta)) if model == "logistic" else rng.poisson(np.exp(0.3 * eta))
    data = riskset.from_arrays(X, y=y.astype(float))
    assert np.diff(X.indptr).max() > 2 * glm_kernels.CHUNK
    one, two = fit_on(1, data, model), fit_on(2, data, model)
    assert one.converged and two.converged
    np.testing.assert_array_equal(two.coef.to_numpy(), one.coef.to_numpy())
    assert two.objective == one.objective


def test_constant_columns_match_scipy_with_stored_zeros_and_empty_columns():
    """The compiled test of zero-variance columns (models.base.drop_constant_covariates) equals
    scipy's column max == min, implicit and stored zeros included."""
    from riskset.kernels.cpu.separability import constant_columns

    rng = np.random.default_rng(5)
    for _ in range(300):
        n, p = int(rng.integers(1, 7)), int(rng.integers(1, 7))
        X = sp.random(n, p, density=rng.random(), format="csc", random_state=rng,
                      data_rvs=lambda k: rng.integers(-1, 2, k).astype(float))
        X.sum_duplicates()
        expected = np.asarray(X.max(axis=0).todense()).ravel() == np.asarray(X.min(axis=0).todense()).ravel()
        np.testing.assert_array_equal(constant_columns(X.indptr, X.data, n), expected)


@needs_two
def test_fine_gray_hessian_by_row_blocks_equals_one_walk(monkeypatch):
    """The Fine-Gray Hessian block walked in row blocks (their prefix sums' terms added as
    outer products) equals the one walk over every row to rounding, and has the same bits on
    one and two threads."""
    from riskset.kernels.cpu import fine_gray as fine_gray_kernels

    rng, X, eta = design(3 * fine_gray_kernels.HESSIAN_BLOCK_ROWS, seed=6)
    t1 = rng.exponential(1.0 / np.exp(eta))
    t2 = rng.exponential(2.0, t1.shape[0])
    c = rng.exponential(1.5, t1.shape[0])
    time = np.minimum(np.minimum(t1, t2), c)
    status = np.where(time == c, 0, np.where(time == t1, 1, 2))
    datafit = riskset.models.get_model("fine_gray").datafit(riskset.from_arrays(X, time=time, status=status))
    state = datafit.new_state(np.linspace(-0.3, 0.3, datafit.n_coef))
    cols = np.arange(datafit.n_coef)
    assert fine_gray_kernels.hessian_blocks(datafit.n_rows, cols.size) == 3
    with kernel_threads(1):
        one = datafit.hessian(state, cols)
    with kernel_threads(2):
        two = datafit.hessian(state, cols)
    np.testing.assert_array_equal(two, one)
    monkeypatch.setattr(fine_gray_kernels, "hessian_blocks", lambda n, m: 1)
    walk = datafit.hessian(state, cols)
    np.testing.assert_allclose(one, walk, rtol=1e-12, atol=1e-12 * np.abs(walk).max())


@needs_two
def test_conditional_poisson_by_chunks_of_strata_on_two_threads_equals_the_serial_fit():
    """Columns of more than two chunks of non-zeros take their derivatives and moves by chunks
    of whole strata in parallel on two threads: the fit equals the one-thread fit to rounding,
    and two runs on two threads give the same bits."""
    from riskset.kernels.cpu import conditional as conditional_kernels

    n = 6 * conditional_kernels.CHUNK
    rng, X, eta = design(n, p=5, density=0.5, seed=7)
    y = rng.poisson(np.exp(0.3 * eta)).astype(float)
    data = riskset.from_arrays(X, y=y, strata=np.arange(n) // 8)
    assert np.diff(X.indptr).max() > 2 * conditional_kernels.CHUNK
    one, two, again = (fit_on(k, data, "conditional_poisson") for k in (1, 2, 2))
    assert one.converged and two.converged
    np.testing.assert_array_equal(two.coef.to_numpy(), again.coef.to_numpy())
    np.testing.assert_allclose(two.coef.to_numpy(), one.coef.to_numpy(), rtol=1e-12, atol=1e-12)
