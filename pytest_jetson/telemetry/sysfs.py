"""The ``sysfs`` source: INA3221 power rails, GPU load and clock, thermal zones and memory read
straight from the kernel, for boards with neither jtop nor tegrastats.

Two INA3221 layouts exist: the hwmon driver of JetPack 5 and later
(``/sys/bus/i2c/drivers/ina3221/*/hwmon/hwmon*/in<N>_label``, ``in<N>_input`` in mV,
``curr<N>_input`` in mA) and the iio driver of JetPack 4
(``/sys/bus/i2c/drivers/ina3221x/*/iio:device*/rail_name_<k>``, ``in_power<k>_input`` in mW).
Every path hangs off ``root`` (default ``/``) so tests can point it at a fake tree.
"""

import glob
import os
from typing import Dict, List, Optional, Tuple

from .base import Reading, Source
from .tegrastats import BOARD_RAILS, UNCONNECTED_RAILS

_GPU_LOAD = (
    "sys/devices/gpu.0/load",
    "sys/devices/platform/gpu.0/load",
    "sys/devices/platform/bus@0/17000000.gpu/load",
    "sys/devices/platform/17000000.gpu/load",
    "sys/devices/platform/17000000.gv11b/load",
    "sys/devices/platform/57000000.gpu/load",
)
_GPU_DEVFREQ = ("sys/class/devfreq/*.gpu", "sys/class/devfreq/*.gv11b", "sys/class/devfreq/*.gp10b", "sys/class/devfreq/gpu-gpc-0")
_TEMP_PLACEHOLDER_MC = -100000


def _read(path: str) -> Optional[str]:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _read_float(path: str) -> Optional[float]:
    text = _read(path)
    if text is None:
        return None
    try:
        return float(text.split()[0])
    except (ValueError, IndexError):
        return None


class SysfsSource(Source):
    """Reads the kernel's files under ``root`` on every sample."""

    name = "sysfs"
    memory_scope = "board RAM"

    def __init__(self, root: str = "/") -> None:
        self.root = root
        self._rails: Optional[List[Tuple[str, str, Optional[str], Optional[str]]]] = None
        self._gpu_load: Optional[str] = None
        self._devfreq: Optional[str] = None
        self._zones: List[Tuple[str, str]] = []
        self.power_basis: Optional[str] = None
        self._discovered = False

    def _p(self, rel: str) -> str:
        return os.path.join(self.root, rel)

    # -- discovery -----------------------------------------------------------------------------
    def find_rails(self) -> List[Tuple[str, str, Optional[str], Optional[str]]]:
        """(name, kind, path a, path b): kind "hwmon" (a: mV, b: mA) or "iio" (a: mW)."""
        rails = []
        for hw in sorted(glob.glob(self._p("sys/bus/i2c/drivers/ina3221/*/hwmon/hwmon*"))):
            for n in (1, 2, 3):
                label = _read(os.path.join(hw, f"in{n}_label"))
                volt, curr = os.path.join(hw, f"in{n}_input"), os.path.join(hw, f"curr{n}_input")
                if label and label not in UNCONNECTED_RAILS and os.path.exists(volt) and os.path.exists(curr):
                    rails.append((label, "hwmon", volt, curr))
        for dev in sorted(glob.glob(self._p("sys/bus/i2c/drivers/ina3221x/*/iio:device*"))):
            for k in (0, 1, 2):
                label = _read(os.path.join(dev, f"rail_name_{k}"))
                power = os.path.join(dev, f"in_power{k}_input")
                if label and label not in UNCONNECTED_RAILS and os.path.exists(power):
                    rails.append((label, "iio", power, None))
        return rails

    def _discover(self) -> None:
        if self._discovered:
            return
        self._discovered = True
        self._rails = self.find_rails()
        names = [r[0] for r in self._rails]
        board = next((b for b in BOARD_RAILS if b in names), None)
        self.power_basis = board or ("sum of rails" if names else None)
        self._gpu_load = next((self._p(p) for p in _GPU_LOAD if os.path.exists(self._p(p))), None)
        for pattern in _GPU_DEVFREQ:
            found = sorted(glob.glob(self._p(pattern)))
            if found:
                self._devfreq = found[0]
                break
        for zone in sorted(glob.glob(self._p("sys/class/thermal/thermal_zone*"))):
            kind = _read(os.path.join(zone, "type"))
            if kind:
                self._zones.append((kind, os.path.join(zone, "temp")))

    def probe_instance(self) -> Optional[str]:
        self._discover()
        if not self._rails:
            return (
                f"no INA3221 power rails under {self._p('sys/bus/i2c/drivers/ina3221*')} "
                "(not a Jetson, or a module without power monitors such as the Nano 2GB)"
            )
        return None

    # -- hooks -----------------------------------------------------------------------------------
    def max_gpu_clock_mhz(self) -> Optional[float]:
        self._discover()
        if self._devfreq is None:
            return None
        hz = _read_float(os.path.join(self._devfreq, "max_freq"))
        return None if hz is None else hz / 1e6

    def trip_points_c(self) -> Dict[str, float]:
        """Lowest passive/hot/critical trip point per thermal zone, in C."""
        self._discover()
        out: Dict[str, float] = {}
        for kind, temp_path in self._zones:
            zone = os.path.dirname(temp_path)
            trips = []
            for tp in glob.glob(os.path.join(zone, "trip_point_*_type")):
                if _read(tp) in ("passive", "hot", "critical"):
                    value = _read_float(tp[: -len("type")] + "temp")
                    if value is not None and value > 0:
                        trips.append(value / 1000.0)
            if trips:
                out[kind] = min(trips)
        return out

    # -- reading -----------------------------------------------------------------------------------
    def read(self, now: float) -> Reading:
        self._discover()
        rails: Dict[str, float] = {}
        for name, kind, a, b in self._rails or []:
            if kind == "hwmon":
                mv, ma = _read_float(a), _read_float(b or "")
                mw = None if mv is None or ma is None else mv * ma / 1000.0
            else:
                mw = _read_float(a)
            if mw is not None:
                key, k = name, 2
                while key in rails:
                    key, k = f"{name}#{k}", k + 1
                rails[key] = mw / 1000.0
        board: Optional[float] = None
        if rails:
            named = next((b for b in BOARD_RAILS if b in rails), None)
            board = rails[named] if named else sum(rails.values())
        load = _read_float(self._gpu_load) if self._gpu_load else None
        clock = None
        if self._devfreq is not None:
            hz = _read_float(os.path.join(self._devfreq, "cur_freq"))
            clock = None if hz is None else hz / 1e6
        temps: Dict[str, float] = {}
        for kind, path in self._zones:
            mc = _read_float(path)
            if mc is not None and mc > _TEMP_PLACEHOLDER_MC:
                temps[kind] = mc / 1000.0
        return Reading(
            t=now,
            board_power_w=board,
            rails_w=rails,
            memory_bytes=self._memory_used(),
            gpu_util=None if load is None else load / 10.0,  # the load file is per mille
            gpu_clock_mhz=clock,
            temps_c=temps,
        )

    def _memory_used(self) -> Optional[float]:
        text = _read(self._p("proc/meminfo"))
        if not text:
            return None
        kb: Dict[str, float] = {}
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] in ("MemTotal:", "MemAvailable:"):
                kb[parts[0]] = float(parts[1])
        if len(kb) < 2:
            return None
        return (kb["MemTotal:"] - kb["MemAvailable:"]) * 1024.0

    def collect(self, now: float) -> List[Reading]:
        return [self.read(now)]
