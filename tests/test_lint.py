"""The code passes ruff with the project's rules (pyproject.toml: pycodestyle errors and
warnings, pyflakes, lines up to 120 characters): CI runs this test."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import HANG_SECONDS

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_is_clean():
    ruff = shutil.which("ruff")
    command = [ruff] if ruff else [sys.executable, "-m", "ruff"]
    if not ruff and subprocess.run(command + ["--version"], capture_output=True).returncode != 0:
        pytest.fail("ruff is not installed: pip install -e '.[test]' installs it")
    done = subprocess.run(command + ["check", "src", "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True,
                          timeout=HANG_SECONDS)
    assert done.returncode == 0, done.stdout + done.stderr
