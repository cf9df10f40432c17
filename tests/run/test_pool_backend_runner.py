"""A backend brings its own pools: the runner on its registry row is what ``process_pool`` runs,
whatever the backend (a conftest's, through the ``pytest_jetson_backends`` hook, or a built-in)."""

import pytest

from pytest_jetson.engines.backends import BACKENDS, Backend
from pytest_jetson.errors import ConfigError
from pytest_jetson.run.pool import run_pool

# All it takes: an engine, its opener, a pool runner, and the row that names both.
CONFTEST = '''
import time

from pytest_jetson.clock import WallClock
from pytest_jetson.engines import Backend
from pytest_jetson.engines.base import Engine
from pytest_jetson.run.harness import measure
from pytest_jetson.run.pool import assemble, environment


class SleepEngine(Engine):
    backend = "sleepy"

    def __init__(self, model, batch):
        super().__init__()
        self.name = self.model = str(model)
        self.precision, self.batch, self.max_batch = "fp16", batch, batch
        self.clock = WallClock()

    def _infer(self, batch):
        time.sleep(0.001)


def open_sleepy(model, *, batch=1, **options):
    return SleepEngine(model, batch)


def sleepy_pool(run):
    """Time-slicing on one core: the workers take turns, one window each."""
    workers = [measure(open_sleepy(s.model, batch=s.batch), duration=run.window, warmup=0)
               for s in run.specs]
    return assemble(run.specs, workers, backend=run.backend.name, clock_kind="wall",
                    window=run.window, start_skew=0.0, telemetry=None,
                    environment=environment(run.device, run.backend.name, run.specs, run.context),
                    extra={"runner": "sleepy, in turns"})


def pytest_jetson_backends(config):
    return [Backend("sleepy", open=open_sleepy, pool=sleepy_pool)]
'''


def test_a_conftest_backend_runs_its_pools_with_its_own_runner(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        """
        def test_pool(process_pool, perf):
            m = perf.record(process_pool("anything", processes=3, duration="30ms", warmup="0s"))
            assert m.backend == "sleepy" and m.processes == 3
            assert m.extra["runner"] == "sleepy, in turns"
            assert [w.backend for w in m.workers] == ["sleepy"] * 3
            assert m.iterations == sum(w.iterations for w in m.workers) > 3
        """
    )
    result = pytester.runpytest("--jetson-backend", "sleepy", "--jetson-telemetry", "none", "-p",
                                "no:cacheprovider")
    result.assert_outcomes(passed=1)


@pytest.fixture
def registered(monkeypatch):
    """A backend added to the table a pool reads without a session (a session's comes from
    config.stash): a new table, the built-in one unchanged."""
    from pytest_jetson.run import pool

    def register(backend):
        monkeypatch.setattr(pool, "BACKENDS", pool.BACKENDS.extended([backend]))
        return backend

    return register


def _counted(run):
    from pytest_jetson.run.pool_sim import run_pool as simulated_pool

    m = simulated_pool(run)
    m.extra["seen"] = [s.model for s in run.specs], run.window, run.warmup, run.backend.name
    return m


def test_a_runner_named_by_import_path_gets_the_checked_pool(registered, monkeypatch):
    import sys
    import types

    module = types.ModuleType("pool_runner_for_test")
    module.counted = _counted
    monkeypatch.setitem(sys.modules, "pool_runner_for_test", module)
    registered(Backend("counted", open=lambda *a, **k: None, clock="virtual",
                       pool="pool_runner_for_test:counted", plugin="a test"))
    m = run_pool([("resnet50", {"processes": 2})], backend="counted", duration="0.5s", warmup="0.1s")
    assert m.extra["seen"] == (["resnet50", "resnet50"], 0.5, 0.1, "counted")
    assert m.processes == 2


def test_a_backend_without_pools_says_which_backends_have_them(registered):
    registered(Backend("poolless", open=lambda *a, **k: None, pools="none", plugin="a test"))
    with pytest.raises(ConfigError, match="the poolless backend runs no pools; use one of "
                                          "tensorrt, onnxruntime, simulated"):
        run_pool("resnet50", backend="poolless", duration="0.5s", warmup="0s")


def test_the_pools_kinds_still_name_the_built_in_runners():
    from pytest_jetson.run.pool import run_processes
    from pytest_jetson.run.pool_sim import run_pool as simulated_pool

    assert Backend("a", open=print).pool_runner() is run_processes
    assert Backend("b", open=print, pools="model").pool_runner() is simulated_pool
    assert Backend("c", open=print, pools="none").pool_runner() is None
    assert BACKENDS.get("simulated").pool_runner() is simulated_pool


def test_a_runner_that_cannot_be_imported_names_the_plugin_and_the_fix(registered):
    registered(Backend("lost", open=lambda *a, **k: None, pool="no_such_module:run", plugin="pytest-lost"))
    with pytest.raises(ConfigError, match="pytest-lost registered the engine backend 'lost' with the pool "
                                          "runner 'no_such_module:run', which cannot be imported .*; give "
                                          "pool= a function"):
        run_pool("resnet50", backend="lost", duration="0.5s", warmup="0s")
