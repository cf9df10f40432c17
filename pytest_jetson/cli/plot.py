"""``pytest-jetson plot REPORT.json... --out DIR``: figures from JSON reports (see
``report.figures`` for what each shows). Several reports are kept apart and labelled by name."""

import argparse
import sys
from pathlib import Path
from typing import List, Optional

from .. import fileio
from ..report.figures import Point, draw, iter_measurements, load_report, run_names
from ..report.model_filter import check_known, matches, models_of
from ..report.plots import pyplot


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="pytest-jetson plot",
        description="Draw figures from JSON reports: scaling with processes and batch, the latency/"
                    "energy Pareto front across power modes, every measurement's throughput, and "
                    "each bound's change against its baseline with its tolerance band. Several "
                    "reports (base.json pr.json, or one per power mode) are kept apart and labelled.")
    parser.add_argument("reports", nargs="+", type=Path, help="JSON reports from --jetson-report-json")
    parser.add_argument("--out", type=Path, default=Path("perf-plots"),
                        help="output directory (default: perf-plots)")
    parser.add_argument("--model", action="append", dest="models", metavar="NAME|PATH",
                        help="only the measurements of this model: a zoo name or an .onnx path (repeatable)")
    args = parser.parse_args(argv)
    pyplot("plots need")  # a missing matplotlib is said before any report is read
    if args.out.exists() and not args.out.is_dir():
        raise fileio.UnsafeTarget(args.out, "is not a directory; --out names the directory the figures "
                                            "are written into: give a new or existing directory")
    runs = run_names(args.reports)
    docs = [load_report(path) for path in args.reports]
    points: List[Point] = []
    seen: List[str] = []
    for run, doc, path in zip(runs, docs, args.reports):
        for test, key, m in iter_measurements(doc, path):
            seen += models_of(m)
            if matches(m, args.models or []):
                points.append(Point(m, run, test, key))
    if args.models:
        why = check_known(args.models, seen, ", ".join(map(str, args.reports)))
        if why:
            print(f"pytest-jetson plot: {why}", file=sys.stderr)
            return 2
    if not points:
        print(f"no measurements in {', '.join(map(str, args.reports))}: nothing to plot")
        return 1
    written, skipped = draw(points, args.out, docs=docs if not args.models else (), runs=runs)
    for path in written:
        print(f"wrote {path}")
    for line in skipped:
        print(f"skipped {line}")
    return 0
