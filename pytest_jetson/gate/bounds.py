"""The bounds of the ``perf`` marker: a small grammar, parsed by a tokenizer (never ``eval``).

    bound     := comparator number unit      absolute: ">= 900/s", "<= 15 ms", "< 1.5 GiB"
               | number "%"                  relative: "5%" = no worse than the baseline by 5%,
                                             in the metric's own bad direction
    comparator := "<=" | "<" | ">=" | ">"

Units are checked against the metric's dimension and converted to the base unit the Measurement
uses (items/s, s, bytes, W, J per item, degrees C, percent). ``gpu_util`` is a percentage, so
``">= 80 %"`` is absolute for it; for every other metric a ``%`` with a comparator is an error
that says how to write a tolerance.

Marks on a test, its class and its module merge (``merge``): identical bounds collapse, two
different absolute bounds with the same comparator on one metric (or two different tolerances)
are a conflict, raised as ``BoundError`` (the plugin turns it into a collection error).
"""

import difflib
import math
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ..errors import BoundError
from ..run.measurement import METRICS

COMPARATORS = ("<=", "<", ">=", ">")

#: dimension -> {unit as written: factor to the base unit}
_UNITS: Dict[str, Dict[str, float]] = {
    "rate": {"/s": 1.0, "items/s": 1.0, "item/s": 1.0, "img/s": 1.0, "fps": 1.0, "k/s": 1e3,
             "kitems/s": 1e3},
    "time": {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9},
    "bytes": {"B": 1.0, "KiB": 1024.0, "MiB": 1024.0 ** 2, "GiB": 1024.0 ** 3, "KB": 1e3, "kB": 1e3,
              "MB": 1e6, "GB": 1e9},
    "power": {"W": 1.0, "mW": 1e-3},
    "energy": {"J": 1.0, "mJ": 1e-3, "uJ": 1e-6, "µJ": 1e-6},
    "temperature": {"C": 1.0, "°C": 1.0},
    "percent": {"%": 1.0},
}

_DIMENSION = {
    "throughput": "rate",
    "per_process_throughput": "rate",
    "latency_mean": "time",
    "latency_p50": "time",
    "latency_p90": "time",
    "latency_p95": "time",
    "latency_p99": "time",
    "latency_max": "time",
    "memory": "bytes",
    "power": "power",
    "power_peak": "power",
    "energy": "energy",
    "gpu_util": "percent",
    "temperature": "temperature",
}

#: How a base-unit value of each dimension is printed.
_DISPLAY = {
    "rate": "/s", "time": "ms", "bytes": "MiB", "power": "W", "energy": "mJ",
    "temperature": "C", "percent": "%",
}

_TOKEN = re.compile(
    r"\s*(?:"
    r"(?P<cmp><=|>=|<|>|==|=<|=>|!=)"
    r"|(?P<num>[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)"
    r"|(?P<unit>%|°C|[A-Za-zµ]*/[A-Za-z]+|[A-Za-zµ]+)"
    r"|(?P<bad>\S)"
    r")"
)


@dataclass(frozen=True)
class Bound:
    """One parsed bound. ``value`` is in the metric's base unit (absolute bounds);
    ``tolerance`` a fraction (relative bounds, 0.05 for "5%"). ``where`` names the mark's owner."""

    metric: str
    text: str
    kind: str  # "absolute" | "relative"
    comparator: Optional[str] = None
    value: Optional[float] = None
    unit: Optional[str] = None
    tolerance: Optional[float] = None
    where: str = ""

    @property
    def relative(self) -> bool:
        return self.kind == "relative"

    def key(self) -> Tuple[str, str, Optional[str]]:
        """Two bounds with one key constrain the same thing: they must agree."""
        return (self.metric, self.kind, self.comparator)

    def same_as(self, other: "Bound") -> bool:
        if self.key() != other.key():
            return False
        a = self.value if self.kind == "absolute" else self.tolerance
        b = other.value if other.kind == "absolute" else other.tolerance
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)

    def holds(self, measured: float) -> bool:
        """Whether an absolute bound holds for ``measured`` (base units)."""
        assert self.value is not None and self.comparator is not None
        if self.comparator == "<=":
            return measured <= self.value
        if self.comparator == "<":
            return measured < self.value
        if self.comparator == ">=":
            return measured >= self.value
        return measured > self.value

    def describe(self) -> str:
        if self.relative:
            assert self.tolerance is not None
            return f"{format_percent(self.tolerance)} vs baseline"
        return f"{self.comparator} {format_value(self.metric, self.value)}"

    def to_dict(self) -> Dict[str, Any]:
        return {
            "metric": self.metric, "text": self.text, "kind": self.kind,
            "comparator": self.comparator, "value": self.value, "unit": self.unit,
            "tolerance": self.tolerance, "where": self.where,
        }


