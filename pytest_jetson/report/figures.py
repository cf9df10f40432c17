"""``pytest-jetson plot REPORT.json...``: figures from JSON reports.

From whatever measurements the reports hold:

- ``throughput_vs_processes.png``: per-process throughput, total throughput and memory of all
  processes against the number of concurrent processes, a row per device (the concurrency study);
- ``batch_scaling.png``: throughput and board power of one process against batch size;
- ``pareto_power_modes.png``: latency against energy per item across power modes, each series's
  Pareto front dashed in its colour (the energy-roofline study; pass one report per power mode);
- ``measurements.png``: every measurement's throughput, one row per test, one bar per report:
  drawn from any report, so a plot command always has something to show;
- ``comparison.png``: each bound's change against its baseline with its tolerance band (the
  last report's own verdicts; with two reports, the second compared with the first).

Several reports are kept apart: a series that two reports measured at the same point is split,
one line per report, labelled with the report's name; reports of different power modes join into
one series (that is what a Pareto front across modes needs). Devices get a row each, never mixed.
A series's colour is its own; line style says precision. Axes spanning more than a decade are
logarithmic with plain tick labels (1, 2, 5 x 10^k); others are linear. A figure whose data the
reports lack is skipped with a line saying so. Needs the ``plots`` extra.
"""

import os
from collections import defaultdict
from pathlib import Path, PurePath
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from ..gate.reports import compare_reports
from ..models.reference import resolve
from ..run.measurement import Measurement, PoolMeasurement, Spread
from . import jsonreport
from .jsonreport import results
from .plots import comparison, pyplot, verdict_label
from .text import natural_key


def iter_measurements(doc: Any, path: Any = "") -> Iterator[Tuple[str, str, Measurement]]:
    """(test node id, baseline key, measurement) for every measurement a report holds; a test the
    report holds in another shape is a BaselineError naming ``path``."""
    for r in results(doc, path):
        for key, m in r.keyed():
            yield r.nodeid, key, m


def model_label(model: str) -> str:
    """A model as a legend names it: a zoo name, or an ONNX file's path relative to the working
    directory (its name when it lies elsewhere): never a /home/... path."""
    if not resolve(model).is_file:
        return model
    if os.path.isabs(model):
        rel = os.path.relpath(model) if not os.path.relpath(model).startswith("..") else PurePath(model).name
        return PurePath(rel).as_posix()
    return PurePath(model).as_posix()


def _model(m: Measurement) -> str:
    """The model a measurement ran: a pool of one model's tenants by that model."""
    workers = getattr(m, "workers", None) or []
    models = {w.model for w in workers}
    model = m.model or m.environment.get("model") or m.name
    if workers and len(models) == 1:
        model = models.pop() or model
    return model_label(str(model))


def _homogeneous(m: Measurement, precision: str, accelerator: str) -> bool:
    """A single measurement, or a pool of identical tenants; mixed pools (models, precisions, GPU
    beside DLA) are another experiment and stay out of the scaling figures."""
    workers = getattr(m, "workers", None)
    if workers is None:
        return True
    return len({w.model for w in workers}) <= 1 and precision != "mixed" and "+" not in accelerator


class Point:
    """The fields of one measurement that the figures plot; ``run`` names its report."""

    def __init__(self, m: Measurement, run: str = "", test: str = "", key: str = "") -> None:
        env = m.environment or {}
        self.run = run
        self.test = test
        self.key = key or test
        self.kind = "pool" if isinstance(m, PoolMeasurement) else "measurement"
        self.model = _model(m)
        self.precision = m.precision or env.get("precision") or "?"
        self.batch = m.batch or env.get("batch") or 1
        self.device = env.get("device") or "?"
        self.power_mode = env.get("power_mode") or "-"
        self.accelerator = env.get("accelerator") or "gpu"
        self.processes = len(m.workers) if isinstance(m, PoolMeasurement) else 1
        self.homogeneous = _homogeneous(m, self.precision, self.accelerator)
        self.throughput = m.throughput
        ppt = m.per_process_throughput
        self.per_process = ppt.mean if isinstance(ppt, Spread) else self.throughput
        self.memory = m.memory
        self.power = m.power
        self.energy = m.energy
        self.latency = m.latency_mean

    @property
    def label(self) -> str:
        text = f"{self.model} {self.precision}"
        return text if self.accelerator == "gpu" else f"{text} ({self.accelerator})"


