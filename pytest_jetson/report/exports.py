"""A report's measurements in the formats of the tools teams keep benchmark history in.

* ``bencher(doc)``: the Bencher Metric Format (BMF JSON, ``bencher run --adapter json``):
  ``{benchmark: {measure: {"value", "lower_value", "upper_value"}}}``, a benchmark per
  measurement key (the test id), a measure per metric. ``throughput`` and ``latency_mean`` go to
  Bencher's built-in measures ``throughput`` (operations/s: items/s) and ``latency`` (ns); the
  other metrics to measures of their own name in kebab case (created by Bencher on first upload),
  every time in ns and the rest in the base unit of ``MEASURE_UNITS``. Which direction is worse
  is a Bencher threshold's setting (``--threshold-upper-boundary`` for latency-like measures,
  ``--threshold-lower-boundary`` for throughput-like ones): ``worse_side`` says it per measure.
* ``github_action_benchmark(doc)``: github-action-benchmark's custom tools, split by each
  metric's bad direction (``metrics.METRICS``): ``customSmallerIsBetter`` (latencies, memory,
  power, ...) and ``customBiggerIsBetter`` (throughput, GPU activity), each a list of
  ``{"name", "unit", "value", "range", "extra"}``; a unit per dimension, fixed, so a chart's
  values stay comparable from run to run.

The value is the report's (in base units, converted here); the interval is the one the gate
decided with where a bound compared the metric, else the metric's own confidence interval
(``gate.stats``, at the report's confidence level).
"""

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ..gate.stats import metric_stats
from ..metrics import METRICS
from ..provenance import commit_text
from .jsonreport import results as read_results

FORMATS = ("bencher", "github-action-benchmark")
#: github-action-benchmark's tool names, by the bad direction of a metric
GAB_TOOLS = {"higher": "customSmallerIsBetter", "lower": "customBiggerIsBetter"}
#: Bencher's built-in measures
BENCHER_MEASURES = {"throughput": "throughput", "latency_mean": "latency"}
#: dimension -> (unit text, factor from the base unit) for Bencher (time in ns, as its latency)
BENCHER_UNITS: Dict[str, Tuple[str, float]] = {
    "rate": ("items/s", 1.0), "time": ("ns", 1e9), "bytes": ("B", 1.0), "power": ("W", 1.0),
    "energy": ("J", 1.0), "temperature": ("C", 1.0), "percent": ("%", 1.0),
}
#: dimension -> (unit text, factor from the base unit) for github-action-benchmark's charts
GAB_UNITS: Dict[str, Tuple[str, float]] = {
    "rate": ("items/s", 1.0), "time": ("ms", 1e3), "bytes": ("MiB", 1.0 / 1024 ** 2), "power": ("W", 1.0),
    "energy": ("mJ", 1e3), "temperature": ("C", 1.0), "percent": ("%", 1.0),
}


@dataclass
class Figure:
    """One metric of one measurement, in base units."""

    key: str
    metric: str
    value: float
    ci: Optional[Tuple[float, float]]
    outcome: str = ""

    @property
    def worse(self) -> str:
        return METRICS[self.metric].worse


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def figures(doc: Dict[str, Any], path: Any = "") -> List[Figure]:
    """Every metric each measurement of the report has a value of, with its interval."""
    confidence = float((doc.get("settings") or {}).get("confidence") or 0.99)
    out: List[Figure] = []
    for result in read_results(doc, path):
        for key, m in result.keyed():
            for metric in METRICS:
                value = m.metric(metric)
                if not _finite(value):
                    continue
                verdicts = [v for v in result.verdicts if v.metric == metric and (v.measurement or key) == key]
                ci = next((tuple(map(float, v.ci)) for v in verdicts if v.ci), None)
                if ci is None:
                    st = metric_stats(m, metric, confidence, keep_sample=False)
                    ci = tuple(st.ci) if st is not None and st.ci else None
                outcome = next((v.outcome for v in verdicts if v.outcome == "fail"),
                               next((v.outcome for v in verdicts if v.outcome), ""))
                out.append(Figure(key=key, metric=metric, value=float(value), ci=ci, outcome=outcome))  # type: ignore[arg-type]
    return out


def measure_of(metric: str) -> str:
    """The Bencher measure slug of a metric."""
    return BENCHER_MEASURES.get(metric) or metric.replace("_", "-")


def worse_side(metric: str) -> str:
    """Which of a Bencher threshold's boundaries catches a regression of the metric."""
    return "upper" if METRICS[metric].worse == "higher" else "lower"


def bencher(doc: Dict[str, Any], path: Any = "") -> Dict[str, Dict[str, Dict[str, float]]]:
    """The report as Bencher Metric Format JSON."""
    out: Dict[str, Dict[str, Dict[str, float]]] = {}
    for f in figures(doc, path):
        _, factor = BENCHER_UNITS[METRICS[f.metric].dimension]
        metric = {"value": f.value * factor}
        if f.ci and all(_finite(x) for x in f.ci):
            metric.update(lower_value=min(f.ci) * factor, upper_value=max(f.ci) * factor)
        out.setdefault(f.key, {})[measure_of(f.metric)] = metric
    return out


def _extra(doc: Dict[str, Any], f: Figure, unit: str, factor: float) -> str:
    device = doc.get("device") or {}
    where = f"{device.get('device') or '?'} ({'simulated' if device.get('simulated') else 'real'})"
    if device.get("power_mode"):
        where += f", power mode {device['power_mode']}"
    lines = [where, commit_text(doc.get("commit"))]
    if f.ci:
        lines.append(f"CI {min(f.ci) * factor:.6g}..{max(f.ci) * factor:.6g} {unit}")
    if f.outcome:
        lines.append(f"gate: {f.outcome}")
    return "\n".join(lines)


def github_action_benchmark(doc: Dict[str, Any], path: Any = "") -> Dict[str, List[Dict[str, Any]]]:
    """The report as github-action-benchmark custom-tool JSON: {tool name: entries}, one tool
    per bad direction (both present, an empty list where no metric goes that way)."""
    out: Dict[str, List[Dict[str, Any]]] = {tool: [] for tool in GAB_TOOLS.values()}
    for f in figures(doc, path):
        unit, factor = GAB_UNITS[METRICS[f.metric].dimension]
        entry: Dict[str, Any] = {"name": f"{f.key} {f.metric}", "unit": unit, "value": f.value * factor}
        if f.ci:
            entry["range"] = f"± {(max(f.ci) - min(f.ci)) / 2 * factor:.3g}"
        entry["extra"] = _extra(doc, f, unit, factor)
        out[GAB_TOOLS[f.worse]].append(entry)
    return out
