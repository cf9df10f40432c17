"""``pytest-jetson show baselines/``: what a baseline directory (or one device's directory, or
one file) holds."""

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..errors import BaselineError
from ..metrics import format_value
from .compare import _print


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ..gate.baseline import describe_file
    from ..report.terminal import table

    p = argparse.ArgumentParser(prog="pytest-jetson show",
                                description="List the baselines stored in a directory or file.")
    p.add_argument("path", nargs="?", default="baselines", help="baselines directory, device directory or file")
    p.add_argument("--metric", action="append", dest="metrics", metavar="NAME",
                   help="metrics to show (default: throughput, latency_p99, memory, power)")
    args = p.parse_args(argv)
    root = Path(args.path)
    if root.is_dir():
        files = sorted(root.rglob("*.json"))
    elif root.exists() or root.is_symlink():
        files = [root]  # a file, or something that is not one: describe_file names what it is
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
        if not entries:
            continue
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
