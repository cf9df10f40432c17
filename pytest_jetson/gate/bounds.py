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

import math
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ..errors import BoundError
from ..metrics import METRICS, UNITS, unknown_message

COMPARATORS = ("<=", "<", ">=", ">")

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
    #: the device profile ids and engine backends it applies on (empty: all)
    devices: Tuple[str, ...] = ()
    backends: Tuple[str, ...] = ()

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

    def to_dict(self) -> Dict[str, Any]:
        return {
            "metric": self.metric, "text": self.text, "kind": self.kind,
            "comparator": self.comparator, "value": self.value, "unit": self.unit,
            "tolerance": self.tolerance, "where": self.where,
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
