"""Real pools: spawned workers that behave, raise, crash, hang, or are interrupted, and nothing
left running afterwards. The misbehaving engines are ``fakes.pools`` (tests/fakes/pools.py)."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import psutil
import pytest

from pytest_jetson.errors import WorkerError
from pytest_jetson.run.pool import run_pool

FAKE = "fakes.pools:open_fake"
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # where ``fakes`` is, for a script's workers
QUICK = dict(backend="onnxruntime", duration="0.3s", warmup="0.05s")


def _kids():
    """Our child processes, without multiprocessing's resource tracker and the pools' reaper (each
    lives as long as this interpreter, one of each, and holds no worker)."""
    out = set()
    for p in psutil.Process().children(recursive=True):
        try:
            cmdline = " ".join(p.cmdline())
            if "resource_tracker" in cmdline or ("pool_reaper.py" in cmdline and p.ppid() == os.getpid()):
                continue
        except psutil.Error:
            continue
        out.add(p.pid)
    return out


@pytest.fixture
def no_orphans():
    before = _kids()
    yield
    left = _kids() - before
    assert not left, f"pool left processes running: {left}"


def _fake(**opts):
    opts.setdefault("engine_factory", FAKE)
    return ("fake", opts)


def test_a_pool_of_real_processes(no_orphans):
    m = run_pool(_fake(delay=0.002), processes=3, **QUICK)
    assert m.processes == 3 and m.clock == "wall"
    pids = {w.extra["pid"] for w in m.workers}
    assert len(pids) == 3 and os.getpid() not in pids
    assert 0 <= m.start_skew < 0.3
    for w in m.workers:
        assert w.duration == pytest.approx(0.3, abs=0.1)
        assert w.extra["load_s"] >= 0 and w.extra["startup_overhead_s"] > 0
        assert 0 <= w.extra["window_start"] <= m.start_skew
        assert w.extra["peak_rss_bytes"] > 0
    assert m.items == sum(w.items for w in m.workers)
    assert m.throughput == pytest.approx(sum(w.throughput for w in m.workers), rel=0.15)
    assert m.extra["window_overlap_s"] > 0
    assert len(m.windows) == 10


def test_engine_load_is_not_in_the_window(no_orphans):
    m = run_pool(_fake(load_s=0.5), processes=2, **QUICK)
    for w in m.workers:
        assert w.extra["load_s"] >= 0.5
        assert w.duration < 0.45  # the 0.3 s window, not the 0.5 s load


def test_worker_that_raises_is_reported_with_index_model_and_output(no_orphans):
    with pytest.raises(WorkerError) as info:
        run_pool(_fake(fault="raise", fault_worker=1, fault_after=3), processes=3, **QUICK)
    msg = str(info.value)
    assert "pool worker 1 of 3" in msg and "model 'fake'" in msg
    assert "RuntimeError: fake engine fake-fp16-b1: injected failure" in msg
    assert "measurement window" in msg and "exit code 1" in msg
    assert "about to raise after 3 calls" in msg  # the worker's last output
    assert "other 2 worker(s) were stopped" in msg


def test_worker_killed_by_a_signal(no_orphans):
    with pytest.raises(WorkerError) as info:
        run_pool(_fake(fault="segfault", fault_worker=0), processes=2, **QUICK)
    msg = str(info.value)
    assert "pool worker 0 of 2" in msg and "SIGSEGV" in msg
    assert "Segmentation fault" in msg  # faulthandler's traceback from the worker's output


def test_worker_killed_like_the_oom_killer_does(no_orphans):
    with pytest.raises(WorkerError) as info:
        run_pool(_fake(fault="kill", fault_worker=1, fault_after=2), processes=2, **QUICK)
    msg = str(info.value)
    assert "pool worker 1 of 2" in msg and "killed by SIGKILL (signal 9)" in msg and "OOM killer" in msg
    assert "about to kill after 2 calls" in msg


def test_worker_that_exits(no_orphans):
    with pytest.raises(WorkerError, match=r"pool worker 1 of 2 .* died during the measurement window: exit code 7"):
        run_pool(_fake(fault="exit", fault_worker=1), processes=2, **QUICK)


def test_worker_that_cannot_load_its_model(no_orphans):
    with pytest.raises(WorkerError) as info:
        run_pool(_fake(fault="raise-on-load", fault_worker=2), processes=3, **QUICK)
    msg = str(info.value)
    assert "pool worker 2 of 3 (model 'fake'" in msg and "could not open its engine" in msg
    assert "ModelError" in msg and "cannot load" in msg


@pytest.mark.slow
def test_worker_that_hangs_in_the_window(no_orphans):
    t = time.perf_counter()
    with pytest.raises(WorkerError) as info:
        run_pool(_fake(fault="hang", fault_worker=1), processes=2, deadline="3s", **QUICK)
    msg = str(info.value)
    assert "pool worker 1 of 2" in msg and "hung during the measurement window" in msg
    assert "SIGTERM" in msg and "about to hang" in msg
    assert time.perf_counter() - t < 20


@pytest.mark.slow
def test_a_worker_the_pool_killed_is_not_blamed_on_the_oom_killer(no_orphans):
    """A hung worker (stuck in a C call) is stopped by the pool, SIGTERM then SIGKILL: the
    message says the pool stopped it and why; a SIGKILL the pool did not send may be the OOM
    killer's."""
    from pytest_jetson.run.pool_procs import describe_exit

    with pytest.raises(WorkerError) as info:
        run_pool(_fake(fault="hang-native", fault_worker=1), processes=2, deadline="15s", **QUICK)
    msg = str(info.value)
    assert "pool worker 1 of 2" in msg and "hung during the measurement window" in msg
    assert "; the pool stopped it: no result within" in msg and "OOM" not in msg
    assert describe_exit(-9, "no result within 5 s") == (
        "killed by SIGKILL (signal 9); the pool stopped it: no result within 5 s")
    assert "OOM killer" in describe_exit(-9)


