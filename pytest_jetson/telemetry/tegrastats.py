"""The ``tegrastats`` source: runs ``tegrastats --interval N`` and parses each line it prints.

``parse_line`` reads every layout NVIDIA has shipped, JetPack 4 to 7:

* JetPack 4 (Nano, TX2, AGX Xavier): ``CPU [12%@1479,off,...]``, rails without units
  (``POM_5V_IN 1234/1234``, ``VDD_IN 14025/14416``, ``GPU 120/100``);
* JetPack 5/6 (Xavier, Orin): rails in mW (``VDD_IN 5000mW/5000mW``), lower-case sensors
  (``cpu@45.5C``, ``tj@...``), ``GR3D_FREQ 0%@[305]``;
* Thor and JetPack 7: per-GPC arrays (``GR3D_FREQ @[0,0,0]``, ``GR3D_FREQ 0%@[1300,1300]``),
  current/max sensors (``cpu@58.25C/61.75C``) and current/average/max rails.

It never raises: a field it cannot read is kept, as text, in ``Sample.unknown``.
"""

import math
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, NamedTuple, Optional, Tuple

from ..errors import TelemetryError
from .base import Reading, Source, SourceDied

#: Readings at or below this are "sensor absent" placeholders (tegrastats prints -256C).
TEMP_PLACEHOLDER_C = -100.0

#: Rails that measure the whole module input, best first. Without one, board power is the sum
#: of the rails printed (AGX Orin, AGX Xavier, Thor before JetPack 7 print no input rail).
BOARD_RAILS = ("VIN", "VDD_IN", "POM_5V_IN")

#: Rail names that are unconnected INA3221 channels.
UNCONNECTED_RAILS = ("NC",)

#: Sensors that are not temperatures of the chip: the PMIC die sensor of JetPack 4 boards reads a
#: fixed 100 C (jetson-stats skips it as well), which would pass for a board at its trip point.
IGNORED_SENSORS = ("PMIC",)


class Cpu(NamedTuple):
    """One core: load in percent of its current clock and that clock; both None when off."""

    load_pct: Optional[float]
    freq_mhz: Optional[float]

    @property
    def online(self) -> bool:
        return self.load_pct is not None


class Rail(NamedTuple):
    """One power rail as printed: instantaneous and running-average power in mW."""

    name: str
    instant_mw: float
    average_mw: Optional[float]


