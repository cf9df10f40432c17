"""The terminal summary of the perf gate.

Grouped by test: the test id once, its bounds under it (value, baseline, change, bound, verdict),
worst tests first, then in natural order. By default only the bounds that need a look (failed,
errored, inconclusive) are listed, and one line counts the rest; ``-v`` or ``--jetson-table all``
lists every bound. Each failure is stated in full once, in the test's own report section: the
table only points at it. Skipped bounds are said once per reason. The table fits the terminal.
"""

import textwrap
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..gate.bounds import stage_metrics
from ..gate.keys import key_label
from ..gate.verdict import outcome, rank
from ..metrics import defaults
from . import render
from .counts import TestCounts
from .text import Column, natural_key, table

#: what a test that bounds nothing shows in a full table
MEASURED = defaults("measured")

COLUMNS = (
    Column("test / bound"),
    Column("value", ">"),
    Column("baseline", ">", drop=2),
    Column("change"),
    Column("bound", drop=1),
    Column("verdict"),
)


def ordered(results: Sequence[Any]) -> List[Any]:
    return sorted(results, key=lambda r: (rank(r.outcome), natural_key(r.nodeid)))


def _verdict_row(v: Any, indent: str) -> List[str]:
    return [indent + render.subject(v), render.value_text(v.metric, v.value, v.ci),
            render.value_text(v.metric, v.baseline, v.ci), render.change_text(v.worse), v.bound,
            v.outcome_row.label]


def shown(verdicts: Sequence[Any], show: str = "problems") -> List[Any]:
    """The verdicts a table lists: all, or those whose outcome needs a look."""
    return [v for v in verdicts if show == "all" or v.outcome_row.needs_look]


def _bound_rows(verdicts: Sequence[Any], cells: Any) -> List[List[str]]:
    """A row per verdict, under a heading per measurement when the test recorded several."""
    labels = {key_label(v.measurement) for v in verdicts}
    several = len(labels) > 1 or bool(labels - {""})
    out: List[List[str]] = []
    current: Optional[str] = None
    for v in sorted(verdicts, key=lambda v: (natural_key(key_label(v.measurement)), rank(v.outcome))):
        label = key_label(v.measurement)
        if several and label != current:
            out.append([f"  [{label}]"])
            current = label
        out.append(cells(v, "    " if several else "  "))
    return out


def _measured_rows(measurement: Any) -> List[List[str]]:
    """What a test without bounds measured (its headline metrics, its stages' among them)."""
    out = []
    parts = [("", measurement)] + [(f"{name}: ", stage) for name, stage in
                                   (getattr(measurement, "stages", None) or {}).items()]
    for prefix, part in parts:
        for metric in MEASURED if not prefix else [m for m in MEASURED if m in stage_metrics()]:
            value = part.metric(metric)
            if value is not None:
                out.append(["  " + prefix + metric, render.value_text(metric, value), "-", "-", "-",
                            "measured"])
    return out


def _timing_rows(measurements: Sequence[Any]) -> List[List[str]]:
    """Where a measured function's time on the simulated board comes from (``extra["timing"]``):
    one line, for the first measurement whose host time was scaled."""
    for m in measurements or ():
        t = getattr(m, "extra", {}).get("timing")
        if isinstance(t, dict) and m.clock == "virtual" and t.get("host_measured_s") is not None:
            return [[f"  per call: {t['simulated_s'] * 1e3:.3g} ms engines, simulated + "
                     f"{t['host_scaled_s'] * 1e3:.3g} ms host, measured x{t['host_scale']:.2f}"]]
    return []


def rows(results: Sequence[Any], show: str = "problems", cells: Any = _verdict_row) -> List[List[str]]:
    """The table's rows: a one-cell row per test (its id), then a row per bound shown
    (``cells(verdict, indent)`` gives its cells)."""
    out: List[List[str]] = []
    for r in ordered(results):
        verdicts = shown(r.verdicts, show)
        if not verdicts and not r.error and not (show == "all" and r.measurements):
            continue
        out.append([r.nodeid])
        out += _timing_rows(r.measurements)
        if r.error:
            out.append(["  (nothing recorded)", "-", "-", "-", "-", outcome("error").label])
        out += _bound_rows(verdicts, cells)
        if not r.verdicts and not r.error:
            out += _measured_rows(r.measurements[0])
    return out


def skipped_notes(results: Sequence[Any]) -> List[str]:
    """Relative bounds not compared, once per reason: which tests (or how many) and why."""
    by_reason: Dict[str, List[Tuple[str, List[str]]]] = {}
    for r in ordered(results):
        per_test: Dict[str, List[str]] = {}
        for v in r.verdicts:
            if v.outcome_row.said_once:
                per_test.setdefault(render.why_not_compared(v), []).append(f"{render.subject(v)} {v.bound}")
        for why, names in per_test.items():
            by_reason.setdefault(why, []).append((r.nodeid, names))
    lines = []
    for why, tests in by_reason.items():
        if len(tests) == 1:
            nodeid, names = tests[0]
            lines.append(f"skipped {', '.join(names)} of {nodeid}: {why}")
        else:
            n = sum(len(names) for _, names in tests)
            lines.append(f"skipped {n} bounds of {len(tests)} tests: {why}")
    return lines


def summary(results: Sequence[Any], counts: TestCounts, title: str = "", width: int = 0,
            show: str = "problems") -> List[str]:
    """The lines of the perf gate section: what ran where, the table, skipped bounds, counts."""
    if show == "none" or (not results and not counts.tests):
        return []
    lines = [title] if title else []
    body = rows(results, show)
    if body:
        lines += table(COLUMNS, body, width=width)
    notes = skipped_notes(results)
    count = f"perf tests: {counts.words()}"
    if counts.bounds:
        count += f" · bounds: {counts.bound_words()}"
    hidden = sum(1 for r in results for v in r.verdicts if not v.outcome_row.needs_look)
    if show == "problems" and hidden:
        count += " · -v lists every bound"
    for text in notes + [count]:
        lines += textwrap.wrap(text, width, subsequent_indent="    ", break_on_hyphens=False,
                               break_long_words=False) if width else [text]
    return lines
