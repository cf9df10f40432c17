"""perf.max_rate: the search for the highest arrival rate that meets a bound, on its own and on
a virtual-clock engine whose answer follows from its latencies."""

from itertools import cycle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_jetson.clock import SimClock
from pytest_jetson.engines.base import Engine
from pytest_jetson.errors import ConfigError, EngineError
from pytest_jetson.gate.bounds import parse
from pytest_jetson.run.arrival import RateError
from pytest_jetson.run.max_rate import MaxRateError, search
from pytest_jetson.run.recorder import Recorder


class ScriptedEngine(Engine):
    backend = "scripted"

    def __init__(self, latencies, name="scripted"):
        super().__init__()
        self.name, self.model, self.precision = name, "scripted-model", "fp16"
        self.clock = SimClock()
        self._lat = cycle(latencies)

    def infer(self, batch=None):
        self.clock.advance(next(self._lat))
        return {}


# -- the search on its own ----------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(answer=st.floats(0.02, 0.999), tolerance=st.sampled_from([0.01, 0.03, 0.05]))
def test_the_search_brackets_a_threshold_within_its_tolerance(answer, tolerance):
    peak = 100.0
    found = search(lambda r: {"rate": r}, lambda m: m["rate"] <= answer * peak, peak,
                   tolerance=tolerance, max_probes=20)
    assert found.rate <= answer * peak
    assert found.rate >= answer * peak * (1 - tolerance) - 1e-9
    assert found.measurement == {"rate": found.rate}
    assert found.probes[0].rate == peak and not found.probes[0].met
    assert [p.met for p in found.probes] == [p.rate <= answer * peak for p in found.probes]


def test_a_peak_that_meets_is_the_answer_in_one_probe():
    found = search(lambda r: r, lambda m: True, 40.0)
    assert found.rate == 40.0 and len(found.probes) == 1


def test_the_search_spends_few_probes():
    found = search(lambda r: r, lambda m: m <= 61.0, 100.0)
    assert 5 <= len(found.probes) <= 11
    assert 61.0 * 0.97 <= found.rate <= 61.0


def test_a_rate_that_could_not_be_served_fails_its_probe():
    def measure_at(rate):
        if rate > 50:
            raise RateError(f"cannot keep up with {rate}/s")
        return rate

    found = search(measure_at, lambda m: True, 100.0)
    assert found.probes[0].figure.startswith("not served")
    assert found.probes[0].why == "cannot keep up with 100.0/s"
    assert 50 * 0.97 <= found.rate <= 50


def test_a_bound_never_met_names_itself_and_the_best_figure():
    with pytest.raises(MaxRateError) as err:
        search(lambda r: r, lambda m: False, 100.0, figure=lambda m: f"latency_p99 {10 + m:.0f} ms",
               what="latency_p99='<= 5 ms'")
    text = str(err.value)
    assert "no arrival rate met latency_p99='<= 5 ms'" in text
    assert "latency_p99 12 ms (the best seen)" in text and "from 100/s" in text
    assert isinstance(err.value, EngineError)


@pytest.mark.parametrize("peak", [0, 0.0, float("nan"), None])
def test_no_rate_to_search_under(peak):
    with pytest.raises(MaxRateError, match="no rate to search under"):
        search(lambda r: r, lambda m: True, peak)


# -- perf.max_rate on an engine -----------------------------------------------------------------------
def recorder():
    r = Recorder()
    r.parse_bound = parse
    return r


def test_the_highest_rate_that_meets_a_deadline_bound():
    # calls of 4 and 16 ms in turn (100 calls/s back to back): at a period T >= 16 ms no call
    # misses its deadline (one period); at a shorter one every 16 ms call does (50 %), so the
    # highest rate with deadline_miss <= 1 % is 1 / 16 ms = 62.5/s
    perf = recorder()
    m = perf.max_rate(ScriptedEngine([0.004, 0.016]), duration="4s", deadline_miss="<= 1 %")
    assert 62.5 * 0.96 <= m.max_rate <= 62.5
    assert m.metric("max_rate") == m.max_rate == m.extra["max_rate"]
    assert m.extra["rate"] == pytest.approx(m.max_rate) and m.deadline_miss == 0.0
    assert m.extra["max_rate_peak"] == pytest.approx(100.0)
    probes = m.extra["max_rate_probes"]
    assert probes[0]["rate"] == pytest.approx(100.0) and probes[0]["met"] is False
    assert probes[0]["figure"].startswith("deadline_miss 5")  # 50 % or a little more at saturation
    assert any(p["met"] for p in probes) and len(probes) <= 11
    assert perf.measurements == [m]  # the probes are not recorded
    assert m.duration == pytest.approx(4.0, rel=0.02)


def test_a_latency_bound_and_a_predicate():
    perf = recorder()
    m = perf.max_rate(ScriptedEngine([0.004, 0.016]), duration="2s", latency_p99="<= 16.5 ms",
                      deadline_miss=lambda pct: pct <= 1.0)
    assert 62.5 * 0.96 <= m.max_rate <= 62.5


def test_a_bound_never_met_is_a_clear_error():
    with pytest.raises(EngineError) as err:
        recorder().max_rate(ScriptedEngine([0.010]), latency_p99="<= 5 ms")
    text = str(err.value)
    assert "no arrival rate met latency_p99='<= 5 ms'" in text
    assert "the lowest rate tried: latency_p99 10" in text


def test_a_deadline_no_call_meets_says_so_at_the_lowest_rate():
    with pytest.raises(EngineError) as err:
        recorder().max_rate(ScriptedEngine([0.010]), latency_p99="<= 33 ms", deadline="5ms")
    text = str(err.value)
    assert "no arrival rate met latency_p99='<= 33 ms'" in text and "not served" in text
    assert "At that rate: scripted: every call ran longer than its deadline=5 ms" in text


@pytest.mark.parametrize("kw, message", [
    ({}, "needs a bound to search against"),
    ({"latency_p99": "10%"}, "is a tolerance against a baseline"),
    ({"latency_p99": "<= 33 ms", "rate": "30/s"}, "is what the search finds"),
])
def test_max_rate_refuses_what_it_cannot_search(kw, message):
    with pytest.raises(ConfigError, match=message):
        recorder().max_rate(ScriptedEngine([0.01]), **kw)


def test_a_string_bound_needs_the_plugins_parser():
    with pytest.raises(ConfigError, match="pass a predicate"):
        Recorder().max_rate(ScriptedEngine([0.01]), latency_p99="<= 33 ms")