def dimension(metric: str) -> str:
    return _DIMENSION[metric]


def units_for(metric: str) -> List[str]:
    return list(_UNITS[_DIMENSION[metric]])


def format_percent(fraction: float) -> str:
    return f"{fraction * 100:.3g}%"


def format_value(metric: str, value: Optional[float]) -> str:
    """A base-unit metric value for people: '812.4/s', '15.2 ms', '1.5 GiB', '9.8 W', '12 mJ'."""
    if value is None:
        return "-"
    dim = _DIMENSION.get(metric, "")
    if dim == "rate":
        return f"{value:.1f}/s" if abs(value) < 1e5 else f"{value:.4g}/s"
    if dim == "time":
        a = abs(value)
        if a >= 1:
            return f"{value:.3g} s"
        if a >= 1e-3:
            return f"{value * 1e3:.3g} ms"
        return f"{value * 1e6:.3g} us"
    if dim == "bytes":
        for unit, scale in (("GiB", 1024.0 ** 3), ("MiB", 1024.0 ** 2), ("KiB", 1024.0)):
            if abs(value) >= scale:
                return f"{value / scale:.3g} {unit}"
        return f"{value:.0f} B"
    if dim == "power":
        return f"{value:.3g} W"
    if dim == "energy":
        return f"{value * 1e3:.3g} mJ" if abs(value) < 1 else f"{value:.3g} J"
    if dim == "temperature":
        return f"{value:.3g} C"
    if dim == "percent":
        return f"{value:.3g} %"
    return f"{value:.4g}"


def unknown_metric_message(metric: str, where: str = "") -> str:
    close = difflib.get_close_matches(metric, list(METRICS), n=1, cutoff=0.5)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    at = f" on {where}" if where else ""
    return (
        f"perf mark{at}: unknown metric {metric!r}.{hint} Known metrics: {', '.join(METRICS)}"
    )


def _error(metric: str, text: str, pos: int, length: int, why: str, where: str) -> BoundError:
    at = f" on {where}" if where else ""
    shown = repr(text)
    # the caret is placed under the text inside the quotes of the repr
    prefix = f"    {metric}="
    caret = " " * (len(prefix) + 1 + pos) + "^" * max(1, length)
    return BoundError(
        f"perf mark{at}: cannot read bound {metric}={shown}: {why}\n{prefix}{shown}\n{caret}"
    )


def _tokens(text: str) -> List[Tuple[str, str, int]]:
    out = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            break
        for kind in ("cmp", "num", "unit", "bad"):
            if m.group(kind) is not None:
                out.append((kind, m.group(kind), m.start(kind)))
                break
        pos = m.end()
    return out


