"""How every ``riskset`` command reports: its exit status, one-line errors and warnings, the files it wrote.

An exception becomes one line ``riskset COMMAND: error: ...`` on stderr (:func:`report_error`):
input errors exit with :data:`EXIT_INPUT`, anything else is a bug (:data:`EXIT_BUG`).
"""
from __future__ import annotations

import contextlib
import sys
import traceback
import warnings

EXIT_OK, EXIT_NOT_CONVERGED, EXIT_INPUT, EXIT_BUG, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

EXIT_STATUS_HELP = ("exit status: 0 success; 1 a fit did not converge or its estimate does not exist (the\n"
                    "results are still written; the reason is on stderr); 2 bad usage or input (one line\n"
                    "'riskset COMMAND: error: ...'); 3 internal error, a bug: rerun with --debug for the\n"
                    "traceback and please report it.")


def report_error(prog: str, err: BaseException, *, debug: bool) -> int:
    """Print ``err`` as one line on stderr (after its traceback with --debug); returns the exit status."""
    expected = isinstance(err, (ValueError, NotImplementedError, OSError, MemoryError) + reader_errors())
    if debug:
        traceback.print_exception(err)
    text = one_line(_describe(err))
    if not expected:
        how = "the traceback is above" if debug else "rerun with --debug for the traceback"
        text = f"internal error ({type(err).__name__}: {text}); this is a bug in riskset: {how}, and please report it"
    print(f"{prog}: error: {text}", file=sys.stderr)
    return EXIT_INPUT if expected else EXIT_BUG


def reader_errors() -> tuple:
    """Error classes of the table readers already loaded (DuckDB, pyarrow): bad input, not bugs."""
    classes = []
    if "duckdb" in sys.modules:
        classes.append(sys.modules["duckdb"].Error)
    if "pyarrow" in sys.modules:
        classes.append(sys.modules["pyarrow"].lib.ArrowException)
    return tuple(classes)


def _describe(err: BaseException) -> str:
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return f"{err.filename}: {err.strerror}"
    return str(err) or type(err).__name__


def one_line(text) -> str:
    return " ".join(str(text).split())


@contextlib.contextmanager
def one_line_warnings(prog: str):
    """Show each warning as one line ``PROG: warning: ...`` (no source line, no file name)."""
    with warnings.catch_warnings():
        warnings.showwarning = lambda message, *_: print(f"{prog}: warning: {one_line(message)}",
                                                         file=sys.stderr)
        yield


def report_written(written: list[str]) -> None:
    """The last line of a command's output: the files it wrote."""
    if written:
        print(f"\nwrote {', '.join(written)}")
