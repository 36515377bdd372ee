"""``riskset pool``: combine the sites' likelihood approximations (``riskset fit --approximate``)."""
from __future__ import annotations

import argparse

from riskset.arguments import LEVEL
from riskset.exceptions import InputError
from riskset.synthesis.pooling import pool


def add_parser(sub) -> None:
    """Add the ``pool`` command to the subcommands ``sub``."""
    p = sub.add_parser(
        "pool", help="pool the sites' likelihood approximations into one estimate (evidence synthesis)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Combine the likelihood approximations that the sites of a network wrote with\n"
                    "'riskset fit ... --approximate COEF --out SITE.json' (no patient rows are shared)\n"
                    "into one estimate and likelihood-ratio interval: fixed effect (the sum of the\n"
                    "sites' log-likelihoods) or random effects (site effects normal around the pooled\n"
                    "one, their standard deviation tau estimated by maximum likelihood).",
        epilog="Example:\n"
               "  riskset fit --data site1.csv --model cox --time days --status event \\\n"
               "              --approximate treatment --out site1.json      (at each site)\n"
               "  riskset pool site1.json site2.json site3.json --method random --out pooled.csv\n\n"
               "exit status: 0 success; 2 bad usage or input (one line 'riskset pool: error: ...').")
    p.add_argument("files", nargs="+", metavar="SITE.json", help="the sites' approximation files")
    p.add_argument("--method", choices=("fixed", "random"), default="fixed",
                   help="fixed effect (default) or random effects")
    p.add_argument("--level", type=LEVEL, default=0.95, help="confidence level of the interval (default 0.95)")
    p.add_argument("--out", metavar="FILE.csv", help="write the pooled estimate as a one-row CSV table")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    p.set_defaults(func=main)


def main(args) -> int:
    """Run ``riskset pool``; returns the exit status."""
    if args.out and not args.out.endswith(".csv"):
        raise InputError(f"--out writes a CSV table: give FILE.csv, got {args.out!r}")
    table = pool(args.files, method=args.method, level=args.level)
    if args.out:
        table.to_csv(args.out, index=False)
    if not args.quiet:
        print(table.drop(columns="note").to_string(index=False))
        if table["note"].iloc[0]:
            print(f"note: {table['note'].iloc[0]}")
        if args.out:
            print(f"\nwrote {args.out}")
    return 0
