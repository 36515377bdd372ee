"""Column-set products (core.products: ColumnProducts): both layouts against scipy, and the
same bits on 1 and 2 threads (fixed row blocks and tiles, partial sums reduced in block order)."""
import numba
import platform

import numpy as np
import pytest
import scipy.sparse as sp

import riskset
from riskset.core.products import column_products, csc, csr, partition
from riskset.core.products.column_products import ColumnProducts
from riskset.core.design import CompactCSC, canonical_csc
from riskset.models import get_model
from riskset.solver import newton
from riskset.solver.ccd import SolverOptions, fit_ccd

two_threads = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="Numba has a single thread here")


def products(X, monkeypatch, layout):
    """ColumnProducts of X with small row blocks and tiles (several even for a small X) on one layout."""
    monkeypatch.setattr(partition, "MIN_BLOCK_ROWS", 16)
    monkeypatch.setattr(partition, "TILE_ROWS", 32)
    X = sp.csc_matrix(X)
    X.sort_indices()
    cp = ColumnProducts(CompactCSC.of(canonical_csc(X)))
    monkeypatch.setattr(ColumnProducts, "_rows_cheaper", lambda self, cols, threads=1: layout == "csr")
    gram_layout = {"csc": None, "csr": "all", "subset": "subset"}[layout]  # subset: X_A's own row copy
    monkeypatch.setattr(ColumnProducts, "_gram_on_rows", lambda self, cols: gram_layout)
    return cp


def design(rng, indicators, n=300, p=12):
    X = sp.random(n, p, density=0.3, random_state=np.random.RandomState(3), format="csc")
    if indicators:
        X.data[:] = 1.0
    else:
        X.data = rng.normal(size=X.nnz)
    return X


def dense(X, cols):
    """X[:, cols] with -1 the column of ones."""
    full = np.hstack([np.ones((X.shape[0], 1)), X.toarray()])
    return full[:, np.asarray(cols) + 1]


@pytest.mark.parametrize("layout", ["csc", "csr", "subset"])
@pytest.mark.parametrize("indicators", [False, True])
def test_products_equal_the_dense_ones(layout, indicators, rng, monkeypatch):
    X = design(rng, indicators)
    cp = products(X, monkeypatch, layout)
    cols = np.array([7, -1, 0, 3, 11])  # unsorted, with the column of ones
    Xa = dense(X, cols)
    b, z, c = rng.normal(size=cols.size), rng.normal(size=X.shape[0]), rng.uniform(size=X.shape[0])
    assert np.allclose(cp.times(cols, b), Xa @ b, rtol=1e-14, atol=1e-13)
    assert np.allclose(cp.dot(cols, z), Xa.T @ z, rtol=1e-14, atol=1e-13)
    xz, x2z = cp.dot2(cols, z)
    assert np.allclose(xz, Xa.T @ z, rtol=1e-14, atol=1e-13)
    assert np.allclose(x2z, (Xa**2).T @ z, rtol=1e-14, atol=1e-13)
    assert np.allclose(cp.gram(cols, c), Xa.T @ (c[:, None] * Xa), rtol=1e-14, atol=1e-13)
    assert np.allclose(cp.gram_times(cols, c, b), Xa.T @ (c * (Xa @ b)), rtol=1e-14, atol=1e-13)


@pytest.mark.parametrize("indicators", [False, True])
def test_a_gram_operator_builds_the_row_copy_of_its_set_only_from_its_fourth_product(indicators, rng, monkeypatch):
    """A Newton step preconditioned by centring asks 2-3 Hessian-vector products of its set, fewer
    than A's row-major copy costs (~6 products on it): an operator's first ROW_COPY_AFTER - 1 products
    run on the CSC, the later ones on the copy, built then; every product is X_A' diag(c) X_A b."""
    X = design(rng, indicators)
    cp = products(X, monkeypatch, "csr")  # the copy is the cheaper layout per product
    cols = np.array([7, -1, 0, 3, 11])
    Xa, c = dense(X, cols), rng.uniform(size=X.shape[0])
    gram = cp.gram_operator(cols, c)
    for k in range(1, column_products.ROW_COPY_AFTER + 2):
        b = rng.normal(size=cols.size)
        assert np.allclose(gram(b), Xa.T @ (c * (Xa @ b)), rtol=1e-14, atol=1e-13)
        assert (cp._kept.rows is not None) == (k >= column_products.ROW_COPY_AFTER)


