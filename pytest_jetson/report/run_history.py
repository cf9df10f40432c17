"""The history of a suite over many runs: JSON reports from past runs (CI artifacts) read as one
time series per test and metric, searched for steps and slow drifts (``report.trend``).

Reports are grouped by where they ran (device, power mode, backend, simulated or real) and each
group is analysed and drawn on its own: numbers from different boards or modes are never mixed.
Within a group the runs are ordered by the time each report was written.

* ``load(paths)``: the reports, each checked (a directory, a file that is not JSON or not a
  report, mixed schema versions: an error naming the file);
* ``groups(runs)``: runs by environment;
* ``series(group)``: per measurement key and metric, the value of each run with its interval,
  the baseline and tolerance the gate used, and the trend;
* ``text``, ``markdown``, ``plot``: the findings for a terminal, a step summary and PNGs.
"""

import datetime as _dt
import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from ..errors import BaselineError
from ..gate.verdict import outcome
from ..metrics import METRICS, defaults, display_unit
from ..provenance import short
from . import render
from .jsonreport import stream
from .text import natural_key
from .trend import Trend, analyse, benjamini_hochberg

#: metrics followed for a test that bounds none
DEFAULT_METRICS = defaults("history")


@dataclass
class Run:
    """One report: its header (``doc``, without its tests) and its followed metrics' points."""

    path: Path
    name: str
    created: str
    doc: Dict[str, Any]
    order: int
    #: (measurement key, metric) -> point
    points: Dict[Tuple[str, str], "Point"] = field(default_factory=dict)

    @property
    def commit(self) -> Dict[str, Any]:
        """The code the run measured (``provenance.commit_info``); empty for a report without one."""
        commit = self.doc.get("commit")
        return commit if isinstance(commit, dict) else {}

    @property
    def short(self) -> Optional[str]:
        """The commit's short id, or None."""
        return short(self.commit)

    @property
    def env(self) -> Tuple[str, str, str, str]:
        """(device, power mode, backend, simulated|real): runs compare only within one."""
        device = self.doc.get("device") or {}
        target = self.doc.get("target") or {}
        backend = target.get("backend") or (self.doc.get("settings") or {}).get("backend") or ""
        return (str(device.get("device") or "?"), str(device.get("power_mode") or "-"), backend or "?",
                "simulated" if device.get("simulated") else "real")

    @property
    def date(self) -> str:
        return self.created[:10] if self.created else "?"

    @property
    def time(self) -> str:
        return self.created[11:16] if len(self.created) >= 16 else "?"


def tick_labels(runs: Sequence[Run]) -> List[str]:
    """The commit's short id (else the run's number) and date (the time of day when every run is
    of one day)."""
    one_day = len({r.date for r in runs}) == 1
    return [f"{r.short or i}\n{r.time if one_day else r.date[5:]}" for i, r in enumerate(runs, 1)]


def where_text(runs: Sequence[Run], at: int) -> str:
    """Where a step between runs ``at - 1`` and ``at`` falls: the commit range where both runs
    know their commit (``in abc1234..def5678``), else the run's number."""
    run = runs[at]
    before = runs[at - 1].short if at > 0 else None
    if run.short and before and before != run.short:
        return f"in {before}..{run.short} ({run.name}, {run.date})"
    if run.short:
        return f"from commit {run.short} ({run.name}, {run.date})"
    return f"from run {at + 1} ({run.name}, {run.date})"


def env_text(env: Tuple[str, str, str, str]) -> str:
    device, mode, backend, kind = env
    where = f"{device}, power mode {mode}" if mode != "-" else device
    how = kind if backend in ("simulated", "?") else f"{backend}, {kind}"
    return f"{where} ({how})"


