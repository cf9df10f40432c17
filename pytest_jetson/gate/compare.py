"""Verdicts: each bound checked against one measurement (and its baseline) by a pure function.

``check(bound, measurement, baseline)`` returns a ``Verdict`` with ``outcome`` one of

* ``pass``, ``fail``;
* ``skip``: a relative bound with no (comparable) baseline;
* ``inconclusive``: a relative bound the data cannot decide (the confidence interval of the change
  reaches both "no change" and "past the tolerance": measure longer);
* ``error``: the bound names a metric nothing measured (power without telemetry, ...).

The relative decision, per metric, on r = current / baseline and the worsening w (r - 1 for
metrics where higher is worse, 1 - r where lower is worse; positive is worse):

* fail when w > tolerance **and** the change is significant: the lower end of the two-sided
  ``confidence`` interval of log r (in the bad direction) is above 0 — a one-sided test at level
  (1 - confidence) / 2 — so run-to-run wobble never fails a gate on its own, and a tiny but
  significant change inside the tolerance never does either;
* inconclusive when that interval contains 0 but reaches past the tolerance;
* pass otherwise.

Metrics with no error estimate (memory, power, latency_max, ...) are decided on the values and the
message says so. Absolute bounds are decided on the measured value; the message shows its interval.
"""

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..metrics import METRICS, format_percent, format_value
from .bounds import Bound
from .sequential import decide_once
from .stats import MetricStats, metric_stats, t_ppf

#: Fingerprint keys that must match for a baseline to be compared (the plugin version does not).
COMPARED_KEYS = ("device", "power_mode", "jetson_clocks", "jetpack", "tensorrt", "simulated",
                 "backend", "precision", "batch", "processes", "accelerator")

RECORD_HINT = "record with --jetson-update-baselines"


@dataclass
class BaselineRef:
    """What a verdict needs to know about a stored baseline entry."""

    metrics: Dict[str, MetricStats]
    fingerprint: Dict[str, Any] = field(default_factory=dict)
    recorded: str = ""
    file: str = ""
    key: str = ""

    def describe(self) -> str:
        fp = self.fingerprint
        bits = [str(fp.get("device") or "?")]
        if fp.get("power_mode"):
            bits.append(str(fp["power_mode"]))
        if fp.get("precision"):
            bits.append(str(fp["precision"]))
        if fp.get("batch") is not None:
            bits.append(f"batch {fp['batch']}")
        bits.append("simulated" if fp.get("simulated") else "real")
        when = f" recorded {self.recorded[:10]}" if self.recorded else ""
        return f"baseline: {self.file}{when} ({', '.join(bits)})"


@dataclass
class Verdict:
    metric: str
    outcome: str
    bound: str
    kind: str
    value: Optional[float] = None
    ci: Optional[Tuple[float, float]] = None
    baseline: Optional[float] = None
    change: Optional[float] = None
    p_value: Optional[float] = None
    message: str = ""
    measurement: str = ""
    test: str = ""

    @property
    def failed(self) -> bool:
        return self.outcome in ("fail", "error")

    def to_dict(self) -> Dict[str, Any]:
        return {
            "test": self.test, "measurement": self.measurement, "metric": self.metric,
            "outcome": self.outcome, "bound": self.bound, "kind": self.kind, "value": self.value,
            "ci": None if self.ci is None else [self.ci[0], self.ci[1]],
            "baseline": self.baseline, "change": self.change, "p_value": self.p_value,
            "message": self.message,
        }

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Verdict":
        ci = d.get("ci")
        return cls(
            metric=d["metric"], outcome=d["outcome"], bound=d.get("bound", ""),
            kind=d.get("kind", ""), value=d.get("value"),
            ci=None if ci is None else (ci[0], ci[1]), baseline=d.get("baseline"),
            change=d.get("change"), p_value=d.get("p_value"), message=d.get("message", ""),
            measurement=d.get("measurement", ""), test=d.get("test", ""),
        )


