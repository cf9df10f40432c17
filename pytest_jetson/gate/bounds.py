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

A mark's other keywords:

* ``stages={"postprocess": {"latency_mean": "10%"}}`` bounds the named stages of a measured
  function (``perf.stage``) with the same grammar. A stage has the time metrics of its latencies
  (``STAGE_METRICS``: latency_mean, latency_p50 ... latency_max): its items and duration are the
  whole measurement's, so a stage's throughput, memory or power would only repeat the whole's.
* ``devices="orin-nano"`` / ``backends=["onnxruntime", "simulated"]`` (a name or a list of
  names) limit the bounds of that mark, its stage bounds included, to those devices (by id or
  alias, as ``@pytest.mark.jetson`` names them; stored as profile ids) or engine backends. Bounds
  limited to different devices or backends never conflict.
"""

import difflib
import math
import re
from dataclasses import dataclass, replace
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ..devices import catalog
from ..errors import BoundError, ConfigError
from ..metrics import METRICS, UNITS, unknown_message

COMPARATORS = ("<=", "<", ">=", ">")

#: the mark's keywords that are not metrics
LIMITS = ("devices", "backends")

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
    #: the stage of the measurement it bounds (None: the whole measurement)
    stage: Optional[str] = None
    #: the device profile ids and engine backends it applies on (empty: all)
    devices: Tuple[str, ...] = ()
    backends: Tuple[str, ...] = ()

    @property
    def relative(self) -> bool:
        return self.kind == "relative"

    @property
    def name(self) -> str:
        """What it bounds, as reports name it: ``latency_p99``, ``postprocess: latency_mean``."""
        return f"{self.stage}: {self.metric}" if self.stage is not None else self.metric

    def key(self) -> Tuple[Any, ...]:
        """Two bounds with one key constrain the same thing: they must agree."""
        return (self.stage, self.metric, self.kind, self.comparator, tuple(sorted(self.devices)),
                tuple(sorted(self.backends)))

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

    def to_dict(self) -> Dict[str, Any]:
        return {
            "metric": self.metric, "text": self.text, "kind": self.kind,
            "comparator": self.comparator, "value": self.value, "unit": self.unit,
            "tolerance": self.tolerance, "where": self.where, "stage": self.stage,
            "devices": list(self.devices), "backends": list(self.backends),
        }


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
        raise BoundError(unknown_message(metric, where))
    row = METRICS[metric]
    if not isinstance(text, str):
        at = f" on {where}" if where else ""
        raise BoundError(
            f"perf mark{at}: bound {metric}={text!r} must be a string such as {row.example!r} "
            f"(absolute) or '5%' (no worse than the baseline by 5%)"
        )
    r = _Reader(metric, text, where)
    comparator = r.comparator()
    num_tok, num_pos = r.number()
    unit, unit_pos = r.unit()
    r.end(unit, unit_pos)
    number = float(num_tok)
    if comparator is None:
        return _relative(r, number, num_tok, num_pos, unit)
    if unit is None:
        raise r.fail(len(text), 1, f"missing unit; {metric} takes {', '.join(r.units)}")
    _check_unit(r, unit, unit_pos, num_tok)
    if number < 0:
        raise r.fail(num_pos, len(num_tok), f"{metric} cannot be negative")
    return Bound(metric=metric, text=text, kind="absolute", comparator=comparator,
                 value=number * r.units[unit], unit=unit, where=where)


class _Reader:
    """The tokens of one bound, read left to right; ``fail`` points at the one that is wrong."""

    def __init__(self, metric: str, text: str, where: str) -> None:
        self.metric, self.text, self.where = metric, text, where
        row = METRICS[metric]
        self.dimension, self.units, self.example = row.dimension, UNITS[row.dimension], row.example
        self.toks = _tokens(text)
        self.i = 0
        if not self.toks:
            raise self.fail(0, 1, f"empty bound; write e.g. {self.example!r} or '5%'")
        bad = next((t for t in self.toks if t[0] == "bad"), None)
        if bad is not None:
            raise self.fail(bad[2], len(bad[1]), f"unexpected {bad[1]!r}")

    def fail(self, pos: int, length: int, why: str) -> BoundError:
        return _error(self.metric, self.text, pos, length, why, self.where)

    def comparator(self) -> Optional[str]:
        kind, tok, pos = self.toks[0]
        if kind != "cmp":
            return None
        if tok not in COMPARATORS:
            fix = {"=<": "<=", "=>": ">="}.get(tok)
            why = f"comparator {tok!r} is not one of {', '.join(COMPARATORS)}"
            raise self.fail(pos, len(tok), why + (f"; write {fix!r}" if fix else ""))
        self.i = 1
        return tok

    def number(self) -> Tuple[str, int]:
        i, toks = self.i, self.toks
        if i >= len(toks) or toks[i][0] != "num":
            pos = toks[i][2] if i < len(toks) else len(self.text)
            length = len(toks[i][1]) if i < len(toks) else 1
            raise self.fail(pos, length, f"expected a number here, as in {self.example!r}")
        _, tok, pos = toks[i]
        if not math.isfinite(float(tok)):
            raise self.fail(pos, len(tok), "the number is not finite")
        self.i += 1
        return tok, pos

    def unit(self) -> Tuple[Optional[str], int]:
        if self.i >= len(self.toks):
            return None, len(self.text)
        kind, unit, pos = self.toks[self.i]
        if kind != "unit":
            raise self.fail(pos, len(unit), f"expected a unit here ({', '.join(self.units)})")
        self.i += 1
        return unit, pos

    def end(self, unit: Optional[str], unit_pos: int) -> None:
        """Nothing may follow the unit (a wrong unit before the extra text is the first error)."""
        if self.i >= len(self.toks):
            return
        if unit is not None and unit != "%" and unit not in self.units:
            raise self.fail(unit_pos, len(unit),
                            f"unit {unit!r} does not fit {self.metric}, which takes {', '.join(self.units)}")
        _, _, pos = self.toks[self.i]
        raise self.fail(pos, len(self.text) - pos, "unexpected text after the bound")


def _relative(r: _Reader, number: float, num_tok: str, num_pos: int, unit: Optional[str]) -> Bound:
    if unit != "%":
        raise r.fail(0, 1, f"missing comparator; write e.g. '>= {num_tok}{_join_unit(unit)}' for an "
                           f"absolute bound, or a tolerance such as '5%' against the baseline")
    if number < 0:
        raise r.fail(num_pos, len(num_tok), "a tolerance cannot be negative")
    return Bound(metric=r.metric, text=r.text, kind="relative", tolerance=number / 100.0, unit="%",
                 where=r.where)


def _check_unit(r: _Reader, unit: str, unit_pos: int, num_tok: str) -> None:
    metric, units = r.metric, ", ".join(r.units)
    if unit == "%" and r.dimension != "percent":
        raise r.fail(unit_pos, 1, f"{metric} is not a percentage; a tolerance against the baseline is "
                                  f"written without a comparator ('{num_tok}%'), an absolute bound with "
                                  f"a unit ({units})")
    if unit not in r.units:
        other = [d for d, us in UNITS.items() if unit in us]
        why = f"unit {unit!r} does not fit {metric}, which takes {units}"
        if other:
            why = f"unit {unit!r} measures {other[0]}, but {metric} takes {units}"
        raise r.fail(unit_pos, len(unit), why)


def _join_unit(unit: Optional[str]) -> str:
    if not unit:
        return ""
    return unit if unit.startswith("/") else " " + unit


def stage_metrics() -> Tuple[str, ...]:
    """The metrics a stage has: those computed from the latencies (the ``latency`` sample)."""
    return tuple(name for name, row in METRICS.items() if row.sample == "latency")


def _at(where: str) -> str:
    return f" on {where}" if where else ""


def _names(keyword: str, value: Any, where: str) -> Tuple[str, ...]:
    """A ``devices=``/``backends=`` value: a name or a list of names."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not names or not all(
            isinstance(n, str) and n.strip() for n in names):
        one = "orin-nano" if keyword == "devices" else "onnxruntime"
        raise BoundError(f"perf mark{_at(where)}: {keyword}={value!r} must be a name or a list of "
                         f"names, e.g. {keyword}={one!r} or {keyword}=[{one!r}, ...]")
    return tuple(n.strip() for n in names)


