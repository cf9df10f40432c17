"""``pytest-jetson models``: the zoo with parameters, MACs and default input."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import List

from ..errors import JetsonError, ModelError
from ..models import zoo
from ..models.graph import analyze
from ..models.reference import resolve


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pytest-jetson models",
                                description="List the model zoo: parameters, MACs and default input.")
    p.add_argument("names", nargs="*", help="zoo model names or .onnx paths (default: the whole zoo)")
    p.add_argument("--resolution", type=int, default=None,
                   help="square input side to count MACs at (default: each model's own)")
    p.add_argument("--batch", type=int, default=1, help="batch size MACs are counted for (default 1)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def rows(names: List[str] | None = None, resolution: int | None = None, batch: int = 1) -> List[dict]:
    out = []
    for name in names or zoo.names():
        if resolve(name).is_file:
            if not Path(name).is_file():
                raise ModelError(f"{name}: no such ONNX file; pass an existing .onnx path or a zoo "
                                 f"name ({', '.join(zoo.names())})")
            stats = analyze(name, batch=batch)
            task = "(onnx file)"
        else:
            stats = zoo.stats(name, resolution=resolution, batch=batch)
            task = zoo.task(name)
        out.append({
            "name": name,
            "task": task,
            "params": stats.params,
            "gmacs": round(stats.macs / 1e9, 3),
            "gflops": round(stats.flops / 1e9, 3),
            "weights_mb": round(stats.weight_bytes / 1e6, 1),
            "input": list(stats.input_shape),
            "outputs": [list(s) for s in stats.output_shapes],
        })
    return out


def main(argv: List[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        table = rows(args.names, args.resolution, args.batch)
    except JetsonError as exc:
        print(f"pytest-jetson models: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    header = ("model", "task", "params", "GMACs", "weights", "input")
    lines = [header]
    for r in table:
        lines.append((r["name"], r["task"], f"{r['params']:,}", f"{r['gmacs']:.2f}",
                      f"{r['weights_mb']:.1f} MB", "x".join(str(d) for d in r["input"][1:])))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for i, line in enumerate(lines):
        cells = [c.ljust(w) if j in (0, 1, 5) else c.rjust(w) for j, (c, w) in enumerate(zip(line, widths))]
        print("  ".join(cells).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