@pytest.mark.parametrize("indicators", [False, True])
def test_both_layouts_give_the_same_bits_for_x_times_b(indicators, rng, monkeypatch):
    """Every row adds its terms in column order on either layout, so the layout of X_A b may
    follow the thread count."""
    X = design(rng, indicators)
    cols, b = np.array([-1, 2, 5, 9]), rng.normal(size=4)
    on_csc = products(X, monkeypatch, "csc").times(cols, b)
    assert np.array_equal(products(X, monkeypatch, "csr").times(cols, b), on_csc)


@pytest.mark.parametrize("indicators", [False, True])
def test_a_product_at_some_rows_is_the_full_products_rows(indicators, rng, monkeypatch):
    """X[rows, A] b (a fold's held-out rows) has the bits of X_A b at those rows."""
    X = design(rng, indicators)
    cols, b = np.array([-1, 9, 2, 5]), rng.normal(size=4)
    rows = np.flatnonzero(rng.random(X.shape[0]) < 0.2)
    cp = products(X, monkeypatch, "csc")
    assert np.array_equal(cp.times_at(rows, cols, b), cp.times(cols, b)[rows])
    assert cp.times_at(rows[:0], cols, b).shape == (0,)


def on_threads(k, fn):
    before = numba.get_num_threads()
    numba.set_num_threads(k)
    try:
        return fn()
    finally:
        numba.set_num_threads(before)


@two_threads
@pytest.mark.parametrize("layout", ["csc", "csr", "subset"])
def test_products_are_bitwise_equal_on_one_and_two_threads(layout, rng, monkeypatch):
    X = design(rng, indicators=False, n=2000, p=30)
    cp = products(X, monkeypatch, layout)
    cols = np.r_[-1, np.arange(0, 30, 2)]
    b, z, c = rng.normal(size=cols.size), rng.normal(size=X.shape[0]), rng.uniform(size=X.shape[0])

    def run():
        return [cp.times(cols, b), cp.dot(cols, z), *cp.dot2(cols, z), cp.gram(cols, c), cp.gram_times(cols, c, b)]

    assert cp.bounds.size > 3 and cp.tiles.size > 3
    for one, two in zip(on_threads(1, run), on_threads(2, run)):
        assert np.array_equal(one, two)


@two_threads
@pytest.mark.parametrize("model", ["cox", "logistic"])
def test_polished_fits_are_bitwise_equal_on_one_and_two_threads(model, monkeypatch):
    """Conjugate-gradient Newton steps (every active set) on the row-major copy, in blocks."""
    monkeypatch.setattr(partition, "MIN_BLOCK_ROWS", 64)
    monkeypatch.setattr(column_products, "CACHED_ROWS", 0)
    monkeypatch.setattr(newton, "DENSE_NEWTON_MAX", 1)
    d = riskset.simulate(n=3000, p=40, density=0.3, model=model, seed=11)

    def run():
        df = get_model(model).datafit(d)
        steps = []
        original = newton.newton_step
        monkeypatch.setattr(newton, "newton_step", lambda *a: steps.append(a[3].size) or original(*a))
        l1 = np.full(df.n_coef, 2.0)
        result = fit_ccd(df, l1, np.zeros(df.n_coef), options=SolverOptions(tol=1e-12))
        assert result.converged and max(steps) > 1
        return result.beta, result.objective

    (beta1, obj1), (beta2, obj2) = on_threads(1, run), on_threads(2, run)
    assert np.array_equal(beta1, beta2) and obj1 == obj2


def test_products_pickle_without_their_lock_or_row_major_copy(rng, monkeypatch):
    """Datafits travel to dask workers: their products must pickle."""
    import pickle

    X = design(rng, indicators=True)
    cp = products(X, monkeypatch, "csr")
    cols, b = np.array([0, 4]), rng.normal(size=2)
    expected = cp.times(cols, b)
    copy = pickle.loads(pickle.dumps(cp))
    assert copy._csr is None and np.array_equal(copy.times(cols, b), expected)


def test_gram_layout_follows_the_work(rng):
    """Few columns: merge pairs; a few dozen sparse ones: their own row copy; most of X: X's."""
    X = sp.random(4000, 200, density=0.05, random_state=np.random.RandomState(5), format="csc")
    X.sort_indices()
    cp = ColumnProducts(CompactCSC.of(canonical_csc(X)))
    assert cp._gram_on_rows(np.array([3, 8])) is None
    assert cp._gram_on_rows(np.r_[-1, np.arange(40)]) == "subset"
    assert cp._gram_on_rows(np.arange(150)) == "all"


