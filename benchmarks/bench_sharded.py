"""One Cox L1 fit over rows sharded on Dask workers against the one-process fit of the same data
(issue 47), printed as a table, and a model of the fit at a scale no one machine holds.

    python benchmarks/bench_sharded.py [--n 2000000] [--p 1000] [--density 0.05] [--workers 4]
                                       [--variance 0.01] [--threads 2]
    python benchmarks/bench_sharded.py --model sccs --n 1000000 --eras 20 --p 10 [--workers 4]

Each worker simulates its own shard (indicator covariates at ``--density``, one effect vector
for every shard, survival times in days, ~30% censored), so no row ever passes through the
client; the one-process fit (in a fresh process, ``--threads`` threads) simulates the same
shards and stacks them. Both fit a Laplace prior of variance ``--variance`` to kkt_tol 1e-6.
``--model sccs``: the stratified case, whole cases per shard (``--eras`` eras each, ``--p``
exposure indicators, log era lengths as offsets).

Printed: the objective gap, outer iterations, rounds of tasks and bytes exchanged per
iteration, wall time (the data simulated where they are held, prepared, then the fit's solve),
CPU time (client + workers), peak RSS of each worker against the
one-process peak, and a model of N = 100M x 20,000 covariates on 16 workers from the measured
per-round compute per non-zero and bytes per round.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
from _common import isolated, print_table  # noqa: E402

import riskset  # noqa: E402
from riskset.data.dataset import Dataset  # noqa: E402
from riskset.sharded import ShardedData, ShardSource  # noqa: E402

KKT_TOL = 1e-6


def indicator_csc(rng, n: int, p: int, density: float) -> sp.csc_matrix:
    """An n x p binary CSC matrix, each entry 1 with probability ``density`` (rows of a column
    from geometric gaps: no n-sized draw per column)."""
    indptr, chunks = [0], []
    for _ in range(p):
        expected = int(n * density * 1.2 + 50)
        gaps = rng.geometric(density, size=expected)
        rows = np.cumsum(gaps) - 1
        rows = rows[rows < n]
        chunks.append(rows.astype(np.int32))
        indptr.append(indptr[-1] + rows.size)
    indices = np.concatenate(chunks)
    return sp.csc_matrix((np.ones(indices.size), indices, np.asarray(indptr, np.int64)), shape=(n, p))


@dataclass(frozen=True)
class SimulatedShard(ShardSource):
    """Rows ``first .. first + n - 1`` of a simulated Cox cohort, made where it is loaded."""

    first: int
    n: int
    p: int
    density: float
    seed: int

    def load(self) -> Dataset:
        rng = np.random.default_rng([self.seed, self.first])
        X = indicator_csc(rng, self.n, self.p, self.density)
        effects = np.random.default_rng(12345).normal(scale=0.3, size=self.p)
        effects[np.random.default_rng(54321).random(self.p) > 0.1] = 0.0  # a tenth of the covariates matter
        eta = X @ effects
        event = np.ceil(rng.exponential(2000.0 * np.exp(-eta)))
        censor = np.ceil(rng.exponential(4000.0, size=self.n))
        time_ = np.minimum(np.minimum(event, censor), 3650.0)
        status = (event <= np.minimum(censor, 3650.0)).astype(np.int8)
        return riskset.from_arrays(X, time=time_, status=status, row_ids=np.arange(self.first, self.first + self.n),
                                   covariate_names=[f"c{j}" for j in range(self.p)])

    def describe(self) -> str:
        return f"simulated rows {self.first}..{self.first + self.n - 1}"


@dataclass(frozen=True)
class SimulatedCases(ShardSource):
    """Cases ``first .. first + n - 1`` of a self-controlled case series: ``eras`` eras each
    (exposure indicators of ``p`` drugs, log era length as offset) and the case's events
    spread over its eras by their rates (one stratum per case)."""

    first: int
    n: int
    p: int
    eras: int
    seed: int

    def load(self) -> Dataset:
        rng = np.random.default_rng([self.seed, self.first])
        rows = self.n * self.eras
        X = indicator_csc(rng, rows, self.p, 0.15)
        irr = np.log(np.random.default_rng(12345).uniform(0.5, 2.0, size=self.p))
        length = rng.integers(1, 120, rows).astype(np.float64)
        rate = length * np.exp(X @ irr)
        case = np.repeat(np.arange(self.n), self.eras)
        share = rate / np.bincount(case, weights=rate)[case]
        y = rng.binomial(1 + rng.poisson(0.5, self.n)[case], np.clip(share, 0, 1)).astype(np.float64)
        return riskset.from_arrays(X, y=y, offset=np.log(length), strata=case + self.first,
                                   row_ids=np.arange(self.first * self.eras, self.first * self.eras + rows),
                                   covariate_names=[f"drug{j}" for j in range(self.p)])

    def describe(self) -> str:
        return f"simulated cases {self.first}..{self.first + self.n - 1}"


def shards(args) -> list:
    bounds = np.linspace(0, args.n, args.workers + 1).astype(np.int64)
    if args.model == "sccs":
        return [SimulatedCases(int(a), int(b - a), args.p, args.eras, 7) for a, b in zip(bounds[:-1], bounds[1:])]
    return [SimulatedShard(int(a), int(b - a), args.p, args.density, 7) for a, b in zip(bounds[:-1], bounds[1:])]


def whole(parts: list) -> Dataset:
    """The shards stacked into one Dataset."""
    X = sp.vstack([d.X for d in parts], format="csc")
    names = parts[0].covariate_names
    if parts[0].strata is not None:
        return riskset.from_arrays(X, y=np.concatenate([d.y for d in parts]),
                                   offset=np.concatenate([d.offset for d in parts]),
                                   strata=np.concatenate([np.asarray(d.strata_labels)[d.strata] for d in parts]),
                                   covariate_names=names)
    return riskset.from_arrays(X, time=np.concatenate([d.time for d in parts]),
                               status=np.concatenate([d.status for d in parts]), covariate_names=names)


def prior(args):
    return riskset.Laplace(variance=args.variance)


def one_process(args) -> dict:
    """The one-process fit of the stacked shards (run in a fresh process)."""
    cpu0, t0 = time.process_time(), time.perf_counter()
    data = whole([s.load() for s in shards(args)])
    loaded = time.perf_counter()
    fit = riskset.fit(data, args.model, prior(args), kkt_tol=KKT_TOL, n_jobs=args.threads)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return dict(objective=fit.objective, nonzero=int(np.count_nonzero(fit.coef)), wall=wall, cpu=cpu,
                load=loaded - t0, prepare=fit.timings["prepare"], solve=fit.timings["solve"],
                peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, kkt=fit.kkt,
                nnz=int(data.X.nnz), events=int(np.sum(data.status if data.status is not None else data.y)))


def _usage() -> tuple[float, float]:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime, u.ru_maxrss / 1024


def sharded(args) -> dict:
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit=args.worker_memory) as cluster, Client(cluster) as client:
        client.run(lambda: None)
        cpu0 = sum(c for c, _ in client.run(_usage).values())
        own0, t0 = time.process_time(), time.perf_counter()
        by = "stratum" if args.model == "sccs" else "row"
        fit = riskset.fit(ShardedData(tuple(shards(args)), by=by), args.model, prior(args), executor=client,
                          kkt_tol=KKT_TOL, progress=True)
        wall = time.perf_counter() - t0
        usage = client.run(_usage)
        cpu = sum(c for c, _ in usage.values()) - cpu0 + time.process_time() - own0
        peaks = sorted(m for _, m in usage.values())
    return dict(objective=fit.objective, nonzero=int(np.count_nonzero(fit.coef)), wall=wall, cpu=cpu,
                peaks=peaks, kkt=fit.kkt, iterations=fit.n_iter, prepare=fit.timings["prepare"],
                solve=fit.timings["solve"], **fit.sharding)


#: The fit modelled: claims data of N = 100M patients x 20,000 covariates at 0.5% mean density
#: (1e10 non-zeros), 16 workers.
BIG_NNZ, BIG_WORKERS = 100e6 * 20_000 * 0.005, 16


def model_at_scale(one: dict, shard: dict, args) -> list[str]:
    """Minutes of the modelled fit (:data:`BIG_NNZ` on :data:`BIG_WORKERS`), from this run: each
    round's compute on a worker scales with its non-zeros (the measured seconds per round per
    non-zero of the largest shard), plus a latency and the bytes of a round over the network.
    The rounds are this fit's (outer iterations barely grow with N; the grid of event times,
    in days, not at all)."""
    rounds, per_round_bytes = shard["rounds"], shard["bytes_exchanged"] / max(shard["rounds"], 1)
    compute_per_nnz = shard["solve"] / rounds / (one["nnz"] / args.workers)
    per_worker = BIG_NNZ / BIG_WORKERS
    lines = [f"model: N = 100M x 20,000 at 0.5% ({BIG_NNZ:.0e} non-zeros) on {BIG_WORKERS} workers, "
             f"{per_worker / 1e9:.2f}e9 non-zeros and ~{per_worker * 14 / 1e9:.0f} GB per worker (14 B/non-zero), "
             f"{compute_per_nnz * 1e9:.2f} s per round per 1e9 non-zeros measured here:"]
    for latency, bandwidth in ((1e-3, 1.25e9), (5e-3, 1.25e8)):
        per_round = compute_per_nnz * per_worker + latency + per_round_bytes * BIG_WORKERS / bandwidth
        lines.append(f"  {latency * 1e3:.0f} ms latency, {bandwidth * 8 / 1e9:.0f} Gb/s: {rounds} rounds x "
                     f"{per_round:.2f} s = {rounds * per_round / 60:.1f} min")
    one_machine = compute_per_nnz * BIG_NNZ * rounds / 60
    lines.append(f"  one machine with {BIG_NNZ * 14 / 1e12:.1f} TB of memory, the same rounds on one core: "
                 f"{one_machine:.0f} min; sharding wins wherever the data outgrow one machine's memory, and "
                 f"by ~{BIG_WORKERS}x in time while a round's compute outweighs its latency")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=("cox", "sccs"), default="cox")
    ap.add_argument("--n", type=int, default=2_000_000, help="rows (cox) or cases (sccs)")
    ap.add_argument("--eras", type=int, default=20, help="sccs: eras per case")
    ap.add_argument("--p", type=int, default=1000)
    ap.add_argument("--density", type=float, default=0.05)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--variance", type=float, default=0.01)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--worker-memory", default="6GiB", help="each worker's memory limit (Dask pauses a worker at "
                                                           "80%% of it and restarts it at 95%%)")
    args = ap.parse_args(argv)
    shard = sharded(args)
    one = isolated(one_process, args)
    gap = (one["objective"] - shard["objective"]) / abs(one["objective"])
    shape = (f"Cox L1 (variance {args.variance}), N = {args.n:,} x {args.p:,} at {args.density:.0%}"
             if args.model == "cox" else
             f"SCCS L1 (variance {args.variance}), {args.n:,} cases x {args.eras} eras, {args.p} drugs")
    print(f"\n{shape} ({one['nnz'] / 1e6:.0f}M non-zeros, {one['events']:,} events), {args.workers} workers "
          f"(memory limit {args.worker_memory} each) on {os.cpu_count()} cores\n")
    rows = [
        {"fit": "one process", "wall s": f"{one['wall']:.1f}",
         "simulate+prepare s": f"{one['load'] + one['prepare']:.1f}",
         "solve s": f"{one['solve']:.1f}", "cpu s": f"{one['cpu']:.1f}",
         "peak MB": f"{one['peak_mb']:.0f}", "objective gap": "0", "non-zero": one["nonzero"],
         "KKT": f"{one['kkt']:.1e}"},
        {"fit": f"{args.workers} shards", "wall s": f"{shard['wall']:.1f}",
         "simulate+prepare s": f"{shard['prepare']:.1f}", "solve s": f"{shard['solve']:.1f}",
         "cpu s": f"{shard['cpu']:.1f}", "peak MB": "/".join(f"{m:.0f}" for m in shard["peaks"]),
         "objective gap": f"{gap:.1e}", "non-zero": shard["nonzero"], "KKT": f"{shard['kkt']:.1e}",
         "outer it": shard["iterations"], "rounds": shard["rounds"],
         "KB/iteration": f"{shard['bytes_exchanged'] / 1e3 / max(shard['iterations'], 1):.0f}"},
    ]
    print_table(rows, ["fit", "wall s", "simulate+prepare s", "solve s", "cpu s", "peak MB", "objective gap",
                       "non-zero", "KKT", "outer it", "rounds", "KB/iteration"])
    print(f"\nsharded / one process: wall {shard['wall'] / one['wall']:.2f}x, solve "
          f"{shard['solve'] / one['solve']:.2f}x, largest worker peak "
          f"{shard['peaks'][-1] / one['peak_mb']:.2f} of the one-process peak")
    if args.model == "cox":
        print("\n".join(model_at_scale(one, shard, args)))


if __name__ == "__main__":
    main()
