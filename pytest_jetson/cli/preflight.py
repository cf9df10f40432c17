"""``pytest-jetson preflight``: is this board fit to run the perf gate right now?

Each check prints one line; any failure exits 1 with the command that fixes it.
"""

import argparse
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from .. import preflight_checks as pf
from ..devices.detect import detect, system_root
from ..errors import ConfigError
from ..units import parse_duration, parse_size

_MARK = {pf.OK: "ok  ", pf.FAIL: "FAIL", pf.SKIP: "skip", pf.NOTE: "note"}


def main(argv: Optional[List[str]] = None, now: Optional[Callable[[], float]] = None,
         sleep: Optional[Callable[[float], None]] = None) -> int:
    """``now`` and ``sleep`` stand in for the monotonic clock and ``time.sleep`` (tests)."""
    parser = argparse.ArgumentParser(
        prog="pytest-jetson preflight",
        description="Is this board fit to run the perf gate right now? Each check prints one line; any "
                    "failure exits 1 with the command that fixes it.")
    parser.add_argument("--device", help="the board the runner must be (name or alias)")
    parser.add_argument("--power-mode", help="the power mode the board must run (default: the baselines')")
    parser.add_argument("--baselines", type=Path, help="baseline directory of this device, e.g. baselines/orin-nano-8gb")
    parser.add_argument("--require-jetson-clocks", action="store_true", help="fail unless jetson_clocks is on")
    parser.add_argument("--max-gpu-load", type=float, default=pf.MAX_GPU_LOAD_PCT,
                        help=f"percent (default {pf.MAX_GPU_LOAD_PCT:g})")
    parser.add_argument("--max-cpu-load", type=float, default=pf.MAX_CPU_LOAD_PER_CORE,
                        help=f"load average per core (default {pf.MAX_CPU_LOAD_PER_CORE:g})")
    parser.add_argument("--min-thermal-headroom", type=float, default=pf.MIN_THERMAL_HEADROOM_C,
                        help="degrees C every sensor must stay below its trip point "
                             f"(default {pf.MIN_THERMAL_HEADROOM_C:g})")
    parser.add_argument("--min-free-memory", default="1GiB", help="memory that must be available (default 1GiB)")
    parser.add_argument("--samples", type=int, default=3, help="GPU load samples, 0.5 s apart (default 3)")
    parser.add_argument("--wait", default=None, metavar="DURATION",
                        help="wait up to this long (e.g. 120s, 5min) for the board to cool down and fall idle "
                             "before failing the thermal headroom, GPU idle and CPU idle checks (default: no wait)")
    parser.add_argument("--wait-poll", default="5s", metavar="DURATION",
                        help="how often --wait re-checks (default 5s)")
    args = parser.parse_args(argv)
    root = system_root()
    try:
        minimum = parse_size(args.min_free_memory, what="--min-free-memory")
        bound = parse_duration(args.wait, what="--wait") or 0.0
        poll = parse_duration(args.wait_poll, what="--wait-poll") or 0.0
        checks = pf.run_checks(
            detect(root), root, args.device, args.power_mode, args.require_jetson_clocks, args.max_gpu_load,
            args.max_cpu_load, args.baselines, args.samples, min_thermal_headroom=args.min_thermal_headroom,
            min_free_memory=minimum,
        )
    except ConfigError as exc:
        print(f"FAIL  {exc}")
        return 1
    if bound > 0:
        def again() -> List[pf.Check]:
            return pf.recheck(root, args.max_gpu_load, args.max_cpu_load, args.min_thermal_headroom, args.samples)

        clocks: Dict[str, Any] = {} if now is None else {"now": now}
        if sleep is not None:
            clocks["sleep"] = sleep
        checks, _ = pf.wait_until_ready(checks, again, bound, poll=poll, **clocks)
    for check in checks:
        print(f"{_MARK[check.status]}  {check.line()}")
    failed = [c for c in checks if not c.ok]
    if failed:
        print(f"preflight failed: {len(failed)} check(s); the board is not ready for the perf gate")
        return 1
    print("preflight passed: the board is ready")
    return 0
