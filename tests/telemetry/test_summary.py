"""TelemetrySummary: the figures bounds read, computed from known series, and its JSON."""

import json

import numpy as np
import pytest

from pytest_jetson.run.measurement import Measurement
from pytest_jetson.telemetry.base import Reading
from pytest_jetson.telemetry.series import Series
from pytest_jetson.telemetry.summary import TelemetrySummary, summarize


def series(power, util=None, clock=None, temps=None, t=None, memory=None):
    n = len(power)
    t = np.arange(n) * 0.1 if t is None else t
    rs = []
    for i in range(n):
        rs.append(Reading(
            t=float(t[i]), board_power_w=power[i], rails_w={"VDD_IN": power[i]} if power[i] is not None else {},
            gpu_util=None if util is None else util[i], gpu_clock_mhz=None if clock is None else clock[i],
            temps_c={} if temps is None else {k: v[i] for k, v in temps.items()},
            memory_bytes=None if memory is None else memory[i],
        ))
    return Series.from_readings(rs)


def test_energy_is_the_trapezoid_integral_and_mean_is_time_weighted():
    # 0..1 s at 10 W then a ramp to 20 W over 1 s: energy 10 + 15 = 25 J.
    t = np.array([0.0, 0.5, 1.0, 2.0])
    s = summarize(series([10.0, 10.0, 10.0, 20.0], t=t), source="x", interval=0.5, items=50)
    assert s.energy_j == pytest.approx(25.0)
    assert s.power_mean_w == pytest.approx(12.5)  # not the sample mean 12.5 by luck: check uneven
    assert s.power_peak_w == 20.0
    assert s.energy_per_item_j == pytest.approx(0.5)
    assert s.rails["VDD_IN"] == {"mean_w": pytest.approx(12.5), "peak_w": 20.0}
    uneven = summarize(series([10.0, 10.0, 40.0], t=np.array([0.0, 0.9, 1.0])), source="x")
    assert uneven.power_mean_w == pytest.approx((9.0 + 2.5) / 1.0)
    assert uneven.power_mean_w != pytest.approx(np.mean([10, 10, 40]))


def test_gaps_are_found_from_timestamps():
    s = summarize(series([1.0, 1.0, 1.0, 1.0], t=np.array([0.0, 0.1, 0.2, 1.0])), source="x", interval=0.1)
    assert s.gaps == [(pytest.approx(0.2), pytest.approx(1.0))]
    assert any("gap" in w for w in s.warnings)


def test_clock_throttling_counts_only_loaded_samples():
    util = [0.0, 99.0, 99.0, 99.0, 0.0]
    ok = summarize(series([5.0] * 5, util=util, clock=[306.0, 612.0, 612.0, 610.0, 306.0]), "x", max_gpu_clock_mhz=625)
    assert not ok.throttled and ok.gpu_clock_min_mhz == 610.0
    assert ok.gpu_clock_mean_mhz == pytest.approx((612 + 612 + 610) / 3)
    low = summarize(series([5.0] * 5, util=util, clock=[306.0, 612.0, 420.0, 612.0, 306.0]), "x", max_gpu_clock_mhz=625)
    assert low.throttled
    assert "GPU clock fell to 420 MHz" in low.throttle_reasons[0] and "625 MHz" in low.throttle_reasons[0]


def test_a_sensor_near_its_trip_point_is_throttling():
    temps = {"tj": [60.0, 95.5], "cpu": [50.0, 60.0]}
    s = summarize(series([5.0, 5.0], temps=temps), "x")
    assert s.throttled and "sensor tj reached 95.5 C" in s.throttle_reasons[0]
    assert s.temperature_max_c == 95.5 and s.temperatures_max_c == {"tj": 95.5, "cpu": 60.0}
    cool = summarize(series([5.0, 5.0], temps=temps), "x", trip_points_c={"tj": 105.0})
    assert not cool.throttled


def test_a_mode_change_mid_run_is_flagged():
    s = summarize(series([5.0, 5.0]), "x", power_mode=("15W", "7W"), jetson_clocks=(True, True))
    assert s.mode_changed and "15W -> 7W" in s.warnings[0]
    same = summarize(series([5.0, 5.0]), "x", power_mode=("15W", "15W"), jetson_clocks=(None, False))
    assert not same.mode_changed


def test_no_power_means_none_and_an_explanation():
    s = summarize(series([None, None]), "host", tried=[("jtop", "jetson-stats not installed: pip install 'pytest-jetson[jtop]'")])
    assert s.power_mean_w is None and s.energy_j is None and s.power_peak_w is None
    text = s.explain_missing("power")
    assert "telemetry source 'host' does not measure power" in text
    assert "tried jtop: jetson-stats not installed" in text


def test_json_round_trip_and_measurement_reads_it():
    s = summarize(series([10.0, 12.0, 11.0], util=[90.0] * 3, clock=[600.0] * 3, temps={"tj": [50.0, 51.0, 52.0]},
                         memory=[1e9, 2e9, 1.5e9]), "tegrastats", interval=0.1,
                  tried=[("jtop", "why")], power_basis="VDD_IN", gaps=[(0.05, 0.06)])
    d = json.loads(json.dumps(s.to_dict()))
    back = TelemetrySummary.from_dict(d)
    assert back == s
    m = Measurement(name="t", batch=1, latencies=[0.01] * 10, duration=0.2, items=10, telemetry=s)
    assert m.power == pytest.approx(s.power_mean_w)
    assert m.power_peak == 12.0
    assert m.energy == pytest.approx(s.energy_j / 10)
    assert m.memory == 2e9
    assert m.gpu_util == 90.0
    assert m.temperature == 52.0
    m2 = Measurement.from_dict(json.loads(json.dumps(m.to_dict())))
    assert isinstance(m2.telemetry, TelemetrySummary) and m2.power == m.power


def test_series_round_trips_through_json():
    s = series([1.0, None, 3.0], util=[1.0, 2.0, None])
    back = Series.from_dict(json.loads(json.dumps(s.to_dict())))
    assert np.allclose(back.t, s.t)
    assert np.array_equal(np.isnan(back.board_power_w), [False, True, False])
    assert back.rails_w.keys() == s.rails_w.keys()