def _devices(value: Any, where: str) -> Tuple[str, ...]:
    ids: List[str] = []
    for name in _names("devices", value, where):
        try:
            profile = catalog.get(name)
        except ConfigError as exc:
            raise BoundError(f"perf mark{_at(where)}: devices={value!r}: {exc}") from None
        if profile.id not in ids:
            ids.append(profile.id)
    return tuple(ids)


def _backends(value: Any, where: str, known: Optional[Sequence[str]]) -> Tuple[str, ...]:
    names = _names("backends", value, where)
    bad = [n for n in names if known is not None and n not in known]
    if bad:
        raise BoundError(f"perf mark{_at(where)}: backends={value!r}: {bad[0]!r} is not a known engine "
                         f"backend; known: {', '.join(known or ())}")
    return names


def _stage_bounds(value: Any, where: str) -> List[Bound]:
    """The bounds of a mark's ``stages=`` keyword: stage name -> {metric: bound}."""
    example = "stages={'postprocess': {'latency_mean': '10%'}}"
    if not isinstance(value, dict):
        raise BoundError(f"perf mark{_at(where)}: stages={value!r} must be a dict of stage name to "
                         f"bounds, e.g. {example}")
    allowed = stage_metrics()
    out = []
    for stage, metrics in value.items():
        if not isinstance(stage, str) or not stage.strip():
            raise BoundError(f"perf mark{_at(where)}: stages: a stage name must be a non-empty string "
                             f"(the name given to perf.stage), got {stage!r}")
        if not isinstance(metrics, dict) or not metrics:
            raise BoundError(f"perf mark{_at(where)}: stages[{stage!r}]={metrics!r} must be a non-empty "
                             f"dict of metric to bound, e.g. {example}")
        for metric, text in metrics.items():
            if metric not in METRICS:
                close = difflib.get_close_matches(str(metric), allowed, n=1, cutoff=0.5)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise BoundError(f"perf mark{_at(where)}: stage {stage!r}: unknown metric {metric!r}.{hint} "
                                 f"A stage has {', '.join(allowed)}")
            if metric not in allowed:
                raise BoundError(
                    f"perf mark{_at(where)}: stage {stage!r} cannot have {metric}: a stage has the "
                    f"time metrics of its latencies ({', '.join(allowed)}); its items and duration "
                    f"are the whole measurement's, so bound {metric} outside stages=")
            label = f"{where}, stage {stage!r}" if where else f"stage {stage!r}"
            out.append(replace(parse(metric, text, label), where=where, stage=stage))
    return out


