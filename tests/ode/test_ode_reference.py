"""Reference cases: the bundled ode_seir case, plus every case directory
under $RISKSET_REFERENCE_DIR whose case.json has model == "ode"."""

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from riskset.ode import solve_batch
from riskset.ode.cli import load_spec

HERE = Path(__file__).resolve().parent
BUNDLED = HERE / "data" / "ode_seir"


def _case_dirs():
    dirs = [BUNDLED]
    root = os.environ.get("RISKSET_REFERENCE_DIR")
    if root:
        for case in sorted(Path(root).glob("*/case.json")):
            try:
                spec = json.loads(case.read_text())
            except (OSError, ValueError):
                continue
            if spec.get("model") == "ode":
                dirs.append(case.parent)
    return dirs


def _check_case(case_dir):
    spec = json.loads((case_dir / "case.json").read_text())
    model, table, t, rtol, atol = load_spec(case_dir / "case.json")
    res = solve_batch(model, table, None, t, rtol=rtol or 1e-10,
                      atol=atol or 1e-10, progress=False)
    assert np.all(res.success)
    ref = pd.read_csv(case_dir / spec.get("expected", {}).get(
        "file", "data.csv"))
    cols = spec.get("columns", {})
    set_col, t_col = cols.get("set", "set"), cols.get("time", "t")
    got = res.to_frame().rename(columns={"set": set_col, "t": t_col})
    merged = ref.merge(got, on=[set_col, t_col], suffixes=("_ref", ""),
                       how="left", validate="one_to_one")
    tol = spec.get("tolerance", {})
    st_r, st_a = tol.get("state_rtol", 1e-6), tol.get("state_atol", 1e-6)
    names = spec.get("state_names", list(res.state_names))
    assert len(merged) == len(ref)
    for s in names:
        r = merged[f"{s}_ref"].to_numpy(float)
        x = merged[s].to_numpy(float)
        bad = ~(np.abs(x - r) <= st_a + st_r * np.abs(r))
        assert not bad.any(), (
            f"{case_dir.name}: state {s} off at "
            f"{merged.loc[bad, [set_col, t_col]].head().to_dict('records')}")


@pytest.mark.parametrize("case_dir", _case_dirs(), ids=lambda p: p.name)
def test_reference_case(case_dir):
    _check_case(case_dir)


def test_reference_detects_wrong_equation(monkeypatch):
    """The tolerance is tight enough to catch a slightly wrong parameter."""
    spec = json.loads((BUNDLED / "case.json").read_text())
    model, table, t, rtol, atol = load_spec(BUNDLED / "case.json")
    table = table.copy()
    table["gamma"] *= 1.001
    res = solve_batch(model, table, None, t, rtol=rtol, atol=atol,
                      progress=False)
    ref = pd.read_csv(BUNDLED / "data.csv")
    x = res.to_frame()["I"].to_numpy()
    r = ref["I"].to_numpy()
    tol = spec["tolerance"]
    assert np.any(np.abs(x - r) > tol["state_atol"] + tol["state_rtol"]
                  * np.abs(r))
