"""``pytest-jetson calibrate``: the simulated Jetson against published results, in-sample and
leave-one-source-out; for developers, the refit of its constants."""

import argparse
import sys
import textwrap
from typing import List, Optional

from ..errors import JetsonError
from ..sim import calibration as cal


def _run(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="pytest-jetson calibrate",
        description="Compare the simulated Jetson with published results: every row it can express, "
                    "predicted by the shipped constants (in-sample) and by a fit without the row's source "
                    "(cross-validated), with the mean absolute percentage error by metric, source and "
                    "architecture.")
    ap.add_argument("--report", action="store_true", help="print the comparison (the default)")
    ap.add_argument("--summary", action="store_true", help="only the error tables, not every row")
    ap.add_argument("--verbose", action="store_true", help="also list the rows the model cannot express")
    ap.add_argument("--cross-validate", action="store_true",
                    help="recompute the cross-validated predictions (a fit per source, about half a minute) "
                         "instead of reading the ones stored by the fit of the shipped constants")
    ap.add_argument("--fit", action="store_true", help="refit the constants first (developers); implies "
                                                        "--cross-validate")
    ap.add_argument("--write", action="store_true", help="with --fit: write sim/data/calibration.json")
    args = ap.parse_args(argv)
    cross = args.cross_validate or args.fit
    if cross:
        print("cross-validating: one fit per published source (about half a minute) ...", file=sys.stderr)
    fitted = cal.fit() if args.fit else None
    rep = cal.report(fitted, cross=cross)
    if args.fit and args.write:
        cal.write(cal.to_json(fitted, rep))
        # the in-sample figures stored are those of the constants as written (4 significant digits)
        rep = cal.report(None, loso=rep["loso"])
        cal.write(cal.to_json(fitted, rep))
        print(f"wrote {cal.K.CALIBRATION_PATH}", file=sys.stderr)
    print(cal.format_report(rep, verbose=not args.summary))
    if args.verbose:
        print("\nnot expressible:")
        for row, why in rep["skipped"]:
            head = f"  {row['id']:>4} {row['source_id']:<13} {str(row['model'])[:30]:<30} "
            print(textwrap.fill(why, 100, initial_indent=head, subsequent_indent=" " * len(head)))
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    try:
        return _run(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    except JetsonError as exc:
        print(f"pytest-jetson calibrate: error: {exc}", file=sys.stderr)
        return 2
