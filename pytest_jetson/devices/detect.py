"""Is this a Jetson, and which? Read from the files a board has, the way its own tools read them.

The module is named by the part number in ``/proc/device-tree/compatible`` (``p3767-0005`` is an
Orin Nano 8GB devkit module, whatever the model string says: JetPack 5 Orin Nano devkits report
"NVIDIA Orin Nano Developer Kit", without "Jetson"); the model string and the memory size decide
where the part number alone does not (the AGX Orin devkit's ``p3701-0000`` comes in 32 and 64 GB;
every AGX Xavier devkit DTB says ``p2888-0001``); the Super firmware shows as a ``-super`` suffix
on the carrier's compatible entry, "Super" in the model, or MAXN_SUPER in the nvpmodel table.

Every file goes through ``read_file``, which never blocks and never reads much: it refuses FIFOs,
sockets and device files (a FIFO would hang the read, a link to ``/dev/zero`` would never end),
reads at most a few KiB, and says in a note why a file was ignored. Numbers outside what a Jetson
can hold (a 5,000-digit power-mode id, a ``²`` in a devfreq file, 10^30 kB of memory) count as
absent, with a note. ``detect()`` never raises. Everything hangs off one root directory, so tests
and containers point it at a recorded board tree (``PYTEST_JETSON_SYSROOT``).
"""

import errno
import os
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .catalog import profiles
from .profile import Profile

#: Where detection reads the board's files: "/" on a board; tests and containers that mount a
#: board's files elsewhere point it at that directory.
ROOT_ENV = "PYTEST_JETSON_SYSROOT"

#: The most any one file is read for; a device-tree string, a status line or /proc/meminfo fit.
READ_LIMIT = 16 * 1024

# L4T (Jetson Linux) release -> JetPack, from NVIDIA's JetPack archive and jetson-stats'
# NVIDIA_JETPACK table. Longest prefix wins, so "36.4" covers 36.4.0 and "36.4.3" overrides it.
L4T_TO_JETPACK: Dict[str, str] = {
    "32.1": "4.2", "32.2": "4.2.1", "32.2.1": "4.2.2", "32.3.1": "4.3", "32.4.2": "4.4 DP",
    "32.4.3": "4.4", "32.4.4": "4.4.1", "32.5": "4.5", "32.5.0": "4.5", "32.5.1": "4.5.1",
    "32.5.2": "4.5.1", "32.6.1": "4.6", "32.7.1": "4.6.1", "32.7.2": "4.6.2", "32.7.3": "4.6.3",
    "32.7.4": "4.6.4", "32.7.5": "4.6.5", "32.7.6": "4.6.6",
    "34.1": "5.0 DP", "34.1.1": "5.0.1 DP", "35.1": "5.0.2", "35.1.0": "5.0.2", "35.2.1": "5.1",
    "35.3.1": "5.1.1", "35.4.1": "5.1.2", "35.5.0": "5.1.3", "35.6.0": "5.1.4", "35.6.1": "5.1.5",
    "35.6.2": "5.1.5", "35.6.3": "5.1.5",
    "36.2": "6.0 DP", "36.2.0": "6.0 DP", "36.3": "6.0", "36.3.0": "6.0", "36.4": "6.1",
    "36.4.0": "6.1", "36.4.2": "6.1", "36.4.3": "6.2", "36.4.4": "6.2.1", "36.4.7": "6.2.1",
    "36.5.0": "6.2.2",
    "38.2": "7.0", "38.2.0": "7.0", "38.4": "7.1", "38.4.0": "7.1", "39.2": "7.2", "39.2.0": "7.2",
}


@dataclass(frozen=True)
class Module:
    """One module part number: its name and the profiles it can be (decided by memory size)."""

    name: str
    profiles: Tuple[str, ...] = ()


