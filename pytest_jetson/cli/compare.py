"""``pytest-jetson compare OLD.json NEW.json``: two JSON reports compared with the gate's statistics.

Every measured metric of every test in both is decided with the gate's own rule: the relative
bounds a test declares give their tolerances, other metrics use ``--tolerance``. The table groups
the metrics under their test and, by default, lists the ones that need a look; ``-v`` lists them
all. Exit status: 0 no regression, 1 regressions (or inconclusive comparisons with
``--inconclusive fail``), 2 unreadable input.
"""

import argparse
import shutil
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import BaselineError, BoundError
from ..gate.bounds import parse
from ..gate.reports import compare_reports, measurements_by_key
from ..gate.session import TestResult
from ..gate.verdict import fails, rank, worst
from ..metrics import METRICS
from ..report import jsonreport, render
from ..report.model_filter import check_known, matches, models_of
from ..report.terminal import rows
from ..report.text import Column, table


def _print(lines: Sequence[str], out: Any = None) -> None:
    out = out or sys.stdout
    for line in lines:
        out.write(line + "\n")


def width() -> int:
    """The terminal's width (``COLUMNS``, else the terminal, else 100 columns in a pipe)."""
    return shutil.get_terminal_size((100, 24)).columns


class _Test:
    """One test's comparisons, shaped like a gate result for the shared table."""

    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid
        self.verdicts: List[Any] = []
        self.error = None
        self.measurements: List[Any] = []

    @property
    def outcome(self) -> str:
        return worst(v.outcome for v in self.verdicts) or "pass"


def _cells(v: Any, indent: str) -> List[str]:
    return [indent + render.subject(v), render.value_text(v.metric, v.baseline, v.ci),
            render.value_text(v.metric, v.value, v.ci), render.change_text(v.worse), v.bound,
            v.outcome_row.label]


class _Usage(Exception):
    """Input the comparison cannot start from (exit status 2)."""


COLUMNS = (Column("test / metric"), Column("old", ">"), Column("new", ">"), Column("change"),
           Column("tolerance", drop=1), Column("verdict"))


def _parser() -> argparse.ArgumentParser:
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
    p.add_argument("--model", action="append", dest="models", metavar="NAME|PATH",
                   help="compare only the measurements of this model: a zoo name or an .onnx path "
                        "(repeatable)")
    p.add_argument("--confidence", type=float, default=0.99, help="confidence level (default 0.99)")
    p.add_argument("--inconclusive", choices=("pass", "fail"), default="pass",
                   help="exit 1 on comparisons too noisy to decide (default: pass)")
    p.add_argument("--allow-env-mismatch", action="store_true",
                   help="compare measurements taken under different environments")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="list every compared metric, with its full message")
    return p


def _tolerance(text: str) -> float:
    try:
        tol = parse("throughput", text).tolerance
    except BoundError:
        tol = None
    if tol is None:
        raise _Usage(f"--tolerance {text!r}: write a percentage such as 5%")
    return tol


def _check_metrics(args: argparse.Namespace) -> None:
    bad = [m for m in args.metrics or [] if m not in METRICS]
    if bad:
        raise _Usage(f"unknown metric {bad[0]!r}; known: {', '.join(METRICS)}")


def _load(args: argparse.Namespace) -> Tuple[Dict[str, Any], List[TestResult], List[TestResult]]:
    """The old report's document (for when it ran) and both reports' results."""
    try:
        old, tests = jsonreport.stream(args.old)
        before = list(tests)
        return old, before, list(jsonreport.stream(args.new)[1])
    except BaselineError as exc:
        raise _Usage(str(exc)) from None


def _by_test(verdicts: Sequence[Any]) -> List[_Test]:
    by_test: Dict[str, _Test] = {}
    for v in verdicts:
        by_test.setdefault(v.test or v.measurement, _Test(v.test or v.measurement)).verdicts.append(v)
    return list(by_test.values())


