"""What one run measured: per-iteration samples, the telemetry beside them, and where it ran.

A ``Measurement`` is the unit the gate checks and the reports print. It has one attribute per
metric of the ``perf`` marker (``throughput``, ``latency_p99``, ``memory``, ``power``, ...), None
where nothing measured it. Latency metrics are per batch (one ``infer`` call); throughput counts
items (batch x iterations) per second of the measurement window.

numpy and the telemetry classes are imported where figures are computed or read back: a pool
worker measures and sends its samples without either.
"""

import math
import numbers
import struct
import sys
from array import array
from dataclasses import dataclass, field
from operator import sub as _sub
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

from ..engines.layer_profile import LayerProfile
from ..metrics import METRICS

if TYPE_CHECKING:
    import numpy as np

    from ..telemetry.series import Series

SCHEMA_VERSION = 1
#: Larger than any duration, count or figure a measurement holds: a file saying more is damaged.
MAX_FIGURE = 1e15


def _figure(x: Any, what: str, whole: bool = False) -> Any:
    """``x`` as read from a file, checked: a finite number within MAX_FIGURE (a whole one where
    ``whole``); ValueError naming ``what`` otherwise."""
    ok = isinstance(x, numbers.Real) and not isinstance(x, bool) and (not whole or isinstance(x, numbers.Integral))
    if not ok or not math.isfinite(x) or abs(x) > MAX_FIGURE:
        raise ValueError(f"{what} must be a finite {'whole ' if whole else ''}number of magnitude at most "
                         f"{MAX_FIGURE:g}, got {x!r}")
    return x


def _figures(xs: Any, what: str) -> List[float]:
    if not isinstance(xs, list):
        raise ValueError(f"{what} must be a list of numbers, got {type(xs).__name__}")
    return [float(_figure(x, what)) for x in xs]
#: The latency percentiles a summary reports, computed together in one pass over the samples.
_PERCENTILES = (50.0, 90.0, 95.0, 99.0)


