"""Zero orphans: after a pool, nothing it started is still running, whatever happened to it.

Real processes throughout; every process a test starts carries a marker in its environment
(children inherit it), so what is left is found even after it was re-parented. The big run
(20 SIGINTs and 20 SIGKILLs of the parent at random moments) is the benchmark
tests/benchmarks/test_bench_pool.py::test_bench_no_orphans_at_random_moments.
"""

import os
import random
import signal
import sys

import pytest
from orphans import MARKER, marked, signal_and_count, start_parent, wait_for, wait_gone

from pytest_jetson.errors import WorkerError
from pytest_jetson.run import pool_reaper
from pytest_jetson.run.pool import run_pool

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

FAKE = "pytest_jetson.run.pool_fakes:open_fake"
QUICK = dict(backend="onnxruntime", duration="0.3s", warmup="0.05s")


def test_a_worker_that_starts_a_child_and_raises_leaves_nothing(monkeypatch):
    monkeypatch.setenv(MARKER, "child-and-raise")
    with pytest.raises(WorkerError, match="injected failure"):
        run_pool(("fake", {"engine_factory": FAKE, "child": True, "fault": "raise", "fault_worker": 0,
                           "fault_after": 2}), processes=2, **QUICK)
    left = wait_gone("child-and-raise", 5.0, exclude={os.getpid()})
    assert left == [], [(p.pid, p.ppid(), p.cmdline()) for p in left]


def test_a_finished_pool_ends_the_children_of_its_workers(monkeypatch):
    monkeypatch.setenv(MARKER, "finished")
    m = run_pool(("fake", {"engine_factory": FAKE, "child": True}), processes=2, **QUICK)
    assert m.processes == 2
    assert wait_gone("finished", 5.0, exclude={os.getpid()}) == []


def test_parent_killed_while_a_worker_hangs_in_native_code_holding_the_gil(tmp_path):
    proc, token = start_parent(tmp_path, {"child": True, "fault": "hang-native", "fault_worker": 1})
    # the parent, its reaper, two workers, two children of theirs (and the resource tracker)
    assert wait_for(token, 6) >= 6
    import time

    time.sleep(1.0)  # into the window: worker 1 is now stuck in sleep(3600) with the GIL held
    result = signal_and_count(proc, token, signal.SIGKILL)
    assert result["left"] == [], result


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_parent_stopped_at_random_moments(tmp_path, sig):
    rng = random.Random(15 + int(sig))
    for _ in range(2):
        proc, token = start_parent(tmp_path, {"child": True})
        wait_for(token, 2)
        import time

        time.sleep(rng.uniform(0.0, 1.5))  # spawn, engine load, warm-up or window
        result = signal_and_count(proc, token, sig)
        assert result["left"] == [], result


def test_a_worker_leads_its_own_group_and_is_bound_to_its_parent(monkeypatch):
    monkeypatch.setenv(MARKER, "groups")
    seen = {}

    def on_start():
        for p in marked("groups", exclude={os.getpid()}):
            if "pytest-jetson-pool-" in " ".join(p.cmdline()) or p.ppid() == os.getpid():
                seen[p.pid] = os.getpgid(p.pid)

    from pytest_jetson.run.pool_procs import ProcessPool
    from pytest_jetson.run.pool_spec import worker_specs

    pool = ProcessPool(worker_specs(("fake", {"engine_factory": FAKE}), 2), backend="onnxruntime",
                       device=None, duration=0.3, warmup=0.05, deadline=30, seed=0, on_window_start=on_start)
    states = pool.run()
    worker_pids = {s.extra["pid"] for s in states}
    assert all(seen[pid] == pid for pid in worker_pids)  # each leads its own process group
    assert all(s.extra["pgid"] == s.extra["pid"] for s in states)


def test_death_signal_and_groups_are_linux_calls_that_work_here():
    assert pool_reaper.set_parent_death_signal(signal.SIGKILL)
    assert pool_reaper.set_parent_death_signal(0)  # disarm it again for this process
    assert pool_reaper.group_of(os.getpid()) in (os.getpid(), None)
    assert pool_reaper.kill_group(2 ** 22 + 12345, 0) is False  # no such group: no error