def load(paths: Sequence[Path], optional: Sequence[Path] = (), skipped: Optional[List[Path]] = None) -> List[Run]:
    """The reports as runs, oldest first; an unreadable one or mixed schema versions is a
    BaselineError naming the file. Files in ``optional`` (found in a directory, not named) that are
    JSON but no report at all are left out and listed in ``skipped``."""
    if not paths:
        raise BaselineError("history needs JSON reports (from --jetson-report-json), oldest to newest")
    runs = []
    stems = [Path(p).stem for p in paths]
    for i, path in enumerate(paths):
        path = Path(path)
        try:
            head, tests = stream(path)
        except BaselineError as exc:
            if path not in optional or "is not a pytest-jetson report" not in str(exc):
                raise
            if skipped is not None:
                skipped.append(path)
            continue
        name = path.stem if stems.count(path.stem) == 1 else Path(*path.parts[-2:]).with_suffix("").as_posix()
        runs.append(_run(path, name, head, tests, i))
    schemas: Dict[Any, List[str]] = {}
    for r in runs:
        schemas.setdefault(r.doc.get("schema"), []).append(str(r.path))
    if len(schemas) > 1:
        parts = "; ".join(f"schema {s}: {', '.join(files)}" for s, files in sorted(schemas.items(), key=str))
        raise BaselineError(f"history needs reports of one schema version, these differ ({parts}); "
                            f"re-create the old reports with this pytest-jetson or leave them out")
    return ordered(runs)


def _run(path: Path, name: str, head: Dict[str, Any], tests: Iterator[Any], order: int) -> Run:
    """A report as a run: its header and its followed metrics' points, its tests read one at a
    time and let go (fifty reports of a thousand tests are never held at once)."""
    backends: List[str] = []

    def noting_backend(results: Iterator[Any]) -> Iterator[Any]:
        for r in results:
            if not backends:
                backends.extend(m.backend for m in r.measurements if m.backend)
            yield r

    points = points_of(noting_backend(tests))
    target = head.get("target") if isinstance(head.get("target"), dict) else {}
    if not target.get("backend") and not (head.get("settings") or {}).get("backend"):
        head["target"] = dict(target, backend=backends[0] if backends else "")
    return Run(path=path, name=name, created=str(head.get("created") or ""), doc=head, order=order,
               points=points)


def ordered(runs: Sequence[Run]) -> List[Run]:
    """Oldest first (undated runs keep their order, after the dated ones)."""
    return sorted(runs, key=lambda r: (_when(r.created), r.order))


def _when(created: str) -> float:
    try:
        return _dt.datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=_dt.timezone.utc).timestamp()
    except ValueError:
        return math.inf  # undated reports keep their order, after the dated ones


def groups(runs: Sequence[Run]) -> Dict[Tuple[str, str, str, str], List[Run]]:
    out: Dict[Tuple[str, str, str, str], List[Run]] = {}
    for r in runs:
        out.setdefault(r.env, []).append(r)
    return out


@dataclass
class Point:
    value: float
    ci: Optional[Tuple[float, float]] = None
    baseline: Optional[float] = None
    tolerance: Optional[float] = None
    threshold: Optional[float] = None
    comparator: Optional[str] = None
    outcome: str = ""


@dataclass
class Series:
    key: str
    metric: str
    points: List[Optional[Point]]
    trend: Trend = field(default_factory=Trend)

    @property
    def present(self) -> List[int]:
        return [i for i, p in enumerate(self.points) if p is not None]

    def worse(self, change: float) -> float:
        """A relative change signed so that positive is worse for this metric."""
        return change if METRICS[self.metric].worse == "higher" else -change

    @property
    def flagged(self) -> bool:
        return bool(self.trend.steps or self.trend.drift)

    @property
    def troubled(self) -> bool:
        """A bound on it did not pass in some run."""
        return any(p is not None and outcome(p.outcome).needs_look for p in self.points)


def _value(m: Any, metric: str) -> Optional[float]:
    v = m.metric(metric)  # a pool's per-process figure: its slowest worker, as the gate decides it
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) and v > 0 else None


def _followed(result: Any) -> List[str]:
    """The metrics followed for a test: those it bounds, else the defaults."""
    bounded = [b.get("metric") for b in result.bounds
               if b.get("metric") in METRICS and b.get("stage") is None]
    return list(dict.fromkeys(bounded)) or list(DEFAULT_METRICS)


