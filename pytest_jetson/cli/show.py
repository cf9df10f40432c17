"""``pytest-jetson show baselines/``: what a baseline directory (or one device's directory, or
one file) holds, grouped by file, entries in natural order (b1, b2, b16)."""

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from ..errors import BaselineError
from ..gate.baseline import describe_file
from ..metrics import METRICS, defaults
from ..report.model_filter import check_known, same_model
from ..report.render import value_text
from ..report.text import Column, natural_key, table
from .compare import _print, width


def _env(fp: dict) -> str:
    bits = [fp.get("power_mode"), fp.get("precision"),
            f"batch {fp['batch']}" if fp.get("batch") is not None else None,
            "simulated" if fp.get("simulated") else "real"]
    return ", ".join(str(x) for x in bits if x)


class _Usage(Exception):
    """Input ``show`` cannot start from (exit status 2)."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pytest-jetson show",
                                description="List the baselines stored in a directory or file.")
    p.add_argument("path", nargs="?", default="baselines", help="baselines directory, device directory or file")
    p.add_argument("--metric", action="append", dest="metrics", metavar="NAME",
                   help="metrics to show (default: throughput, latency_p99, memory, power)")
    p.add_argument("--model", action="append", dest="models", metavar="NAME|PATH",
                   help="only the entries of this model: a zoo name or an .onnx path (repeatable)")
    return p


def _files(root: Path) -> List[Path]:
    if root.is_dir():
        return sorted(root.rglob("*.json"), key=lambda f: natural_key(f.as_posix()))
    if root.exists() or root.is_symlink():
        return [root]  # a file, or something that is not one: describe_file names what it is
    raise _Usage(f"{root} does not exist; baselines are written by pytest --jetson-update-baselines "
                 f"(default directory: baselines)")


def _metrics(asked: Optional[Sequence[str]]) -> List[str]:
    metrics = list(asked or defaults("show"))
    bad = [m for m in metrics if m not in METRICS]
    if bad:
        raise _Usage(f"unknown metric {bad[0]!r}; known: {', '.join(METRICS)}")
    return metrics


class _Listing:
    """The table's rows, file by file; the models seen (for --model's error) and the files that
    could not be read."""

    def __init__(self, metrics: Sequence[str], models: Sequence[str]) -> None:
        self.metrics = list(metrics)
        self.models = list(models)
        self.body: List[List[str]] = []
        self.errors: List[str] = []
        self.seen: List[str] = []
        self.entries = 0

    def add(self, f: Path, name: str) -> None:
        try:
            entries = describe_file(f)
        except BaselineError as exc:
            self.errors.append(str(exc))
            return
        group: List[List[str]] = []
        for e in sorted(entries, key=lambda e: natural_key(e["key"])):
            if self._wanted(e["fingerprint"]):
                group += [self._row(e)] + self._stage_rows(e)
                self.entries += 1
        if group:
            self.body += [[name]] + group

    def _wanted(self, fp: Dict[str, Any]) -> bool:
        self.seen.append(fp.get("model") or "")
        return not self.models or any(same_model(fp.get("model"), w) for w in self.models)

    def _stage_rows(self, e: Dict[str, Any]) -> List[List[str]]:
        """A row per stage of the entry, under it: the stage's figures in the columns it has."""
        stages = sorted((e.get("stages") or {}).items(), key=lambda kv: natural_key(kv[0]))
        return [["    " + stage + ":", "", ""] + [value_text(m, values.get(m)) if m in values else ""
                                                  for m in self.metrics]
                for stage, values in stages]

    def _row(self, e: Dict[str, Any]) -> List[str]:
        key = e["key"].split("::", 1)[-1]
        return (["  " + key, e["recorded"][:10], _env(e["fingerprint"])]
                + [value_text(m, e["metrics"].get(m)) for m in self.metrics])


def _lines(listing: _Listing, root: Path, files: int) -> List[str]:
    if not listing.body:
        return [f"no baselines under {root}"]
    columns = ([Column("file / entry", elastic=True), Column("recorded", drop=2), Column("environment", drop=1)]
               + [Column(m, ">") for m in listing.metrics])
    n, read = listing.entries, files - len(listing.errors)
    return table(columns, listing.body, width=width()) + [
        f"{n} entr{'y' if n == 1 else 'ies'} in {read} file{'' if read == 1 else 's'}"]


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    root = Path(args.path)
    try:
        files = _files(root)
        listing = _Listing(_metrics(args.metrics), args.models or [])
        for f in files:
            listing.add(f, f.relative_to(root).as_posix() if root.is_dir() else f.name)
        why = check_known(args.models, [s for s in listing.seen if s], str(root)) if args.models else None
        if why:
            raise _Usage(why)
    except _Usage as exc:
        sys.stderr.write(f"pytest-jetson show: {exc}\n")
        return 2
    _print(_lines(listing, root, len(files)))
    for e in listing.errors:
        sys.stderr.write(e + "\n")
    return 1 if listing.errors else 0
