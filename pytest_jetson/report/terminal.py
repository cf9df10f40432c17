"""The terminal summary: one row per verdict (test, metric, value, baseline, change, verdict),
worst first, then the headline of every verdict that did not simply pass."""

from typing import Any, Dict, List, Sequence

from ..gate.verdict import rank
from ..metrics import format_value
from . import render

HEADER = ("test", "metric", "value", "baseline", "change", "bound", "verdict")


def _short(nodeid: str) -> str:
    return nodeid.split("/")[-1]


def rows(results: Sequence[Any]) -> List[List[str]]:
    """The table's rows as text, worst verdicts first (stable within an outcome)."""
    out = []
    for r in results:
        if r.error:
            out.append((-1, [_short(r.nodeid), "-", "-", "-", "-", "-", "ERROR"]))
        for v in r.verdicts:
            test = _short(r.nodeid) + (f" [{v.measurement.split('|', 1)[1]}]" if "|" in v.measurement else "")
            out.append((rank(v.outcome), [
                test, v.metric, format_value(v.metric, v.value), format_value(v.metric, v.baseline),
                render.change_text(v.worse), v.bound, render.label(v.outcome),
            ]))
        if not r.verdicts and not r.error and r.measurements:
            summ = r.measurements[0].get("summary", {}) or {}
            for metric in ("throughput", "latency_p99"):
                if summ.get(metric) is not None:
                    out.append((99, [_short(r.nodeid), metric, format_value(metric, summ[metric]),
                                     "-", "-", "-", "measured"]))
    out.sort(key=lambda t: t[0])
    return [row for _, row in out]


def table(header: Sequence[str], body: Sequence[Sequence[str]]) -> List[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    fmt = "  ".join("{:<" + str(w) + "}" for w in widths)
    lines = [fmt.format(*header).rstrip(), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*row).rstrip() for row in body]
    return lines


def summary(results: Sequence[Any], device_fingerprint: Dict[str, Any]) -> List[str]:
    body = rows(results)
    if not body:
        return []
    fp = device_fingerprint
    lines = [f"device {fp.get('device')} ({'simulated' if fp.get('simulated') else 'real'}), "
             f"power mode {fp.get('power_mode')}"]
    lines += table(HEADER, body)
    notes = []
    for r in results:
        if r.error:
            notes.append(f"ERROR {r.nodeid}: {r.error}")
        skipped: Dict[str, List[str]] = {}
        for v in r.verdicts:
            if v.outcome == "skip":
                # one line per reason, not one per metric
                skipped.setdefault(render.why_not_compared(v), []).append(f"{v.metric} {v.bound}")
            elif v.outcome in ("inconclusive", "fail", "error"):
                notes.append(f"{v.outcome} {_short(r.nodeid)}: {render.headline(v)}")
        for why, names in skipped.items():
            notes.append(f"skip {_short(r.nodeid)}: {', '.join(names)}: {why}")
        for n in r.notes:
            notes.append(f"note {_short(r.nodeid)}: {n.splitlines()[0]}")
    if notes:
        lines.append("")
        lines += notes
    return lines
