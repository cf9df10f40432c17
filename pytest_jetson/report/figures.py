"""``pytest-jetson plot report.json --out DIR``: the research's figures from a JSON report.

Draws, from whatever measurements a report holds (colour: model; line style: precision; marker:
accelerator):

- ``throughput_vs_processes.png``: per-process throughput, total throughput and memory of all
  processes against the number of concurrent processes, a row per device (the concurrency study);
- ``batch_scaling.png``: throughput and board power of one process against batch size;
- ``pareto_power_modes.png``: latency against energy per item across power modes, with the
  Pareto front drawn and labelled by mode (the energy-roofline study).

A figure whose data the report lacks is skipped with a line saying so. Needs the ``plots`` extra.
"""

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Sequence, Tuple

from ..errors import ConfigError


def iter_measurements(node: Any) -> Iterator[Dict[str, Any]]:
    """Every serialised Measurement in a report, wherever the report's schema nests it."""
    if isinstance(node, dict):
        if node.get("kind") in ("measurement", "pool") and "latencies" in node and "batch" in node:
            yield node
            return
        for value in node.values():
            yield from iter_measurements(value)
    elif isinstance(node, list):
        for value in node:
            yield from iter_measurements(value)


class Point:
    """The fields of one measurement that the figures plot."""

    def __init__(self, d: Dict[str, Any]) -> None:
        env = d.get("environment") or {}
        summary = d.get("summary") or {}
        self.kind = d.get("kind", "measurement")
        self.model = d.get("model") or env.get("model") or d.get("name", "?")
        self.precision = d.get("precision") or env.get("precision") or "?"
        self.batch = d.get("batch") or env.get("batch") or 1
        self.device = env.get("device") or "?"
        self.power_mode = env.get("power_mode") or "?"
        self.accelerator = env.get("accelerator") or "gpu"
        workers = d.get("workers") or []
        self.processes = len(workers) if self.kind == "pool" else 1
        models = {w.get("model") for w in workers}
        # a pool of identical tenants; mixed pools (models, precisions, GPU beside DLA) are
        # another experiment and stay out of the scaling figures
        self.homogeneous = (self.kind != "pool" or (len(models) <= 1 and self.precision != "mixed"
                                                     and "+" not in self.accelerator))
        if self.kind == "pool" and models and len(models) == 1:
            self.model = models.pop() or self.model
        self.throughput = summary.get("throughput")
        ppt = summary.get("per_process_throughput")
        self.per_process = ppt.get("mean") if isinstance(ppt, dict) else self.throughput
        self.memory = summary.get("memory")
        self.power = summary.get("power")
        self.energy = summary.get("energy")
        self.latency = summary.get("latency_mean")

    @property
    def label(self) -> str:
        text = f"{self.model} {self.precision}"
        return text if self.accelerator == "gpu" else f"{text} ({self.accelerator})"


def load_points(path: Path) -> List[Point]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read report {path}: {exc.strerror}; pass the file written by "
                          "--jetson-report-json") from None
    except ValueError as exc:
        raise ConfigError(f"report {path} is not JSON ({exc}); pass the file written by "
                          "--jetson-report-json") from None
    return [Point(d) for d in iter_measurements(data)]


