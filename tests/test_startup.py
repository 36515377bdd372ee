"""First run: the one-line note while Numba compiles riskset's kernels, and the disk cache.

Each test runs a fresh Python with an empty ``NUMBA_CACHE_DIR`` of its own, compiling one
small kernel (``riskset.solver.step.newton_step``) so that it stays fast.
"""
import os
import subprocess
import sys
from pathlib import Path

from riskset.kernels.cpu.compile_notice import NOTE

SRC = Path(__file__).resolve().parent.parent / "src"

CALL_KERNEL = "import riskset; from riskset.solver.step import newton_step; newton_step(1.0, -1.0, 0.0, 0.0, 0.0)"
USER_KERNEL = ("import riskset, numba; f = numba.njit(lambda x: x + 1); f(1.0); "
               "from riskset.kernels.cpu.compile_notice import is_riskset_kernel; assert not is_riskset_kernel(f)")


def run_python(code: str, cache_dir: Path) -> str:
    """stderr of ``python -c code`` with riskset from this checkout and the given kernel cache."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=str(SRC))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_note_on_a_cold_cache_and_silence_once_the_kernels_are_cached(tmp_path):
    cold = run_python(CALL_KERNEL, tmp_path)
    assert cold.count(NOTE) == 1
    assert any(tmp_path.rglob("*.nbi")), "the compiled kernel was not written to the cache"
    warm = run_python(CALL_KERNEL, tmp_path)
    assert NOTE not in warm


def test_no_note_for_numba_code_that_is_not_a_riskset_kernel(tmp_path):
    assert NOTE not in run_python(USER_KERNEL, tmp_path)
