"""The metrics: one table, read by bounds, statistics, baselines, comparisons, reports and the CLI.

A metric is one row of ``METRICS``. Adding one is that row plus the code that measures it (an
attribute of ``run.measurement.Measurement`` of the same name, or a telemetry summary field, or a
per-iteration sample list the row names); everything else reads the row: the bound grammar (its
dimension's units), the value and samples a measurement gives for it, the statistics (its
estimator, its series column and reduction), the baseline store (which compact sample it shares),
the gate (its bad direction), the default metric lists, every report (its format) and the message
when nothing measured it (its hint). A plugin adds rows through the ``pytest_jetson_metrics`` hook
(``register``).

This module sits at the bottom of the house: of the project it imports only ``errors``.
"""

import dataclasses
import difflib
import math
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .errors import ConfigError

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

#: How a metric's within-run error is estimated: the names of ``gate.stats.ESTIMATORS``.
#: ``batch_means``, ``order_statistics`` and ``block_peaks`` work on its per-iteration samples
#: (``samples``), ``series_mean`` and ``series_peak`` on its telemetry series column (``series``),
#: ``throughput`` and ``slowest_worker`` on the latencies of a run or of a pool's workers,
#: ``ratio`` adds the errors of the two metrics it divides (``parts``), ``none`` has no error.
ESTIMATORS = ("batch_means", "order_statistics", "block_peaks", "series_mean", "series_peak",
              "throughput", "slowest_worker", "ratio", "none")
#: The per-iteration sample lists a ``Measurement`` has (``Measurement.metric_samples``); a row
#: may also name ``extra.<key>``: a list of numbers the code that measures it keeps in
#: ``Measurement.extra``.
SAMPLES = ("latencies", "device_latencies", "throughput", "workers")
#: How a value reduces its samples or its series column (``hottest``: the hottest of a group of
#: columns at each time, then the peak).
REDUCTIONS = ("mean", "quantile", "peak", "hottest")
#: The default metric lists: ``compare`` (``pytest-jetson compare`` and ``diff``), ``history``
#: (``pytest-jetson history`` for a test that bounds none), ``show`` (the columns of
#: ``pytest-jetson show``), ``measured`` (what the terminal lists for a test without bounds).
DEFAULT_LISTS = ("compare", "history", "show", "measured")
_SAMPLE_ESTIMATORS = ("batch_means", "order_statistics", "block_peaks")
_SERIES_ESTIMATORS = ("series_mean", "series_peak")
BUILTIN = "pytest-jetson"


@dataclass(frozen=True)
class Metric:
    """One metric of the ``perf`` marker.

    ``worse``: the direction in which it gets worse ("higher" or "lower"). ``source``: what
    measures it. ``hint``: why it may be missing and the fix.

    Where its value comes from: ``summary``, the field of the telemetry summary it is; else the
    ``Measurement`` attribute of its name; else ``reduction`` (mean, quantile at ``quantile``,
    peak) over its ``samples``. ``samples``: its per-iteration sample list (one of ``SAMPLES``, or
    ``extra.<key>``); ``series``: its column in the telemetry series (or group of columns, with
    reduction ``hottest``). ``estimator``: how its error is estimated (one of ``ESTIMATORS``);
    ``parts``: for ``ratio``, the numerator and denominator metrics.
    ``sample``: the compact sample a baseline stores for it (metrics sharing one name share one
    sample). ``run_to_run``: the standard deviation of log(value) between runs on one board that
    the gate assumes when a baseline carries no estimate of its own (what no within-run error can
    see: another boot, another thermal state; see docs/explanation/statistics.md).
    ``defaults``: the default metric lists it is in (``DEFAULT_LISTS``). ``plugin``: who added it.
    """

    name: str
    dimension: str
    worse: str
    source: str
    description: str
    hint: str
    estimator: str = "none"
    quantile: Optional[float] = None
    sample: Optional[str] = None
    run_to_run: float = 0.01
    summary: Optional[str] = None
    samples: Optional[str] = None
    series: Optional[str] = None
    reduction: Optional[str] = None
    parts: Tuple[str, ...] = ()
    defaults: Tuple[str, ...] = ()
    plugin: str = BUILTIN

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


