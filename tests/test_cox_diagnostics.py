"""Cox diagnostics against R's survival 3.5-3 (R 4.2.2) on lung (tests/reference/cox_lung,
complete cases of time, status, age, sex, ph.ecog):

    d <- read.csv("tests/reference/cox_lung/data.csv")
    f <- coxph(Surv(time, status) ~ age + sex + ph.ecog, data = d, ties = TIES)
    cox.zph(f, transform = TR)$table[, "chisq"]          # TR: km, rank, identity, log
    fs <- coxph(Surv(time, status) ~ age + ph.ecog + strata(sex), data = d, ties = TIES)
    cox.zph(fs)$table[, "chisq"]
    vcov(f); residuals(f, type = "schoenfeld")[1:3, ]; residuals(f, type = "scaledsch")[1:3, ]
    cox.zph(f)$y[1:3, ]; cox.zph(f)$x[1:3]

Conventions: ties as the fit (Breslow, Efron); survival 3's score test (not 2.x's
correlation test). Tolerance 1e-6 relative: riskset's fit and R's stop at slightly
different points (both well within 1e-9 of the optimum).
"""
import numpy as np
import pandas as pd
import pytest

import riskset
from riskset.diagnostics import covariance, cox_zph, schoenfeld_residuals

CHISQ = {  # (ties, transform) -> age, sex, ph.ecog, GLOBAL
    ("breslow", "km"): [0.188085661154335, 2.297197354933806, 2.051708611740464, 4.451012333769295],
    ("breslow", "rank"): [0.117689737601274, 2.036321428996874, 2.541410475653837, 4.696917760155085],
    ("breslow", "identity"): [0.152149134292091, 2.484600487351330, 1.577258171695847, 4.109734236928793],
    ("breslow", "log"): [3.359186395216950, 2.024931862532274, 0.369963813996936, 5.360566612226069],
    ("efron", "km"): [0.18798767365229, 2.30543722740497, 2.05424877405441, 4.46365758875861],
    ("efron", "rank"): [0.117291506990152, 2.044694680235669, 2.544878392625574, 4.710680141288768],
    ("efron", "identity"): [0.15235031725392, 2.49191321710657, 1.57823523837676, 4.11938295147948],
    ("efron", "log"): [3.373634010749480, 2.034936878884795, 0.370496324776842, 5.389821428058948],
}
STRATA_CHISQ = {"breslow": [0.131002535844817, 2.164747294301558, 2.182177798338783],
                "efron": [0.133470723862671, 2.182400689479594, 2.200478902079944]}
VCOV = {"breslow": [8.58730283371157e-05, 4.99232244974496e-06, -1.82274518527640e-04, 4.99232244974496e-06,
                    2.81375288680841e-02, -9.31701232922123e-04, -1.82274518527640e-04, -9.31701232922123e-04,
                    1.28990653016231e-02],
        "efron": [8.58849068968579e-05, 4.30992961523845e-06, -1.82172978664395e-04, 4.30992961523845e-06,
                  2.81363901654465e-02, -9.30088085453667e-04, -1.82172978664395e-04, -9.30088085453667e-04,
                  1.28997953888330e-02]}
SCHOENFELD = {"breslow": [[0.853267623883482, 0.730960696124391, -1.207785169100128],
                          [9.854875664350402, -0.267661759074659, 0.789938678174863],
                          [16.854875664350402, -0.267661759074659, -1.210061321825137]],
              "efron": [[0.850147027979816, 0.731110089643279, -1.208222164977514],
                        [9.909308236917397, -0.269167509140404, 0.789964288336811],
                        [16.909308236917397, -0.269167509140404, -1.210035711663189]]}
SCALED = {"breslow": [[0.059760669898864, 3.00641554494480, -2.22925493317168],
                      [0.125996292017115, -1.89966265956689, 1.88032666216220],
                      [0.284364570625190, -1.58833346899613, -2.55981790403992]],
          "efron": [[0.0596552515373129, 3.00589500372550, -2.22926457186067],
                    [0.1268490876397370, -1.90814291710008, 1.87995358796740],
                    [0.2851976977592515, -1.59812622587298, -2.56031387907656]]}
