"""Two runs compared metric by metric with the gate's own rule (``pytest-jetson compare``).

A run is the list of its tests' results (``gate.session.TestResult``, as ``report.jsonreport.results``
reads a JSON report): the relative bounds a test declares give their tolerances, other metrics use
``tolerance``.
"""

from typing import Dict, List, Optional, Sequence, Tuple

from ..metrics import defaults, format_percent
from ..run.measurement import Measurement
from .bounds import Bound
from .checks import BaselineRef, Verdict, check_relative
from .family import confidence_for
from .session import TestResult
from .stats import metric_stats


def measurements_by_key(run: Sequence[TestResult]) -> Dict[str, Measurement]:
    """Every measurement of a run by its baseline key."""
    return {key: m for result in run for key, m in result.keyed()}


def _tolerances(result: TestResult) -> Dict[str, Optional[float]]:
    return {b["metric"]: b.get("tolerance") for b in result.bounds if b.get("kind") == "relative"}


def compare_reports(old: Sequence[TestResult], new: Sequence[TestResult], tolerance: float = 0.05,
                    confidence: float = 0.99, metrics: Optional[Sequence[str]] = None,
                    allow_env_mismatch: bool = False, recorded: str = "") -> List[Verdict]:
    """``new``'s measurements against ``old``'s of the same key (``recorded``: when ``old`` ran)."""
    old_m = measurements_by_key(old)
    old_fp = {key: r.fingerprint for r in old for key in r.keys}
    default = set(defaults("compare"))
    pending: List[Tuple[Bound, Measurement, BaselineRef, object, Optional[dict], str, str]] = []
    for result in new:
        tolerances = _tolerances(result)
        wanted = list(metrics) if metrics else sorted(default | set(tolerances))
        for key, cur in result.keyed():
            if key not in old_m:
                continue
            base_stats = {}
            for name in wanted:
                st = metric_stats(old_m[key], name, confidence)
                if st is not None:
                    base_stats[name] = st
            ref = BaselineRef(metrics=base_stats, fingerprint=old_fp.get(key, {}), recorded=recorded,
                              file="OLD", key=key)
            for name in wanted:
                st = metric_stats(cur, name, confidence)
                if st is None or name not in base_stats:
                    continue
                tol = tolerances.get(name)
                tol = tolerance if tol is None else float(tol)
                bound = Bound(metric=name, text=format_percent(tol), kind="relative", tolerance=tol, unit="%")
                pending.append((bound, cur, ref, st, result.fingerprint or None, result.nodeid, key))
    # one family: the chance that two runs of unchanged code differ anywhere is 1 - confidence
    level = confidence_for(len(pending), family_alpha=1.0 - confidence, inconclusive_fails=False)
    verdicts: List[Verdict] = []
    for bound, cur, ref, st, fp, nodeid, key in pending:
        v = check_relative(bound, cur, ref, confidence=level, fingerprint=fp,
                           allow_env_mismatch=allow_env_mismatch, stats=st)
        v.test = nodeid
        v.measurement = key
        verdicts.append(v)
    return verdicts
