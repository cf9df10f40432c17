"""What the board did over one sampled window, in the figures bounds and reports use.

``TelemetrySummary`` is what a ``Measurement`` carries as ``telemetry``: ``power_mean_w``,
``power_peak_w``, ``energy_j``, ``memory_peak_bytes``, ``gpu_util_mean`` and
``temperature_max_c`` back the ``power``, ``power_peak``, ``energy``, ``memory``, ``gpu_util``
and ``temperature`` metrics; ``sm_active_mean``, ``tensor_active_mean``, ``issue_active_mean``
and ``dram_util_mean`` the GPU activity metrics (``sm_active``, ``tensor_active``,
``issue_active``, ``dram_util``). Every figure is None when the source did not measure it.
"""

import copy
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .series import ACTIVITY, Series

#: A loaded sample: GPU utilisation at or above this (percent).
LOADED_UTIL_PCT = 50.0
#: The GPU clock counts as throttled below this fraction of the mode's maximum while loaded.
CLOCK_THROTTLE_FRACTION = 0.95
#: Without a known trip point, a sensor this hot counts as "near its trip point" (Jetson modules
#: begin software throttling in the high 90s C; see the platform power guides).
DEFAULT_TRIP_C = 97.0
TRIP_MARGIN_C = 5.0
#: Two samples further apart than this many intervals mark a gap in the series.
GAP_INTERVALS = 3.0


def _f(x: Any) -> Optional[float]:
    if x is None:
        return None
    x = float(x)
    return x if np.isfinite(x) else None


@dataclass
class TelemetrySummary:
    """The summary of one sampled window. Times in s, power in W, energy in J, memory in bytes,
    utilisation in percent (0..100), clocks in MHz, temperatures in degrees C."""

    source: str = "none"
    tried: List[Tuple[str, str]] = field(default_factory=list)
    interval: Optional[float] = None
    samples: int = 0
    duration: Optional[float] = None
    power_mean_w: Optional[float] = None
    power_peak_w: Optional[float] = None
    #: What the board power is: a rail's name ("VDD_IN"), "sum of rails", "NVML", "simulated".
    power_basis: Optional[str] = None
    rails: Dict[str, Dict[str, float]] = field(default_factory=dict)
    energy_j: Optional[float] = None
    items: Optional[int] = None
    energy_per_item_j: Optional[float] = None
    memory_peak_bytes: Optional[float] = None
    memory_scope: Optional[str] = None
    gpu_util_mean: Optional[float] = None
    emc_util_mean: Optional[float] = None
    cpu_util_mean: Optional[float] = None
    sm_active_mean: Optional[float] = None
    tensor_active_mean: Optional[float] = None
    issue_active_mean: Optional[float] = None
    dram_util_mean: Optional[float] = None
    temperature_max_c: Optional[float] = None
    temperatures_max_c: Dict[str, float] = field(default_factory=dict)
    gpu_clock_min_mhz: Optional[float] = None
    gpu_clock_mean_mhz: Optional[float] = None
    gpu_clock_max_mode_mhz: Optional[float] = None
    throttled: bool = False
    throttle_reasons: List[str] = field(default_factory=list)
    power_mode_start: Optional[str] = None
    power_mode_end: Optional[str] = None
    jetson_clocks_start: Optional[bool] = None
    jetson_clocks_end: Optional[bool] = None
    mode_changed: bool = False
    gaps: List[Tuple[float, float]] = field(default_factory=list)
    malformed_lines: int = 0
    warnings: List[str] = field(default_factory=list)
    #: The sampled ``Series`` (for plots), in memory only: not part of ``to_dict``.
    series: Any = field(default=None, repr=False, compare=False)

    def explain_missing(self, metric: str = "power") -> str:
        """Why a metric has no value: the source in use and why each better one was skipped.
        What a power/energy bound says when it cannot be checked."""
        lines = [f"no {metric} reading: telemetry source {self.source!r} does not measure {metric}"]
        if self.samples == 0:
            lines[0] = f"no {metric} reading: telemetry source {self.source!r} recorded no samples"
        for name, reason in self.tried:
            lines.append(f"  tried {name}: {reason}")
        if not self.tried:
            lines.append("  (no better source was tried)")
        return "\n".join(lines)

    # -- JSON ------------------------------------------------------------------------------
    def to_dict(self) -> Dict[str, Any]:
        d = {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self) if f.name != "series"}
        d["tried"] = [list(x) for x in self.tried]
        d["gaps"] = [list(x) for x in self.gaps]
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "TelemetrySummary":
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__ and k != "series"}
        known["tried"] = [tuple(x) for x in known.get("tried", [])]
        known["gaps"] = [tuple(float(v) for v in x) for x in known.get("gaps", [])]
        return cls(**known)


