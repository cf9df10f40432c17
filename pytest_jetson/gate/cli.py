"""``pytest-jetson compare OLD.json NEW.json`` and ``pytest-jetson show baselines/``.

``compare`` reads two ``--jetson-report-json`` reports and decides every measured metric of every
test in both with the gate's own rule (``gate.compare``): the relative bounds a test declares give
their tolerances, other metrics use ``--tolerance``. Exit status: 0 no regression, 1 regressions
(or inconclusive comparisons with ``--inconclusive fail``), 2 unreadable input.

``show`` lists what a baseline directory (or one device's directory, or one file) holds.
"""

import argparse
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..errors import BaselineError, BoundError
from ..run.measurement import Measurement
from .bounds import Bound, format_percent, format_value, parse
from .compare import BaselineRef, Verdict, check_relative
from .stats import metric_stats

DEFAULT_METRICS = ("throughput", "latency_mean", "latency_p50", "latency_p99", "per_process_throughput",
                   "memory", "power", "energy")


def _print(lines: Sequence[str], out=None) -> None:
    out = out or sys.stdout
    for line in lines:
        out.write(line + "\n")


def compare_reports(old: Dict, new: Dict, tolerance: float = 0.05, confidence: float = 0.99,
                    metrics: Optional[Sequence[str]] = None,
                    allow_env_mismatch: bool = False) -> List[Verdict]:
    from ..report.jsonreport import measurements_by_key

    old_m = measurements_by_key(old)
    new_tests = {t["nodeid"]: t for t in new.get("tests", [])}
    verdicts: List[Verdict] = []
    for nodeid, t in new_tests.items():
        tolerances = {b["metric"]: b.get("tolerance") for b in t.get("bounds", []) if b.get("kind") == "relative"}
        old_fp_by_key = {}
        for ot in old.get("tests", []):
            for k in ot.get("keys", []):
                old_fp_by_key[k] = ot.get("fingerprint", {})
        for md in t.get("measurements", []):
            key = md.get("key") or nodeid
            if key not in old_m:
                continue
            cur = Measurement.from_dict(md)
            base = Measurement.from_dict(old_m[key])
            wanted = list(metrics) if metrics else sorted(set(DEFAULT_METRICS) | set(tolerances))
            base_stats = {}
            for name in wanted:
                st = metric_stats(base, name, confidence)
                if st is not None:
                    base_stats[name] = st
            ref = BaselineRef(metrics=base_stats, fingerprint=old_fp_by_key.get(key, {}),
                              recorded=old.get("created", ""), file="OLD", key=key)
            for name in wanted:
                st = metric_stats(cur, name, confidence)
                if st is None or name not in base_stats:
                    continue
                tol = tolerances.get(name)
                tol = tolerance if tol is None else float(tol)
                bound = Bound(metric=name, text=format_percent(tol), kind="relative", tolerance=tol, unit="%")
                v = check_relative(bound, cur, ref, confidence=confidence,
                                   fingerprint=t.get("fingerprint") or None,
                                   allow_env_mismatch=allow_env_mismatch, stats=st)
                v.test = nodeid
                v.measurement = key
                verdicts.append(v)
    return verdicts


