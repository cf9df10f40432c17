"""Load as a camera gives it: calls issued at an arrival rate, latency counted from arrival.

``rate=`` is read by ``parse_rate``::

    rate     := number                    calls per second (30 is 30/s)
              | number unit               "30/s", "30 fps", "30 Hz"
              | "poisson:" number unit    Poisson arrivals at that mean rate (MLPerf's Server scenario)
              | "fixed:" number unit      the same as without the prefix
    None                                  back to back (the default)

Fixed arrivals are ``t0 + k / rate`` (no drift accumulates); Poisson arrivals are separated by
exponential gaps drawn from a generator seeded by the run (``stream_seed``), so a run is
reproducible. ``deadline=`` (``parse_deadline``) is a duration, by default one period.

``arrival_loop`` is the timed loop at a rate, one server and a queue: a call starts at its
arrival or when the previous call ends, whichever is later, and its latency is its end minus its
arrival, so a call that runs late delays the ones queued behind it (Lindley's recursion: the
wait of call k+1 is max(0, wait_k + service_k - gap_k)). Before an arrival the loop waits: on a
virtual clock it advances the clock (nothing is announced, so a simulated GPU reads idle), on a
wall clock it sleeps and spins through the last millisecond.

``keep_up_problem`` and ``deadline_problem`` say, after a run, whether the rate could never be
kept up with or whether every call missed its deadline (see their docstrings for the criteria).
"""

import math
import random
import re
import time
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from ..errors import ConfigError, EngineError
from ..units import format_duration, parse_duration

KINDS = ("fixed", "poisson")
#: rate units as written -> factor to calls per second
RATE_UNITS = {"/s": 1.0, "fps": 1.0, "hz": 1.0, "/min": 1.0 / 60.0}
GRAMMAR = "rate='30/s' (fixed), rate='poisson:30/s' (Poisson arrivals), or a number of calls per second"

_RATE = re.compile(r"^\s*(?:(?P<kind>[a-z]+)\s*:)?\s*(?P<num>[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?|inf|nan)"
                   r"\s*(?P<unit>/\s*s|/\s*min|fps|hz)?\s*$", re.IGNORECASE)

#: the last stretch of a wall-clock wait is spun, not slept: sleep wakes up late by up to ~1 ms
SPIN_S = 0.001
#: fewest calls for the keep-up criterion to decide (fewer: no verdict on the load)
KEEP_UP_MIN_CALLS = 8
#: served rate below this share of the arrival rate (with waits growing throughout): overloaded
KEEP_UP_SHARE = 0.9


class RateError(EngineError):
    """A rate that the measured engine or function cannot serve, or a deadline it always misses."""


class BadRate(ConfigError):
    """``rate=`` or ``deadline=`` written wrongly."""


@dataclass(frozen=True)
class Arrivals:
    """When calls arrive: ``rate`` per second, ``kind`` "fixed" or "poisson"; ``text`` as given."""

    rate: float
    kind: str = "fixed"
    text: str = ""

    @property
    def period(self) -> float:
        return 1.0 / self.rate

    def schedule(self, t0: float, seed: int = 0) -> "Schedule":
        """The arrival times from ``t0`` on (the first at ``t0`` for fixed arrivals, one
        exponential gap after it for Poisson ones); ``seed`` draws the Poisson gaps."""
        return Schedule(self, t0, seed)



class Schedule:
    """An iterator of arrival times that can also ``peek`` at the next one (a loop that stops
    before an arrival leaves it for the next stretch of the same run)."""

    def __init__(self, arrivals: Arrivals, t0: float, seed: int) -> None:
        self.arrivals = arrivals
        self.t0 = float(t0)
        self._k = 0
        self._t = self.t0
        self._rng = random.Random(seed) if arrivals.kind == "poisson" else None
        self._next: Optional[float] = None

    def _draw(self) -> float:
        if self._rng is None:
            # t0 + k / rate for each k, not a running sum: no rounding drift over a long run
            t = self.t0 + self._k * self.arrivals.period
        else:
            self._t += self._rng.expovariate(self.arrivals.rate)
            t = self._t
        self._k += 1
        return t

    def peek(self) -> float:
        if self._next is None:
            self._next = self._draw()
        return self._next

    def __iter__(self) -> "Schedule":
        return self

    def __next__(self) -> float:
        t = self.peek()
        self._next = None
        return t


def stream_seed(seed: Any, name: str) -> int:
    """One reproducible seed per (run seed, what is measured): another test's draws do not shift."""
    return zlib.crc32(f"{seed}:{name}".encode())


