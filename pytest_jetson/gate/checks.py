"""Each bound checked against one measurement (and its baseline) by a pure function.

``check(bound, measurement, baseline)`` returns a ``Verdict`` (``gate.verdict``): data, never
prose; ``report.render`` words it.

The relative decision is ``gate.sequential``'s, on the log worsening d of current / baseline
(positive is worse) with an error that adds the run-to-run spread (``metrics.METRICS[m].run_to_run``
or the baseline's pooled spread) to both runs' within-run errors:

* regression (fail) when the worsening is past the tolerance **and** significant at one-sided level
  (1 - confidence) / 2, so run-to-run wobble never fails a gate on its own, and a tiny but
  significant change inside the tolerance never does either;
* within the tolerance (or an improvement, when significant in the good direction) when a
  worsening of twice the tolerance is excluded at the same level;
* inconclusive otherwise: the noise cannot tell the tolerance from twice it (``min_tolerance``
  says which tolerance it could decide).

The recorder may decide it look by look while it extends a measurement (``Sequential``) and pass
the last ``step``; otherwise it is decided once here. Absolute bounds are decided on the measured
value; the verdict carries its interval.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from ..metrics import METRICS
from .bounds import Bound
from .sequential import Step, decide_once
from .stats import MetricStats, metric_stats
from .verdict import Verdict, outcome_of

#: Fingerprint keys that must match for a baseline to be compared (the plugin version does not).
COMPARED_KEYS = ("device", "power_mode", "jetson_clocks", "jetpack", "tensorrt", "simulated",
                 "backend", "precision", "batch", "processes", "accelerator")


@dataclass
class BaselineRef:
    """What a verdict needs to know about a stored baseline entry."""

    metrics: Dict[str, MetricStats]
    fingerprint: Dict[str, Any] = field(default_factory=dict)
    recorded: str = ""
    file: str = ""
    key: str = ""
    #: the entry's stages (``perf.stage``), each with the metrics of its latencies
    stages: Dict[str, "BaselineRef"] = field(default_factory=dict)

    def environment(self) -> Dict[str, Any]:
        """The fields a reader needs to recognise the baseline (device, mode, precision, batch)."""
        fp = self.fingerprint
        return {k: fp.get(k) for k in ("device", "power_mode", "precision", "batch", "simulated")
                if fp.get(k) is not None}


def env_differences(current: Dict[str, Any], baseline: Dict[str, Any],
                    keys: Sequence[str] = COMPARED_KEYS) -> List[List[Any]]:
    """The compared fingerprint fields that differ: [field, baseline value, current value]."""
    out = []
    for key in keys:
        if key not in baseline and key not in current:
            continue
        a, b = baseline.get(key), current.get(key)
        if a != b:
            out.append([key, a, b])
    return out


def missing_reason(measurement: Any, metric: str) -> str:
    """Why a measurement has no value for ``metric``: the metric's own hint, or, for what telemetry
    measures, which sources were tried and why each was unavailable."""
    row = METRICS[metric]
    tele = getattr(measurement, "telemetry", None)
    if row.source != "telemetry" or tele is None:
        if row.source == "telemetry":
            return (f"no {metric} reading: no telemetry ran for this measurement; telemetry sources "
                    "tried: none (enable one with --jetson-telemetry, e.g. jtop, tegrastats, nvml)")
        return row.hint
    explain = getattr(tele, "explain_missing", None)
    if callable(explain):
        return str(explain(metric))
    tried = getattr(tele, "tried", None) or []
    lines = [f"no {metric} reading from telemetry source {getattr(tele, 'source', '?')!r}"]
    lines += [f"  tried {name}: {why}" for name, why in tried]
    return "\n".join(lines)


def _verdict(bound: Bound, measurement: Any, reason: str, missing_baseline: str = "skip",
             **numbers: Any) -> Verdict:
    return Verdict(metric=bound.metric, outcome=outcome_of(reason, missing_baseline), reason=reason,
                   kind=bound.kind, bound=bound.text, comparator=bound.comparator,
                   threshold=bound.value, tolerance=bound.tolerance,
                   measurement=getattr(measurement, "name", "") or "", **numbers)


def cannot_check(bound: Bound, measurement: Any, detail: str) -> Verdict:
    return _verdict(bound, measurement, "cannot_check", detail=detail)


def check_absolute(bound: Bound, measurement: Any, confidence: float = 0.99,
                   stats: Optional[MetricStats] = None) -> Verdict:
    if stats is None:
        stats = metric_stats(measurement, bound.metric, confidence)
    if stats is None:
        return cannot_check(bound, measurement, missing_reason(measurement, bound.metric))
    ok = bound.holds(stats.value)
    return _verdict(bound, measurement, "bound_met" if ok else "bound_violated", value=stats.value,
                    ci=stats.interval(confidence), confidence=confidence)


def check_relative(bound: Bound, measurement: Any, baseline: Optional[BaselineRef],
                   confidence: float = 0.99, missing_baseline: str = "skip",
                   fingerprint: Optional[Dict[str, Any]] = None, allow_env_mismatch: bool = False,
                   device: str = "", stats: Optional[MetricStats] = None,
                   compared_keys: Sequence[str] = COMPARED_KEYS, step: Optional[Step] = None) -> Verdict:
    metric = bound.metric
    if stats is None:
        stats = metric_stats(measurement, metric, confidence)
    if stats is None:
        return cannot_check(bound, measurement, missing_reason(measurement, metric))
    numbers: Dict[str, Any] = dict(value=stats.value, ci=stats.interval(confidence), confidence=confidence)
    base = baseline.metrics.get(metric) if baseline is not None else None
    if baseline is not None:
        numbers.update(baseline_file=baseline.file, baseline_recorded=baseline.recorded,
                       baseline_env=baseline.environment())
    if baseline is None or base is None:
        detail = f"no baseline for {device or 'this device'}" if baseline is None else f"the baseline has no {metric}"
        return _verdict(bound, measurement, "no_baseline", missing_baseline, detail=detail, **numbers)
    numbers["baseline"] = base.value
    diffs = _env_diffs(fingerprint, baseline, compared_keys, allow_env_mismatch, numbers)
    if diffs:
        return _verdict(bound, measurement, "env_mismatch", missing_baseline, env_diffs=diffs, **numbers)
    if base.value <= 0 or stats.value <= 0:
        return _verdict(bound, measurement, "cannot_check",
                        detail=f"cannot compare non-positive values ({stats.value} now, {base.value} "
                               f"in the baseline)", **numbers)
    return _decided(bound, measurement, stats, base, confidence, step, numbers)


def _env_diffs(fingerprint: Optional[Dict[str, Any]], baseline: BaselineRef, compared_keys: Sequence[str],
               allow_env_mismatch: bool, numbers: Dict[str, Any]) -> List[List[Any]]:
    """The fingerprint fields that keep the baseline from being compared (none when they are
    allowed to differ: then ``numbers`` records them as ignored)."""
    if fingerprint is None:
        return []
    diffs = env_differences(fingerprint, baseline.fingerprint, compared_keys)
    if diffs and allow_env_mismatch:
        numbers.update(env_diffs=diffs, env_ignored=True)
        return []
    return diffs


def _decided(bound: Bound, measurement: Any, stats: MetricStats, base: MetricStats, confidence: float,
             step: Optional[Step], numbers: Dict[str, Any]) -> Verdict:
    # The decision: gate.sequential's rule at one (final) look unless the recorder already decided
    # it look by look; its error includes the spread between runs that no within-run estimate sees.
    if step is None:
        step = decide_once(bound.metric, stats, base, float(bound.tolerance or 0.0), alpha=(1 - confidence) / 2)
    basis = "spread" if stats.se_log is None and base.se_log is None else "statistics"
    numbers.update(change=stats.value / base.value - 1.0, worse=step.worse, worse_ci=step.worse_ci,
                   p_value=step.p_value, basis=basis, min_tolerance=step.min_tolerance,
                   log_worse=step.d, within_se=step.within_se)
    if step.look > 1:
        numbers["looks"] = step.look
    reason = step.decision if step.decision != "continue" else "inconclusive"
    return _verdict(bound, measurement, reason, **numbers)


def check(bound: Bound, measurement: Any, baseline: Optional[BaselineRef] = None,
          confidence: float = 0.99, missing_baseline: str = "skip",
          fingerprint: Optional[Dict[str, Any]] = None, allow_env_mismatch: bool = False,
          device: str = "", compared_keys: Sequence[str] = COMPARED_KEYS) -> Verdict:
    """The verdict of one bound on one measurement: a pure function of its arguments."""
    if bound.relative:
        return check_relative(bound, measurement, baseline, confidence=confidence,
                              missing_baseline=missing_baseline, fingerprint=fingerprint,
                              allow_env_mismatch=allow_env_mismatch, device=device,
                              compared_keys=compared_keys)
    return check_absolute(bound, measurement, confidence=confidence)