@dataclass
class Sample:
    """One parsed tegrastats line. Fields the line did not print are None (or empty)."""

    ram_used_mb: Optional[float] = None
    ram_total_mb: Optional[float] = None
    swap_used_mb: Optional[float] = None
    swap_total_mb: Optional[float] = None
    swap_cached_mb: Optional[float] = None
    cpus: List[Cpu] = field(default_factory=list)
    gpu_load_pct: Optional[float] = None
    gpu_freq_mhz: Optional[float] = None
    #: Per-GPC clocks where printed as an array (Orin JetPack 6+, Thor); ``None`` entries are
    #: GPCs printed as ``off``.
    gpu_gpc_freqs_mhz: List[Optional[float]] = field(default_factory=list)
    emc_load_pct: Optional[float] = None
    emc_freq_mhz: Optional[float] = None
    temps_c: Dict[str, float] = field(default_factory=dict)
    rails: List[Rail] = field(default_factory=list)
    #: Other engines (APE, NVENC, NVDEC, VIC, NVDLA0, ...): name -> (load %, MHz), None when off.
    engines: Dict[str, Optional[Tuple[Optional[float], Optional[float]]]] = field(default_factory=dict)
    #: The date and time some releases print first ("05-09-2026 18:42:06"), as printed.
    time_text: Optional[str] = None
    #: Text the parser did not understand, in order, one entry per field.
    unknown: List[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """True when the line carried the RAM field every tegrastats release prints first."""
        return self.ram_total_mb is not None

    def board_rail(self) -> Optional[str]:
        """The rail that measures the module input, or None (then ``board_power_mw`` sums)."""
        names = [r.name for r in self.rails]
        for name in BOARD_RAILS:
            if name in names:
                return name
        return None

    def board_power_mw(self) -> Optional[float]:
        """Module input power in mW: the input rail, else the sum of the connected rails."""
        if not self.rails:
            return None
        board = self.board_rail()
        if board is not None:
            return next(r.instant_mw for r in self.rails if r.name == board)
        return float(sum(r.instant_mw for r in self.rails if r.name not in UNCONNECTED_RAILS))

    def to_reading(self, t: float) -> Reading:
        online = [c.load_pct for c in self.cpus if c.load_pct is not None]
        board = self.board_power_mw()
        rails: Dict[str, float] = {}
        for r in self.rails:
            if r.name in UNCONNECTED_RAILS:
                continue
            # Names may repeat; later channels of the same name are numbered, not dropped.
            name, k = r.name, 2
            while name in rails:
                name, k = f"{r.name}#{k}", k + 1
            rails[name] = r.instant_mw / 1000.0
        return Reading(
            t=t,
            board_power_w=None if board is None else board / 1000.0,
            rails_w=rails,
            memory_bytes=None if self.ram_used_mb is None else self.ram_used_mb * 1024 * 1024,
            gpu_util=self.gpu_load_pct,
            gpu_clock_mhz=self.gpu_freq_mhz,
            emc_util=self.emc_load_pct,
            cpu_util=(sum(online) / len(online)) if online else None,
            temps_c={k: v for k, v in self.temps_c.items() if not k.upper().startswith(IGNORED_SENSORS)},
        )


# -- the scanner ------------------------------------------------------------------------------
# Each pattern is tried at the current position; the first that matches consumes its field.
_NUM = r"\d+(?:\.\d+)?"
_DATE = re.compile(r"\d{2}-\d{2}-\d{4}\s+\d{2}:\d{2}:\d{2}")
_RAM = re.compile(r"RAM\s+(" + _NUM + r")/(" + _NUM + r")MB(?:\s*\(lfb\s+[^)]*\))?(?=\s|$)")
_SWAP = re.compile(
    r"SWAP\s+(" + _NUM + r")/(" + _NUM + r")MB(?:\s*\(cached\s+(" + _NUM + r")MB\))?(?=\s|$)"
)
_IRAM = re.compile(r"IRAM\s+" + _NUM + "/" + _NUM + r"kB\s*(?:\(lfb\s+[^)]*\))?(?=\s|$)")
_CPU = re.compile(r"(?:CPU|cpu)\s+\[([^\]\s]*)\](?:@(" + _NUM + r"))?(?=\s|$)")
_MTS = re.compile(r"MTS\s+fg\s+\d+%\s+bg\s+\d+%(?=\s|$)")
_TEMP = re.compile(r"([A-Za-z][\w-]*)@(-?" + _NUM + r")C(?:/(-?" + _NUM + r")C)?(?=\s|$)")
_RAIL = re.compile(
    r"([A-Za-z][\w-]*)\s+(" + _NUM + r")(?:mW)?/(" + _NUM + r")(?:mW)?(?:/(" + _NUM + r")(?:mW)?)?(?=\s|$)"
)
# An engine: "EMC_FREQ 2%@1866", "GR3D_FREQ 0%@[0,0]", "GR3D_FREQ @[1000,1000,1000]",
# "NVENC0_FREQ @0", "NVENC off", "APE 150", "VIC_FREQ 601", "EMC_FREQ 0%".
_ENGINE = re.compile(
    r"([A-Za-z][\w-]*)\s+(?:(off)|(" + _NUM + r")%(?:@(\[[^\]\s]*\]|" + _NUM + r"))?"
    r"|@(\[[^\]\s]*\]|" + _NUM + r")|(" + _NUM + r"))(?=\s|$)"
)
_CORE = re.compile(r"(" + _NUM + r")%(?:@(" + _NUM + r"))?$")
_TOKEN = re.compile(r"\S+")
_WS = re.compile(r"\s*")

_GPU_NAMES = ("GR3D_FREQ", "GR3D")
_GPU2_NAMES = ("GR3D2_FREQ",)
_EMC_NAMES = ("EMC_FREQ", "EMC")
# Memory fields cut short ("RAM 4722/78") must not pass for a rail or an engine.
_NOT_RAILS = ("RAM", "SWAP", "IRAM")
_NOT_ENGINES = _NOT_RAILS + ("CPU", "cpu", "MTS", "lfb", "cached")


def _num(text: Optional[str]) -> Optional[float]:
    if text is None:
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _parse_cpus(body: str, group_freq: Optional[str], sample: Sample) -> None:
    shared = _num(group_freq)
    for item in body.split(","):
        item = item.strip()
        if item == "off":
            sample.cpus.append(Cpu(None, None))
            continue
        m = _CORE.match(item)
        if m is None:
            # A core we cannot read still occupies its index, so later cores keep theirs.
            sample.cpus.append(Cpu(None, None))
            sample.unknown.append(f"CPU:{item}")
            continue
        freq = _num(m.group(2)) if m.group(2) is not None else shared
        sample.cpus.append(Cpu(_num(m.group(1)), freq))


def _parse_freq_array(text: str, sample: Sample) -> List[Optional[float]]:
    out: List[Optional[float]] = []
    for item in text.strip("[]").split(","):
        item = item.strip()
        if not item:
            continue
        try:
            out.append(_num(item))
        except ValueError:
            if item != "off":
                sample.unknown.append(f"GPC:{item}")
            out.append(None)
    return out


def _engine_clock(m: "re.Match", name: str, sample: Sample) -> Optional[float]:
    """The clock an engine field prints: after ``@`` (one number, or the highest of a per-GPC
    array, which a GPU field also records), or a bare number."""
    at = m.group(4) or m.group(5)
    if at is None:
        # "APE 150", "VIC_FREQ 601": a bare number is a clock.
        return _num(m.group(6)) if m.group(6) is not None else None
    if not at.startswith("["):
        return _num(at)
    gpcs = _parse_freq_array(at, sample)
    if name in _GPU_NAMES:
        sample.gpu_gpc_freqs_mhz = gpcs
    elif name in _GPU2_NAMES:
        sample.gpu_gpc_freqs_mhz = sample.gpu_gpc_freqs_mhz + gpcs
    known = [f for f in gpcs if f is not None]
    return max(known) if known else None


def _second_gpc(sample: Sample, freq: Optional[float], array: bool) -> None:
    # Orin on JetPack 5 prints the second GPC as its own engine with the same load.
    # GR3D_FREQ is then the first GPC's clock and GR3D2_FREQ the second's.
    if not array:
        if not sample.gpu_gpc_freqs_mhz:
            sample.gpu_gpc_freqs_mhz = [sample.gpu_freq_mhz]
        sample.gpu_gpc_freqs_mhz.append(freq)
    if freq is not None and (sample.gpu_freq_mhz is None or freq > sample.gpu_freq_mhz):
        sample.gpu_freq_mhz = freq


def _apply_engine(m: "re.Match", sample: Sample) -> None:
    name, off, load = m.group(1), m.group(2), _num(m.group(3))
    freq = _engine_clock(m, name, sample)
    if name in _GPU_NAMES:
        sample.gpu_load_pct = load
        sample.gpu_freq_mhz = freq
    elif name in _GPU2_NAMES:
        at = m.group(4) or m.group(5)
        _second_gpc(sample, freq, at is not None and at.startswith("["))
    elif name in _EMC_NAMES:
        sample.emc_load_pct = load
        sample.emc_freq_mhz = freq
    else:
        sample.engines[name] = None if off else (load, freq)


def _scan(text: str, sample: Sample) -> None:
    pos, end = 0, len(text)
    while True:
        pos = _WS.match(text, pos).end()
        if pos >= end:
            return
        m = _RAM.match(text, pos)
        if m:
            sample.ram_used_mb, sample.ram_total_mb = _num(m.group(1)), _num(m.group(2))
            pos = m.end()
            continue
        m = _SWAP.match(text, pos)
        if m:
            sample.swap_used_mb, sample.swap_total_mb = _num(m.group(1)), _num(m.group(2))
            sample.swap_cached_mb = _num(m.group(3))
            pos = m.end()
            continue
        m = _IRAM.match(text, pos) or _MTS.match(text, pos)
        if m:
            pos = m.end()
            continue
        m = _CPU.match(text, pos)
        if m:
            _parse_cpus(m.group(1), m.group(2), sample)
            pos = m.end()
            continue
        m = _TEMP.match(text, pos)
        if m:
            value = _num(m.group(2))
            if value is not None and value > TEMP_PLACEHOLDER_C:
                sample.temps_c[m.group(1)] = value
            pos = m.end()
            continue
        m = _RAIL.match(text, pos)
        if m and m.group(1) not in _NOT_RAILS:
            sample.rails.append(Rail(m.group(1), float(m.group(2)), _num(m.group(3))))
            pos = m.end()
            continue
        m = _ENGINE.match(text, pos)
        if m and m.group(1) not in _NOT_ENGINES:
            _apply_engine(m, sample)
            pos = m.end()
            continue
        m = _TOKEN.match(text, pos)
        sample.unknown.append(m.group(0))
        pos = m.end()


def parse_line(line: str) -> Sample:
    """Parse one tegrastats line into a ``Sample``; never raises. Unknown fields land in
    ``Sample.unknown``; a line without the RAM field (truncated, a banner) has
    ``complete == False``."""
    sample = Sample()
    try:
        text = str(line).strip()
        m = _DATE.match(text)
        if m:
            sample.time_text = m.group(0)
            text = text[m.end():]
        _scan(text, sample)
    except Exception as exc:  # a parser bug must cost one sample, never the run
        sample.unknown.append(f"<parse error {type(exc).__name__}: {str(line)[:200]!r}>")
    return sample


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _load(pct: Optional[float]) -> str:
    return "" if pct is None else f"{_fmt(pct)}%"


def _memory_fields(sample: Sample) -> List[str]:
    parts = []
    if sample.ram_used_mb is not None and sample.ram_total_mb is not None:
        parts.append(f"RAM {_fmt(sample.ram_used_mb)}/{_fmt(sample.ram_total_mb)}MB (lfb 8x4MB)")
    if sample.swap_used_mb is not None and sample.swap_total_mb is not None:
        cached = _fmt(sample.swap_cached_mb) if sample.swap_cached_mb is not None else "0"
        parts.append(f"SWAP {_fmt(sample.swap_used_mb)}/{_fmt(sample.swap_total_mb)}MB (cached {cached}MB)")
    return parts


def _cpu_field(sample: Sample) -> List[str]:
    if not sample.cpus:
        return []
    cores = ["off" if c.load_pct is None else f"{_fmt(c.load_pct)}%@{_fmt(c.freq_mhz or 0)}" for c in sample.cpus]
    return ["CPU [" + ",".join(cores) + "]"]


def _emc_field(sample: Sample) -> List[str]:
    if sample.emc_load_pct is None and sample.emc_freq_mhz is None:
        return []
    freq = "" if sample.emc_freq_mhz is None else f"@{_fmt(sample.emc_freq_mhz)}"
    return [f"EMC_FREQ {_load(sample.emc_load_pct)}{freq}"]


def _gpu_field(sample: Sample) -> List[str]:
    """GR3D_FREQ, with per-GPC clocks in the JetPack 6 array form where there are any."""
    if sample.gpu_load_pct is None and sample.gpu_freq_mhz is None and not sample.gpu_gpc_freqs_mhz:
        return []
    if sample.gpu_gpc_freqs_mhz:
        freq = "@[" + ",".join("off" if f is None else _fmt(f) for f in sample.gpu_gpc_freqs_mhz) + "]"
    else:
        freq = "" if sample.gpu_freq_mhz is None else f"@{_fmt(sample.gpu_freq_mhz)}"
    return [f"GR3D_FREQ {_load(sample.gpu_load_pct)}{freq}"]


def _engine_fields(sample: Sample) -> List[str]:
    parts = []
    for name, value in sample.engines.items():
        if value is None:
            parts.append(f"{name} off")
            continue
        load_v, freq_v = value
        load = _load(load_v)
        freq = "" if freq_v is None else (f"@{_fmt(freq_v)}" if load else _fmt(freq_v))
        parts.append(f"{name} {load}{freq}")
    return parts


def _sensor_fields(sample: Sample) -> List[str]:
    parts = [f"{name}@{_fmt(temp)}C" for name, temp in sample.temps_c.items()]
    for rail in sample.rails:
        avg = _fmt(rail.average_mw if rail.average_mw is not None else rail.instant_mw)
        parts.append(f"{rail.name} {_fmt(rail.instant_mw)}mW/{avg}mW")
    return parts


# The fields of a line in the order tegrastats prints them.
_WRITERS = (_memory_fields, _cpu_field, _emc_field, _gpu_field, _engine_fields, _sensor_fields)


def format_line(sample: Sample) -> str:
    """Write ``sample`` as a JetPack 5/6-style tegrastats line (for fakes and round trips).
    A GPU with per-GPC clocks is written in the JetPack 6 array form."""
    parts: List[str] = [sample.time_text] if sample.time_text else []
    for write in _WRITERS:
        parts.extend(write(sample))
    return " ".join(parts)


# -- the source -------------------------------------------------------------------------------
def find_tegrastats() -> Optional[str]:
    return shutil.which("tegrastats")


class TegrastatsSource(Source):
    """Streams ``tegrastats --interval N``: a reader thread parses lines as they come and the
    sampler collects them. Each reading is stamped on the monotonic clock when its line arrived."""

    name = "tegrastats"

    def __init__(self, executable: Optional[str] = None) -> None:
        self.executable = executable or find_tegrastats() or "tegrastats"
        self._proc: Optional[subprocess.Popen] = None
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()
        self._pending: List[Reading] = []
        self._ended = False
        self._stopping = False
        self.malformed_lines = 0
        self.lines = 0
        self.last_malformed: Optional[str] = None

    @classmethod
    def probe(cls) -> Optional[str]:
        if find_tegrastats() is None:
            return "tegrastats not found on PATH (not a Jetson, or the L4T tools are not installed)"
        return None

    def start(self, interval: float) -> None:
        ms = max(1, int(round(interval * 1000)))
        self._pending, self._ended, self._stopping = [], False, False
        self.malformed_lines, self.lines, self.last_malformed = 0, 0, None
        try:
            self._proc = subprocess.Popen(
                [self.executable, "--interval", str(ms)],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
                universal_newlines=True,
                bufsize=1,
            )
        except OSError as exc:
            raise TelemetryError(
                f"telemetry source tegrastats: cannot run {self.executable!r} ({exc}); "
                "install the L4T tools or choose another source with --jetson-telemetry"
            ) from exc
        self._thread = threading.Thread(target=self._read, name="pytest-jetson-tegrastats", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        try:
            for line in proc.stdout:
                t = time.perf_counter()
                if not line.strip():
                    continue
                sample = parse_line(line)
                with self._lock:
                    self.lines += 1
                    if not sample.complete:
                        self.malformed_lines += 1
                        self.last_malformed = line.strip()[:200]
                        continue
                    self._pending.append(sample.to_reading(t))
        except (OSError, ValueError):
            pass
        finally:
            with self._lock:
                self._ended = True

    def collect(self, now: float) -> List[Reading]:
        with self._lock:
            out, self._pending = self._pending, []
            ended = self._ended
        if out:
            return out
        if ended and not self._stopping:
            code = None
            if self._proc is not None:
                try:  # its output has ended, so it is exiting: wait for the code
                    code = self._proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    pass
            raise SourceDied(f"tegrastats exited (code {code}) while sampling")
        return out

    def stop(self) -> None:
        self._stopping = True
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()
