"""Plots stay readable at realistic sizes: bounded marks and pixels, names as labels."""
import io
import types

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from riskset.ode.plots import fan_chart  # noqa: E402
from riskset.plots import plot_cv, plot_forest, plot_km, plot_path  # noqa: E402
from riskset.selection.bootstrap import BootstrapResult  # noqa: E402
from riskset.selection.cv import CVResult  # noqa: E402
from riskset.simulate import simulate_cohort  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def png_size(fig, dpi=100):
    """(width, height) in pixels of ``fig`` saved as a PNG the way the plots save themselves."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    buf.seek(0)
    height, width = plt.imread(buf).shape[:2]
    return width, height


def censor_mark_count(ax):
    return sum(len(line.get_xdata()) for line in ax.lines if line.get_marker() == "|")


def forest_table(p, seed=0, zero_fraction=0.6):
    rng = np.random.default_rng(seed)
    est = np.where(rng.random(p) < zero_fraction, 0.0, rng.normal(0, 1, p))
    return pd.DataFrame({"name": [f"drug_{j}" for j in range(p)], "estimate": est,
                         "lower": est - 0.3, "upper": est + 0.3})


def ytick_texts(ax):
    return [t.get_text() for t in ax.get_yticklabels()]


@pytest.fixture(scope="module")
def cohort_100k():
    c = simulate_cohort(n=100_000, p=2, n_confounders=1, seed=1)
    return c.time, c.status, np.where(c.X[:, 0].toarray().ravel() > 0, "treated", "comparator")


def test_km_censor_marks_are_thinned_at_100k_rows(cohort_100k):
    time, status, arm = cohort_100k
    fig = plot_km(time, status, arm)
    ax = fig.axes[0]
    assert censor_mark_count(ax) <= 2 * 40  # at most 40 per curve, not one per censored patient
    assert "censored (marks thinned)" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert max(len(line.get_xdata()) for line in ax.lines) <= 2 * 2001  # curves reduced below pixel size
    assert png_size(fig)[1] < 600


def test_km_censor_marks_all_and_none():
    rng = np.random.default_rng(0)
    time, status = rng.exponential(1, 2000), (rng.random(2000) < 0.5).astype(int)
    assert censor_mark_count(plot_km(time, status, censor_marks="all").axes[0]) == (status == 0).sum()
    assert censor_mark_count(plot_km(time, status, censor_marks="none").axes[0]) == 0
    with pytest.raises(ValueError, match="censor_marks"):
        plot_km(time, status, censor_marks="some")


def test_km_risk_table_is_aligned_text_with_thousands_separators():
    time = np.r_[np.full(1500, 1.0), np.full(2500, 3.0)]
    group = np.r_[np.full(1500, "a"), np.full(2500, "b")]
    fig = plot_km(time, np.zeros(4000, int), group, risk_times=[0, 2])
    table = fig.axes[1]
    cells = {(t.get_position(), t.get_text()) for t in table.texts}
    # row 0 is group a (1,500 at t=0, none left at t=2), row 1 group b
    assert cells == {((0, 0), "1,500"), ((2, 0), "0"), ((0, 1), "2,500"), ((2, 1), "2,500")}
    assert ytick_texts(table) == ["a", "b"]
    assert list(fig.axes[0].get_xticks()) == [0, 2]


def test_forest_of_500_coefficients_shows_top_30_names_at_a_readable_height():
    table = forest_table(500)
    fig = plot_forest(table)
    labels = ytick_texts(fig.axes[0])
    expected = table[table.estimate != 0].assign(a=lambda d: d.estimate.abs()).nlargest(30, "a")
    assert sorted(labels) == sorted(expected["name"])
    assert all(name.startswith("drug_") for name in labels)
    estimates = dict(zip(table["name"], table["estimate"]))
    assert [estimates[n] for n in labels] == sorted(estimates[n] for n in labels)[::-1]  # top row largest
    assert png_size(fig)[1] < 2000
    assert "30 largest of 500" in fig.axes[0].get_title()


def test_forest_top_none_shows_every_row_with_a_capped_height():
    fig = plot_forest(forest_table(200), top=None)
    assert len(ytick_texts(fig.axes[0])) == 200
    assert png_size(fig)[1] < 1700  # 16 inches at 100 dpi plus the frame


def test_forest_small_table_keeps_all_rows_in_order_and_maps_labels():
    table = forest_table(5, zero_fraction=0.5)
    fig = plot_forest(table, labels={"drug_2": "statin use"}, exponentiate=True)
    ax = fig.axes[0]
    assert ytick_texts(ax) == ["drug_0", "drug_1", "statin use", "drug_3", "drug_4"]
    assert ax.get_xscale() == "log"
    values = [t.get_text() for t in ax.texts]
    row = table.iloc[0]
    assert f"{np.exp(row.estimate):.2f} ({np.exp(row.lower):.2f} to {np.exp(row.upper):.2f})" in values
    fig.canvas.draw()
    assert "1" in [t.get_text() for t in ax.get_xticklabels()]  # plain ratios, not 10^0


def test_bootstrap_plot_shows_top_coefficients_by_default():
    table = forest_table(500).assign(nonzero_proportion=1.0)
    result = BootstrapResult(estimates=pd.DataFrame(), table=table, fit=None, level=0.95)
    assert len(ytick_texts(result.plot().axes[0])) == 30


def test_path_names_its_top_curves_without_overlap():
    variances = np.logspace(-3, 1, 8)
    rng = np.random.default_rng(2)
    ends = np.r_[rng.normal(0, 0.01, 40), 1.0]  # 40 curves ending almost together, one apart
    table = pd.DataFrame(np.outer(1 - np.exp(-variances), ends), index=pd.Index(variances, name="variance"),
                         columns=[f"drug_{j}" for j in range(41)])
    fig = plot_path(table, top=12, labels={"drug_40": "statin use"})
    ax = fig.axes[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = sorted((Text.get_window_extent(t, renderer) for t in ax.texts), key=lambda b: b.y0)  # not the arrows
    assert len(boxes) == 12 and "statin use" in [t.get_text() for t in ax.texts]
    assert all(lower.y1 <= upper.y0 + 0.5 for lower, upper in zip(boxes, boxes[1:]))


def test_cv_plot_says_what_was_selected():
    scores = pd.DataFrame({"variance": np.repeat([0.1, 1.0], 3), "repeat": 0, "fold": [0, 1, 2] * 2,
                           "score": [-10.0, -11, -12, -9, -10, -11]})
    summary = pd.DataFrame({"variance": [0.1, 1.0], "mean": [-11.0, -10.0], "se": [0.5, 0.5]})
    fig = plot_cv(CVResult(scores, summary, 1.0, None, None))
    assert "selected variance 1" in fig.axes[0].get_title()
    assert "3 held-out folds" in fig.axes[0].get_title()


def test_fan_chart_labels_time_and_separates_thousands():
    t = np.linspace(0, 10, 11)
    states = np.outer(np.linspace(1, 2, 20), 1e5 * np.sin(t / 3) ** 2)[:, :, None]
    result = types.SimpleNamespace(t=t, success=np.ones(20, bool), model_name="toy",
                                   state=lambda name: states[:, :, 0])
    ax = fan_chart(result, "I")
    ax.figure.canvas.draw()
    assert ax.get_xlabel() == "time"
    assert any("," in label.get_text() for label in ax.get_yticklabels())