def _refuse(value: Any, where: str, why: str) -> BadRate:
    return BadRate(f"{where}: rate={value!r} {why}; write {GRAMMAR}")


def parse_rate(value: Any, where: str = "perf.measure") -> Optional[Arrivals]:
    """``rate=`` as written -> ``Arrivals`` (None: back to back). BadRate names the value and
    shows the grammar."""
    if value is None:
        return None
    if isinstance(value, Arrivals):
        return value
    if isinstance(value, bool):
        raise _refuse(value, where, "is a bool, not a rate")
    if isinstance(value, (int, float)):
        return Arrivals(_positive(float(value), value, where), "fixed", f"{value}/s")
    if not isinstance(value, str):
        raise _refuse(value, where, f"is a {type(value).__name__}, not a rate")
    m = _RATE.match(value)
    if m is None:
        raise _refuse(value, where, "cannot be read as a rate")
    kind = (m.group("kind") or "fixed").lower()
    if kind not in KINDS:
        raise _refuse(value, where, f"has arrivals {m.group('kind')!r}; arrivals are one of {', '.join(KINDS)}")
    unit = m.group("unit")
    if unit is None:
        # "30" as a string is ambiguous (per second? per minute? a period?): say it with a unit
        raise BadRate(f"{where}: rate={value!r} has no unit; write rate='{m.group('num')}/s' (fixed "
                      f"arrivals) or rate='poisson:{m.group('num')}/s' (Poisson arrivals)")
    factor = RATE_UNITS[re.sub(r"\s+", "", unit).lower()]
    rate = _positive(float(m.group("num")) * factor, value, where)
    return Arrivals(rate, kind, value.strip())


def _positive(rate: float, value: Any, where: str) -> float:
    if math.isnan(rate) or math.isinf(rate):
        raise _refuse(value, where, "is not a finite rate")
    if rate <= 0:
        raise _refuse(value, where, "is not a positive rate (back to back is rate=None, the default)")
    return rate


def parse_deadline(value: Any, arrivals: Optional[Arrivals], where: str = "perf.measure") -> Optional[float]:
    """``deadline=`` -> seconds: by default one period of ``arrivals``; None without a rate."""
    if arrivals is None:
        if value is not None:
            raise BadRate(f"{where}: deadline={value!r} needs an arrival rate (a deadline counts from "
                          "each call's arrival); pass rate='30/s' as well, or drop deadline=")
        return None
    if value is None:
        return arrivals.period
    seconds = parse_duration(value, f"{where}: deadline")
    if seconds is None or seconds <= 0:
        raise BadRate(f"{where}: deadline={value!r} must be a positive duration such as '33ms'")
    return seconds


def _waiter(clock: Any) -> Callable[[float], None]:
    """Wait until ``t`` on ``clock``: advance a virtual clock, sleep-then-spin on any other."""
    now = clock.now
    if getattr(clock, "kind", None) == "virtual":
        advance = clock.advance

        def wait_virtual(t: float) -> None:
            gap = t - now()
            if gap > 0:
                advance(gap)
        return wait_virtual

    def wait_wall(t: float) -> None:
        gap = t - now()
        if gap > SPIN_S:
            time.sleep(gap - SPIN_S)
        while now() < t:
            pass
    return wait_wall


def arrival_loop(call: Callable[[], Any], clock: Any, schedule: Schedule, until_t: Optional[float],
                 until_n: Optional[int], latencies: List[float], ends: List[float],
                 deadline: Optional[float] = None, arrivals_out: Optional[List[float]] = None,
                 missed_out: Optional[List[int]] = None, services_out: Optional[List[float]] = None,
                 prepare: Optional[Callable[[], Any]] = None,
                 after: Optional[Callable[[], Any]] = None) -> Optional[float]:
    """Serve the arrivals of ``schedule`` that come before ``until_t`` (at most ``until_n`` of
    them), one ``call()`` each, in order. Appends per call: its latency from arrival
    (``latencies``), end time (``ends``), arrival (``arrivals_out``), 100 when the latency
    exceeded ``deadline`` else 0 (``missed_out``), its own run time, end minus start
    (``services_out``). ``after()`` runs after each call (reading what the call reported), then
    ``prepare()`` readies the next call's input while the loop waits for its arrival (outside
    the timed region; the caller readies the first before the run starts). Returns the last end
    time (None when no call ran). An arrival at or past ``until_t`` stays in the schedule.
    """
    now = clock.now
    wait = _waiter(clock)
    # a nanosecond of slack: thirty virtual 1/30 s steps add up to 0.999..., not 1.0
    limit_t = math.inf if until_t is None else until_t - 1e-9
    limit_n = -1 if until_n is None else until_n
    n = 0
    end: Optional[float] = None
    while n != limit_n:
        arrival = schedule.peek()
        if arrival >= limit_t:
            break
        next(schedule)
        if now() < arrival:
            wait(arrival)
        start = now()
        call()
        end = now()
        latency = end - arrival
        latencies.append(latency)
        ends.append(end)
        if arrivals_out is not None:
            arrivals_out.append(arrival)
        if missed_out is not None and deadline is not None:
            missed_out.append(100 if latency > deadline else 0)
        if services_out is not None:
            services_out.append(end - start)
        if after is not None:
            after()
        if prepare is not None:
            prepare()
        n += 1
    return end


