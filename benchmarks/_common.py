"""Shared pieces of the benchmarks: cached simulated data, isolated timed runs, tables."""
from __future__ import annotations

import multiprocessing as mp
import os
import time

import numpy as np
import scipy.sparse as sp

CACHE = os.path.join(os.path.dirname(__file__), ".cache")


def cached_simulation(model: str, n: int, p: int, density: float, seed: int = 0) -> str:
    """Path of an .npz with X (CSC) and the outcome of riskset.simulate, made once."""
    import riskset

    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"{model}_{n}_{p}_{density}_{seed}.npz")
    if not os.path.exists(path):
        ds = riskset.simulate(n=n, p=p, density=density, model=model, seed=seed)
        arrays = {f: getattr(ds, f) for f in ("y", "time", "status", "offset") if getattr(ds, f) is not None}
        tmp = f"{path}.tmp{os.getpid()}.npz"  # written aside, then renamed: processes may make it at once
        np.savez(tmp, data=ds.X.data, indices=ds.X.indices, indptr=ds.X.indptr, shape=ds.X.shape, **arrays)
        os.replace(tmp, path)
    return path


def load(path):
    z = np.load(path)
    X = sp.csc_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
    return X, {k: z[k] for k in z.files if k not in ("data", "indices", "indptr", "shape")}


def reset_peak_rss() -> float:
    """Reset this process's peak-RSS mark (Linux clear_refs) and return the current RSS in MiB."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_mb("VmRSS")


def peak_rss_mb() -> float:
    """Peak RSS in MiB since the last reset."""
    return _status_mb("VmHWM")


def _status_mb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _worker(fn, args, queue):
    try:
        queue.put(fn(*args))
    except Exception as err:  # report, don't hang the table
        queue.put({"error": f"{type(err).__name__}: {err}"})


def isolated(fn, *args) -> dict:
    """Run fn(*args) in a fresh process (so peak memory is its own); fn returns a dict."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_worker, args=(fn, args, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def print_table(rows, columns):
    widths = [max(len(c), *(len(_fmt(r.get(c))) for r in rows)) for c in columns]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(_fmt(r.get(c)).ljust(w) for c, w in zip(columns, widths)))


def _fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def cached_dir(name: str, make) -> str:
    """Path of the folder CACHE/name, filled once by ``make(folder)`` (written aside, then renamed,
    so an interrupted run leaves no half-made cache)."""
    path = os.path.join(CACHE, name)
    if not os.path.isdir(path):
        tmp = f"{path}.tmp{os.getpid()}"
        os.makedirs(tmp)
        make(tmp)
        os.rename(tmp, path)
    return path


def run_measured(cmd: list[str], env: dict | None = None) -> dict:
    """Run ``cmd`` under GNU time: its wall seconds, CPU seconds (user + system) and peak RSS
    in MiB. (Not os.wait4 on a direct child: a child's peak starts from the parent's, whose
    memory it shares until exec; GNU time's own child starts from GNU time's.)"""
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
        code = subprocess.call(["/usr/bin/time", "-f", "%e %U %S %M", "-o", out.name, *cmd], env=env)
        wall, user, system, peak_kb = out.read().split()[-4:]
    return {"returncode": code, "process wall s": float(wall), "process cpu s": float(user) + float(system),
            "peak MiB": int(peak_kb) / 1024}
