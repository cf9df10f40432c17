"""One test session's shared state: settings, the device, the backend, the clock, the seed, the
engines built so far and the telemetry factory.

Built once by the plugin (or by a script: ``Context.create(Settings(), device)``) and handed to
every engine, pool and sampler, so all of them agree on the device and, on a simulated device,
share one virtual clock and one simulated board whose temperature carries from test to test. It
carries the session's tables of backends and telemetry sources (the built-in ones plus what
plugins add) to whoever looks a name up.

Where the numbers come from decides where the baselines live (``baseline_id``): a board or its
simulation (``baselines/orin-nano-8gb/``), the board with a backend other than its own
(``baselines/orin-nano-8gb-onnxruntime/``), or, with real engines and no board, the host's CPU
(``baselines/host-<cpu>-<backend>/``). So simulated and host baselines of one suite coexist.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from .clock import SimClock, WallClock
from .devices.device import Device
from .devices.host_cpu import Host
from .engines.backends import BACKENDS, default_backend
from .named_table import Registry
from .provenance import identity, machine_info
from .settings import Settings
from .telemetry.sources import SOURCES, SourceContext


@dataclass
class Context:
    settings: Settings
    device: Device
    #: the engine backend's row (``engines.backends.Backend``)
    backend_spec: Any
    clock: Any = None
    #: engines built in this session, by the arguments that built them
    engines: Dict[Tuple[Any, ...], Any] = field(default_factory=dict)
    #: fingerprint fields contributed by plugins (``pytest_jetson_fingerprint``)
    extra_fingerprint: Dict[str, Any] = field(default_factory=dict)
    #: the machine real engines run on when there is no board (None on a board or simulated)
    host: Optional[Host] = None
    #: the session's engine backends (``engines.backends.Backend`` rows by name)
    backends: Registry = field(default=BACKENDS, repr=False)
    #: the session's telemetry sources (``telemetry.sources.SourceSpec`` rows by name)
    sources: Registry = field(default=SOURCES, repr=False)
    #: hostname and board serial (``provenance.machine_info``), read for real runs: fingerprint
    #: fields that tell boards of one model apart, never compared by the gate
    machine: Optional[Dict[str, Any]] = None
    _telemetry: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.clock is None:
            self.clock = SimClock() if self.backend_spec.simulated else WallClock()
        if self.host is None and self.device.simulated and not self.backend_spec.simulated:
            self.host = Host.detect()
        if self.machine is None and not self.backend_spec.simulated:
            self.machine = machine_info()

    @classmethod
    def create(cls, settings: Settings, device: Device, backend: Optional[str] = None,
               extra_fingerprint: Optional[Dict[str, Any]] = None, backends: Optional[Registry] = None,
               sources: Optional[Registry] = None) -> "Context":
        """The session of ``settings`` on ``device``; ``backends`` and ``sources``: the session's
        tables (the built-in ones when not given)."""
        backends = BACKENDS if backends is None else backends
        name = backend or settings.backend
        spec = backends.get(name) if name else default_backend(device)
        return cls(settings=settings, device=device, backend_spec=spec,
                   extra_fingerprint=dict(extra_fingerprint or {}), backends=backends,
                   sources=SOURCES if sources is None else sources)

    @property
    def backend(self) -> str:
        return self.backend_spec.name

    @property
    def seed(self) -> int:
        return self.settings.seed

    @property
    def simulated(self) -> bool:
        """Whether the session's numbers come from the simulator (its engines run on the
        virtual clock)."""
        return bool(self.backend_spec.simulated)

    @property
    def backend_version(self) -> Optional[str]:
        return self.backend_spec.version()

    @property
    def baseline_id(self) -> str:
        """The directory under the baselines root that this session's numbers belong to."""
        if self.host is not None:
            return f"{self.host.id}-{self.backend}"
        if self.device.simulated or self.backend_spec is default_backend(self.device):
            return self.device.id
        return f"{self.device.id}-{self.backend}"

    def fingerprint(self) -> Dict[str, Any]:
        """What a baseline must share with a run: the device's fingerprint (the host's, with real
        engines and no board), the backend's version, and what plugins add."""
        fp = self.device.fingerprint()
        if self.host is not None:
            fp.update(power_mode=None, simulated=False)
            fp.update(self.host.fingerprint())
        version = self.backend_version
        if version:
            fp["backend_version"] = version
        fp.update(identity(self.machine or {}))
        fp.update(self.extra_fingerprint)
        return fp

    def compared_keys(self) -> Tuple[str, ...]:
        """Fingerprint fields beyond the gate's own that a baseline must match."""
        keys = ["backend_version"]
        if self.host is not None:
            keys += ["cpu", "cores"]
        return tuple(keys) + tuple(self.extra_fingerprint)

    def describe(self) -> str:
        """Where the numbers come from, in a line: the board or its simulation, or the host."""
        title = self.backend_spec.title or f"the {self.backend} backend"
        version = f" {self.backend_version}" if self.backend_version else ""
        if self.host is not None:
            return f"{title}{version} on the host CPU: {self.host.describe()}"
        d = self.device
        text = f"{d.name} ({'simulated' if d.simulated else 'real'}) · power mode {d.power_mode.name}"
        if self.backend_spec is not default_backend(d):
            text += f" · {title}{version}"
        return text

    def header_lines(self) -> List[str]:
        """The lines pytest's header shows for this session."""
        if self.host is not None:
            title = self.backend_spec.title or f"the {self.backend} backend"
            version = f" {self.backend_version}" if self.backend_version else ""
            return [f"jetson: {title}{version} on the host CPU ({self.host.describe()}), no Jetson board",
                    f"jetson: baselines in {self.settings.baselines}/{self.baseline_id}/; jetson marks "
                    f"as on {self.device.name}"]
        line = self.device.header_line()
        if self.backend_spec is not default_backend(self.device):
            title = self.backend_spec.title or self.backend
            version = f" {self.backend_version}" if self.backend_version else ""
            line += f" · backend {title}{version}"
        if self.baseline_id != self.device.id:
            line += f" · baselines in {self.settings.baselines}/{self.baseline_id}/"
        return [line]

    @property
    def telemetry(self) -> Any:
        """The session's telemetry factory (None with ``--jetson-telemetry none``): the source is
        chosen and opened once, on first use."""
        if self.settings.telemetry == "none":
            return None
        if self._telemetry is None:
            from .telemetry.factory import TelemetryFactory  # numpy: a session that measures needs it

            source = self.settings.telemetry
            if source == "auto" and self.host is not None:
                source = self._host_source()
            self._telemetry = TelemetryFactory(
                self.device, self.clock, source=source,
                interval=self.settings.telemetry_interval, seed=self.seed, sources=self.sources,
            )
        return self._telemetry

    def _host_source(self) -> str:
        """``auto`` with real engines on a host: a source a plugin adds (a lab power supply)
        when one is available, else the host's own (CPU and memory of the process tree). The
        built-in board and GPU sources would measure something the engines do not use; name one
        with --jetson-telemetry to use it anyway."""
        sctx = SourceContext(device=self.device, clock=self.clock, seed=self.seed)
        added = sorted((s for s in self.sources if s.auto is not None and not s.simulated
                        and s.plugin != "pytest-jetson"), key=lambda s: s.auto)
        for spec in added:
            if spec.available(sctx) is None:
                return spec.name
        return "host"

    def engine(self, key: Tuple[Any, ...], build: Callable[[], Any]) -> Any:
        """The engine cached under ``key``, built by ``build()`` the first time (or after it was
        closed)."""
        engine = self.engines.get(key)
        if engine is None or getattr(engine, "closed", False):
            engine = build()
            self.engines[key] = engine
        return engine

    def close(self) -> None:
        """Close every engine of the session (the CUDA context goes last, with the process)."""
        engines, self.engines = self.engines, {}
        errors = []
        for engine in engines.values():
            try:
                engine.close()
            except Exception as exc:  # one engine's teardown must not keep the others open
                errors.append(exc)
        if errors:
            raise errors[0]