def run_names(paths: Sequence[Path]) -> List[str]:
    """Short, distinct names of reports: their stems, with parent folders where stems repeat."""
    names = [p.stem for p in paths]
    if len(set(names)) == len(names):
        return names
    return [PurePath(*p.parts[-2:]).with_suffix("").as_posix() for p in paths]


def load_report(path: Path) -> Dict[str, Any]:
    return jsonreport.load(path)


def load_points(path: Path, run: str = "") -> List[Point]:
    doc = load_report(Path(path))
    return [Point(m, run or Path(path).stem, test, key) for test, key, m in iter_measurements(doc, path)]


def pareto_front(points: Sequence[Tuple[float, float]]) -> List[int]:
    """Indices of the points no other point beats on both axes (lower is better on both)."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front, best = [], float("inf")
    for i in order:
        if points[i][1] < best:
            front.append(i)
            best = points[i][1]
    return front


LINESTYLES = {"int8": "-", "fp16": "--", "tf32": ":", "fp32": "-.", "bf16": (0, (3, 1, 1, 1)),
              "fp8": (0, (5, 2))}
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf", "#393b79", "#ad494a", "#637939", "#e7ba52", "#7b4173", "#3182bd")


class Styles:
    """A colour per series, a line style per precision, a marker per report (several reports)
    or per accelerator (one)."""

    def __init__(self, runs: Sequence[str]) -> None:
        self.runs = list(runs)
        self.colours: Dict[str, str] = {}

    def __call__(self, series: str, p: Point) -> Dict[str, Any]:
        # the same configuration from several reports shares its colour (the marker tells them apart)
        base = series.rsplit(" · ", 1)[0] if p.run and series.endswith(f" · {p.run}") else series
        colour = self.colours.setdefault(base, PALETTE[len(self.colours) % len(PALETTE)])
        look = dict(color=colour, linestyle=LINESTYLES.get(p.precision, "-"), label=series)
        if len(self.runs) > 1 and p.run in self.runs:
            i = self.runs.index(p.run)
            # the first report filled, the others hollow and larger: points that coincide stay visible
            look.update(marker=MARKERS[i % len(MARKERS)], markersize=6 + 2 * i)
            if i:
                look["markerfacecolor"] = "none"
        else:
            look["marker"] = {"gpu": "o", "dla0": "s", "dla1": "D"}.get(p.accelerator, "^")
        return look


def split_runs(groups: Dict[str, List[Point]], x: Callable[[Point], Any]) -> Dict[str, List[Point]]:
    """A series two reports measured at the same x is one series per report (else the line would
    zig-zag between them), labelled with the report's name."""
    out: Dict[str, List[Point]] = {}
    for key, pts in groups.items():
        runs = sorted({p.run for p in pts}, key=natural_key)
        xs = [x(p) for p in pts]
        if len(runs) > 1 and len(set(xs)) < len(xs):
            for run in runs:
                out[f"{key} · {run}"] = [p for p in pts if p.run == run]
        else:
            out[key] = pts
    return out