def _only_in(args: argparse.Namespace, old_m: Dict[str, Any], new_m: Dict[str, Any]) -> List[str]:
    """The measurements one report has and the other lacks."""
    wanted = args.models or []
    lines = [f"only in {args.old}: {k}" for k in sorted(set(old_m) - set(new_m)) if matches(old_m[k], wanted)]
    return lines + [f"only in {args.new}: {k}" for k in sorted(set(new_m) - set(old_m)) if matches(new_m[k], wanted)]


def _details(tests: Sequence[_Test], verdicts: Sequence[Any], verbose: bool) -> List[str]:
    """Each comparison that needs a look (every one with ``verbose``) in a line; skipped ones once
    per measurement and reason."""
    shown = [v for t in sorted(tests, key=lambda t: t.nodeid) for v in t.verdicts
             if v.outcome_row.needs_look or verbose]
    skipped: Dict[Tuple[str, str], List[str]] = {}
    details = []
    for v in shown:
        if not v.outcome_row.said_once:
            details.append(f"{v.outcome} {v.measurement}: {render.headline(v)}")
    said = [v for v in (shown if verbose else verdicts) if v.outcome_row.said_once]
    for v in said:
        skipped.setdefault((v.measurement, render.why_not_compared(v)), []).append(render.subject(v))
    details += [f"skip {key} ({', '.join(names)}): {why}" for (key, why), names in skipped.items()]
    return [""] + details if details else []


def _summary(tests: Sequence[_Test], verdicts: Sequence[Any], bad: Sequence[Any], verbose: bool) -> str:
    if not verdicts:
        return "nothing to compare"
    counts: Dict[str, int] = {}
    for v in verdicts:
        counts[v.outcome] = counts.get(v.outcome, 0) + 1
    words = ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: rank(kv[0])))
    failing = sum(1 for t in tests if any(v in bad for v in t.verdicts))
    line = f"tests: {len(tests)} compared, {failing} with a regression · metrics: {words}"
    if not verbose and any(not v.outcome_row.needs_look for v in verdicts):
        line += " · -v lists every metric"
    return line


def _compare(args: argparse.Namespace) -> Tuple[List[str], bool]:
    """The lines to print and whether a comparison fails."""
    tol = _tolerance(args.tolerance)
    if not 0.5 <= args.confidence < 1:
        raise _Usage("--confidence must be between 0.5 and 1, e.g. 0.99")
    old_doc, old, new = _load(args)
    _check_metrics(args)
    new_m, old_m = measurements_by_key(new), measurements_by_key(old)
    wanted = args.models or []
    if wanted:
        seen = [m for md in list(new_m.values()) + list(old_m.values()) for m in models_of(md)]
        why = check_known(wanted, seen, f"{args.old} or {args.new}")
        if why:
            raise _Usage(why)
    verdicts = compare_reports(old, new, tolerance=tol, confidence=args.confidence, metrics=args.metrics,
                               allow_env_mismatch=args.allow_env_mismatch, recorded=old_doc.get("created", ""))
    verdicts = [v for v in verdicts if matches(new_m.get(v.measurement), wanted)]
    tests = _by_test(verdicts)
    lines = [f"pytest-jetson compare: {args.old} -> {args.new}"]
    body = rows(tests, "all" if args.verbose else "problems", cells=_cells)
    if body:
        lines += table(COLUMNS, body, width=width())
    lines += _only_in(args, old_m, new_m) + _details(tests, verdicts, args.verbose)
    bad = [v for v in verdicts if fails(v.outcome, args.inconclusive)]
    lines.append(_summary(tests, verdicts, bad, args.verbose))
    return lines, bool(bad)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        lines, bad = _compare(args)
    except _Usage as exc:
        sys.stderr.write(f"pytest-jetson compare: {exc}\n")
        return 2
    _print(lines)
    return 1 if bad else 0