@pytest.mark.parametrize("indicators", [False, True])
def test_row_major_copy_of_a_column_subset_is_scipys(indicators, rng, monkeypatch):
    """Entries hold positions in the (unsorted) set, a row's in the set's order, built by row
    blocks: the same copy as scipy's CSR of X[:, cols], on 1 and 2 threads."""
    X = design(rng, indicators, n=2000, p=30)
    cp = products(X, monkeypatch, "csr")
    cols = np.array([17, 3, 29, 0, 8])
    expected = sp.csr_matrix(X.tocsc()[:, cols])
    assert cp.bounds.size > 3 and cp.tiles.size > 3
    for k in (1, 2):
        cp._kept.rows = None
        rptr, rcol, rval = on_threads(k, lambda: cp.rows_of(cols))
        assert np.array_equal(rptr, expected.indptr) and np.array_equal(rcol, expected.indices)
        assert np.array_equal(rval, expected.data)


def test_each_thread_keeps_its_own_row_copy(rng, monkeypatch):
    """The replicates' polishes run in threads on different active sets: each thread's last
    copy survives the other's."""
    import threading

    X = design(rng, indicators=True, n=500, p=20)
    cp = products(X, monkeypatch, "csr")
    first = cp.rows_of(np.array([1, 2, 3]))
    other = []
    worker = threading.Thread(target=lambda: other.append(cp.rows_of(np.array([4, 5]))))
    worker.start()
    worker.join()
    assert cp.rows_of(np.array([1, 2, 3])) is first and other[0] is not first


def test_tile_pointers_start_each_column_at_each_tile(rng, monkeypatch):
    """ptr[t, j] is the first non-zero of column j in tile t or after (an empty tile of a
    column points at the next tile's start), ptr[-1, j] the column's end; each non-zero's
    offset is its row less its tile's first row, in 16 bits."""
    X = design(rng, indicators=False, n=500, p=9)
    X[:, 4] = 0.0  # an empty column
    X.eliminate_zeros()
    cp = products(X, monkeypatch, "csc")
    ptr, offsets = cp.tile_rows()
    assert cp.tiles.size > 10 and ptr.shape == (cp.tiles.size, X.shape[1]) and offsets.dtype == np.uint16
    for j in range(X.shape[1]):
        rows = X.indices[X.indptr[j]:X.indptr[j + 1]]
        expected = X.indptr[j] + np.searchsorted(rows, cp.tiles)
        assert np.array_equal(ptr[:, j], expected)
    tile_of = np.searchsorted(cp.tiles, X.indices, side="right") - 1
    assert np.array_equal(offsets, X.indices - cp.tiles[tile_of])


