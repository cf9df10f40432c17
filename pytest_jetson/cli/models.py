"""``pytest-jetson models``: the zoo with parameters, MACs and default input."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import List, Tuple, Union

from ..errors import JetsonError, ModelError
from ..models import zoo
from ..models.graph import analyze, input_dims
from ..models.reference import resolve
from ..sim.workload import file_shapes


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pytest-jetson models",
                                description="List the model zoo: parameters, MACs and default input.")
    p.add_argument("names", nargs="*", help="zoo model names or .onnx paths (default: the whole zoo)")
    p.add_argument("--resolution", type=_resolution, default=None, metavar="N|HxW",
                   help="input size to count MACs at (default: each model's own); for an .onnx file, "
                        "the height and width of its image input")
    p.add_argument("--input-shape", type=_shape, default=None, metavar="CxHxW",
                   help="an .onnx file's input shape without the batch (sizes its dynamic dimensions)")
    p.add_argument("--batch", type=int, default=1, help="batch size MACs are counted for (default 1)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def _sizes(text: str) -> Tuple[int, ...]:
    parts = [x for x in text.lower().replace(",", "x").split("x") if x.strip()]
    try:
        sizes = tuple(int(x) for x in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of sizes like 3x480x640") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: every size must be a positive int")
    return sizes


def _resolution(text: str) -> Union[int, Tuple[int, ...]]:
    sizes = _sizes(text)
    if len(sizes) > 2:
        raise argparse.ArgumentTypeError(f"{text!r} is not N or HxW")
    return sizes[0] if len(sizes) == 1 else sizes


def _shape(text: str) -> Tuple[int, ...]:
    return _sizes(text)


def _file_stats(name: str, resolution, input_shape, batch: int):
    for inp, dims in input_dims(name).items():
        dynamic = [a for a, d in enumerate(dims) if a and not (isinstance(d, int) and d > 0)]
        image = len(dims) == 4 and set(dynamic) <= {2, 3}
        if dynamic and input_shape is None and not (resolution is not None and image):
            example = "x".join(str(d) if a not in dynamic else ("H" if a == 2 and image else
                                                                 "W" if a == 3 and image else f"D{a}")
                               for a, d in enumerate(dims) if a)
            raise ModelError(f"{name}: input {inp!r} has dynamic dimension(s) {', '.join(map(str, dynamic))} "
                             f"besides the batch; give its size with --input-shape {example} (without the "
                             "batch)" + (" or --resolution HxW (N for a square)" if image else ""))
    shapes = file_shapes(name, resolution, input_shape)
    return analyze(name, batch=batch, input_shapes=dict(shapes) if shapes else None)


def rows(names: List[str] | None = None, resolution=None, batch: int = 1, input_shape=None) -> List[dict]:
    out = []
    for name in names or zoo.names():
        if resolve(name).is_file:
            if not Path(name).is_file():
                raise ModelError(f"{name}: no such ONNX file; pass an existing .onnx path or a zoo "
                                 f"name ({', '.join(zoo.names())})")
            stats = _file_stats(name, resolution, input_shape, batch)
            task = "(onnx file)"
        else:
            if input_shape is not None:
                raise ModelError(f"{name}: --input-shape sizes an .onnx file's dynamic dimensions; a zoo "
                                 "model is built at --resolution N or HxW")
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
        table = rows(args.names, args.resolution, args.batch, args.input_shape)
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
