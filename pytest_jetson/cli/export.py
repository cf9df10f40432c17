"""``pytest-jetson export REPORT --format bencher|github-action-benchmark``: a JSON report's
measurements for the tools teams keep benchmark history in (``report.exports``).

``bencher``: the Bencher Metric Format, to stdout or ``--out FILE``, for
``bencher run --adapter json --file FILE``. ``github-action-benchmark``: two files in ``--out DIR``
(default ``perf-export``), ``customSmallerIsBetter.json`` and ``customBiggerIsBetter.json``, one
per ``tool:`` of the action, as each metric's bad direction says. Exit status 2 for a report that
cannot be read.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from .. import fileio
from ..errors import BaselineError
from ..report import exports
from ..report.jsonreport import load


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pytest-jetson export",
        description="A JSON report's measurements (every metric with its confidence interval) in the "
                    "Bencher Metric Format or as github-action-benchmark custom-tool JSON.")
    p.add_argument("report", type=Path, help="JSON report from --jetson-report-json")
    p.add_argument("--format", required=True, choices=exports.FORMATS, dest="fmt",
                   help="bencher (BMF JSON) or github-action-benchmark (customSmallerIsBetter and "
                        "customBiggerIsBetter files)")
    p.add_argument("--out", type=Path, default=None,
                   help="bencher: the file (default: stdout); github-action-benchmark: the directory "
                        "(default: perf-export)")
    return p


def _dump(data: object) -> str:
    return json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        doc = load(args.report)
        if args.fmt == "bencher":
            text = _dump(exports.bencher(doc, args.report))
        else:
            tools = exports.github_action_benchmark(doc, args.report)
    except BaselineError as exc:
        sys.stderr.write(f"pytest-jetson export: {exc}\n")
        return 2
    written: List[Path] = []
    try:
        if args.fmt == "bencher":
            if args.out is None:
                sys.stdout.write(text)
                return 0
            fileio.write_atomic(args.out, text)
            written.append(args.out)
        else:
            folder = args.out or Path("perf-export")
            folder.mkdir(parents=True, exist_ok=True)
            for tool, entries in tools.items():
                path = folder / f"{tool}.json"
                fileio.write_atomic(path, _dump(entries))
                written.append(path)
    except OSError as exc:
        sys.stderr.write(f"pytest-jetson export: --out {args.out}: cannot be written "
                         f"({exc.strerror or exc}); choose a writable path\n")
        return 2
    for path in written:
        print(f"wrote {path}")
    return 0
