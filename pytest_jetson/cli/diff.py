"""``pytest-jetson diff [OLD] [NEW]``: what changed between two sets of baselines.

OLD and NEW are each a baselines directory or a git revision (read with ``git show REV:PATH``):

    pytest-jetson diff                  # HEAD against the working tree
    pytest-jetson diff main             # the main branch against the working tree
    pytest-jetson diff main HEAD        # two revisions
    pytest-jetson diff old/baselines baselines

Per test and metric (a stage's metrics as 'stage: metric'): the old and new value, the change in the
metric's own terms ("3.2% worse") and whether it is significant: the test the store uses to decide
whether a re-recording rewrites a metric (within-run errors of both, the run-to-run floor, a
family-wise level over every metric compared), so "significant" means "more than re-recording the
same code moves it". Entries only on one side are listed. Exit status: 0, or 1 with ``--exit-code``
when a significant change made something worse; 2 on unreadable input.
"""

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import BaselineError
from ..gate.baseline import entries_of_text, read_file
from ..gate.merge import REWRITE_ALPHA, metric_changed
from ..metrics import METRICS, defaults, format_value
from ..report.text import Column, table
from .compare import _print, width

DEFAULT_METRICS = defaults("compare")

Entries = Dict[Tuple[str, str], Dict]  # (file relative to the baselines dir, key) -> entry


_COLUMNS = (Column("device"), Column("test", elastic=True), Column("metric"), Column("old", ">"),
            Column("new", ">"), Column("change", ">"), Column("significant"))


def _git(args: Sequence[str], cwd: Path) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=str(cwd), capture_output=True, check=False)
    except FileNotFoundError:
        raise BaselineError("git is not installed: pass two baseline directories instead") from None
    if out.returncode != 0:
        msg = out.stderr.decode("utf-8", "replace").strip().splitlines()
        raise BaselineError(f"git {' '.join(args)}: {msg[-1] if msg else 'failed'}")
    return out.stdout.decode("utf-8")


def _toplevel(cwd: Path) -> Path:
    return Path(_git(["rev-parse", "--show-toplevel"], cwd).strip())


def load_directory(root: Path) -> Entries:
    out: Entries = {}
    for f in sorted(root.rglob("*.json")):
        if not f.is_file():
            continue
        rel = f.relative_to(root).as_posix()
        for key, entry in read_file(f).get("entries", {}).items():
            out[(rel, key)] = entry
    return out


def load_revision(rev: str, baselines: Path, cwd: Path) -> Entries:
    """Every baseline file under ``baselines`` at revision ``rev``."""
    top = _toplevel(cwd)
    try:
        prefix = baselines.resolve().relative_to(top).as_posix()
    except ValueError:
        raise BaselineError(f"{baselines} is not inside the git repository {top}: pass two "
                            f"directories, or run from the repository") from None
    _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], top)
    names = _git(["ls-tree", "-r", "--name-only", rev, "--", prefix], top).splitlines()
    out: Entries = {}
    for name in names:
        if not name.endswith(".json"):
            continue
        text = _git(["show", f"{rev}:{name}"], top)
        rel = name[len(prefix):].lstrip("/") if prefix not in ("", ".") else name
        for key, entry in entries_of_text(text, f"{rev}:{name}").items():
            out[(rel, key)] = entry
    return out


def load(spec: Optional[str], baselines: Path, cwd: Path) -> Tuple[Entries, str]:
    """A side of the diff: None (the working tree's baselines), a directory, or a revision."""
    if spec is None:
        return (load_directory(baselines) if baselines.is_dir() else {}), f"{baselines} (working tree)"
    p = Path(spec)
    if p.is_dir():
        return load_directory(p), str(p)
    try:
        return load_revision(spec, baselines, cwd), f"{spec}:{baselines}"
    except BaselineError as exc:
        if p.exists():
            raise
        raise BaselineError(f"{spec!r} is neither a baselines directory nor a git revision ({exc})") from None


def change_words(metric: str, old: float, new: float) -> str:
    if old <= 0 or new <= 0:
        return "-"
    change = new / old - 1.0
    if abs(change) < 5e-4:
        return "no change"
    better = (change < 0) == (METRICS[metric].worse == "higher")
    return f"{abs(change) * 100:.1f}% {'better' if better else 'worse'}"


def _parts(entry: Dict) -> Dict[str, Dict]:
    """An entry's metrics by the name a row shows: the whole's, then each stage's ('infer: latency_mean')."""
    out = {"": entry.get("metrics") or {}}
    for stage, part in sorted((entry.get("stages") or {}).items()):
        out[f"{stage}: "] = part.get("metrics") or {}
    return out