COVARIATES = ["age", "sex", "ph.ecog"]


@pytest.fixture(scope="module")
def lung():
    from conftest import reference_dir

    return pd.read_csv(reference_dir() / "cox_lung" / "data.csv")


def fitted(lung, ties, strata=None):
    covariates = [c for c in COVARIATES if c != strata]
    data = riskset.from_frame(lung, time="time", status="status", strata=strata, covariates=covariates)
    return riskset.fit(data, "cox", ties=ties, tol=1e-14), data


@pytest.mark.parametrize("ties, transform", sorted(CHISQ))
def test_zph_matches_cox_zph(lung, ties, transform):
    fit, data = fitted(lung, ties)
    table = cox_zph(fit, data, transform).table
    assert table.index.tolist() == COVARIATES + ["GLOBAL"] and table["df"].tolist() == [1, 1, 1, 3]
    np.testing.assert_allclose(table["chisq"], CHISQ[ties, transform], rtol=1e-6)
    np.testing.assert_allclose(table["p"], 1 - __import__("scipy").stats.chi2.cdf(table["chisq"], table["df"]))


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_zph_with_strata_matches_cox_zph(lung, ties):
    fit, data = fitted(lung, ties, strata="sex")
    np.testing.assert_allclose(cox_zph(fit, data).table["chisq"], STRATA_CHISQ[ties], rtol=1e-6)


@pytest.mark.parametrize("ties", ["breslow", "efron"])
def test_residuals_and_covariance_match_r(lung, ties):
    fit, data = fitted(lung, ties)
    np.testing.assert_allclose(covariance(fit, data).to_numpy().ravel(), VCOV[ties], rtol=1e-6)
    residuals = schoenfeld_residuals(fit, data)
    assert len(residuals) == int(lung["status"].sum())
    np.testing.assert_allclose(residuals[COVARIATES].to_numpy()[:3], SCHOENFELD[ties], rtol=1e-6)
    np.testing.assert_allclose(residuals[COVARIATES].sum(), 0.0, atol=1e-6)  # the score at the MLE
    scaled = schoenfeld_residuals(fit, data, scaled=True)
    np.testing.assert_allclose(scaled[COVARIATES].to_numpy()[:3], SCALED[ties], rtol=1e-6)
    zph = cox_zph(fit, data)
    np.testing.assert_allclose(zph.y.to_numpy()[:3], SCALED[ties], rtol=1e-6)  # unstratified: the same
    np.testing.assert_allclose(zph.x[:3], [0.0, 0.00440528634361237, 0.00440528634361237], rtol=1e-12)


def test_robust_covariance_of_fine_gray_is_crr_and_refusals(lung):
    from conftest import reference_dir

    mgus = pd.read_csv(reference_dir() / "fine_gray_mgus2" / "data.csv")
    data = riskset.from_frame(mgus, time="time", status="status", covariates=["age", "sex01", "hgb"])
    fit = riskset.fit(data, "fine_gray")
    robust = covariance(fit, data, "robust")
    np.testing.assert_allclose(np.sqrt(np.diag(robust)), fit.se, rtol=1e-10)  # the table's robust SEs
    cox, cox_data = fitted(lung, "breslow")
    with pytest.raises(riskset.InputError, match="transform must be one of"):
        cox_zph(cox, cox_data, "sqrt")
    penalized = riskset.fit(cox_data, "cox", riskset.Normal(variance=1.0))
    with pytest.raises(riskset.InputError, match="score test at the maximum likelihood estimate"):
        cox_zph(penalized, cox_data)
    with pytest.raises(riskset.InputError, match="need a cox fit"):
        cox_zph(fit, data)
    tv = riskset.fit(cox_data, "cox", time_varying={"age": [300]})
    with pytest.raises(riskset.InputError, match="time-varying coefficients are not implemented"):
        cox_zph(tv, cox_data)
