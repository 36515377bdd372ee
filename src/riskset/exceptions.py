"""Errors and warnings raised by riskset."""


class InputError(ValueError):
    """The input data are invalid; the message names the column or row at fault."""


class ConvergenceWarning(UserWarning):
    """A fit stopped before meeting its convergence criterion."""


class DataWarning(UserWarning):
    """The input was usable but something was dropped or adjusted (e.g. an all-zero covariate)."""


class ShardLostError(RuntimeError):
    """A sharded fit lost a shard for good: the workers that held it, or read it again, died
    (the message names the shard and the last worker)."""
