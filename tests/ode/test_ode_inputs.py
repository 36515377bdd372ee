"""Input handling of solve_batch: names, shapes, tolerances, times."""

import numpy as np
import pandas as pd
import pytest

from riskset.ode import SEIR, solve_batch

from .helpers import seir_sample

T = np.arange(0.0, 30.0)


def test_dataframe_with_named_columns_and_states():
    P, y0 = seir_sample(3, seed=5)
    df = pd.DataFrame({"gamma": P[:, 2], "beta": P[:, 0], "sigma": P[:, 1],
                       "S": y0[0], "E": y0[1], "I": y0[2], "R": y0[3],
                       "set": [11, 12, 13]})
    res = solve_batch("seir", df, None, T, progress=False)
    ref = solve_batch(SEIR, P, y0, T, progress=False)
    np.testing.assert_array_equal(res.states, ref.states)
    assert res.set_ids.tolist() == [11, 12, 13]
    fr = res.to_frame()
    assert list(fr.columns) == ["set", "t", "S", "E", "I", "R"]
    assert len(fr) == 3 * len(T)
    sub = fr[fr["set"] == 12]
    np.testing.assert_array_equal(sub["t"].to_numpy(), T)
    np.testing.assert_array_equal(sub["I"].to_numpy(), ref.states[1, :, 2])
    # y0 by name, DataFrame index as set label
    df2 = pd.DataFrame(P, columns=["beta", "sigma", "gamma"],
                       index=["a", "b", "c"])
    res2 = solve_batch("seir", df2, dict(zip("SEIR", y0)), T, progress=False)
    np.testing.assert_array_equal(res2.states, ref.states)
    assert res2.set_ids.tolist() == ["a", "b", "c"]


def test_wrong_parameter_names_and_counts():
    P, y0 = seir_sample(2)
    with pytest.raises(ValueError, match=r"missing parameter.*gamma"):
        solve_batch("seir", pd.DataFrame({"beta": P[:, 0],
                                          "sigma": P[:, 1]}), y0, T)
    with pytest.raises(ValueError, match=r"unknown column.*'delta'"):
        solve_batch("seir", pd.DataFrame({"beta": P[:, 0], "sigma": P[:, 1],
                                          "gamma": P[:, 2],
                                          "delta": 1.0}), y0, T)
    with pytest.raises(ValueError, match=r"3 parameter.*beta.*sigma.*gamma"):
        solve_batch("seir", P[:, :2], y0, T)
    with pytest.raises(ValueError, match=r"4 state.*'S', 'E', 'I', 'R'"):
        solve_batch("seir", P, y0[:3], T)
    with pytest.raises(ValueError, match=r"missing \['R'\]"):
        solve_batch("seir", P, {"S": 1.0, "E": 0.0, "I": 1.0}, T)
    with pytest.raises(ValueError, match="initial states are required"):
        solve_batch("seir", P, None, T)
    with pytest.raises(ValueError, match="unknown model"):
        solve_batch("sir", P, y0, T)


@pytest.mark.parametrize("t_eval", [[0.0, 2.0, 1.0], [0.0, 1.0, 1.0],
                                    [3.0, 2.0], [0.0, np.nan]])
def test_times_must_increase(t_eval):
    P, y0 = seir_sample(1)
    with pytest.raises(ValueError, match="increasing|finite"):
        solve_batch("seir", P, y0, t_eval)


@pytest.mark.parametrize("rtol,atol", [(0.0, 1e-6), (-1e-6, 1e-6),
                                       (1e-6, 0.0), (1e-6, -1.0),
                                       (1e-6, [1e-6, 1e-6, 0.0, 1e-6]),
                                       (np.nan, 1e-6)])
def test_tolerances_must_be_positive(rtol, atol):
    P, y0 = seir_sample(1)
    with pytest.raises(ValueError, match="tol"):
        solve_batch("seir", P, y0, T, rtol=rtol, atol=atol)


def test_gpu_backend_without_gpu_is_clear_error():
    from riskset.ode import gpu

    if gpu.simulator_enabled():
        pytest.skip("CUDA simulator enabled in this process")
    from numba import cuda

    if cuda.is_available():
        pytest.skip("a real GPU is present")
    P, y0 = seir_sample(2)
    with pytest.raises(RuntimeError, match="no CUDA GPU.*NUMBA_ENABLE_CUDASIM"):
        solve_batch("seir", P, y0, T, backend="gpu")
    with pytest.raises(ValueError, match="backend"):
        solve_batch("seir", P, y0, T, backend="tpu")


def test_result_helpers_and_fan_chart(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    P, y0 = seir_sample(50, seed=9)
    P[0, 0] = np.nan
    res = solve_batch("seir", P, y0, np.arange(0.0, 120.0), progress=False)
    assert res.success.sum() == 49
    st = res.stats_frame()
    assert st.loc[0, "status"] == "nonfinite" and st["nfev"].iloc[1] > 0
    from riskset.ode.plots import fan_quantiles
    q = fan_quantiles(res.state("I")[res.success], (0.05, 0.5, 0.95))
    assert np.all(q[0] <= q[1]) and np.all(q[1] <= q[2])
    np.testing.assert_allclose(
        q[1], np.median(res.state("I")[res.success], axis=0))
    path = tmp_path / "fan.png"
    ax = res.fan_chart("I", path=path)
    assert path.stat().st_size > 1000
    assert len(ax.collections) == 2  # two bands (5-95, 25-75)
    with pytest.raises(KeyError, match="unknown state"):
        res.state("X")
    assert "success" in repr(res)