def _latency(name: str, what: str, estimator: str = "order_statistics", q: Optional[float] = None,
             reduction: str = "quantile", defaults: Tuple[str, ...] = ()) -> Metric:
    return Metric(name, "time", "higher", "harness", f"{what} of one infer call (one batch)",
                  "the measurement has no latency samples", estimator=estimator, quantile=q,
                  sample="latency", samples="latencies", reduction=reduction, defaults=defaults)


def _telemetry(name: str, dimension: str, description: str, what: str, summary: str,
               series: str, reduction: str, run_to_run: float = 0.01,
               defaults: Tuple[str, ...] = ()) -> Metric:
    estimator = "series_mean" if reduction == "mean" else "series_peak"
    return Metric(name, dimension, "lower" if dimension == "percent" else "higher", "telemetry",
                  description, _TELEMETRY_HINT.format(what=what), estimator=estimator,
                  run_to_run=run_to_run, summary=summary, series=series, reduction=reduction,
                  defaults=defaults)


#: What measures the GPU activity metrics (``gate.scope`` reads it).
GPU_METRICS_SOURCE = "telemetry (GPU metrics: the simulated board, or Nsight Systems)"
_ACTIVITY_HINT = ("GPU activity is sampled by the simulated board's telemetry or, on a board, by Nsight "
                  "Systems' GPU metrics (nsys --gpu-metrics-devices), which the timed window does not run "
                  "under: bound it on the simulated device (devices=/backends= on the mark), or record it "
                  "on a board with --jetson-trace")


def _activity(name: str, worse: str, description: str) -> Metric:
    # Diagnostics, in no default list: they say why a figure moved, the gated figures say that it did.
    return Metric(name, "percent", worse, GPU_METRICS_SOURCE, description, _ACTIVITY_HINT,
                  estimator="series_mean", run_to_run=0.03, summary=f"{name}_mean", series=name,
                  reduction="mean")


