"""``pytest-jetson history REPORT.json|STORE|DIR...``: a suite's trends over past runs (CI
artifacts, or the SQLite store ``--jetson-history`` appends to).

For every test and metric: its value in each run with the baseline and tolerance the gate used,
the steps between runs (change points: binary segmentation with a two-sample t-test, Bonferroni-
corrected) and the slow drifts in one direction (Mann-Kendall test, Theil-Sen slope with Sen's
interval), which no single run's tolerance catches. Reports from different devices, power modes
or backends are analysed and drawn apart. Exit status: 0, or 1 with ``--fail`` when a metric got
worse by a step or a drift; 2 for unreadable input.
"""

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from .. import fileio
from ..errors import BaselineError
from ..report import history_html, history_store, run_history
from ..report.history_store import HistoryError
from ..report.markdown import write
from ..report.plots import pyplot, slug
from ..report.text import natural_key
from .compare import width


def _expand(paths: Sequence[Path], found_in_dirs: List[Path]) -> List[Path]:
    """Files as given; a directory stands for the JSON reports in it (sorted naturally), which are
    also added to ``found_in_dirs``."""
    out: List[Path] = []
    for p in paths:
        if p.is_dir() and not list(p.glob("*.json")) and [f for f in p.iterdir() if history_store.is_store(f)]:
            out += sorted((f for f in p.iterdir() if history_store.is_store(f)), key=lambda f: natural_key(f.name))
        elif p.is_dir():
            found = sorted((f for f in p.glob("*.json") if f.is_file()), key=lambda f: natural_key(f.name))
            if not found:
                raise FileNotFoundError(f"{p} is a directory with no .json report in it; pass the reports "
                                        f"written by --jetson-report-json")
            out += found
            found_in_dirs += found
        else:
            out.append(p)
    return out


def _load(paths: Sequence[Path], optional: Sequence[Path] = ()) -> List[Any]:
    """The runs of the reports and history stores, oldest first; JSON files in ``optional`` that
    are no report are left out with a note."""
    stores = [p for p in paths if history_store.is_store(p)]
    reports = [p for p in paths if p not in stores]
    skipped: List[Path] = []
    runs = run_history.load(reports, optional, skipped) if reports else []
    if skipped:
        names = ", ".join(p.name for p in skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
        print(f"note: left out {len(skipped)} JSON file(s) that are not pytest-jetson reports: {names}",
              file=sys.stderr)
    for store in stores:
        runs += history_store.load(store)
    if not runs and skipped and not stores:
        raise HistoryError(f"none of the {len(skipped)} JSON file(s) given is a pytest-jetson report; pass "
                           f"the reports written by --jetson-report-json")
    if not runs:
        raise HistoryError(f"{', '.join(map(str, stores))}: no run stored yet; append runs with "
                           f"pytest --jetson-history {stores[0] if stores else 'PATH'}")
    return run_history.ordered(runs)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pytest-jetson history",
        description="Trends over past runs: each test's metrics across JSON reports (oldest to "
                    "newest, e.g. CI artifacts), with the steps between runs and the slow drifts no "
                    "single run's tolerance catches. A directory stands for the reports in it.")
    p.add_argument("reports", nargs="+", type=Path,
                   help="JSON reports from --jetson-report-json, directories of them, or history stores "
                        "from --jetson-history")
    p.add_argument("--out", type=Path, default=Path("perf-history"), help="directory for the PNGs (default: perf-history)")
    p.add_argument("--no-plots", action="store_true", help="print the findings only")
    p.add_argument("--all", action="store_true", dest="draw_all",
                   help="draw every test's trend (default: the overview, and the tests with a step, a drift "
                        "or a bound that did not pass)")
    p.add_argument("--md", metavar="PATH", default=None,
                   help="also write the findings as Markdown (appended when PATH is $GITHUB_STEP_SUMMARY)")
    p.add_argument("--alpha", type=float, default=0.01,
                   help="significance of a step, Bonferroni-corrected (default 0.01)")
    p.add_argument("--drift-alpha", type=float, default=0.05, help="significance of a drift (default 0.05)")
    p.add_argument("--min-change", default="1%",
                   help="smallest step or total drift worth reporting (default 1%%)")
    p.add_argument("--html", metavar="DIR", type=Path, default=None,
                   help="also write the history as one static page, DIR/index.html: every metric's "
                        "runs as a sparkline with its tolerance band, per board (to publish)")
    p.add_argument("--fail", action="store_true", help="exit 1 when a metric got worse by a step or a drift")
    return p


