"""The gate's statistics: tail quantiles against scipy, errors that respect autocorrelation, and
errors of telemetry metrics from their sample series."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_jetson.gate.distributions import norm_isf, t_isf, t_sf
from pytest_jetson.gate.stats import batch_means_se, metric_stats, peak_se
from pytest_jetson.run.measurement import Measurement
from pytest_jetson.telemetry.series import Series
from pytest_jetson.telemetry.summary import TelemetrySummary


def _scipy():
    return pytest.importorskip("scipy.stats")


@settings(max_examples=200, deadline=None)
@given(p=st.floats(1e-12, 0.45), df=st.one_of(st.none(), st.floats(1.0, 5000.0)))
def test_tail_quantiles_match_scipy(p, df):
    scipy_stats = _scipy()
    mine = t_isf(p, df)
    ref = scipy_stats.norm.isf(p) if df is None else scipy_stats.t.isf(p, round(df, 1))
    assert mine == pytest.approx(ref, rel=2e-3)
    assert t_sf(mine, None if df is None else round(df, 1)) == pytest.approx(p, rel=2e-2)  # df to 0.1, as t_isf


def test_normal_tail_keeps_its_digits_far_out():
    scipy_stats = _scipy()
    for p in (1e-5, 1.25e-5, 1e-9, 1e-12):
        assert norm_isf(p) == pytest.approx(scipy_stats.norm.isf(p), rel=1e-9)


def _ar1(rng, n, phi, sd=1.0):
    e = rng.standard_normal(n) * sd * math.sqrt(1 - phi * phi)
    x = np.empty(n)
    x[0] = rng.standard_normal() * sd
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return x


@pytest.mark.parametrize("phi", [0.0, 0.6, 0.9])
def test_batch_means_error_covers_the_true_spread_of_the_mean_under_autocorrelation(phi):
    rng = np.random.default_rng(1)
    means, ses = [], []
    for _ in range(300):
        x = 10 + _ar1(rng, 2000, phi)
        se, df, _ = batch_means_se(x)
        means.append(x.mean())
        ses.append(se)
    true_sd = float(np.std(means))
    # the iid formula would claim 1/sqrt(2000) = 0.022 whatever phi is; the truth grows with phi
    assert np.sqrt(np.mean(np.square(ses))) == pytest.approx(true_sd, rel=0.25)


def test_peak_error_is_zero_for_a_constant_series_and_large_for_an_isolated_outlier():
    assert peak_se(np.full(100, 5.0))[0] == 0.0
    calm = np.random.default_rng(2).normal(10, 0.1, 800)
    spiked = calm.copy()
    spiked[400] = 30.0
    assert peak_se(spiked)[0] > 10 * peak_se(calm)[0]


def _measurement_with_series(power, memory=None, interval=0.1, lat_n=500):
    t = np.arange(len(power)) * interval
    lat = [0.01] * lat_n
    duration = float(t[-1])
    series = {"clock": "virtual", "t": t.tolist(), "board_power_w": list(map(float, power)),
              "memory_bytes": list(map(float, memory if memory is not None else [2e8] * len(power))),
              "temps_c": {"gpu": [40.0 + 0.01 * i for i in range(len(power))]}}
    tele = TelemetrySummary(source="test", interval=interval, samples=len(power), duration=duration,
                            power_mean_w=float(np.mean(power)), power_peak_w=float(np.max(power)),
                            energy_j=float(np.mean(power)) * duration, items=lat_n,
                            memory_peak_bytes=float(np.max(memory if memory is not None else [2e8])),
                            temperature_max_c=40.0 + 0.01 * (len(power) - 1))
    return Measurement(name="m", batch=1, latencies=lat, duration=duration, items=lat_n, telemetry=tele,
                       telemetry_series=Series.from_dict(series))


def test_power_error_comes_from_the_series_and_respects_its_autocorrelation():
    rng = np.random.default_rng(3)
    white = 10 * (1 + 0.01 * rng.standard_normal(600))
    wander = 10 * (1 + 0.01 * _ar1(rng, 600, 0.95))
    a = metric_stats(_measurement_with_series(white), "power")
    b = metric_stats(_measurement_with_series(wander), "power")
    assert a.se_log == pytest.approx(0.01 / math.sqrt(600), rel=0.35)
    assert b.se_log > 3 * a.se_log  # the same per-sample spread, far fewer independent samples
    assert a.n == 600


def test_energy_error_adds_power_and_throughput_errors():
    rng = np.random.default_rng(4)
    m = _measurement_with_series(10 * (1 + 0.01 * rng.standard_normal(600)))
    m.latencies = list(0.01 * rng.lognormal(0, 0.05, 500))
    e, p, t = (metric_stats(m, k) for k in ("energy", "power", "throughput"))
    assert e.se_log == pytest.approx(math.hypot(p.se_log, t.se_log), rel=1e-9)


def test_a_closing_idle_reading_is_not_part_of_the_window():
    power = [11.5] * 50 + [3.5]  # a sampler closes with one idle reading after the last iteration
    m = _measurement_with_series(power)
    m.duration = 4.9
    assert metric_stats(m, "power").se_log == pytest.approx(0.0, abs=1e-12)


def test_memory_and_temperature_peaks_have_errors_from_the_series():
    m = _measurement_with_series([10.0] * 100)
    assert metric_stats(m, "memory").se_log == 0.0  # a constant allocation: no spread
    temp = metric_stats(m, "temperature")
    assert temp.se_log is not None and temp.se_log > 0  # a warming board: its peak is uncertain


def test_memory_not_from_telemetry_has_no_series_error():
    m = Measurement(name="m", batch=1, latencies=[0.01] * 100, duration=1.0, items=100, engine_memory=2 ** 26)
    st_ = metric_stats(m, "memory")
    assert st_.value == 2 ** 26 and st_.se_log is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(1e-6, 1e3), min_size=1, max_size=300), st.floats(0, 1))
def test_quantiles_of_the_sorted_samples_are_numpys(values, q):
    from pytest_jetson.gate.stats import _quantile, _sorted

    x = np.array(values)
    assert _quantile(_sorted(x), q) == pytest.approx(float(np.quantile(x, q)), rel=1e-12, abs=1e-15)


def test_statistics_of_one_array_are_not_reused_for_another_with_the_same_values_changed():
    x = np.linspace(1.0, 2.0, 400)
    first = batch_means_se(x)
    y = x * 3.0  # a new array: never the answer kept for x
    assert batch_means_se(y)[0] == pytest.approx(3 * first[0])
    assert batch_means_se(x) == first
