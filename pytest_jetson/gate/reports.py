"""Two runs compared metric by metric with the gate's own rule (``pytest-jetson compare``).

A run is the list of its tests' results (``gate.session.TestResult``, as ``report.jsonreport.results``
reads a JSON report): the relative bounds a test declares give their tolerances, other metrics use
``tolerance``. The stages both runs of a measurement have are compared too, on the metrics a stage
has (``gate.bounds.stage_metrics``) among those compared, and on those the test bounds per stage.
"""

from typing import Dict, List, Optional, Sequence, Tuple

from ..metrics import defaults, format_percent
from ..run.measurement import Measurement
from .bounds import Bound, stage_metrics
from .checks import BaselineRef, Verdict, check_relative
from .family import confidence_for
from .session import TestResult
from .stats import MetricStats, metric_stats


def measurements_by_key(run: Sequence[TestResult]) -> Dict[str, Measurement]:
    """Every measurement of a run by its baseline key."""
    return {key: m for result in run for key, m in result.keyed()}


def _tolerances(result: TestResult) -> Dict[Tuple[Optional[str], str], Optional[float]]:
    """(stage, metric) -> the tolerance of the test's relative bound on it (stage None: the whole)."""
    return {(b.get("stage"), b["metric"]): b.get("tolerance") for b in result.bounds
            if b.get("kind") == "relative"}


def _stats(m: Measurement, names: Sequence[str], confidence: float) -> Dict[str, MetricStats]:
    """Each metric's statistics: computed from the samples, or those a summarised report kept
    (``report.jsonreport``: a measurement's ``ref``)."""
    kept = getattr(getattr(m, "ref", None), "metrics", None)
    out = {}
    for name in names:
        st = kept.get(name) if kept is not None else metric_stats(m, name, confidence)
        if st is not None and kept is not None and st.se_log is not None and st.df is not None:
            st.ci, st.confidence = st.interval(confidence), confidence
        if st is not None:
            out[name] = st
    return out


Part = Tuple[Optional[str], Measurement, Measurement, List[str]]


def _parts(old: Measurement, cur: Measurement, wanted: Sequence[str],
           tolerances: Dict[Tuple[Optional[str], str], Optional[float]]) -> List[Part]:
    """(stage, old part, new part, metrics) to compare: the whole, then each stage both have, with
    the wanted metrics a stage has and those the test bounds on it."""
    out: List[Part] = [(None, old, cur, list(wanted))]
    allowed = stage_metrics()
    for stage in cur.stages:
        if stage in old.stages:
            names = [n for n in wanted if n in allowed]
            names += sorted(n for s, n in tolerances if s == stage and n not in names)
            out.append((stage, old.stages[stage], cur.stages[stage], names))
    return out


def compare_reports(old: Sequence[TestResult], new: Sequence[TestResult], tolerance: float = 0.05,
                    confidence: float = 0.99, metrics: Optional[Sequence[str]] = None,
                    allow_env_mismatch: bool = False, recorded: str = "") -> List[Verdict]:
    """``new``'s measurements (and their stages) against ``old``'s of the same key (``recorded``:
    when ``old`` ran)."""
    old_m = measurements_by_key(old)
    old_fp = {key: r.fingerprint for r in old for key in r.keys}
    default = set(defaults("compare"))
    pending: List[Tuple[Bound, Measurement, BaselineRef, object, Optional[dict], str, str]] = []
    for result in new:
        tolerances = _tolerances(result)
        wanted = list(metrics) if metrics else sorted(default | {n for s, n in tolerances if s is None})
        for key, cur in result.keyed():
            if key not in old_m:
                continue
            for stage, before, now, names in _parts(old_m[key], cur, wanted, tolerances):
                base_stats = _stats(before, names, confidence)
                ref = BaselineRef(metrics=base_stats, fingerprint=old_fp.get(key, {}), recorded=recorded,
                                  file="OLD", key=key)
                for name, st in _stats(now, names, confidence).items():
                    if name not in base_stats:
                        continue
                    tol = tolerances.get((stage, name))
                    tol = tolerance if tol is None else float(tol)
                    bound = Bound(metric=name, text=format_percent(tol), kind="relative", tolerance=tol,
                                  unit="%", stage=stage)
                    pending.append((bound, now, ref, st, result.fingerprint or None, result.nodeid, key))
    # one family: the chance that two runs of unchanged code differ anywhere is 1 - confidence
    level = confidence_for(len(pending), family_alpha=1.0 - confidence, inconclusive_fails=False)
    verdicts: List[Verdict] = []
    for bound, cur, ref, st, fp, nodeid, key in pending:
        v = check_relative(bound, cur, ref, confidence=level, fingerprint=fp,
                           allow_env_mismatch=allow_env_mismatch, stats=st)
        v.test = nodeid
        v.measurement = key
        v.stage = bound.stage
        verdicts.append(v)
    return verdicts