_ROWS = (
    Metric("throughput", "rate", "lower", "harness", "items per second over the measured window",
           "the measurement has no items or no duration", estimator="throughput", sample="throughput",
           samples="throughput", defaults=("compare", "history", "show", "measured")),
    _latency("latency_mean", "mean latency", estimator="batch_means", reduction="mean",
             defaults=("compare", "history")),
    _latency("latency_p50", "median latency", q=0.50, defaults=("compare",)),
    _latency("latency_p90", "90th percentile latency", q=0.90),
    _latency("latency_p95", "95th percentile latency", q=0.95),
    _latency("latency_p99", "99th percentile latency", q=0.99, defaults=("compare", "show", "measured")),
    _latency("latency_max", "largest latency", estimator="block_peaks", reduction="peak"),
    Metric("memory", "bytes", "higher", "telemetry, else the engine",
           "peak memory: telemetry's peak, else the worker's peak RSS, else the engine's own figure",
           "no memory reading: the engine reported no memory and no telemetry ran (use perf.measure, "
           "or enable telemetry with --jetson-telemetry)", estimator="series_peak",
           summary="memory_peak_bytes", series="memory_bytes", reduction="peak", defaults=("compare", "show")),
    _telemetry("power", "power", "mean board power over the window", "board power", "power_mean_w",
               "board_power_w", "mean", run_to_run=0.02, defaults=("compare", "show")),
    _telemetry("power_peak", "power", "highest board power sample", "board power", "power_peak_w",
               "board_power_w", "peak", run_to_run=0.02),
    Metric("energy", "energy", "higher", "telemetry", "board energy per item (power integral / items)",
           _TELEMETRY_HINT.format(what="board power"), run_to_run=0.02, estimator="ratio",
           parts=("power", "throughput"), defaults=("compare",)),
    _telemetry("gpu_util", "percent", "mean GPU utilisation", "GPU load", "gpu_util_mean", "gpu_util",
               "mean"),
    _telemetry("temperature", "temperature", "highest temperature over the sensors", "temperatures",
               "temperature_max_c", "temps_c", "hottest", run_to_run=0.03),
    Metric("per_process_throughput", "rate", "lower", "process_pool",
           "throughput of the slowest worker of a pool",
           "per_process_throughput needs a process pool: record a process_pool(...) measurement",
           estimator="slowest_worker", sample="per_process_throughput", samples="workers",
           defaults=("compare",)),
    Metric("latency_gpu", "time", "higher", "the engine (CUDA events)",
           "GPU compute time of one inference (one batch): trtexec's GPU Compute Time",
           "only the tensorrt backend times GPU compute (CUDA events around each enqueue); "
           "simulated and onnxruntime engines have none", estimator="batch_means", sample="latency_gpu",
           samples="device_latencies", reduction="mean"),
    Metric("build_time", "time", "higher", "the engine",
           "seconds to build the engine (a cached TensorRT plan keeps the build's own figure)",
           "the engine reported no build time (simulated engines are not built)"),
    Metric("latency_first", "time", "higher", "the engine",
           "host time of the first inference after the engine is opened (lazy loading, first use)",
           "the engine reported no first-inference time (simulated engines have none)"),
    # measured at an arrival rate (perf.measure(..., rate=)); a run back to back has none
    Metric("jitter", "time", "higher", "harness (arrival rate)",
           "standard deviation of the intervals between consecutive completions at an arrival rate",
           "jitter needs rate=: measure at an arrival rate, e.g. perf.measure(engine, rate='30/s')",
           run_to_run=0.1),
    Metric("deadline_miss", "percent", "higher", "harness (arrival rate)",
           "share of calls whose latency from arrival exceeded the deadline (deadline=, default one "
           "period)",
           "deadline_miss needs rate=: measure at an arrival rate, e.g. perf.measure(engine, "
           "rate='30/s', deadline='33ms')", estimator="batch_means", samples="extra.deadline_missed",
           reduction="mean"),
    Metric("max_rate", "rate", "lower", "perf.max_rate",
           "highest arrival rate (calls per second) that met perf.max_rate's bounds",
           "max_rate needs rate= searched for: perf.max_rate(engine, latency_p99='<= 33 ms') "
           "records the measurement at the highest rate that meets the bound"),
    # GPU activity as the concurrency study measured it (Nsight Systems' GPU metrics). Lower SM,
    # issue and tensor-core activity is worse: the GPU's units idle more for the work (a fusion
    # lost, layers fallen back from tensor to CUDA cores, more time-slicing). Higher DRAM
    # utilisation is worse: the bandwidth is shared with the CPU, the DLA and the cameras of a
    # unified-memory board, and what one engine takes the others lose.
    _activity("sm_active", "lower", "mean share of time the SMs hold a resident block (Nsight Systems' "
              "SM Active)"),
    _activity("tensor_active", "lower", "mean share of time the tensor cores are busy (Tensor Active)"),
    _activity("issue_active", "lower", "mean share of issue slots that issued an instruction (SM Issue)"),
    _activity("dram_util", "higher", "mean DRAM bandwidth over the board's peak (DRAM Read + Write "
              "Bandwidth)"),
)

#: name -> Metric, in the order reports list them (plugins' metrics after the built-in ones).
METRICS: Dict[str, Metric] = {m.name: m for m in _ROWS}


def defaults(kind: str) -> Tuple[str, ...]:
    """The metrics of the default list ``kind`` (one of ``DEFAULT_LISTS``): speed (rates and
    times) before resources, each in table order."""
    if kind not in DEFAULT_LISTS:
        raise ValueError(f"unknown default metric list {kind!r}; one of {', '.join(DEFAULT_LISTS)}")
    rows = [row for row in METRICS.values() if kind in row.defaults]
    return tuple(row.name for row in sorted(rows, key=lambda row: row.dimension not in ("rate", "time")))


def _choice(what: str, got: Any, known: Sequence[str]) -> Optional[str]:
    if got in known:
        return None
    return f"{what} {got!r}: one of {', '.join(map(str, known))}"


