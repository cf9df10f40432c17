"""``pytest-jetson preflight``: is this board fit to run the perf gate right now?

Each check prints one line; any failure exits 1 with the command that fixes it.
"""

import argparse
from pathlib import Path
from typing import List, Optional

from ..devices.detect import detect
from ..devices.preflight import run_checks
from ..devices.resolve import system_root
from ..errors import ConfigError


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="pytest-jetson preflight",
        description="Is this board fit to run the perf gate right now? Each check prints one line; any "
                    "failure exits 1 with the command that fixes it.")
    parser.add_argument("--device", help="the board the runner must be (name or alias)")
    parser.add_argument("--power-mode", help="the power mode the board must run (default: the baselines')")
    parser.add_argument("--baselines", type=Path, help="baseline directory of this device, e.g. baselines/orin-nano-8gb")
    parser.add_argument("--require-jetson-clocks", action="store_true", help="fail unless jetson_clocks is on")
    parser.add_argument("--max-gpu-load", type=float, default=10.0, help="percent (default 10)")
    parser.add_argument("--max-cpu-load", type=float, default=0.5, help="load average per core (default 0.5)")
    parser.add_argument("--samples", type=int, default=3, help="GPU load samples, 0.5 s apart (default 3)")
    args = parser.parse_args(argv)
    root = system_root()
    found = detect(root)
    try:
        results = run_checks(found, root, args.device, args.power_mode, args.require_jetson_clocks,
                             args.max_gpu_load, args.max_cpu_load, args.baselines, args.samples)
    except ConfigError as exc:
        print(f"FAIL  {exc}")
        return 1
    for ok, line in results:
        print(f"{'ok  ' if ok else 'FAIL'}  {line}")
    failed = [line for ok, line in results if not ok]
    if failed:
        print(f"preflight failed: {len(failed)} check(s); the board is not ready for the perf gate")
        return 1
    print("preflight passed: the board is ready")
    return 0
