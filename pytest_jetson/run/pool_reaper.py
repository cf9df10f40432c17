"""Binding pool processes to the pool's parent, at the operating system's level.

Each worker leads its own process group (so the group, with any process the worker or its
libraries started, can be ended at once) and asks the kernel to SIGKILL it when its parent dies
(``PR_SET_PDEATHSIG``, Linux; through ctypes' ``prctl``). That needs no Python code to run in the
worker, so it works for a worker hung in native code holding the GIL, where a watcher thread
never gets to run.

A worker's own children do not inherit the death signal. The *reaper*, one small process per pool
started before the workers, holds the read end of a pipe whose only write end is the parent's:
when the parent dies, however it dies, the pipe closes and the reaper SIGKILLs every worker and
its process group, then exits. The parent names each worker to the reaper as soon as it is
spawned, before the worker runs any code of its own: a worker named only once it reported in
could start a child and lose its parent before then, and that child would be left behind. When
the pool stops normally the parent ends the groups itself and tells the reaper to stop.
"""

import ctypes
import os
import signal
import sys
from typing import Any, Iterable, Optional

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Have the kernel send ``sig`` to this process when its parent thread exits (Linux only;
    False elsewhere or when prctl is unavailable)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def lead_own_group() -> bool:
    """Make this process the leader of a new process group (False where that is not possible)."""
    try:
        os.setpgid(0, 0)
        return True
    except (OSError, AttributeError):
        return False


def bind_to_parent(parent_pid: Optional[int], orphan_exit: int) -> None:
    """A worker's first act: own process group, death signal, and exit at once if the parent
    already died before the death signal was armed."""
    lead_own_group()
    set_parent_death_signal(signal.SIGKILL)
    if parent_pid is not None and os.getppid() != int(parent_pid):
        os._exit(orphan_exit)


def _send(kill: Any, target: int, sig: int) -> bool:
    try:
        kill(int(target), sig)
        return True
    except OSError:  # gone (ProcessLookupError), or not ours to signal (PermissionError)
        return False


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Signal process group ``pgid``; False when it no longer exists."""
    return _send(os.killpg, pgid, sig)


def kill_process(pid: int, sig: int = signal.SIGKILL) -> bool:
    """Signal process ``pid``; False when it no longer exists."""
    return _send(os.kill, pid, sig)


def group_of(pid: int) -> Optional[int]:
    """``pid``'s process group when ``pid`` leads it, else None (it has not set one up yet, or
    is gone): only a group a worker leads may be signalled as a whole."""
    try:
        return pid if os.getpgid(int(pid)) == int(pid) else None
    except (ProcessLookupError, OSError):
        return None


def main(conn: Any) -> None:
    """The reaper (a ``multiprocessing`` target): collect worker pids from ``conn``; when it
    closes (the parent died), SIGKILL each worker and its group; when it says stop, each group."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the parent to act on
    workers = set()
    orphaned = True
    try:
        while True:
            kind, value = conn.recv()
            if kind == "worker":
                workers.add(int(value))
            elif kind == "stop":
                orphaned = False
                break
    except (EOFError, OSError):
        pass  # the parent is gone
    _kill_all(workers, orphaned)


def _kill_all(workers: Iterable[int], orphaned: bool) -> None:
    for pid in workers:
        # A worker leads a group named by its pid once it runs; one killed before it got there
        # has started nothing. The worker itself only when the parent died: after a normal stop
        # it has exited and its pid may already be another process's.
        if orphaned:
            kill_process(pid, signal.SIGKILL)
        kill_group(pid, signal.SIGKILL)
