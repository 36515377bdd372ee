"""Say once per process, on stderr, that riskset is compiling its kernels.

The CPU kernels are compiled by Numba on first use (lazily, one machine-code version
per argument-type signature) and cached on disk (``cache=True``): beside the sources in
``__pycache__`` when that folder is writable, else in the user's cache folder
(``~/.cache/numba``), or in ``NUMBA_CACHE_DIR`` when it is set. A cold cache costs
tens of seconds on the first fit, which would otherwise pass without a word.

Numba fires its ``numba:compile`` event only when it actually compiles, never when it
loads a signature from the cache, so the note appears exactly when there is a wait.
It is for a person waiting: it is written only when stderr is a terminal or in a
Jupyter kernel, so scripts, logs and the command line's one-line-error contract see
nothing. It is not a warning (nothing is wrong, and ``-W error`` must not turn it into
one).

>>> from riskset.kernels.cpu.compile_notice import is_riskset_kernel
>>> from riskset.core.step import newton_step
>>> is_riskset_kernel(newton_step)
True
"""
from __future__ import annotations

import sys

from numba.core import event

NOTE = ("riskset: compiling kernels, first run only (this can take a minute; "
        "compiled kernels are cached for later runs)")

# The cached library kernels; ODE right-hand sides (riskset.ode) and GPU kernels are
# compiled per run by design and say nothing.
KERNEL_MODULES = ("riskset.kernels.cpu.", "riskset.core.")


def is_riskset_kernel(dispatcher) -> bool:
    """Whether ``dispatcher`` is one of riskset's cached CPU kernels."""
    return (dispatcher.py_func.__module__ or "").startswith(KERNEL_MODULES)  # None: a function made by exec


def someone_is_watching() -> bool:
    """Whether stderr reaches a person: a terminal, or a Jupyter notebook's output."""
    return sys.stderr.isatty() or "ipykernel" in sys.modules


class CompileNotice(event.Listener):
    """Writes :data:`NOTE` to ``sys.stderr`` at the first kernel compilation someone
    watches, then never."""

    def __init__(self):
        self.said = False

    def on_start(self, ev):
        if not self.said and is_riskset_kernel(ev.data["dispatcher"]) and someone_is_watching():
            self.said = True
            print(NOTE, file=sys.stderr, flush=True)

    def on_end(self, ev):
        pass


_installed: list[CompileNotice] = []


def install() -> CompileNotice:
    """Register the notice for this process (``import riskset`` does it); once, however
    often it is called (e.g. a reloaded module)."""
    if not _installed:
        _installed.append(CompileNotice())
        event.register("numba:compile", _installed[0])
    return _installed[0]