class _Usage(Exception):
    """An option the history cannot run with (exit status 2)."""


def _min_change(args: argparse.Namespace) -> float:
    """--min-change as a fraction; _Usage when it is not a percentage, or a level is out of range."""
    try:
        min_change = float(str(args.min_change).strip().rstrip("%")) / 100
    except ValueError:
        raise _Usage(f"--min-change {args.min_change!r}: write a percentage such as 1%") from None
    for name, value in (("--alpha", args.alpha), ("--drift-alpha", args.drift_alpha)):
        if not 0 < value < 0.5:
            raise _Usage(f"{name} {value}: use a level between 0 and 0.5, e.g. 0.01")
    return min_change


def _got_worse(found: Sequence[Any]) -> bool:
    """Whether a metric got worse by a step or a drift."""
    return (any(s.worse(st.change) > 0 for s in found for st in s.trend.steps)
            or any(s.trend.drift and s.worse(s.trend.drift.total) > 0 for s in found))


def _draw(plt: Any, folder: Path, members: Sequence[Any], found: Sequence[Any], draw_all: bool) -> str:
    """The overview and the trends of the tests worth a look (every test with ``draw_all``);
    returns the line saying what was written."""
    folder.mkdir(parents=True, exist_ok=True)
    run_history.overview(plt, members, found, folder / "overview.png")
    keys = list(dict.fromkeys(s.key for s in found))
    drawn = 0
    for key in keys:
        mine = [s for s in found if s.key == key]
        if draw_all or any(s.flagged or s.troubled for s in mine):
            run_history.plot(plt, members, mine, folder / f"{slug(key)}.png")
            drawn += 1
    return (f"wrote {folder / 'overview.png'} and {drawn} of {len(keys)} tests' trends to {folder}"
            + ("" if draw_all or drawn == len(keys) else " (--all draws every test)"))


def _sources(members: Sequence[Any]) -> str:
    """The files the runs come from, each once (a history store with its number of runs)."""
    counts: Dict[str, int] = {}
    for r in members:
        counts[str(r.path)] = counts.get(str(r.path), 0) + 1
    return ", ".join(path if n == 1 else f"{path} ({n} runs)" for path, n in counts.items())


def _environments(runs: Sequence[Any], groups: Dict[Any, List[Any]]) -> List[str]:
    if len(groups) <= 1:
        return []
    lines = [f"{len(runs)} reports from {len(groups)} environments, analysed apart:"]
    lines += [f"  {run_history.env_text(env)}: {_sources(members)}" for env, members in groups.items()]
    return lines + [""]


def _write_md(path: str, md: List[str]) -> None:
    step_summary = path == os.environ.get("GITHUB_STEP_SUMMARY")
    write(path, "\n".join(["## pytest-jetson history", ""] + md) + "\n", append=step_summary)
    print(f"wrote {path}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        min_change = _min_change(args)
        in_dirs: List[Path] = []
        runs = _load(_expand(args.reports, in_dirs), in_dirs)
    except (_Usage, BaselineError, HistoryError, FileNotFoundError) as exc:
        sys.stderr.write(f"pytest-jetson history: {exc}\n")
        return 2
    plt = None
    if not args.no_plots:
        plt = pyplot("history plots need")
    md: List[str] = []
    pages: List[Any] = []
    worse = False
    groups = run_history.groups(runs)
    lines = _environments(runs, groups)
    for n, (env, members) in enumerate(groups.items()):
        found = run_history.series(members, alpha=args.alpha, drift_alpha=args.drift_alpha, min_change=min_change)
        lines += run_history.text(members, found, width=width())
        md += run_history.markdown(members, found)
        pages.append((members, found))
        worse = worse or _got_worse(found)
        if plt is not None:
            folder = args.out if len(groups) == 1 else args.out / slug("_".join(env))
            lines.append(_draw(plt, folder, members, found, args.draw_all))
        if n < len(groups) - 1:
            lines.append("")
    for line in lines:
        print(line)
    if args.md:
        _write_md(args.md, md)
    if args.html:
        try:
            args.html.mkdir(parents=True, exist_ok=True)
            fileio.write_atomic(args.html / "index.html", history_html.page(pages))
        except OSError as exc:
            sys.stderr.write(f"pytest-jetson history: --html {args.html}: cannot be written "
                             f"({exc.strerror or exc}); give a directory path\n")
            return 2
        print(f"wrote {args.html / 'index.html'}")
    return 1 if (args.fail and worse) else 0
