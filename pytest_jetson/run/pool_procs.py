"""The parent side of a real pool: spawn the workers, watch them, collect or clean up.

Every worker is a ``spawn``-ed process (never ``fork``: a parent that initialised CUDA cannot
fork safely, and a forked child inherits other threads' held locks). The parent never blocks on a
barrier itself: it waits on the workers' pipes and process sentinels together, so a worker that
raises, dies from a signal or hangs is noticed at once, the barriers are broken for the others,
and every process is terminated, then killed, before ``run`` returns or raises, on
KeyboardInterrupt too.

Each worker leads its own process group and is bound to the parent's death by the kernel
(``pool_reaper``); stopping the pool ends each worker's whole group, so a process a worker started
goes with it. A reaper process, in a session of its own, ends the groups if the parent itself is
killed, alone or with its whole process group: one per parent, started with its first pool and
told of every later one. Every worker is spawned with the pool's mark in its environment, so
helpers it detaches from its group are found and ended too.

The pool's two barriers (every engine open; every warm-up done) are the parent's: a worker says
it got there on its pipe and waits for the parent's ``go``, which the parent sends each worker once
all have said so; the second ``go`` carries the time the window starts (a moment ahead, so the
workers' wake-ups, one after the other, all land before it).
"""

import atexit
import contextlib
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types
import uuid
from dataclasses import dataclass, field
from multiprocessing import spawn
from multiprocessing.connection import wait
from typing import Any, Dict, Iterator, List, Optional

from ..errors import WorkerError
from . import pool_reaper, worker

#: Seconds a worker gets, beyond warm-up plus window, to report its result before it counts as hung.
MIN_GRACE_S = 5.0
#: Seconds between SIGTERM and SIGKILL when stopping workers.
TERMINATE_WAIT_S = 2.0
#: Characters of a worker's output quoted in an error.
TAIL_CHARS = 2000
#: How far ahead of the second ``go`` the window starts: time for N wake-ups.
START_MARGIN_S = 0.002
START_MARGIN_PER_WORKER_S = 0.001


@dataclass
class WorkerState:
    spec: Any
    process: Any = None
    conn: Any = None
    log_path: str = ""
    t_spawn: float = 0.0
    alive: Optional[Dict[str, Any]] = None
    loaded: Optional[Dict[str, Any]] = None
    ready: Optional[Dict[str, Any]] = None
    started: Optional[Dict[str, Any]] = None
    result: Optional[Dict[str, Any]] = None
    error: Optional[Dict[str, Any]] = None
    aborted: bool = False
    extra: Dict[str, Any] = field(default_factory=dict)

    def tail(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - TAIL_CHARS))
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        return text.strip()


def describe_exit(exitcode: Optional[int], stopped_by_pool: Optional[str] = None) -> str:
    """A process's exit status in words: 'exit code 1', 'killed by SIGSEGV (signal 11)'.
    ``stopped_by_pool``: why the pool itself signalled it, if it did (then a SIGKILL or SIGTERM
    is the pool's, not the OOM killer's)."""
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        words = f"killed by {name} (signal {-exitcode})"
        if stopped_by_pool and name in ("SIGKILL", "SIGTERM"):
            words += f"; the pool stopped it: {stopped_by_pool}"
        elif name == "SIGKILL":
            words += "; the kernel's OOM killer sends SIGKILL when memory runs out"
        return words
    return f"exit code {exitcode}"


