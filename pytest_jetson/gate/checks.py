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

**What a baseline is compared on** (``FINGERPRINT``, one table): the *environment* (where it ran:
board, power mode, clocks, JetPack, TensorRT, simulated or real, backend, and the fields plugins
and the host add) must match, or the bound is not compared (``env_mismatch``, unless
``--jetson-allow-env-mismatch``). The *workload* (what ran: model, precision, batch, input
resolution, accelerator, processes, the sha256 of the model file measured) may differ: a changed
workload under one test id is a change to gate, so the bound is compared and decided as usual and
the verdict names what changed (``workload_diffs``: "precision fp16 -> fp32: throughput 53%
worse"). A workload field that one side does not record (a baseline written before the field
existed) is unknown, not a change.

Bounds limited to other devices or backends, and metrics this backend or device cannot measure,
are skipped with the reason (``gate.scope``).
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..metrics import METRICS
from .bounds import Bound
from .fields import COMPARED_KEYS, ENVIRONMENT_KEYS, FINGERPRINT, WORKLOAD_KEYS  # noqa: F401
from .scope import not_applicable, unmeasurable
from .sequential import Step, decide_once
from .stats import MetricStats, metric_stats
from .verdict import Verdict, outcome_of

#: Fields a side may not record (a baseline written before the field was read, a board without
#: nvfancontrol): unknown there, not a difference.
UNKNOWN_WHEN_ABSENT = frozenset(WORKLOAD_KEYS) | {"fan_profile"}


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
    #: the engine's structure the entry keeps (``gate.entries``), or None
    structure: Optional[Dict[str, Any]] = None

    def environment(self) -> Dict[str, Any]:
        """The fields a reader needs to recognise the baseline (device, mode, precision, batch)."""
        fp = self.fingerprint
        return {k: fp.get(k) for k in ("device", "power_mode", "precision", "batch", "simulated")
                if fp.get(k) is not None}


def env_differences(current: Dict[str, Any], baseline: Dict[str, Any],
                    keys: Sequence[str] = COMPARED_KEYS) -> List[List[Any]]:
    """The compared fingerprint fields that differ: [field, baseline value, current value]. A
    workload field (or the fan profile) that one side does not record is unknown there, not a
    difference."""
    out = []
    for key in keys:
        if key not in baseline and key not in current:
            continue
        if key in UNKNOWN_WHEN_ABSENT and (baseline.get(key) is None or current.get(key) is None):
            continue
        a, b = baseline.get(key), current.get(key)
        if a != b:
            out.append([key, a, b])
    return out


def environment_keys(keys: Sequence[str]) -> Tuple[str, ...]:
    """The environment part of ``keys`` (those that keep a baseline from being compared)."""
    return tuple(k for k in keys if k not in WORKLOAD_KEYS)


def workload_differences(current: Dict[str, Any], baseline: Dict[str, Any]) -> List[List[Any]]:
    """What runs that changed since the baseline: [field, baseline value, current value]."""
    return env_differences(current, baseline, WORKLOAD_KEYS)


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


def unmeasured(bound: Bound, measurement: Any, fingerprint: Optional[Dict[str, Any]] = None) -> Verdict:
    """The verdict of a bound whose metric has no value: skipped when this backend or device
    cannot measure it (``gate.scope``), an error when it should have been measured."""
    why = unmeasurable(bound.metric, measurement, fingerprint)
    if why is not None:
        return _verdict(bound, measurement, "not_measured", detail=why)
    return cannot_check(bound, measurement, missing_reason(measurement, bound.metric))


def limited_away(bound: Bound, measurement: Any, fingerprint: Optional[Dict[str, Any]]) -> Optional[Verdict]:
    """The verdict of a bound limited to other devices or backends (None: it applies here)."""
    why = not_applicable(bound, fingerprint)
    return None if why is None else _verdict(bound, measurement, "not_applicable", detail=why)


def check_absolute(bound: Bound, measurement: Any, confidence: float = 0.99,
                   stats: Optional[MetricStats] = None, fingerprint: Optional[Dict[str, Any]] = None) -> Verdict:
    if stats is None:
        stats = metric_stats(measurement, bound.metric, confidence)
    if stats is None:
        return unmeasured(bound, measurement, fingerprint)
    ok = bound.holds(stats.value)
    return _verdict(bound, measurement, "bound_met" if ok else "bound_violated", value=stats.value,
                    ci=stats.interval(confidence), confidence=confidence)


def check_relative(bound: Bound, measurement: Any, baseline: Optional[BaselineRef],
                   confidence: float = 0.99, missing_baseline: str = "skip",
                   fingerprint: Optional[Dict[str, Any]] = None, allow_env_mismatch: bool = False,
                   device: str = "", stats: Optional[MetricStats] = None,
                   compared_keys: Sequence[str] = COMPARED_KEYS, step: Optional[Step] = None) -> Verdict:
    metric = bound.metric
    away = limited_away(bound, measurement, fingerprint)
    if away is not None:
        return away
    if stats is None:
        stats = metric_stats(measurement, metric, confidence)
    if stats is None:
        return unmeasured(bound, measurement, fingerprint)
    numbers: Dict[str, Any] = dict(value=stats.value, ci=stats.interval(confidence), confidence=confidence)
    base = baseline.metrics.get(metric) if baseline is not None else None
    if baseline is not None:
        numbers.update(baseline_file=baseline.file, baseline_recorded=baseline.recorded,
                       baseline_env=baseline.environment())
    if baseline is None or base is None:
        detail = f"no baseline for {device or 'this device'}" if baseline is None else f"the baseline has no {metric}"
        return _verdict(bound, measurement, "no_baseline", missing_baseline, detail=detail, **numbers)
    numbers["baseline"] = base.value
    if fingerprint is not None:
        numbers["workload_diffs"] = workload_differences(fingerprint, baseline.fingerprint)
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
    diffs = env_differences(fingerprint, baseline.fingerprint, environment_keys(compared_keys))
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
                   p_value=step.p_value, basis=basis, min_tolerance=step.min_tolerance)
    if not numbers.get("workload_diffs"):
        # what the noise diagnosis pools; across a workload change the difference is the change
        numbers.update(log_worse=step.d, within_se=step.within_se)
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
    away = limited_away(bound, measurement, fingerprint)
    if away is not None:
        return away
    return check_absolute(bound, measurement, confidence=confidence, fingerprint=fingerprint)

