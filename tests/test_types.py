"""The public API type-checks: mypy, with the project's settings (pyproject.toml [tool.mypy]:
the modules of what ``riskset`` exports, the annotated functions checked against the types of
everything they call), reports no error. CI runs this test."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import HANG_SECONDS

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_is_clean_on_the_public_api():
    mypy = shutil.which("mypy")
    command = [mypy] if mypy else [sys.executable, "-m", "mypy"]
    if not mypy and subprocess.run(command + ["--version"], capture_output=True).returncode != 0:
        pytest.fail("mypy is not installed: pip install -e '.[test]' installs it")
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=HANG_SECONDS)
    assert done.returncode == 0, done.stdout + done.stderr
