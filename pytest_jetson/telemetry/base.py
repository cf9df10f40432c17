"""What every telemetry source shares: one ``Reading`` per sample, and the ``Source`` protocol.

A source is polled by the sampler's thread (``collect``) or, when simulated, asked for a whole
series of virtual time at once (``generate``). Sources import their optional dependency only in
``probe``/``start``, so every module here imports without jetson-stats or nvidia-ml-py.
"""

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from ..errors import TelemetryError


class TelemetryWarning(UserWarning):
    """A source died, stalled or printed lines we could not read; samples so far are kept."""


class SourceDied(TelemetryError):
    """Raised by ``Source.collect`` when the source stopped for good (process exited, service
    stopped). The sampler keeps what it has, marks the gap and warns."""


@dataclass
class Reading:
    """One sample from any source. Units: W, bytes, percent (0..100), MHz, degrees C.
    ``t`` is seconds on the sampler's clock (``time.perf_counter`` or the virtual clock)."""

    t: float
    board_power_w: Optional[float] = None
    rails_w: Dict[str, float] = field(default_factory=dict)
    memory_bytes: Optional[float] = None
    gpu_util: Optional[float] = None
    gpu_clock_mhz: Optional[float] = None
    emc_util: Optional[float] = None
    cpu_util: Optional[float] = None
    temps_c: Dict[str, float] = field(default_factory=dict)
    #: GPU activity, percent of the elapsed time (SMs with a resident block, tensor cores busy,
    #: issue slots used) and of the DRAM's peak bandwidth: Nsight Systems' GPU metrics, or the
    #: simulated board's prediction; None where nothing samples them.
    sm_active: Optional[float] = None
    tensor_active: Optional[float] = None
    issue_active: Optional[float] = None
    dram_util: Optional[float] = None
    #: Reasons the hardware itself reports for slowing down (NVML), empty when none or unknown.
    throttle: List[str] = field(default_factory=list)


class Source:
    """Base of every source. Subclasses set ``name`` and implement ``collect`` (polled, real
    time) or ``generate`` (virtual time, ``virtual = True``)."""

    name = "source"
    virtual = False
    #: What ``memory_bytes`` counts, for reports ("board RAM", "process tree RSS", "GPU memory").
    memory_scope = "board RAM"

    @classmethod
    def probe(cls) -> Optional[str]:
        """None when usable here; else why not, with the fix."""
        return None

    def start(self, interval: float) -> None:
        pass

    def collect(self, now: float) -> List[Reading]:
        """Readings since the last call (polled sources return one, stamped ``now``)."""
        raise NotImplementedError

    def stop(self) -> None:
        pass

    # Optional hooks: the sampler asks the source first, then the device-detection readers.
    def max_gpu_clock_mhz(self) -> Optional[float]:
        return None

    def power_mode(self) -> Optional[str]:
        return None

    def jetson_clocks(self) -> Optional[bool]:
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class NullSource(Source):
    """``none``: sample nothing (telemetry switched off); summaries then hold no figures."""

    name = "none"
    memory_scope = None  # type: ignore[assignment]

    def collect(self, now: float) -> List[Reading]:
        return []
