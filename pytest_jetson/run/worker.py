"""One pool worker: the code a spawned process runs.

The parent (``pool_procs``) starts it with the ``spawn`` method, so it begins in a fresh
interpreter: no CUDA context, no threads or locks inherited from a forked parent. Its life:

1. send its output (file descriptors 1 and 2, so C libraries' too) to a log file the parent
   shows when something goes wrong; a segfault writes the Python traceback there (faulthandler);
2. open its engine (build or load from the shared cache): not timed;
3. meet the other workers at the *loaded* barrier, so warm-ups run under the same contention;
4. warm up (the harness), meet at the *start* barrier, sleep until the window's common start
   time, measure the window;
5. send the Measurement back (pickled by the pipe) and exit at once.

Every message to the parent is ``(kind, payload)`` on the worker's pipe: ``alive``, ``loaded``,
``ready``, ``started``, ``result``, ``error``, ``aborted``. The barriers are the parent's (``loaded``
and ``ready`` say the worker got there): the worker waits on the same pipe for ``("go", start)``,
or ``("abort", None)`` when a sibling failed. Before anything else the worker makes itself the
leader of its own process group and asks the kernel to kill it when its parent dies
(``pool_reaper.bind_to_parent``), so the pool can end it with everything it started, and no
worker outlives a parent that was killed, even one hung in native code. It ignores SIGINT (the
parent alone decides when to stop); where the kernel cannot bind it (not Linux) a thread watches
the parent instead.

A worker that sent its result ends with ``os._exit`` once its engine is closed, the ``atexit``
functions ran and its output is flushed: tearing down an interpreter's modules one by one
costs a worker more than its whole window at the pool's shortest, and nothing is left to keep.
"""

import atexit
import faulthandler
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from typing import Any, Callable, Dict

from ..engines import open_engine
from ..engines.backends import import_reference
from ..errors import ConfigError, JetsonError
from .pool_reaper import bind_to_parent

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

#: Exit status of a worker that stopped because a sibling failed (broken barrier).
EXIT_ABORTED = 3
EXIT_ERROR = 1
EXIT_ORPHANED = 4

#: When this worker's timed window started (perf_counter), None before it: engines that want to
#: know (the pool's fakes) read ``window_started()``.
_window_t0 = None


def window_started() -> bool:
    return _window_t0 is not None


def wait_for_go(conn: Any, timeout: float) -> Any:
    """Wait at one of the pool's barriers: the parent's ``go`` (its value: when the window starts,
    or None). A sibling failed, the parent went, or the time ran out: ``BrokenBarrierError``."""
    try:
        if conn.poll(timeout):
            kind, value = conn.recv()
            if kind == "go":
                return value
    except (EOFError, OSError):
        pass
    raise threading.BrokenBarrierError


def _sleep_until(t: float) -> None:
    while True:
        left = t - time.perf_counter()
        if left <= 0:
            return
        time.sleep(left)


def _redirect_output(log_path: str) -> Any:
    log = open(log_path, "a", buffering=1, encoding="utf-8", errors="replace")
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = log
    sys.stderr = log
    faulthandler.enable(file=log, all_threads=True)
    return log


def _watch_parent() -> None:
    """Exit when the parent is gone (killed with SIGKILL, say): no worker outlives its pool."""
    parent = multiprocessing.parent_process()
    if parent is None:  # pragma: no cover - always set in a spawned child
        return

    def watch() -> None:
        parent.join()
        os._exit(EXIT_ORPHANED)

    threading.Thread(target=watch, name="pool-parent-watch", daemon=True).start()


def _exit_now(code: int) -> None:
    """End the process without tearing the interpreter down: ``atexit`` functions first (a
    library's own clean-up), then Python's and C's buffered output to the log."""
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        try:
            import ctypes

            ctypes.CDLL(None).fflush(None)
        except Exception:  # no C library to name (Windows): nothing of C's buffered there
            pass
        os._exit(code)


def _pgrp() -> Any:
    try:
        return os.getpgrp()
    except AttributeError:  # Windows
        return None


def resolve_factory(factory: Any) -> Callable[..., Any]:
    """``None`` -> ``open_engine``; ``"pkg.module:function"`` -> that function; a callable as is."""
    if factory is None:
        return open_engine
    if callable(factory):
        return factory
    _, _, attr = str(factory).partition(":")
    if not attr:
        raise ConfigError(
            f"engine_factory={factory!r}: write it as 'package.module:function'"
        )
    return import_reference(str(factory))


