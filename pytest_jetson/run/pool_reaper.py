"""Binding pool processes to the pool's parent, at the operating system's level.

Each worker leads its own process group (so the group, with any process the worker or its
libraries started, can be ended at once) and asks the kernel to SIGKILL it when its parent dies
(``PR_SET_PDEATHSIG``, Linux; through ctypes' ``prctl``). That needs no Python code to run in the
worker, so it works for a worker hung in native code holding the GIL, where a watcher thread
never gets to run.

A worker's own children do not inherit the death signal. The *reaper*, one small process per
parent started with its first pool and shared by every later one, holds the read end of a pipe
whose only write end is the parent's: when the parent dies, however it dies, the pipe closes and
the reaper SIGKILLs every worker of the pools still running and each worker's process group, then
exits. The parent names each worker to the reaper as soon as it is spawned, before the worker runs
any code of its own: a worker named only once it reported in could start a child and lose its
parent before then, and that child would be left behind. When a pool stops normally the parent
ends the groups itself and tells the reaper the pool is over (it forgets that pool's workers:
their pids may be another process's soon); when the parent exits normally the reaper has nothing
left to do and exits too.

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
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set

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


def bind_to_parent(parent_pid: Optional[int], orphan_exit: int) -> bool:
    """A worker's first act: own process group, death signal, and exit at once if the parent
    already died before the death signal was armed. True when the kernel will end this process
    with its parent (False: the caller watches the parent itself)."""
    lead_own_group()
    armed = set_parent_death_signal(signal.SIGKILL)
    if parent_pid is not None and os.getppid() != int(parent_pid):
        os._exit(orphan_exit)
    return armed


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


def _needles(tokens: Any) -> List[bytes]:
    if isinstance(tokens, str):
        tokens = [tokens]
    return [f"{POOL_ENV}={t}".encode() for t in tokens if t]


def marked_pids(tokens: Any, exclude: Iterable[int] = ()) -> List[int]:
    """Processes whose environment carries ``POOL_ENV=token`` for one of ``tokens`` (a token or
    several; Linux's ``/proc``; empty elsewhere), but ``exclude``."""
    needles = _needles(tokens)
    if not needles:
        return []
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
        if any(needle + b"\0" in env or env.endswith(needle) for needle in needles):
            found.append(int(name))
    return found


def kill_marked(tokens: Any, exclude: Iterable[int] = ()) -> int:
    """SIGKILL every process marked with one of ``tokens`` (see ``marked_pids``), again until none
    is left or ``SWEEP_ROUNDS`` passed; returns how many were signalled."""
    if not _needles(tokens or ()):
        return 0
    skip = {os.getpid(), *exclude}
    killed = empty = 0
    for _ in range(SWEEP_ROUNDS):
        pids = marked_pids(tokens, skip)
        if not pids:
            # a process caught in exec may show an empty environment for an instant: only two
            # empty looks in a row end the sweep (the second at once, a look takes milliseconds)
            empty += 1
            if empty >= 2:
                break
            continue
        empty = 0
        killed += sum(kill_process(pid, signal.SIGKILL) for pid in pids)
        time.sleep(0.01)  # let the kernel tear them down before the next look (one may be forking)
    return killed


def main(conn: Any) -> None:
    """The reaper on a ``multiprocessing`` connection (``conn.recv()`` gives a message's words)."""
    serve(conn.recv)


def main_fd(fd: int) -> None:
    """The reaper on the read end of an OS pipe, one message per line: how the pool starts it
    (``python -I -S pool_reaper.py FD``, in a session of its own)."""
    stream = os.fdopen(fd, "r")

    def recv() -> List[str]:
        line = stream.readline()
        if not line:
            raise EOFError
        return line.split()

    serve(recv)


def serve(recv: Callable[[], Sequence[Any]]) -> None:
    """Follow the parent's pools from ``recv`` until it ends (the parent died or exited), then
    SIGKILL each worker of a pool still running, its group, and every process marked with that
    pool's token. Messages: ``pool TOKEN`` (a pool starts), ``worker TOKEN PID`` (one of its
    workers, just spawned), ``end TOKEN`` (the pool is over and the parent ended it itself)."""
    leave_group()  # already done where the pool started it in a session of its own
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the parent to act on
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a group's SIGTERM: the pipe says what to do
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a closed terminal, likewise
    pools: Dict[str, Set[int]] = {}
    while True:
        try:
            words = [str(w) for w in recv()]
        except (EOFError, OSError):
            break  # the parent is gone
        try:
            if words[0] == "pool":
                pools.setdefault(words[1], set())
            elif words[0] == "worker":
                pools.setdefault(words[1], set()).add(int(words[2]))
            elif words[0] == "end":
                pools.pop(words[1], None)
        except (IndexError, ValueError):
            continue  # not a message of ours
    for workers in pools.values():
        for pid in workers:
            # A worker leads a group named by its pid once it runs; one killed before it got
            # there has started nothing.
            kill_process(pid, signal.SIGKILL)
            kill_group(pid, signal.SIGKILL)
    kill_marked(list(pools))


if __name__ == "__main__":  # started by the pool as a script: standard library only, quick to start
    main_fd(int(sys.argv[1]))
