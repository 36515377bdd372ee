"""Loading long OHDSI tables: 10 million covariate rows from Parquet and from DuckDB.

    python benchmarks/bench_ingest.py --rows 10000000
    python benchmarks/bench_ingest.py --rows 100000000 --source parquet   # one source: its own peak

Writes a simulated cohort once (benchmarks/.cache), then times riskset.from_long on
the Parquet files and riskset.from_duckdb on the database, against the time to read
the same tables with pyarrow / duckdb alone (the I/O floor, read whole). With ``--source``
one source alone, without the floor, so that the peak RSS printed (the process's, in GB,
beside the matrix it built: int32 row indices and float64 values) is that of the load.
"""
from __future__ import annotations

import argparse
import os
import time

import riskset
from _common import CACHE, peak_rss_mb, print_table
from riskset.data.export import write_duckdb, write_parquet


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000, help="covariate rows (non-zeros)")
    ap.add_argument("--p", type=int, default=1000)
    ap.add_argument("--source", choices=["parquet", "duckdb"], help="one source alone (its peak memory)")
    args = ap.parse_args()
    density = 0.02
    n = int(args.rows / (args.p * density))
    folder = os.path.join(CACHE, f"ingest_{n}_{args.p}")
    db = folder + ".duckdb"
    if not os.path.exists(db):
        data = riskset.simulate(n=n, p=args.p, density=density, model="cox", seed=0)
        write_parquet(data, folder)
        write_duckdb(data, db)
    import duckdb
    import pyarrow.parquet as pq

    if args.source:
        t = time.perf_counter()
        ds = (riskset.from_long(f"{folder}/outcomes.parquet", f"{folder}/covariates.parquet")
              if args.source == "parquet" else
              riskset.from_duckdb(db, "SELECT * FROM outcomes", "SELECT * FROM covariates"))
        seconds = time.perf_counter() - t
        matrix = ds.X.data.nbytes + ds.X.indices.nbytes + ds.X.indptr.nbytes
        print_table([{"source": args.source, "rows": n, "nonzeros": ds.X.nnz, "seconds": seconds,
                      "matrix GB": matrix / 1e9, "peak GB": peak_rss_mb() / 1e3}],
                    ["source", "rows", "nonzeros", "seconds", "matrix GB", "peak GB"])
        return
    rows = []
    t = time.perf_counter()
    pq.read_table(f"{folder}/outcomes.parquet"), pq.read_table(f"{folder}/covariates.parquet")
    floor_pq = time.perf_counter() - t
    t = time.perf_counter()
    ds = riskset.from_long(f"{folder}/outcomes.parquet", f"{folder}/covariates.parquet")
    rows.append({"source": "Parquet", "rows": n, "nonzeros": ds.X.nnz, "seconds": time.perf_counter() - t,
                 "read only": floor_pq})
    with duckdb.connect(db, read_only=True) as con:
        t = time.perf_counter()
        con.sql("SELECT * FROM outcomes").to_arrow_table(), con.sql("SELECT * FROM covariates").to_arrow_table()
        floor_db = time.perf_counter() - t
    t = time.perf_counter()
    ds = riskset.from_duckdb(db, "SELECT * FROM outcomes", "SELECT * FROM covariates")
    rows.append({"source": "DuckDB", "rows": n, "nonzeros": ds.X.nnz, "seconds": time.perf_counter() - t,
                 "read only": floor_db})
    for r in rows:
        r["riskset/read"] = r["seconds"] / r["read only"]
    print_table(rows, ["source", "rows", "nonzeros", "seconds", "read only", "riskset/read"])


if __name__ == "__main__":
    main()
