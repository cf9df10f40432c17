"""One test session's shared state: settings, the device, the backend, the clock, the seed, the
engines built so far and the telemetry factory.

Built once by the plugin (or by a script: ``Context.create(Settings(), device)``) and handed to
every engine, pool and sampler, so all of them agree on the device and, on a simulated device,
share one virtual clock and one simulated board whose temperature carries from test to test.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Tuple

from .clock import SimClock, WallClock
from .devices.device import Device
from .settings import Settings


@dataclass
class Context:
    settings: Settings
    device: Device
    #: the engine backend's row (``engines.registry.Backend``)
    backend_spec: Any
    clock: Any = None
    #: engines built in this session, by the arguments that built them
    engines: Dict[Tuple[Any, ...], Any] = field(default_factory=dict)
    #: fingerprint fields contributed by plugins (``pytest_jetson_fingerprint``)
    extra_fingerprint: Dict[str, Any] = field(default_factory=dict)
    _telemetry: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.clock is None:
            self.clock = SimClock() if self.backend_spec.simulated else WallClock()

    @classmethod
    def create(cls, settings: Settings, device: Device, backend: Optional[str] = None,
               extra_fingerprint: Optional[Dict[str, Any]] = None) -> "Context":
        from .engines.registry import BACKENDS, default_backend

        name = backend or settings.backend
        spec = BACKENDS.get(name) if name else default_backend(device)
        return cls(settings=settings, device=device, backend_spec=spec,
                   extra_fingerprint=dict(extra_fingerprint or {}))

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

    def fingerprint(self) -> Dict[str, Any]:
        """The device's fingerprint plus what plugins add: what a baseline must share with a run."""
        fp = self.device.fingerprint()
        fp.update(self.extra_fingerprint)
        return fp

    @property
    def telemetry(self) -> Any:
        """The session's telemetry factory (None with ``--jetson-telemetry none``): the source is
        chosen and opened once, on first use."""
        if self.settings.telemetry == "none":
            return None
        if self._telemetry is None:
            from .telemetry.factory import TelemetryFactory

            self._telemetry = TelemetryFactory(
                self.device, self.clock, source=self.settings.telemetry,
                interval=self.settings.telemetry_interval, seed=self.seed,
            )
        return self._telemetry

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