class Reaper:
    """This process's reaper (``pool_reaper``): ``python -I -S pool_reaper.py`` in a session of its
    own (a signal to this process's whole group does not reach it), reading the read end of a pipe
    whose only write end this process keeps (its death closes the pipe). Started with the first
    pool and shared by every later one: a pool costs it a line at its start, one per worker and
    one at its end."""

    def __init__(self) -> None:
        read, write = os.pipe()
        try:
            self.process = subprocess.Popen(
                [spawn.get_executable(), "-I", "-S", pool_reaper.__file__, str(read)],
                pass_fds=(read,), start_new_session=True, stdin=subprocess.DEVNULL)
        except OSError:
            os.close(write)
            raise
        finally:
            os.close(read)
        self.fd: Optional[int] = write
        self.pid = os.getpid()

    def alive(self) -> bool:
        return self.fd is not None and self.pid == os.getpid() and self.process.poll() is None

    def tell(self, *words: str) -> bool:
        """One message (a line under the pipe's atomic size: pools in threads do not mix theirs)."""
        if self.fd is None:
            return False
        try:
            os.write(self.fd, (" ".join(words) + "\n").encode())
            return True
        except OSError:  # it died: the next pool starts another
            return False

    def close(self, wait: float = 0.0) -> None:
        """Close this process's end (the reaper then exits, having no pool to end), and reap it."""
        fd, self.fd = self.fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
        if wait and self.pid == os.getpid():
            try:
                self.process.wait(wait)
            except subprocess.TimeoutExpired:
                pass


_reaper: Optional[Reaper] = None
_reaper_lock = threading.Lock()
#: reapers a forked child inherited: kept, so that it never waits for (or warns of) its parent's
_not_ours: List[Reaper] = []


def session_reaper() -> Optional[Reaper]:
    """This process's reaper, started now if it has none (or its reaper died); None where process
    groups and death signals are not POSIX's."""
    global _reaper
    if os.name != "posix":
        return None
    with _reaper_lock:
        if _reaper is not None and _reaper.alive():
            return _reaper
        if _reaper is not None:
            _reaper.close()
        _reaper = Reaper()
        return _reaper


def _close_reaper() -> None:
    if _reaper is not None:
        _reaper.close(wait=TERMINATE_WAIT_S)


def _forget_reaper() -> None:
    """In a forked child: the reaper is the parent's; its end of the pipe goes (else the reaper
    would wait for this child too before it saw the parent die)."""
    global _reaper, _reaper_lock
    _reaper_lock = threading.Lock()
    if _reaper is not None:
        _not_ours.append(_reaper)
        _reaper.close()
        _reaper = None


atexit.register(_close_reaper)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_reaper)


