"""Preparing a design (riskset.core.design): the O(nnz) kernels give exactly what scipy gave.

The datafits of every family built with the compiled preparation must hold the same arrays,
bit for bit and dtype for dtype, as those built with the scipy / numpy code it replaced
(``X[order]`` + ``sum_duplicates`` + ``sort_indices``, ``ks[indices]``, ``X.T @ z``,
``np.unique``), which the reference datafits below get by monkeypatching, on designs with
duplicates, unsorted indices, explicit zeros, tied times, strata and (start, stop] rows.
"""
from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import riskset
import riskset.core.design as design_module
import riskset.core.interface as interface
import riskset.data.risksets as risksets
import riskset.models.cox as cox
import riskset.data.dataset as dataset_module
from helpers import numpy_risk_sets
from riskset.core.design import (CompactCSC, canonical_csc, is_canonical, row_indices, stores_no_values,
                                  take_rows, unit_columns)
from riskset.data.dataset import Dataset
from riskset.models.conditional import ConditionalLogistic, ConditionalPoisson
from riskset.models.cox import CoxDatafit
from riskset.models.fine_gray import FineGrayDatafit
from riskset.models.glm import GLMDatafit
from riskset.models.pooled_logistic import PooledLogistic


def messy_csc(n, p, seed, density=0.3):
    """A CSC matrix with duplicate entries, unsorted row indices within columns and explicit
    zeros; values are multiples of 1/4 so that duplicates sum exactly in any order."""
    rng = np.random.default_rng(seed)
    counts = rng.binomial(n, density, p)
    counts[0] = n  # one dense column
    rows = [rng.permutation(n)[:c] for c in counts]
    for j in range(1, p, 2):  # duplicates in every other column
        rows[j] = np.concatenate([rows[j], rows[j][: counts[j] // 3]])
    indices = np.concatenate(rows).astype(np.int32)
    data = rng.integers(-8, 9, indices.size) / 4.0  # explicit zeros among them
    indptr = np.r_[0, np.cumsum([r.size for r in rows])].astype(np.int32)
    return sp.csc_matrix((data, indices, indptr), shape=(n, p))


def mixed_csc(n, p, seed, density=0.3):
    """A canonical CSC matrix whose odd columns are indicators (every stored value 1), whose
    even columns hold multiples of 1/4, and whose last column is empty."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=density, format="csc", random_state=seed)
    X.data = np.where(np.arange(p)[np.repeat(np.arange(p), np.diff(X.indptr))] % 2 == 1, 1.0,
                      rng.integers(-8, 9, X.nnz) / 4 + 3.0)
    X.data[X.indptr[p - 1]:] = 0.0
    X.eliminate_zeros()
    return X


def assert_compact(design: CompactCSC):
    """No value stored per non-zero of an indicator column: ``values`` holds the valued
    columns' values and one run of ones as long as the longest indicator column."""
    counts = np.diff(design.indptr)
    if design.unit.any():
        expected = counts[~design.unit].sum() + counts[design.unit].max(initial=0)
    else:
        expected = design.nnz
    assert design.values.shape[0] == expected
    for j in range(design.n_cols):
        assert np.all(design.column(j)[1] == 1.0) == bool(design.unit[j]) or counts[j] == 0


def scipy_canonical(X):
    X = sp.csc_matrix(X, dtype=np.float64)
    X.sum_duplicates()
    X.sort_indices()
    return X


def scipy_take_rows(X, rows):
    return scipy_canonical(X[rows])


def assert_same_csc(A, B):
    assert A.shape == B.shape
    for name in ("indptr", "indices", "data"):
        a, b = getattr(A, name), getattr(B, name)
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)


def assert_same(a, b, where="datafit"):
    """Equal attributes: arrays bit for bit with their dtype, sparse matrices by their
    components, dataclasses field by field."""
    if sp.issparse(a):
        assert_same_csc(a, b)
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, (bool, int, float, str, type(None))):
        assert a == b, where


def assert_same_datafit(new, ref):
    assert set(vars(new)) == set(vars(ref))
    for name, value in vars(new).items():
        assert_same(value, vars(ref)[name], name)


@pytest.fixture
def scipy_preparation(monkeypatch):
    """A function that makes the datafits built after its call use the scipy / numpy
    preparation that riskset.core.design replaced (the references)."""
    def use():
        monkeypatch.setattr(interface, "canonical_csc", scipy_canonical)
        monkeypatch.setattr(interface, "take_rows", lambda X, rows: CompactCSC.of(scipy_take_rows(X, rows)))
        monkeypatch.setattr(cox, "build_risk_sets", numpy_risk_sets)

        def slots(indices, rs, statuses):
            itype = np.uint16 if rs.n_slots < 2**16 else np.int32 if rs.n_slots < 2**31 - 1 else np.int64
            ksn = rs.ks[indices] if rs.has_start else rs.ks[:0]  # entry slots only with start times
            evn = rs.event[indices] if statuses else rs.event[:0]  # statuses only for Efron's ties
            return ksn.astype(itype), rs.ke[indices].astype(itype), evn

        monkeypatch.setattr(cox, "slots_at_nonzeros", slots)
    return use


# -- the kernels against scipy ------------------------------------------------------------
@pytest.mark.parametrize("n, p, seed", [(0, 3, 0), (1, 2, 1), (40, 5, 2), (700, 9, 3), (5000, 4, 4)])
def test_take_rows_is_scipy_fancy_indexing_sorted(n, p, seed):
    rng = np.random.default_rng(seed)
    X = scipy_canonical(messy_csc(n, p, seed)) if n else sp.csc_matrix((0, p))
    assert is_canonical(X.indptr, X.indices, n)
    for design in (X, scipy_canonical(mixed_csc(n, p, seed)) if n else X):
        for rows in (rng.permutation(n), np.sort(rng.permutation(n)[: n // 2]), rng.permutation(n)[: n // 3],
                     np.arange(n)):
            out = take_rows(design, rows)
            assert_same_csc(out.to_csc(), scipy_take_rows(design, rows))
            assert_compact(out)


@pytest.mark.parametrize("mixed", [False, True])
def test_rows_in_order_share_the_row_indices_and_equal_the_copy(monkeypatch, mixed):
    X = scipy_canonical((mixed_csc if mixed else messy_csc)(600, 7, 5))
    shared = take_rows(X, np.arange(600))
    assert np.shares_memory(shared.indices, X.indices)
    monkeypatch.setattr(design_module, "_in_order", lambda rows: False)
    copied = take_rows(X, np.arange(600))
    assert not np.shares_memory(copied.indices, X.indices)
    for name in ("indptr", "indices", "values", "value_shift", "unit"):
        a, b = getattr(shared, name), getattr(copied, name)
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)


def test_a_cox_model_of_data_in_its_order_holds_no_copy_of_x(monkeypatch):
    """Rows sorted as the Cox model sorts them (stratum ascending, time descending, events before
    censored rows at a time) are read from the user's X itself, and fit bit for bit as a copy."""
    sim = riskset.simulate(n=800, p=15, density=0.2, model="cox", seed=9)
    rng = np.random.default_rng(9)
    strata, time = rng.integers(0, 3, 800), np.round(np.asarray(sim.time), 1) + 0.1
    status = np.asarray(sim.status)
    order = np.lexsort((-status, -time, strata))
    data = riskset.from_arrays(sim.X.tocsr()[order].tocsc(), time=time[order], status=status[order],
                               strata=strata[order])

    def run():
        datafit = riskset.models.get_model("cox").datafit(data)
        fit = riskset.fit(data, "cox", riskset.Laplace(variance=0.1), progress=False)
        return datafit, fit.coef.to_numpy()

    in_order, coef = run()
    assert np.shares_memory(in_order.design.indices, data.X.indices)
    monkeypatch.setattr(design_module, "_in_order", lambda rows: False)
    copied, coef_copied = run()
    assert not np.shares_memory(copied.design.indices, data.X.indices)
    np.testing.assert_array_equal(coef, coef_copied)


def test_take_rows_refuses_repeated_rows():
    with pytest.raises(ValueError, match="distinct"):
        take_rows(sp.csc_matrix(np.eye(3)), np.array([0, 0, 1]))


def test_canonical_csc_checks_rather_than_assumes():
    messy = messy_csc(300, 6, seed=5)
    assert not is_canonical(messy.indptr, messy.indices, 300)
    assert_same_csc(canonical_csc(messy.copy()), scipy_canonical(messy.copy()))
    # only unsorted (no duplicate): still caught
    X = scipy_canonical(messy)
    X.indices[[0, 1]] = X.indices[[1, 0]]
    assert not is_canonical(X.indptr, X.indices, 300)
    clean = scipy_canonical(messy)
    out = canonical_csc(clean)
    assert out.data is clean.data or np.shares_memory(out.data, clean.data)  # no copy when canonical
    assert canonical_csc(np.array([[1.0, 0.0], [0.0, 2.0]])).nnz == 2


# -- whole datafits against the scipy preparation ---------------------------------------
def survival(n, seed, strata=False, start=False):
    rng = np.random.default_rng(seed)
    time = rng.integers(1, 15, n).astype(float)  # heavy ties
    st = np.where(rng.random(n) < 0.4, 0.0, np.floor(rng.random(n) * time)) if start else None
    return dict(time=time, status=(rng.random(n) < 0.6).astype(np.int64), start=st,
                strata=rng.integers(0, 6, n) if strata else None, weights=rng.integers(1, 4, n).astype(float),
                offset=rng.normal(size=n))


COX_CASES = [dict(), dict(strata=True), dict(start=True), dict(strata=True, start=True)]


@pytest.mark.parametrize("case", COX_CASES)
@pytest.mark.parametrize("ties, formulation", [("breslow", "sparse"), ("efron", "sparse"), ("breslow", "scan")])
def test_cox_datafit_equals_the_scipy_preparation(case, ties, formulation, scipy_preparation):
    n = 400
    d = survival(n, seed=len(COX_CASES) * 7 + len(case), **case)
    X = messy_csc(n, 6, seed=11)
    args = (d["time"], d["status"], d["start"], d["strata"], d["weights"], d["offset"])
    new = CoxDatafit(X.copy(), *args, ties=ties, formulation=formulation)
    scipy_preparation()
    ref = CoxDatafit(X.copy(), *args, ties=ties, formulation=formulation)
    assert_same_datafit(new, ref)
    # as the code before: permute, then sort
    assert_same_csc(new.design.to_csc(), scipy_canonical(sp.csc_matrix(X)[ref.order]))


def test_fine_gray_datafit_equals_the_scipy_preparation(scipy_preparation):
    rng = np.random.default_rng(3)
    n = 500
    status = rng.integers(0, 3, n)
    X = messy_csc(n, 5, seed=12)
    args = (rng.integers(1, 20, n).astype(float), (status == 1), (status == 2), (status == 0),
            rng.integers(1, 3, n).astype(float), rng.normal(size=n))
    new = FineGrayDatafit(X.copy(), *args)
    scipy_preparation()
    assert_same_datafit(new, FineGrayDatafit(X.copy(), *args))


def test_glm_datafit_equals_the_scipy_preparation(scipy_preparation):
    rng = np.random.default_rng(4)
    X = messy_csc(300, 5, seed=13)
    y = (rng.random(300) < 0.5).astype(float)
    new = GLMDatafit(0, X.copy(), y, intercept=True)
    scipy_preparation()
    assert_same_datafit(new, GLMDatafit(0, X.copy(), y, intercept=True))


@pytest.mark.parametrize("model", [ConditionalLogistic(), ConditionalLogistic("breslow"), ConditionalPoisson()])
def test_conditional_datafit_equals_the_scipy_preparation(model, scipy_preparation):
    rng = np.random.default_rng(5)
    n = 600
    strata = rng.integers(0, 80, n)  # unsorted: the datafit reorders the rows; some sets are dropped
    y = (rng.random(n) < 0.3).astype(float)
    data = Dataset(X=scipy_canonical(messy_csc(n, 4, seed=14)), covariate_names=["a", "b", "c", "d"],
                   row_ids=np.arange(n), y=y, strata=strata)
    with pytest.warns(Warning):
        new = model.datafit(data)
    scipy_preparation()
    with pytest.warns(Warning):
        ref = model.datafit(data)
    assert_same_datafit(new, ref)


def test_row_indices_are_read_unsigned_without_a_copy():
    """32-bit row indices reach the kernels as an unsigned view of the CSC's own array (no
    wrap-around test per access); 64-bit ones stay signed (numba mixes uint64 and int64 into
    floats)."""
    from riskset.core.design import row_indices

    X = sp.random(50, 4, density=0.3, format="csc", random_state=np.random.RandomState(0))
    small = row_indices(X.indices.astype(np.int32))
    assert small.dtype == np.uint32 and np.array_equal(small, X.indices)
    wide = X.indices.astype(np.int64)
    assert row_indices(wide).dtype == np.int64
    d = riskset.simulate(n=200, p=5, model="cox", seed=1)
    datafit = riskset.models.get_model("cox").datafit(d)
    assert datafit.indices.dtype == np.uint32 and datafit.products.indices is datafit.indices


# -- the compact design: indicator columns store no values --------------------------------------
def test_compact_design_reads_back_every_value():
    X = scipy_canonical(mixed_csc(300, 7, seed=21))
    design = CompactCSC.of(X)
    assert design.unit.tolist() == [False, True, False, True, False, True, True]  # the empty column: no value to store
    assert_compact(design)
    assert_same_csc(design.to_csc(), X)
    np.testing.assert_array_equal(design.full_values(), X.data)
    np.testing.assert_array_equal(design.to_csc([5, 0, 2]).toarray(), X[:, [5, 0, 2]].toarray())
    assert design.full_values(np.float32).dtype == np.float32
    valued = scipy_canonical(messy_csc(200, 4, seed=2))  # no indicator: X's own values, shared
    assert CompactCSC.of(valued).values is valued.data


def test_an_indicator_design_allocates_no_values_per_non_zero():
    """A prepared model of binary covariates holds no float64 per stored non-zero: neither the
    design, nor the products, nor any other array of the datafit."""
    d = riskset.simulate(n=3000, p=40, density=0.1, model="cox", seed=3)
    datafit = riskset.models.get_model("cox").datafit(d)
    nnz = datafit.design.nnz
    assert datafit.design.unit.all() and datafit.values.shape[0] <= d.n_rows
    big_floats = [name for name, value in vars(datafit).items()
                  if isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.size >= nnz]
    assert big_floats == []


# -- a Dataset of indicators: one 1.0 for every non-zero ----------------------------------------
def test_a_dataset_of_indicators_stores_no_value_per_non_zero():
    X = sp.random(400, 12, density=0.2, format="csc", random_state=np.random.default_rng(4))
    X.data[:] = 1.0
    d = riskset.from_arrays(X, y=np.arange(400) % 2)
    assert stores_no_values(d.X) and d.X.data.strides == (0,) and not d.X.data.flags.writeable
    np.testing.assert_array_equal(d.X.toarray(), X.toarray())
    for got, want in ((CompactCSC.of(d.X), CompactCSC.of(X)),
                      (take_rows(d.X, np.arange(400)[::-1]), take_rows(X, np.arange(400)[::-1]))):
        for name in ("indptr", "indices", "values", "value_shift", "unit"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
    assert dataclasses.replace(d, y=np.zeros(400)).X.indices is d.X.indices  # rebuilt, not re-copied
    sent = pickle.dumps(d)  # to a worker: the pattern alone, and the copy holds no values either
    assert not sp.issparse(d.__getstate__()["X"]) and stores_no_values(pickle.loads(sent).X)
    np.testing.assert_array_equal(pickle.loads(sent).X.toarray(), X.toarray())
    valued = X.copy()
    valued.data[0] = 2.0
    assert not stores_no_values(riskset.from_arrays(valued, y=np.zeros(400)).X)
    twice = sp.csc_matrix((np.ones(3), np.array([0, 0, 1]), np.array([0, 2, 3])), shape=(2, 2))  # sums to 2
    assert Dataset(twice, ["a", "b"], np.arange(2)).X.toarray().tolist() == [[2.0, 0.0], [0.0, 1.0]]


@pytest.mark.parametrize("model", ["cox", "fine_gray", "logistic", "conditional_logistic"])
def test_a_dataset_of_indicators_fits_bit_for_bit_as_one_with_its_values(model, monkeypatch):
    """Fits (normalized too) and a cross-validation read the same numbers whether the Dataset holds
    a 1.0 per non-zero or one 1.0 for all."""
    base = "logistic" if model in ("logistic", "conditional_logistic") else "cox"
    sim = riskset.simulate(n=1200, p=25, density=0.1, model=base, seed=8)
    fields = dict(y=sim.y, strata=np.arange(1200) // 6) if model == "conditional_logistic" else \
        dict(y=sim.y) if base == "logistic" else \
        dict(time=sim.time, status=sim.status * (1 + (np.arange(1200) % 2) * (model == "fine_gray")))
    X = sim.X.toarray()

    def run():
        d = riskset.from_arrays(X, **fields)
        fit = riskset.fit(d, model, riskset.Laplace(variance=0.1), progress=False)
        scaled = riskset.fit(d, model, riskset.Laplace(variance=0.1), normalize="stdev", progress=False)
        cv = riskset.cross_validate(d, model, riskset.Laplace(), n_folds=3, n_grid=3, progress=False, seed=1)
        return stores_no_values(d.X), fit.coef.to_numpy(), scaled.coef.to_numpy(), cv.scores["score"].to_numpy()

    compact = run()
    monkeypatch.setattr(dataset_module, "as_indicator_csc", lambda X: X)
    full = run()
    assert compact[0] and not full[0]
    for a, b in zip(compact[1:], full[1:]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("start", [False, True])
@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_a_cox_datafit_stores_entry_slots_only_with_start_times_and_statuses_only_for_efron(start, ties):
    """Without start times every row enters at its stratum's first slot: no entry slot is kept
    per non-zero (the walks read the exit slot and its stratum alone); Breslow's ties read no
    status per non-zero (only Efron's correction of a tied event does)."""
    d = survival(300, seed=5, strata=True, start=start)
    datafit = CoxDatafit(messy_csc(300, 4, seed=6), d["time"], d["status"], d["start"], d["strata"], ties=ties)
    assert datafit.ken.size == datafit.design.nnz
    assert datafit.ksn.size == (datafit.design.nnz if start else 0)
    assert datafit.evn.size == (datafit.design.nnz if ties == "efron" else 0)


@pytest.mark.parametrize("start", [False, True])
def test_breslow_fits_without_statuses_per_nonzero_are_bit_identical(monkeypatch, start):
    """A Breslow fit, its cross-validation and a bootstrap with weights, strata and tied times
    give the same bits whether each non-zero's status is stored (as before) or not."""
    rng = np.random.default_rng(3)
    sim = riskset.simulate(n=900, p=20, density=0.15, model="cox", seed=2)
    time = np.round(np.asarray(sim.time) * 4) / 4 + 1.0  # many tied times
    data = riskset.from_arrays(sim.X, time=time, status=sim.status, start=time - 1.0 if start else None,
                               strata=rng.integers(0, 3, 900), weights=rng.integers(1, 3, 900).astype(float))

    def run():
        prior = riskset.Laplace(variance=0.05)
        fit = riskset.fit(data, "cox", prior, progress=False)
        cv = riskset.cross_validate(data, "cox", prior, n_folds=3, n_grid=3, progress=False, seed=1)
        boot = riskset.bootstrap(data, "cox", prior, n_boot=3, seed=2, progress=False)
        return fit.coef.to_numpy(), cv.scores["score"].to_numpy(), boot.estimates.to_numpy()

    lean = run()
    stored = cox.slots_at_nonzeros
    monkeypatch.setattr(cox, "slots_at_nonzeros", lambda indices, rs, statuses: stored(indices, rs, True))
    full = run()
    for a, b in zip(lean, full):
        np.testing.assert_array_equal(a, b)


def uncompacted(X: sp.csc_matrix) -> CompactCSC:
    """The design with a value stored per non-zero, as every datafit held it before the compact form."""
    indptr = X.indptr.astype(np.int64)
    return CompactCSC(X.shape[0], X.shape[1], indptr, row_indices(X.indices), X.data,
                      np.zeros(X.shape[1], np.int64), unit_columns(indptr, X.data))


class _Uncompacted:
    of = staticmethod(uncompacted)


def _fit_cases():
    rng = np.random.default_rng(8)
    n = 500
    X = sp.hstack([riskset.simulate(n=n, p=12, density=0.2, model="cox", seed=4).X,
                   sp.csc_matrix(np.round(rng.normal(size=(n, 2)), 2))], format="csc")
    time = rng.integers(1, 40, n).astype(float)
    status = (rng.random(n) < 0.5).astype(np.int64)
    weights = rng.integers(1, 4, n).astype(float)
    strata = rng.integers(0, 60, n)
    start = np.where(rng.random(n) < 0.5, 0.0, np.floor(rng.random(n) * time))
    y = (rng.random(n) < 0.3).astype(float)
    return {
        "cox": (riskset.from_arrays(X, time=time, status=status, weights=weights), "cox"),
        "cox strata start-stop": (riskset.from_arrays(X, time=time, status=status, start=start, strata=strata % 4),
                                  "cox"),
        "fine_gray": (riskset.from_arrays(X, time=time, status=rng.integers(0, 3, n)), "fine_gray"),
        "logistic": (riskset.from_arrays(X, y=y, weights=weights), "logistic"),
        "poisson": (riskset.from_arrays(X, y=rng.poisson(1.0, n).astype(float)), "poisson"),
        "conditional logistic": (riskset.from_arrays(X, y=y, strata=strata), "conditional_logistic"),
        "conditional poisson": (riskset.from_arrays(X, y=rng.poisson(0.5, n).astype(float), strata=strata),
                                "conditional_poisson"),
        "pooled logistic": (riskset.from_arrays(X, time=np.ceil(time / 8), status=status), PooledLogistic(1.0)),
    }


@pytest.mark.parametrize("case", list(_fit_cases()))
def test_compact_design_fits_bit_for_bit_as_the_full_one(case, monkeypatch):
    """Every family's fit (and a bootstrap-weighted replicate batch through cross-validation)
    reads the same numbers from the compact design as from a value stored per non-zero."""
    data, model = _fit_cases()[case]
    prior = riskset.Laplace(variance=0.05)

    def run():
        fit = riskset.fit(data, model, prior, progress=False)
        cv = riskset.cross_validate(data, model, riskset.Laplace(), n_folds=3, n_grid=3, progress=False, seed=1)
        scores = cv.scores.select_dtypes("number").to_numpy()
        return fit.coef.to_numpy(), fit.loglik, cv.selected_variance, scores.tobytes()

    compact = run()
    monkeypatch.setattr(interface, "take_rows", lambda X, rows: uncompacted(take_rows(X, rows).to_csc()))
    monkeypatch.setattr(interface, "CompactCSC", _Uncompacted)
    full = run()
    np.testing.assert_array_equal(compact[0], full[0])
    assert compact[1:] == full[1:]


@pytest.mark.parametrize("case", COX_CASES)
@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_16_bit_slots_fit_as_the_32_bit_ones(case, ties, monkeypatch):
    """Slots at the non-zeros in 16 bits (few distinct times) give the fit of 32-bit ones, bit for bit."""
    d = survival(600, seed=31, **case)
    X = sp.hstack([riskset.simulate(n=600, p=8, density=0.3, seed=5).X, sp.csc_matrix(d["offset"][:, None])],
                  format="csc")
    data = riskset.from_arrays(X, time=d["time"], status=d["status"], start=d["start"], strata=d["strata"],
                               weights=d["weights"])

    def run():
        datafit = riskset.models.get_model("cox").datafit(data)
        fit = riskset.fit(data, riskset.models.cox.CoxModel(ties=ties), riskset.Laplace(variance=0.1), progress=False)
        return datafit.ken.dtype, fit.coef.to_numpy(), fit.loglik

    narrow = run()
    monkeypatch.setattr(risksets, "NARROW_SLOTS", 0)
    wide = run()
    assert narrow[0] == np.uint16 and wide[0] == np.int32
    np.testing.assert_array_equal(narrow[1], wide[1])
    assert narrow[2] == wide[2]