def compare_main(argv: Optional[Sequence[str]] = None) -> int:
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
        from ..run.measurement import METRICS

        bad = [m for m in args.metrics if m not in METRICS]
        if bad:
            sys.stderr.write(f"pytest-jetson compare: unknown metric {bad[0]!r}; known: {', '.join(METRICS)}\n")
            return 2
    verdicts = compare_reports(old, new, tolerance=tol, confidence=args.confidence,
                               metrics=args.metrics, allow_env_mismatch=args.allow_env_mismatch)
    order = {"error": 0, "fail": 1, "inconclusive": 2, "skip": 3, "pass": 4}
    verdicts.sort(key=lambda v: order.get(v.outcome, 5))
    rows = [[v.measurement, v.metric, format_value(v.metric, v.baseline), format_value(v.metric, v.value),
             "-" if v.change is None else f"{v.change * 100:+.1f}%", v.bound,
             v.outcome.upper() if v.outcome in ("fail", "error") else v.outcome] for v in verdicts]
    lines = [f"pytest-jetson compare: {args.old} -> {args.new}"]
    if rows:
        lines += table(("test", "metric", "old", "new", "change", "tolerance", "verdict"), rows)
    old_keys = set(jsonreport.measurements_by_key(old))
    new_keys = set(jsonreport.measurements_by_key(new))
    for k in sorted(old_keys - new_keys):
        lines.append(f"only in {args.old}: {k}")
    for k in sorted(new_keys - old_keys):
        lines.append(f"only in {args.new}: {k}")
    shown = [v for v in verdicts if v.outcome != "pass" or args.verbose]
    if shown:
        lines.append("")
        skipped: Dict[tuple, List[str]] = {}
        for v in shown:
            first = v.message.splitlines()[0]
            if v.outcome == "skip" and ": " in first:
                # one line per test and reason, not one per metric
                skipped.setdefault((v.measurement, first.split(": ", 1)[1]), []).append(v.metric)
                continue
            lines.append(f"{v.outcome} {v.measurement}: {first}")
        for (key, why), names in skipped.items():
            why = why.replace("Re-record with --jetson-update-baselines, or compare anyway with "
                              "--jetson-allow-env-mismatch", "Compare anyway with --allow-env-mismatch")
            lines.append(f"skip {key} ({', '.join(names)}): {why}")
    bad = [v for v in verdicts if v.outcome in ("fail", "error")
           or (args.inconclusive == "fail" and v.outcome == "inconclusive")]
    counts: Dict[str, int] = {}
    for v in verdicts:
        counts[v.outcome] = counts.get(v.outcome, 0) + 1
    lines.append(", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "nothing to compare")
    _print(lines)
    return 1 if bad else 0


def show_main(argv: Optional[Sequence[str]] = None) -> int:
    from ..report.terminal import table
    from .baseline import describe_file

    p = argparse.ArgumentParser(prog="pytest-jetson show",
                                description="List the baselines stored in a directory or file.")
    p.add_argument("path", nargs="?", default="baselines", help="baselines directory, device directory or file")
    p.add_argument("--metric", action="append", dest="metrics", metavar="NAME",
                   help="metrics to show (default: throughput, latency_p99, memory, power)")
    args = p.parse_args(argv)
    root = Path(args.path)
    if root.is_file():
        files = [root]
    elif root.is_dir():
        files = sorted(root.rglob("*.json"))
    else:
        sys.stderr.write(f"pytest-jetson show: {root} does not exist; baselines are written by "
                         f"pytest --jetson-update-baselines (default directory: baselines)\n")
        return 2
    metrics = args.metrics or ["throughput", "latency_p99", "memory", "power"]
    rows = []
    errors = []
    for f in files:
        try:
            entries = describe_file(f)
        except BaselineError as exc:
            errors.append(str(exc))
            continue
        rel = f.relative_to(root).as_posix() if root.is_dir() else f.name
        for e in entries:
            fp = e["fingerprint"]
            env = ", ".join(str(x) for x in (fp.get("power_mode"), fp.get("precision"),
                                              f"batch {fp['batch']}" if fp.get("batch") is not None else None,
                                              "simulated" if fp.get("simulated") else "real") if x)
            rows.append([rel, e["key"], e["recorded"][:10], env]
                        + [format_value(m, e["metrics"].get(m)) for m in metrics])
    lines = []
    if rows:
        lines += table(["file", "entry", "recorded", "environment"] + list(metrics), rows)
        lines.append(f"{len(rows)} entr{'y' if len(rows) == 1 else 'ies'} in {len(files) - len(errors)} file(s)")
    else:
        lines.append(f"no baselines under {root}")
    _print(lines)
    for e in errors:
        sys.stderr.write(e + "\n")
    return 1 if errors else 0
