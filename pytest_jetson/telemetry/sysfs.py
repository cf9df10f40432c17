"""The ``sysfs`` source: the board's power monitors, GPU, EMC, thermal zones and memory read
straight from the kernel's files, where jetson-stats' service reads them.

Power monitors are found the way jtop finds them: every ``/sys/bus/i2c/devices/*`` whose ``name``
is an INA chip.

* INA3221 under the hwmon driver (JetPack 5 and later): ``hwmon*/in<N>_label``, ``in<N>_input``
  in mV and ``curr<N>_input`` in mA; channel 7 is the "sum of shunt voltages", not a rail.
* INA3221 under the iio driver of JetPack 4 (``ina3221x``): ``iio:device*/rail_name_<k>`` and
  ``in_power<k>_input`` in mW.
* INA238 on the AGX Thor carrier: ``hwmon*/power1_input`` in microwatts. It measures the whole
  board's input (VIN), so it *is* the board power; the module's INA3221 rails are parts of it.

Board power is, in that order: the INA238 VIN rail, the module input rail (VDD_IN, POM_5V_IN), or
the sum of the rails (AGX Orin and AGX Xavier have no input rail). The GPU is the devfreq node
``detect.gpu_devfreq_dirs`` finds (``17000000.ga10b`` on Orin with JetPack 5, ``17000000.gpu``
with 6, ``gpu-gpc-0`` on Thor, ...) with its ``device/load`` file in per mille.

Every path hangs off ``root`` (default: ``PYTEST_JETSON_SYSROOT`` or ``/``), so tests point it at
a recorded board tree. Files are read non-blocking and a few bytes at a time: a FIFO or device
file in their place costs a sample, never a hang.
"""

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from ..devices.detect import gpu_devfreq_dirs, system_root
from .base import Reading, Source
from .openfiles import OpenFiles
from .tegrastats import BOARD_RAILS, IGNORED_SENSORS, UNCONNECTED_RAILS

#: GPU load files by board generation (NVIDIA's and jetson-stats' paths), tried after the GPU
#: devfreq node's own device/load.
GPU_LOAD_FILES = (
    "sys/devices/gpu.0/load",
    "sys/devices/platform/gpu.0/load",
    "sys/devices/platform/bus@0/17000000.gpu/load",
    "sys/devices/17000000.ga10b/load",
    "sys/devices/17000000.gv11b/load",
    "sys/devices/17000000.gp10b/load",
    "sys/devices/57000000.gpu/load",
)
#: EMC clock (Hz) and activity files by SoC, as NVIDIA's jetson_clocks and jetson-stats read them:
#: BPMP debugfs on TX2, Xavier and Orin; tegra_bwmgr's override clock on the Nano (tegra210); the
#: bandwidth manager's devfreq node on Thor. All but the last are root-only debugfs files.
EMC_RATE_FILES = ("sys/kernel/debug/bpmp/debug/clk/emc/rate", "sys/kernel/debug/clk/override.emc/clk_rate",
                  "sys/kernel/debug/clk/emc/clk_rate", "sys/class/devfreq/bwmgr/cur_freq")
EMC_ACTIVITY_FILES = ("sys/kernel/actmon_avg_activity/mc_all", "sys/kernel/debug/cactmon/mc_all",
                      "sys/kernel/debug/bpmp/debug/actmon/mc_all_avg_activity")
#: Readings at or below this are "sensor absent" placeholders (the kernel reports -256 C).
TEMP_ABSENT_MC = -100000
#: Temperatures, memory and CPU load change slowly and cost ~10 of the ~20 files a sample reads:
#: they are read at most this often (seconds); samples in between carry power, GPU and EMC only.
SLOW_FIELDS_INTERVAL = 0.1
#: The name sysfs and tegrastats give the Thor carrier's INA238 input rail.
INA238_RAIL = "VIN"
_NUMBER = re.compile(r"-?[0-9]+")


