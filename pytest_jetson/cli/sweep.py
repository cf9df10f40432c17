"""``pytest-jetson sweep``: a grid of configurations on a simulated Jetson, its Pareto front and the
lowest-energy power mode under a latency budget."""

import argparse
import json
import sys
import textwrap
from typing import Any, Dict, List, Optional

from .. import fileio
from ..devices import catalog
from ..errors import JetsonError
from ..report.text import Column, table
from ..sim.sweeps import sweep
from ..units import format_bytes, parse_duration
from .compare import width


def _split(text: Optional[str]) -> List[str]:
    return [t.strip() for t in str(text or "").split(",") if t.strip()]


def _ints(text: str, what: str) -> List[int]:
    try:
        return [int(t) for t in _split(text)]
    except ValueError:
        raise JetsonError(f"--{what} {text!r}: give integers separated by commas, e.g. 1,8,32") from None


def _columns() -> Any:
    return (Column("power mode"), Column("prec"), Column("accel", drop=3), Column("batch", ">"),
            Column("procs", ">"), Column("items/s", ">"), Column("per proc", ">", drop=2),
            Column("lat ms", ">"), Column("p99 ms", ">", drop=4), Column("memory", ">"),
            Column("power W", ">"), Column("mJ/item", ">"), Column("GPU MHz", ">", drop=1),
            Column("bound"))


def _cells(r: Dict[str, Any]) -> List[str]:
    return [r["power_mode"], r["precision"], r["accelerator"], str(r["batch"]), str(r["processes"]),
            f"{r['throughput']:.1f}", f"{r['per_process_throughput']:.1f}", f"{r['latency'] * 1e3:.3f}",
            f"{r['latency_p99'] * 1e3:.3f}", format_bytes(r["memory"]), f"{r['power']:.2f}",
            f"{r['energy'] * 1e3:.3f}", f"{r['gpu_clock_mhz']:.0f}", r["bound"] + ("  OOM" if r["oom"] else "")]


def _say(text: str) -> None:
    print("\n".join(textwrap.wrap(text, width(), subsequent_indent="  ", break_on_hyphens=False)))


def _print_table(rows: List[Dict[str, Any]]) -> None:
    for line in table(_columns(), [_cells(r) for r in rows], width=width()):
        print(line)


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
    try:
        budget = parse_duration(args.max_latency, "--max-latency") if args.max_latency else None
        modes: Any = None
        if args.power_modes:
            modes = "all" if args.power_modes.strip().lower() == "all" else _split(args.power_modes)
        if isinstance(modes, list):  # an unknown mode's error names this command's option
            profile = catalog.get(args.device)
            modes = [profile.power_mode(m, option="--power-modes") for m in modes]
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
    for n in res.notes:
        _say(f"note: {n}")
    print()
    _print_table(rows[: args.limit])
    if len(rows) > args.limit:
        print(f"... {len(rows) - args.limit} more rows (raise --limit, or --json PATH for all)")
    print()
    front = res.pareto("latency", "energy").to_rows()
    print(f"Pareto front, latency vs energy per item ({len(front)} configurations):")
    _print_table(front)
    print()
    best = res.best_mode(max_latency=budget)
    limit_text = f"latency <= {args.max_latency}" if budget is not None else "no latency budget"
    if best is None:
        print(f"no configuration meets {limit_text} (and fits in memory)")
        rc = 1
    else:
        _say(f"lowest energy per item with {limit_text}: power mode {best['power_mode']} "
             f"({best['precision']}, batch {best['batch']}, {best['processes']} process(es), {best['accelerator']}): "
             f"{best['energy'] * 1e3:.3f} mJ/item, latency {best['latency'] * 1e3:.3f} ms, "
             f"{best['throughput']:.1f} items/s, {best['power']:.2f} W")
        rc = 0
    if args.json:
        doc = {"device": res.meta["device"], "model": res.meta["model"], "notes": res.notes,
               "rows": rows, "pareto": front, "best": best}
        fileio.write_atomic(args.json, json.dumps(doc, indent=1) + "\n")  # never a FIFO, a device or a directory
    return rc
