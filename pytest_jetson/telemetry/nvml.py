"""The ``nvml`` source: a discrete NVIDIA GPU through nvidia-ml-py (module ``pynvml``).

Board power is the GPU's own power reading (the card, not the host). Memory is the GPU memory
in use on the device (all processes). Install with ``pip install 'pytest-jetson[nvml]'``.
"""

from typing import Any, Dict, List, Optional

from ..errors import TelemetryError
from .base import Reading, Source

NVML_MISSING = "nvidia-ml-py not installed: pip install 'pytest-jetson[nvml]'"

# Clock-event reason bits (nvml.h, nvmlClocksThrottleReason*) that mean "slowed down".
_THROTTLE_BITS = {
    0x0000000000000004: "software power cap",
    0x0000000000000008: "hardware slowdown",
    0x0000000000000020: "software thermal slowdown",
    0x0000000000000040: "hardware thermal slowdown",
    0x0000000000000080: "hardware power brake slowdown",
}


def _pynvml() -> Any:
    import pynvml  # optional dependency, imported only when used

    return pynvml


class NvmlSource(Source):
    """Samples GPU ``index``: power, memory used, utilisation (SM and memory), SM clock,
    temperature and the clock-slowdown reasons the driver reports."""

    name = "nvml"
    memory_scope = "GPU memory used"
    power_basis = "NVML GPU power"

    def __init__(self, index: int = 0) -> None:
        self.index = index
        self._nv: Any = None
        self._handle: Any = None
        self._max_clock: Optional[float] = None
        self.gpu_name: Optional[str] = None

    @classmethod
    def probe(cls) -> Optional[str]:
        try:
            nv = _pynvml()
        except ImportError:
            return NVML_MISSING
        try:
            nv.nvmlInit()
        except Exception as exc:
            return f"NVML could not start ({exc}): no NVIDIA driver on this host"
        try:
            if nv.nvmlDeviceGetCount() < 1:
                return "NVML sees no NVIDIA GPU"
        except Exception as exc:
            return f"NVML could not count GPUs ({exc})"
        finally:
            try:
                nv.nvmlShutdown()
            except Exception:
                pass
        return None

    def start(self, interval: float) -> None:
        try:
            self._nv = _pynvml()
        except ImportError as exc:
            raise TelemetryError(f"telemetry source nvml: {NVML_MISSING}") from exc
        try:
            self._nv.nvmlInit()
            self._handle = self._nv.nvmlDeviceGetHandleByIndex(self.index)
        except Exception as exc:
            raise TelemetryError(
                f"telemetry source nvml: cannot open GPU {self.index} ({exc}); check the NVIDIA "
                "driver with nvidia-smi or choose another source"
            ) from exc
        name = self._try(self._nv.nvmlDeviceGetName, self._handle)
        self.gpu_name = name.decode() if isinstance(name, bytes) else name
        clock = self._try(self._nv.nvmlDeviceGetMaxClockInfo, self._handle, self._nv.NVML_CLOCK_SM)
        self._max_clock = None if clock is None else float(clock)

    def _try(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception:
            return None

    def max_gpu_clock_mhz(self) -> Optional[float]:
        return self._max_clock

    def read(self, now: float) -> Reading:
        nv, h = self._nv, self._handle
        power_mw = self._try(nv.nvmlDeviceGetPowerUsage, h)
        mem = self._try(nv.nvmlDeviceGetMemoryInfo, h)
        util = self._try(nv.nvmlDeviceGetUtilizationRates, h)
        clock = self._try(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM)
        temp = self._try(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU)
        reasons_fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        bits = self._try(reasons_fn, h) if reasons_fn is not None else None
        throttle = [text for bit, text in _THROTTLE_BITS.items() if bits and bits & bit]
        temps: Dict[str, float] = {} if temp is None else {"gpu": float(temp)}
        power = None if power_mw is None else power_mw / 1000.0
        return Reading(
            t=now,
            board_power_w=power,
            rails_w={} if power is None else {"GPU": power},
            memory_bytes=None if mem is None else float(mem.used),
            gpu_util=None if util is None else float(util.gpu),
            gpu_clock_mhz=None if clock is None else float(clock),
            emc_util=None if util is None else float(util.memory),
            temps_c=temps,
            throttle=throttle,
        )

    def collect(self, now: float) -> List[Reading]:
        return [self.read(now)]

    def stop(self) -> None:
        if self._nv is not None:
            self._try(self._nv.nvmlShutdown)
            self._nv = None