def pareto_front(points: Sequence[Tuple[float, float]]) -> List[int]:
    """Indices of the points no other point beats on both axes (lower is better on both)."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front, best = [], float("inf")
    for i in order:
        if points[i][1] < best:
            front.append(i)
            best = points[i][1]
    return front


def _plt():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError(
            "plots need matplotlib: pip install 'pytest-jetson[plots]'"
        ) from None
    return plt


LINESTYLES = {"int8": "-", "fp16": "--", "tf32": ":", "fp32": "-.", "bf16": (0, (3, 1, 1, 1)),
              "fp8": (0, (5, 2))}
MARKERS = {"gpu": "o", "dla0": "s", "dla1": "D"}


class _Styles:
    """One colour per model, one line style per precision, one marker per accelerator, so a
    figure with a dozen series still reads."""

    def __init__(self, points: Iterable[Point]) -> None:
        models = sorted({p.model for p in points})
        palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
                   "#7f7f7f", "#bcbd22", "#17becf"]
        self.colour = {m: palette[i % len(palette)] for i, m in enumerate(models)}

    def __call__(self, p: Point) -> Dict[str, Any]:
        return dict(color=self.colour[p.model], linestyle=LINESTYLES.get(p.precision, "-"),
                    marker=MARKERS.get(p.accelerator, "^"), label=p.label)


def _plot_series(ax, series: Dict[str, List[Point]], x, y, style: _Styles) -> None:
    for key in sorted(series):
        pts = sorted((q for q in series[key] if y(q) is not None), key=x)
        if pts:
            ax.plot([x(q) for q in pts], [y(q) for q in pts], **style(pts[0]))
    ax.grid(True, which="both", alpha=0.3)


def _legend(fig, axes) -> None:
    handles, labels = {}, []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
    if handles:
        fig.legend([handles[lab] for lab in labels], labels, loc="center left",
                   bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)


def _log2_ticks(ax, values: List[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(values)
    ax.set_xticklabels([str(v) for v in values])
    ax.minorticks_off()


def _save(fig, out: Path, name: str, written: List[Path]) -> None:
    fig.tight_layout()
    path = out / name
    fig.savefig(path, dpi=120, bbox_inches="tight")
    written.append(path)


def _by_device(points: Iterable[Point], key) -> Dict[str, Dict[str, List[Point]]]:
    out: Dict[str, Dict[str, List[Point]]] = defaultdict(lambda: defaultdict(list))
    for p in points:
        out[p.device][key(p)].append(p)
    return out


def _scaling(plt, points: List[Point], style: _Styles, out: Path, written: List[Path],
             skipped: List[str]) -> None:
    pools = [p for p in points if p.kind == "pool" and p.homogeneous and p.per_process]
    groups = _by_device(pools, lambda p: f"{p.label} b{p.batch} {p.power_mode}")
    groups = {d: {k: v for k, v in g.items() if len({q.processes for q in v}) >= 2} for d, g in groups.items()}
    groups = {d: g for d, g in groups.items() if g}
    if not groups:
        skipped.append("throughput/memory vs processes: no pool measured at 2+ process counts")
        return
    rows = len(groups)
    fig, axes = plt.subplots(rows, 3, figsize=(15, 4.2 * rows), squeeze=False)
    for row, (device, series) in enumerate(sorted(groups.items())):
        a1, a2, a3 = axes[row]
        _plot_series(a1, series, lambda q: q.processes, lambda q: q.per_process, style)
        _plot_series(a2, series, lambda q: q.processes, lambda q: q.throughput, style)
        _plot_series(a3, series, lambda q: q.processes,
                     lambda q: q.memory / 2 ** 30 if q.memory else None, style)
        a1.set(title=f"{device}: throughput per process", ylabel="items/s per process")
        a2.set(title=f"{device}: total throughput", ylabel="items/s, all processes")
        a3.set(title=f"{device}: memory, all processes", ylabel="GiB")
        counts = sorted({q.processes for v in series.values() for q in v})
        for ax in (a1, a2):
            _log2_ticks(ax, counts)
        a3.set_xticks(counts)  # linear: memory grows linearly with processes
        for ax in (a1, a2, a3):
            ax.set_xlabel("concurrent processes")
        a1.set_yscale("log")
        a2.set_yscale("log")
    fig.suptitle("Concurrent processes time-slice the GPU: per-process throughput falls, memory grows "
                 "as N x (model + 2 x batch)", y=1.0)
    _legend(fig, axes.ravel())
    _save(fig, out, "throughput_vs_processes.png", written)
    plt.close(fig)


def _batching(plt, points: List[Point], style: _Styles, out: Path, written: List[Path],
              skipped: List[str]) -> None:
    singles = [p for p in points if p.kind != "pool" and isinstance(p.batch, int)]
    groups = _by_device(singles, lambda p: f"{p.label} {p.power_mode}")
    groups = {d: {k: v for k, v in g.items() if len({q.batch for q in v}) >= 2} for d, g in groups.items()}
    groups = {d: g for d, g in groups.items() if g}
    if not groups:
        skipped.append("throughput/power vs batch: no model measured at 2+ batch sizes")
        return
    rows = len(groups)
    fig, axes = plt.subplots(rows, 2, figsize=(12, 4.2 * rows), squeeze=False)
    any_power = False
    for row, (device, series) in enumerate(sorted(groups.items())):
        a1, a2 = axes[row]
        _plot_series(a1, series, lambda q: q.batch, lambda q: q.throughput, style)
        _plot_series(a2, series, lambda q: q.batch, lambda q: q.power, style)
        any_power = any_power or any(q.power for v in series.values() for q in v)
        a1.set(title=f"{device}: throughput, one process", ylabel="items/s")
        a1.set_yscale("log")
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
        skipped.append("power vs batch: the report has no power readings (panels left empty)")


def _pareto(plt, points: List[Point], style: _Styles, out: Path, written: List[Path],
            skipped: List[str]) -> None:
    by_mode: Dict[str, Dict[str, Point]] = defaultdict(dict)
    for p in points:
        if p.kind != "pool" and p.latency and p.energy:
            by_mode[f"{p.label} b{p.batch} ({p.device})"][p.power_mode] = p
    by_mode = {k: v for k, v in by_mode.items() if len(v) >= 2}
    if not by_mode:
        skipped.append("Pareto front: no model measured with energy in 2+ power modes "
                       "(pass one report per power mode)")
        return
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for label, modes in sorted(by_mode.items()):
        names = list(modes)
        xy = [(modes[m].latency * 1e3, modes[m].energy * 1e3) for m in names]
        look = style(modes[names[0]])
        ax.scatter([x for x, _ in xy], [y for _, y in xy], color=look["color"],
                   marker=look["marker"], label=label, zorder=3)
        front = pareto_front(xy)
        ax.plot([xy[i][0] for i in front], [xy[i][1] for i in front], color=look["color"],
                linestyle="--", alpha=0.6)
        best = min(range(len(xy)), key=lambda i: xy[i][1])
        for i, (name, (x, y)) in enumerate(zip(names, xy)):
            text = f"{name} (least energy)" if i == best else name
            ax.annotate(text, (x, y), textcoords="offset points", xytext=(5, 5), fontsize=8)
    ax.set(xlabel="latency per batch (ms)", ylabel="energy per item (mJ)",
           title="Latency vs energy across power modes (dashed: Pareto front)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    _save(fig, out, "pareto_power_modes.png", written)
    plt.close(fig)


def draw(points: List[Point], out: Path) -> Tuple[List[Path], List[str]]:
    """Write every figure the points allow; returns the files written and the figures skipped."""
    plt = _plt()
    out.mkdir(parents=True, exist_ok=True)
    written: List[Path] = []
    skipped: List[str] = []
    style = _Styles(points)
    _scaling(plt, points, style, out, written, skipped)
    _batching(plt, points, style, out, written, skipped)
    _pareto(plt, points, style, out, written, skipped)
    return written, skipped
