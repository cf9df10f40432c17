"""Each bound checked against one measurement (and its baseline) by a pure function.

``check(bound, measurement, baseline)`` returns a ``Verdict`` (``gate.verdict``): data, never
prose; ``report.render`` words it.

The relative decision, per metric, on r = current / baseline and the worsening w (r - 1 for
metrics where higher is worse, 1 - r where lower is worse; positive is worse):

* regression (fail) when w > tolerance **and** the change is significant: the lower end of the
  two-sided ``confidence`` interval of log r (in the bad direction) is above 0, a one-sided test at
  level (1 - confidence) / 2, so run-to-run wobble never fails a gate on its own, and a tiny but
  significant change inside the tolerance never does either;
* inconclusive when that interval contains 0 but reaches past the tolerance;
* within the tolerance (or an improvement, when significant in the good direction) otherwise.

Metrics with no error estimate (memory, power, latency_max, ...) are decided on the values
(``basis="values"``). Absolute bounds are decided on the measured value; the verdict carries its
interval.
"""

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from ..metrics import METRICS
from .bounds import Bound
from .stats import MetricStats, metric_stats, t_ppf
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


def _worse_fraction(log_bad: float, direction: str) -> float:
    """A change in log space, bad direction, as the fraction by which the metric got worse."""
    return math.expm1(log_bad) if direction == "higher" else -math.expm1(-log_bad)


def check_relative(bound: Bound, measurement: Any, baseline: Optional[BaselineRef],
                   confidence: float = 0.99, missing_baseline: str = "skip",
                   fingerprint: Optional[Dict[str, Any]] = None, allow_env_mismatch: bool = False,
                   device: str = "", stats: Optional[MetricStats] = None,
                   compared_keys: Sequence[str] = COMPARED_KEYS) -> Verdict:
    metric = bound.metric
    tol = float(bound.tolerance or 0.0)
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
    if fingerprint is not None:
        diffs = env_differences(fingerprint, baseline.fingerprint, compared_keys)
        if diffs and not allow_env_mismatch:
            return _verdict(bound, measurement, "env_mismatch", missing_baseline, env_diffs=diffs, **numbers)
        if diffs:
            numbers.update(env_diffs=diffs, env_ignored=True)
    if base.value <= 0 or stats.value <= 0:
        return _verdict(bound, measurement, "cannot_check",
                        detail=f"cannot compare non-positive values ({stats.value} now, {base.value} "
                               f"in the baseline)", **numbers)
    direction = METRICS[metric].worse
    ratio = stats.value / base.value
    log_r = math.log(ratio)
    bad_log = log_r if direction == "higher" else -log_r
    worse = _worse_fraction(bad_log, direction)
    # The tolerance in log space, in the bad direction.
    tol_log = math.log1p(tol) if direction == "higher" else (-math.log1p(-tol) if tol < 1 else math.inf)
    numbers.update(change=ratio - 1.0, worse=worse)
    if stats.se_log is None or base.se_log is None:
        reason = "regression" if worse > tol else "within_tolerance"
        return _verdict(bound, measurement, reason, basis="values", **numbers)
    se = math.sqrt(stats.se_log ** 2 + base.se_log ** 2)
    df = _welch_df(stats, base)
    k = t_ppf((1 + confidence) / 2, df) * se
    lo, hi = bad_log - k, bad_log + k
    z = log_r / se if se > 0 else math.inf
    numbers.update(p_value=math.erfc(abs(z) / math.sqrt(2.0)), basis="statistics",
                   worse_ci=(_worse_fraction(lo, direction), _worse_fraction(hi, direction)))
    if worse > tol and lo > 0:
        reason = "regression"
    elif lo <= 0 and hi > tol_log:
        reason = "inconclusive"
    elif hi < 0:
        reason = "improvement"
    else:
        reason = "within_tolerance"
    return _verdict(bound, measurement, reason, **numbers)


def _welch_df(a: MetricStats, b: MetricStats) -> Optional[float]:
    if a.df is None or b.df is None or a.se_log is None or b.se_log is None:
        return None
    va, vb = a.se_log ** 2, b.se_log ** 2
    den = (va ** 2 / a.df if a.df > 0 else 0) + (vb ** 2 / b.df if b.df > 0 else 0)
    return (va + vb) ** 2 / den if den > 0 else None


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

