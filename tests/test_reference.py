"""Every reference case whose model riskset implements, through the API and the CLI.

The cases (results of R's survival, glmnet, cmprsk, gnm, stats::glm) live in
tests/reference; set RISKSET_REFERENCE_DIR to run another folder of cases in the same
format. Tolerances are those of each case.json.
"""
import json

import numpy as np
import pytest

from conftest import reference_dir
from riskset import cli
from riskset.api import fit_spec
from riskset.spec import is_supported, load_spec


def _cases():
    cases = []
    for path in sorted(reference_dir().glob("*/case.json")):
        spec = json.loads(path.read_text())
        skip = pytest.mark.skip(reason=f"model {spec['model']!r} is not implemented in riskset yet")
        marks = [] if is_supported(spec) else [skip]
        cases.append(pytest.param(path, id=path.parent.name, marks=marks))
    return cases


CASES = _cases()


def check_against_reference(spec, coef, loglik, se=None, penalized_loglik=None, variance="model-based"):
    exp, tol = spec["expected"], spec["tolerance"]
    for name, ref in exp["coef"].items():
        assert name in coef, f"coefficient {name!r} missing"
        if ref == 0 and "zero_abs" in tol:
            assert abs(coef[name]) < tol["zero_abs"], f"{name}: {coef[name]} should be 0"
        else:
            assert abs(coef[name] - ref) <= tol["coef_abs"], f"{name}: {coef[name]} vs {ref}"
    assert abs(loglik - exp["loglik"]) <= tol["loglik_abs"], f"loglik {loglik} vs {exp['loglik']}"
    if "penalized_loglik" in exp and penalized_loglik is not None:
        assert abs(penalized_loglik - exp["penalized_loglik"]) <= tol["penalized_loglik_abs"]
    ref_se = exp.get("se") if variance == "robust" else exp.get("se_model", exp.get("se"))
    if ref_se and se is not None:
        for name, ref in ref_se.items():
            assert se[name] == pytest.approx(ref, rel=tol["se_rel"]), f"se of {name}"
    if "nonzero" in exp:
        assert sum(abs(v) > tol.get("zero_abs", 0) for v in coef.values()) == exp["nonzero"]


@pytest.mark.parametrize("case_path", CASES)
def test_reference_api(case_path):
    spec, frame = load_spec(case_path)
    fit = fit_spec(spec, frame)
    assert fit.converged, fit.message
    check_against_reference(spec, fit.coef.to_dict(), fit.loglik, fit.se.to_dict(), fit.objective, fit.variance)


@pytest.mark.parametrize("case_path", CASES)
def test_reference_cli_spec(case_path, tmp_path):
    out = tmp_path / "result.json"
    assert cli.main(["fit", "--spec", str(case_path), "--out", str(out), "--quiet"]) == 0
    result = json.loads(out.read_text())
    assert result["converged"] is True
    spec = json.loads(case_path.read_text())
    se = {k: (np.nan if v is None else v) for k, v in result["se"].items()}
    check_against_reference(spec, result["coef"], result["loglik"], se, result["penalized_loglik"], result["variance"])
