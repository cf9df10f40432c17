"""``pytest-jetson compare OLD.json NEW.json``: two JSON reports compared with the gate's statistics.

Every measured metric of every test in both is decided with the gate's own rule: the relative
bounds a test declares give their tolerances, other metrics use ``--tolerance``. Exit status: 0 no
regression, 1 regressions (or inconclusive comparisons with ``--inconclusive fail``), 2 unreadable
input.
"""

import argparse
import sys
from typing import Dict, List, Optional, Sequence

from ..errors import BaselineError, BoundError
from ..gate.bounds import parse
from ..gate.reports import compare_reports, measurements_by_key
from ..gate.verdict import rank
from ..metrics import format_value
from ..report import render


def _print(lines: Sequence[str], out=None) -> None:
    out = out or sys.stdout
    for line in lines:
        out.write(line + "\n")


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ..report import jsonreport
    from ..report.terminal import table

    p = argparse.ArgumentParser(
        prog="pytest-jetson compare",
        description="Compare two pytest-jetson JSON reports (--jetson-report-json) with the gate's "
        "statistics; exit 1 on regressions.",
    )
    p.add_argument("old", help="the reference report (e.g. from the main branch)")
    p.add_argument("new", help="the report to check")
    p.add_argument("--tolerance", default="5%",
                   help="tolerance for metrics without a relative bound in the test (default 5%%)")
    p.add_argument("--metric", action="append", dest="metrics", metavar="NAME",
                   help="compare only these metrics (repeatable)")
    p.add_argument("--confidence", type=float, default=0.99, help="confidence level (default 0.99)")
    p.add_argument("--inconclusive", choices=("pass", "fail"), default="pass",
                   help="exit 1 on comparisons too noisy to decide (default: pass)")
    p.add_argument("--allow-env-mismatch", action="store_true",
                   help="compare measurements taken under different environments")
    p.add_argument("-v", "--verbose", action="store_true", help="print every verdict's full message")
    args = p.parse_args(argv)
    try:
        tol = parse("throughput", args.tolerance).tolerance
        if tol is None:
            raise BoundError("")
    except BoundError:
        sys.stderr.write(f"pytest-jetson compare: --tolerance {args.tolerance!r}: write a percentage such as 5%\n")
        return 2
    if not 0.5 <= args.confidence < 1:
        sys.stderr.write("pytest-jetson compare: --confidence must be between 0.5 and 1, e.g. 0.99\n")
        return 2
    try:
        old, new = jsonreport.load(args.old), jsonreport.load(args.new)
    except BaselineError as exc:
        sys.stderr.write(f"pytest-jetson compare: {exc}\n")
        return 2
    if args.metrics:
        from ..metrics import METRICS

        bad = [m for m in args.metrics if m not in METRICS]
        if bad:
            sys.stderr.write(f"pytest-jetson compare: unknown metric {bad[0]!r}; known: {', '.join(METRICS)}\n")
            return 2
    verdicts = compare_reports(old, new, tolerance=tol, confidence=args.confidence,
                               metrics=args.metrics, allow_env_mismatch=args.allow_env_mismatch)
    verdicts.sort(key=lambda v: rank(v.outcome))
    rows = [[v.measurement, v.metric, format_value(v.metric, v.baseline), format_value(v.metric, v.value),
             render.change_text(v.worse), v.bound, render.label(v.outcome)] for v in verdicts]
    lines = [f"pytest-jetson compare: {args.old} -> {args.new}"]
    if rows:
        lines += table(("test", "metric", "old", "new", "change", "tolerance", "verdict"), rows)
    old_keys = set(measurements_by_key(old))
    new_keys = set(measurements_by_key(new))
    for k in sorted(old_keys - new_keys):
        lines.append(f"only in {args.old}: {k}")
    for k in sorted(new_keys - old_keys):
        lines.append(f"only in {args.new}: {k}")
    shown = [v for v in verdicts if v.outcome != "pass" or args.verbose]
    if shown:
        lines.append("")
        skipped: Dict[tuple, List[str]] = {}
        for v in shown:
            if v.outcome == "skip":
                # one line per test and reason, not one per metric
                skipped.setdefault((v.measurement, render.why_not_compared(v)), []).append(v.metric)
                continue
            lines.append(f"{v.outcome} {v.measurement}: {render.headline(v)}")
        for (key, why), names in skipped.items():
            lines.append(f"skip {key} ({', '.join(names)}): {why}")
    bad = [v for v in verdicts if v.outcome in ("fail", "error")
           or (args.inconclusive == "fail" and v.outcome == "inconclusive")]
    counts: Dict[str, int] = {}
    for v in verdicts:
        counts[v.outcome] = counts.get(v.outcome, 0) + 1
    lines.append(", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "nothing to compare")
    _print(lines)
    return 1 if bad else 0