#: Module part numbers as they appear in /proc/device-tree/compatible ("nvidia,p3767-0005", or
#: after the carrier's: "nvidia,p3768-0000+p3767-0005"). Names from jetson-stats'
#: MODULE_NAME_TABLE and NVIDIA's module data sheets; an empty ``profiles`` is a module
#: pytest-jetson has no profile for (it is named, then simulated or refused, never mistaken).
MODULES: Dict[str, Module] = {
    "p2180-1000": Module("Jetson TX1"),
    "p3310-1000": Module("Jetson TX2", ("tx2",)),
    "p3489-0000": Module("Jetson TX2i"),
    "p3489-0888": Module("Jetson TX2 4GB"),
    "p3636-0001": Module("Jetson TX2 NX"),
    "p3448-0000": Module("Jetson Nano 4GB (SD card)", ("nano",)),
    "p3448-0002": Module("Jetson Nano 4GB (eMMC)", ("nano",)),
    "p3448-0003": Module("Jetson Nano 2GB"),
    # Every AGX Xavier devkit DTB names p2888-0001 whatever the module: memory decides.
    "p2888-0001": Module("Jetson AGX Xavier (devkit device tree)", ("agx-xavier",)),
    "p2888-0003": Module("Jetson AGX Xavier 32GB", ("agx-xavier",)),
    "p2888-0004": Module("Jetson AGX Xavier 32GB", ("agx-xavier",)),
    "p2888-0005": Module("Jetson AGX Xavier 64GB"),
    "p2888-0006": Module("Jetson AGX Xavier 8GB"),
    "p2888-0008": Module("Jetson AGX Xavier Industrial"),
    "p3668-0000": Module("Jetson Xavier NX (devkit, SD card)", ("xavier-nx",)),
    "p3668-0001": Module("Jetson Xavier NX (eMMC)", ("xavier-nx",)),
    "p3668-0003": Module("Jetson Xavier NX 16GB"),
    "p3767-0000": Module("Jetson Orin NX 16GB", ("orin-nx-16gb",)),
    "p3767-0001": Module("Jetson Orin NX 8GB", ("orin-nx-8gb",)),
    "p3767-0003": Module("Jetson Orin Nano 8GB", ("orin-nano-8gb",)),
    "p3767-0004": Module("Jetson Orin Nano 4GB", ("orin-nano-4gb",)),
    "p3767-0005": Module("Jetson Orin Nano 8GB (devkit)", ("orin-nano-8gb",)),
    # The first AGX Orin devkits carry p3701-0000; 32 and 64 GB versions exist.
    "p3701-0000": Module("Jetson AGX Orin (devkit)", ("agx-orin-32gb", "agx-orin-64gb")),
    "p3701-0002": Module("Jetson IGX Orin (devkit)"),
    "p3701-0004": Module("Jetson AGX Orin 32GB", ("agx-orin-32gb",)),
    "p3701-0005": Module("Jetson AGX Orin 64GB", ("agx-orin-64gb",)),
    "p3701-0008": Module("Jetson AGX Orin Industrial"),
    "p3834-0008": Module("Jetson AGX Thor (devkit, T5000)", ("agx-thor",)),
}

_PART = re.compile(r"p\d{4}-\d{4}")
_RELEASE = re.compile(r"#\s*R(\d{1,3})\s*\(release\),\s*REVISION:\s*(\d{1,3}(?:\.\d{1,3}){0,2})", re.IGNORECASE)
_MODEL_LINE = re.compile(r"POWER_MODEL\s+ID\s*=\s*(\d+)\s+NAME\s*=\s*([^\s>]+)", re.IGNORECASE)
_PMODE = re.compile(r"pmode\s*:\s*(\d+)", re.IGNORECASE)
_DEFAULT_MODE = re.compile(r"PM_CONFIG\s+DEFAULT\s*=\s*(\d+)", re.IGNORECASE)
_DIGITS = re.compile(r"[0-9]+")
#: nvpmodel ids are small; anything longer is not an id.
MAX_MODE_ID = 999
#: Plausible memory of any Jetson (and some headroom): 256 MiB .. 4 TiB.
MEMORY_RANGE = (256 * 1024 ** 2, 4 * 1024 ** 4)
#: Plausible clock in Hz: 0 (gated) .. 10 GHz.
CLOCK_RANGE = (0, 10_000_000_000)
#: GPU devfreq entries, by the name the kernel gives the node (jetson-stats' list plus Thor's).
GPU_DEVFREQ_NAMES = ("gpu", "gv11b", "gp10b", "ga10b", "gb10b", "gm20b", "gpu-gpc-0")


