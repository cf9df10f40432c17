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
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from ..errors import BaselineError, BoundError
from ..gate.bounds import parse
from ..gate.reports import count_of, decide, family_level, pending_of
from ..gate.verdict import fails, rank, worst
from ..metrics import METRICS
from ..report import jsonreport, render
from ..report.model_filter import check_known, matches, models_of, same_model
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
    """One test's comparisons, shaped like a gate result for the shared table: the verdicts the
    table lists (every one with ``-v``, else those that need a look) and what the summary counts
    of the others."""

    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid
        self.verdicts: List[Any] = []
        self.error = None
        self.measurements: List[Any] = []
        self.outcomes: Set[str] = set()
        self.failing = False

    @property
    def outcome(self) -> str:
        return worst(self.outcomes) or "pass"


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
    bad = _unknown_metrics(args)
    if bad:
        raise _Usage(f"unknown metric {bad[0]!r}; known: {', '.join(METRICS)}")


class _Old:
    """What the comparison keeps of the old report, by measurement key: each measurement's figures
    (``jsonreport.figures_of``), its test's fingerprint and, for ``--model``, its models; the
    report itself is read once, a test at a time, and not kept."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.measurements: Dict[str, Any] = {}
        self.fingerprints: Dict[str, Dict[str, Any]] = {}
        self.models: Dict[str, List[str]] = {}
        wanted = args.models or []
        shared: Dict[str, Dict[str, Any]] = {}  # one dict per distinct fingerprint, not per test
        head, tests = jsonreport.stream(args.old)
        self.recorded = head.get("created", "")
        for result in tests:
            text = jsonreport.compact(result.fingerprint)
            fp = shared.setdefault(text, result.fingerprint)
            for key, m in result.keyed():
                self.measurements[key] = jsonreport.figures_of(m)
                self.fingerprints[key] = fp
                if wanted:
                    self.models[key] = models_of(m)


class _New:
    """What the comparison keeps of the new report between its two passes (the first counts the
    comparisons, which sets the level each is decided at; the second decides them): by key,
    whether the measurement ran a ``--model``, and its models."""

    def __init__(self, args: argparse.Namespace, old: _Old, count: bool) -> None:
        self.matching: Dict[str, bool] = {}
        self.models: Dict[str, List[str]] = {}
        self.comparisons = 0
        wanted = args.models or []
        _, self.tests = jsonreport.passes(args.new)
        for result in self.tests():
            for key, m in result.keyed():
                self.matching[key] = matches(m, wanted)
                if wanted:
                    self.models[key] = models_of(m)
            if count:
                self.comparisons += count_of(result, old.measurements, args.confidence, args.metrics)


def _read(args: argparse.Namespace) -> Tuple[_Old, _New]:
    """Both reports' indexes (the old one read whole first, then the new one's first pass)."""
    try:
        old = _Old(args)
        return old, _New(args, old, count=not _unknown_metrics(args))
    except BaselineError as exc:
        raise _Usage(str(exc)) from None


def _unknown_metrics(args: argparse.Namespace) -> List[str]:
    return [m for m in args.metrics or [] if m not in METRICS]


class _Verdicts:
    """The comparisons decided, a test at a time: the tests in the order first met, with the
    verdicts the table lists; the skipped ones by measurement and reason; the counts."""

    def __init__(self, verbose: bool, inconclusive: str) -> None:
        self.verbose = verbose
        self.inconclusive = inconclusive
        self.tests: Dict[str, _Test] = {}
        self.skipped: Dict[Tuple[str, str], List[str]] = {}
        self.counts: Dict[str, int] = {}
        self.total = 0
        self.bad = 0
        self.unlisted = False

    def add(self, v: Any) -> None:
        nodeid = v.test or v.measurement
        t = self.tests.get(nodeid) or self.tests.setdefault(nodeid, _Test(nodeid))
        row = v.outcome_row
        t.outcomes.add(v.outcome)
        self.total += 1
        self.counts[v.outcome] = self.counts.get(v.outcome, 0) + 1
        if fails(v.outcome, self.inconclusive):
            t.failing = True
            self.bad += 1
        if row.needs_look or self.verbose:
            t.verdicts.append(v)
        else:
            self.unlisted = True
        if row.said_once and not self.verbose:  # with -v, said in the table's order instead
            self.skipped.setdefault((v.measurement, render.why_not_compared(v)), []).append(render.subject(v))


def _details(found: _Verdicts) -> List[str]:
    """Each comparison that needs a look (every one with ``verbose``) in a line; skipped ones once
    per measurement and reason."""
    shown = [v for t in sorted(found.tests.values(), key=lambda t: t.nodeid) for v in t.verdicts]
    details = [f"{v.outcome} {v.measurement}: {render.headline(v)}" for v in shown if not v.outcome_row.said_once]
    skipped = found.skipped
    if found.verbose:
        for v in shown:
            if v.outcome_row.said_once:
                skipped.setdefault((v.measurement, render.why_not_compared(v)), []).append(render.subject(v))
    details += [f"skip {key} ({', '.join(names)}): {why}" for (key, why), names in skipped.items()]
    return [""] + details if details else []


def _summary(found: _Verdicts) -> str:
    if not found.total:
        return "nothing to compare"
    words = ", ".join(f"{n} {k}" for k, n in sorted(found.counts.items(), key=lambda kv: rank(kv[0])))
    failing = sum(1 for t in found.tests.values() if t.failing)
    line = f"tests: {len(found.tests)} compared, {failing} with a regression · metrics: {words}"
    if not found.verbose and found.unlisted:
        line += " · -v lists every metric"
    return line


def _only_in(args: argparse.Namespace, old: _Old, new: _New) -> List[str]:
    """The measurements one report has and the other lacks."""
    wanted = args.models or []
    gone = sorted(set(old.measurements) - set(new.matching))
    lines = [f"only in {args.old}: {k}" for k in gone if not wanted or _runs(old.models[k], wanted)]
    added = sorted(set(new.matching) - set(old.measurements))
    return lines + [f"only in {args.new}: {k}" for k in added if new.matching[k]]


def _runs(models: Sequence[str], wanted: Sequence[str]) -> bool:
    return any(same_model(m, w) for m in models for w in wanted)


def _compare(args: argparse.Namespace) -> Tuple[List[str], bool]:
    """The lines to print and whether a comparison fails. The old report is read once into an
    index by key; the new one twice, a test at a time: the first pass counts the comparisons (the
    family-wise level needs every one counted before any is decided), the second decides them.
    Neither report's tests are held, only the verdicts the output shows and counts."""
    tol = _tolerance(args.tolerance)
    if not 0.5 <= args.confidence < 1:
        raise _Usage("--confidence must be between 0.5 and 1, e.g. 0.99")
    old, new = _read(args)
    _check_metrics(args)
    wanted = args.models or []
    if wanted:
        seen = [m for models in list(new.models.values()) + list(old.models.values()) for m in models]
        why = check_known(wanted, seen, f"{args.old} or {args.new}")
        if why:
            raise _Usage(why)
    level = family_level(new.comparisons, args.confidence)
    found = _Verdicts(args.verbose, args.inconclusive)
    try:
        for result in new.tests():
            for p in pending_of(result, old.measurements, old.fingerprints, tol, args.confidence, args.metrics,
                                old.recorded):
                v = decide(p, level, args.allow_env_mismatch)
                if new.matching.get(v.measurement, not wanted):
                    found.add(v)
    except BaselineError as exc:
        raise _Usage(str(exc)) from None
    lines = [f"pytest-jetson compare: {args.old} -> {args.new}"]
    body = rows(list(found.tests.values()), "all" if args.verbose else "problems", cells=_cells)
    if body:
        lines += table(COLUMNS, body, width=width())
    lines += _only_in(args, old, new) + _details(found)
    lines.append(_summary(found))
    return lines, bool(found.bad)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        lines, bad = _compare(args)
    except _Usage as exc:
        sys.stderr.write(f"pytest-jetson compare: {exc}\n")
        return 2
    _print(lines)
    return 1 if bad else 0
