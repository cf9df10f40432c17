"""Two runs compared metric by metric with the gate's own rule (``pytest-jetson compare``).

A run is the list of its tests' results (``gate.session.TestResult``, as ``report.jsonreport.results``
reads a JSON report): the relative bounds a test declares give their tolerances, other metrics use
``tolerance``. The stages both runs of a measurement have are compared too, on the metrics a stage
has (``gate.bounds.stage_metrics``) among those compared, and on those the test bounds per stage.
"""

from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

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


def _stats(m: Any, names: Sequence[str], confidence: float) -> Dict[str, MetricStats]:
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


def _parts(old: Any, cur: Measurement, wanted: Sequence[str],
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


#: one comparison to decide: (bound, new part, old part's reference, new part's statistics, the new
#: test's fingerprint, its node id, the measurement's key)
Pending = Tuple[Bound, Measurement, BaselineRef, MetricStats, Optional[dict], str, str]


def _comparable(result: TestResult, old_m: Mapping[str, Any], metrics: Optional[Sequence[str]]
                ) -> Iterator[Tuple[str, Optional[str], Any, Measurement, List[str], Dict]]:
    """(key, stage, old part, new part, metrics, tolerances) of each part of ``result`` the old
    run has too."""
    tolerances = _tolerances(result)
    wanted = list(metrics) if metrics else sorted(set(defaults("compare")) | {n for s, n in tolerances if s is None})
    for key, cur in result.keyed():
        if key in old_m:
            for stage, before, now, names in _parts(old_m[key], cur, wanted, tolerances):
                yield key, stage, before, now, names, tolerances


def pending_of(result: TestResult, old_m: Mapping[str, Any], old_fp: Mapping[str, Dict], tolerance: float,
               confidence: float, metrics: Optional[Sequence[str]] = None, recorded: str = "") -> List[Pending]:
    """The comparisons of ``result``'s measurements (and their stages) with ``old_m``'s of the same
    key (an old measurement, or what of it a comparison reads: its ``ref`` and ``stages``);
    ``old_fp``: each old key's fingerprint."""
    pending: List[Pending] = []
    for key, stage, before, now, names, tolerances in _comparable(result, old_m, metrics):
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
    return pending


def count_of(result: TestResult, old_m: Mapping[str, Any], confidence: float,
             metrics: Optional[Sequence[str]] = None) -> int:
    """How many comparisons ``pending_of`` gives, without their statistics where a part names the
    metrics it kept (``kept_metrics``: a summarised report's measurement)."""
    n = 0
    for _, _, before, now, names, _ in _comparable(result, old_m, metrics):
        base = _present(before, names, confidence)
        n += sum(1 for name in _present(now, names, confidence) if name in base)
    return n


def _present(m: Any, names: Sequence[str], confidence: float) -> List[str]:
    """The ``names`` ``_stats`` gives statistics of."""
    kept = getattr(m, "kept_metrics", None)  # the names its ``ref`` holds
    if kept is not None:
        return [n for n in names if n in kept]
    return list(_stats(m, names, confidence))


def family_level(comparisons: int, confidence: float) -> float:
    """The level each of ``comparisons`` is decided at: one family, so that the chance that two
    runs of unchanged code differ anywhere is 1 - confidence."""
    return confidence_for(comparisons, family_alpha=1.0 - confidence, inconclusive_fails=False)


def decide(p: Pending, level: float, allow_env_mismatch: bool = False) -> Verdict:
    bound, cur, ref, st, fp, nodeid, key = p
    v = check_relative(bound, cur, ref, confidence=level, fingerprint=fp,
                       allow_env_mismatch=allow_env_mismatch, stats=st)
    v.test = nodeid
    v.measurement = key
    v.stage = bound.stage
    return v


def compare_reports(old: Sequence[TestResult], new: Sequence[TestResult], tolerance: float = 0.05,
                    confidence: float = 0.99, metrics: Optional[Sequence[str]] = None,
                    allow_env_mismatch: bool = False, recorded: str = "") -> List[Verdict]:
    """``new``'s measurements (and their stages) against ``old``'s of the same key (``recorded``:
    when ``old`` ran)."""
    old_m = measurements_by_key(old)
    old_fp = {key: r.fingerprint for r in old for key in r.keys}
    pending = [p for result in new
               for p in pending_of(result, old_m, old_fp, tolerance, confidence, metrics, recorded)]
    level = family_level(len(pending), confidence)
    return [decide(p, level, allow_env_mismatch) for p in pending]
