"""Evidence synthesis: sites share likelihood approximations, never rows; the pooled
estimate is checked against the pooled fit of every site's rows.

Four simulated sites of a Cox model with one treatment and their own baseline hazards; in
the fourth no treated patient has an event (its estimate does not exist, as happens with
rare outcomes). With site-specific baselines the fixed-effect pooled log-likelihood is
exactly the sum of the sites' profiles, so the pooled fit stratified by site is the
reference; the tolerance of each kind is its approximation error on this data.
"""
import json

import numpy as np
import pytest
from scipy import optimize, stats

import riskset
from riskset import cli
from riskset.synthesis import LikelihoodApproximation, approximate_likelihood, pool
from riskset.synthesis.approximation import hermite


def simulated_sites(seed=5):
    rng = np.random.default_rng(seed)
    sites = []
    for k, (n, base) in enumerate([(800, 0.02), (600, 0.05), (1000, 0.01), (300, 0.002)]):
        x = rng.binomial(1, 0.4, n).astype(float)
        t = rng.exponential(1 / (base * np.exp(0.4 * x)))
        c = rng.uniform(0, 60, n)
        time, status = np.minimum(t, c), (t <= c).astype(int)
        if k == 3:
            status[x == 1] = 0  # no event among the treated
        sites.append((x, time, status))
    return sites


def dataset(x, time, status, strata=None):
    return riskset.from_arrays(x[:, None], time=time, status=status, strata=strata, covariate_names=["x0"])


@pytest.fixture(scope="module")
def sites():
    return simulated_sites()


@pytest.fixture(scope="module")
def pooled_fit(sites):
    x, time, status = (np.concatenate(parts) for parts in zip(*sites))
    site = np.concatenate([np.full(s[0].size, i) for i, s in enumerate(sites)])
    fit = riskset.fit(dataset(x, time, status, site), "cox", profile=["x0"])
    return fit.coef["x0"], fit.intervals.loc[0, "lower"], fit.intervals.loc[0, "upper"]


def approximations(sites, kind):
    out = []
    for i, s in enumerate(sites):
        with np.errstate(all="ignore"):
            out.append(approximate_likelihood(dataset(*s), "cox", coef="x0", kind=kind, site=f"site {i}"))
    return out


@pytest.mark.filterwarnings("ignore::riskset.ConvergenceWarning")
@pytest.mark.parametrize("kind, tol", [("grid_with_gradients", 1e-3), ("adaptive_grid", 1e-3), ("grid", 2e-3)])
def test_fixed_effect_pooling_matches_the_pooled_fit_of_all_rows(sites, pooled_fit, kind, tol):
    sites_approx = approximations(sites, kind)
    assert [a.estimate_exists for a in sites_approx] == [True, True, True, False]
    result = pool(sites_approx).iloc[0]
    np.testing.assert_allclose([result.estimate, result.lower, result.upper], pooled_fit, atol=tol)
    assert result.n_sites == 4 and result.note == ""


@pytest.mark.filterwarnings("ignore::riskset.ConvergenceWarning")
def test_a_site_without_an_estimate_has_no_normal_approximation(sites):
    with pytest.raises(riskset.InputError, match="normal approximation of 'x0' does not exist"):
        approximate_likelihood(dataset(*sites[3]), "cox", coef="x0", kind="normal")
    normal = approximate_likelihood(dataset(*sites[0]), "cox", coef="x0", kind="normal")
    fit = riskset.fit(dataset(*sites[0]), "cox", profile=["x0"])
    assert normal.params["mu"] == pytest.approx(fit.coef["x0"])
    width = fit.intervals.loc[0, "upper"] - fit.intervals.loc[0, "lower"]
    assert normal.params["sigma"] == pytest.approx(width / (2 * 1.959963984540054))


def test_grid_with_gradients_is_the_profile_and_its_derivative_at_its_points(sites):
    approx = approximate_likelihood(dataset(*sites[0]), "cox", coef="x0")
    profile = riskset.profile_loglik(dataset(*sites[0]), "cox", coef="x0", points=approx.points)
    np.testing.assert_allclose(approx.values, profile["value"] - profile["value"].max(), atol=1e-9)
    np.testing.assert_allclose(approx.derivatives, profile["derivative"], rtol=1e-8, atol=1e-8)
    assert approx.points.size == 9 and profile.attrs["estimate"] in approx.points  # 8 points and the estimate


def test_hermite_interpolation_is_exact_for_cubics_and_linear_outside():
    points = np.array([-1.0, 0.0, 0.5, 2.0])
    cubic, slope = (lambda x: 1 - x + 0.5 * x ** 2 - 0.2 * x ** 3), (lambda x: -1 + x - 0.6 * x ** 2)
    x = np.linspace(-1, 2, 31)
    np.testing.assert_allclose(hermite(x, points, cubic(points), slope(points)), cubic(x), atol=1e-12)
    assert hermite(3.0, points, cubic(points), slope(points)) == pytest.approx(cubic(2.0) + slope(2.0))