def parse(metric: str, text: Any, where: str = "") -> Bound:
    """Parse one bound of ``metric``. Raises BoundError pointing at the bad token."""
    if metric not in METRICS:
        raise BoundError(unknown_metric_message(metric, where))
    dim = _DIMENSION[metric]
    units = _UNITS[dim]
    example = {"rate": ">= 900/s", "time": "<= 15 ms", "bytes": "<= 1.5 GiB", "power": "<= 10 W",
               "energy": "<= 12 mJ", "temperature": "<= 70 C", "percent": ">= 80 %"}[dim]
    if not isinstance(text, str):
        at = f" on {where}" if where else ""
        raise BoundError(
            f"perf mark{at}: bound {metric}={text!r} must be a string such as {example!r} "
            f"(absolute) or '5%' (no worse than the baseline by 5%)"
        )
    toks = _tokens(text)
    if not toks:
        raise _error(metric, text, 0, 1, f"empty bound; write e.g. {example!r} or '5%'", where)
    for kind, tok, pos in toks:
        if kind == "bad":
            raise _error(metric, text, pos, len(tok), f"unexpected {tok!r}", where)
    i = 0
    comparator = None
    if toks[0][0] == "cmp":
        kind, tok, pos = toks[0]
        if tok not in COMPARATORS:
            fix = {"=<": "<=", "=>": ">="}.get(tok)
            why = f"comparator {tok!r} is not one of {', '.join(COMPARATORS)}"
            if fix:
                why += f"; write {fix!r}"
            raise _error(metric, text, pos, len(tok), why, where)
        comparator = tok
        i = 1
    if i >= len(toks) or toks[i][0] != "num":
        pos = toks[i][2] if i < len(toks) else len(text)
        length = len(toks[i][1]) if i < len(toks) else 1
        raise _error(metric, text, pos, length, f"expected a number here, as in {example!r}", where)
    _, num_tok, num_pos = toks[i]
    number = float(num_tok)
    if not math.isfinite(number):
        raise _error(metric, text, num_pos, len(num_tok), "the number is not finite", where)
    i += 1
    unit = None
    unit_pos = len(text)
    if i < len(toks):
        kind, unit, unit_pos = toks[i]
        if kind != "unit":
            raise _error(metric, text, unit_pos, len(unit), f"expected a unit here ({', '.join(units)})",
                         where)
        i += 1
    if i < len(toks):
        if unit is not None and unit != "%" and unit not in units:
            raise _error(metric, text, unit_pos, len(unit),
                         f"unit {unit!r} does not fit {metric}, which takes {', '.join(units)}", where)
        _, tok, pos = toks[i]
        raise _error(metric, text, pos, len(text) - pos, "unexpected text after the bound", where)

    if comparator is None:
        if unit != "%":
            raise _error(
                metric, text, 0, 1,
                f"missing comparator; write e.g. '>= {num_tok}{_join_unit(unit)}' for an "
                f"absolute bound, or a tolerance such as '5%' against the baseline",
                where,
            )
        if number < 0:
            raise _error(metric, text, num_pos, len(num_tok), "a tolerance cannot be negative", where)
        return Bound(metric=metric, text=text, kind="relative", tolerance=number / 100.0, unit="%",
                     where=where)
    if unit is None:
        raise _error(metric, text, len(text), 1,
                     f"missing unit; {metric} takes {', '.join(units)}", where)
    if unit == "%" and dim != "percent":
        raise _error(
            metric, text, unit_pos, 1,
            f"{metric} is not a percentage; a tolerance against the baseline is written without a "
            f"comparator ('{num_tok}%'), an absolute bound with a unit ({', '.join(units)})",
            where,
        )
    if unit not in units:
        other = [d for d, us in _UNITS.items() if unit in us]
        why = f"unit {unit!r} does not fit {metric}, which takes {', '.join(units)}"
        if other:
            why = f"unit {unit!r} measures {other[0]}, but {metric} takes {', '.join(units)}"
        raise _error(metric, text, unit_pos, len(unit), why, where)
    if number < 0:
        raise _error(metric, text, num_pos, len(num_tok), f"{metric} cannot be negative", where)
    return Bound(metric=metric, text=text, kind="absolute", comparator=comparator,
                 value=number * units[unit], unit=unit, where=where)


def _join_unit(unit: Optional[str]) -> str:
    if not unit:
        return ""
    return unit if unit.startswith("/") else " " + unit


def parse_marks(marks: Iterable[Tuple[str, Dict[str, Any]]]) -> List[Bound]:
    """Parse and merge the bounds of several marks: ``[(where, kwargs), ...]`` nearest first."""
    bounds: List[Bound] = []
    for where, kwargs in marks:
        for metric, text in kwargs.items():
            bounds.append(parse(metric, text, where))
    return merge(bounds)


def merge(bounds: Sequence[Bound]) -> List[Bound]:
    """Drop duplicates; raise BoundError on a conflict (same metric, kind and comparator, different
    value). A lower and an upper bound on one metric are a range, not a conflict."""
    out: List[Bound] = []
    for b in bounds:
        clash = next((o for o in out if o.key() == b.key()), None)
        if clash is None:
            out.append(b)
            continue
        if clash.same_as(b):
            continue
        raise BoundError(
            f"perf marks conflict on {b.metric}: {clash.metric}={clash.text!r} ({clash.where or 'mark'}) "
            f"and {b.metric}={b.text!r} ({b.where or 'mark'}). Keep one of them, or make them equal."
        )
    return out