def _mean(a: np.ndarray) -> Optional[float]:
    a = a[np.isfinite(a)]
    return float(a.mean()) if a.size else None


def _max(a: np.ndarray) -> Optional[float]:
    a = a[np.isfinite(a)]
    return float(a.max()) if a.size else None


def _trapezoid(y: np.ndarray, t: np.ndarray) -> Optional[float]:
    ok = np.isfinite(y)
    y, t = y[ok], t[ok]
    if y.size < 2:
        return None
    return float(np.sum((y[1:] + y[:-1]) * np.diff(t)) / 2.0)


def find_gaps(t: np.ndarray, interval: Optional[float]) -> List[Tuple[float, float]]:
    if interval is None or interval <= 0 or t.size < 2:
        return []
    d = np.diff(t)
    idx = np.nonzero(d > GAP_INTERVALS * interval)[0]
    return [(float(t[i]), float(t[i + 1])) for i in idx]


def summarize(
    series: Series,
    source: str,
    interval: Optional[float] = None,
    tried: Sequence[Tuple[str, str]] = (),
    items: Optional[int] = None,
    start: Optional[float] = None,
    end: Optional[float] = None,
    power_basis: Optional[str] = None,
    memory_scope: Optional[str] = None,
    max_gpu_clock_mhz: Optional[float] = None,
    trip_points_c: Optional[Dict[str, float]] = None,
    power_mode: Tuple[Optional[str], Optional[str]] = (None, None),
    jetson_clocks: Tuple[Optional[bool], Optional[bool]] = (None, None),
    gaps: Sequence[Tuple[float, float]] = (),
    malformed_lines: int = 0,
    warnings: Sequence[str] = (),
) -> TelemetrySummary:
    """Summarise ``series``. ``start``/``end`` bound the window (default: first/last sample);
    ``max_gpu_clock_mhz`` is the power mode's GPU maximum (for throttling); ``trip_points_c``
    maps sensor name to its trip temperature (default ``DEFAULT_TRIP_C`` for every sensor)."""
    t = series.t
    s = TelemetrySummary(source=source, tried=[tuple(x) for x in tried], interval=interval)
    s.samples = len(series)
    s.malformed_lines = int(malformed_lines)
    s.warnings = list(warnings)
    _configuration(s, power_mode, jetson_clocks)
    t0 = start if start is not None else (float(t[0]) if t.size else None)
    t1 = end if end is not None else (float(t[-1]) if t.size else None)
    if t0 is not None and t1 is not None:
        s.duration = max(0.0, t1 - t0)
    all_gaps = list(gaps) + find_gaps(t, interval)
    s.gaps = sorted({(float(a), float(b)) for a, b in all_gaps})
    s.items = items
    if not t.size:
        return s
    _power(s, series, power_basis, items)
    s.memory_peak_bytes = _max(series.memory_bytes)
    if s.memory_peak_bytes is not None:
        s.memory_scope = memory_scope
    s.gpu_util_mean = _mean(series.gpu_util)
    s.emc_util_mean = _mean(series.emc_util)
    s.cpu_util_mean = _mean(series.cpu_util)
    for name in ACTIVITY:
        col = getattr(series, name)
        # a mean over part of the window would be another figure: all samples or none
        setattr(s, f"{name}_mean", _mean(col) if np.isfinite(col).all() else None)
    _temperatures(s, series)
    loaded = _clocks(s, series, max_gpu_clock_mhz)
    s.throttle_reasons = (_clock_throttle(series, loaded, max_gpu_clock_mhz)
                          + _thermal_throttle(s.temperatures_max_c, trip_points_c)
                          + _reported_throttle(series))
    s.throttled = bool(s.throttle_reasons)
    if s.gaps:
        s.warnings.append(
            f"{len(s.gaps)} gap(s) in the telemetry series (longest "
            f"{max(b - a for a, b in s.gaps):.3g} s); energy is interpolated across them"
        )
    return s


def _changed(pair: Tuple[Any, Any]) -> bool:
    return pair[0] is not None and pair[1] is not None and pair[0] != pair[1]


