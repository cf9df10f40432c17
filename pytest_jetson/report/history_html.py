"""``pytest-jetson history --html DIR``: the history as one static page a team can publish (GitHub
Pages, an artifact): per environment (board, power mode, backend), a table of every test's
metrics with an inline SVG sparkline each (the runs' values, the baseline's tolerance band in
green, a step as an orange line, a drift marked), the last value, the change since the first run
and what the trend analysis found. No script, no external file: one HTML file."""

import html
import math
from typing import Any, List, Optional, Sequence, Tuple

from ..metrics import METRICS, format_value
from . import render
from .run_history import Series, drift_lines, env_text, step_lines

WIDTH, HEIGHT, PAD = 260, 44, 3

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin-bottom: 2em; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: left; vertical-align: middle; }
th { background: #f4f4f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.worse { color: #b71c1c; } .better { color: #1565c0; } .note { color: #555; font-size: 90%; }
"""


def _scale(lo: float, hi: float, size: float, flip: bool) -> Any:
    span = (hi - lo) or abs(hi) * 0.02 or 1.0

    def f(v: float) -> float:
        x = (v - lo) / span * (size - 2 * PAD) + PAD
        return size - x if flip else x
    return f


def sparkline(s: Series, runs: int) -> str:
    """One metric's runs as an inline SVG."""
    present = s.present
    pts = [s.points[i] for i in present]
    values = [p.value for p in pts]  # type: ignore[union-attr]
    sign = 1 if METRICS[s.metric].worse == "higher" else -1
    band = [(i, p.baseline * (1 - sign * p.tolerance), p.baseline * (1 + sign * p.tolerance))  # type: ignore[union-attr]
            for i, p in zip(present, pts) if p.baseline and p.tolerance is not None]  # type: ignore[union-attr]
    lo, hi = min(values), max(values)
    span = (hi - lo) or abs(hi) * 0.05 or 1.0
    for _, a, b in band:  # a band edge within one more span joins the range (else it squashes the runs)
        for v in (a, b):
            if lo - span <= v <= hi + span:
                lo, hi = min(lo, v), max(hi, v)
    x = _scale(0, max(1, runs - 1), WIDTH, False)
    y = _scale(lo, hi, HEIGHT, True)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{html.escape(s.metric)} over {runs} runs">']
    if band:
        upper = " ".join(f"{x(i):.1f},{y(max(a, b)):.1f}" for i, a, b in band)
        lower = " ".join(f"{x(i):.1f},{y(min(a, b)):.1f}" for i, a, b in reversed(band))
        parts.append(f'<polygon points="{upper} {lower}" fill="#e8f5e9" stroke="none"/>')
    for step in s.trend.steps:
        sx = (x(step.at - 1) + x(step.at)) / 2
        parts.append(f'<line x1="{sx:.1f}" y1="0" x2="{sx:.1f}" y2="{HEIGHT}" stroke="#f57c00" stroke-width="1.5"/>')
    line = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in zip(present, values))
    color = "#e65100" if s.trend.drift else "#1f77b4"
    parts.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="1.2"/>')
    last_x, last_y = x(present[-1]), y(values[-1])
    parts.append(f'<circle cx="{last_x:.1f}" cy="{last_y:.1f}" r="2.2" fill="{color}"/>')
    return "".join(parts) + "</svg>"


def _change(s: Series) -> Tuple[str, str]:
    first, last = s.points[s.present[0]], s.points[s.present[-1]]
    worse = s.worse(last.value / first.value - 1)  # type: ignore[union-attr]
    if not math.isfinite(worse) or len(s.present) < 2:
        return "", ""
    return render.change_text(worse), "worse" if worse > 0.005 else "better" if worse < -0.005 else ""


def section(runs: Sequence[Any], found: Sequence[Series]) -> List[str]:
    """One environment's table."""
    env = env_text(runs[0].env)
    first, last = runs[0], runs[-1]
    commits = f", {first.short}..{last.short}" if first.short and last.short else ""
    out = [f"<h2>{html.escape(env)}</h2>",
           f'<p class="note">{len(runs)} runs, {html.escape(first.date)} .. {html.escape(last.date)}'
           f"{html.escape(commits)}; green: the baseline's tolerance band; orange line: a step; "
           f"orange trace: a slow drift</p>",
           "<table><tr><th>test</th><th>metric</th><th>runs</th><th>last</th><th>since the first</th>"
           "<th>found</th></tr>"]
    notes = {(k, m): w for k, m, w in step_lines(runs, found) + drift_lines(found)}
    for s in found:
        last_point = s.points[s.present[-1]]
        change, cls = _change(s)
        out.append(
            f"<tr><td><code>{html.escape(s.key)}</code></td><td>{html.escape(s.metric)}</td>"
            f"<td>{sparkline(s, len(runs))}</td>"
            f'<td class="num">{html.escape(format_value(s.metric, last_point.value))}</td>'  # type: ignore[union-attr]
            f'<td class="num {cls}">{html.escape(change)}</td>'
            f'<td class="note">{html.escape(notes.get((s.key, s.metric), ""))}</td></tr>')
    return out + ["</table>"]


def page(sections: Sequence[Tuple[Sequence[Any], Sequence[Series]]], title: Optional[str] = None) -> str:
    title = title or "pytest-jetson history"
    body: List[str] = [f"<h1>{html.escape(title)}</h1>"]
    for runs, found in sections:
        body += section(runs, found)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
