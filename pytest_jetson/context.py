"""One test session's shared state: settings, the device, its clock and the default backend.

Built once by the plugin (or by a script) and handed to every engine, pool and sampler, so all of
them agree on the device and, on a simulated device, share one virtual clock.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from .clock import SimClock, WallClock
from .devices.device import Device
from .settings import Settings


@dataclass
class Context:
    settings: Settings
    device: Device
    clock: Any = None
    backend: str = "simulated"
    engines: Dict[Any, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.clock is None:
            self.clock = SimClock() if self.backend == "simulated" else WallClock()

    @property
    def seed(self) -> int:
        return self.settings.seed

    @property
    def simulated(self) -> bool:
        return self.backend == "simulated"


def default_backend(device: Device, requested: Optional[str]) -> str:
    """The backend a session uses: the option if given, else TensorRT on a board, else simulated."""
    if requested:
        return requested
    return "simulated" if device.simulated else "tensorrt"