def test_tiles_of_more_than_2_16_rows_keep_32_bit_offsets():
    """A very wide, sparse X gets tiles longer than 16 bits can count: the offsets are then
    uint32, and the products still equal scipy's."""
    rng = np.random.default_rng(3)
    n, p = 300_000, 5_000
    X = sp.random(n, p, density=2e-5, format="csc", random_state=rng, data_rvs=lambda k: rng.normal(size=k))
    cp = ColumnProducts(CompactCSC.of(canonical_csc(X)))
    ptr, offsets = cp.tile_rows()
    assert np.diff(cp.tiles).max() > 1 << 16 and offsets.dtype == np.uint32
    cols, b, z = np.arange(0, p, 3), rng.normal(size=-(-p // 3)), rng.normal(size=n)
    out = np.empty(n)
    csc.tiled_times(ptr, cp.tiles, offsets, cp.values, cp.value_shift, cp.unit, cols, b, out)
    assert np.allclose(out, X[:, cols] @ b, rtol=1e-12, atol=1e-12)
    partial, partial2 = np.empty((cp.tiles.size - 1, cols.size)), np.empty((0, 0))
    csc.tiled_dot(ptr, cp.tiles, offsets, cp.values, cp.value_shift, cp.unit, cols, z, False, partial, partial2)
    assert np.allclose(partial.sum(axis=0), X[:, cols].T @ z, rtol=1e-12, atol=1e-12)


def test_row_tiles_bound_the_pointer_table():
    """At most one tile pointer per four non-zeros: a wide, very sparse X gets fewer, longer tiles."""
    assert partition.row_tiles(10**6, 1000, 5 * 10**7).size - 1 == -(-10**6 // partition.TILE_ROWS)
    tiles = partition.row_tiles(10**6, 10**5, 4 * 10**6)
    assert (tiles.size - 1) * 10**5 <= 10**6 and tiles[0] == 0 and tiles[-1] == 10**6


@pytest.mark.parametrize("indicators", [False, True])
def test_a_product_updated_over_the_rows_that_changed_is_the_direct_one(indicators, rng):
    """dot_changed: X' z_new from X' z_old over the rows where z changed, once X's row-major copy
    is at hand; None (compute it directly) without the copy or when over a quarter changed."""
    X = design(rng, indicators, n=400)
    cp = ColumnProducts(CompactCSC.of(canonical_csc(X)))
    z_old = rng.normal(size=400)
    z_new = z_old.copy()
    changed = rng.choice(400, 60, replace=False)
    z_new[changed] = np.where(rng.random(60) < 0.5, 0.0, rng.normal(size=60))
    known = X.T @ z_old
    assert cp.dot_changed(known, z_old, z_new) is None  # no row-major copy yet
    cp.row_major()
    np.testing.assert_allclose(cp.dot_changed(known, z_old, z_new), X.T @ z_new, rtol=1e-12, atol=1e-12)
    z_many = z_old.copy()
    z_many[:101] += 1.0
    assert cp.dot_changed(known, z_old, z_many) is None


@pytest.mark.parametrize("indicators", [False, True])
def test_a_product_updated_over_its_support_rows_needs_no_full_row_copy(indicators, rng):
    """dot_changed with ``support`` (the rows outside which z never changes: a risk-set family's
    event rows): without X's row-major copy, a kept copy of those rows alone gives the update
    (and X's copy is not built); None where z changed outside them, or where they are over a
    quarter of the rows."""
    X = design(rng, indicators, n=400)
    cp = ColumnProducts(CompactCSC.of(canonical_csc(X)))
    support = np.sort(rng.choice(400, 90, replace=False))
    z_old = np.zeros(400)
    z_old[support] = rng.normal(size=90)
    z_new = z_old.copy()
    changed = support[::7]
    z_new[changed] = np.where(rng.random(changed.size) < 0.5, 0.0, rng.normal(size=changed.size))
    known = X.T @ z_old
    np.testing.assert_allclose(cp.dot_changed(known, z_old, z_new, support=support), X.T @ z_new, rtol=1e-12,
                               atol=1e-12)
    assert cp._csr is None and cp._support[0][0].size == 91  # the copy of the 90 support rows alone
    outside = z_new.copy()
    outside[np.setdiff1d(np.arange(400), support)[0]] = 1.0
    assert cp.dot_changed(known, z_old, outside, support=support) is None
    wide = np.arange(101)
    assert ColumnProducts(CompactCSC.of(canonical_csc(X))).dot_changed(known, z_old, z_new, support=wide) is None


@pytest.mark.parametrize("row_copy", [True, False], ids=["row-major-copy", "event-rows"])
@pytest.mark.parametrize("model", ["cox", "fine_gray"])
def test_a_training_folds_static_gradient_comes_from_the_full_datas(model, row_copy, rng):
    """A reweighted view whose weights changed on a tenth of the rows takes its static gradient
    X' (c * event) from the full data's, read from X's row-major copy or, without it, from a
    copy of the event rows alone, and it equals the one computed afresh."""
    data = riskset.simulate(n=2000, p=8, model="cox", seed=4, censoring=0.85)
    if model == "fine_gray":
        status = np.asarray(data.status).copy()
        status[(status == 1) & (rng.random(2000) < 0.3)] = 2
        import dataclasses
        data = dataclasses.replace(data, status=status)
    datafit = get_model(model).datafit(data)
    if row_copy:
        datafit.products.row_major()
    datafit.gx0  # noqa: B018 (computed, as a path's fits do before the folds)
    fold = datafit.reweighted(np.where(np.arange(2000) % 10 == 4, 0.0, 1.0))
    assert "gx0" in fold.__dict__  # set by reweighted, from the full data's
    assert (datafit.products._csr is None) == (not row_copy)  # without it, from the event rows' copy
    fresh = fold.products.dot(np.arange(fold.n_coef), fold.cw * fold.event)
    np.testing.assert_allclose(fold.gx0, fresh, rtol=1e-12, atol=1e-9)


def test_column_norms_of_a_set_with_the_ones_column():
    X = sp.random(200, 6, density=0.3, format="csc", random_state=4)
    cp = ColumnProducts(CompactCSC.of(canonical_csc(X)))
    want = np.r_[np.sqrt(200.0), np.sqrt(np.asarray(X.multiply(X).sum(axis=0)).ravel()[[0, 5, 2]])]
    np.testing.assert_allclose(cp.column_norms(np.array([-1, 0, 5, 2])), want, rtol=1e-14)
    empty = sp.csc_matrix((50, 0))
    assert ColumnProducts(CompactCSC.of(canonical_csc(empty))).column_norms([-1]).tolist() \
        == [np.sqrt(50.0)]


def test_a_product_asked_again_is_kept_and_handed_out_as_a_copy(monkeypatch):
    """times_recurring: the bits of times; kept from the third ask (the fourth reads it: the
    kernel is not called); every ask gets its own array; a product asked twice (a fit's last
    state and its score) is not kept; the kept products and bytes stay under their bounds."""
    rng = np.random.default_rng(2)
    cp = products(design(rng, indicators=False), monkeypatch, "csc")
    cols, b = np.array([1, 4, 7]), np.array([0.5, -1.0, 2.0])
    first = cp.times_recurring(cols, b)
    np.testing.assert_array_equal(first, cp.times(cols, b))
    second = cp.times_recurring(cols, b)
    assert not cp._recurring  # asked twice: remembered by its digest and count only
    third = cp.times_recurring(cols, b)
    assert len(cp._recurring) == 1
    first[:] = np.nan  # the caller owns its array (a state moves its linear predictor in place)
    kernel = column_products.tiled_times
    monkeypatch.setattr(column_products, "tiled_times", lambda *a: pytest.fail("a kept product was recomputed"))
    fourth = cp.times_recurring(cols, b)
    monkeypatch.setattr(column_products, "tiled_times", kernel)
    np.testing.assert_array_equal(fourth, second)
    np.testing.assert_array_equal(fourth, third)
    assert fourth is not third and np.all(np.isfinite(fourth))
    monkeypatch.setattr(column_products, "RECURRING_BYTES", fourth.nbytes)  # room for one: the older goes
    other = np.array([2.0, 2.0, 2.0])
    for _ in range(3):
        cp.times_recurring(cols, other)
    assert len(cp._recurring) == 1
    monkeypatch.setattr(column_products, "RECURRING_BYTES", 1 << 28)  # room for many: the count bounds them
    for start in range(column_products.RECURRING_KEPT + 2):  # e.g. the starts of the variances a CV scored
        for _ in range(3):
            cp.times_recurring(cols, np.full(3, float(start)))
    assert len(cp._recurring) == column_products.RECURRING_KEPT


def test_freed_memory_is_kept_unless_the_process_has_chosen():
    """riskset.core.memory: glibc's malloc is tuned once (riskset's import did it), and left
    alone where the environment sets its thresholds or RISKSET_KEEP_FREED_MEMORY=0."""
    import platform

    from riskset.core.memory import keep_freed_memory

    assert not keep_freed_memory({"RISKSET_KEEP_FREED_MEMORY": "0"})
    assert not keep_freed_memory({"MALLOC_TRIM_THRESHOLD_": "65536"})  # e.g. a Dask worker returning memory
    assert not keep_freed_memory({"MALLOC_TOP_PAD_": "0"})
    glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert keep_freed_memory({}) == glibc


THREAD_FAULTS = """
import json, resource, threading
import numpy as np
import riskset

def faults():
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt

def fits():  # a replicate thread's arrays, many alive at once, allocated and freed again and again
    for round in range(10):
        arrays = [np.ones(1_000_000) for _ in range(16)]  # 8 MB each, every page written
        del arrays
        if round == 0:
            first = faults()  # the first round faults its pages in, in whichever arena the thread got
    later.append(faults() - first)

later = []
for _ in range(3):
    thread = threading.Thread(target=fits)
    thread.start()
    thread.join()
print(json.dumps(later))
"""


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's allocator")
def test_threads_reuse_the_freed_heap_instead_of_fresh_pages():
    """riskset.core.memory.TOP_PAD_BYTES: arrays that a thread allocates and frees again and
    again (the folds of a cross-validation on a replicate thread) reuse the heaps it freed; with
    glibc's own settings (RISKSET_KEEP_FREED_MEMORY=0) a heap of a thread's arena was unmapped
    once free, and every round faulted its pages in again."""
    import json
    import os
    import subprocess
    import sys

    # glibc's and riskset's malloc settings from this process's environment left out (a Dask
    # nanny of another test may have set MALLOC_TRIM_THRESHOLD_ here)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "RISKSET_KEEP_FREED_MEMORY"}

    def later_rounds_faults(**env):
        run = subprocess.run([sys.executable, "-c", THREAD_FAULTS], env={**clean, **env}, capture_output=True,
                             text=True, check=True)
        return sum(json.loads(run.stdout))

    tuned, glibc_defaults = later_rounds_faults(), later_rounds_faults(RISKSET_KEEP_FREED_MEMORY="0")
    assert glibc_defaults > 1000  # a check that this measures what it says
    assert tuned < glibc_defaults / 10


def test_the_outermost_top_level_call_returns_the_freed_memory(monkeypatch):
    """riskset.core.memory.returns_freed_memory: the freed heap goes back to the system once,
    when the outermost top-level call ends (a cross-validation's refit is inside it), also when
    it raises; riskset.fit and cross_validate are such calls."""
    from riskset.core import memory

    released = []
    monkeypatch.setattr(memory, "release_freed_memory", lambda: released.append(1))

    @memory.returns_freed_memory
    def inner():
        return 1

    @memory.returns_freed_memory
    def outer(fail=False):
        before = len(released)
        inner()
        assert len(released) == before  # inside a call: nothing released
        if fail:
            raise ValueError("stop")
        return inner() + 1

    assert outer() == 2 and len(released) == 1
    with pytest.raises(ValueError):
        outer(fail=True)
    assert len(released) == 2
    data = riskset.from_arrays(sp.csc_matrix(np.eye(6)[:, :2]), y=np.array([0, 1, 0, 1, 1, 0.0]))
    riskset.fit(data, "logistic", riskset.Normal(variance=1.0))
    assert len(released) == 3
    for call in (riskset.fit, riskset.cross_validate, riskset.bootstrap, riskset.profile_loglik):
        assert call.__wrapped__.__name__ == call.__name__


def test_the_freed_heap_goes_back_only_above_its_bound(monkeypatch):
    """release_freed_memory keeps a freed heap of RELEASED_ABOVE or less for the next call (a loop
    of small fits would fault it in again) and gives a larger one back."""
    from riskset.core import memory

    if not memory._tuned or memory.freed_heap_bytes() is None:
        pytest.skip("the allocator is not glibc's (2.33 or later) tuned by riskset")
    blocks = [np.ones(20 << 17) for _ in range(24)]  # 24 blocks of 20 MB: served from the heap
    del blocks
    freed = memory.freed_heap_bytes()
    assert freed > memory.RELEASED_ABOVE
    monkeypatch.setattr(memory, "RELEASED_ABOVE", freed + 1)
    assert not memory.release_freed_memory() and memory.freed_heap_bytes() >= freed - (1 << 20)
    monkeypatch.setattr(memory, "RELEASED_ABOVE", 256 << 20)
    assert memory.release_freed_memory() and memory.freed_heap_bytes() < freed


@pytest.mark.parametrize("n_cols, itype", [(65536, np.uint16), (65537, np.uint32)])
def test_the_row_major_copy_keeps_the_narrowest_column_indices(n_cols, itype):
    """16-bit column indices up to 2^16 columns, 32-bit beyond; products on the copy equal scipy's."""
    rng = np.random.default_rng(5)
    X = sp.random(40, n_cols, density=2e-3, format="csc", random_state=rng, data_rvs=lambda k: rng.normal(size=k))
    X[:, n_cols - 1] = 1.0  # the last column's index needs every bit
    X = X.tocsc()
    cp = ColumnProducts(CompactCSC.of(canonical_csc(X)))
    rptr, rcol, rval = cp.row_major()
    assert rcol.dtype == itype and rcol.max() == n_cols - 1
    z = rng.normal(size=X.shape[0])
    partial, partial2 = np.zeros((cp.bounds.size - 1, n_cols + 1)), np.zeros((0, 0))
    csr.csr_dot(rptr, rcol, rval, np.arange(n_cols), True, -1, z, cp.bounds, False, partial, partial2)
    assert np.allclose(partial[:, :n_cols].sum(axis=0), X.T @ z, rtol=1e-12, atol=1e-12)
