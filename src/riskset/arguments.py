"""Command-line arguments: a parser whose errors are one line, and argparse types of bounded numbers.

Shared by the ``riskset`` commands (:mod:`riskset.cli`) and the ``riskset ode`` command
(:mod:`riskset.ode.cli`), which each build their options on them.
"""
from __future__ import annotations

import argparse
import math

from riskset.exceptions import InputError


class UsageError(InputError):
    """A command-line mistake found while parsing; ``prog`` is the (sub)command at fault."""

    def __init__(self, prog: str, message: str):
        super().__init__(message)
        self.prog = prog


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line ``PROG: error: ... (see PROG --help)``, not a usage block."""

    def error(self, message):
        raise UsageError(self.prog, f"{message} (see {self.prog} --help)")

    def option_strings(self) -> list[str]:
        return [s for action in self._actions for s in action.option_strings]  # argparse has no public list


def bounded(convert, low=None, high=None, *, low_open=False, high_open=False):
    """An argparse ``type``: ``convert`` (int or float) of the text, finite and within the bounds.

    >>> bounded(int, 1)("3")
    3
    >>> bounded(float, 0, 1, low_open=True, high_open=True)("2")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be a number in (0, 1), got '2'
    """
    kind = "a whole number" if convert is int else "a number"
    if low is not None and high is not None:
        rule = f"{kind} in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    elif low is not None:
        rule = f"{kind} {'>' if low_open else '>='} {low:g}"
    else:
        rule = kind

    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {rule}, got {text!r}") from None
        below = low is not None and (value <= low if low_open else value < low)
        above = high is not None and (value >= high if high_open else value > high)
        if not math.isfinite(value) or below or above:
            raise argparse.ArgumentTypeError(f"must be {rule}, got {text!r}")
        return value

    parse.__name__ = rule
    return parse


#: The data options naming a column of a table, one per Dataset role (``--censor-weights`` for censor_weights).
ROLE_OPTIONS = ("y", "time", "status", "start", "strata", "weights", "offset", "exposure", "subject",
                "censor_weights")

COUNT = bounded(int, 1)
SEED = bounded(int, 0)
NON_NEGATIVE_INT = bounded(int, 0)
FOLDS = bounded(int, 2)
POSITIVE = bounded(float, 0, low_open=True)
NON_NEGATIVE = bounded(float, 0)
NUMBER = bounded(float)
LEVEL = bounded(float, 0, 1, low_open=True, high_open=True)
SHARE = bounded(float, 0, 1, low_open=True)
