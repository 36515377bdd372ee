"""``riskset demo``: a small cohort study on built-in simulated data (:func:`riskset.demo.run_demo`)."""
from __future__ import annotations

from riskset.arguments import SEED, bounded


def add_parser(sub) -> None:
    """Add the ``demo`` command to the subcommands ``sub``."""
    p = sub.add_parser("demo", help="a small cohort study on built-in simulated data",
                       description="Simulate a cohort, store it in a DuckDB file, read it back and fit the "
                                   "study's models; prints the results and writes plots into --out.")
    p.add_argument("--n", type=bounded(int, 1000), default=20_000, help="patients (default 20000, at least 1000)")
    p.add_argument("--out", default="riskset-demo", metavar="DIR", help="output folder (default riskset-demo)")
    p.add_argument("--seed", type=SEED, default=1, help="random seed (default 1)")
    p.set_defaults(func=main)


def main(args) -> int:
    """Run ``riskset demo``; returns the exit status."""
    from riskset.demo import run_demo

    return run_demo(n=args.n, out=args.out, seed=args.seed)