def system_root() -> Path:
    return Path(os.environ.get(ROOT_ENV) or "/")


def _root(root: Optional[Path]) -> Path:
    return Path(root) if root is not None else system_root()


class Notes(list):
    """Why a file was ignored, in words a user can act on; collected during one detection."""

    def add(self, text: str) -> None:
        if text not in self:
            self.append(text)


def _note(notes: Optional[Notes], text: str) -> None:
    if notes is not None:
        notes.add(text)


def _unreadable(shown: str, exc: OSError) -> str:
    return f"{shown} cannot be read ({os.strerror(exc.errno or 0) or exc}): ignored"


def _read_open(fd: int, limit: int) -> Optional[bytes]:
    """Up to ``limit + 1`` bytes of an open file; None when it is no longer a regular file."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for something else since the stat
        return None
    chunks, size = [], 0
    while size <= limit:
        chunk = os.read(fd, limit + 1 - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_file(path: Path, notes: Optional[Notes] = None, limit: int = READ_LIMIT,
              label: Optional[str] = None) -> Optional[bytes]:
    """The bytes of a regular file, at most ``limit`` of them; None (with a note) when the path is
    absent, unreadable, not a regular file (FIFO, socket, device, directory) or longer than the
    limit. It never blocks: the file is opened non-blocking and checked again after opening."""
    shown = label or str(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            _note(notes, _unreadable(shown, exc))
        return None
    if not stat.S_ISREG(st.st_mode):
        _note(notes, f"{shown} is {_kind(st.st_mode)}, not a file: ignored")
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        _note(notes, _unreadable(shown, exc))
        return None
    try:
        data = _read_open(fd, limit)
    except OSError as exc:
        _note(notes, _unreadable(shown, exc))
        return None
    finally:
        os.close(fd)
    if data is None:
        _note(notes, f"{shown} is not a file: ignored")
        return None
    if len(data) > limit:
        _note(notes, f"{shown} is longer than {limit} bytes, which no such file on a Jetson is: ignored")
        return None
    return data


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def read_text(root: Optional[Path], path: str, notes: Optional[Notes] = None,
              limit: int = READ_LIMIT) -> Optional[str]:
    """The text of ``root/path`` (NUL bytes dropped, stray bytes replaced, stripped), or None."""
    data = read_file(_root(root) / path.lstrip("/"), notes, limit, label=path)
    if data is None:
        return None
    return data.replace(b"\x00", b"").decode("utf-8", errors="replace").strip()


def parse_int(text: Optional[str], lo: int, hi: int) -> Optional[int]:
    """An ASCII decimal integer within [lo, hi], else None. ``int()`` alone would take '²', '٣' or
    a 5,000-digit number (and raise on the latter on Python 3.11+)."""
    if text is None:
        return None
    text = text.strip()
    if not _DIGITS.fullmatch(text) or len(text.lstrip("0")) > len(str(hi)):
        return None
    value = int(text)
    return value if lo <= value <= hi else None


def read_model(root: Optional[Path] = None, notes: Optional[Notes] = None) -> Optional[str]:
    for path in ("/proc/device-tree/model", "/sys/firmware/devicetree/base/model"):
        text = read_text(root, path, notes, limit=1024)
        if text:
            return text
    return None


_SERIAL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def read_serial(root: Optional[Path] = None, notes: Optional[Notes] = None) -> Optional[str]:
    """The board's serial number from the device tree (a Jetson module's, NUL-terminated), or
    None: absent (not a Jetson, a container without /proc/device-tree), unreadable, or not a short
    run of letters, digits, dots, dashes and underscores (a serial is shown and stored as is)."""
    for path in ("/proc/device-tree/serial-number", "/sys/firmware/devicetree/base/serial-number"):
        text = read_text(root, path, notes, limit=256)
        if text is None:
            continue
        if _SERIAL.fullmatch(text):
            return text
        if text:
            _note(notes, f"{path} holds no serial number (letters, digits, '.', '-', '_'): ignored")
    return None


def read_compatible(root: Optional[Path] = None, notes: Optional[Notes] = None) -> Tuple[str, ...]:
    """The device tree's compatible list: NUL-separated strings, most specific first."""
    for path in ("/proc/device-tree/compatible", "/sys/firmware/devicetree/base/compatible"):
        data = read_file(_root(root) / path.lstrip("/"), notes, limit=4096, label=path)
        if data:
            items = [x.decode("utf-8", errors="replace").strip() for x in data.split(b"\x00")]
            return tuple(x for x in items if x)
    return ()


