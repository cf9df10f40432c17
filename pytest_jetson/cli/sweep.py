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


def _row_line(r: Dict[str, Any]) -> str:
    from ..units import format_bytes

    oom = "  OOM" if r["oom"] else ""
    return (f"{r['power_mode']:<16} {r['precision']:<5} {r['accelerator']:<7} {r['batch']:>5} {r['processes']:>5} "
            f"{r['throughput']:>10.1f} {r['per_process_throughput']:>10.1f} {r['latency'] * 1e3:>9.3f} "
            f"{r['latency_p99'] * 1e3:>9.3f} {format_bytes(r['memory']):>10} {r['power']:>7.2f} "
            f"{r['energy'] * 1e3:>9.3f} {r['gpu_clock_mhz']:>7.0f} {r['bound']:<10}{oom}")


HEADER = (f"{'power mode':<16} {'prec':<5} {'accel':<7} {'batch':>5} {'procs':>5} {'items/s':>10} "
          f"{'per proc':>10} {'lat ms':>9} {'p99 ms':>9} {'memory':>10} {'power W':>7} {'mJ/item':>9} "
          f"{'GPU MHz':>7} {'bound':<10}")


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
                    help="'all', or a comma list of mode names/ids (default: the device's default mode)")
    ap.add_argument("--accelerator", default="gpu", help="comma list: gpu,dla,gpu+dla (default gpu)")
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
                    power_modes=modes, accelerators=_split(args.accelerator), resolution=args.resolution)
    except JetsonError as exc:
        print(f"pytest-jetson sweep: error: {exc}", file=sys.stderr)
        return 2
    rows = res.to_rows()
    print(f"simulated {res.meta['device']} · {res.meta['model']} · {len(rows)} configurations")
    for n in res.notes:
        print(f"note: {n}")
    print()
    print(HEADER)
    for r in rows[: args.limit]:
        print(_row_line(r))
    if len(rows) > args.limit:
        print(f"... {len(rows) - args.limit} more rows (raise --limit, or --json PATH for all)")
    print()
    front = res.pareto("latency", "energy").to_rows()
    print(f"Pareto front, latency vs energy per item ({len(front)} configurations):")
    print(HEADER)
    for r in front:
        print(_row_line(r))
    print()
    best = res.best_mode(max_latency=budget)
    limit_text = f"latency <= {args.max_latency}" if budget is not None else "no latency budget"
    if best is None:
        print(f"no configuration meets {limit_text} (and fits in memory)")
        rc = 1
    else:
        print(f"lowest energy per item with {limit_text}: power mode {best['power_mode']} "
              f"({best['precision']}, batch {best['batch']}, {best['processes']} process(es), {best['accelerator']}): "
              f"{best['energy'] * 1e3:.3f} mJ/item, latency {best['latency'] * 1e3:.3f} ms, "
              f"{best['throughput']:.1f} items/s, {best['power']:.2f} W")
        rc = 0
    if args.json:
        import json

        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"device": res.meta["device"], "model": res.meta["model"], "notes": res.notes,
                       "rows": rows, "pareto": front, "best": best}, fh, indent=1)
    return rc
