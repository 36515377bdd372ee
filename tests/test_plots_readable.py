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
from riskset.plots import plot_cif, plot_cv, plot_forest, plot_km, plot_path  # noqa: E402
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


# -- any save keeps every label (issue #41, item 8) ----------------------------------------

def mgus2():
    from conftest import reference_dir

    return pd.read_csv(reference_dir() / "fine_gray_mgus2" / "data.csv")


def every_plot():
    """One figure of each plot function, made without an ``ax`` (the plots lay them out)."""
    d = mgus2()
    sex = np.where(d["sex01"] == 1, "male", "female")
    table = forest_table(40)
    cv = CVResult(scores=pd.DataFrame({"repeat": [0, 0], "fold": [0, 1]}),
                  summary=pd.DataFrame({"variance": [0.01, 0.1, 1.0], "mean": [-5.0, -4.0, -4.5],
                                        "se": [0.1, 0.1, 0.1]}), selected_variance=0.1, prior=None, fit=None)
    path = pd.DataFrame(np.cumsum(np.random.default_rng(2).normal(size=(6, 30)), axis=0),
                        index=pd.Index(np.logspace(-3, 1, 6), name="variance"),
                        columns=[f"a rather long covariate name {j}" for j in range(30)])
    import riskset

    cox = riskset.from_frame(d.assign(event=(d["status"] > 0).astype(int)), time="time", status="event",
                             covariates=["age", "sex01", "hgb"])
    zph = riskset.cox_zph(riskset.fit(cox, "cox"), cox)
    return {"zph": zph.plot(),
            "km": plot_km(d["time"], (d["status"] > 0).astype(int), group=sex, title="mgus2"),
            "cif": plot_cif(d["time"], d["status"], group=sex, show_competing=True),
            "forest": plot_forest(table, exponentiate=True, top=20),
            "cv": plot_cv(cv), "path": plot_path(path)}