def _what_the_estimator_lacks(row: Metric) -> Optional[str]:
    if row.estimator in _SAMPLE_ESTIMATORS and not row.samples:
        return f"estimator {row.estimator!r} needs samples= (one of {', '.join(SAMPLES)}, or 'extra.<key>')"
    if row.estimator in _SERIES_ESTIMATORS and not row.series:
        return f"estimator {row.estimator!r} needs series= (a telemetry series column, e.g. 'gpu_util')"
    if row.estimator == "order_statistics" and not (row.quantile is not None and 0 < row.quantile < 1):
        return f"estimator 'order_statistics' needs quantile= between 0 and 1, got {row.quantile!r}"
    if row.estimator == "ratio" and (len(row.parts) != 2 or any(p not in METRICS for p in row.parts)):
        return f"estimator 'ratio' needs parts=(numerator, denominator), two known metrics, got {row.parts!r}"
    return None


def _how_it_reads(row: Metric) -> Optional[str]:
    """What the row lacks to read its value and samples, or None."""
    if row.samples and row.samples not in SAMPLES and not row.samples.startswith("extra."):
        return f"samples {row.samples!r}: one of {', '.join(SAMPLES)}, or 'extra.<key>'"
    if row.reduction is not None and row.reduction not in REDUCTIONS:
        return f"reduction {row.reduction!r}: one of {', '.join(REDUCTIONS)}"
    if row.plugin != BUILTIN and not row.summary and not (row.samples and row.reduction):
        return ("no value to read: give summary= (a telemetry summary field) or samples= with "
                "reduction=")
    return None


def problem(row: Any) -> Optional[str]:
    """What makes ``row`` unusable in the table (None when it is complete)."""
    if not isinstance(row, Metric):
        return f"{row!r} is not a pytest_jetson.metrics.Metric"
    if not isinstance(row.name, str) or not row.name.isidentifier():
        return f"name {row.name!r}: a metric name is an identifier (letters, digits, underscores)"
    checks = (_choice("dimension", row.dimension, list(UNITS)),
              _choice("worse", row.worse, ("higher", "lower")),
              _choice("estimator", row.estimator, ESTIMATORS),
              *(_choice("default list", d, DEFAULT_LISTS) for d in row.defaults))
    return next((c for c in checks if c), None) or _what_the_estimator_lacks(row) or _how_it_reads(row)


def register(row: Metric, plugin: str = "") -> Metric:
    """Add ``row`` to the table (a plugin's metric); ConfigError naming ``plugin`` when the name is
    taken or the row lacks what the table needs."""
    who = plugin or getattr(row, "plugin", "") or "an unnamed plugin"
    if not isinstance(row, Metric):
        text = repr(row) if len(repr(row)) <= 60 else repr(row)[:57] + "..."
        raise ConfigError(f"{who}: pytest_jetson_metrics returned {text}, not a pytest_jetson.metrics.Metric")
    name = row.name
    if isinstance(name, str) and name in METRICS:  # the clash first: it is the fix to make
        raise ConfigError(f"{who} registered the metric {name!r}, but {METRICS[name].plugin} already "
                          f"registers one under that name; pick another name")
    why = problem(row)
    if why:
        raise ConfigError(f"{who} registered the metric {name!r}: {why}")
    METRICS[name] = row
    return row


def register_plugins(rows_by_plugin: Iterable[Tuple[str, Any]]) -> List[str]:
    """Register each plugin's rows (``(plugin, rows)`` pairs, as the ``pytest_jetson_metrics``
    hook returns them), all or none: on a refused row the ones added before it are removed again.
    Returns the names added, for ``unregister``."""
    added: List[str] = []
    try:
        for plugin, rows in rows_by_plugin:
            for row in rows or []:
                if isinstance(row, Metric) and row.plugin == BUILTIN:
                    row = dataclasses.replace(row, plugin=plugin)
                added.append(register(row, plugin).name)
    except ConfigError:
        for name in added:
            unregister(name)
        raise
    return added


def unregister(name: str) -> None:
    """Remove a plugin's metric (a built-in one stays)."""
    row = METRICS.get(name)
    if row is not None and row.plugin != BUILTIN:
        del METRICS[name]


def get(name: str) -> Metric:
    """The metric called ``name``; KeyError with close matches when there is none."""
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(unknown_message(name)) from None


def unknown_message(name: str, where: str = "") -> str:
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