def read_l4t(root: Optional[Path] = None, notes: Optional[Notes] = None) -> Optional[str]:
    """'36.4.3' from '# R36 (release), REVISION: 4.3, ...'; None when absent or unreadable."""
    text = read_text(root, "/etc/nv_tegra_release", notes, limit=4096)
    if not text:
        return None
    m = _RELEASE.search(text)
    if not m:
        if notes is not None:
            notes.add("/etc/nv_tegra_release has no '# R.. (release), REVISION: ..' line: L4T unknown")
        return None
    revision = m.group(2).rstrip(".")
    if revision.count(".") == 0:
        revision += ".0"
    return f"{m.group(1)}.{revision}"


def jetpack_for(l4t: Optional[str]) -> Optional[str]:
    """The JetPack of an L4T release; an unknown release is shown raw ('L4T R37.1.0') rather than
    guessed."""
    if not l4t:
        return None
    parts = l4t.split(".")
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        if key in L4T_TO_JETPACK:
            return L4T_TO_JETPACK[key]
    return f"L4T R{l4t}"


def read_nvpmodel_table(root: Optional[Path] = None, notes: Optional[Notes] = None
                        ) -> Tuple[Dict[int, str], Optional[int]]:
    """The mode table of /etc/nvpmodel.conf: {id: name} and the default id."""
    text = read_text(root, "/etc/nvpmodel.conf", notes, limit=256 * 1024) or ""
    table: Dict[int, str] = {}
    for raw_id, name in _MODEL_LINE.findall(text):
        mode_id = parse_int(raw_id, 0, MAX_MODE_ID)
        if mode_id is None:
            if notes is not None:
                notes.add(f"/etc/nvpmodel.conf: power-mode id {_short(raw_id)} is not an nvpmodel id: "
                          "that mode is ignored")
            continue
        table[mode_id] = name
    m = _DEFAULT_MODE.search(text)
    default = parse_int(m.group(1), 0, MAX_MODE_ID) if m else None
    return table, default


def read_power_mode_id(root: Optional[Path] = None, notes: Optional[Notes] = None) -> Optional[int]:
    status = read_text(root, "/var/lib/nvpmodel/status", notes)
    if not status:
        return None
    m = _PMODE.search(status)
    if not m:
        return None
    mode_id = parse_int(m.group(1), 0, MAX_MODE_ID)
    if mode_id is None and notes is not None:
        notes.add(f"/var/lib/nvpmodel/status: power-mode id {_short(m.group(1))} is not an nvpmodel "
                  "id: power mode unknown")
    return mode_id


