"""Two runs compared metric by metric with the gate's own rule (``pytest-jetson compare``).

A run is the list of its tests' results as ``TestResult.to_dict`` gives them (what a JSON report's
``tests`` holds): the relative bounds a test declares give their tolerances, other metrics use
``tolerance``.
"""

from typing import Any, Dict, List, Optional, Sequence

from ..metrics import defaults, format_percent
from ..run.measurement import Measurement
from .bounds import Bound
from .compare import BaselineRef, Verdict, check_relative
from .family import confidence_for
from .stats import metric_stats


def measurements_by_key(run: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Every measurement of a run by its baseline key."""
    out: Dict[str, Dict[str, Any]] = {}
    for t in run.get("tests", []):
        for m in t.get("measurements", []):
            out[m.get("key") or t["nodeid"]] = m
    return out


def compare_reports(old: Dict[str, Any], new: Dict[str, Any], tolerance: float = 0.05, confidence: float = 0.99,
                    metrics: Optional[Sequence[str]] = None,
                    allow_env_mismatch: bool = False) -> List[Verdict]:
    old_m = measurements_by_key(old)
    default = set(defaults("compare"))
    new_tests = {t["nodeid"]: t for t in new.get("tests", [])}
    verdicts: List[Verdict] = []
    pending = []
    for nodeid, t in new_tests.items():
        tolerances = {b["metric"]: b.get("tolerance") for b in t.get("bounds", []) if b.get("kind") == "relative"}
        old_fp_by_key = {}
        for ot in old.get("tests", []):
            for k in ot.get("keys", []):
                old_fp_by_key[k] = ot.get("fingerprint", {})
        for md in t.get("measurements", []):
            key = md.get("key") or nodeid
            if key not in old_m:
                continue
            cur = Measurement.from_dict(md)
            base = Measurement.from_dict(old_m[key])
            wanted = list(metrics) if metrics else sorted(default | set(tolerances))
            base_stats = {}
            for name in wanted:
                st = metric_stats(base, name, confidence)
                if st is not None:
                    base_stats[name] = st
            ref = BaselineRef(metrics=base_stats, fingerprint=old_fp_by_key.get(key, {}),
                              recorded=old.get("created", ""), file="OLD", key=key)
            for name in wanted:
                st = metric_stats(cur, name, confidence)
                if st is None or name not in base_stats:
                    continue
                tol = tolerances.get(name)
                tol = tolerance if tol is None else float(tol)
                bound = Bound(metric=name, text=format_percent(tol), kind="relative", tolerance=tol, unit="%")
                pending.append((bound, cur, ref, st, t.get("fingerprint") or None, nodeid, key))
    # one family: the chance that two runs of unchanged code differ anywhere is 1 - confidence
    level = confidence_for(len(pending), family_alpha=1.0 - confidence, inconclusive_fails=False)
    for bound, cur, ref, st, fp, nodeid, key in pending:
        v = check_relative(bound, cur, ref, confidence=level, fingerprint=fp,
                           allow_env_mismatch=allow_env_mismatch, stats=st)
        v.test = nodeid
        v.measurement = key
        verdicts.append(v)
    return verdicts