class ProcessPool:
    """Runs one pool of ``WorkerSpec``s to completion; ``run()`` returns the per-worker results
    (dicts from ``worker.main``) in worker order, or raises ``WorkerError``."""

    def __init__(self, specs: List[Any], *, backend: str, device: Any, duration: float,
                 warmup: Any, deadline: float, seed: int,
                 on_window_start: Any = None, on_window_end: Any = None) -> None:
        self.specs = specs
        self.backend = backend
        self.device = device
        self.duration = duration
        self.warmup = warmup
        self.deadline = deadline
        self.seed = seed
        self.on_window_start = on_window_start
        self.on_window_end = on_window_end
        self.workers: List[WorkerState] = []
        self._tmpdir: Optional[str] = None
        self._reaper: Optional[Reaper] = None
        self._window_set = False
        #: marks every process the workers start (``pool_reaper.POOL_ENV``), found and ended at the end
        self.token = f"{os.getpid()}-{uuid.uuid4().hex}"

    # -- lifecycle -----------------------------------------------------------------------------
    def run(self) -> List[WorkerState]:
        ctx = multiprocessing.get_context("spawn")
        self._tmpdir = tempfile.mkdtemp(prefix="pytest-jetson-pool-")
        self._reaper = session_reaper()
        try:
            self._tell_reaper("pool", self.token)
            self._start(ctx)
            self._supervise()
            return self.workers
        finally:
            try:
                self._stop_all()
            finally:
                self._tell_reaper("end", self.token)
                shutil.rmtree(self._tmpdir, ignore_errors=True)

    def _tell_reaper(self, *words: str) -> None:
        if self._reaper is not None:
            self._reaper.tell(*words)

    def _start(self, ctx: Any) -> None:
        n = len(self.specs)
        if os.name == "posix":
            # spawn starts multiprocessing's resource tracker with the first process if it is not
            # running: here, unmarked, or it would carry this pool's mark and be swept at the end
            from multiprocessing import resource_tracker

            resource_tracker.ensure_running()
        for spec in self.specs:
            state = WorkerState(spec=spec, log_path=os.path.join(self._tmpdir, f"worker-{spec.index}.log"))
            run = {
                "backend": self.backend, "device": self.device, "duration": self.duration,
                "warmup": self.warmup, "processes": n, "deadline_s": self.deadline,
                "seed": worker_seed(self.seed, spec.index), "parent_pid": os.getpid(),
            }
            # both ways: the worker reports on it, and waits on it for the parent's go
            conn, child_conn = ctx.Pipe(duplex=True)
            process = ctx.Process(
                target=worker.main, name=f"pytest-jetson-pool-{spec.index}",
                args=(spec, run, child_conn, state.log_path), daemon=True,
            )
            state.process, state.conn = process, conn
            self.workers.append(state)
            state.t_spawn = time.perf_counter()
            with _lean_main(), _marked(self.token):
                process.start()
            state.extra["pid"] = process.pid
            self._tell_reaper("worker", self.token, str(process.pid))
            # the child holds its own copy; closing ours lets recv() see EOF when it dies
            child_conn.close()

    def _supervise(self) -> None:
        t_begin = time.perf_counter()
        hard_deadline = t_begin + self.deadline
        window_deadline: Optional[float] = None
        window_reported = False
        while True:
            pending = [w for w in self.workers if w.result is None]
            if not pending:
                if self.on_window_end is not None:
                    self.on_window_end()
                return
            now = time.perf_counter()
            limit = hard_deadline if window_deadline is None else min(hard_deadline, window_deadline)
            if now >= limit:
                self._fail_hung(pending, now - t_begin, window_deadline is not None and now >= window_deadline)
            self._listen(pending, min(limit - now, 0.5))
            if window_deadline is None and all(w.loaded is not None for w in self.workers):
                # everyone is past the slow part (engine build/load): from here the run is bounded
                window_deadline = time.perf_counter() + self._window_budget()
                self._go(None)
            if not self._window_set and all(w.ready is not None for w in self.workers):
                self._window_set = True
                n = len(self.workers)
                self._go(time.perf_counter() + START_MARGIN_S + START_MARGIN_PER_WORKER_S * n)
            if not window_reported and all(w.started is not None for w in self.workers):
                window_reported = True
                if self.on_window_start is not None:
                    self.on_window_start()

    def _listen(self, pending: List[WorkerState], timeout: float) -> None:
        """Wait up to ``timeout`` on the pending workers' pipes and process sentinels together;
        read what came, and fail the pool on a worker that reported an error or died."""
        handles: List[Any] = []
        for w in pending:
            if w.conn is not None:
                handles.append(w.conn)
            handles.append(w.process.sentinel)
        ready = wait(handles, timeout=timeout)
        for w in pending:
            if w.conn is not None and w.conn in ready:
                self._receive(w)
        for w in pending:
            if w.process.sentinel in ready and w.result is None:
                self._judge_exit(w)
        for w in self.workers:
            if w.error is not None:
                self._fail(w)

    def _judge_exit(self, w: WorkerState) -> None:
        # the pipe may still hold its last words: read them before judging the exit
        while w.conn is not None and w.conn.poll():
            self._receive(w)
        if w.result is None:
            w.process.join(1.0)
            self._fail(w)

    def _window_budget(self) -> float:
        warm = self.warmup if isinstance(self.warmup, (int, float)) else 0.0
        busy = float(warm) + float(self.duration)
        return busy + max(MIN_GRACE_S, busy)

    def _receive(self, w: WorkerState) -> None:
        try:
            kind, payload = w.conn.recv()
        except (EOFError, OSError):
            w.conn = None
            return
        if kind == "alive":
            w.alive = payload
            pgid = payload.get("pgid")
            if pgid is not None and pgid == payload.get("pid"):
                # the worker leads its group: from now on the group is what gets stopped
                w.extra["pgid"] = int(pgid)
        elif kind == "loaded":
            w.loaded = payload
        elif kind == "ready":
            w.ready = payload
        elif kind == "started":
            w.started = payload
        elif kind == "result":
            w.result = payload
        elif kind == "error":
            w.error = payload
        elif kind == "aborted":
            w.aborted = True

    def _go(self, start_at: Optional[float]) -> None:
        """Release every worker waiting at a barrier: ``start_at`` None after the engines opened,
        else when the window starts (perf_counter seconds, the same clock in every process)."""
        for w in self.workers:
            self._send(w, ("go", start_at))

    @staticmethod
    def _send(w: WorkerState, message: Any) -> None:
        if w.conn is not None:
            try:
                w.conn.send(message)
            except (OSError, ValueError):  # it is gone; its exit is judged where it is noticed
                pass

    # -- failure -------------------------------------------------------------------------------
    def _break_barriers(self) -> None:
        """Every worker still waiting for a go stops instead (``aborted``)."""
        for w in self.workers:
            if w.result is None:
                self._send(w, ("abort", None))

    def _fail(self, w: WorkerState) -> None:
        self._break_barriers()
        if w.error is not None:
            err = w.error
            phase = err.get("phase", "")
            what = "could not open its engine" if phase == "load" else (
                "raised during the measurement window" if phase == "window" else f"raised during {phase}")
            # the exit code follows the report by a moment; wait for it briefly
            w.process.join(TERMINATE_WAIT_S)
            head = (
                f"{self._who(w)} {what}: {err.get('type')}: {err.get('message')} "
                f"[{describe_exit(w.process.exitcode)}]"
            )
            tb = "" if err.get("expected") else "\n".join(err.get("traceback", "").strip().splitlines()[-12:])
            detail = f"\nworker traceback (last lines):\n{tb}" if tb else ""
        else:
            head = f"{self._who(w)} died {self._phase_of(w)}: {describe_exit(w.process.exitcode)}"
            detail = ""
        raise WorkerError(head + detail + self._output_of(w) + self._others(w))

    def _fail_hung(self, pending: List[WorkerState], elapsed: float, in_window: bool) -> None:
        self._break_barriers()
        # the laggard is the first worker not past the furthest phase any worker reached
        def progress(w: WorkerState) -> int:
            return (w.loaded is not None) + (w.started is not None) + (w.result is not None)

        w = min(pending, key=progress)
        limit = (
            f"{self._window_budget():.1f} s after every engine was loaded (warm-up + window + grace)"
            if in_window else f"the pool's deadline of {self.deadline:.1f} s"
        )
        self._terminate([w])
        fix = (" Pass a longer deadline= if the engine build is just slow." if w.loaded is None
               else "")
        why = f"no result within {limit}"
        raise WorkerError(
            f"{self._who(w)} hung {self._phase_of(w)}: {why}; stopped it "
            f"({describe_exit(w.process.exitcode, why)}).{fix}" + self._output_of(w) + self._others(w)
        )

    def _who(self, w: WorkerState) -> str:
        spec = w.spec
        return (f"pool worker {spec.index} of {len(self.workers)} (model {spec.model!r}, "
                f"{spec.precision}, batch {spec.batch})")

    @staticmethod
    def _phase_of(w: WorkerState) -> str:
        if w.alive is None:
            return ("while starting, before the worker code ran (spawn re-imports the parent's "
                    "__main__ and unpickles the workload: guard a script's pool with "
                    "`if __name__ == '__main__':` and use importable engine factories; the "
                    "error went to the parent's stderr)")
        if w.loaded is None:
            return "while opening its engine"
        if w.started is None:
            return "during warm-up, before the window"
        return "during the measurement window"

    @staticmethod
    def _output_of(w: WorkerState) -> str:
        tail = w.tail()
        if not tail:
            return "\nworker output: (none)"
        return f"\nworker output (last {len(tail)} characters):\n{tail}"

    def _others(self, failed: WorkerState) -> str:
        others = [w for w in self.workers if w is not failed]
        if not others:
            return ""
        return f"\nthe other {len(others)} worker(s) were stopped."

    def _terminate(self, workers: List[WorkerState]) -> None:
        for w in workers:
            if w.process is not None and w.process.is_alive():
                try:
                    if not ("pgid" in w.extra and pool_reaper.kill_group(w.extra["pgid"], signal.SIGTERM)):
                        w.process.terminate()
                except Exception:
                    pass
        workers = [w for w in workers if w.process is not None and w.process.pid is not None]
        end = time.perf_counter() + TERMINATE_WAIT_S
        for w in workers:
            w.process.join(max(0.0, end - time.perf_counter()))
        for w in workers:
            if w.process.is_alive():
                if not ("pgid" in w.extra and pool_reaper.kill_group(w.extra["pgid"], signal.SIGKILL)):
                    w.process.kill()
                w.process.join(TERMINATE_WAIT_S)

    def _end_groups(self) -> None:
        """SIGKILL what is left of each worker's process group: processes a worker started (its
        own children) outlive it otherwise, whether it exited, raised or was killed."""
        for w in self.workers:
            if "pgid" in w.extra:
                pool_reaper.kill_group(w.extra["pgid"], signal.SIGKILL)
        # helpers a worker detached (a session of their own, a double fork) are out of its group
        pool_reaper.kill_marked(self.token)

    def _stop_all(self) -> None:
        """Called on every way out: success, WorkerError, KeyboardInterrupt. Idempotent."""
        if any(w.result is None for w in self.workers):
            self._break_barriers()
        # workers that sent their result exit by themselves within moments
        end = time.perf_counter() + 1.0
        for w in self.workers:
            if w.result is not None and w.process is not None and w.process.pid is not None:
                w.process.join(max(0.0, end - time.perf_counter()))
        self._terminate(self.workers)
        self._end_groups()
        for w in self.workers:
            if w.conn is not None:
                try:
                    w.conn.close()
                except Exception:
                    pass
            if w.process is not None:
                try:
                    w.process.close()
                except Exception:
                    pass


