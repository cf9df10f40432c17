"""The pools' reaper is one process per parent, shared by its pools: it ends what a pool left
running when the parent dies during any of them, forgets a pool once it is over, exits with its
parent, and is not kept alive by a process the parent forked. A worker that sent its result ends
at once, after its ``atexit`` functions ran.

Real processes throughout (the fake engines of ``tests/fakes/pools.py``); what is left is found by
the marker every process a test starts inherits (``tests/orphans.py``).
"""

import os
import signal
import subprocess
import sys
import textwrap
import uuid

import psutil
import pytest
from orphans import MARKER, ROOT, marked, signal_group_and_count, wait_for, wait_gone

from pytest_jetson.run import pool_reaper
from pytest_jetson.run.pool import run_pool

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

FAKE = "fakes.pools:open_fake"
QUICK = dict(backend="onnxruntime", duration="0.1s", warmup=0)


def _reapers(pid):
    return [p for p in psutil.Process(pid).children() if "pool_reaper.py" in " ".join(p.cmdline())]


def test_pools_of_one_process_share_one_reaper_that_outlives_them():
    run_pool(("fake", {"engine_factory": FAKE}), processes=2, **QUICK)
    first = _reapers(os.getpid())
    run_pool(("fake", {"engine_factory": FAKE}), processes=1, **QUICK)
    assert len(first) == 1 and [p.pid for p in _reapers(os.getpid())] == [first[0].pid]
    assert first[0].status() != psutil.STATUS_ZOMBIE


def test_a_reaper_that_died_is_replaced_by_the_next_pool():
    run_pool(("fake", {"engine_factory": FAKE}), processes=1, **QUICK)
    (old,) = _reapers(os.getpid())
    old.kill()
    old.wait(5)
    m = run_pool(("fake", {"engine_factory": FAKE}), processes=1, **QUICK)
    assert m.processes == 1
    (new,) = _reapers(os.getpid())
    assert new.pid != old.pid and new.is_running()


def _serve(messages):
    """The reaper's loop on a list of messages, then its parent's death (the list's end)."""
    queue = list(messages)

    def recv():
        if not queue:
            raise EOFError
        return queue.pop(0)

    pool_reaper.serve(recv)


def test_the_reaper_forgets_a_pool_once_it_is_over_and_ends_the_one_still_running():
    """A finished pool's workers are not the reaper's any more (their pids may be another
    process's by then); the workers of the pool running when the parent died are killed."""
    over = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        pid = os.fork()
        if pid == 0:  # the reaper in a child: it leaves its group and ignores signals
            try:
                _serve([["pool", "a"], ["worker", "a", str(over.pid)], ["pool", "b"],
                        ["worker", "b", str(running.pid)], ["bogus"], ["worker", "a"], ["end", "a"]])
            finally:
                os._exit(0)
        assert os.waitpid(pid, 0)[1] == 0
        assert running.wait(5) == -signal.SIGKILL
        assert over.poll() is None
    finally:
        for p in (over, running):
            p.kill()
            p.wait(5)


SCRIPT = textwrap.dedent("""
    import os, sys, time
    sys.path[:0] = [{root!r}, {tests!r}]
    from pytest_jetson.run.pool import run_pool
    if __name__ == "__main__":
        fake = ("fake", {{"engine_factory": "fakes.pools:open_fake", "child": {child!r}}})
        run_pool(fake, processes=1, backend="onnxruntime", duration="0.05s", warmup=0)
        if {fork!r}:
            pid = os.fork()
            if pid == 0:  # a process this one forked, alive after it: not the reaper's concern
                time.sleep(60)
                os._exit(0)
            open({forked!r}, "w").write(str(pid))
        run_pool(fake, processes=2, backend="onnxruntime", duration={window!r}, warmup=0)
""")


def _parent(tmp_path, child=True, fork=False, window="60s"):
    token = uuid.uuid4().hex
    script = tmp_path / f"parent-{token[:8]}.py"
    forked = tmp_path / f"forked-{token[:8]}"
    script.write_text(SCRIPT.format(root=str(ROOT), tests=str(ROOT / "tests"), child=child, fork=fork,
                                    forked=str(forked), window=window))
    proc = subprocess.Popen([sys.executable, str(script)], env=dict(os.environ, **{MARKER: token}),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    return proc, token, forked


@pytest.mark.parametrize("child", [True, "detached"])
def test_a_reaper_started_by_an_earlier_pool_ends_a_later_one_when_the_group_is_killed(tmp_path, child):
    proc, token, _ = _parent(tmp_path, child=child)
    # the parent, its reaper, the second pool's two workers and their helpers
    assert wait_for(token, 6) >= 6
    result = signal_group_and_count(proc, token, signal.SIGKILL)
    assert result["left"] == [], result


def _cmdline(p):
    try:
        return " ".join(p.cmdline())
    except psutil.NoSuchProcess:  # a zombie too: a pool process already ending, not a tracker
        return ""


def test_a_process_the_parent_forked_does_not_keep_the_reaper_waiting(tmp_path):
    proc, token, forked = _parent(tmp_path, child="detached", fork=True)
    assert wait_for(token, 7) >= 7  # the forked process too
    child = int(forked.read_text())
    try:
        proc.kill()  # the parent alone: the process it forked lives on
        proc.wait(10)
        # multiprocessing's resource tracker waits for every holder of its pipe, the forked
        # process too: it goes with that process, below
        trackers = {p.pid for p in marked(token) if "resource_tracker" in _cmdline(p)}
        left = wait_gone(token, 10.0, exclude={child} | trackers)
        assert left == [], [(p.pid, _cmdline(p)) for p in left]
        assert psutil.pid_exists(child)
    finally:
        os.kill(child, signal.SIGKILL)
    assert wait_gone(token, 5.0) == []


def test_the_reaper_exits_with_its_parent(tmp_path):
    proc, token, _ = _parent(tmp_path, child="detached", window="0.05s")
    assert proc.wait(60) == 0
    assert wait_gone(token, 10.0) == []  # the reaper carries the marker too


ATEXIT_ENGINE = textwrap.dedent("""
    import atexit, sys

    from fakes.pools import open_fake


    def open_noting_exit(model, note, **options):
        atexit.register(lambda: open(note, "a").write("atexit ran\\n"))
        return open_fake(model, **options)
""")


def test_a_worker_runs_its_atexit_functions_before_it_ends(tmp_path, monkeypatch):
    (tmp_path / "atexit_engine.py").write_text(ATEXIT_ENGINE)
    monkeypatch.syspath_prepend(str(tmp_path))  # spawned workers inherit the parent's sys.path
    note = tmp_path / "note.txt"
    run_pool(("fake", {"engine_factory": "atexit_engine:open_noting_exit", "note": str(note)}), processes=2,
             **QUICK)
    assert note.read_text() == "atexit ran\n" * 2