def test_random_effects_with_normal_likelihoods_is_the_classic_ml_meta_analysis():
    """With normal site likelihoods N(m_i, s_i^2), the marginal of site i is N(m_i; mu,
    s_i^2 + tau^2): maximized directly here, independently of the quadrature."""
    m, s = np.array([0.1, 0.6, -0.2, 0.4, 0.9]), np.array([0.15, 0.2, 0.25, 0.1, 0.3])
    sites = [LikelihoodApproximation("normal", "cox", "x0", params={"mu": a, "sigma": b}) for a, b in zip(m, s)]

    def marginal(mu, tau):
        return stats.norm.logpdf(m, mu, np.sqrt(s ** 2 + tau ** 2)).sum() + np.log(s * np.sqrt(2 * np.pi)).sum()

    best = optimize.minimize(lambda p: -marginal(p[0], abs(p[1])), [0.3, 0.3], method="Nelder-Mead",
                             options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 5000})
    mu_hat, tau_hat = best.x[0], abs(best.x[1])

    def profile(mu):
        return -optimize.minimize_scalar(lambda t: -marginal(mu, abs(t)), bounds=(0, 5), method="bounded",
                                         options={"xatol": 1e-10}).fun

    drop = -best.fun - stats.chi2.ppf(0.95, 1) / 2
    lower = optimize.brentq(lambda u: profile(u) - drop, mu_hat - 2, mu_hat)
    upper = optimize.brentq(lambda u: profile(u) - drop, mu_hat, mu_hat + 2)
    result = pool(sites, method="random").iloc[0]
    assert result.tau == pytest.approx(tau_hat, rel=1e-4)
    np.testing.assert_allclose([result.estimate, result.lower, result.upper], [mu_hat, lower, upper], atol=1e-5)
    fixed = pool(sites).iloc[0]  # inverse-variance weighting
    assert fixed.estimate == pytest.approx(np.sum(m / s ** 2) / np.sum(1 / s ** 2), abs=1e-8)
    assert fixed.upper - fixed.lower < result.upper - result.lower


@pytest.mark.filterwarnings("ignore::riskset.ConvergenceWarning")
def test_approximations_travel_as_files_and_the_command_line_pools_them(sites, tmp_path, capsys):
    paths = []
    for i, approx in enumerate(approximations(sites, "grid_with_gradients")):
        paths.append(str(tmp_path / f"site{i}.json"))
        approx.save(paths[-1])
        again = LikelihoodApproximation.load(paths[-1])
        np.testing.assert_array_equal(again.loglik(np.linspace(-2, 2, 9)), approx.loglik(np.linspace(-2, 2, 9)))
    assert "time" not in open(paths[0]).read()  # no row of the data
    out = tmp_path / "pooled.csv"
    assert cli.main(["pool", *paths, "--out", str(out), "--quiet"]) == 0
    table = open(out).read()
    assert "estimate" in table and "fixed" in table
    assert cli.main(["pool", *paths, "--method", "random", "--quiet"]) == 0


def test_a_site_writes_its_approximation_from_the_command_line(sites, tmp_path, capsys):
    import pandas as pd

    x, time, status = sites[0]
    pd.DataFrame({"treated": x, "days": time, "event": status}).to_csv(tmp_path / "site.csv", index=False)
    out = tmp_path / "site.json"
    assert cli.main(["fit", "--data", str(tmp_path / "site.csv"), "--model", "cox", "--time", "days", "--status",
                     "event", "--approximate", "treated", "--out", str(out), "--quiet"]) == 0
    by_cli = LikelihoodApproximation.load(out)
    direct = approximate_likelihood(dataset(*sites[0]), "cox", coef="x0")
    np.testing.assert_allclose(by_cli.values, direct.values, atol=1e-9)
    assert by_cli.coef == "treated" and by_cli.kind == "grid_with_gradients"
    for extra, message in ((["--out", str(tmp_path / "a.csv")], "--out FILE.json"),
                           (["--out", str(out), "--profile", "treated"], "--profile cannot be used with it"),
                           (["--out", str(out), "--bounds", "1,0"], "--bounds expects LO,HI")):
        assert cli.main(["fit", "--data", str(tmp_path / "site.csv"), "--model", "cox", "--time", "days",
                         "--status", "event", "--approximate", "treated", *extra]) == 2
        assert message in capsys.readouterr().err
    assert cli.main(["fit", "--data", str(tmp_path / "site.csv"), "--model", "cox", "--time", "days",
                     "--status", "event", "--bounds", "0,1"]) == 2
    assert "COEF: give it too" in capsys.readouterr().err


def test_sites_of_other_models_or_coefficients_are_refused_naming_them(tmp_path, capsys):
    a = LikelihoodApproximation("normal", "cox", "x0", site="A", params={"mu": 0.1, "sigma": 0.2})
    b = LikelihoodApproximation("normal", "cox", "x1", site="B", params={"mu": 0.1, "sigma": 0.2})
    c = LikelihoodApproximation("normal", "logistic", "x0", site="C", params={"mu": 0.1, "sigma": 0.2})
    with pytest.raises(riskset.InputError, match="different coefficients: A has coef 'x0', B has 'x1'"):
        pool([a, b])
    with pytest.raises(riskset.InputError, match="different models: A has model 'cox', C has 'logistic'"):
        pool([a, c])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"coef": "x0"}))
    assert cli.main(["pool", str(bad)]) == 2
    assert "is not a riskset likelihood approximation" in capsys.readouterr().err
    with pytest.raises(riskset.InputError, match="method must be 'fixed' or 'random'"):
        pool([a], method="bayes")
