"""A virtual clock: simulated time that advances only when the simulated device does work.

A simulated 10 s measurement advances this clock by 10 s in a few milliseconds of real time.
Every simulated engine, pool and telemetry source of one run shares one ``SimClock``. It is also
the one record of what runs when: engines and pools announce on it what they run (``announce``),
and a telemetry source on the same clock reads the board under whatever load is running,
whoever started it (``load_at``).

A measured function's own Python runs on the host, not on the simulated board. While one runs
(``host_begin`` .. ``host_end``), the host time it spends is measured with ``time.perf_counter``
and added to virtual time scaled to the board's CPU, at checkpoints: when control passes into a
simulated engine (its tick calls ``checkpoint`` first and ``resume`` after its own bookkeeping),
at ``perf.stage`` edges and when the call ends. Virtual time never goes back: a stretch of host
code is added in place, where it ran, and announced as a CPU load (the GPU idles meanwhile).
Host timing follows one thread of control: the measured function's (threads it starts run
alongside, uncounted).
"""

import bisect
import math
import threading
import time
from typing import Any, Callable, List, Optional

_perf_counter = time.perf_counter
#: CPU seconds of this process. A host stretch counts the smaller of its wall and CPU time: time
#: the host's scheduler gave to other jobs (a busy CI runner, a parallel test worker) is not the
#: function's work and must not read as slower code; threads numpy runs in parallel do not
#: count more than the wall time they took; a wait (``time.sleep``, I/O) is not work either.
_cpu_clock = time.process_time


class _Settled:
    """A mark in a clock's stretches: ``loads[:index]`` all end before ``t``. A stretch only
    grows at the present (``announce``'s owner moves its end while it runs), so one that ended
    before a time already asked about stays ended there."""

    __slots__ = ("index", "t")

    def __init__(self) -> None:
        self.index, self.t = 0, -math.inf

    def first(self, loads: List[List[Any]], i: int, t: float) -> int:
        """The first of ``loads[:i]`` that may still run at ``t`` (or later), moving the mark
        there; 0 for a time before the last asked about (looked at in full)."""
        if t < self.t:
            return 0
        lo = self.index
        while lo < i and loads[lo][1] < t:
            lo += 1
        self.index, self.t = lo, t
        return lo

    def inserted(self, i: int, end: float) -> None:
        """A stretch was inserted at ``i`` (announced after one that starts later)."""
        if i < self.index:
            self.index = self.index + 1 if end < self.t else i


