"""``pytest-jetson ab BASE [HEAD] [-- PYTEST ARGS]``: the base revision measured beside the head
on this board, in one job, and compared with the gate's statistics (``gate.ab``).

BASE (and HEAD, when given; else the working tree as it is) is checked out in a git worktree of
its own. The perf suite (the PYTEST ARGS, run from the same directory of each checkout) runs
``--rounds`` times a side, interleaved (base, head, head, base, ...) so that a board warming up or
a clock drifting over the job falls on both alike, each round with its own ``--jetson-seed`` (on
a simulated board the rounds differ as runs on a board do). Each side's code is imported from its
own checkout (``PYTHONPATH``); ``--build CMD`` runs first in each checkout (compiled extensions).
The stored baselines are not consulted: this is a comparison of two revisions. Usable instead of,
or beside, committed baselines, and to re-record after a JetPack upgrade (the head's reports are
kept in ``--out``).

A base that does not exist, does not build or whose suite does not run is an error that says so
(exit status 2): never a comparison against nothing. Exit status 1: the head is worse than the
base beyond a tolerance.
"""

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import BaselineError
from ..gate.ab import compare_rounds
from ..gate.verdict import fails
from ..report import render
from ..report.jsonreport import load, results

GIT_TIMEOUT = 120.0


class AbError(Exception):
    """Why the A/B cannot compare (exit status 2)."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pytest-jetson ab",
        description="Measure a base revision beside the head on this board, interleaved, and compare "
                    "them with the gate's statistics. Arguments after '--' go to pytest.")
    p.add_argument("base", help="the base revision (a branch, tag or commit)")
    p.add_argument("head", nargs="?", default=None, help="the head revision (default: the working tree as it is)")
    p.add_argument("--rounds", type=int, default=3, help="rounds a side, interleaved (default 3)")
    p.add_argument("--tolerance", default="5%",
                   help="tolerance of metrics no relative bound names (default 5%%)")
    p.add_argument("--confidence", type=float, default=0.99, help="confidence level (default 0.99)")
    p.add_argument("--build", default=None, metavar="CMD",
                   help="a command run in each checkout before measuring it (split like a shell, run without one)")
    p.add_argument("--out", type=Path, default=Path("perf-ab"),
                   help="directory for each round's JSON report (default perf-ab)")
    return p


def _git(args: List[str], cwd: Path) -> Tuple[int, str]:
    try:
        proc = subprocess.run(["git", *args], cwd=str(cwd), stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=GIT_TIMEOUT)
    except FileNotFoundError:
        raise AbError("git is not installed; ab checks the base revision out with git") from None
    except subprocess.TimeoutExpired:
        raise AbError(f"git {' '.join(args)} took longer than {GIT_TIMEOUT:g} s") from None
    return proc.returncode, (proc.stdout.strip() or proc.stderr.strip())


def _revision(name: str, top: Path, role: str) -> str:
    rc, out = _git(["rev-parse", "--verify", "--quiet", f"{name}^{{commit}}"], top)
    if rc != 0 or not out:
        raise AbError(f"the {role} revision {name!r} does not exist in {top}; give a branch, tag or "
                      f"commit (git fetch it first in a shallow checkout: fetch-depth: 0)")
    return out


def _run(cmd: List[str], cwd: Path, env: Dict[str, str], what: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, cwd=str(cwd), env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    except OSError as exc:
        raise AbError(f"{what}: {cmd[0]} cannot be run ({exc.strerror or exc})") from None


def _tail(proc: subprocess.CompletedProcess, lines: int = 15) -> str:
    text = (proc.stdout + proc.stderr).strip().splitlines()[-lines:]
    return "\n".join("    " + line for line in text)


class Side:
    def __init__(self, name: str, rev: Optional[str], root: Path, rel: Path) -> None:
        self.name, self.rev, self.root, self.cwd = name, rev, root, root / rel
        self.rounds: List[List] = []

    @property
    def label(self) -> str:
        return f"{self.name} ({self.rev[:7]})" if self.rev else f"{self.name} (working tree)"

    def env(self) -> Dict[str, str]:
        env = dict(os.environ)
        env.pop("GITHUB_STEP_SUMMARY", None)  # the rounds' summaries are not the job's
        env["PYTHONPATH"] = os.pathsep.join([str(self.root)] + [p for p in [env.get("PYTHONPATH")] if p])
        return env

    def build(self, command: Optional[str]) -> None:
        if not command:
            return
        proc = _run(shlex.split(command), self.cwd, self.env(), f"the {self.label}'s build")
        if proc.returncode != 0:
            raise AbError(f"the {self.label} does not build: {command} exited {proc.returncode}:\n{_tail(proc)}")

    def measure(self, args: Sequence[str], report: Path, seed: Optional[int]) -> None:
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args,
               "--jetson-report-json", str(report.resolve()), "--jetson-missing-baseline=skip"]
        if seed is not None:
            cmd.append(f"--jetson-seed={seed}")
        proc = _run(cmd, self.cwd, self.env(), f"the {self.label}")
        if proc.returncode not in (0, 1) or not report.is_file():
            raise AbError(f"the {self.label}'s suite did not run (pytest exited {proc.returncode}); "
                          f"nothing to compare:\n{_tail(proc)}")
        try:
            found = results(load(report), report)
        except BaselineError as exc:
            raise AbError(str(exc)) from None
        if not any(r.measurements for r in found):
            raise AbError(f"the {self.label}'s suite measured nothing ({report}); give the perf tests "
                          f"after '--':\n{_tail(proc)}")
        self.rounds.append(found)


def _split(argv: Sequence[str]) -> Tuple[List[str], List[str]]:
    argv = list(argv)
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def _tolerance(text: str) -> float:
    try:
        return float(str(text).strip().rstrip("%")) / 100
    except ValueError:
        raise AbError(f"--tolerance {text!r}: write a percentage such as 5%") from None


def _lines(verdicts: Sequence, only: Sequence[str]) -> List[str]:
    lines = []
    for v in verdicts:
        lines.append(f"{v.test} {v.metric}: base {render.value_text(v.metric, v.baseline, None)}, head "
                     f"{render.value_text(v.metric, v.value, v.ci)}, {render.change_text(v.worse)} "
                     f"({v.bound}): {v.outcome_row.label}")
    lines += [f"{key}: measured on one side only" for key in only]
    return lines


def _ab(args: argparse.Namespace, pytest_args: List[str], work: Path, made: List[Tuple[Path, Path]]) -> int:
    tolerance = _tolerance(args.tolerance)
    if args.rounds < 1:
        raise AbError(f"--rounds {args.rounds}: give 1 or more")
    rc, top_text = _git(["rev-parse", "--show-toplevel"], Path.cwd())
    if rc != 0:
        raise AbError(f"{Path.cwd()} is not in a git repository; ab checks the base revision out with git")
    top = Path(top_text)
    rel = Path.cwd().resolve().relative_to(top.resolve())
    base_rev = _revision(args.base, top, "base")
    sides = []
    for name, rev in (("base", base_rev), ("head", _revision(args.head, top, "head") if args.head else None)):
        if rev is None:
            sides.append(Side(name, None, top, rel))
            continue
        tree = work / name
        rc, out = _git(["worktree", "add", "--detach", str(tree), rev], top)
        if rc != 0:
            raise AbError(f"the {name} revision {rev[:7]} cannot be checked out: {out}")
        made.append((top, tree))
        sides.append(Side(name, rev, tree, rel))
    base, head = sides
    for side in sides:
        side.build(args.build)
    seeded = not any(a.startswith("--jetson-seed") for a in pytest_args)
    args.out.mkdir(parents=True, exist_ok=True)
    for r in range(args.rounds):
        for side in ((base, head) if r % 2 == 0 else (head, base)):
            print(f"round {r + 1}/{args.rounds}: {side.label}", flush=True)
            side.measure(pytest_args, args.out / f"{side.name}-{r + 1}.json", r if seeded else None)
    verdicts = compare_rounds(base.rounds, head.rounds, tolerance=tolerance, confidence=args.confidence,
                              label=base.label)
    keys = {k for rs in base.rounds for r in rs for k in r.keys} ^ {k for rs in head.rounds for r in rs for k in r.keys}
    print(f"{head.label} against {base.label}, {args.rounds} rounds each, interleaved:")
    for line in _lines(verdicts, sorted(keys)):
        print("  " + line)
    bad = [v for v in verdicts if fails(v.outcome)]
    print(f"{len(bad)} of {len(verdicts)} metrics worse beyond their tolerance" if bad
          else f"no regression in {len(verdicts)} metrics")
    return 1 if bad else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    own, pytest_args = _split(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(own)
    work = Path(tempfile.mkdtemp(prefix="pytest-jetson-ab-"))
    made: List[Tuple[Path, Path]] = []
    try:
        return _ab(args, pytest_args, work, made)
    except AbError as exc:
        sys.stderr.write(f"pytest-jetson ab: {exc}\n")
        return 2
    finally:
        for top, tree in made:
            _git(["worktree", "remove", "--force", str(tree)], top)
        shutil.rmtree(work, ignore_errors=True)
