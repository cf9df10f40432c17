"""``pytest-jetson show baselines/``: what a baseline directory (or one device's directory, or
one file) holds, grouped by file, entries in natural order (b1, b2, b16)."""

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..errors import BaselineError
from .compare import _print, width


def _env(fp: dict) -> str:
    bits = [fp.get("power_mode"), fp.get("precision"),
            f"batch {fp['batch']}" if fp.get("batch") is not None else None,
            "simulated" if fp.get("simulated") else "real"]
    return ", ".join(str(x) for x in bits if x)


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ..gate.baseline import describe_file
    from ..report.models import check_known, same_model
    from ..report.render import value_text
    from ..report.text import Column, natural_key, table

    p = argparse.ArgumentParser(prog="pytest-jetson show",
                                description="List the baselines stored in a directory or file.")
    p.add_argument("path", nargs="?", default="baselines", help="baselines directory, device directory or file")
    p.add_argument("--metric", action="append", dest="metrics", metavar="NAME",
                   help="metrics to show (default: throughput, latency_p99, memory, power)")
    p.add_argument("--model", action="append", dest="models", metavar="NAME|PATH",
                   help="only the entries of this model: a zoo name or an .onnx path (repeatable)")
    args = p.parse_args(argv)
    root = Path(args.path)
    if root.is_dir():
        files = sorted(root.rglob("*.json"), key=lambda f: natural_key(f.as_posix()))
    elif root.exists() or root.is_symlink():
        files = [root]  # a file, or something that is not one: describe_file names what it is
    else:
        sys.stderr.write(f"pytest-jetson show: {root} does not exist; baselines are written by "
                         f"pytest --jetson-update-baselines (default directory: baselines)\n")
        return 2
    metrics = args.metrics or ["throughput", "latency_p99", "memory", "power"]
    from ..metrics import METRICS

    bad = [m for m in metrics if m not in METRICS]
    if bad:
        sys.stderr.write(f"pytest-jetson show: unknown metric {bad[0]!r}; known: {', '.join(METRICS)}\n")
        return 2
    body = []
    errors = []
    seen = []
    n = 0
    for f in files:
        try:
            entries = describe_file(f)
        except BaselineError as exc:
            errors.append(str(exc))
            continue
        rel = f.relative_to(root).as_posix() if root.is_dir() else f.name
        group = []
        for e in sorted(entries, key=lambda e: natural_key(e["key"])):
            fp = e["fingerprint"]
            seen.append(fp.get("model") or "")
            if args.models and not any(same_model(fp.get("model"), w) for w in args.models):
                continue
            key = e["key"].split("::", 1)[-1]
            group.append(["  " + key, e["recorded"][:10], _env(fp)]
                         + [value_text(m, e["metrics"].get(m)) for m in metrics])
        if group:
            body.append([rel])
            body += group
            n += len(group)
    if args.models:
        why = check_known(args.models, [s for s in seen if s], str(root))
        if why:
            sys.stderr.write(f"pytest-jetson show: {why}\n")
            return 2
    lines = []
    if body:
        columns = ([Column("file / entry", elastic=True), Column("recorded", drop=2), Column("environment", drop=1)]
                   + [Column(m, ">") for m in metrics])
        lines += table(columns, body, width=width())
        files_read = len(files) - len(errors)
        lines.append(f"{n} entr{'y' if n == 1 else 'ies'} in {files_read} file{'' if files_read == 1 else 's'}")
    else:
        lines.append(f"no baselines under {root}")
    _print(lines)
    for e in errors:
        sys.stderr.write(e + "\n")
    return 1 if errors else 0