def test_worker_that_hangs_while_loading(no_orphans):
    with pytest.raises(WorkerError) as info:
        run_pool(_fake(fault="hang-on-load", fault_worker=0), processes=2, deadline="1.5s", **QUICK)
    msg = str(info.value)
    assert "hung while opening its engine" in msg and "deadline of 1.5 s" in msg
    assert "longer deadline=" in msg


def test_keyboard_interrupt_in_the_parent_stops_every_worker(no_orphans):
    seen = {}

    def interrupt():
        # wait until the workers are really there, then Ctrl-C the parent alone
        end = time.time() + 20
        while time.time() < end and len(_kids()) < 2:
            time.sleep(0.05)
        seen["workers"] = _kids()
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Thread(target=interrupt, daemon=True)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        run_pool(_fake(), processes=2, backend="onnxruntime", duration="30s", warmup="0.05s")
    timer.join()
    assert len(seen["workers"]) >= 2
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                   for p in seen["workers"])


@pytest.mark.slow
def test_workers_exit_when_the_parent_is_killed(tmp_path):
    """Even SIGKILL of the parent (no cleanup at all) leaves no worker behind."""
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{os.getcwd()!r}, {TESTS!r}]
        from pytest_jetson.run.pool import run_pool
        if __name__ == "__main__":
            run_pool(("fake", {{"engine_factory": {FAKE!r}}}), processes=2, backend="onnxruntime",
                     duration="60s", warmup="0.05s")
    """))
    parent = subprocess.Popen([sys.executable, str(script)])
    try:
        proc = psutil.Process(parent.pid)
        end = time.time() + 30
        workers = []
        while time.time() < end:
            workers = [c for c in proc.children()
                       if not any(k in " ".join(c.cmdline()) for k in ("resource_tracker", "pool_reaper.py"))]
            if len(workers) >= 2:
                break
            time.sleep(0.1)
        assert len(workers) >= 2
        time.sleep(0.5)
        parent.kill()
        parent.wait(10)
        gone, alive = psutil.wait_procs(workers, timeout=10)
        assert not alive
    finally:
        if parent.poll() is None:
            parent.kill()


def test_spawned_workers_do_not_reimport_pytests_main(monkeypatch, tmp_path):
    import types

    from pytest_jetson.run.pool_procs import _lean_main

    fake_pytest = types.ModuleType("__main__")
    fake_pytest.__file__ = "/usr/bin/pytest"
    monkeypatch.setitem(sys.modules, "__main__", fake_pytest)
    with _lean_main():
        assert sys.modules["__main__"] is not fake_pytest
        assert getattr(sys.modules["__main__"], "__file__", None) is None
    assert sys.modules["__main__"] is fake_pytest

    script = types.ModuleType("__main__")
    script.__file__ = str(tmp_path / "run_pools.py")  # a user's script: its objects must resolve
    (tmp_path / "run_pools.py").write_text("")
    monkeypatch.setitem(sys.modules, "__main__", script)
    with _lean_main():
        assert sys.modules["__main__"] is script

    stdin = types.ModuleType("__main__")
    stdin.__file__ = "<stdin>"  # python - : nothing a child could import
    monkeypatch.setitem(sys.modules, "__main__", stdin)
    with _lean_main():
        assert sys.modules["__main__"] is not stdin


def test_worker_that_dies_before_its_code_runs(no_orphans, monkeypatch):
    """A factory only the parent can import (here a module made at run time): the child cannot
    unpickle its workload and dies before ``worker.main``; the error says where to look."""
    import types

    from fakes import pools as pool_fakes

    mod = types.ModuleType("pool_only_in_the_parent")
    monkeypatch.setitem(sys.modules, "pool_only_in_the_parent", mod)

    def factory(model, **kw):
        return pool_fakes.open_fake(model, **kw)

    factory.__module__ = "pool_only_in_the_parent"
    factory.__qualname__ = "factory"
    mod.factory = factory
    with pytest.raises(WorkerError) as info:
        run_pool(("fake", {"engine_factory": factory}), processes=2, **QUICK)
    msg = str(info.value)
    assert "while starting, before the worker code ran" in msg and "exit code 1" in msg
