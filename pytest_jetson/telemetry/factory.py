"""``TelemetryFactory``: what the ``telemetry`` fixture, ``perf.measure`` and pools hold.

One factory per session (the session context owns it) opens the source once, so the choice and
the reasons for it are the same for every measurement and a simulated board's temperature carries
from one test to the next; it hands out a fresh ``Sampler`` per measured window::

    factory = TelemetryFactory(device, clock, source="auto")
    with factory.sample(interval="50ms") as t:
        ...
    t.summary, t.series
"""

from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from .base import Source
from .sampler import DEFAULT_INTERVAL, Sampler, _detect_reader, parse_interval
from .select import Sources, is_simulated, open_source
from .sources import SOURCES


def _device_attr(device: Any, *names: str) -> Any:
    for holder in (device, getattr(device, "power_mode", None), getattr(device, "profile", None)):
        if holder is None:
            continue
        for n in names:
            value = getattr(holder, n, None)
            if value is not None and not callable(value):
                return value
    return None


class TelemetryFactory:
    """Opens ``source`` ("auto" or a name in ``sources``, the session's table of sources; the
    built-in ``sources.SOURCES`` by default) lazily, once, for ``device`` (detected board or
    simulated profile; anything with ``simulated``, ``power_mode``) and ``clock`` (a ``SimClock``
    for a simulated device)."""

    def __init__(
        self,
        device: Any = None,
        clock: Any = None,
        source: str = "auto",
        interval: Union[str, float, None] = DEFAULT_INTERVAL,
        seed: int = 0,
        workload: Any = None,
        root: str = "/",
        sources: Sources = SOURCES,
    ) -> None:
        self.device = device
        self.clock = clock
        self.source_name = source
        self.interval = parse_interval(interval)
        self.seed = seed
        self.workload = workload
        self.root = root
        self.sources = sources
        self._opened: Optional[Tuple[Source, List[Tuple[str, str]]]] = None
        self._siblings: Dict[str, TelemetryFactory] = {}

    @property
    def simulated(self) -> bool:
        return is_simulated(self.device, self.clock)

    def for_clock(self, clock: Any) -> "TelemetryFactory":
        """The factory that samples an engine running on ``clock``: this one for a clock of the
        session's kind (or of no known kind), else one with the same settings on that clock,
        made once. The source follows the engine's clock, not the session's: an engine on the
        wall clock in a session on the simulated device (whose clock is virtual) is sampled by
        a real source, never the simulated one, whose readings follow the virtual clock."""
        kind = getattr(clock, "kind", None)
        if kind is None or kind == getattr(self.clock, "kind", None):
            return self
        sibling = self._siblings.get(kind)
        if sibling is None:
            sibling = self._siblings[kind] = TelemetryFactory(
                self.device, clock, source=self.source_name, interval=self.interval, seed=self.seed,
                workload=self.workload, root=self.root, sources=self.sources)
        return sibling

    def open(self) -> Tuple[Source, List[Tuple[str, str]]]:
        if self._opened is None:
            self._opened = open_source(
                self.source_name, device=self.device, clock=self.clock, workload=self.workload,
                root=self.root, seed=self.seed, sources=self.sources,
            )
        return self._opened

    @property
    def source(self) -> Source:
        return self.open()[0]

    @property
    def tried(self) -> List[Tuple[str, str]]:
        return list(self.open()[1])

    def _readers(self) -> Tuple[Callable[[], Any], Callable[[], Any]]:
        if self.simulated:
            device = self.device
            return (lambda: _device_attr(device, "power_mode")), (lambda: _device_attr(device, "jetson_clocks"))
        return _detect_reader("read_power_mode"), _detect_reader("read_jetson_clocks")

    def sample(
        self,
        interval: Union[str, float, None] = None,
        items: Optional[int] = None,
        workload: Any = None,
    ) -> Sampler:
        """A new ``Sampler`` on the session's source (use it as a context manager). For a
        simulated device, ``workload`` (a Prediction) is the load for the whole window; or call
        ``sampler.set_load(workload, t_start, t_end)`` inside the window."""
        source, tried = self.open()
        mode_reader, clocks_reader = self._readers()
        sampler = Sampler(
            source,
            interval=self.interval if interval is None else interval,
            clock=self.clock,
            items=items,
            tried=tried,
            power_mode_reader=mode_reader,
            jetson_clocks_reader=clocks_reader,
            max_gpu_clock_mhz=_device_attr(self.device, "max_gpu_clock_mhz", "gpu_max_mhz"),
            workload=workload,
        )
        return sampler
