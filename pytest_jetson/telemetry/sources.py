"""The telemetry sources, one row each: how to open one, whether it runs here and why not, and
its place in ``auto``.

``--jetson-telemetry``'s choices, the ``auto`` order and the reasons a bound without power gives
all come from this table. A plugin or conftest adds a source through the
``pytest_jetson_telemetry_sources`` hook (see ``hookspecs``)::

    from pytest_jetson.telemetry import SourceSpec

    def pytest_jetson_telemetry_sources(config):
        return [SourceSpec("labpsu", open=lambda ctx: LabPsuSource("/dev/ttyUSB0"), auto=5)]

An opener is called with a ``SourceContext`` and returns a ``telemetry.base.Source``.

``SOURCES`` holds the built-in rows and never changes; a session's table (``SOURCES.extended(...)``
with the plugins' rows) is kept by the session and passed to ``select.open_source``.

Each row's functions import the source's module when the row is used: every session reads this
table at start-up, most sample one source, and a run without perf tests samples none (the five
modules cost about 25 ms to import).
"""

from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from ..named_table import Registry
from .base import NullSource


@dataclass(frozen=True)
class SourceContext:
    """What an opener may need: the device under test, the session's clock, the filesystem root
    board files are read under (tests point it at a recorded board tree), the seed of simulated
    noise and, for the simulated source, the load it generates."""

    device: Any = None
    clock: Any = None
    root: str = "/"
    seed: int = 0
    workload: Any = None

    @property
    def virtual(self) -> bool:
        return getattr(self.clock, "kind", None) == "virtual"


def _usable(ctx: SourceContext) -> Optional[str]:
    return None


@dataclass(frozen=True)
class SourceSpec:
    """One telemetry source.

    ``available(ctx)``: None when usable here, else why not and the fix. ``auto``: its rank in
    ``auto`` on a real board or host (lower first; None: only when named). ``simulated``: the
    source ``auto`` picks on the simulated clock (real sources are never picked there, and this
    one is never picked elsewhere).
    """

    name: str
    open: Callable[[SourceContext], Any]
    available: Callable[[SourceContext], Optional[str]] = _usable
    auto: Optional[int] = None
    simulated: bool = False
    description: str = ""
    plugin: str = "pytest-jetson"


def _jtop_available(ctx: SourceContext) -> Optional[str]:
    from .jtop import JtopSource

    return JtopSource.probe()


def _open_jtop(ctx: SourceContext) -> Any:
    from .jtop import JtopSource

    return JtopSource()


def _tegrastats_available(ctx: SourceContext) -> Optional[str]:
    from .tegrastats import TegrastatsSource

    return TegrastatsSource.probe()


def _open_tegrastats(ctx: SourceContext) -> Any:
    from .tegrastats import TegrastatsSource

    return TegrastatsSource()


def _sysfs_available(ctx: SourceContext) -> Optional[str]:
    from .sysfs import SysfsSource

    return SysfsSource(root=ctx.root).probe_instance()


def _open_sysfs(ctx: SourceContext) -> Any:
    from .sysfs import SysfsSource

    return SysfsSource(root=ctx.root)


def _nvml_available(ctx: SourceContext) -> Optional[str]:
    from .nvml import NvmlSource

    return NvmlSource.probe()


def _open_nvml(ctx: SourceContext) -> Any:
    from .nvml import NvmlSource

    return NvmlSource()


def _open_host(ctx: SourceContext) -> Any:
    from .host import HostSource

    return HostSource()


def _simulated_available(ctx: SourceContext) -> Optional[str]:
    if not ctx.virtual:
        return ("the simulated source runs on the simulated device's virtual clock; this session "
                "runs real engines (--jetson-backend), so use a real source such as host")
    return None


def _open_simulated(ctx: SourceContext) -> Any:
    from .sim_sensors import SimulatedSource  # numpy: only a session on the virtual clock needs it

    return SimulatedSource(ctx.clock, ctx.workload, seed=ctx.seed)


def _open_none(ctx: SourceContext) -> Any:
    return NullSource()


BUILTIN_SOURCES = (
    SourceSpec("jtop", _open_jtop, _jtop_available, auto=10, description="jetson-stats' jtop service"),
    SourceSpec("tegrastats", _open_tegrastats, _tegrastats_available, auto=20,
               description="the L4T tegrastats tool"),
    SourceSpec("sysfs", _open_sysfs, _sysfs_available, auto=30,
               description="INA3221/INA238 rails, devfreq and thermal zones in sysfs"),
    SourceSpec("nvml", _open_nvml, _nvml_available, auto=40,
               description="NVIDIA's management library (discrete GPUs)"),
    SourceSpec("host", _open_host, auto=90, description="the host's CPU, memory and temperatures (psutil)"),
    SourceSpec("simulated", _open_simulated, _simulated_available, simulated=True,
               description="the simulated board on the virtual clock"),
)

#: the built-in sources; a session's table extends it with the plugins' rows
SOURCES: "Registry[SourceSpec]" = Registry("telemetry source", "--jetson-telemetry", BUILTIN_SOURCES)


def names(sources: "Registry[SourceSpec]" = SOURCES) -> List[str]:
    """What ``--jetson-telemetry`` accepts: auto, every source of the table, none."""
    return ["auto"] + sources.names() + ["none"]


def open_none() -> Any:
    return _open_none(SourceContext())