@contextlib.contextmanager
def _marked(token: str) -> Iterator[None]:
    """Mark the environment a worker is spawned with (``pool_reaper.POOL_ENV``): every process it
    starts inherits the mark, wherever it detaches to. Only while it is spawned: this process,
    its reaper and what it starts later stay unmarked."""
    before = os.environ.get(pool_reaper.POOL_ENV)
    os.environ[pool_reaper.POOL_ENV] = token
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(pool_reaper.POOL_ENV, None)
        else:
            os.environ[pool_reaper.POOL_ENV] = before


@contextlib.contextmanager
def _lean_main() -> Iterator[None]:
    """Spawn without re-importing pytest in every worker.

    ``spawn`` makes a child import the parent's ``__main__`` (as ``__mp_main__``) so objects
    pickled from it resolve. Under pytest that main is pytest's own, and importing pytest costs a
    worker a few hundred milliseconds of start-up; nothing a worker receives lives there (its target
    and the engine factories are importable by name), so we hide it while the child is started.
    The same for a main that is no file (``python -``). Any other ``__main__`` (a user's script)
    is kept."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None) or ""
    file = getattr(main, "__file__", None) or ""
    path = os.path.basename(file)
    is_pytest = name.split(".")[0] in ("pytest", "_pytest", "py") or path in ("pytest", "py.test", "pytest.exe")
    # a main read from stdin ('<stdin>') cannot be re-imported at all: the child would die
    unreadable = bool(file) and not name and not os.path.isfile(file)
    if main is None or not (is_pytest or unreadable):
        yield
        return
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def worker_seed(seed: int, index: int) -> int:
    """A worker's own seed: distinct per worker, reproducible per pool seed."""
    import numpy as np

    return int(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, index]).generate_state(1)[0])