def _point(value: float, verdicts: Sequence[Any]) -> Point:
    """A run's value of a metric with what the gate's verdicts on it said."""
    point = Point(value=value)
    for v in verdicts:
        if v.ci and point.ci is None:
            point.ci = (float(v.ci[0]), float(v.ci[1]))
        if v.kind == "relative" and v.baseline:
            point.baseline, point.tolerance = float(v.baseline), v.tolerance
        if v.kind == "absolute" and v.threshold is not None:
            point.threshold, point.comparator = float(v.threshold), v.comparator
        point.outcome = v.outcome or point.outcome
    return point


def points_of(results: Iterable[Any]) -> Dict[Tuple[str, str], Point]:
    """A run's followed metrics: (measurement key, metric) -> its value with what the gate said."""
    points: Dict[Tuple[str, str], Point] = {}
    for r in results:
        metrics = _followed(r)
        for key, m in r.keyed():
            for metric in metrics:
                value = _value(m, metric)
                if value is None:
                    continue
                verdicts = [v for v in r.verdicts if v.metric == metric and (v.measurement or key) == key
                            and getattr(v, "stage", None) is None]  # not a stage's verdicts
                points[(key, metric)] = _point(value, verdicts)
    return points


def _cells(runs: Sequence[Run]) -> Dict[Tuple[str, str], Dict[int, Point]]:
    """(measurement key, metric) -> run index -> point."""
    cells: Dict[Tuple[str, str], Dict[int, Point]] = {}
    for i, run in enumerate(runs):
        for cell, point in run.points.items():
            cells.setdefault(cell, {})[i] = point
    return cells


def series(runs: Sequence[Run], alpha: float = 0.01, drift_alpha: float = 0.05,
           min_change: float = 0.01) -> List[Series]:
    """Every (measurement key, metric) of the runs (one environment), with its trend."""
    out = []
    for (key, metric), by_run in _cells(runs).items():
        s = Series(key=key, metric=metric, points=[by_run.get(i) for i in range(len(runs))])
        values = [p.value for p in s.points if p is not None]
        s.trend = analyse(values, alpha=alpha, drift_alpha=drift_alpha, min_change=min_change)
        # the trend's indices count present runs only: map them back to runs
        present = s.present
        for step in s.trend.steps:
            step.at = present[step.at]
        out.append(s)
    _across_the_suite(out, alpha, drift_alpha)
    order = list(METRICS)
    return sorted(out, key=lambda s: (natural_key(s.key), order.index(s.metric)))


def _across_the_suite(found: List[Series], alpha: float, drift_alpha: float) -> None:
    """Keep only the steps and drifts that stay discoveries among all the suite's metrics
    (Benjamini-Hochberg): hundreds of metrics would otherwise turn noise into findings."""
    steps = [(s, st) for s in found for st in s.trend.steps]
    keep = benjamini_hochberg([st.p for _, st in steps], alpha, tests=len(found))
    for (s, st), ok in zip(steps, keep):
        if not ok:
            s.trend.steps.remove(st)
    drifts = [s for s in found if s.trend.drift is not None]
    keep = benjamini_hochberg([s.trend.drift.p for s in drifts], drift_alpha, tests=len(found))  # type: ignore[union-attr]
    for s, ok in zip(drifts, keep):
        if not ok:
            s.trend.drift = None


# -- words ---------------------------------------------------------------------------------------
def step_lines(runs: Sequence[Run], found: Sequence[Series]) -> List[Tuple[str, str, str]]:
    """(test key, metric, what happened) per step, worse ones first."""
    rows = []
    for s in found:
        for step in s.trend.steps:
            rows.append((s.worse(step.change), s.key, s.metric,
                         f"{render.change_text(s.worse(step.change))} {where_text(runs, step.at)}; "
                         f"p={step.p:.2g}"))
    rows.sort(key=lambda r: -r[0])
    return [r[1:] for r in rows]


