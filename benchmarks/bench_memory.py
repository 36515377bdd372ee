"""Where the bytes go: every array a prepared model holds, and the peak RSS of each step
beside the input's size (issue 46).

    python benchmarks/bench_memory.py [--n 1000000] [--p 1000] [--density 0.05]
                                      [--families cox,cox_strata,fine_gray,conditional_logistic,logistic]
                                      [--folds 10] [--arrays 12]

Each family runs in a fresh process on simulated binary covariates (``riskset.simulate``; the
strata are blocks of 10 rows, matched sets of conditional logistic hold their first case only, the
Fine-Gray competing event is a random half of the events):

1. the data as the user holds them (a ``Dataset``: the CSC matrix and the outcome);
2. the prepared model (``model.datafit``), its arrays listed by owner and name, each buffer
   counted once however many views of it there are, with the bytes per non-zero;
3. one L1 fit at a variance that leaves about a tenth of the covariates active;
4. a ``--folds``-fold cross-validation over three variances around it.

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
from _common import isolated, peak_rss_mb, print_table, reset_peak_rss  # noqa: E402

FAMILIES = ("cox", "cox_strata", "fine_gray", "conditional_logistic", "logistic")


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
    return data, {"cox_strata": "cox"}.get(family, family)


def compact_bytes(data) -> int:
    """Row indices as int32, the values that are not 1, the outcome vectors."""
    X = data.X
    outcome = sum(v.nbytes for v in (data.y, data.time, data.status, data.strata) if v is not None)
    return 4 * X.nnz + 8 * int(np.count_nonzero(X.data != 1.0)) + outcome


def profile(family: str, n: int, p: int, density: float, folds: int, n_arrays: int) -> dict:
    import riskset
    from riskset.models import get_model

    row = {"family": family}
    reset_peak_rss()
    data, model = simulated(family, n, p, density)
    X = data.X
    row["nnz M"] = X.nnz / 1e6
    row["CSC MB"] = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20
    row["compact MB"] = compact_bytes(data) / 2**20
    row["data MB"] = peak_rss_mb()

    reset_peak_rss()
    t = time.perf_counter()
    datafit = get_model(model).datafit(data)
    row["prepare s"] = time.perf_counter() - t
    row["prepared peak MB"] = peak_rss_mb()
    held = sorted(arrays_of(datafit), key=lambda a: -a[1])
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
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--p", type=int, default=1000)
    ap.add_argument("--density", type=float, default=0.05)
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--arrays", type=int, default=12, help="largest arrays listed per family")
    args = ap.parse_args()
    rows = []
    for family in args.families.split(","):
        row = isolated(profile, family, args.n, args.p, args.density, args.folds, args.arrays)
        if "error" in row:
            print(f"{family}: {row['error']}")
            continue
        rows.append(row)
        print(f"\n{family}: the prepared model's largest arrays (MB, bytes per non-zero)")
        print_table([{"array": a, "MB": mb, "B/nnz": per} for a, mb, per in row.pop("arrays")],
                    ["array", "MB", "B/nnz"])
        print(f"\nN = {args.n:,}, P = {args.p:,}, density {args.density}: peak RSS of each step (MB) beside the "
              "input", flush=True)
        print_table(rows, COLUMNS)


COLUMNS = ["family", "nnz M", "CSC MB", "compact MB", "data MB", "prepare s", "prepared peak MB", "held MB",
           "held B/nnz", "fit s", "active", "fit peak MB", "cv s", "cv peak MB"]


if __name__ == "__main__":
    main()
