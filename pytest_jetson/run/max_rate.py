"""The highest arrival rate that meets a test's bounds, found the way ros2_benchmark finds its
peak throughput: the rate served back to back is the upper bound, then a search on the rate.

``search`` is pure: it asks ``measure_at(rate)`` for a (short) measurement at each rate it
probes and ``meets(measurement)`` whether it meets the bounds (``checks`` turns bounds given by
metric name into that predicate and the figure a probe records). It probes the upper bound first;
when that fails, it halves the rate until one meets (down to ``floor`` of the upper bound), then
bisects between the highest rate that met and the lowest that failed until they are within
``tolerance`` of each other (or ``max_probes`` ran). It assumes what a queue does: a higher rate
is never better. The answer is the highest rate that met, with its measurement and every probe
(rate, met, figure) so a report can show the search.
"""

import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from ..errors import ConfigError
from ..metrics import METRICS, format_value
from .arrival import RateError

#: bisection stops when the bracket is this close (a fraction of its upper end)
TOLERANCE = 0.03
#: probes after the upper bound, halving included
MAX_PROBES = 10
#: the lowest rate tried, as a share of the upper bound, before the bound is said never met
FLOOR = 1.0 / 64
#: the figure of a probe whose rate could not be served at all
NOT_SERVED = "not served (the queue grew, or every call missed its deadline)"


class MaxRateError(RateError):
    """No arrival rate met the bounds, or there was no rate to search under."""


@dataclass(frozen=True)
class Probe:
    """One rate tried: whether its measurement met the bounds, and the figures that decided."""

    rate: float
    met: bool
    figure: str
    #: why the rate was not served at all (the harness's RateError), else ""
    why: str = ""

    def to_dict(self) -> Dict[str, Any]:
        return {"rate": self.rate, "met": self.met, "figure": self.figure}


@dataclass(frozen=True)
class Check:
    """One bound the search holds a probe to: the metric, the bound as written, and whether a
    value (base units) holds."""

    metric: str
    text: str
    holds: Callable[[float], bool]


def checks(bounds: Dict[str, Any], parse_bound: Optional[Callable[[str, Any], Any]]) -> List[Check]:
    """Bounds by metric name -> Checks: a string read by ``parse_bound`` (the gate's parser,
    handed in by the plugin: run/ does not import the gate) or a predicate on the value."""
    if not bounds:
        raise ConfigError("perf.max_rate needs a bound to search against, e.g. "
                          "perf.max_rate(engine, latency_p99='<= 33 ms')")
    out = []
    for name, text in bounds.items():
        if callable(text):
            out.append(Check(name, getattr(text, "__name__", "a predicate"), text))
            continue
        if parse_bound is None:
            raise ConfigError(f"perf.max_rate: {name}={text!r} needs the perf fixture's bound parser; "
                              "outside pytest pass a predicate, e.g. latency_p99=lambda s: s <= 0.033")
        bound = parse_bound(name, text)
        if bound.relative:
            raise ConfigError(f"perf.max_rate: {name}={text!r} is a tolerance against a baseline; the "
                              f"search needs an absolute bound such as {name}={METRICS[name].example!r}")
        out.append(Check(name, repr(text), bound.holds))
    return out


def meets(held: List[Check], m: Any) -> bool:
    """Whether measurement ``m`` holds every check (a metric it has no value for fails)."""
    for c in held:
        value = m.metric(c.metric)
        if value is None or not c.holds(value):
            return False
    return True


def figure(held: List[Check], m: Any) -> str:
    """What a probe measured of the checked metrics, formatted as reports show them."""
    return ", ".join(f"{c.metric} {format_value(c.metric, m.metric(c.metric))}" for c in held)


def describe(held: List[Check]) -> str:
    return " and ".join(f"{c.metric}={c.text}" for c in held)


@dataclass
class MaxRateResult:
    """The highest rate that met (``rate``), its probe's measurement, every probe in order, and
    the upper bound the search started from (``peak``)."""

    rate: float
    measurement: Any
    probes: List[Probe]
    peak: float


def search(measure_at: Callable[[float], Any], meets: Callable[[Any], bool], peak: float,
           tolerance: float = TOLERANCE, max_probes: int = MAX_PROBES, floor: float = FLOOR,
           figure: Callable[[Any], str] = repr, what: str = "the bounds") -> MaxRateResult:
    """The highest rate in (``floor`` x ``peak``, ``peak``] whose measurement ``meets``.

    ``measure_at(rate)`` returns a measurement; where it raises RateError (the rate could not
    be served at all: the queue grew, or every call missed its deadline) that rate fails. ``figure(measurement)`` is the text a
    probe records. MaxRateError, naming ``what`` and the figure at the lowest rate tried, when
    no rate meets.
    """
    if not (isinstance(peak, (int, float)) and math.isfinite(peak) and peak > 0):
        raise MaxRateError(f"perf.max_rate: the rate served back to back is {peak!r}, so there is no "
                           "rate to search under; the measurement ran no calls (check duration=)")
    probes: List[Probe] = []

    def probe(rate: float) -> Optional[Any]:
        try:
            m = measure_at(rate)
        except RateError as exc:
            probes.append(Probe(rate, False, NOT_SERVED, str(exc)))
            return None
        ok = bool(meets(m))
        probes.append(Probe(rate, ok, figure(m)))
        return m if ok else None

    hi = float(peak)
    best = probe(hi)
    if best is not None:
        return MaxRateResult(hi, best, probes, float(peak))
    lo = hi
    while best is None:
        lo = hi / 2.0
        if lo < floor * peak:
            raise MaxRateError(_never_met(what, probes, peak))
        best = probe(lo)
        if best is None:
            hi = lo
    while hi - lo > tolerance * hi and len(probes) <= max_probes:
        mid = 0.5 * (lo + hi)
        m = probe(mid)
        if m is None:
            hi = mid
        else:
            lo, best = mid, m
    return MaxRateResult(lo, best, probes, float(peak))


def _never_met(what: str, probes: List[Probe], peak: float) -> str:
    lowest = min(probes, key=lambda p: p.rate)
    return (f"perf.max_rate: no arrival rate met {what}: from {peak:.4g}/s (the rate served back to "
            f"back) down to {lowest.rate:.4g}/s, the lowest rate tried: {lowest.figure} (the best "
            f"seen); loosen the bound or make the call faster"
            + (f". At that rate: {lowest.why}" if lowest.why else ""))