class SimClock:
    """Monotonic virtual seconds since creation (``now``), moved forward by ``advance``."""

    kind = "virtual"

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()
        #: [start, end, load] of every busy stretch announced, in order of start.
        self.loads: List[List[Any]] = []
        self._starts: List[float] = []
        # load_edges and load_at are asked about ever later times (a telemetry source walks
        # forward), so the stretches that ended before the last time each was asked about are not
        # looked at again (one mark each: they walk apart)
        self._edges_from = _Settled()
        self._at_from = _Settled()
        # host timing of a measured function (None: off): board s per host s, the perf_counter
        # of the last checkpoint, the host s measured since host_begin, the load a host stretch
        # is announced as (given the last engine load), the last stretch announced and load seen
        self._host_scale: Optional[float] = None
        self._host_t0 = 0.0
        self._host_seconds = 0.0
        self._host_load: Optional[Callable[[Any], Any]] = None
        self._host_rec: Optional[List[Any]] = None
        self._resident: Any = None

    def now(self) -> float:
        return self._now

    def announce(self, load: Any, start: float, end: float) -> List[Any]:
        """Record that ``load`` (a Prediction) runs from ``start`` to ``end``; the returned record's
        end may be moved later by its owner while the stretch continues."""
        rec = [float(start), float(end), load]
        self._resident = load
        with self._lock:
            if self._starts and rec[0] < self._starts[-1]:  # a stretch announced after a later one
                i = bisect.bisect_right(self._starts, rec[0])
                self.loads.insert(i, rec)
                self._starts.insert(i, rec[0])
                self._edges_from.inserted(i, rec[1])
                self._at_from.inserted(i, rec[1])
            else:
                self.loads.append(rec)
                self._starts.append(rec[0])
        return rec

    def load_at(self, t: float) -> Optional[Any]:
        """The load announced as running at virtual time ``t`` (the latest to start), or None.

        Exact however far back the running stretch began (a whole window's load around
        thousands of paced calls), and linear over a session that asks about later times."""
        with self._lock:
            loads = self.loads
            i = bisect.bisect_right(self._starts, t)
            lo = self._at_from.first(loads, i, t)
            for k in range(i - 1, lo - 1, -1):
                if t < loads[k][1]:
                    return loads[k][2]
        return None

    def first_load(self) -> Optional[Any]:
        return self.loads[0][2] if self.loads else None

    def load_edges(self, a: float, b: float) -> List[float]:
        """Starts and ends of announced stretches strictly between ``a`` and ``b``.

        Linear over a session whose spans move forward: the stretches that ended before ``a``
        are skipped from then on (a span before the last one asked about scans them all)."""
        with self._lock:
            loads = self.loads
            i = bisect.bisect_right(self._starts, b)
            lo = self._edges_from.first(loads, i, a)
            out = set()
            for k in range(lo, i):
                start, end = loads[k][0], loads[k][1]
                if a < start < b:
                    out.add(start)
                if a < end < b:
                    out.add(end)
        return sorted(out)

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError(f"a clock cannot go back ({seconds} s)")
        with self._lock:
            self._now += seconds
            return self._now

    # -- host code of a measured function --------------------------------------------------------
    @property
    def hosting(self) -> bool:
        """Whether host time is being measured and added (between ``host_begin`` and ``host_end``)."""
        return self._host_scale is not None

    def host_begin(self, scale: float, load: Optional[Callable[[Any], Any]] = None) -> None:
        """Start measuring host time: each host second adds ``scale`` virtual seconds at the next
        checkpoint. ``load(resident)`` gives what a host stretch is announced as (``resident``:
        the last load announced before it, whose memory stays in use), None announces nothing."""
        self._host_load = load
        self._host_seconds = 0.0
        self._host_scale = float(scale)
        self._host_t0, self._host_c0 = _perf_counter(), _cpu_clock()

    def checkpoint(self) -> None:
        """Add the host time since the last checkpoint (scaled) to virtual time, in place."""
        scale = self._host_scale
        if scale is None:
            return
        pc, cpu = _perf_counter(), _cpu_clock()
        dt = min(pc - self._host_t0, cpu - self._host_c0)
        self._host_t0, self._host_c0 = pc, cpu
        if dt <= 0:
            return
        self._host_seconds += dt
        with self._lock:
            start = self._now
            self._now = end = start + dt * scale
        if self._host_load is None or end <= start:
            return  # (a stretch too short to move the clock is not one: nothing to announce)
        rec = self._host_rec
        if rec is not None and rec[1] == start:
            rec[1] = end  # host code right after host code: one stretch
            return
        resident = self._resident
        self._host_rec = self.announce(self._host_load(resident), start, end)
        self._resident = resident  # a host stretch does not free the engine's memory

    def resume(self) -> None:
        """Restart the host timer: what ran since the last checkpoint was not the function's own
        code (an engine's or a stage's bookkeeping)."""
        if self._host_scale is not None:
            self._host_t0, self._host_c0 = _perf_counter(), _cpu_clock()

    def host_end(self) -> float:
        """Stop measuring host time (after a last checkpoint); the host seconds measured."""
        self.checkpoint()
        self._host_scale = None
        return self._host_seconds

    def __repr__(self) -> str:
        return f"SimClock(now={self._now:.6f})"


class WallClock:
    """The host's monotonic clock, with the same interface as ``SimClock``."""

    kind = "wall"

    #: ``time.perf_counter`` itself: a timed loop reads it once per iteration, and a method
    #: around it would add a Python call (a third of a bare loop's own cost) to every one.
    now = staticmethod(_perf_counter)

    def advance(self, seconds: float) -> float:
        time.sleep(seconds)
        return _perf_counter()