def drift_lines(found: Sequence[Series], confidence: float = 0.95) -> List[Tuple[str, str, str]]:
    rows = []
    for s in found:
        d = s.trend.drift
        if d is None:
            continue
        per_run = s.worse(math.expm1(d.slope))
        lo, hi = sorted(s.worse(math.expm1(x)) for x in d.ci)
        rows.append((s.worse(d.total), s.key, s.metric,
                     f"{render.change_text(per_run, 2)} per run ({confidence * 100:.3g}% CI "
                     f"{render.worse_interval((lo, hi), 2)}), {render.change_text(s.worse(d.total))} over "
                     f"{d.runs} runs; Mann-Kendall p={d.p:.2g}, tau={d.tau:+.2f}"))
    rows.sort(key=lambda r: -r[0])
    return [r[1:] for r in rows]


def text(runs: Sequence[Run], found: Sequence[Series], width: int = 0) -> List[str]:
    env = env_text(runs[0].env)
    head = (f"history of {len(runs)} runs ({runs[0].date} .. {runs[-1].date}) on {env}: "
            f"{len({s.key for s in found})} tests, {len(found)} metrics")
    lines = textwrap.wrap(head, width, subsequent_indent="  ") if width else [head]
    steps, drifts = step_lines(runs, found), drift_lines(found)

    def block(title: str, rows: List[Tuple[str, str, str]]) -> None:
        lines.append(title)
        by_test: Dict[str, List[Tuple[str, str]]] = {}
        for key, metric, what in rows:
            by_test.setdefault(key, []).append((metric, what))
        for key, items in by_test.items():
            pieces = [f"  {key}"] + [f"    {metric}: {what}" for metric, what in items]
            for piece in pieces:
                lines.extend(textwrap.wrap(piece, width, subsequent_indent="      ", break_on_hyphens=False,
                                           break_long_words=False) if width else [piece])

    if steps:
        block("steps (a change point between two runs):", steps)
    if drifts:
        block("drifting slowly in one direction:", drifts)
    if not steps and not drifts:
        lines.append("no step and no drift")
    return lines


def markdown(runs: Sequence[Run], found: Sequence[Series]) -> List[str]:
    """The findings as a Markdown section (for the GitHub step summary)."""
    env = env_text(runs[0].env)
    lines = [f"### Trends over {len(runs)} runs ({runs[0].date} .. {runs[-1].date}), {env}", ""]
    steps, drifts = step_lines(runs, found), drift_lines(found)
    for title, rows in (("Steps (a change point between two runs)", steps),
                        ("Drifting slowly in one direction", drifts)):
        if rows:
            lines += [f"**{title}**", "", "| test | metric | what |", "|---|---|---|"]
            lines += [f"| `{k}` | {m} | {w.replace('|', '/')} |" for k, m, w in rows]
            lines.append("")
    if not steps and not drifts:
        lines += [f"No step and no drift in {len(found)} metrics of {len({s.key for s in found})} tests.", ""]
    return lines


# -- pictures ------------------------------------------------------------------------------------
def _band(ax: Any, s: Series, present: List[int], pts: List[Point], factor: float) -> Tuple[List[float], List[float]]:
    """The baseline (dashed) and its tolerance band (green; the bad side's edge red); returns the
    baselines and the tolerance limits drawn, in display units."""
    base = [(i + 1, p.baseline / factor, p.tolerance) for i, p in zip(present, pts)
            if p.baseline is not None and p.tolerance is not None]
    if not base:
        return [], []
    sign = 1 if METRICS[s.metric].worse == "higher" else -1
    bx = [b[0] for b in base]
    by = [b[1] for b in base]
    good = [y * (1 - sign * b[2]) for y, b in zip(by, base)]
    bad = [y * (1 + sign * b[2]) for y, b in zip(by, base)]
    ax.fill_between(bx, good, bad, step="mid", color="#e8f5e9", label="tolerance band")
    ax.step(bx, by, where="mid", color="black", linestyle="--", lw=1, label="baseline")
    ax.step(bx, bad, where="mid", color="#c62828", lw=0.8, label="tolerance limit")
    return by, bad


