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

Two ways out of that net, and how they are closed:

- The whole process group killed at once (``kill -- -PGID``, ``timeout``, a CI runner cancelling
  a job, a closed terminal): a reaper in the parent's group would die with it. The pool starts it
  as a small script of the standard library in a session of its own (``setsid`` before it runs,
  so from its first instant), where a signal to the parent's group misses it; it sees the pipe
  close and does its work.
- Helpers a worker detaches (``start_new_session``, a daemon's double fork) leave the worker's
  group, and a double-forked one loses its parent too. Each pool marks its workers' environment
  (``POOL_ENV``, set only while a worker is spawned); every process a worker starts inherits it,
  detached, re-parented or forked, so at the end the parent (and, if the parent is gone, the
  reaper) finds each by reading ``/proc/<pid>/environ`` and SIGKILLs it. No cgroups, no root.

Limits: a helper that starts with an emptied environment (``env -i``, ``execve`` with its own
environment), or runs as another user (setuid), is not found; neither is one whose environment
cannot be read (``/proc`` mounted with ``hidepid``). A SIGKILL aimed at the reaper itself, or at
every process of the user, leaves what the kernel's death signal does not reach; a whole-cgroup
kill (a container or systemd unit stopped) needs none of this. Outside Linux only the groups and
the death signal's equivalents apply.
"""

import ctypes
import os
import signal
import sys
import time
from typing import Any, Callable, Iterable, List, Optional, Tuple

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
#: the environment variable that marks every process a pool's workers start (value: the pool's token)
POOL_ENV = "PYTEST_JETSON_POOL"
#: rounds of finding and killing marked processes (a process forking while it is killed is caught
#: the next round)
SWEEP_ROUNDS = 20


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


def leave_group() -> bool:
    """Start a session of one's own, out of the parent's process group and terminal (False where
    that is not possible)."""
    try:
        os.setsid()
        return True
    except (OSError, AttributeError):
        return False


def marked_pids(token: str, exclude: Iterable[int] = ()) -> List[int]:
    """Processes whose environment carries ``POOL_ENV=token`` (Linux's ``/proc``; empty
    elsewhere), but ``exclude``."""
    needle = f"{POOL_ENV}={token}".encode()
    skip = {int(p) for p in exclude}
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit() or int(name) in skip:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                env = fh.read()
        except OSError:  # gone, a zombie, or not ours to read
            continue
        if needle + b"\0" in env or env.endswith(needle):
            found.append(int(name))
    return found


def kill_marked(token: Optional[str], exclude: Iterable[int] = ()) -> int:
    """SIGKILL every process marked with ``token`` (see ``marked_pids``), again until none is
    left or ``SWEEP_ROUNDS`` passed; returns how many were signalled."""
    if not token:
        return 0
    skip = {os.getpid(), *exclude}
    killed = empty = 0
    for _ in range(SWEEP_ROUNDS):
        pids = marked_pids(token, skip)
        # a process caught between fork and exec may not be readable for an instant: only two
        # empty looks in a row end the sweep
        empty = 0 if pids else empty + 1
        if empty >= 2:
            break
        killed += sum(kill_process(pid, signal.SIGKILL) for pid in pids)
        time.sleep(0.01)  # let the kernel tear them down before the next look
    return killed


def main(conn: Any, token: Optional[str] = None) -> None:
    """The reaper on a ``multiprocessing`` connection (``conn.recv()`` gives ``(kind, value)``)."""
    serve(conn.recv, token)


def main_fd(fd: int, token: Optional[str] = None) -> None:
    """The reaper on the read end of an OS pipe, one ``worker <pid>`` or ``stop`` line per
    message: how the pool starts it (``python -I -S pool_reaper.py FD TOKEN``, in a new session)."""
    stream = os.fdopen(fd, "r")

    def recv() -> Tuple[str, str]:
        line = stream.readline()
        if not line:
            raise EOFError
        kind, _, value = line.strip().partition(" ")
        return kind, value

    serve(recv, token)


def serve(recv: Callable[[], Tuple[str, Any]], token: Optional[str] = None) -> None:
    """Collect worker pids from ``recv``; when it ends (the parent died), SIGKILL each worker,
    its group and every process marked with the pool's ``token``; when it says stop, each group
    (the parent has swept the marked ones)."""
    leave_group()  # already done where the pool started it in a session of its own
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the parent to act on
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a group's SIGTERM: the pipe says what to do
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a closed terminal, likewise
    workers = set()
    orphaned = True
    try:
        while True:
            kind, value = recv()
            if kind == "worker":
                workers.add(int(value))
            elif kind == "stop":
                orphaned = False
                break
    except (EOFError, OSError, ValueError):
        pass  # the parent is gone
    _kill_all(workers, orphaned)
    if orphaned:
        kill_marked(token)


def _kill_all(workers: Iterable[int], orphaned: bool) -> None:
    for pid in workers:
        # A worker leads a group named by its pid once it runs; one killed before it got there
        # has started nothing. The worker itself only when the parent died: after a normal stop
        # it has exited and its pid may already be another process's.
        if orphaned:
            kill_process(pid, signal.SIGKILL)
        kill_group(pid, signal.SIGKILL)


if __name__ == "__main__":  # started by the pool as a script: standard library only, quick to start
    main_fd(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None)
