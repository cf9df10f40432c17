"""The sampler's thread: it waits for its next tick on the stop event, so stop() ends it at once."""

import time
import types

from pytest_jetson.telemetry import sampler as sampler_mod
from pytest_jetson.telemetry.base import Reading, Source
from pytest_jetson.telemetry.sampler import Sampler


class Ticks(Source):
    name = "ticks"

    def __init__(self):
        self.calls = 0

    def collect(self, now):
        self.calls += 1
        return [Reading(t=now)]


def test_the_thread_waits_on_the_stop_event_never_in_a_sleep(monkeypatch):
    slept = []
    fake_time = types.SimpleNamespace(**{k: getattr(time, k) for k in dir(time) if not k.startswith("_")})
    fake_time.sleep = lambda s: slept.append(s)
    monkeypatch.setattr(sampler_mod, "time", fake_time)
    waits = []
    real_wait = sampler_mod.threading.Event.wait

    def wait(self, timeout=None):
        waits.append(timeout)
        return real_wait(self, timeout)

    monkeypatch.setattr(sampler_mod.threading.Event, "wait", wait)
    source = Ticks()
    with Sampler(source, interval="10ms"):
        real_wait(sampler_mod.threading.Event(), 0.2)
    assert slept == []
    assert source.calls >= 5 and len([w for w in waits if w is not None and w <= 0.011]) >= 4


def test_stop_returns_before_the_next_tick_is_due():
    source = Ticks()
    sampler = Sampler(source, interval="30s").start()
    time.sleep(0.05)
    started = time.perf_counter()
    sampler.stop()
    # one tick at the start, one collect after stopping; not one 30 s later
    assert time.perf_counter() - started < 10 and source.calls == 2
    assert not sampler._thread.is_alive()
