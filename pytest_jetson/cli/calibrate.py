"""``pytest-jetson calibrate``: the simulated Jetson against published results (and, for
developers, the refit of its constants)."""

import argparse
import sys
from typing import List, Optional

from ..errors import JetsonError
from ..sim.calibrate import _CACHE, fit, format_report, report, write


def _run(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="pytest-jetson calibrate",
                                 description="Compare the simulated Jetson with published results.")
    ap.add_argument("--report", action="store_true", help="print predicted vs published and MAPE (default)")
    ap.add_argument("--verbose", action="store_true", help="also list the rows the model cannot express")
    ap.add_argument("--fit", action="store_true", help="refit the constants (developers)")
    ap.add_argument("--write", action="store_true", help="with --fit: write sim/data/calibration.json")
    args = ap.parse_args(argv)
    if args.fit:
        data = fit(verbose=True)
        if args.write:
            write(data)
            _CACHE.clear()
    rep = report()
    print(format_report(rep))
    if args.verbose:
        print("\nnot expressible:")
        for row, why in rep["skipped"]:
            print(f"  {row['id']:>4} {row['device_family']:<12} {row['model']:<40} {why}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    try:
        return _run(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    except JetsonError as exc:
        print(f"pytest-jetson calibrate: error: {exc}", file=sys.stderr)
        return 2
