"""``Engine.timed_run``, the harness's timed loop: whatever its inner loops look like, what it
appends and returns is what one plain loop over the limits would give, and a clock that never
moves is still reported."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_jetson.engines.base import STALL_ITERATIONS, Engine
from pytest_jetson.errors import EngineError


class StepClock:
    kind = "virtual"

    def __init__(self):
        self.t = 0.0

    def now(self):
        return self.t


class SteppingEngine(Engine):
    """Each call moves its clock by the next step of a script (repeated); ``fail_at``: the call
    (counted from 1) that raises instead."""

    backend = "stepping"

    def __init__(self, steps, fail_at=None, device_times=False):
        super().__init__()
        self.name, self.clock = "stepping", StepClock()
        self.steps, self.calls, self.fail_at, self.device_times = steps, 0, fail_at, device_times

    def _infer(self, batch):
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("injected")
        self.clock.t += self.steps[self.calls % len(self.steps)]
        if self.device_times:
            self.last_device_time = self.calls * 1e-3


def plain_loop(engine, t_start, until_t, until_n, with_device):
    """The loop's specification: one iteration at a time, every limit tested every time."""
    lat, ends, dev = [], [], ([] if with_device else None)
    limit_t = float("inf") if until_t is None else until_t - 1e-9
    prev, n = t_start, 0
    error = None
    try:
        while (until_n is None or n < until_n) and prev < limit_t:
            engine.infer(1)
            t = engine.clock.now()
            lat.append(t - prev)
            ends.append(t)
            if with_device:
                dev.append(engine.last_device_time)
            prev = t
            n += 1
    except RuntimeError as exc:
        error = exc
    return prev, lat, ends, dev, error


def timed(engine, t_start, until_t, until_n, with_device, lat0=(), end0=()):
    lat, ends, dev = list(lat0), list(end0), ([] if with_device else None)
    error = prev = None
    try:
        prev = engine.timed_run(1, t_start, until_t, until_n, lat, ends, dev)
    except RuntimeError as exc:
        error = exc
    return prev, lat[len(lat0):], ends[len(end0):], dev, error, lat[:len(lat0)], ends[:len(end0)]


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.sampled_from([1e-4, 1e-3, 0.01, 0.0123]), min_size=1, max_size=4),
       until_n=st.one_of(st.none(), st.integers(0, 2 * STALL_ITERATIONS + 3),
                         st.sampled_from([STALL_ITERATIONS - 1, STALL_ITERATIONS, STALL_ITERATIONS + 1])),
       until_t=st.one_of(st.none(), st.floats(0.0, 30.0)),
       fail_at=st.one_of(st.none(), st.integers(1, 2 * STALL_ITERATIONS + 5)),
       with_device=st.booleans(), t_start=st.sampled_from([0.0, 0.5]))
def test_the_timed_loop_appends_and_returns_what_a_plain_loop_would(steps, until_n, until_t, fail_at,
                                                                     with_device, t_start):
    if until_n is None and until_t is None:
        until_t = 1.0
    spec, under_test = (SteppingEngine(steps, fail_at, with_device) for _ in range(2))
    spec.clock.t = under_test.clock.t = t_start
    until = None if until_t is None else t_start + until_t
    prev, lat, ends, dev, error = plain_loop(spec, t_start, until, until_n, with_device)
    # lists that already hold a stretch (the harness extends a run): kept, and added to
    got = timed(under_test, t_start, until, until_n, with_device, lat0=[9.0, 8.0], end0=[7.0])
    assert got[1] == lat and got[2] == ends and got[3] == dev
    assert (got[4] is None) == (error is None)
    if error is None:
        assert got[0] == prev
    assert got[5] == [9.0, 8.0] and got[6] == [7.0]
    assert under_test.calls == spec.calls


@pytest.mark.parametrize("until_n", [None, STALL_ITERATIONS, 3 * STALL_ITERATIONS])
@pytest.mark.parametrize("with_device", [False, True])
def test_a_clock_that_does_not_move_is_reported_by_count_and_by_time(until_n, with_device):
    engine = SteppingEngine([0.0], device_times=with_device)
    with pytest.raises(EngineError, match="clock did not move in 10000 iterations"):
        engine.timed_run(1, 0.0, None if until_n else 1.0, until_n, [], [], [] if with_device else None)
    assert engine.calls == STALL_ITERATIONS


def test_fewer_iterations_than_the_stall_check_need_no_moving_clock():
    engine = SteppingEngine([0.0])
    lat, ends = [], []
    assert engine.timed_run(1, 0.0, None, STALL_ITERATIONS - 1, lat, ends, None) == 0.0
    assert len(lat) == len(ends) == STALL_ITERATIONS - 1
