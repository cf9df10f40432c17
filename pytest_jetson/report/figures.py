"""``pytest-jetson plot report.json --out DIR``: the research's figures from a JSON report.

Draws, from whatever measurements a report holds:

- ``throughput_vs_processes.png``: per-process and total throughput against the number of
  concurrent processes, one line per model and precision (the concurrency study);
- ``memory_vs_processes.png``: memory of all processes against processes;
- ``throughput_vs_batch.png`` and ``power_vs_batch.png``: one process, against batch size;
- ``pareto_power_modes.png``: latency against energy per item across power modes, with the
  Pareto front drawn and labelled by mode (the energy-roofline study).

A figure whose data the report lacks is skipped with a line saying so. Needs the ``plots`` extra.
"""

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

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
        self.model = d.get("model") or env.get("model") or d.get("name", "?")
        self.precision = d.get("precision") or env.get("precision") or "?"
        self.batch = int(d.get("batch") or env.get("batch") or 1)
        self.device = env.get("device") or "?"
        self.power_mode = env.get("power_mode") or "?"
        self.accelerator = env.get("accelerator") or (d.get("extra") or {}).get("accelerator") or "gpu"
        self.processes = len(d.get("workers") or []) if d.get("kind") == "pool" else 1
        self.throughput = summary.get("throughput")
        ppt = summary.get("per_process_throughput")
        self.per_process = ppt.get("mean") if isinstance(ppt, dict) else self.throughput
        self.memory = summary.get("memory")
        self.power = summary.get("power")
        self.energy = summary.get("energy")
        self.latency = summary.get("latency_mean")

    @property
    def series(self) -> str:
        label = f"{self.model} {self.precision}"
        if self.accelerator != "gpu":
            label += f" {self.accelerator}"
        return label


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


def _save(fig, out: Path, name: str, written: List[Path]) -> None:
    fig.tight_layout()
    path = out / name
    fig.savefig(path, dpi=120)
    written.append(path)


def _lines(ax, groups: Dict[str, List[Tuple[float, float]]], marker: str = "o") -> None:
    for label, xy in sorted(groups.items()):
        xy = sorted(xy)
        ax.plot([x for x, _ in xy], [y for _, y in xy], marker=marker, label=label)
    ax.grid(True, alpha=0.3)
    if groups:
        ax.legend(fontsize=8)


def draw(points: List[Point], out: Path) -> Tuple[List[Path], List[str]]:
    """Write every figure the points allow; returns the files written and the figures skipped."""
    plt = _plt()
    out.mkdir(parents=True, exist_ok=True)
    written: List[Path] = []
    skipped: List[str] = []

    # concurrency: one line per (model, precision, batch); keep batch 1 when several exist
    by_proc: Dict[str, Dict[int, Point]] = defaultdict(dict)
    for p in points:
        if p.per_process is not None:
            by_proc[f"{p.series} b{p.batch} ({p.device})"][p.processes] = p
    by_proc = {k: v for k, v in by_proc.items() if len(v) >= 2}
    if by_proc:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
        _lines(ax1, {k: [(n, q.per_process) for n, q in v.items()] for k, v in by_proc.items()})
        ax1.set(xlabel="concurrent processes", ylabel="throughput per process (items/s)",
                title="Per-process throughput falls as processes rise")
        _lines(ax2, {k: [(n, q.throughput) for n, q in v.items() if q.throughput] for k, v in by_proc.items()})
        ax2.set(xlabel="concurrent processes", ylabel="total throughput (items/s)",
                title="Total throughput saturates")
        for ax in (ax1, ax2):
            ax.set_xscale("log", base=2)
        _save(fig, out, "throughput_vs_processes.png", written)
        plt.close(fig)
        mem = {k: [(n, q.memory / 2 ** 30) for n, q in v.items() if q.memory] for k, v in by_proc.items()}
        mem = {k: v for k, v in mem.items() if v}
        if mem:
            fig, ax = plt.subplots(figsize=(7, 4.5))
            _lines(ax, mem)
            ax.set(xlabel="concurrent processes", ylabel="memory, all processes (GiB)",
                   title="Memory grows as N x (model + 2 x batch)")
            ax.set_xscale("log", base=2)
            _save(fig, out, "memory_vs_processes.png", written)
            plt.close(fig)
    else:
        skipped.append("throughput/memory vs processes: no model measured at 2+ process counts")

    singles = [p for p in points if p.processes == 1]
    by_batch: Dict[str, List[Point]] = defaultdict(list)
    for p in singles:
        by_batch[f"{p.series} ({p.device} {p.power_mode})"].append(p)
    by_batch = {k: v for k, v in by_batch.items() if len({p.batch for p in v}) >= 2}
    if by_batch:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        _lines(ax, {k: [(p.batch, p.throughput) for p in v if p.throughput] for k, v in by_batch.items()})
        ax.set(xlabel="batch size", ylabel="throughput (items/s)", title="Throughput against batch size")
        ax.set_xscale("log", base=2)
        _save(fig, out, "throughput_vs_batch.png", written)
        plt.close(fig)
        power = {k: [(p.batch, p.power) for p in v if p.power] for k, v in by_batch.items()}
        power = {k: v for k, v in power.items() if v}
        if power:
            fig, ax = plt.subplots(figsize=(7, 4.5))
            _lines(ax, power)
            ax.set(xlabel="batch size", ylabel="mean board power (W)",
                   title="Power rises with batch, then plateaus (DVFS)")
            ax.set_xscale("log", base=2)
            _save(fig, out, "power_vs_batch.png", written)
            plt.close(fig)
        else:
            skipped.append("power vs batch: the report has no power readings")
    else:
        skipped.append("throughput/power vs batch: no model measured at 2+ batch sizes")

    by_mode: Dict[str, Dict[str, Point]] = defaultdict(dict)
    for p in singles:
        if p.latency and p.energy:
            by_mode[f"{p.series} b{p.batch} ({p.device})"][p.power_mode] = p
    by_mode = {k: v for k, v in by_mode.items() if len(v) >= 2}
    if by_mode:
        fig, ax = plt.subplots(figsize=(7.5, 5))
        for label, modes in sorted(by_mode.items()):
            names = list(modes)
            xy = [(modes[m].latency * 1e3, modes[m].energy * 1e3) for m in names]
            ax.scatter([x for x, _ in xy], [y for _, y in xy], label=label)
            front = pareto_front(xy)
            ax.plot([xy[i][0] for i in front], [xy[i][1] for i in front], linestyle="--", alpha=0.6)
            for name, (x, y) in zip(names, xy):
                ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set(xlabel="latency per batch (ms)", ylabel="energy per item (mJ)",
               title="Latency vs energy across power modes (dashed: Pareto front)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        _save(fig, out, "pareto_power_modes.png", written)
        plt.close(fig)
    else:
        skipped.append("Pareto front: no model measured with energy in 2+ power modes")
    return written, skipped


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="pytest-jetson plot", description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path, help="JSON reports from --jetson-report-json")
    parser.add_argument("--out", type=Path, default=Path("perf-plots"), help="output directory")
    args = parser.parse_args(argv)
    points: List[Point] = []
    for report in args.reports:
        points.extend(load_points(report))
    if not points:
        print(f"no measurements in {', '.join(map(str, args.reports))}: nothing to plot")
        return 1
    written, skipped = draw(points, args.out)
    for path in written:
        print(f"wrote {path}")
    for line in skipped:
        print(f"skipped {line}")
    return 0
