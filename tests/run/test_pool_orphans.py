"""Zero orphans: after a pool, nothing it started is still running, whatever happened to it.

Real processes throughout; every process a test starts carries a marker in its environment
(children inherit it), so what is left is found even after it was re-parented. The big run
(20 SIGINTs and 20 SIGKILLs of the parent at random moments) is the benchmark
benchmarks/test_bench_pool.py::test_bench_no_orphans_at_random_moments.
"""

import os
import random
import signal
import sys

import pytest
from orphans import (
    MARKER,
    marked,
    signal_and_count,
    signal_group_and_count,
    start_parent,
    timeout_run,
    wait_for,
    wait_gone,
)

from pytest_jetson.errors import WorkerError
from pytest_jetson.run import pool_reaper
from pytest_jetson.run.pool import run_pool

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

FAKE = "fakes.pools:open_fake"
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


def test_parent_killed_as_the_first_worker_starts_a_child_while_others_still_spawn(tmp_path):
    """The parent spawns 8 workers one after another; the first may open its engine (and start a
    child) before the parent has read a word from it. Killed at that moment, the parent must
    already have named that worker to its reaper."""
    import time

    proc, token = start_parent(tmp_path, {"child": True}, processes=8)
    end = time.monotonic() + 60
    while time.monotonic() < end:
        children = [p for p in marked(token) if "time.sleep(600)" in " ".join(_cmdline(p))]
        if children:
            break
        time.sleep(0.002)
    assert children, "no worker started its child"
    result = signal_and_count(proc, token, signal.SIGKILL)
    assert result["left"] == [], result


def _cmdline(p):
    try:
        return p.cmdline()
    except Exception:
        return []


def test_the_reaper_ends_a_named_worker_and_its_group_when_the_parent_dies():
    """Straight through the reaper: one worker that leads its group and has a child, one that
    never got as far as its group; the pipe closes; both and the child are gone."""
    import multiprocessing
    import subprocess
    import time

    lead = subprocess.Popen([sys.executable, "-c", "import os, subprocess, sys, time; os.setpgid(0, 0); "
                             "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
                             "print('ready', flush=True); time.sleep(600)"], stdout=subprocess.PIPE)
    assert lead.stdout.readline().strip() == b"ready"
    early = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        ctx = multiprocessing.get_context("spawn")
        receiver, sender = ctx.Pipe(duplex=False)
        reaper = ctx.Process(target=pool_reaper.main, args=(receiver,), daemon=True)
        reaper.start()
        receiver.close()
        sender.send(("pool", "p1"))
        sender.send(("worker", "p1", lead.pid))
        sender.send(("worker", "p1", early.pid))
        started = time.monotonic()
        sender.close()  # the parent died
        reaper.join(10)
        assert reaper.exitcode == 0
        assert lead.wait(5) == -signal.SIGKILL and early.wait(5) == -signal.SIGKILL
        assert time.monotonic() - started < 5
        assert _live_in_group(lead.pid, wait=5.0) == []  # the worker's child went with it
    finally:
        pool_reaper.kill_group(lead.pid)
        for p in (lead, early):
            p.kill()
            p.wait(5)


def _live_in_group(pgid, wait):
    """Processes of group ``pgid`` that are still running (zombies waiting for init do not count)."""
    import time

    import psutil

    end = time.monotonic() + wait
    while True:
        live = []
        for p in psutil.process_iter(["pid"]):
            try:
                if os.getpgid(p.pid) == pgid and p.status() != psutil.STATUS_ZOMBIE:
                    live.append(p.pid)
            except (psutil.Error, OSError):
                continue
        if not live or time.monotonic() > end:
            return live
        time.sleep(0.05)


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


# -- the whole process group killed, and helpers a worker detaches ------------------------------------
@pytest.mark.parametrize("child", ["detached", "double-fork"])
def test_a_finished_pool_ends_the_helpers_its_workers_detached(monkeypatch, child):
    token = f"finished-{child}-{os.getpid()}-{random.random()}"
    monkeypatch.setenv(MARKER, token)
    m = run_pool(("fake", {"engine_factory": FAKE, "child": child}), processes=2, **QUICK)
    assert m.processes == 2
    left = wait_gone(token, 5.0, exclude={os.getpid()})
    assert left == [], [(p.pid, p.ppid(), p.cmdline()) for p in left]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
@pytest.mark.parametrize("child", [True, "detached", "double-fork"])
def test_the_whole_group_killed_leaves_nothing(tmp_path, sig, child):
    """``kill -- -PGID`` (and the SIGTERM a CI cancellation sends the group): the parent and
    everything in its group die at once, the reaper of the pool with them unless it left it."""
    proc, token = start_parent(tmp_path, {"child": child})
    # the parent, its reaper, two workers and their two helpers
    assert wait_for(token, 6) >= 6
    result = signal_group_and_count(proc, token, sig)
    assert result["left"] == [], result


def test_a_timeout_run_leaves_nothing(tmp_path):
    result = timeout_run(tmp_path, {"child": "detached"}, seconds=4.0)
    assert result["returncode"] == 124 and result["left"] == [], result
