"""The metrics: one table, read by bounds, statistics, baselines, comparisons, reports and the CLI.

A metric is one row of ``METRICS``. Adding one is that row plus the code that measures it (an
attribute of ``run.measurement.Measurement`` of the same name); everything else reads the row:
the bound grammar (its dimension's units), the statistics (its estimator), the baseline store
(which compact sample it shares), the gate (its bad direction), every report (its format) and the
message when nothing measured it (its hint).

This module sits at the bottom of the house: it imports nothing of the project.
"""

import math
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

#: dimension -> {unit as written in a bound: factor to the base unit}. The first unit of each
#: dimension is the base unit the Measurement uses.
UNITS: Dict[str, Dict[str, float]] = {
    "rate": {"/s": 1.0, "items/s": 1.0, "item/s": 1.0, "img/s": 1.0, "fps": 1.0, "k/s": 1e3,
             "kitems/s": 1e3},
    "time": {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9},
    "bytes": {"B": 1.0, "KiB": 1024.0, "MiB": 1024.0 ** 2, "GiB": 1024.0 ** 3, "KB": 1e3, "kB": 1e3,
              "MB": 1e6, "GB": 1e9},
    "power": {"W": 1.0, "mW": 1e-3},
    "energy": {"J": 1.0, "mJ": 1e-3, "uJ": 1e-6, "µJ": 1e-6},
    "temperature": {"C": 1.0, "°C": 1.0},
    "percent": {"%": 1.0},
}

#: dimension -> an absolute bound as a user would write it (for messages).
EXAMPLES: Dict[str, str] = {
    "rate": ">= 900/s", "time": "<= 15 ms", "bytes": "<= 1.5 GiB", "power": "<= 10 W",
    "energy": "<= 12 mJ", "temperature": "<= 70 C", "percent": ">= 80 %",
}

_TELEMETRY_HINT = ("no telemetry source measured it: enable one with --jetson-telemetry (jtop, "
                   "tegrastats, sysfs, nvml; host has no {what})")


@dataclass(frozen=True)
class Metric:
    """One metric of the ``perf`` marker.

    ``worse``: the direction in which it gets worse ("higher" or "lower"). ``estimator``: how its
    error is estimated, "mean" (batch means), "quantile" (order statistics at ``quantile``),
    "pool" (each worker's own batch means) or "value" (no error from per-iteration samples:
    ``gate.stats`` takes telemetry metrics' errors from their sample series and peaks' from the
    spread of block peaks).
    ``sample``: the compact sample a baseline stores for it (metrics sharing one name share one
    sample). ``source``: what measures it. ``hint``: why it may be missing and the fix.
    ``run_to_run``: the standard deviation of log(value) between runs on one board that the gate
    assumes when a baseline carries no estimate of its own (what no within-run error can see:
    another boot, another thermal state; see README, "The statistics of the gate").
    """

    name: str
    dimension: str
    worse: str
    source: str
    description: str
    hint: str
    estimator: str = "value"
    quantile: Optional[float] = None
    sample: Optional[str] = None
    run_to_run: float = 0.01

    @property
    def unit(self) -> str:
        return next(iter(UNITS[self.dimension]))

    @property
    def units(self) -> Tuple[str, ...]:
        return tuple(UNITS[self.dimension])

    @property
    def example(self) -> str:
        return EXAMPLES[self.dimension]

    def format(self, value: Optional[float]) -> str:
        return format_value(self.name, value)


def _latency(name: str, what: str, estimator: str = "quantile", q: Optional[float] = None) -> Metric:
    return Metric(name, "time", "higher", "harness", f"{what} of one infer call (one batch)",
                  "the measurement has no latency samples", estimator=estimator, quantile=q,
                  sample="latency")