def env_differences(current: Dict[str, Any], baseline: Dict[str, Any]) -> List[str]:
    """The fingerprint fields that differ, as 'power_mode: 15W (baseline) vs 7W (now)'."""
    out = []
    for key in COMPARED_KEYS:
        a, b = baseline.get(key), current.get(key)
        if key not in baseline and key not in current:
            continue
        if a != b:
            out.append(f"{key}: {_fmt_env(key, a)} (baseline) vs {_fmt_env(key, b)} (now)")
    return out


def _fmt_env(key: str, v: Any) -> str:
    if key == "simulated" and isinstance(v, bool):
        return "simulated" if v else "real"
    if isinstance(v, bool):
        return "on" if v else "off"
    if v is None:
        return "-"
    return str(v)


def _fmt_p(p: Optional[float]) -> str:
    if p is None:
        return "-"
    if p < 1e-300:
        return "<1e-300"
    if p < 1e-4:
        return f"{p:.0e}"
    return f"{p:.2g}"


def _ci_text(metric: str, ci: Optional[Tuple[float, float]], confidence: float) -> str:
    if ci is None:
        return ""
    return f" ({confidence * 100:.3g}% CI {format_value(metric, ci[0])}..{format_value(metric, ci[1])})"


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


def check_absolute(bound: Bound, measurement: Any, confidence: float = 0.99,
                   stats: Optional[MetricStats] = None) -> Verdict:
    metric = bound.metric
    if stats is None:
        stats = metric_stats(measurement, metric, confidence)
    v = Verdict(metric=metric, outcome="pass", bound=bound.text, kind="absolute",
                measurement=getattr(measurement, "name", ""))
    if stats is None:
        v.outcome = "error"
        v.message = f"perf bound {metric} {bound.text!r} cannot be checked: {missing_reason(measurement, metric)}"
        return v
    v.value = stats.value
    v.ci = stats.interval(confidence)
    ok = bound.holds(stats.value)
    v.outcome = "pass" if ok else "fail"
    verb = "meets" if ok else "violates"
    v.message = (
        f"{metric} {format_value(metric, stats.value)}{_ci_text(metric, v.ci, confidence)} {verb} "
        f"the bound {bound.comparator} {format_value(metric, bound.value)} ({bound.text!r})"
    )
    if not ok:
        v.message = "perf bound failed: " + v.message
    return v