def read_small(path: str, limit: int = 64) -> Optional[str]:
    """The first ``limit`` bytes of a sysfs attribute as text, or None. Non-blocking: a FIFO in
    the place of an attribute reads as empty instead of hanging the sampler."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return os.read(fd, limit).decode("ascii", errors="replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)


def parse_number(text: Optional[str], lo: int = -(10 ** 15), hi: int = 10 ** 15) -> Optional[int]:
    """The ASCII integer a sysfs file starts with, if it lies in [lo, hi]; else None ('²', a
    5,000-digit number and 'off' all count as no reading)."""
    if not text:
        return None
    token = text.split(None, 1)[0]
    digits = token[1:] if token[:1] == "-" else token
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 18:
        return None
    value = int(token)
    return value if lo <= value <= hi else None


def read_number(path: Optional[str], lo: int = -(10 ** 15), hi: int = 10 ** 15) -> Optional[int]:
    """The integer in a sysfs file (first token), None when absent or not a plausible number."""
    return None if path is None else parse_number(read_small(path), lo, hi)


@dataclass
class Rail:
    """One power channel: power = read(). Units: ``mv``/``ma`` files (hwmon INA3221), ``mw`` file
    (iio INA3221) or ``uw`` file (INA238)."""

    name: str
    kind: str  # "hwmon", "iio", "ina238"
    files: Tuple[str, ...]
    device: str = ""

    def read_mw(self, read: Callable[[str], Optional[str]] = read_small) -> Optional[float]:
        if self.kind == "hwmon":
            mv, ma = parse_number(read(self.files[0])), parse_number(read(self.files[1]))
            return None if mv is None or ma is None else mv * ma / 1000.0
        value = parse_number(read(self.files[0]))
        if value is None:
            return None
        return value / 1000.0 if self.kind == "ina238" else float(value)


@dataclass
class Zone:
    """A thermal zone: its type, temperature file and lowest passive/hot/critical trip (C)."""

    kind: str
    temp: str
    trip_c: Optional[float] = None
    passive_c: Optional[float] = None


@dataclass
class BoardFiles:
    """Where this board keeps what the sysfs source reads (found once per source)."""

    rails: List[Rail] = field(default_factory=list)
    gpu_devfreq: Optional[str] = None
    gpu_load: Optional[str] = None
    emc_rate: Optional[str] = None
    emc_activity: Optional[str] = None
    zones: List[Zone] = field(default_factory=list)


def _p(root: Path, rel: str) -> str:
    return str(root / rel)


def _listdir(path: Path) -> List[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _ina238_rails(path: Path, dev: str) -> List[Rail]:
    rails = []
    for hw in _listdir(path / "hwmon"):
        power = path / "hwmon" / hw / "power1_input"
        if power.exists():
            rails.append(Rail(INA238_RAIL, "ina238", (str(power),), dev))
    return rails


def _connected(label: Optional[str]) -> bool:
    return bool(label) and label not in UNCONNECTED_RAILS


def _ina3221_rails(path: Path, dev: str) -> List[Rail]:
    """An INA3221's three channels, as hwmon (voltage and current) or iio (power) files."""
    rails = []
    for hw in _listdir(path / "hwmon"):
        d = path / "hwmon" / hw
        for n in range(1, 4):
            label = read_small(str(d / f"in{n}_label"), limit=128)
            volt, curr = d / f"in{n}_input", d / f"curr{n}_input"
            if _connected(label) and volt.exists() and curr.exists():
                rails.append(Rail(label, "hwmon", (str(volt), str(curr)), dev))
    for iio in _listdir(path):
        if not iio.startswith("iio:device"):
            continue
        d = path / iio
        for k in range(3):
            label = read_small(str(d / f"rail_name_{k}"), limit=128)
            power = d / f"in_power{k}_input"
            if _connected(label) and power.exists():
                rails.append(Rail(label, "iio", (str(power),), dev))
    return rails


def find_rails(root: Path) -> List[Rail]:
    """Every power channel under /sys/bus/i2c/devices/*: INA3221 (hwmon or iio) and INA238."""
    rails: List[Rail] = []
    seen = set()
    base = root / "sys/bus/i2c/devices"
    for dev in _listdir(base):
        path = base / dev
        chip = (read_small(str(path / "name")) or "").lower()
        if not chip.startswith("ina"):
            continue
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        if "ina238" in chip:
            rails += _ina238_rails(path, dev)
        elif "ina3221" in chip:
            rails += _ina3221_rails(path, dev)
    return rails


