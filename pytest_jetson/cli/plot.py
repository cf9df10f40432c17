"""``pytest-jetson plot report.json --out DIR``: the research's figures from JSON reports."""

import argparse
from pathlib import Path
from typing import List, Optional

from ..report.figures import Point, draw, load_points


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="pytest-jetson plot", description="Draw the research's figures from JSON reports.")
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