def read_power_mode(root: Optional[Path] = None, notes: Optional[Notes] = None) -> Optional[str]:
    """The current nvpmodel mode's name (or its id as text when the table lacks it)."""
    mode_id = read_power_mode_id(root, notes)
    if mode_id is None:
        return None
    table, _ = read_nvpmodel_table(root, notes)
    return table.get(mode_id, str(mode_id))


def gpu_devfreq_dirs(root: Optional[Path] = None) -> List[Path]:
    """The GPU's devfreq directories under /sys/class/devfreq, by the node names the kernel uses
    (17000000.ga10b on Orin with JetPack 5, 17000000.gpu with 6, gpu-gpc-0 on Thor, ...)."""
    base = _root(root) / "sys/class/devfreq"
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        return []
    found = []
    for entry in entries:
        name = entry.lower()
        if name in GPU_DEVFREQ_NAMES or name.rsplit(".", 1)[-1] in GPU_DEVFREQ_NAMES:
            found.append(base / entry)
    return found


def read_clock_hz(path: Path, notes: Optional[Notes] = None, label: Optional[str] = None) -> Optional[int]:
    data = read_file(path, notes, limit=64, label=label)
    text = None if data is None else data.decode("utf-8", errors="replace").strip()
    value = parse_int(text, *CLOCK_RANGE)
    if text and value is None and notes is not None:
        notes.add(f"{label or path} holds {_short(text)!r}, not a clock in Hz: ignored")
    return value


def read_jetson_clocks(root: Optional[Path] = None, notes: Optional[Notes] = None) -> Optional[bool]:
    """jetson_clocks pins the GPU's devfreq minimum to its maximum; None when no GPU devfreq."""
    r = _root(root)
    for entry in gpu_devfreq_dirs(r):
        rel = "/" + str(entry.relative_to(r))
        lo = read_clock_hz(entry / "min_freq", notes, f"{rel}/min_freq")
        hi = read_clock_hz(entry / "max_freq", notes, f"{rel}/max_freq")
        if lo is not None and hi is not None:
            return lo >= hi
    return None


#: nvfancontrol's running state (``nvfancontrol -q`` prints the same lines): ``FAN1:FAN_PROFILE:cool``.
NVFAN_STATUS = "var/lib/nvfancontrol/status"
#: its configuration, whose ``FAN_DEFAULT_PROFILE cool`` line the daemon starts from.
NVFAN_CONF = "etc/nvfancontrol.conf"
_NVFAN_RUNNING = re.compile(r"^\s*FAN\d*\s*:\s*FAN_PROFILE\s*:\s*(\w+)\s*$", re.MULTILINE | re.IGNORECASE)
_NVFAN_DEFAULT = re.compile(r"^\s*FAN_DEFAULT_PROFILE\s+(\w+)\s*$", re.MULTILINE)


def read_fan_profile(root: Optional[Path] = None, notes: Optional[Notes] = None) -> Optional[str]:
    """The fan profile nvfancontrol runs (``quiet``, ``cool``, a custom one): what the daemon's
    status file says, else the configuration's default; None where there is no nvfancontrol
    (JetPack 4: the fan follows jetson_clocks' PWM instead). A fan profile changes how warm the
    board runs, so how soon it throttles under a long measurement."""
    r = _root(root)
    for rel, pattern in ((NVFAN_STATUS, _NVFAN_RUNNING), (NVFAN_CONF, _NVFAN_DEFAULT)):
        text = read_text(r, rel, notes)
        found = pattern.findall(text or "")
        if found:
            profiles = sorted({p.lower() for p in found})
            return "+".join(profiles)  # one fan on every board today; several would show all
    return None


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+(\w+)", re.MULTILINE)


