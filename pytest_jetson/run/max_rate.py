"""The highest arrival rate that meets a test's bounds, found the way ros2_benchmark finds its
peak throughput: the rate served back to back is the upper bound, then a search on the rate.

``search`` is pure: it asks ``measure_at(rate)`` for a (short) measurement at each rate it
probes and ``meets(measurement)`` whether it meets the bounds. It probes the upper bound first;
when that fails, it halves the rate until one meets (down to ``floor`` of the upper bound), then
bisects between the highest rate that met and the lowest that failed until they are within
``tolerance`` of each other (or ``max_probes`` ran). It assumes what a queue does: a higher rate
is never better. The answer is the highest rate that met, with its measurement and every probe
(rate, met, figure) so a report can show the search.
"""

import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from .arrival import RateError

#: bisection stops when the bracket is this close (a fraction of its upper end)
TOLERANCE = 0.03
#: probes after the upper bound, halving included
MAX_PROBES = 10
#: the lowest rate tried, as a share of the upper bound, before the bound is said never met
FLOOR = 1.0 / 64


class MaxRateError(RateError):
    """No arrival rate met the bounds, or there was no rate to search under."""


@dataclass(frozen=True)
class Probe:
    """One rate tried: whether its measurement met the bounds, and the figures that decided."""

    rate: float
    met: bool
    figure: str

    def to_dict(self) -> Dict[str, Any]:
        return {"rate": self.rate, "met": self.met, "figure": self.figure}


@dataclass
class MaxRateResult:
    """The highest rate that met (``rate``), its probe's measurement, every probe in order, and
    the upper bound the search started from (``peak``)."""

    rate: float
    measurement: Any
    probes: List[Probe]
    peak: float


def search(measure_at: Callable[[float], Optional[Any]], meets: Callable[[Any], bool], peak: float,
           tolerance: float = TOLERANCE, max_probes: int = MAX_PROBES, floor: float = FLOOR,
           figure: Callable[[Any], str] = repr, what: str = "the bounds") -> MaxRateResult:
    """The highest rate in (``floor`` x ``peak``, ``peak``] whose measurement ``meets``.

    ``measure_at(rate)`` returns a measurement, or None where the rate could not be served at
    all (a probe that did not keep up): that rate fails. ``figure(measurement)`` is the text a
    probe records. MaxRateError, naming ``what`` and the figure at the lowest rate tried, when
    no rate meets.
    """
    if not (isinstance(peak, (int, float)) and math.isfinite(peak) and peak > 0):
        raise MaxRateError(f"perf.max_rate: the rate served back to back is {peak!r}, so there is no "
                           "rate to search under; the measurement ran no calls (check duration=)")
    probes: List[Probe] = []

    def probe(rate: float) -> Optional[Any]:
        m = measure_at(rate)
        ok = m is not None and bool(meets(m))
        probes.append(Probe(rate, ok, "could not keep up with the rate" if m is None else figure(m)))
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
            f"back) down to {lowest.rate:.4g}/s, the lowest rate tried, where it measured "
            f"{lowest.figure} (the best seen); loosen the bound or make the call faster")
