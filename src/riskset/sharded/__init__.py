"""Fits whose rows are split over shards (Dask workers) that exchange only per-event-time vectors,
never rows: a Cox model's risk sets span the shards, and each shard reduces its rows to sums over
a global grid of event times that a driver combines into the exact log-likelihood, gradient and
Hessian-vector products (:mod:`riskset.sharded.risk_sets`).
"""
