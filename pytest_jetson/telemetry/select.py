"""Choosing a telemetry source: the one asked for, or for ``auto`` the best one this machine has.

``auto`` follows the sources' ranks in ``sources.SOURCES`` (jtop > tegrastats > sysfs > nvml >
host on a board or host); on the simulated clock it is the simulated source. Every better source
that was skipped is listed in ``tried`` with the reason and the fix, so a bound that needs power
can say why it has none.
"""

from typing import Any, List, Optional, Tuple

from ..errors import ConfigError, TelemetryError
from ..named_table import Registry
from .base import Source
from .sources import SOURCES, SourceContext, SourceSpec, open_none

Tried = List[Tuple[str, str]]
Sources = Registry[SourceSpec]


def is_simulated(device: Any = None, clock: Any = None) -> bool:
    """Whether telemetry must be simulated: the session runs on the virtual clock (a simulated
    device measured by simulated engines). A simulated device measured by real engines (a host
    backend) is sampled for real."""
    if clock is not None:
        return getattr(clock, "kind", None) == "virtual"
    return bool(getattr(device, "simulated", False))


def check_name(name: Optional[str], sources: Sources = SOURCES) -> str:
    """``name`` as ``--jetson-telemetry`` takes it: auto, none or a source of ``sources`` (a
    ConfigError lists them otherwise)."""
    name = (name or "auto").strip().lower()
    if name not in ("auto", "none") and name not in sources:
        sources.get(name)  # raises ConfigError with the known names
    return name


def unavailable(name: str, ctx: SourceContext, sources: Sources = SOURCES) -> Optional[str]:
    """Why the named source cannot run here (None when it can)."""
    if name in ("auto", "none"):
        return None
    return sources.get(name).available(ctx)


def open_source(name: str = "auto", device: Any = None, clock: Any = None, workload: Any = None,
                root: str = "/", seed: int = 0, sources: Sources = SOURCES) -> Tuple[Source, Tried]:
    """The source to sample from ``sources`` (the session's table; the built-in one by default),
    and ``tried``: (name, reason) for each better source skipped."""
    name = check_name(name, sources)
    ctx = SourceContext(device=device, clock=clock, root=root, seed=seed, workload=workload)
    if name == "none":
        return open_none(), []
    if name != "auto":
        spec = sources.get(name)
        why = spec.available(ctx)
        if why:
            raise TelemetryError(f"telemetry source {name} is not available here: {why}; or use source 'auto'")
        return spec.open(ctx), []
    if is_simulated(device, clock):
        for spec in sources:
            if spec.simulated and spec.available(ctx) is None:
                return spec.open(ctx), []
        raise TelemetryError("telemetry: no simulated source is registered for the virtual clock")
    tried: Tried = []
    ranked = sorted((s for s in sources if s.auto is not None and not s.simulated), key=lambda s: s.auto)
    for spec in ranked:
        why = spec.available(ctx)
        if why is None:
            return spec.open(ctx), tried
        tried.append((spec.name, why))
    raise ConfigError("telemetry: no source is available here; "
                      + "; ".join(f"{n}: {w}" for n, w in tried))
