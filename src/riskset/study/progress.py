"""A progress bar over the named steps of a study (none when switched off)."""
from __future__ import annotations

import contextlib
import warnings

from riskset.exceptions import DataWarning


class StepProgress:
    """``next(what)`` starts step ``what`` (the one before counts as done); ``close()`` ends."""

    def __init__(self, on: bool, total: int, desc: str = "study"):
        if on:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=desc, unit="step")
        else:
            self.bar = None
        self.desc = desc
        self.started = False

    def next(self, what: str):
        if self.bar is not None:
            if self.started:
                self.bar.update(1)
            self.bar.set_description(f"{self.desc}: {what}")
            self.started = True

    def close(self):
        if self.bar is not None:
            self.bar.update(1)
            self.bar.close()


@contextlib.contextmanager
def strata_without_events_expected():
    """Matched sets or cases without an event in a fold or draw are expected (most of them, for
    a rare outcome): the models' warning that they were dropped is silenced."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "(.*: )?dropped .* without (any event|a case)", DataWarning)
        yield