def _configuration(s: TelemetrySummary, power_mode: Tuple[Optional[str], Optional[str]],
                   jetson_clocks: Tuple[Optional[bool], Optional[bool]]) -> None:
    """The power mode and jetson_clocks at both ends of the window; a warning if either changed."""
    s.power_mode_start, s.power_mode_end = power_mode
    s.jetson_clocks_start, s.jetson_clocks_end = jetson_clocks
    s.mode_changed = _changed(power_mode) or _changed(jetson_clocks)
    if s.mode_changed:
        s.warnings.append(
            f"power mode or jetson_clocks changed during the run: mode {power_mode[0]} -> {power_mode[1]}, "
            f"jetson_clocks {jetson_clocks[0]} -> {jetson_clocks[1]}; figures mix two configurations"
        )


def _power(s: TelemetrySummary, series: Series, power_basis: Optional[str], items: Optional[int]) -> None:
    """Board power (time-weighted mean, peak), energy (per item too) and each rail's mean and peak."""
    t = series.t
    power = series.board_power_w
    read = np.isfinite(power)
    if read.any():
        s.power_basis = power_basis
        s.power_peak_w = _max(power)
        s.energy_j = _trapezoid(power, t)
        at = t[read]
        span = float(at[-1] - at[0])
        # Time-weighted mean, so uneven sample spacing does not bias it.
        s.power_mean_w = s.energy_j / span if s.energy_j is not None and span > 0 else _mean(power)
        if items and s.energy_j is not None and items > 0:
            s.energy_per_item_j = s.energy_j / items
    for name, col in series.rails_w.items():
        mean, peak = _mean(col), _max(col)
        if mean is not None and peak is not None:
            s.rails[name] = {"mean_w": mean, "peak_w": peak}


def _temperatures(s: TelemetrySummary, series: Series) -> None:
    for name, col in series.temps_c.items():
        peak = _max(col)
        if peak is not None:
            s.temperatures_max_c[name] = peak
    if s.temperatures_max_c:
        s.temperature_max_c = max(s.temperatures_max_c.values())


def _clocks(s: TelemetrySummary, series: Series, max_gpu_clock_mhz: Optional[float]) -> np.ndarray:
    """GPU clock minimum and mean over the loaded samples (all samples if none was loaded);
    returns which samples were loaded."""
    # Clocks only mean something while the GPU works: an idle GPU is clocked down on purpose.
    clock = series.gpu_clock_mhz
    util = series.gpu_util
    loaded = np.isfinite(util) & (util >= LOADED_UTIL_PCT) & np.isfinite(clock)
    basis = loaded if loaded.any() else np.isfinite(clock)
    if basis.any():
        s.gpu_clock_min_mhz = float(clock[basis].min())
        s.gpu_clock_mean_mhz = float(clock[basis].mean())
    s.gpu_clock_max_mode_mhz = _f(max_gpu_clock_mhz)
    return loaded


def _clock_throttle(series: Series, loaded: np.ndarray, max_gpu_clock_mhz: Optional[float]) -> List[str]:
    if not (max_gpu_clock_mhz and loaded.any()):
        return []
    clock = series.gpu_clock_mhz
    low = float(clock[loaded].min())
    if low >= CLOCK_THROTTLE_FRACTION * max_gpu_clock_mhz:
        return []
    n = int(np.count_nonzero(clock[loaded] < CLOCK_THROTTLE_FRACTION * max_gpu_clock_mhz))
    return [f"GPU clock fell to {low:.0f} MHz while loaded, below the mode's maximum of "
            f"{max_gpu_clock_mhz:.0f} MHz ({n} of {int(loaded.sum())} loaded samples)"]


def _thermal_throttle(temperatures: Dict[str, float], trip_points_c: Optional[Dict[str, float]]) -> List[str]:
    reasons = []
    for name, peak in temperatures.items():
        trip = (trip_points_c or {}).get(name, DEFAULT_TRIP_C)
        if peak >= trip - TRIP_MARGIN_C:
            reasons.append(f"sensor {name} reached {peak:.1f} C, within {TRIP_MARGIN_C:.0f} C of its trip point {trip:.0f} C")
    return reasons


def _reported_throttle(series: Series) -> List[str]:
    """What the hardware said slowed it down (NVML), each reason once in order of first report."""
    reasons: List[str] = []
    seen = set()
    for row in series.throttle:
        for r in row:
            if r not in seen:
                seen.add(r)
                reasons.append(f"hardware reported: {r}")
    return reasons
