"""Named stages of a measured function: ``perf.stage(name)``.

Inside a function measured by ``perf.measure(fn)``::

    with perf.stage("postprocess"):          # a context manager
        boxes = decode(outputs)

    @perf.stage("preprocess")                # or a decorator
    def preprocess(frame): ...

Pipeline code outside a test uses the same object as ``pytest_jetson.stage(name)``; outside a
measurement a stage does nothing but check its name (a few hundred nanoseconds).

What a stage measures: per call of the function, the time spent inside the stage, summed over
its entries in that call, on the measurement's clock (virtual on the simulated board: simulated
engine time plus the host's Python time scaled to the board's CPU; ``time.perf_counter``
elsewhere). ``Measurement.stages[name]`` is a Measurement whose latencies are that time for each
call where the stage ran (calls where it did not run are left out; ``extra["calls"]`` counts the
calls where it ran, ``extra["of_calls"]`` all measured calls). Stages may nest under other names
(the outer one includes the inner); not under their own.

On a board each measurement (``measure_range``: ``MEASURE_RANGE``) and each stage is also an NVTX
range; a stage's range has its name (when the ``nvtx`` package is
installed; without it, no ranges), so an Nsight Systems trace shows the same names, and its end
first synchronises the device (``run.gpu_sync``) so GPU work the stage enqueued asynchronously
counts in the stage: ``sync=`` replaces that (a callable, e.g. ``stream.synchronize``; False:
none; True: also off a board).

Errors, each naming the stage: a name that is not a non-empty string; a stage entered while it
is open (nested under its own name, or the same object entered again); a stage still open when
the measured function returns. A stage left by an exception lets the exception go on unchanged,
with a note naming the stage; the measurement is then discarded.
"""

import contextlib
import contextvars
import functools
import importlib
import importlib.util
import time
from array import array
from bisect import bisect_left, bisect_right
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

from ..errors import ConfigError
from .gpu_sync import choose
from .measurement import Samples

_UNSET = object()

#: The stage log of the measurement running in this context (None: stages do nothing).
ACTIVE: "contextvars.ContextVar[Optional[StageLog]]" = contextvars.ContextVar("pytest_jetson_stages", default=None)
#: Where stage spans go while a trace is recorded (``--jetson-trace``): (name, start, end) on the
#: measurement's clock. None, the default: none are kept (a trace is opt-in and costs nothing off).
SPANS: "contextvars.ContextVar[Optional[List[Tuple[str, float, float]]]]" = contextvars.ContextVar(
    "pytest_jetson_stage_spans", default=None)

_NVTX: List[Any] = []  # [module or None], looked up once per process


def _nvtx() -> Any:
    if not _NVTX:
        module = None
        if importlib.util.find_spec("nvtx") is not None:
            module = importlib.import_module("nvtx")
        _NVTX.append(module)
    return _NVTX[0]


#: The NVTX range around each ``perf.measure`` of a test re-run under Nsight Systems: its index
#: in the test's measurements and what it measured (``report.trace.gpu_metrics`` reads it back)
MEASURE_RANGE = "perf.measure {index}: {what}"


@contextlib.contextmanager
def measure_range(index: int, what: str, board: bool) -> Iterator[None]:
    """An NVTX range named ``MEASURE_RANGE`` around a measurement on a board, when the nvtx
    package is installed (a push and a pop outside the timed loop); nothing elsewhere."""
    nvtx = _nvtx() if board else None
    if nvtx is None:
        yield
        return
    nvtx.push_range(message=MEASURE_RANGE.format(index=index, what=what))
    try:
        yield
    finally:
        nvtx.pop_range()


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"perf.stage({name!r}): a stage's name must be a non-empty string, such as "
                          "perf.stage('postprocess')")
    return name


def add_note(exc: BaseException, note: str) -> None:
    """PEP 678's note, also before Python 3.11 (pytest shows ``__notes__`` there too)."""
    add = getattr(exc, "add_note", None)
    if add is not None:
        add(note)
        return
    try:
        exc.__notes__ = list(getattr(exc, "__notes__", None) or []) + [note]  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        pass  # an exception that takes no attributes keeps its own message


