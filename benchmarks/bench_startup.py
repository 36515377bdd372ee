"""Cold and warm start: ``riskset demo`` and a first ``riskset.fit`` per model family.

Every measurement is a fresh Python process (a subprocess), so nothing is compiled or
imported beforehand. Cold: an empty Numba cache (``NUMBA_CACHE_DIR`` set to a new empty
folder), so every kernel the run needs is compiled. Warm: the same command again with
the cache the cold run left, so kernels are loaded from disk.

Columns: cold_s / warm_s = wall seconds of the whole process (import, data, fit; the
demo also cross-validates, profiles and draws two plots), compile_s = cold_s - warm_s,
kernels = kernel signatures compiled by the cold run (Numba's ``numba:compile`` events
for riskset's own kernels), import_s = ``import riskset`` alone.

Run by hand (not in CI)::

    python benchmarks/bench_startup.py                    # demo --n 2000 and every family
    python benchmarks/bench_startup.py --only cox logistic --skip-demo
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")

# Run in the child: build a small data set of the family's shape, fit once.
FIT_CODE = """
import numpy as np, riskset
family = {family!r}
rng = np.random.default_rng(0)
kind = {{"poisson": "poisson", "least_squares": "least_squares", "logistic": "logistic",
         "conditional_logistic": "logistic", "conditional_poisson": "poisson"}}.get(family, "cox")
d = riskset.simulate(n=2000, p=50, model=kind, seed=0)
strata = np.repeat(np.arange(400), 5)
if family == "fine_gray":
    status = np.where((d.status == 1) & (rng.random(d.n_rows) < 0.3), 2, d.status)
    d = riskset.from_arrays(d.X, time=d.time, status=status)
elif family.startswith("conditional"):
    d = riskset.from_arrays(d.X, y=d.y, strata=strata)
options = {{"pooled_logistic": {{"interval_width": 0.5}}}}.get(family, {{}})
fit = riskset.fit(d, family, riskset.Laplace(gamma=2.0), **options)
assert np.isfinite(fit.loglik)
"""

FAMILIES = ("logistic", "poisson", "least_squares", "cox", "fine_gray", "conditional_logistic",
            "conditional_poisson", "pooled_logistic")

# Counts riskset's kernel compilations in the child (stdout: JSON) without changing what it runs.
COUNTING = """
import json, atexit
from numba.core import event
from riskset.kernels.cpu.compile_notice import is_riskset_kernel
count = [0]
class Count(event.Listener):
    def on_start(self, ev):
        count[0] += is_riskset_kernel(ev.data["dispatcher"])
    def on_end(self, ev):
        pass
event.register("numba:compile", Count())
atexit.register(lambda: print("@@" + json.dumps(count[0])))
"""


def run_child(code: str, cache_dir: str) -> tuple[float, int]:
    """(wall seconds, kernels compiled) of ``python -c COUNTING + code`` with the given cache."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, MPLBACKEND="Agg",
               PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", COUNTING + code], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: the demo's fit did not converge; still a timing
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}")
    marks = [line for line in done.stdout.splitlines() if line.startswith("@@")]
    return seconds, json.loads(marks[-1][2:]) if marks else -1


def cold_and_warm(code: str) -> dict:
    """Cold then warm timing of ``code``, each in a fresh process, sharing one new cache folder."""
    with tempfile.TemporaryDirectory(prefix="riskset-numba-") as cache_dir:
        cold, kernels = run_child(code, cache_dir)
        warm, _ = run_child(code, cache_dir)
    return {"cold_s": cold, "warm_s": warm, "compile_s": cold - warm, "kernels": kernels}


def demo_code(n: int, out: str) -> str:
    return f"from riskset.cli import main\nmain(['demo', '--n', '{n}', '--out', {out!r}])"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="demo cohort size (default 2000)")
    parser.add_argument("--only", nargs="*", choices=FAMILIES, help="families to time (default all)")
    parser.add_argument("--skip-demo", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as empty:
        import_s, _ = run_child("import riskset", empty)
    print(f"import riskset: {import_s:.2f} s (fresh process)\n")
    print(f"{'what':<32}{'cold_s':>8}{'warm_s':>8}{'compile_s':>10}{'kernels':>9}")
    rows = []
    if not args.skip_demo:
        with tempfile.TemporaryDirectory() as out:
            rows.append((f"riskset demo --n {args.n}", cold_and_warm(demo_code(args.n, out))))
        print_row(*rows[-1])
    for family in args.only or FAMILIES:
        try:
            rows.append((f"first fit: {family}", cold_and_warm(FIT_CODE.format(family=family))))
            print_row(*rows[-1])
        except RuntimeError as err:
            print(f"{'first fit: ' + family:<32}  failed: {err}")


def print_row(what: str, r: dict):
    print(f"{what:<32}{r['cold_s']:>8.1f}{r['warm_s']:>8.1f}{r['compile_s']:>10.1f}{r['kernels']:>9d}", flush=True)


if __name__ == "__main__":
    main()
