"""GPU activity in the telemetry: the simulated board reads it from the announced load, the
summary averages it, the series keeps it, and a source that never samples it leaves no column."""

import types

import numpy as np
import pytest

from pytest_jetson.clock import SimClock
from pytest_jetson.run.host_time import HostLoad
from pytest_jetson.run.measurement import Measurement
from pytest_jetson.telemetry.base import Reading
from pytest_jetson.telemetry.sampler import Sampler
from pytest_jetson.telemetry.series import Series
from pytest_jetson.telemetry.sim_sensors import SimulatedSource
from pytest_jetson.telemetry.summary import summarize

ACTIVITY = dict(sm_active=0.8, tensor_active=0.25, issue_active=0.3, dram_util=0.4)


def workload(**kw):
    base = dict(power=12.0, idle_power=4.0, gpu_util=1.0, gpu_clock_mhz=612.0, max_gpu_clock_mhz=625.0,
                memory=2.5e9, **ACTIVITY)
    base.update(kw)
    return types.SimpleNamespace(**base)


def sample(clock, wl, busy=10.0, idle=10.0):
    with Sampler(SimulatedSource(clock, seed=3), interval="100ms", clock=clock) as t:
        t.set_load(wl)
        clock.advance(busy)
        t.end_load()
        clock.advance(idle)
    return t


def test_the_simulated_board_reads_the_loads_activity_and_zero_when_idle():
    clock = SimClock()
    t = sample(clock, workload())
    ser, s = t.series, t.summary
    busy = ser.elapsed < 9.95
    assert np.mean(ser.sm_active[busy]) == pytest.approx(80.0, rel=0.01)
    assert np.mean(ser.tensor_active[busy]) == pytest.approx(25.0, rel=0.01)
    assert np.all(ser.tensor_active[ser.elapsed > 10.05] == 0.0)
    # half the window busy: the means halve, as Nsight's averages over the window would
    assert s.sm_active_mean == pytest.approx(40.0, rel=0.02)
    assert s.dram_util_mean == pytest.approx(20.0, rel=0.02)
    m = Measurement("m", 1, [0.01], 20.0, 100, telemetry=s, telemetry_series=ser)
    assert m.metric("tensor_active") == m.tensor_active == pytest.approx(12.5, rel=0.02)


def test_host_code_reads_an_idle_gpu():
    clock = SimClock()
    host = HostLoad(workload(), cores=6, core_w=1.0, idle_w=3.5)
    t = sample(clock, host, busy=5.0, idle=0.0)
    assert t.summary.sm_active_mean == 0.0 and t.summary.issue_active_mean == 0.0


@pytest.mark.parametrize("without", [tuple(ACTIVITY), tuple(ACTIVITY) + ("gpu_util",)])
def test_a_busy_load_that_does_not_say_leaves_activity_unknown(without):
    clock = SimClock()
    wl = workload()
    for name in without:
        delattr(wl, name)
    t = sample(clock, wl)
    assert t.summary.sm_active_mean is None  # never a made-up 0 for a GPU that was busy


def test_a_source_without_gpu_metrics_leaves_no_activity_column_in_files():
    readings = [Reading(t=float(i), gpu_util=50.0) for i in range(3)]
    series = Series.from_readings(readings)
    d = series.to_dict()
    assert "sm_active" not in d and "gpu_util" in d
    back = Series.from_dict(d)
    assert np.all(np.isnan(back.sm_active)) and len(back) == 3
    assert summarize(series, "tegrastats").sm_active_mean is None


def test_a_series_with_activity_round_trips():
    readings = [Reading(t=float(i), gpu_util=50.0, sm_active=40.0 + i) for i in range(3)]
    back = Series.from_dict(Series.from_readings(readings).to_dict())
    assert list(back.sm_active) == [40.0, 41.0, 42.0]