def wait_until(clock: Any, t: float) -> None:
    """Let ``clock`` reach ``t`` (the end of a measured window that closes on an idle stretch)."""
    _waiter(clock)(t)


def jitter(ends: List[float]) -> Optional[float]:
    """The standard deviation of the intervals between consecutive completions (ros2_benchmark's
    jitter of the output stream); None with fewer than three completions."""
    if len(ends) < 3:
        return None
    gaps = [b - a for a, b in zip(ends, ends[1:])]
    mean = sum(gaps) / len(gaps)
    return math.sqrt(sum((g - mean) ** 2 for g in gaps) / (len(gaps) - 1))


def _median(values: List[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else 0.5 * (s[mid - 1] + s[mid])


def keep_up_problem(arrivals: List[float], latencies: List[float], services: List[float],
                    spec: Arrivals, name: str) -> Optional[str]:
    """Why the run could never keep up with ``spec``, or None.

    The criterion, robust to a single slow call and to Poisson bursts: over the run, (1) the
    served rate (calls / (last end - first arrival)) is below 90 % of the rate the calls actually
    arrived at (calls / span of arrivals, so a sparse Poisson draw is not mistaken for a slow
    server), and (2) the queueing wait (latency from arrival minus the call's own time) grows
    through the whole run: the median wait of each quarter of the calls is above the previous
    quarter's. A stable queue near saturation waits too, but its waits do not grow from quarter
    to quarter; a stall at the end of a run lifts one quarter only.
    """
    n = len(latencies)
    if n < KEEP_UP_MIN_CALLS or arrivals[-1] <= arrivals[0]:
        return None
    arrived = (n - 1) / (arrivals[-1] - arrivals[0])
    served = n / (arrivals[-1] + latencies[-1] - arrivals[0])
    if served >= KEEP_UP_SHARE * arrived:
        return None
    waits = [lat - s for lat, s in zip(latencies, services)]
    quarters = [_median(waits[(n * k) // 4:(n * (k + 1)) // 4]) for k in range(4)]
    if not all(b > a for a, b in zip(quarters, quarters[1:])):
        return None
    fastest = min(services)
    mean = sum(services) / len(services)
    return (f"{name}: calls arrive at rate={spec.text!r} but it served "
            f"only {served:.3g} calls/s (each call takes {format_duration(mean)} on average, the fastest "
            f"{format_duration(fastest)}): the queue grew for the whole run, so latency from arrival "
            f"would measure the backlog; lower rate= to at most about {0.9 / mean:.3g}/s, or find the "
            f"highest rate that meets your bound with perf.max_rate(...)")


def deadline_problem(latencies: List[float], services: List[float], deadline: Optional[float],
                     name: str) -> Optional[str]:
    """Why every call missed ``deadline`` on its own, or None: even its fastest call ran longer
    than the deadline, queueing aside."""
    if deadline is None or not services or min(services) <= deadline:
        return None
    return (f"{name}: every call ran longer than its deadline={format_duration(deadline)} (the "
            f"fastest took {format_duration(min(services))}, queueing aside), so deadline_miss would "
            f"be 100 %; pass a longer deadline= (at least {format_duration(min(services))}), a lower "
            f"rate= with it, or make the call faster")


def summary(spec: Arrivals, deadline: Optional[float], seed: int, ends: List[float],
            missed: List[int]) -> Dict[str, Any]:
    """What a Measurement at a rate carries in its ``extra``."""
    return {"rate": spec.rate, "arrivals": spec.kind, "deadline": deadline, "arrival_seed": seed,
            "jitter": jitter(ends), "deadline_missed": list(missed)}