def board_rail(names: List[str]) -> Optional[str]:
    """The rail that measures the whole input: the carrier's VIN (INA238), else the module's."""
    for name in BOARD_RAILS:
        if name in names:
            return name
    return None


def find_zones(root: Path) -> List[Zone]:
    zones = []
    base = root / "sys/class/thermal"
    for name in _listdir(base):
        if not name.startswith("thermal_zone"):
            continue
        d = base / name
        kind = read_small(str(d / "type"), limit=128)
        if not kind or kind.upper().startswith(IGNORED_SENSORS):
            continue
        trips, passive = [], []
        for entry in _listdir(d):
            if entry.startswith("trip_point_") and entry.endswith("_type"):
                ttype = read_small(str(d / entry))
                value = read_number(str(d / (entry[: -len("type")] + "temp")))
                if ttype in ("passive", "hot", "critical") and value is not None and value > 0:
                    trips.append(value / 1000.0)
                    if ttype == "passive":
                        passive.append(value / 1000.0)
        zones.append(Zone(kind, str(d / "temp"), min(trips) if trips else None,
                          min(passive) if passive else None))
    return zones


def find_board_files(root: Path) -> BoardFiles:
    files = BoardFiles(rails=find_rails(root), zones=find_zones(root))
    for devfreq in gpu_devfreq_dirs(root):
        files.gpu_devfreq = str(devfreq)
        load = devfreq / "device" / "load"
        if load.exists():
            files.gpu_load = str(load)
        break
    if files.gpu_load is None:
        files.gpu_load = next((_p(root, p) for p in GPU_LOAD_FILES if (root / p).exists()), None)
    files.emc_rate = next((_p(root, p) for p in EMC_RATE_FILES if (root / p).exists()), None)
    files.emc_activity = next((_p(root, p) for p in EMC_ACTIVITY_FILES if (root / p).exists()), None)
    return files


def read_gpu_load_pct(files: BoardFiles, read: Callable[[str], Optional[str]] = read_small) -> Optional[float]:
    """The GPU load in percent; the kernel's file counts per mille."""
    value = None if files.gpu_load is None else parse_number(read(files.gpu_load), 0, 1000)
    return None if value is None else value / 10.0


def read_temps(zones: List[Zone], read: Callable[[str], Optional[str]] = read_small) -> Dict[str, float]:
    temps: Dict[str, float] = {}
    for z in zones:
        mc = parse_number(read(z.temp), -300000, 300000)
        if mc is not None and mc > TEMP_ABSENT_MC:
            temps[z.kind] = mc / 1000.0
    return temps


def read_memory_used(meminfo: str, read: Optional[Callable[..., Optional[str]]] = None) -> Optional[float]:
    """Memory in use (MemTotal - MemAvailable) in bytes, from the /proc/meminfo at ``meminfo``."""
    text = (read or read_small)(meminfo, 8192)
    if not text:
        return None
    kb: Dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in ("MemTotal:", "MemAvailable:"):
            value = parse_number(parts[1], 0, 2 ** 40)
            if value is not None:
                kb[parts[0]] = value
    if len(kb) < 2:
        return None
    return float(kb["MemTotal:"] - kb["MemAvailable:"]) * 1024.0