_ROWS = (
    Metric("throughput", "rate", "lower", "harness", "items per second over the measured window",
           "the measurement has no items or no duration", estimator="mean", sample="throughput"),
    _latency("latency_mean", "mean latency", estimator="mean"),
    _latency("latency_p50", "median latency", q=0.50),
    _latency("latency_p90", "90th percentile latency", q=0.90),
    _latency("latency_p95", "95th percentile latency", q=0.95),
    _latency("latency_p99", "99th percentile latency", q=0.99),
    _latency("latency_max", "largest latency", estimator="value"),
    Metric("memory", "bytes", "higher", "telemetry, else the engine",
           "peak memory: telemetry's peak, else the worker's peak RSS, else the engine's own figure",
           "no memory reading: the engine reported no memory and no telemetry ran (use perf.measure, "
           "or enable telemetry with --jetson-telemetry)"),
    Metric("power", "power", "higher", "telemetry", "mean board power over the window",
           _TELEMETRY_HINT.format(what="board power"), run_to_run=0.02),
    Metric("power_peak", "power", "higher", "telemetry", "highest board power sample",
           _TELEMETRY_HINT.format(what="board power"), run_to_run=0.02),
    Metric("energy", "energy", "higher", "telemetry", "board energy per item (power integral / items)",
           _TELEMETRY_HINT.format(what="board power"), run_to_run=0.02),
    Metric("gpu_util", "percent", "lower", "telemetry", "mean GPU utilisation",
           _TELEMETRY_HINT.format(what="GPU load")),
    Metric("temperature", "temperature", "higher", "telemetry", "highest temperature over the sensors",
           _TELEMETRY_HINT.format(what="temperatures"), run_to_run=0.03),
    Metric("per_process_throughput", "rate", "lower", "process_pool",
           "throughput of the slowest worker of a pool",
           "per_process_throughput needs a process pool: record a process_pool(...) measurement",
           estimator="mean", sample="per_process_throughput"),
    Metric("latency_gpu", "time", "higher", "the engine (CUDA events)",
           "GPU compute time of one inference (one batch): trtexec's GPU Compute Time",
           "only the tensorrt backend times GPU compute (CUDA events around each enqueue); "
           "simulated and onnxruntime engines have none", estimator="mean", sample="latency_gpu"),
    Metric("build_time", "time", "higher", "the engine",
           "seconds to build the engine (a cached TensorRT plan keeps the build's own figure)",
           "the engine reported no build time (simulated engines are not built)"),
    Metric("latency_first", "time", "higher", "the engine",
           "host time of the first inference after the engine is opened (lazy loading, first use)",
           "the engine reported no first-inference time (simulated engines have none)"),
)

#: name -> Metric, in the order reports list them.
METRICS: Dict[str, Metric] = {m.name: m for m in _ROWS}


def get(name: str) -> Metric:
    """The metric called ``name``; KeyError with close matches when there is none."""
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(unknown_message(name)) from None


def unknown_message(name: str, where: str = "") -> str:
    import difflib

    close = difflib.get_close_matches(name, list(METRICS), n=1, cutoff=0.5)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    at = f" on {where}" if where else ""
    return f"perf mark{at}: unknown metric {name!r}.{hint} Known metrics: {', '.join(METRICS)}"


def format_percent(fraction: float) -> str:
    return f"{fraction * 100:.3g}%"


def _scale(dim: str, value: float) -> Tuple[float, str]:
    """The display unit of a base-unit value: (factor to divide by, unit text with its space)."""
    a = abs(value)
    if dim == "rate":
        return 1.0, "/s"
    if dim == "time":
        if a >= 1:
            return 1.0, " s"
        return (1e-3, " ms") if a >= 1e-3 else (1e-6, " us")
    if dim == "bytes":
        for unit, scale in (("GiB", 1024.0 ** 3), ("MiB", 1024.0 ** 2), ("KiB", 1024.0)):
            if a >= scale:
                return scale, " " + unit
        return 1.0, " B"
    if dim == "energy":
        return (1e-3, " mJ") if a < 1 else (1.0, " J")
    return 1.0, {"power": " W", "temperature": " C", "percent": " %"}.get(dim, "")


def display_unit(metric: str, value: float) -> Tuple[float, str]:
    """The unit ``format_value`` prints ``value`` in: (factor from the base unit, unit text)."""
    row = METRICS.get(metric)
    return _scale(row.dimension if row is not None else "", value)


def format_value(metric: str, value: Optional[float], resolution: Optional[float] = None) -> str:
    """A base-unit metric value for people: '812.4/s', '15.2 ms', '1.5 GiB', '9.8 W', '12 mJ'.

    ``resolution`` (base units, e.g. the half-width of the value's confidence interval): print
    the digits down to the first significant digit of the resolution and no further, so a value
    shows what the measurement resolves (``1.441 ms``, not ``1.44 ms`` nor ``1.44127 ms``)."""
    if value is None:
        return "-"
    row = METRICS.get(metric)
    dim = row.dimension if row is not None else ""
    factor, unit = _scale(dim, value)
    if resolution is not None and resolution > 0 and math.isfinite(resolution):
        decimals = max(0, min(9, math.ceil(-math.log10(resolution / factor))))
        return f"{value / factor:.{decimals}f}{unit}"
    if dim == "rate":
        return f"{value:.1f}/s" if abs(value) < 1e5 else f"{value:.4g}/s"
    if dim == "bytes" and factor == 1.0:
        return f"{value:.0f} B"
    if not dim:
        return f"{value:.4g}"
    return f"{value / factor:.3g}{unit}"
