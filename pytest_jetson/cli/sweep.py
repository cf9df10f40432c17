"""``pytest-jetson sweep``: a grid of configurations on a simulated Jetson, its Pareto front and the
lowest-energy power mode under a latency budget."""

import argparse
import sys
from typing import Any, Dict, List, Optional

from ..errors import JetsonError


def _split(text: Optional[str]) -> List[str]:
    return [t.strip() for t in str(text or "").split(",") if t.strip()]


def _ints(text: str, what: str) -> List[int]:
    try:
        return [int(t) for t in _split(text)]
    except ValueError:
        raise JetsonError(f"--{what} {text!r}: give integers separated by commas, e.g. 1,8,32") from None


#: (header, width, cell) per column; "per proc" and "accel" only when the sweep varies them.
_COLUMNS = (
    ("power mode", -14, lambda r: r["power_mode"][:14]),
    ("prec", -4, lambda r: r["precision"]),
    ("accel", -7, lambda r: r["accelerator"]),
    ("b", 4, lambda r: str(r["batch"])),
    ("n", 3, lambda r: str(r["processes"])),
    ("items/s", 8, lambda r: f"{r['throughput']:.1f}"),
    ("per proc", 8, lambda r: f"{r['per_process_throughput']:.1f}"),
    ("lat ms", 7, lambda r: f"{r['latency'] * 1e3:.3f}"),
    ("p99 ms", 7, lambda r: f"{r['latency_p99'] * 1e3:.3f}"),
    ("memory", 8, lambda r: _bytes(r["memory"])),
    ("W", 5, lambda r: f"{r['power']:.1f}"),
    ("mJ/img", 6, lambda r: f"{r['energy'] * 1e3:.2f}"),
    ("MHz", 4, lambda r: f"{r['gpu_clock_mhz']:.0f}"),
    ("bound", -10, lambda r: r["bound"] + ("  OOM" if r["oom"] else "")),
)


def _bytes(n: float) -> str:
    from ..units import format_bytes

    return format_bytes(n).replace(" ", "")


def _columns(rows: List[Dict[str, Any]]):
    varies = {k: len({r[k] for r in rows}) > 1 for k in ("accelerator", "processes")}
    skip = set()
    if not varies["accelerator"]:
        skip.add("accel")
    if not varies["processes"]:
        skip.add("per proc")
    return [c for c in _COLUMNS if c[0] not in skip]


def _line(cells: List[str], cols) -> str:
    return " ".join(f"{x:<{-w}}" if w < 0 else f"{x:>{w}}" for x, (_, w, _) in zip(cells, cols)).rstrip()


def _header(cols) -> str:
    return _line([c[0] for c in cols], cols)


def _row_line(r: Dict[str, Any], cols) -> str:
    return _line([c[2](r) for c in cols], cols)


def main(argv: Optional[List[str]] = None) -> int:
    """pytest-jetson sweep --device agx-orin --model resnet50 --precision int8 --batch 1,8,32
    --processes 1,2 --power-modes all --max-latency 5ms"""
    ap = argparse.ArgumentParser(
        prog="pytest-jetson sweep",
        description="Predict a grid of configurations on a simulated Jetson: the table, the Pareto front "
                    "of latency against energy per item, and the power mode that minimises energy under a "
                    "latency budget.")
    ap.add_argument("--device", required=True, help="device name, e.g. orin-nano, agx-orin")
    ap.add_argument("--model", required=True, help="zoo model name or .onnx path")
    ap.add_argument("--precision", default="fp16", help="comma list: fp32,tf32,fp16,int8 (default fp16)")
    ap.add_argument("--batch", default="1", help="comma list of batch sizes (default 1)")
    ap.add_argument("--processes", default="1", help="comma list of concurrent processes (default 1)")
    ap.add_argument("--power-modes", default=None,
                    help="'all', 'fastest', or a comma list of mode names/ids (default: the device's default mode)")
    ap.add_argument("--accelerator", default="gpu", help="comma list: gpu,dla,gpu+dla (default gpu)")
    ap.add_argument("--harness", default=None,
                    help="what measures the engine: plugin (this plugin's loop on a board, the default), "
                         "trtexec, trtexec-gpu, graphs, zero-copy, deepstream, python, python-sync")
    ap.add_argument("--resolution", type=int, default=None, help="square input side (default: the model's)")
    ap.add_argument("--max-latency", default=None, help="latency budget per batch, e.g. 5ms")
    ap.add_argument("--limit", type=int, default=200, help="print at most this many table rows (default 200)")
    ap.add_argument("--json", default=None, help="also write every row as JSON to this path")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    from ..sim import sweep
    from ..units import parse_duration

    try:
        budget = parse_duration(args.max_latency, "--max-latency") if args.max_latency else None
        modes: Any = None
        if args.power_modes:
            modes = "all" if args.power_modes.strip().lower() == "all" else _split(args.power_modes)
        res = sweep(args.device, args.model, precisions=_split(args.precision),
                    batches=_ints(args.batch, "batch"), processes=_ints(args.processes, "processes"),
                    power_modes=modes, accelerators=_split(args.accelerator), harness=args.harness,
                    resolution=args.resolution)
    except JetsonError as exc:
        print(f"pytest-jetson sweep: error: {exc}", file=sys.stderr)
        return 2
    rows = res.to_rows()
    print(f"simulated {res.meta['device']} · {res.meta['model']} · harness {res.meta['harness']} · "
          f"{len(rows)} configurations")
    import textwrap

    for n in res.notes:
        print(textwrap.fill(n, 100, initial_indent="note: ", subsequent_indent="      "))
    cols = _columns(rows)
    print()
    print(_header(cols))
    for r in rows[: args.limit]:
        print(_row_line(r, cols))
    if len(rows) > args.limit:
        print(f"... {len(rows) - args.limit} more rows (raise --limit, or --json PATH for all)")
    print()
    front = res.pareto("latency", "energy").to_rows()
    print(f"Pareto front, latency vs energy per item ({len(front)} configurations):")
    print(_header(cols))
    for r in front:
        print(_row_line(r, cols))
    print()
    best = res.best_mode(max_latency=budget)
    limit_text = f"latency <= {args.max_latency}" if budget is not None else "no latency budget"
    if best is None:
        print(f"no configuration meets {limit_text} (and fits in memory)")
        rc = 1
    else:
        print(f"lowest energy per item with {limit_text}: power mode {best['power_mode']} "
              f"({best['precision']}, batch {best['batch']}, {best['processes']} process(es), {best['accelerator']}):")
        print(f"  {best['energy'] * 1e3:.3f} mJ/item, latency {best['latency'] * 1e3:.3f} ms, "
              f"{best['throughput']:.1f} items/s, {best['power']:.2f} W")
        rc = 0
    if args.json:
        import json

        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"device": res.meta["device"], "model": res.meta["model"], "notes": res.notes,
                       "rows": rows, "pareto": front, "best": best}, fh, indent=1)
    return rc
