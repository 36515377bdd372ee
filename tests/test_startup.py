"""First run: the one-line note while Numba compiles riskset's kernels, and the disk cache.

Each test runs a fresh Python with an empty ``NUMBA_CACHE_DIR`` of its own, compiling one
small kernel (``riskset.core.step.newton_step``) so that it stays fast, or none (the cache
keys of the families' compiled sweeps, compared between two processes). The note is for
a person at a terminal, so stderr is a pseudo-terminal here.
"""
import os
import pty
import subprocess
import sys
from pathlib import Path

import numba

from riskset.kernels.cpu.compile_notice import NOTE, is_riskset_kernel

from helpers import HANG_SECONDS

SRC = Path(__file__).resolve().parent.parent / "src"

CALL_KERNEL = "import riskset; from riskset.core.step import newton_step; newton_step(1.0, -1.0, 0.0, 0.0, 0.0)"
USER_KERNEL = ("import riskset, numba; f = numba.njit(lambda x: x + 1); f(1.0); "
               "from riskset.kernels.cpu.compile_notice import is_riskset_kernel; assert not is_riskset_kernel(f)")


def run_python(code: str, cache_dir: Path, terminal: bool = True) -> str:
    """stderr of ``python -c code`` (riskset from this checkout, the given kernel cache),
    written to a pseudo-terminal or, if not ``terminal``, to a pipe."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=str(SRC))
    if not terminal:
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                              timeout=HANG_SECONDS)
        assert done.returncode == 0, done.stderr
        return done.stderr
    reader, writer = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL, stderr=writer)
    os.close(writer)
    chunks = []
    while True:
        try:
            chunk = os.read(reader, 4096)
        except OSError:  # the terminal closed: the process has exited
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(reader)
    assert proc.wait(timeout=HANG_SECONDS) == 0, b"".join(chunks).decode()
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_note_on_a_cold_cache_and_silence_once_the_kernels_are_cached(tmp_path):
    cold = run_python(CALL_KERNEL, tmp_path)
    assert cold.count(NOTE) == 1
    assert any(tmp_path.rglob("*.nbi")), "the compiled kernel was not written to the cache"
    warm = run_python(CALL_KERNEL, tmp_path)
    assert NOTE not in warm


def test_no_note_when_stderr_is_not_a_terminal(tmp_path):
    """Scripts, logs and the CLI's one-line errors stay as they are."""
    assert run_python(CALL_KERNEL, tmp_path, terminal=False) == ""


def test_no_note_for_numba_code_that_is_not_a_riskset_kernel(tmp_path):
    assert NOTE not in run_python(USER_KERNEL, tmp_path)


def test_a_function_made_by_exec_compiles_beside_the_notice():
    """Its ``__module__`` is None: the notice's listener, called at every compilation in the
    process, once failed the user's compilation with an AttributeError."""
    namespace = {}
    exec("def add_one(x):\n    return x + 1", namespace)
    kernel = numba.njit(namespace["add_one"])
    assert not is_riskset_kernel(kernel)
    assert kernel(1.0) == 2.0



CACHE_KEYS = """
import hashlib, importlib, pkgutil
import riskset.kernels.cpu as cpu
from numba.core.serialize import dumps
from riskset.core.sweep import CompiledFamily
for info in pkgutil.iter_modules(cpu.__path__):
    module = importlib.import_module(f"riskset.kernels.cpu.{info.name}")
    for value in vars(module).values():
        for family in (value.values() if isinstance(value, dict) else [value]):
            if isinstance(family, CompiledFamily):
                for closure in (family.sweep, family.coordinate):
                    cells = tuple(c.cell_contents for c in closure.py_func.__closure__)
                    print(closure.py_func.__qualname__, hashlib.sha256(dumps(cells)).hexdigest())
"""


def test_every_process_finds_the_compiled_sweeps_in_the_disk_cache(tmp_path):
    """Numba keys a closure's disk cache on a pickle of its cells (the family's kernels and
    what they call): it must be the same in every process, or every process compiles each
    family's sweep again (an intrinsic pickled with a random UUID did that to Cox's, ~8 s)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(SRC))
    keys = [subprocess.run([sys.executable, "-c", CACHE_KEYS], env=env, capture_output=True, text=True, check=True,
                           timeout=HANG_SECONDS).stdout for _ in range(2)]
    assert keys[0] == keys[1]
    names = {line.split()[0] for line in keys[0].splitlines()}
    assert {"compile_family.<locals>.sweep__cox_sparse", "compile_family.<locals>.sweep__glm",
            "compile_family.<locals>.coordinate__fine_gray_scan"} <= names