def check_relative(bound: Bound, measurement: Any, baseline: Optional[BaselineRef],
                   confidence: float = 0.99, missing_baseline: str = "skip",
                   fingerprint: Optional[Dict[str, Any]] = None, allow_env_mismatch: bool = False,
                   device: str = "", stats: Optional[MetricStats] = None) -> Verdict:
    metric = bound.metric
    tol = float(bound.tolerance or 0.0)
    v = Verdict(metric=metric, outcome="pass", bound=bound.text, kind="relative",
                measurement=getattr(measurement, "name", ""))
    if stats is None:
        stats = metric_stats(measurement, metric, confidence)
    if stats is None:
        v.outcome = "error"
        v.message = f"perf bound {metric} {bound.text!r} cannot be checked: {missing_reason(measurement, metric)}"
        return v
    v.value = stats.value
    v.ci = stats.interval(confidence)
    base = baseline.metrics.get(metric) if baseline is not None else None
    if baseline is None or base is None:
        what = "no baseline" if baseline is None else f"the baseline has no {metric}"
        v.outcome = "fail" if missing_baseline == "fail" else "skip"
        v.message = f"{metric} {bound.text}: {what} for {device or 'this device'}; {RECORD_HINT}"
        if baseline is not None:
            v.message += f"\n  {baseline.describe()}"
        return v
    note = ""
    if fingerprint is not None:
        diffs = env_differences(fingerprint, baseline.fingerprint)
        if diffs and not allow_env_mismatch:
            v.outcome = "fail" if missing_baseline == "fail" else "skip"
            v.baseline = base.value
            v.message = (
                f"{metric} {bound.text}: baseline not compared, recorded under another environment: "
                f"{'; '.join(diffs)}. Re-record with --jetson-update-baselines, or compare anyway with "
                f"--jetson-allow-env-mismatch\n  {baseline.describe()}"
            )
            return v
        if diffs:
            note = f"\n  compared despite environment differences (--jetson-allow-env-mismatch): {'; '.join(diffs)}"
    v.baseline = base.value
    if base.value <= 0 or stats.value <= 0:
        v.outcome = "error"
        v.message = f"{metric}: cannot compare non-positive values ({stats.value} now, {base.value} baseline)"
        return v
    direction = METRICS[metric].worse
    ratio = stats.value / base.value
    v.change = ratio - 1.0
    log_r = math.log(ratio)
    bad_log = log_r if direction == "higher" else -log_r

    word = _change_words(metric, direction, v.change, base.value)
    head = f"{metric} {format_value(metric, stats.value)}{_ci_text(metric, v.ci, confidence)} {word}"
    head += f" tolerance {format_percent(tol)})"
    tail = f"\n  {baseline.describe()}{note}"
    # The decision: gate.sequential's rule at one (final) look, its error including the spread
    # between runs that no within-run estimate sees (the baseline's, else the metric's floor).
    step = decide_once(metric, stats, base, tol, alpha=(1 - confidence) / 2)
    k = t_ppf((1 + confidence) / 2, step.df) * step.se
    lo, hi = bad_log - k, bad_log + k
    v.p_value = step.p_value
    if stats.se_log is None and base.se_log is None:
        basis = "no within-run error to test; decided with the run-to-run spread alone"
    else:
        basis = ""
    sig = f"p{'' if _fmt_p(v.p_value).startswith('<') else '='}{_fmt_p(v.p_value)}, {confidence * 100:.3g}% CI of the change {_worse_range(lo, hi, direction)}"
    if basis:
        sig = f"{basis}; {sig}"
    if step.decision == "regression":
        v.outcome = "fail"
        v.message = f"perf bound failed: {head}; significant ({sig}){tail}"
    elif step.decision == "inconclusive":
        v.outcome = "inconclusive"
        v.message = (
            f"{head}; inconclusive: too noisy to tell a change "
            f"within the tolerance from a regression ({sig}); this noise decides tolerances from "
            f"{format_percent(step.min_tolerance)}: measure longer (perf.measure(duration=...)) "
            f"or fix the noise{tail}"
        )
    else:
        v.outcome = "pass"
        v.message = f"{head}; within the tolerance ({sig}){tail}"
    return v


def _worse_range(lo: float, hi: float, direction: str) -> str:
    """The interval of the worsening (log space, bad direction) as signed percentages."""
    def pct(x: float) -> str:
        w = math.expm1(x) if direction == "higher" else -math.expm1(-x)
        return f"{w * 100:+.1f}%"
    return f"{pct(lo)}..{pct(hi)} (positive is worse)"


def _change_words(metric: str, direction: str, change: float, base: float) -> str:
    rel = abs(change) * 100
    where = "above" if change > 0 else "below"
    if abs(change) < 5e-4:
        return f"equals the baseline {format_value(metric, base)} (no change;"
    better = (change < 0) == (direction == "higher")
    mood = "better" if better else "worse"
    return f"is {where} the baseline {format_value(metric, base)} by {rel:.1f}% ({mood};"


def check(bound: Bound, measurement: Any, baseline: Optional[BaselineRef] = None,
          confidence: float = 0.99, missing_baseline: str = "skip",
          fingerprint: Optional[Dict[str, Any]] = None, allow_env_mismatch: bool = False,
          device: str = "") -> Verdict:
    """The verdict of one bound on one measurement: a pure function of its arguments."""
    if bound.relative:
        return check_relative(bound, measurement, baseline, confidence=confidence,
                              missing_baseline=missing_baseline, fingerprint=fingerprint,
                              allow_env_mismatch=allow_env_mismatch, device=device)
    return check_absolute(bound, measurement, confidence=confidence)
