"""Counting what a pool leaves behind: every process started under a marker in its environment
(children inherit it, whatever becomes of their parent), found by reading /proc through psutil."""

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import List, Optional

import psutil

MARKER = "PYTEST_JETSON_ORPHAN_MARK"
FAKE = "fakes.pools:open_fake"
ROOT = Path(__file__).resolve().parents[1]


def _own_tracker(p: psutil.Process) -> bool:
    """multiprocessing's resource tracker of the *calling* process: it lives as long as its
    interpreter (a test in-process has one), holds no worker and is not the pool's."""
    return p.ppid() == os.getpid() and "resource_tracker" in " ".join(p.cmdline())


def _own_reaper(p: psutil.Process) -> bool:
    """The pools' reaper of the *calling* process: one per process, started with its first pool,
    it lives as long as its parent and holds no worker once a pool is over."""
    return p.ppid() == os.getpid() and "pool_reaper.py" in " ".join(p.cmdline())


def marked(token: str, exclude: Optional[set] = None) -> List[psutil.Process]:
    """Live processes carrying ``token`` (zombies, already dead, do not count), but for the caller,
    its own resource tracker and its own reaper."""
    exclude = set(exclude or ()) | {os.getpid()}
    out = []
    for p in psutil.process_iter(["pid"]):
        if p.pid in exclude:
            continue
        try:
            if p.environ().get(MARKER) == token and p.status() != psutil.STATUS_ZOMBIE and not _own_tracker(p) \
                    and not _own_reaper(p):
                out.append(p)
        except (psutil.Error, OSError):
            continue
    return out


def wait_gone(token: str, timeout: float, exclude: Optional[set] = None) -> List[psutil.Process]:
    """Wait until no marked process is left; return those still alive after ``timeout``."""
    end = time.monotonic() + timeout
    left = marked(token, exclude)
    while left and time.monotonic() < end:
        time.sleep(0.05)
        left = marked(token, exclude)
    return left


PARENT = textwrap.dedent("""
    import sys
    sys.path[:0] = [{root!r}, {tests!r}]
    from pytest_jetson.run.pool import run_pool
    if __name__ == "__main__":
        run_pool(("fake", {options!r}), processes={processes}, backend="onnxruntime",
                 duration="60s", warmup="0.05s")
""")


def start_parent(tmp: Path, options: dict, processes: int = 2) -> "tuple[subprocess.Popen, str]":
    """A parent process running a pool (in its own session, so a signal to it reaches it alone)."""
    token = uuid.uuid4().hex
    opts = dict(options)
    opts.setdefault("engine_factory", FAKE)
    script = tmp / f"parent-{token[:8]}.py"
    script.write_text(PARENT.format(root=str(ROOT), tests=str(ROOT / "tests"), options=opts, processes=processes))
    env = dict(os.environ, **{MARKER: token})
    proc = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    return proc, token


def wait_for(token: str, count: int, timeout: float = 30.0) -> int:
    """Wait until at least ``count`` marked processes run; return how many do."""
    end = time.monotonic() + timeout
    n = len(marked(token))
    while n < count and time.monotonic() < end:
        time.sleep(0.05)
        n = len(marked(token))
    return n


def signal_and_count(proc: "subprocess.Popen", token: str, sig: int, timeout: float = 15.0) -> dict:
    """Send ``sig`` to the parent; wait for it and every marked process to be gone. Returns
    ``{"alive_before", "left", "seconds"}``; whatever is left is killed afterwards."""
    before = len(marked(token))
    t0 = time.monotonic()
    os.kill(proc.pid, sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        pass
    left = wait_gone(token, timeout)
    seconds = time.monotonic() - t0
    for p in left + ([psutil.Process(proc.pid)] if proc.poll() is None else []):
        try:
            p.kill()
        except psutil.Error:
            pass
    if proc.poll() is None:
        proc.wait(5)
    return {"alive_before": before, "left": [p.pid for p in left], "seconds": seconds,
            "signal": signal.Signals(sig).name}


def _count_after(proc: "subprocess.Popen", token: str, t0: float, timeout: float) -> dict:
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        pass
    left = wait_gone(token, timeout)
    seconds = time.monotonic() - t0
    for p in left + ([psutil.Process(proc.pid)] if proc.poll() is None else []):
        try:
            p.kill()
        except psutil.Error:
            pass
    if proc.poll() is None:
        proc.wait(5)
    return {"left": [p.pid for p in left], "seconds": seconds}


def signal_group_and_count(proc: "subprocess.Popen", token: str, sig: int, timeout: float = 15.0) -> dict:
    """``kill -SIG -- -PGID``: signal the parent's whole process group (the parent leads it:
    ``start_parent`` starts it in a session of its own), as a CI runner cancelling a job or a
    terminal closing does; then count what is left."""
    before = len(marked(token))
    t0 = time.monotonic()
    os.killpg(proc.pid, sig)
    out = _count_after(proc, token, t0, timeout)
    out.update(alive_before=before, signal=f"group {signal.Signals(sig).name}")
    return out


def timeout_run(tmp: Path, options: dict, seconds: float, processes: int = 2, timeout: float = 15.0) -> dict:
    """``timeout SECONDS python parent.py``: coreutils' timeout signals the group it leads
    (SIGTERM, then SIGKILL a second later); count what is left once it returned."""
    token = uuid.uuid4().hex
    opts = dict(options)
    opts.setdefault("engine_factory", FAKE)
    script = tmp / f"parent-{token[:8]}.py"
    script.write_text(PARENT.format(root=str(ROOT), tests=str(ROOT / "tests"), options=opts, processes=processes))
    env = dict(os.environ, **{MARKER: token})
    t0 = time.monotonic()
    proc = subprocess.Popen(["timeout", "-k", "1", f"{seconds:g}", sys.executable, str(script)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    out = _count_after(proc, token, t0, seconds + timeout)
    out.update(signal=f"timeout {seconds:g}s", returncode=proc.returncode)
    return out