def compare_entries(old: Entries, new: Entries, metrics: Sequence[str]) -> Tuple[List[List[str]], int, int]:
    """Rows (device, test, metric, old, new, change, significant) of the metrics that differ, a
    stage's named 'stage: metric'; the number of significant changes that made things worse, and
    of metrics compared."""
    pairs = []
    for k in sorted(set(old) & set(new)):
        before, after = _parts(old[k]), _parts(new[k])
        pairs += [(k, prefix, name) for prefix in after if prefix in before for name in metrics
                  if name in before[prefix] and name in after[prefix]]
    alpha = REWRITE_ALPHA / max(len(pairs), 1)
    rows, worse = [], 0
    for (rel, key), prefix, name in pairs:
        a, b = _parts(old[(rel, key)])[prefix][name], _parts(new[(rel, key)])[prefix][name]
        va, vb = float(a["value"]), float(b["value"])
        if va == vb:
            continue
        sig = metric_changed(name, a, b, alpha)
        words = change_words(name, va, vb)
        if sig and words.endswith("worse"):
            worse += 1
        device = rel.split("/", 1)[0] if "/" in rel else ""
        rows.append([device, key, prefix + name, format_value(name, va), format_value(name, vb), words,
                     "yes" if sig else "no"])
    return rows, worse, len(pairs)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pytest-jetson diff",
        description="Compare two sets of baselines (directories or git revisions): per test and metric, "
        "old, new, change and whether the change is significant.")
    p.add_argument("old", nargs="?", default=None, help="a baselines directory or a git revision (default HEAD)")
    p.add_argument("new", nargs="?", default=None,
                   help="a baselines directory or a git revision (default: the working tree)")
    p.add_argument("--baselines", default="baselines", metavar="DIR",
                   help="the baselines directory, in the working tree and in revisions (default baselines)")
    p.add_argument("--metric", action="append", dest="metrics", metavar="NAME",
                   help=f"metrics to compare (default: {', '.join(DEFAULT_METRICS)}; 'all' for every one)")
    p.add_argument("--all", action="store_true", help="also list changes that are not significant")
    p.add_argument("--exit-code", action="store_true", help="exit 1 when a significant change made a metric worse")
    return p


def _metrics(asked: Optional[Sequence[str]]) -> List[str]:
    """The metrics to compare; BaselineError naming an unknown one."""
    metrics = list(asked or DEFAULT_METRICS)
    if metrics == ["all"]:
        return list(METRICS)
    bad = [m for m in metrics if m not in METRICS]
    if bad:
        raise BaselineError(f"unknown metric {bad[0]!r}; known: {', '.join(METRICS)}")
    return metrics


def _table(rows: List[List[str]], title: str) -> Tuple[str, List[str]]:
    """The title (with the device when there is one) and the table of ``rows``."""
    if not rows:
        return title, []
    if len({r[0] for r in rows}) == 1:  # one device: say it once, above the table
        return f"{title} ({rows[0][0] or 'no device'})", table(_COLUMNS[1:], [r[1:] for r in rows], width=width())
    return title, table(_COLUMNS, rows, width=width())


def _only_in(old: Entries, new: Entries, old_name: str, new_name: str) -> List[str]:
    lines = [f"only in {old_name}: {rel.split('/', 1)[0]} {key}" for rel, key in sorted(set(old) - set(new))]
    return lines + [f"only in {new_name}: {rel.split('/', 1)[0]} {key}" for rel, key in sorted(set(new) - set(old))]


def _summary(rows: List[List[str]], shown: int, worse: int, compared: int) -> str:
    n_sig = sum(1 for r in rows if r[-1] == "yes")
    hidden = len(rows) - shown
    summary = (f"{compared} metric{'s' if compared != 1 else ''} compared: {n_sig} significant change"
               f"{'s' if n_sig != 1 else ''} ({worse} worse)")
    if hidden:
        summary += f", {hidden} within noise (--all lists them)"
    return summary


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    cwd = Path.cwd()
    baselines = Path(args.baselines)
    try:
        metrics = _metrics(args.metrics)
        old, old_name = load(args.old if args.old is not None else "HEAD", baselines, cwd)
        new, new_name = load(args.new, baselines, cwd)
    except BaselineError as exc:
        sys.stderr.write(f"pytest-jetson diff: {exc}\n")
        return 2
    rows, worse, compared = compare_entries(old, new, metrics)
    shown = rows if args.all else [r for r in rows if r[-1] == "yes"]
    title, body = _table(shown, f"pytest-jetson diff: {old_name} -> {new_name}")
    lines = [title] + body + _only_in(old, new, old_name, new_name)
    lines.append(_summary(rows, len(shown), worse, compared))
    _print(lines)
    return 1 if (args.exit_code and worse) else 0