def parse_mark(where: str, kwargs: Dict[str, Any], backends: Optional[Sequence[str]] = None) -> List[Bound]:
    """The bounds of one mark: its metric keywords, its ``stages=``, limited by its ``devices=``
    and ``backends=`` (``backends``: the known engine backends' names; None: not checked)."""
    kwargs = dict(kwargs)
    limits = {}
    if "devices" in kwargs:
        limits["devices"] = _devices(kwargs.pop("devices"), where)
    if "backends" in kwargs:
        limits["backends"] = _backends(kwargs.pop("backends"), where, backends)
    stages = kwargs.pop("stages", None)
    for name in kwargs:
        close = difflib.get_close_matches(str(name), ("stages",) + LIMITS, n=1, cutoff=0.7)
        if name not in METRICS and close:
            raise BoundError(f"perf mark{_at(where)}: unknown keyword {name!r}. Did you mean {close[0]!r}?")
    out = [parse(metric, text, where) for metric, text in kwargs.items()]
    if stages is not None:
        out += _stage_bounds(stages, where)
    return [replace(b, **limits) for b in out] if limits else out


def parse_marks(marks: Iterable[Tuple[str, Dict[str, Any]]],
                backends: Optional[Sequence[str]] = None) -> List[Bound]:
    """Parse and merge the bounds of several marks: ``[(where, kwargs), ...]`` nearest first."""
    bounds: List[Bound] = []
    for where, kwargs in marks:
        bounds += parse_mark(where, kwargs, backends)
    return merge(bounds)


def merge(bounds: Sequence[Bound]) -> List[Bound]:
    """Drop duplicates; raise BoundError on a conflict (same stage, metric, kind, comparator and
    limits, different value). A lower and an upper bound on one metric are a range, not a
    conflict, unless no value lies in it (``_empty_range``)."""
    out: List[Bound] = []
    for b in bounds:
        clash = next((o for o in out if o.key() == b.key()), None)
        if clash is None:
            empty = next((o for o in out if _empty_range(o, b)), None)
            if empty is not None:
                low, high = (empty, b) if empty.comparator in (">=", ">") else (b, empty)
                raise BoundError(
                    f"perf marks contradict on {b.name}: {low.metric}={low.text!r} ({low.where or 'mark'}) "
                    f"and {high.metric}={high.text!r} ({high.where or 'mark'}) leave no value that passes, "
                    f"so every run would fail. Fix one of them: the lower bound must lie below the upper one."
                )
            out.append(b)
            continue
        if clash.same_as(b):
            continue
        raise BoundError(
            f"perf marks conflict on {b.name}: {clash.metric}={clash.text!r} ({clash.where or 'mark'}) "
            f"and {b.metric}={b.text!r} ({b.where or 'mark'}). Keep one of them, or make them equal."
        )
    return out


def _overlap(a: Tuple[str, ...], b: Tuple[str, ...]) -> bool:
    """Whether two limits (empty: all) share a device or backend."""
    return not a or not b or bool(set(a) & set(b))


def _empty_range(a: Bound, b: Bound) -> bool:
    """Whether an absolute lower and upper bound on one thing, applying together on some device and
    backend, admit no value (``>= 900000/s`` with ``<= 1/s``; ``> 5 ms`` with ``< 5 ms``)."""
    if a.kind != "absolute" or b.kind != "absolute" or (a.stage, a.metric) != (b.stage, b.metric):
        return False
    if not (_overlap(a.devices, b.devices) and _overlap(a.backends, b.backends)):
        return False
    lower = [x for x in (a, b) if x.comparator in (">=", ">")]
    upper = [x for x in (a, b) if x.comparator in ("<=", "<")]
    if len(lower) != 1 or len(upper) != 1:
        return False
    low, high = lower[0], upper[0]
    assert low.value is not None and high.value is not None
    if math.isclose(low.value, high.value, rel_tol=1e-9, abs_tol=0.0):
        return low.comparator == ">" or high.comparator == "<"
    return low.value > high.value
