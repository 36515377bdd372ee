"""Where the bytes go: every array a prepared model holds, and the peak RSS of each step
beside the input's size (issue 46).

    python benchmarks/bench_memory.py [--n 1000000] [--p 1000] [--density 0.05]
                                      [--families cox,cox_strata,fine_gray,conditional_logistic,logistic]
                                      [--folds 10] [--arrays 12] [--boot 0] [--source memory]
    python benchmarks/bench_memory.py --n 10000000 --families cox --source parquet --boot 4

Each family runs in a fresh process on simulated binary covariates (``riskset.simulate``; the
strata are blocks of 10 rows, matched sets of conditional logistic hold their first case only, the
Fine-Gray competing event is a random half of the events):

1. the data as the user holds them (a ``Dataset``: the CSC matrix and the outcome; ``CSC MB``
   as scipy stores it, with a float64 per non-zero, ``X MB`` as the Dataset holds it: no
   values when every one is 1); with
   ``--source parquet`` or ``duckdb``, loaded from long tables (``row_id, covariate_id``, no
   value column: indicators) that the benchmark writes once, column block by column block, into
   ``benchmarks/.cache`` from the simulation, which the process then drops: the load's peak
   and time are its own;
2. the prepared model (``model.datafit``), its arrays listed by owner and name, each buffer
   counted once however many views of it there are (the user's own X, read in place, not at
   all), with the bytes per non-zero;
3. one L1 fit at a variance that leaves about a tenth of the covariates active;
4. a ``--folds``-fold cross-validation over three variances around it;
5. with ``--boot K``, K bootstrap draws at that variance.

The peaks are each step's own (the kernel's high-water mark, reset before the step through
``/proc/self/clear_refs``) and include what the process held before the step. The *compact
input* is what the data need at least: the row indices (int32), the values that are not 1, the
outcome.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import CACHE, isolated, peak_rss_mb, print_table, reset_peak_rss  # noqa: E402

#: ``cox_in_order``: the Cox data with their rows sorted as the model sorts them (time descending,
#: events first), which the model reads in place (no copy of X: ``core.design.take_rows``).
FAMILIES = ("cox", "cox_in_order", "cox_strata", "fine_gray", "conditional_logistic", "logistic")


def arrays_of(obj, name: str = "", seen=None, out=None) -> list[tuple[str, int]]:
    """(owner.name, bytes) of every NumPy buffer reachable from ``obj`` through riskset objects'
    attributes, tuples, lists and dicts; a buffer seen before (a view, a shared array) is not
    counted again."""
    seen = set() if seen is None else seen
    out = [] if out is None else out
    if isinstance(obj, np.ndarray):
        root = obj
        while isinstance(root.base, np.ndarray):
            root = root.base
        key = (root.__array_interface__["data"][0], root.nbytes)
        if key not in seen and root.nbytes:
            seen.add(key)
            out.append((name, root.nbytes))
        return out
    if id(obj) in seen:
        return out
    if isinstance(obj, (list, tuple)):
        seen.add(id(obj))
        for i, v in enumerate(obj):
            arrays_of(v, f"{name}[{i}]", seen, out)
    elif isinstance(obj, dict):
        seen.add(id(obj))
        for k, v in obj.items():
            arrays_of(v, f"{name}[{k!r}]", seen, out)
    elif type(obj).__module__.startswith("riskset") and hasattr(obj, "__dict__"):
        seen.add(id(obj))
        for k, v in vars(obj).items():
            arrays_of(v, f"{name}.{k}" if name else k, seen, out)
    return out


def simulated(family: str, n: int, p: int, density: float):
    """The Dataset of ``family`` and the model name to fit it with."""
    from dataclasses import replace

    import riskset

    base = "logistic" if family in ("logistic", "conditional_logistic") else "cox"
    data = riskset.simulate(n=n, p=p, density=density, model=base, seed=1)
    if family in ("cox_strata", "conditional_logistic"):
        data = replace(data, strata=np.arange(n) // 10)
    if family == "conditional_logistic":  # 1 case : up to 9 controls (sets without a case are dropped)
        cases = np.flatnonzero(data.y == 1)
        first = cases[np.unique(data.strata[cases], return_index=True)[1]]
        y = np.zeros(n)
        y[first] = 1.0
        data = replace(data, y=y)
    if family == "fine_gray":
        rng = np.random.default_rng(2)
        status = np.where((data.status == 1) & (rng.random(n) < 0.5), 2, data.status)
        data = replace(data, status=status)
    if family == "cox_in_order":
        order = np.lexsort((-np.asarray(data.status), -np.asarray(data.time)))
        data = riskset.from_arrays(data.X.tocsr()[order].tocsc(), time=np.asarray(data.time)[order],
                                   status=np.asarray(data.status)[order])
    return data, model_of(family)


def model_of(family: str) -> str:
    """The model that fits ``family`` (the stratified and sorted Cox families are Cox)."""
    return {"cox_strata": "cox", "cox_in_order": "cox"}.get(family, family)


def long_tables(family: str, n: int, p: int, density: float) -> str:
    """The folder of ``outcomes.parquet``, ``covariates.parquet`` and ``tables.duckdb`` of the
    simulated data (written once): the covariates by blocks of columns, one row group each, so
    that no long copy of the whole design is ever made."""
    import duckdb
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = os.path.join(CACHE, f"long_{family}_{n}_{p}_{density}")
    if os.path.exists(os.path.join(folder, "tables.duckdb")):
        return folder
    os.makedirs(folder, exist_ok=True)
    data, _ = simulated(family, n, p, density)
    out = pd.DataFrame({"row_id": np.arange(n, dtype=np.int64)})
    for name in ("y", "time", "status"):
        if getattr(data, name) is not None:
            out[name] = getattr(data, name)
    if data.strata is not None:
        out["stratum_id"] = data.strata
    out.to_parquet(os.path.join(folder, "outcomes.parquet"))
    X = data.X.tocsc()
    schema = pa.schema([("row_id", pa.int64()), ("covariate_id", pa.int64())])
    with pq.ParquetWriter(os.path.join(folder, "covariates.parquet"), schema) as writer:
        for a in range(0, p, 25):
            z = min(p, a + 25)
            rows = X.indices[X.indptr[a]:X.indptr[z]].astype(np.int64)
            cols = np.repeat(np.arange(a, z, dtype=np.int64) + 1000, np.diff(X.indptr[a:z + 1]))
            writer.write_table(pa.table({"row_id": rows, "covariate_id": cols}, schema=schema))
    del data, X
    with duckdb.connect(os.path.join(folder, "tables.duckdb")) as con:
        for name in ("outcomes", "covariates"):
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_parquet('{folder}/{name}.parquet')")
    return folder


def loaded(source: str, folder: str):
    import riskset

    if source == "parquet":
        return riskset.from_long(os.path.join(folder, "outcomes.parquet"), os.path.join(folder, "covariates.parquet"))
    return riskset.from_duckdb(os.path.join(folder, "tables.duckdb"), "SELECT * FROM outcomes",
                               "SELECT * FROM covariates")


def compact_bytes(data) -> int:
    """Row indices as int32, the values that are not 1, the outcome vectors."""
    from riskset.core.design import unit_of

    X = data.X
    outcome = sum(v.nbytes for v in (data.y, data.time, data.status, data.strata) if v is not None)
    valued = int(np.diff(X.indptr)[~unit_of(X)].sum())
    return 4 * X.nnz + 8 * valued + outcome


def profile(family: str, n: int, p: int, density: float, folds: int, n_arrays: int, source: str = "memory",
            boot: int = 0) -> dict:
    import riskset
    from riskset.models import get_model

    row = {"family": family}
    reset_peak_rss()
    if source == "memory":
        data, model = simulated(family, n, p, density)
    else:
        folder = long_tables(family, n, p, density)
        reset_peak_rss()
        t = time.perf_counter()
        data, model = loaded(source, folder), model_of(family)
        row["load s"] = time.perf_counter() - t
    X = data.X
    row["nnz M"] = X.nnz / 1e6
    row["CSC MB"] = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20  # with a float64 per non-zero
    row["X MB"] = sum(b for _, b in arrays_of([X.data, X.indices, X.indptr])) / 2**20  # as the Dataset holds it
    row["compact MB"] = compact_bytes(data) / 2**20
    row["data MB"] = peak_rss_mb()

    reset_peak_rss()
    t = time.perf_counter()
    datafit = get_model(model).datafit(data)
    row["prepare s"] = time.perf_counter() - t
    row["prepared peak MB"] = peak_rss_mb()
    users = set()  # the buffers of the user's X: a model that reads them in place does not hold them
    arrays_of([X.data, X.indices, X.indptr], seen=users)
    held = sorted(arrays_of(datafit, seen=users), key=lambda a: -a[1])
    row["held MB"] = sum(b for _, b in held) / 2**20
    row["held B/nnz"] = sum(b for _, b in held) / X.nnz
    row["arrays"] = [(name, b / 2**20, b / X.nnz) for name, b in held[:n_arrays]]
    del datafit

    gamma_max = riskset.fit(data, model, riskset.Laplace(gamma=1e15), progress=False).gamma_max
    variance = 2.0 / (0.3 * gamma_max) ** 2
    reset_peak_rss()
    t = time.perf_counter()
    f = riskset.fit(data, model, riskset.Laplace(variance=variance), progress=False)
    row["fit s"], row["fit peak MB"], row["active"] = time.perf_counter() - t, peak_rss_mb(), int((f.coef != 0).sum())

    reset_peak_rss()
    t = time.perf_counter()
    riskset.cross_validate(data, model, riskset.Laplace(), variances=variance * np.array([0.5, 1.0, 2.0]),
                           n_folds=folds, progress=False, refit=False, early_stop=None)
    row["cv s"], row["cv peak MB"] = time.perf_counter() - t, peak_rss_mb()
    if boot:
        reset_peak_rss()
        t = time.perf_counter()
        riskset.bootstrap(data, model, riskset.Laplace(variance=variance), n_boot=boot, progress=False)
        row["boot s"], row["boot peak MB"] = time.perf_counter() - t, peak_rss_mb()
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--p", type=int, default=1000)
    ap.add_argument("--density", type=float, default=0.05)
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--arrays", type=int, default=12, help="largest arrays listed per family")
    ap.add_argument("--source", choices=["memory", "parquet", "duckdb"], default="memory",
                    help="simulate in the process, or load long tables written once")
    ap.add_argument("--boot", type=int, default=0, help="bootstrap draws at the fitted variance")
    args = ap.parse_args()
    rows = []
    for family in args.families.split(","):
        row = isolated(profile, family, args.n, args.p, args.density, args.folds, args.arrays, args.source, args.boot)
        if "error" in row:
            print(f"{family}: {row['error']}")
            continue
        rows.append(row)
        print(f"\n{family}: the prepared model's largest arrays (MB, bytes per non-zero)")
        print_table([{"array": a, "MB": mb, "B/nnz": per} for a, mb, per in row.pop("arrays")],
                    ["array", "MB", "B/nnz"])
        print(f"\nN = {args.n:,}, P = {args.p:,}, density {args.density}: peak RSS of each step (MB) beside the "
              "input", flush=True)
        print_table(rows, [c for c in COLUMNS if any(c in r for r in rows)])


COLUMNS = ["family", "nnz M", "CSC MB", "X MB", "compact MB", "load s", "data MB", "prepare s", "prepared peak MB",
           "held MB", "held B/nnz", "fit s", "active", "fit peak MB", "cv s", "cv peak MB", "boot s",
           "boot peak MB"]


if __name__ == "__main__":
    main()