def readable_scale(ax: Any, values: Iterable[Optional[float]], axis: str = "y") -> None:
    """Linear when the values span less than a decade; else logarithmic with ticks at 1, 2 and 5
    times the powers of ten, printed as plain numbers (not a lone 10^3)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    vals = [v for v in values if v is not None and v > 0]
    if not vals or max(vals) / min(vals) < 10:
        return
    getattr(ax, f"set_{axis}scale")("log")
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    target.set_minor_formatter(NullFormatter())


def _log2_ticks(ax: Any, values: List[int]) -> None:
    if len(values) > 1 and max(values) / max(min(values), 1) >= 4:
        ax.set_xscale("log", base=2)
    ax.set_xticks(values)
    ax.set_xticklabels([str(v) for v in values])
    ax.minorticks_off()


def _plot_series(ax: Any, series: Dict[str, List[Point]], x: Callable[[Point], Any],
                 y: Callable[[Point], Optional[float]], style: Styles) -> List[float]:
    ys: List[float] = []
    for key in sorted(series, key=natural_key):
        pts = sorted((q for q in series[key] if y(q) is not None), key=x)
        if pts:
            ax.plot([x(q) for q in pts], [y(q) for q in pts], **style(key, pts[0]))
            ys += [y(q) for q in pts]  # type: ignore[misc]
    ax.grid(True, which="both", alpha=0.3)
    return ys


def _legend(fig: Any, axes: Iterable[Any]) -> None:
    handles, labels = {}, []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
    if handles:
        fig.legend([handles[lab] for lab in labels], labels, loc="center left",
                   bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)


def _save(fig: Any, out: Path, name: str, written: List[Path]) -> None:
    fig.tight_layout()
    path = out / name
    fig.savefig(path, dpi=120, bbox_inches="tight")
    written.append(path)


def _by_device(points: Iterable[Point], key: Callable[[Point], str]) -> Dict[str, Dict[str, List[Point]]]:
    out: Dict[str, Dict[str, List[Point]]] = defaultdict(lambda: defaultdict(list))
    for p in points:
        out[p.device][key(p)].append(p)
    return out


def _series_by_device(points: Iterable[Point], series: Callable[[Point], str],
                      x: Callable[[Point], Any]) -> Dict[str, Dict[str, List[Point]]]:
    """Per device, the series (``series`` names each point's) measured at 2+ values of ``x``,
    split by report where two reports measured the same point."""
    groups = {d: split_runs(g, x) for d, g in _by_device(points, series).items()}
    groups = {d: {k: v for k, v in g.items() if len({x(q) for q in v}) >= 2} for d, g in groups.items()}
    return {d: g for d, g in groups.items() if g}


def _scaling(plt: Any, points: List[Point], style: Styles, out: Path, written: List[Path],
             skipped: List[str]) -> None:
    pools = [p for p in points if p.kind == "pool" and p.homogeneous and p.per_process]
    groups = _series_by_device(pools, lambda p: f"{p.label} b{p.batch} {p.power_mode}", lambda p: p.processes)
    if not groups:
        skipped.append("throughput/memory vs processes: no pool measured at 2+ process counts")
        return
    rows = len(groups)
    fig, axes = plt.subplots(rows, 3, figsize=(15, 4.2 * rows), squeeze=False)
    for row, (device, series) in enumerate(sorted(groups.items())):
        a1, a2, a3 = axes[row]
        y1 = _plot_series(a1, series, lambda q: q.processes, lambda q: q.per_process, style)
        y2 = _plot_series(a2, series, lambda q: q.processes, lambda q: q.throughput, style)
        _plot_series(a3, series, lambda q: q.processes, lambda q: q.memory / 2 ** 30 if q.memory else None, style)
        a1.set(title=f"{device}: throughput per process", ylabel="items/s per process")
        a2.set(title=f"{device}: total throughput", ylabel="items/s, all processes")
        a3.set(title=f"{device}: memory, all processes", ylabel="GiB")
        counts = sorted({q.processes for v in series.values() for q in v})
        for ax in (a1, a2):
            _log2_ticks(ax, counts)
        a3.set_xticks(counts)  # linear: memory grows linearly with processes
        for ax in (a1, a2, a3):
            ax.set_xlabel("concurrent processes")
        readable_scale(a1, y1)
        readable_scale(a2, y2)
    fig.suptitle("Concurrent processes time-slice the GPU: per-process throughput falls, memory grows "
                 "as N x (model + 2 x batch)", y=1.0)
    _legend(fig, axes.ravel())
    _save(fig, out, "throughput_vs_processes.png", written)
    plt.close(fig)


def _batching(plt: Any, points: List[Point], style: Styles, out: Path, written: List[Path],
              skipped: List[str]) -> None:
    singles = [p for p in points if p.kind != "pool" and isinstance(p.batch, int)]
    groups = _series_by_device(singles, lambda p: f"{p.label} {p.power_mode}", lambda p: p.batch)
    if not groups:
        skipped.append("throughput/power vs batch: no model measured at 2+ batch sizes")
        return
    rows = len(groups)
    fig, axes = plt.subplots(rows, 2, figsize=(12, 4.2 * rows), squeeze=False)
    any_power = False
    for row, (device, series) in enumerate(sorted(groups.items())):
        a1, a2 = axes[row]
        y1 = _plot_series(a1, series, lambda q: q.batch, lambda q: q.throughput, style)
        _plot_series(a2, series, lambda q: q.batch, lambda q: q.power, style)
        any_power = any_power or any(q.power for v in series.values() for q in v)
        a1.set(title=f"{device}: throughput, one process", ylabel="items/s")
        readable_scale(a1, y1)
        a2.set(title=f"{device}: mean board power", ylabel="W")
        batches = sorted({q.batch for v in series.values() for q in v})
        for ax in (a1, a2):
            _log2_ticks(ax, batches)
            ax.set_xlabel("batch size")
    fig.suptitle("Batching: throughput and power rise with batch, then plateau (GPU saturated or "
                 "DVFS at the mode's budget)", y=1.0)
    _legend(fig, axes.ravel())
    _save(fig, out, "batch_scaling.png", written)
    plt.close(fig)
    if not any_power:
        skipped.append("power vs batch: the reports have no power readings (panels left empty)")


def _pareto_series(points: List[Point]) -> Dict[str, List[Point]]:
    """Single measurements with latency and energy, a series per configuration (and device, when
    there are several) measured in 2+ power modes."""
    several = len({p.device for p in points}) > 1
    groups: Dict[str, List[Point]] = defaultdict(list)
    for p in points:
        if p.kind != "pool" and p.latency and p.energy:
            groups[f"{p.label} b{p.batch}" + (f" ({p.device})" if several else "")].append(p)
    return {k: v for k, v in split_runs(groups, lambda p: p.power_mode).items()
            if len({p.power_mode for p in v}) >= 2}


def _draw_front(ax: Any, xy: List[Tuple[float, float]]) -> None:
    """The Pareto front of every point drawn: dashed and ringed."""
    front = sorted(pareto_front(xy), key=lambda i: xy[i][0])
    fx, fy = [xy[i][0] for i in front], [xy[i][1] for i in front]
    ax.plot(fx, fy, color="black", linestyle="--", lw=1.5, zorder=4, label="Pareto front (all series)")
    ax.scatter(fx, fy, s=110, facecolors="none", edgecolors="black", lw=1.2, zorder=5)


def _pareto(plt: Any, points: List[Point], style: Styles, out: Path, written: List[Path],
            skipped: List[str]) -> None:
    series = _pareto_series(points)
    if not series:
        skipped.append("Pareto front: no model measured with energy in 2+ power modes "
                       "(pass one report per power mode)")
        return
    modes = sorted({p.power_mode for v in series.values() for p in v}, key=natural_key)
    marker = {m: MARKERS[i % len(MARKERS)] for i, m in enumerate(modes)}
    fig, ax = plt.subplots(figsize=(11, 6.5))
    everything: List[Tuple[float, float]] = []
    for label in sorted(series, key=natural_key):
        pts = sorted(series[label], key=lambda p: p.latency)
        colour = style(label, pts[0])["color"]
        xy = [(p.latency * 1e3, p.energy * 1e3) for p in pts]
        ax.plot([x for x, _ in xy], [y for _, y in xy], color=colour, lw=0.8, alpha=0.7, label=label)
        for p, (x, y) in zip(pts, xy):
            ax.scatter([x], [y], color=colour, marker=marker[p.power_mode], s=30, zorder=3)
        everything += xy
    _draw_front(ax, everything)
    for m in modes:
        ax.scatter([], [], color="#555555", marker=marker[m], label=f"power mode {m}")
    readable_scale(ax, [x for x, _ in everything], "x")
    readable_scale(ax, [y for _, y in everything], "y")
    devices = {p.device for p in points}
    where = f" on {sorted(devices)[0]}" if len(devices) == 1 else ""
    ax.set(xlabel="latency per batch (ms)", ylabel="energy per item (mJ)",
           title=f"Latency vs energy across power modes{where}: a line per configuration, a marker "
                 f"per mode; dashed and ringed: the Pareto front")
    ax.title.set_fontsize("small")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    _save(fig, out, "pareto_power_modes.png", written)
    plt.close(fig)


def _measurements(plt: Any, points: List[Point], runs: Sequence[str], out: Path, written: List[Path],
                  skipped: List[str]) -> None:
    """Every measurement's throughput: a row per test, a bar per report."""
    rows: Dict[str, Dict[str, Point]] = defaultdict(dict)
    where = sorted({(p.device, p.power_mode) for p in points if p.throughput})
    for p in points:
        if p.throughput:
            name = p.key.split("::", 1)[-1]
            rows[name if len(where) == 1 else f"{name} ({p.device}, {p.power_mode})"][p.run] = p
    if not rows:
        skipped.append("measurements: no measurement has a throughput")
        return
    names = sorted(rows, key=natural_key)
    n, k = len(names), max(1, len(runs))
    height = 0.8 / k
    fig, ax = plt.subplots(figsize=(10, 0.22 * n * max(1.0, k * 0.7) + 1.6))
    values: List[float] = []
    for j, run in enumerate(runs):
        ys = [i - 0.4 + height * (j + 0.5) for i in range(n)]
        xs = [rows[name][run].throughput if run in rows[name] else 0 for name in names]
        ax.barh(ys, xs, height=height * 0.9, color=PALETTE[j % len(PALETTE)], label=run)
        values += [x for x in xs if x]
    readable_scale(ax, values, "x")
    ax.set_yticks(range(n))
    ax.set_yticklabels(names, fontsize=7)
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlabel("throughput (items/s)")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    if k > 1:
        ax.legend(fontsize=8, loc="lower right")
    place = f" on {where[0][0]}, power mode {where[0][1]}" if len(where) == 1 else ""
    ax.set_title(f"Throughput of every measurement{place}" + (f", {k} reports side by side" if k > 1 else ""),
                 fontsize="small")
    _save(fig, out, "measurements.png", written)
    plt.close(fig)


def _comparison(plt: Any, docs: Sequence[Dict[str, Any]], runs: Sequence[str], out: Path,
                written: List[Path], skipped: List[str]) -> None:
    if len(docs) == 2:
        verdicts = compare_reports(results(docs[0], runs[0]), results(docs[1], runs[1]),
                                   recorded=docs[0].get("created", ""))
        rows = [(verdict_label(v.test, v), v) for v in verdicts]
        title = f"{runs[1]} against {runs[0]}"
    else:
        rows = [(verdict_label(r.nodeid, v), v) for r in results(docs[-1], runs[-1])
                for v in r.verdicts if v.kind == "relative" and v.baseline is not None]
        title = f"{runs[-1]} against its baselines"
    path = comparison(plt, rows, out / "comparison.png", title)
    if path is None:
        skipped.append("comparison: no bound compared against a baseline")
    else:
        written.append(path)


def draw(points: List[Point], out: Path, docs: Sequence[Dict[str, Any]] = (),
         runs: Sequence[str] = ()) -> Tuple[List[Path], List[str]]:
    """Write every figure the points allow; returns the files written and the figures skipped.
    ``docs``/``runs``: the reports and their names, for the comparison."""
    plt = pyplot("plots need")
    out.mkdir(parents=True, exist_ok=True)
    written: List[Path] = []
    skipped: List[str] = []
    runs = list(runs) or sorted({p.run for p in points}, key=natural_key)
    style = Styles(runs)
    _scaling(plt, points, style, out, written, skipped)
    _batching(plt, points, style, out, written, skipped)
    _pareto(plt, points, style, out, written, skipped)
    _measurements(plt, points, runs, out, written, skipped)
    if docs:
        _comparison(plt, docs, runs, out, written, skipped)
    return written, skipped