class Samples(array):
    """Per-iteration values as C doubles: 8 bytes each where a list of floats holds about 32
    (a million-iteration measurement keeps 8 MB, not 30). Indexing, ``len``, iteration and
    slicing are an ``array('d')``'s; it equals any sequence of the same values, so
    ``m.latencies == [0.01, 0.01]`` reads as it did for a list."""

    __slots__ = ()

    def __new__(cls, values: Any = ()) -> "Samples":
        return super().__new__(cls, "d", values)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, array):
            return array.__eq__(self, other)
        if isinstance(other, (list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __ne__(self, other: Any) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:  # printed as the list it stands for, as before
        return repr(self.tolist())

    def __reduce_ex__(self, protocol: Any) -> Any:
        return Samples, (array("d", self),)

    def take(self, values: List[Any]) -> None:
        """Move ``values`` (a list a timed loop appended to) onto the end as C doubles and empty
        the list. One pass in C (``struct``; about a third of ``fromlist``'s cost, which parses
        each item): what lets a loop that appends to lists keep its samples at 8 bytes each.
        TypeError naming the first value that is not a number (nothing is moved then)."""
        n = len(values)
        if not n:
            return
        try:
            packed = struct.pack(f"{n}d", *values)
        except struct.error:
            bad = next(v for v in values if not _is_number(v))
            raise TypeError(f"{bad!r} ({type(bad).__name__}) is not a number") from None
        self.frombytes(packed)
        del values[:]

    def take_gaps(self, ends: "Samples", start: int, t_start: float) -> None:
        """Append the gaps between ``ends[start:]`` and the end before each (``t_start`` before
        the first): the latencies of a loop that kept only its end times, the same floats its
        subtractions would give. In C where numpy is loaded already (a pool worker of a host
        engine does without it)."""
        n = len(ends) - start
        if n <= 0:
            return
        np = sys.modules.get("numpy")
        if np is None:
            tail = ends[start:]
            self.frombytes(struct.pack(f"{n}d", *map(_sub, tail, [t_start, *tail])))
            return
        e = np.frombuffer(ends, dtype=float)[start:]
        gaps = np.empty(n)
        gaps[0] = e[0] - t_start
        np.subtract(e[1:], e[:-1], out=gaps[1:])
        del e  # a viewed array cannot grow: let go of the view
        self.frombytes(memoryview(gaps).cast("B"))

    @classmethod
    def of(cls, values: "np.ndarray") -> "Samples":
        """From a numpy array, as one copy of its bytes."""
        import numpy as np

        out = cls()
        out.frombytes(np.ascontiguousarray(values, dtype=float).tobytes())
        return out


def _is_number(value: Any) -> bool:
    """Whether ``value`` is what a C double is made of (as ``Samples.take`` packs it)."""
    try:
        struct.pack("d", value)
    except struct.error:
        return False
    return True


def samples(values: Any) -> Any:
    """``values`` as ``Samples`` (None stays None; a sequence holding anything but numbers is
    kept as it is)."""
    if values is None or type(values) is Samples:
        return values
    try:
        return Samples(values)
    except TypeError:
        return values


def _view(values: Any) -> "np.ndarray":
    """A float array over ``values``: no copy for ``Samples`` (callers drop it right after, as an
    array cannot grow while viewed)."""
    import numpy as np

    if isinstance(values, array) and values.typecode == "d":
        return np.frombuffer(values, dtype=float) if len(values) else np.empty(0)
    return np.asarray(values if values is not None else [], dtype=float)


def _percentile(values: "np.ndarray", q: float) -> Optional[float]:
    if values.size == 0:
        return None
    import numpy as np

    return float(np.percentile(values, q))


@dataclass
class Spread:
    """min / mean / max of a per-worker quantity (for pools)."""

    min: float
    mean: float
    max: float

    def to_dict(self) -> Dict[str, float]:
        return {"min": self.min, "mean": self.mean, "max": self.max}

    @classmethod
    def from_dict(cls, d: Dict[str, float]) -> "Spread":
        return cls(float(d["min"]), float(d["mean"]), float(d["max"]))


@dataclass
class Measurement:
    """One measured run of one engine (or, as ``PoolMeasurement``, of a pool of workers).

    ``latencies`` are seconds per iteration on the engine's clock (``clock``: ``"virtual"`` for the
    simulated device, ``"cuda"`` for CUDA events, ``"wall"`` for ``time.perf_counter``).
    ``duration`` is the measurement window in seconds on that clock; ``items`` the inputs processed
    in it. ``telemetry`` is a ``TelemetrySummary`` (or None); ``environment`` the fingerprint
    (device, power mode, JetPack, TensorRT, precision, batch, simulated, plugin version).
    ``telemetry_series`` is the sampled ``telemetry.series.Series`` of the window (or None): the
    gate's telemetry errors and the timeline plots read it; files keep it in ``extra``.
    """

    name: str
    batch: int
    latencies: List[float]
    duration: float
    items: int
    clock: str = "wall"
    backend: str = ""
    model: str = ""
    precision: str = ""
    stable: Optional[bool] = None
    windows: List[float] = field(default_factory=list)
    host_overhead: Optional[float] = None
    device_latencies: Optional[List[float]] = None
    engine_memory: Optional[int] = None
    telemetry: Any = None
    environment: Dict[str, Any] = field(default_factory=dict)
    extra: Dict[str, Any] = field(default_factory=dict)
    telemetry_series: Optional["Series"] = field(default=None, repr=False)
    #: Named stages of a measured function (``perf.stage``), each a Measurement of its own: its
    #: latencies are the stage's time per call (summed over its entries in that call), its
    #: duration, items, batch and clock the whole measurement's. Empty for an engine.
    stages: Dict[str, "Measurement"] = field(default_factory=dict)
    #: Where one inference's time went, layer by layer (``engines.layer_profile``), from a pass
    #: after the timed window; None where the backend cannot say. No metric reads it.
    profile: Optional[LayerProfile] = None

    def __post_init__(self) -> None:
        self.latencies = samples(self.latencies)
        self.device_latencies = samples(self.device_latencies)

    # -- derived metrics -------------------------------------------------------------------
    @property
    def iterations(self) -> int:
        return len(self.latencies)

    def _lat(self) -> "np.ndarray":
        return _view(self.latencies)

    def _latency_stats(self) -> Dict[str, Optional[float]]:
        """Mean, max and percentiles of the latencies, computed once per set of samples (the
        summary asks for each; a new list or more samples computes them again)."""
        lat = self.latencies
        cached = self.__dict__.get("_stats")
        if cached is not None and cached[0] is lat and cached[1] == len(lat):
            return cached[2]
        x = self._lat()
        if x.size:
            import numpy as np

            qs = np.percentile(x, _PERCENTILES)
            stats: Dict[str, Optional[float]] = {f"p{q:g}": float(v) for q, v in zip(_PERCENTILES, qs)}
            stats.update(mean=float(x.mean()), max=float(x.max()))
        else:
            stats = {f"p{q:g}": None for q in _PERCENTILES}
            stats.update(mean=None, max=None)
        del x  # a viewed array cannot grow: let go of the view
        self.__dict__["_stats"] = (lat, len(lat), stats)
        return stats

    @property
    def throughput(self) -> Optional[float]:
        if self.duration <= 0 or self.items <= 0:
            return None
        return self.items / self.duration

    @property
    def latency_mean(self) -> Optional[float]:
        return self._latency_stats()["mean"]

    @property
    def latency_p50(self) -> Optional[float]:
        return self._latency_stats()["p50"]

    @property
    def latency_p90(self) -> Optional[float]:
        return self._latency_stats()["p90"]

    @property
    def latency_p95(self) -> Optional[float]:
        return self._latency_stats()["p95"]

    @property
    def latency_p99(self) -> Optional[float]:
        return self._latency_stats()["p99"]

    @property
    def latency_max(self) -> Optional[float]:
        return self._latency_stats()["max"]

    def _summary_value(self, metric: str) -> Optional[float]:
        """The telemetry summary field the metric's row names (``Metric.summary``)."""
        return self._telemetry_value(METRICS[metric].summary or "")

    def _telemetry_value(self, attr: str) -> Optional[float]:
        value = getattr(self.telemetry, attr, None) if self.telemetry is not None else None
        if value is None:
            return None
        value = float(value)
        return value if math.isfinite(value) else None

    @property
    def memory(self) -> Optional[float]:
        """Peak memory in bytes: telemetry's peak where sampled, else the process's own peak RSS
        (pool workers), else what the engine reports."""
        peak = self._summary_value("memory")
        if peak is not None:
            return peak
        rss = self.extra.get("peak_rss_bytes")
        if isinstance(rss, (int, float)) and rss > 0:
            return float(rss)
        return float(self.engine_memory) if self.engine_memory is not None else None

    @property
    def power(self) -> Optional[float]:
        """Mean board power in W over the run."""
        return self._summary_value("power")

    @property
    def power_peak(self) -> Optional[float]:
        return self._summary_value("power_peak")

    @property
    def energy(self) -> Optional[float]:
        """Energy per item in J."""
        total = self._telemetry_value("energy_j")
        if total is None or self.items <= 0:
            return None
        return total / self.items

    @property
    def gpu_util(self) -> Optional[float]:
        return self._summary_value("gpu_util")

    @property
    def temperature(self) -> Optional[float]:
        return self._summary_value("temperature")

    @property
    def sm_active(self) -> Optional[float]:
        return self._summary_value("sm_active")

    @property
    def tensor_active(self) -> Optional[float]:
        return self._summary_value("tensor_active")

    @property
    def issue_active(self) -> Optional[float]:
        return self._summary_value("issue_active")

    @property
    def dram_util(self) -> Optional[float]:
        return self._summary_value("dram_util")

    @property
    def per_process_throughput(self) -> Optional[float]:
        return None

    @property
    def latency_gpu(self) -> Optional[float]:
        """Mean GPU compute time per inference (CUDA events; trtexec's GPU Compute Time)."""
        dev = self.device_latencies
        return float(_view(dev).mean()) if dev else None

    @property
    def build_time(self) -> Optional[float]:
        return self._extra_seconds("build_time")

    @property
    def latency_first(self) -> Optional[float]:
        return self._extra_seconds("latency_first")

    @property
    def jitter(self) -> Optional[float]:
        """Standard deviation of the intervals between consecutive completions (s), at a rate."""
        return self._extra_seconds("jitter")

    @property
    def deadline_miss(self) -> Optional[float]:
        """Percent of calls whose latency from arrival exceeded the deadline, at a rate."""
        missed = _numbers(self.extra.get("deadline_missed"))
        if not missed:
            return None
        import numpy as np

        return float(np.mean(missed))

    @property
    def max_rate(self) -> Optional[float]:
        """The highest arrival rate (calls/s) that met ``perf.max_rate``'s bounds."""
        return self._extra_seconds("max_rate")

    def _extra_seconds(self, key: str) -> Optional[float]:
        value = self.extra.get(key)
        return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None

    def metric(self, name: str) -> Optional[float]:
        """The value of a perf metric by name (None where nothing measured it): the attribute of
        that name, else what its row says (a telemetry summary field, a reduction of its samples)."""
        row = METRICS.get(name)
        if row is None:
            raise KeyError(name)  # the table in pytest_jetson.metrics names every metric
        if isinstance(getattr(type(self), name, None), property):
            value = getattr(self, name)
        elif row.summary:
            value = self._telemetry_value(row.summary)
        else:
            value = _reduce(self.metric_samples(name), row)
        if isinstance(value, Spread):
            return value.min
        return value

    def metric_samples(self, name: str) -> Optional[List[float]]:
        """Per-sample values of a metric (its row's ``samples``), for rank tests and errors:
        latencies for latency metrics, per-window (or per-iteration) throughput for throughput;
        None where only a summary exists. The latencies are the measurement's own (read them, do
        not change them)."""
        source = METRICS[name].samples
        if source is None:
            return None
        if source.startswith("extra."):
            return _numbers(self.extra.get(source[len("extra."):]))
        return SAMPLERS[source](self)

    def summary(self) -> Dict[str, Optional[float]]:
        return {name: self.metric(name) for name in METRICS}

    # -- JSON ------------------------------------------------------------------------------
    def to_dict(self, samples: bool = True) -> Dict[str, Any]:
        """The measurement as plain JSON data. ``samples=False`` leaves out what grows with the
        run (latencies, device latencies, the telemetry series), for a summary that does not
        keep them: ten million latencies as Python floats take 320 MB."""
        tele = self.telemetry
        if tele is not None and hasattr(tele, "to_dict"):
            tele = tele.to_dict()
        return {
            "kind": "measurement",
            "schema": SCHEMA_VERSION,
            "name": self.name,
            "batch": self.batch,
            "latencies": _plain(self.latencies) if samples else [],
            "duration": self.duration,
            "items": self.items,
            "clock": self.clock,
            "backend": self.backend,
            "model": self.model,
            "precision": self.precision,
            "stable": self.stable,
            "windows": list(map(float, self.windows)),
            "host_overhead": self.host_overhead,
            "device_latencies": None if self.device_latencies is None or not samples else _plain(self.device_latencies),
            "engine_memory": self.engine_memory,
            "telemetry": tele,
            "environment": dict(self.environment),
            "extra": self._extra_for_files(samples),
            "summary": self.summary(),
            **({"stages": {k: v.to_dict(samples) for k, v in self.stages.items()}} if self.stages else {}),
            **({"profile": self.profile.to_dict()} if self.profile is not None else {}),
        }

    def _extra_for_files(self, samples: bool = True) -> Dict[str, Any]:
        extra = dict(self.extra)
        if samples and self.telemetry_series is not None and len(self.telemetry_series):
            extra["telemetry_series"] = self.telemetry_series.to_dict()
        return extra

    @classmethod
    def _kwargs_from_dict(cls, d: Dict[str, Any]) -> Dict[str, Any]:
        from ..telemetry.series import Series
        from ..telemetry.summary import TelemetrySummary

        tele = d.get("telemetry")
        if isinstance(tele, dict):
            tele = TelemetrySummary.from_dict(tele)
        extra = dict(d.get("extra", {}))
        series = extra.pop("telemetry_series", None)
        for name, value in (d.get("summary") or {}).items():  # recomputed, but never trusted damaged
            for part in (value.values() if isinstance(value, dict) else [value]):  # a Spread: min, mean, max
                if part is not None:
                    _figure(part, f"summary {name!r}")
        device = d.get("device_latencies")
        return dict(
            name=d["name"],
            batch=int(_figure(d["batch"], "'batch'", whole=True)),
            latencies=_figures(d.get("latencies", []), "'latencies'"),
            duration=float(_figure(d["duration"], "'duration'")),
            items=int(_figure(d["items"], "'items'", whole=True)),
            clock=d.get("clock", "wall"),
            backend=d.get("backend", ""),
            model=d.get("model", ""),
            precision=d.get("precision", ""),
            stable=d.get("stable"),
            windows=_figures(d.get("windows", []), "'windows'"),
            host_overhead=d.get("host_overhead"),
            device_latencies=None if device is None else _figures(device, "'device_latencies'"),
            engine_memory=d.get("engine_memory"),
            telemetry=tele,
            environment=dict(d.get("environment", {})),
            extra=extra,
            telemetry_series=Series.from_dict(series) if isinstance(series, dict) and series.get("t") else None,
            profile=LayerProfile.from_dict(d["profile"]) if isinstance(d.get("profile"), dict) else None,
            stages={str(k): Measurement.from_dict(v) for k, v in (d.get("stages") or {}).items()
                    if isinstance(v, dict)},
        )

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Measurement":
        if d.get("kind") == "pool":
            return PoolMeasurement.from_dict(d)
        return cls(**cls._kwargs_from_dict(d))


@dataclass
class PoolMeasurement(Measurement):
    """A pool of workers measured over one shared window: the whole pool's figures (throughput of
    all workers together, pooled latencies) plus one ``Measurement`` per worker."""

    workers: List[Measurement] = field(default_factory=list)
    start_skew: Optional[float] = None

    @property
    def processes(self) -> int:
        return len(self.workers)

    @property
    def per_process_throughput(self) -> Optional[Spread]:  # type: ignore[override]
        values = [w.throughput for w in self.workers if w.throughput is not None]
        if not values:
            return None
        return Spread(min(values), sum(values) / len(values), max(values))

    @property
    def per_process_memory(self) -> List[Optional[float]]:
        return [w.memory for w in self.workers]

    def to_dict(self, samples: bool = True) -> Dict[str, Any]:
        d = super().to_dict(samples)
        d["kind"] = "pool"
        d["workers"] = [w.to_dict(samples) for w in self.workers]
        d["start_skew"] = self.start_skew
        ppt = self.per_process_throughput
        d["summary"]["per_process_throughput"] = ppt.to_dict() if ppt else None
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "PoolMeasurement":
        kwargs = cls._kwargs_from_dict(d)
        kwargs["workers"] = [Measurement.from_dict(w) for w in d.get("workers", [])]
        kwargs["start_skew"] = d.get("start_skew")
        return cls(**kwargs)


# -- what a metric's row reads ---------------------------------------------------------------------
def _plain(values: Any) -> List[float]:
    """Samples as a list of floats (what JSON writes)."""
    return values.tolist() if isinstance(values, array) else list(map(float, values))


def _throughput_samples(m: Measurement) -> Any:
    if m.windows:
        return list(m.windows)
    lat = m._lat()
    return Samples.of(m.batch / lat[lat > 0])


def _worker_throughputs(m: Measurement) -> Optional[List[float]]:
    workers = getattr(m, "workers", None)
    if workers is None:
        return None
    return [w.throughput for w in workers if w.throughput is not None]


#: ``Metric.samples`` -> the per-iteration samples of a measurement (``metrics.SAMPLES``).
SAMPLERS: Dict[str, Callable[[Measurement], Optional[List[float]]]] = {
    # the measurement's own samples, not a copy: every reader converts or copies them anyway
    "latencies": lambda m: m.latencies,
    "device_latencies": lambda m: m.device_latencies if m.device_latencies else None,
    "throughput": _throughput_samples,
    "workers": _worker_throughputs,
}


def _numbers(values: Any) -> Optional[List[float]]:
    if not isinstance(values, (list, tuple)):
        return None
    return [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _quantile(x: "np.ndarray", row: Any) -> Optional[float]:
    return _percentile(x, 100.0 * float(row.quantile if row.quantile is not None else 0.5))


#: ``Metric.reduction`` -> the value of a finite, non-empty sample array.
_REDUCTIONS: Dict[str, Callable[["np.ndarray", Any], Optional[float]]] = {
    "mean": lambda x, row: float(x.mean()),
    "quantile": _quantile,
    "peak": lambda x, row: float(x.max()),
}


def _reduce(samples: Optional[List[float]], row: Any) -> Optional[float]:
    """A plugin metric's value from its samples, by its row's reduction."""
    reduce = _REDUCTIONS.get(row.reduction or "")
    import numpy as np

    x = _view(samples)
    x = x[np.isfinite(x)]
    if reduce is None or not x.size:
        return None
    return reduce(x, row)