def texts_outside(fig, tolerance_px=1.0):
    """Texts whose extent in a plain ``savefig`` leaves the canvas: every visible non-empty
    text but the tick labels (matplotlib keeps labels of ticks outside the view, undrawn),
    and the figure's drawn extent as a whole (tick labels included) as 'tight bbox'."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)  # no bbox_inches: the figure as laid out
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    tick_labels = {id(t) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
                   for t in axis.get_ticklabels(minor=False) + axis.get_ticklabels(minor=True)}
    tight = fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans)
    outside = [] if (tight.x0 >= box.x0 - tolerance_px and tight.y0 >= box.y0 - tolerance_px
                     and tight.x1 <= box.x1 + tolerance_px and tight.y1 <= box.y1 + tolerance_px) else ["tight bbox"]
    for text in fig.findobj(Text):
        if id(text) in tick_labels or not text.get_visible() or not text.get_text().strip():
            continue
        ext = text.get_window_extent(renderer)
        if (ext.x0 < box.x0 - tolerance_px or ext.y0 < box.y0 - tolerance_px or ext.x1 > box.x1 + tolerance_px
                or ext.y1 > box.y1 + tolerance_px):
            outside.append(text.get_text())
    return outside


@pytest.mark.parametrize("name", ["km", "cif", "forest", "cv", "path", "zph"])
def test_a_plain_savefig_keeps_every_label_and_value_column(name):
    fig = every_plot()[name]
    assert texts_outside(fig) == []
    assert len([t for t in fig.findobj(Text) if t.get_text().strip()]) > 5


def test_the_zph_plot_has_a_panel_per_coefficient_with_residuals_smooth_and_estimate():
    fig = every_plot()["zph"]
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title().split(":")[0] for ax in panels] == ["age", "sex01", "hgb"]
    for ax in panels:
        residuals, smooth = ax.lines[0], ax.lines[1]
        assert residuals.get_linestyle() == "None" and len(residuals.get_xdata()) > 100
        assert 0 < len(smooth.get_xdata()) < len(residuals.get_xdata())
        assert "PH test p = " in ax.get_title()


@pytest.mark.parametrize("plot", ["km", "cif"])
def test_the_risk_table_uses_the_figures_tick_label_font(plot):
    d = mgus2()
    with plt.rc_context({"xtick.labelsize": 13, "font.family": "DejaVu Serif"}):
        fig = (plot_km(d["time"], (d["status"] > 0).astype(int)) if plot == "km"
               else plot_cif(d["time"], d["status"]))
        tick = fig.axes[0].get_xticklabels()[0]
        numbers = [t for t in fig.axes[1].texts if t.get_text().replace(",", "").isdigit()]
    assert numbers and {t.get_fontsize() for t in numbers} == {tick.get_fontsize()} == {13.0}
    assert {t.get_fontfamily()[0] for t in numbers} == {tick.get_fontfamily()[0]} == {"DejaVu Serif"}


def test_cif_plot_has_bands_inside_0_1_and_the_numbers_at_risk():
    from riskset.competing_risks import aalen_johansen

    d = mgus2()
    fig = plot_cif(d["time"], d["status"], group=d["sex01"])
    ax, table_ax = fig.axes[:2]
    bands = [c for c in ax.collections if c.get_paths()]
    assert len(bands) == 2  # one band per group
    for band in bands:
        y = np.concatenate([p.vertices[:, 1] for p in band.get_paths()])
        assert y.min() >= 0.0 and y.max() <= 1.0
    aj = aalen_johansen(d["time"], d["status"], group=d["sex01"])
    ticks = ax.get_xticks()
    male = aj[aj["group"] == 1]
    first = np.searchsorted(male["time"].to_numpy(), ticks, side="left")
    expected = [f"{v:,.0f}" for v in np.r_[male["n_risk"].to_numpy(), 0.0][first]]
    row = sorted((t for t in table_ax.texts if t.get_position()[1] == 1), key=lambda t: t.get_position()[0])
    assert [t.get_text() for t in row] == expected


def test_cif_variance_is_cmprsk_cuminc():
    """R 4.2.2, cmprsk 2.2-11, on tests/reference/fine_gray_mgus2/data.csv with times in years
    (heavy ties):  d$t6 <- ceiling(d$time / 12); ci <- cuminc(d$t6, d$status, d$sex01,
    cencode = 0); timepoints(ci, c(1, 3, 5, 10, 15, 20, 25, 30)). Tolerance 1e-12 relative."""
    from riskset.competing_risks import aalen_johansen

    d = mgus2()
    years = np.ceil(d["time"].to_numpy() / 12)
    times = [1, 3, 5, 10, 15, 20, 25, 30]
    expected = {  # (sex01, cause): (estimates, variances)
        (0, 1): ([0.0128205128205128201, 0.025687225687225687, 0.040162277662277666, 0.072414133404857625,
                  0.093684227740270784, 0.102460412567917228, 0.11247152906428311, 0.15820981755705471],
                 [2.0314843132474942e-05, 4.0190954606483176e-05, 6.1873292703374798e-05, 1.1369356403782460e-04,
                  0.00015707250793092192, 0.00019275662003804465, 0.00028767019005269988, 0.00131875308504916973]),
        (1, 1): ([0.0066934404283801874, 0.020080321285140562, 0.029526828434389890, 0.055254575812012700,
                  0.079506284459017265, 0.094480029571650692, 0.10250308540087773, 0.10250308540087773],
                 [8.9123837581929145e-06, 2.6333327981123401e-05, 3.8413145681333892e-05, 7.4224048607004963e-05,
                  0.00011777980208061686, 0.00017801170005188300, 0.00023647495085709312, 0.00023647495085709312]),
        (0, 2): ([0.0945512820512820484, 0.189443289443289448, 0.265035227535227513, 0.478412958270643951,
                  0.630056585575500594, 0.690413039231409509, 0.71733949049749701, 0.75563201109609646],
                 [1.3741787658706414e-04, 2.4652935974593540e-04, 3.1261601140306435e-04, 4.2973039272270583e-04,
                  0.00047522762898867185, 0.00055971225304625102, 0.00068355719910706200, 0.00112512478980618391]),
        (1, 2): ([0.1472556894243641223, 0.253012048192771066, 0.370253272351313667, 0.572116193008144647,
                  0.687494028927238543, 0.737035798014581411, 0.78809160783693533, 0.78809160783693533],
                 [1.6832634230096427e-04, 2.5304184226999135e-04, 3.1266207223767538e-04, 3.5511268408220439e-04,
                  0.00035682399445232868, 0.00040113935661173668, 0.00058955691603004845, 0.00058955691603004845]),
    }
    for (sex, cause), (est, var) in expected.items():
        aj = aalen_johansen(years, d["status"], group=d["sex01"], event_of_interest=cause)
        part = aj[aj["group"] == sex]
        at = np.searchsorted(part["time"].to_numpy(), times, side="right") - 1
        np.testing.assert_allclose(part["cif"].to_numpy()[at], est, rtol=1e-12)
        np.testing.assert_allclose(part["variance"].to_numpy()[at], var, rtol=1e-12)
