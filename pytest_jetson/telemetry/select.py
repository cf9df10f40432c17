"""Choosing a telemetry source: the best one this machine has, or the one asked for.

``auto`` order: jtop (service running) > tegrastats (binary on PATH) > sysfs (INA3221 rails) >
nvml (nvidia-ml-py and a GPU) > host (always). On a simulated device the source is
``simulated``. Every better source that was skipped is listed in ``tried`` with the reason and
the fix, so a bound that needs power can say why it has none.
"""

from typing import Any, List, Optional, Tuple

from ..errors import ConfigError, TelemetryError
from .base import Source

SOURCES = ("jtop", "tegrastats", "sysfs", "nvml", "host", "simulated", "none")
AUTO_ORDER = ("jtop", "tegrastats", "sysfs", "nvml", "host")

Tried = List[Tuple[str, str]]


def is_simulated(device: Any = None, clock: Any = None) -> bool:
    if device is not None and bool(getattr(device, "simulated", False)):
        return True
    return device is None and getattr(clock, "kind", None) == "virtual"


def _build(name: str, clock: Any, workload: Any, root: str, seed: int) -> Tuple[Optional[Source], Optional[str]]:
    """(source, None) when usable, else (None, why not)."""
    if name == "jtop":
        from .jtop import JtopSource

        why = JtopSource.probe()
        return (None, why) if why else (JtopSource(), None)
    if name == "tegrastats":
        from .tegrastats import TegrastatsSource

        why = TegrastatsSource.probe()
        return (None, why) if why else (TegrastatsSource(), None)
    if name == "sysfs":
        from .sysfs import SysfsSource

        src = SysfsSource(root=root)
        why = src.probe_instance()
        return (None, why) if why else (src, None)
    if name == "nvml":
        from .nvml import NvmlSource

        why = NvmlSource.probe()
        return (None, why) if why else (NvmlSource(), None)
    if name == "host":
        from .host import HostSource

        return HostSource(), None
    if name == "none":
        from .base import NullSource

        return NullSource(), None
    if name == "simulated":
        from .simulated import SimulatedSource

        if clock is None or getattr(clock, "kind", None) != "virtual":
            return None, "the simulated source needs the simulated device's virtual clock (SimClock)"
        return SimulatedSource(clock, workload, seed=seed), None
    raise ConfigError(f"telemetry source {name!r} is unknown; choose one of: auto, {', '.join(SOURCES)}")


def open_source(
    name: str = "auto",
    device: Any = None,
    clock: Any = None,
    workload: Any = None,
    root: str = "/",
    seed: int = 0,
) -> Tuple[Source, Tried]:
    """The source to sample, and ``tried``: (name, reason) for each better source skipped."""
    name = (name or "auto").strip().lower()
    if name == "auto":
        if is_simulated(device, clock):
            src, why = _build("simulated", clock, workload, root, seed)
            if src is None:
                raise TelemetryError(f"telemetry: {why}")
            return src, []
        tried: Tried = []
        for candidate in AUTO_ORDER:
            src, why = _build(candidate, clock, workload, root, seed)
            if src is not None:
                return src, tried
            tried.append((candidate, why or "unavailable"))
        raise TelemetryError("telemetry: no source available")  # host always is; defensive
    if name not in SOURCES:
        raise ConfigError(f"telemetry source {name!r} is unknown; choose one of: auto, {', '.join(SOURCES)}")
    src, why = _build(name, clock, workload, root, seed)
    if src is None:
        raise TelemetryError(f"telemetry source {name} is not available here: {why}; or use source 'auto'")
    return src, []