def header_version(text: str) -> Tuple[Optional[str], Optional[str]]:
    """(major.minor.patch, None) from NvInferVersion.h, or (None, why not). From 10.13 the header
    defines ``NV_TENSORRT_MAJOR TRT_MAJOR_ENTERPRISE`` and the number on ``TRT_MAJOR_ENTERPRISE``,
    so a name is followed to its number (a few hops, no cycles)."""
    defines = dict(_DEFINE.findall(text))
    parts = []
    for key in ("MAJOR", "MINOR", "PATCH"):
        value = defines.get(f"NV_TENSORRT_{key}")
        for _ in range(4):
            if value is None or value.isdigit():
                break
            value = defines.get(value)
        if value is None or not value.isdigit():
            shown = defines.get(f"NV_TENSORRT_{key}")
            return None, (f"NV_TENSORRT_{key} is not defined" if shown is None
                          else f"NV_TENSORRT_{key} is {shown!r}, which the header does not define as a number")
        parts.append(str(int(value)))
    return ".".join(parts), None


def _installed_tensorrt() -> Optional[str]:
    # late: importlib.metadata costs about 20 ms, which `pytest-jetson devices` need not pay
    from importlib import metadata

    for dist in ("tensorrt", "tensorrt-cu12", "tensorrt_libs"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def read_tensorrt_version(root: Optional[Path] = None, notes: Optional[Notes] = None) -> Optional[str]:
    """TensorRT's version without importing it: package metadata, else NvInferVersion.h, else dpkg."""
    r = _root(root)
    installed = _installed_tensorrt() if str(r) == "/" else None
    if installed:
        return installed
    unread = None
    for header in ("/usr/include/aarch64-linux-gnu/NvInferVersion.h", "/usr/include/NvInferVersion.h"):
        text = read_text(r, header)
        if text:
            version, why = header_version(text)
            if version:
                return version
            unread = unread or f"{header}: {why}"
    packaged = _dpkg_tensorrt(r)
    if unread:
        _note(notes, f"{unread}; TensorRT's version "
              + (f"taken from dpkg ({packaged})" if packaged else "unknown (dpkg lists no TensorRT package)"))
    return packaged


def _dpkg_tensorrt(r: Path) -> Optional[str]:
    status = read_text(r, "/var/lib/dpkg/status", limit=64 * 1024 * 1024) or ""
    m = re.search(r"^Package: (?:tensorrt|libnvinfer\d*)\n(?:.+\n)*?Version: ([0-9.]+)", status, re.MULTILINE)
    return m.group(1) if m else None


def read_memory_bytes(root: Optional[Path] = None, notes: Optional[Notes] = None) -> Optional[int]:
    return _meminfo_kb(root, "MemTotal", notes)


def read_memory_available_bytes(root: Optional[Path] = None, notes: Optional[Notes] = None) -> Optional[int]:
    return _meminfo_kb(root, "MemAvailable", notes)


def _meminfo_kb(root: Optional[Path], key: str, notes: Optional[Notes]) -> Optional[int]:
    text = read_text(root, "/proc/meminfo", notes, limit=64 * 1024) or ""
    m = re.search(rf"^{key}:\s*(\S+)\s+kB", text, re.MULTILINE)
    if not m:
        return None
    kb = parse_int(m.group(1), 0, MEMORY_RANGE[1] // 1024)
    if kb is None or kb * 1024 < MEMORY_RANGE[0]:
        if notes is not None:
            notes.add(f"/proc/meminfo: {key} {_short(m.group(1))} kB is not a Jetson's memory: ignored")
        return None
    return kb * 1024


def _short(text: str, keep: int = 24) -> str:
    text = str(text)
    return text if len(text) <= keep else f"{text[:keep]}... ({len(text)} characters)"


@dataclass(frozen=True)
class Detection:
    """What the files say about this machine. ``is_jetson`` False means a plain host.
    ``notes`` says which files were odd and ignored, and why a board matched no profile."""

    model_string: Optional[str] = None
    l4t: Optional[str] = None
    jetpack: Optional[str] = None
    power_mode: Optional[str] = None
    mode_table: Dict[int, str] = field(default_factory=dict)
    jetson_clocks: Optional[bool] = None
    fan_profile: Optional[str] = None
    tensorrt: Optional[str] = None
    memory_bytes: Optional[int] = None
    profile: Optional[Profile] = None
    notes: Tuple[str, ...] = ()
    compatible: Tuple[str, ...] = ()
    part_number: Optional[str] = None
    module: Optional[str] = None
    super_firmware: Optional[bool] = None
    power_mode_id: Optional[int] = None
    default_mode_id: Optional[int] = None
    #: How the profile was found: "compatible", "model" or None.
    matched_by: Optional[str] = None

    @property
    def is_jetson(self) -> bool:
        return (self.profile is not None or self.l4t is not None or self.part_number is not None
                or any(c.startswith("nvidia,tegra") for c in self.compatible)
                or (self.model_string is not None and "jetson" in self.model_string.lower()))

    @property
    def name(self) -> str:
        """The board in words, for messages."""
        if self.profile is not None:
            return self.profile.name
        return self.module or self.model_string or (f"L4T {self.l4t}" if self.l4t else "this machine")


def parse_part(compatible: Sequence[str]) -> Tuple[Optional[str], bool]:
    """The module part number in a compatible list and whether a "-super" entry is present.
    'nvidia,p3768-0000+p3767-0005-super' -> ('p3767-0005', True); the carrier (before '+') is
    skipped. The first entry naming a known module wins; else the first part number at all."""
    first: Optional[str] = None
    super_seen = False
    for entry in compatible:
        module = entry.split(",", 1)[-1].split("+")[-1]
        m = _PART.match(module)
        if not m:
            continue
        super_seen = super_seen or module.endswith("-super")
        if m.group(0) in MODULES:
            return m.group(0), super_seen or any(e.endswith("-super") for e in compatible)
        first = first or m.group(0)
    return first, super_seen


def _by_memory(candidates: List[Profile], memory: Optional[int]) -> Optional[Profile]:
    if not candidates:
        return None
    if memory is None or len(candidates) == 1:
        return candidates[0]
    return min(candidates, key=lambda p: abs(p.memory_bytes - memory))


def _memory_fits(profile: Profile, memory: Optional[int]) -> bool:
    # MemTotal is the module's memory less carve-outs (an 8 GB Orin Nano reports about 7.4 GiB).
    return memory is None or 0.7 * profile.memory_bytes <= memory <= 1.05 * profile.memory_bytes


def _super_of(profile: Profile) -> Optional[Profile]:
    return profiles().get(profile.id + "-super")


def match_profile(model_string: Optional[str], memory_bytes: Optional[int],
                  mode_names: List[str]) -> Optional[Profile]:
    """The profile whose model strings match, disambiguated by memory size and the mode table
    (an Orin Nano on the Super power table lists MAXN_SUPER / 25W)."""
    if not model_string:
        return None
    text = model_string.lower()
    candidates = [p for p in profiles().values() if any(s.lower() in text for s in p.model_strings)]
    if len(candidates) <= 1:
        return candidates[0] if candidates else None

    def score(p: Profile) -> Tuple[int, int, float]:
        modes = {m.name.lower() for m in p.power_modes}
        shared = len(modes & {n.lower() for n in mode_names})
        longest = max(len(s) for s in p.model_strings if s.lower() in text)
        mem_gap = abs(p.memory_bytes - memory_bytes) if memory_bytes else 0.0
        return (shared, longest, -mem_gap)

    return max(candidates, key=score)


Identity = Tuple[Optional[Profile], Optional[str], Optional[str], Optional[bool], Optional[str]]


def _super_firmware(compatible_super: bool, model: Optional[str], mode_names: Sequence[str]) -> bool:
    """Super firmware shows as a "-super" compatible entry, "Super" in the model string, or the
    MAXN_SUPER mode in the nvpmodel table."""
    super_model = bool(model and re.search(r"\bsuper\b", model, re.IGNORECASE))
    super_table = any(n.upper() == "MAXN_SUPER" for n in mode_names)
    return compatible_super or super_model or super_table


def _by_module(module: Module, part: str, memory: Optional[int], is_super: bool, notes: Notes) -> Identity:
    """The profile of a known module, by its memory size (the Super profile on Super firmware)."""
    if not module.profiles:
        notes.add(f"{module.name} ({part}) has no pytest-jetson profile: add one under "
                  "pytest_jetson/devices/profiles/, or simulate a known board")
        return None, part, module.name, is_super, None
    base = [profiles()[i] for i in module.profiles if i in profiles()]
    profile = _by_memory(base, memory)
    if profile is not None and not _memory_fits(profile, memory):
        gib = (memory or 0) / 1024 ** 3
        notes.add(f"{module.name} ({part}) with {gib:.1f} GiB of memory matches no profile "
                  f"({profile.id} has {profile.memory_bytes / 1024 ** 3:.0f} GiB)")
        return None, part, module.name, is_super, None
    if profile is not None and is_super:
        sup = _super_of(profile)
        if sup is not None:
            profile = sup
        else:
            notes.add(f"{module.name} runs Super firmware, which {profile.id} has no Super "
                      "profile for: using the standard profile")
    return profile, part, module.name, is_super, "compatible"


def identify(compatible: Sequence[str], model: Optional[str], memory: Optional[int],
             mode_names: Sequence[str], notes: Notes) -> Identity:
    """(profile, part number, module name, super firmware, matched by) from the identity files."""
    part, super_compat = parse_part(compatible)
    is_super = _super_firmware(super_compat, model, mode_names)
    if part is not None:
        module = MODULES.get(part)
        if module is not None:
            return _by_module(module, part, memory, is_super, notes)
        notes.add(f"module part number {part} (from /proc/device-tree/compatible) is not in "
                  "pytest-jetson's table: identified by the model string instead")
    profile = match_profile(model, memory, list(mode_names))
    if profile is not None and is_super and not profile.id.endswith("-super"):
        profile = _super_of(profile) or profile
    return profile, part, None, is_super if profile is not None else None, "model" if profile else None


def detect(root: Optional[Path] = None) -> Detection:
    """Read this machine's Jetson identity. Never raises: odd files give a partial answer and a
    note saying what was ignored."""
    notes = Notes()
    try:
        return _detect(_root(root), notes)
    except Exception as exc:  # a reader bug must not stop pytest from starting
        notes.add(f"board detection failed ({type(exc).__name__}: {exc}); treated as a host")
        return Detection(notes=tuple(notes))


def _detect(root: Path, notes: Notes) -> Detection:
    model = read_model(root, notes)
    compatible = read_compatible(root, notes)
    l4t = read_l4t(root, notes)
    table, default = read_nvpmodel_table(root, notes)
    memory = read_memory_bytes(root, notes)
    before = len(notes)
    profile, part, module, is_super, matched_by = identify(compatible, model, memory, list(table.values()), notes)
    explained = len(notes) > before
    mode_id = read_power_mode_id(root, notes)
    power_mode = None if mode_id is None else table.get(mode_id, str(mode_id))
    detection = Detection(
        model_string=model,
        l4t=l4t,
        jetpack=jetpack_for(l4t),
        power_mode=power_mode,
        mode_table=table,
        jetson_clocks=read_jetson_clocks(root, notes),
        fan_profile=read_fan_profile(root, notes),
        tensorrt=read_tensorrt_version(root, notes),
        memory_bytes=memory,
        profile=profile,
        compatible=compatible,
        part_number=part,
        module=module,
        super_firmware=is_super,
        power_mode_id=mode_id,
        default_mode_id=default,
        matched_by=matched_by,
    )
    if profile is None and detection.is_jetson and not explained:
        notes.add(f"board {model or part or 'with L4T ' + str(l4t)!r} matches no known profile")
    return replace(detection, notes=tuple(notes))