class SysfsSource(Source):
    """Reads the kernel's files under ``root`` on every sample."""

    name = "sysfs"
    memory_scope = "board RAM"

    def __init__(self, root: Optional[str] = None) -> None:
        # "/" is what callers pass when they mean "this machine": the sysroot set for it wins.
        self.root = Path(root) if root not in (None, "", "/") else system_root()
        self.files: Optional[BoardFiles] = None
        self.power_basis: Optional[str] = None
        self._cpu_last: Optional[Tuple[int, int]] = None
        self._open = OpenFiles()
        self._meminfo = str(self.root / "proc/meminfo")
        self._slow_at: Optional[float] = None
        self._stat = str(self.root / "proc/stat")

    def _read(self, path: str, limit: int = 64) -> Optional[str]:
        data = self._open.pread(path, path, limit, os.O_RDONLY | os.O_NONBLOCK)
        return None if data is None else data.decode("ascii", errors="replace").strip()

    def stop(self) -> None:
        self._open.close_all()

    def _discover(self) -> BoardFiles:
        if self.files is None:
            self.files = find_board_files(self.root)
            names = [r.name for r in self.files.rails]
            self.power_basis = board_rail(names) or ("sum of rails" if names else None)
        return self.files

    @classmethod
    def probe(cls, root: Optional[str] = None) -> Optional[str]:  # type: ignore[override]
        """None when this board (under ``root``) has a power monitor to read; else why not."""
        return cls(root).probe_instance()

    def probe_instance(self) -> Optional[str]:
        files = self._discover()
        if not files.rails:
            return (
                f"no INA3221/INA238 power monitor under {self.root / 'sys/bus/i2c/devices'} "
                "(not a Jetson, or a module without power monitors such as the Nano 2GB)"
            )
        return None

    # -- hooks -----------------------------------------------------------------------------------
    def max_gpu_clock_mhz(self) -> Optional[float]:
        files = self._discover()
        if files.gpu_devfreq is None:
            return None
        hz = read_number(os.path.join(files.gpu_devfreq, "max_freq"), 0, 10 ** 10)
        return None if hz is None else hz / 1e6

    def trip_points_c(self) -> Dict[str, float]:
        """Lowest passive/hot/critical trip point per thermal zone, in C."""
        return {z.kind: z.trip_c for z in self._discover().zones if z.trip_c is not None}

    # -- reading -----------------------------------------------------------------------------------
    def read(self, now: float) -> Reading:
        files = self._discover()
        rails: Dict[str, float] = {}
        for rail in files.rails:
            mw = rail.read_mw(self._read)
            if mw is None:
                continue
            key, k = rail.name, 2
            while key in rails:
                key, k = f"{rail.name}#{k}", k + 1
            rails[key] = mw / 1000.0
        board: Optional[float] = None
        if rails:
            named = board_rail(list(rails))
            board = rails[named] if named else sum(rails.values())
        clock = None
        if files.gpu_devfreq is not None:
            hz = parse_number(self._read(os.path.join(files.gpu_devfreq, "cur_freq")), 0, 10 ** 10)
            clock = None if hz is None else hz / 1e6
        reading = Reading(
            t=now,
            board_power_w=board,
            rails_w=rails,
            gpu_util=read_gpu_load_pct(files, self._read),
            gpu_clock_mhz=clock,
            emc_util=self._emc_util(files),
        )
        if self._slow_at is None or not now - SLOW_FIELDS_INTERVAL < self._slow_at <= now:
            self._slow_at = now
            temps = read_temps(files.zones, self._read)
            reading.temps_c = temps
            reading.throttle = [
                f"thermal zone {z.kind} at {temps[z.kind]:.1f} C, at or past its passive trip point "
                f"{z.passive_c:.0f} C (the kernel slows the clocks there)"
                for z in files.zones if z.passive_c is not None and temps.get(z.kind, -1e9) >= z.passive_c
            ]
            reading.memory_bytes = read_memory_used(self._meminfo, self._read)
            reading.cpu_util = self._cpu_util()
        return reading

    def _emc_util(self, files: BoardFiles) -> Optional[float]:
        """EMC load in percent: actmon's average activity over the EMC clock in kHz (jtop's
        formula). Both files are in debugfs, readable by root only on a board."""
        if files.emc_rate is None or files.emc_activity is None:
            return None
        rate = parse_number(self._read(files.emc_rate), 1, 10 ** 11)
        activity = parse_number(self._read(files.emc_activity), 0, 10 ** 15)
        if rate is None or activity is None:
            return None
        return min(100.0, activity / (rate / 1000.0))

    def _cpu_util(self) -> Optional[float]:
        text = self._read(self._stat, 256)
        if not text or not text.startswith("cpu "):
            return None
        tokens = text.split("\n", 1)[0].split()[1:8]
        if len(tokens) < 5 or not all(t.isascii() and t.isdigit() and len(t) < 19 for t in tokens):
            return None
        fields = [int(t) for t in tokens]
        total, idle = sum(fields), fields[3] + fields[4]  # type: ignore[arg-type,operator]
        last, self._cpu_last = self._cpu_last, (total, idle)
        if last is None or total <= last[0]:
            return None
        return 100.0 * (1.0 - (idle - last[1]) / (total - last[0]))

    def collect(self, now: float) -> List[Reading]:
        return [self.read(now)]
