import os
import pathlib

import pytest

HERE = pathlib.Path(__file__).parent


def reference_dir() -> pathlib.Path:
    """Reference cases: $RISKSET_REFERENCE_DIR if set, else the copies shipped in tests/reference."""
    return pathlib.Path(os.environ.get("RISKSET_REFERENCE_DIR", HERE / "reference"))


@pytest.fixture
def rng():
    import numpy as np

    return np.random.default_rng(20240601)