def _bounds(ax: Any, s: Series, present: List[int], pts: List[Point], factor: float) -> List[float]:
    """Absolute bounds (red, dotted); returns them in display units."""
    thresholds = [(i + 1, p.threshold / factor) for i, p in zip(present, pts) if p.threshold is not None]
    if not thresholds:
        return []
    last = [p for p in pts if p.threshold is not None][-1]
    ax.step([t[0] for t in thresholds], [t[1] for t in thresholds], where="mid", color="#c62828",
            linestyle=":", lw=1, label=f"bound {last.comparator or ''} "
                                         f"{render.format_value(s.metric, last.threshold)}")
    return [t[1] for t in thresholds]


def _errors(pts: List[Point], factor: float) -> Any:
    """The values' intervals as error bars (None when no run has one)."""
    if not any(p.ci for p in pts):
        return None
    return [[max(0.0, (p.value - p.ci[0]) / factor) if p.ci else 0 for p in pts],
            [max(0.0, (p.ci[1] - p.value) / factor) if p.ci else 0 for p in pts]]


def _trend(ax: Any, s: Series, xs: List[int], pts: List[Point], factor: float) -> None:
    """Steps (vertical lines) and a drift's Theil-Sen line."""
    for step in s.trend.steps:
        ax.axvline(step.at + 0.5, color="#f57c00", linestyle="-.", lw=1.2)
        ax.annotate(f"step: {render.change_text(s.worse(step.change))}", (step.at + 0.5, 1.0),
                    xycoords=("data", "axes fraction"), xytext=(3, -12), textcoords="offset points",
                    fontsize=7, color="#e65100")
    d = s.trend.drift
    if d is not None:
        y0 = sorted(math.log(p.value) - d.slope * k for k, p in enumerate(pts))[len(pts) // 2]
        ax.plot(xs, [math.exp(y0 + d.slope * k) / factor for k in range(len(xs))], color="#e65100",
                linestyle="--", lw=1.2,
                label=f"drift {render.change_text(s.worse(math.expm1(d.slope)), 2)} per run")


def _metric_axes(ax: Any, s: Series) -> None:
    """One metric's runs: values with their intervals, baseline and band, bounds and trend."""
    present = s.present
    pts = [s.points[i] for i in present]
    factor, unit = display_unit(s.metric, sorted(p.value for p in pts)[len(pts) // 2])  # type: ignore[union-attr]
    xs = [i + 1 for i in present]
    ys = [p.value / factor for p in pts]  # type: ignore[union-attr]
    baselines, limits = _band(ax, s, present, pts, factor)  # type: ignore[arg-type]
    limits = limits + _bounds(ax, s, present, pts, factor)  # type: ignore[arg-type]
    yerr = _errors(pts, factor)  # type: ignore[arg-type]
    ax.errorbar(xs, ys, yerr=yerr, fmt="o-", color="#1f77b4", ms=4, lw=1, capsize=2, label=s.metric)
    _limits(ax, ys, yerr, baselines, limits)
    _trend(ax, s, xs, pts, factor)  # type: ignore[arg-type]
    ax.set_ylabel(f"{s.metric}\n({unit.strip() or '-'})", fontsize="small")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="x-small", loc="best", ncol=3)


def plot(plt: Any, runs: Sequence[Run], found: Sequence[Series], path: Path) -> Path:
    """One test's metrics over the runs: values with their intervals, the baseline (dashed) and
    its tolerance band (green; the bad side's edge red), absolute bounds (red, dotted), steps
    (vertical lines) and a drift's Theil-Sen line."""
    n = len(found)
    fig, axes = plt.subplots(n, 1, figsize=(10, 2.3 * n + 1.0), sharex=True, squeeze=False)
    axes = axes[:, 0]
    for ax, s in zip(axes, found):
        _metric_axes(ax, s)
    axes[-1].set_xticks(list(range(1, len(runs) + 1)))
    axes[-1].set_xticklabels(tick_labels(runs), fontsize=7)
    axes[-1].set_xlabel("run, oldest first")
    fig.suptitle(f"{found[0].key}\n{env_text(runs[0].env)}", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _limits(ax: Any, ys: List[float], yerr: Any, baselines: List[float], limits: List[float]) -> None:
    """The y range of the values, their intervals and the baseline; a tolerance limit or bound
    joins it when it lies within one more span (else it is off the scale, not squashing the runs)."""
    lo = min(ys + baselines)
    hi = max(ys + baselines)
    if yerr is not None:
        lo = min(lo, min(y - e for y, e in zip(ys, yerr[0])))
        hi = max(hi, max(y + e for y, e in zip(ys, yerr[1])))
    span = (hi - lo) or abs(hi) * 0.02 or 1.0
    for x in limits:
        if lo - span <= x <= hi + span:
            lo, hi = min(lo, x), max(hi, x)
    pad = (hi - lo) * 0.12 or span * 0.12
    ax.set_ylim(lo - pad, hi + pad)


#: the most rows the overview shows (the metrics that moved most, flagged ones first)
OVERVIEW_ROWS = 80


def _changes(s: Series) -> List[float]:
    """Each run's value as the change from the series' first run, % worse (NaN: not measured)."""
    first = s.points[s.present[0]].value  # type: ignore[union-attr]
    return [float("nan") if p is None else s.worse(p.value / first - 1) for p in s.points]


def _overview_rows(found: Sequence[Series]) -> Tuple[List[Series], int]:
    """The series with 2+ runs; with more than the overview shows, those that moved most
    (flagged first). Returns them and how many were left out."""
    rows = [s for s in found if len(s.present) >= 2]
    hidden = max(0, len(rows) - OVERVIEW_ROWS)
    if hidden:
        moved = {id(s): max(abs(x) for x in _changes(s) if x == x) for s in rows}
        keep = sorted(rows, key=lambda s: (not (s.flagged or s.troubled), -moved[id(s)]))[:OVERVIEW_ROWS]
        rows = [s for s in rows if s in keep]
    return rows, hidden


def overview(plt: Any, runs: Sequence[Run], found: Sequence[Series], path: Path) -> Optional[Path]:
    """Every metric's runs as the change from its first run, % worse (red) or better (blue), a
    row per test and metric; steps are outlined, drifting rows marked. With many metrics, the
    ones that moved most (flagged first) get the rows."""
    rows, hidden = _overview_rows(found)
    if not rows:
        return None
    limit = 0.10
    grid = [[max(-limit, min(limit, x)) if x == x else x for x in _changes(s)] for s in rows]
    fig, ax = plt.subplots(figsize=(max(7.0, 0.35 * len(runs) + 6), 0.22 * len(rows) + 1.9))
    image = ax.imshow([[x * 100 for x in r] for r in grid], aspect="auto", cmap="RdBu_r",
                      vmin=-limit * 100, vmax=limit * 100, interpolation="nearest")
    for y, s in enumerate(rows):
        for step in s.trend.steps:
            ax.plot([step.at - 0.5, step.at - 0.5], [y - 0.5, y + 0.5], color="black", lw=2)
    labels = [f"{s.key.split('::', 1)[-1]} {s.metric}" + (" (drift)" if s.trend.drift else "") for s in rows]
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=6)
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels(tick_labels(runs), fontsize=6)
    ax.set_xlabel("run, oldest first; black bar: a step before that run")
    bar = fig.colorbar(image, ax=ax, fraction=0.03)
    bar.set_label(f"% worse than its first run\n(clipped at {limit:.0%})", fontsize="small")
    more = f" (the {len(rows)} that moved most)" if hidden else ""
    ax.set_title(f"History of {len(rows) + hidden} metrics over {len(runs)} runs{more}\n{env_text(runs[0].env)}",
                 fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