def open_worker_engine(spec: Any, run: Dict[str, Any]) -> Any:
    """The worker's engine: ``spec.engine_factory`` or ``open_engine`` with the spec's options
    (``threads``, onnxruntime's intra-op threads, is one of them; the pool sets 1)."""
    factory = resolve_factory(spec.engine_factory)
    kwargs = dict(backend=run["backend"], device=run["device"], seed=run["seed"],
                  processes=run["processes"])
    return factory(spec.model, **kwargs, **dict(spec.options))


def model_file(engine: Any) -> Dict[str, Any]:
    """What the parent hashes for the fingerprint's ``model_sha256`` (``cache.model_digest``
    reads the engine's ``path``, else its ``model`` where that names a file): hashed there, once
    per file for every worker and pool of the session, and without the engine cache's imports
    here."""
    path = getattr(engine, "path", None)
    return {"path": None if path is None else os.fspath(path), "model": getattr(engine, "model", None)}


def _is_user_error(exc: BaseException) -> bool:
    """A JetsonError says what is wrong and how to fix it: its traceback would only be noise."""
    return isinstance(exc, JetsonError)


def _peak_rss() -> Any:
    if resource is None:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes
    return int(peak if sys.platform == "darwin" else peak * 1024)


def main(spec: Any, run: Dict[str, Any], conn: Any, log_path: str) -> None:
    """Entry point of a worker process (``multiprocessing`` target)."""
    bound = bind_to_parent(run.get("parent_pid"), EXIT_ORPHANED)
    t_main = time.perf_counter()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ["PYTEST_JETSON_POOL_WORKER"] = str(spec.index)
    _redirect_output(log_path)
    if not bound:
        _watch_parent()
    conn.send(("alive", {"t_main": t_main, "pid": os.getpid(), "pgid": _pgrp()}))
    deadline = t_main + float(run["deadline_s"])
    phase = "start-up"

    def remaining() -> float:
        return max(0.001, deadline - time.perf_counter())

    try:
        # here, after the output goes to the log with faulthandler on, a failure is this worker's
        # reported error (not a death before its code ran) and its cost stays out of the
        # reported spawn_s; before the engine, so that it is not every worker's first act once
        # they all left the first barrier
        from .harness import layer_profile, measure

        phase = "load"
        t_load = time.perf_counter()
        engine = open_worker_engine(spec, run)
        t_loaded = time.perf_counter()
        conn.send(("loaded", {"t_main": t_main, "t_loaded": t_loaded, "load_s": t_loaded - t_load}))
        phase = "loaded barrier"
        wait_for_go(conn, remaining())

        started: Dict[str, float] = {}

        def before_window() -> None:
            global _window_t0
            conn.send(("ready", {}))
            start_at = wait_for_go(conn, remaining())
            if start_at is not None:
                # every worker sleeps until the same moment: the window starts together even
                # though the parent's go wakes them one after the other
                _sleep_until(start_at)
            started["t0"] = _window_t0 = time.perf_counter()
            conn.send(("started", {"t0": started["t0"]}))

        phase = "warm-up"
        try:
            measurement = measure(
                engine, duration=run["duration"], warmup=run["warmup"], before_window=before_window,
                profile=False,
            )
        finally:
            phase = "window" if started else phase
        t_end = time.perf_counter()
        # profiled once the window is over, so the pool's window does not take the pass in
        measurement.profile = layer_profile(engine, measurement.batch)
        payload = {
            # the Measurement itself, not its dict: the dict's summary (percentiles) would need
            # numpy here, and the parent computes it anyway
            "measurement": measurement,
            "model_file": model_file(engine),
            "t0": started.get("t0"),
            "t_end": t_end,
            "peak_rss": _peak_rss(),
        }
        conn.send(("result", payload))
        try:
            engine.close()
        except Exception:  # closing is best effort; the result is already sent
            traceback.print_exc()
    except threading.BrokenBarrierError:
        # a sibling failed and the parent broke the barriers: nothing of ours to report
        try:
            conn.send(("aborted", {"phase": phase}))
        except Exception:
            pass
        finally:
            sys.stdout.flush()
            os._exit(EXIT_ABORTED)
    except BaseException as exc:  # noqa: B902 - everything goes back to the parent
        # the traceback goes to the parent in the message, not to the log: the log's tail is
        # kept for what the engine printed before it failed
        tb = traceback.format_exc()
        try:
            conn.send(("error", {
                "phase": phase, "type": type(exc).__name__, "message": str(exc), "traceback": tb,
                "expected": _is_user_error(exc),
            }))
        except Exception:
            pass
        sys.stderr.flush()
        os._exit(EXIT_ERROR)
    conn.close()
    _exit_now(0)