class StageLog:
    """The stages of one measurement: time in each during the current call, and per call."""

    def __init__(self, clock: Any, board: bool = False) -> None:
        # the wall clock read directly: a stage's own cost is two reads and a little bookkeeping
        self.now = time.perf_counter if getattr(clock, "kind", None) == "wall" else clock.now
        hosting = getattr(clock, "kind", None) == "virtual" and hasattr(clock, "checkpoint")
        self.checkpoint: Optional[Callable[[], None]] = clock.checkpoint if hosting else None
        self.resume: Optional[Callable[[], None]] = clock.resume if hosting else None
        self.board = bool(board)
        self.open: Set[str] = set()
        self.current: Dict[str, float] = {}
        #: per stage: the indices of the calls it ran in and its seconds in each, as C arrays
        #: (8 bytes a value: a dict and a tuple per call held a million-call pipeline in 300 MB)
        self.calls: Dict[str, array] = {}
        self.seconds: Dict[str, array] = {}
        #: whether a stage was entered since the last ``end_call``
        self.dirty = False
        self._default_sync: Any = _UNSET  # chosen on first use: the pipeline may import torch late
        self.nvtx = _nvtx() if self.board else None
        self.spans = SPANS.get()

    def sync_for(self, sync: Any) -> Optional[Callable[[], Any]]:
        if sync is None:
            found = self._default_sync
            if found is _UNSET:
                found = choose(None, self.board)
                # on a board, looked for again until a GPU library is in use (it may start late)
                self._default_sync = _UNSET if (found is None and self.board) else found
            return found
        return choose(sync, self.board)

    def enter(self, stage: "Stage") -> None:
        if self.checkpoint is not None:
            self.checkpoint()
        name = stage.name
        if name in self.open:
            raise ConfigError(f"perf.stage({name!r}) entered while it is already open (nested under its "
                              "own name, or the same stage entered twice); close it first, or give the "
                              "inner one another name")
        self.open.add(name)
        self.dirty = True
        stage._log = self
        if self.nvtx is not None:
            self.nvtx.push_range(message=name)
        if self.resume is not None:
            self.resume()
        stage._t0 = self.now()

    def exit(self, stage: "Stage", exc: Optional[BaseException]) -> None:
        if exc is None:
            sync = stage.sync
            sync = self._default_sync if sync is None else sync
            if sync is not None:  # (a stage's own cost: the common case stays two checks)
                sync = self.sync_for(stage.sync)
                if sync is not None:
                    sync()
        if self.checkpoint is not None:
            self.checkpoint()
        t = self.now()
        name = stage.name
        self.open.discard(name)
        cur = self.current
        cur[name] = cur.get(name, 0.0) + (t - stage._t0)
        if self.spans is not None:
            self.spans.append((name, stage._t0, t))
        if self.nvtx is not None:
            self.nvtx.pop_range()
        if exc is not None:
            add_note(exc, f"raised inside perf.stage({name!r}); the measurement was discarded")
        if self.resume is not None:
            self.resume()

    def end_call(self, index: int) -> None:
        """The measured function's call ``index`` returned: keep its stage times."""
        self.dirty = False
        if self.open:
            names = ", ".join(repr(n) for n in sorted(self.open))
            self.open.clear()
            raise ConfigError(f"perf.stage({names}) was still open when the measured function returned; "
                              "use `with perf.stage(...):` or the decorator so every stage is closed")
        if self.current:
            for name, seconds in self.current.items():
                calls = self.calls.get(name)
                if calls is None:
                    calls = self.calls[name] = array("q")
                    self.seconds[name] = array("d")
                calls.append(index)
                self.seconds[name].append(seconds)
            self.current.clear()

    def per_stage(self, first: int, last: int) -> Dict[str, Samples]:
        """Each stage's times in the calls ``first`` .. ``last`` (inclusive), in call order (the
        calls' indices only grow, so the range is found by bisection)."""
        out: Dict[str, Samples] = {}
        for name, calls in self.calls.items():
            lo, hi = bisect_left(calls, first), bisect_right(calls, last)
            if hi > lo:
                out[name] = Samples(self.seconds[name][lo:hi])
        return out


class Stage:
    """``perf.stage(name)``: a context manager, and a decorator whose every call is the stage."""

    __slots__ = ("name", "sync", "_log", "_t0")

    def __init__(self, name: Any, sync: Any = None) -> None:
        self.name = check_name(name)
        if not (sync is None or isinstance(sync, bool) or callable(sync)):
            raise ConfigError(f"perf.stage({name!r}): sync={sync!r} must be a callable (e.g. "
                              "stream.synchronize), True, False or None")
        self.sync = sync
        self._log: Optional[StageLog] = None
        self._t0 = 0.0

    def __enter__(self) -> "Stage":
        log = ACTIVE.get()
        if log is not None:
            if self._log is not None:
                raise ConfigError(f"perf.stage({self.name!r}) entered while it is already open (the same "
                                  "stage object entered twice); close it first")
            log.enter(self)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        log = self._log
        if log is not None:
            self._log = None
            log.exit(self, exc)
        return False

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(fn):
            raise ConfigError(f"perf.stage({self.name!r}) decorates a function, not {type(fn).__name__}")
        name, sync = self.name, self.sync

        @functools.wraps(fn)
        def staged(*args: Any, **kwargs: Any) -> Any:
            with Stage(name, sync):
                return fn(*args, **kwargs)

        return staged

    def __repr__(self) -> str:
        return f"perf.stage({self.name!r})"


def stage(name: str, sync: Any = None) -> Stage:
    """A named stage of a measured function (see the module's documentation)."""
    return Stage(name, sync)

