"""A measurement is bounded before it starts: a duration over a day, more iterations than the
samples' memory allows, or a simulated duration that would take that many iterations, is a clear
error naming the keyword and the limit, never a hang or an exhausted memory."""

import pytest

from pytest_jetson.clock import SimClock
from pytest_jetson.devices.device import simulated
from pytest_jetson.engines.simulated import SimulatedEngine
from pytest_jetson.errors import ConfigError
from pytest_jetson.run.harness import measure
from pytest_jetson.units import LONGEST_MEASUREMENT_S, MAX_ITERATIONS, parse_duration


@pytest.fixture
def engine():
    return SimulatedEngine("resnet18", simulated("orin-nano"), precision="fp16", clock=SimClock())


@pytest.mark.parametrize("kwargs, message", [
    ({"duration": 1e308}, r"duration: 1e\+308 s is longer than a day \(24 h\), the longest measurement"),
    ({"duration": "1e6s"}, r"duration: '1e6s' is longer than a day \(24 h\)"),
    ({"duration": "2s", "warmup": "1e7s"}, r"warmup: '1e7s' is longer than a day"),
    ({"max_duration": "25h"}, r"max_duration: '25h' is longer than a day"),
    ({"iterations": 10 ** 12}, r"iterations=1000000000000 is more than 10,000,000"),
])
def test_an_unbounded_request_is_refused_before_it_runs(engine, kwargs, message):
    with pytest.raises(ConfigError, match=message):
        measure(engine, **kwargs)


def test_a_simulated_duration_that_would_take_too_many_iterations_is_refused(engine):
    per_call = engine.prediction.latency
    hours = 23.0
    assert hours * 3600 / per_call > MAX_ITERATIONS  # within a day, but too many iterations
    with pytest.raises(ConfigError, match=r"duration: 23h on the simulated .* would take about .* "
                                          r"iterations, more than 10,000,000 .*; measure for at most"):
        measure(engine, duration="23h")
    with pytest.raises(ConfigError, match=r"warmup: 23h on the simulated"):
        measure(engine, duration="1s", warmup="23h")


def test_a_day_and_ten_million_iterations_are_the_limits():
    assert LONGEST_MEASUREMENT_S == 24 * 3600 and MAX_ITERATIONS == 10_000_000
    assert parse_duration("24h", "duration", at_most=LONGEST_MEASUREMENT_S) == 86400.0
    with pytest.raises(ConfigError, match="longer than a day"):
        parse_duration("86401s", "duration", at_most=LONGEST_MEASUREMENT_S)


def test_an_ordinary_measurement_still_runs(engine):
    m = measure(engine, duration="2s", warmup="0.2s")
    assert m.duration == pytest.approx(2.0, rel=0.01)


@pytest.mark.parametrize("kwargs, message", [
    ({"duration": "1e6s"}, r"process_pool duration: '1e6s' is longer than a day"),
    ({"duration": "1s", "warmup": "1e7s"}, r"process_pool warmup: '1e7s' is longer than a day"),
])
def test_a_pool_is_bounded_the_same(kwargs, message):
    from pytest_jetson.run.pool import run_pool

    with pytest.raises(ConfigError, match=message):
        run_pool("resnet18", processes=2, device=simulated("orin-nano"), backend="simulated", **kwargs)
