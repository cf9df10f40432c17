"""Is this a Jetson, and which? Read from the files a board has, through one seam (``root``).

Every read goes through ``_read(root, path)``, so tests point ``root`` at a directory holding
real-looking copies of ``/proc/device-tree/model``, ``/etc/nv_tegra_release``,
``/etc/nvpmodel.conf``, ``/var/lib/nvpmodel/status`` and the GPU's devfreq files. Nothing here
runs a command or imports TensorRT: detection happens at pytest start-up and must stay cheap.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .profile import Profile
from .registry import profiles

# L4T (Jetson Linux) release -> JetPack, from NVIDIA's JetPack archive. Longest prefix wins, so
# "36.4" covers 36.4.0 and an exact "36.4.3" overrides it.
L4T_TO_JETPACK: Dict[str, str] = {
    "32.1": "4.2", "32.2": "4.2.1", "32.2.1": "4.2.2", "32.3.1": "4.3", "32.4.2": "4.4 DP",
    "32.4.3": "4.4", "32.4.4": "4.4.1", "32.5": "4.5", "32.5.0": "4.5", "32.5.1": "4.5.1",
    "32.5.2": "4.5.1", "32.6.1": "4.6", "32.7.1": "4.6.1", "32.7.2": "4.6.2", "32.7.3": "4.6.3",
    "32.7.4": "4.6.4", "32.7.5": "4.6.5", "32.7.6": "4.6.6",
    "34.1": "5.0 DP", "34.1.1": "5.0.1 DP", "35.1": "5.0.2", "35.1.0": "5.0.2", "35.2.1": "5.1",
    "35.3.1": "5.1.1", "35.4.1": "5.1.2", "35.5.0": "5.1.3", "35.6.0": "5.1.4", "35.6.1": "5.1.5",
    "36.2": "6.0 DP", "36.2.0": "6.0 DP", "36.3": "6.0", "36.3.0": "6.0", "36.4": "6.1",
    "36.4.0": "6.1", "36.4.3": "6.2", "36.4.4": "6.2.1",
    "38.2": "7.0", "38.2.0": "7.0",
}

_RELEASE = re.compile(r"#\s*R(\d+)\s*\(release\),\s*REVISION:\s*([0-9.]+)", re.IGNORECASE)
_MODEL_LINE = re.compile(r"POWER_MODEL\s+ID\s*=\s*(\d+)\s+NAME\s*=\s*([^\s>]+)", re.IGNORECASE)
_PMODE = re.compile(r"pmode\s*:\s*(\d+)", re.IGNORECASE)
_DEFAULT_MODE = re.compile(r"PM_CONFIG\s+DEFAULT\s*=\s*(\d+)", re.IGNORECASE)


def _read(root: Path, path: str) -> Optional[str]:
    """The text of ``root/path``, or None when absent or unreadable (a host has none of these)."""
    return _read_file(Path(root) / path.lstrip("/"))


def _read_file(path: Path) -> Optional[str]:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    # device-tree strings end in NUL bytes; some files have stray non-UTF-8 bytes
    return data.replace(b"\x00", b"").decode("utf-8", errors="replace").strip()


def read_model(root: Path = Path("/")) -> Optional[str]:
    text = _read(root, "/proc/device-tree/model") or _read(root, "/sys/firmware/devicetree/base/model")
    return text or None


def read_l4t(root: Path = Path("/")) -> Optional[str]:
    """'36.4.3' from '# R36 (release), REVISION: 4.3, ...'; None when absent or unreadable."""
    text = _read(root, "/etc/nv_tegra_release")
    if not text:
        return None
    m = _RELEASE.search(text)
    if not m:
        return None
    return f"{m.group(1)}.{m.group(2).rstrip('.')}"


def jetpack_for(l4t: Optional[str]) -> Optional[str]:
    """The JetPack of an L4T release; an unknown release is shown raw ('L4T R37.1') rather than
    guessed."""
    if not l4t:
        return None
    parts = l4t.split(".")
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        if key in L4T_TO_JETPACK:
            return L4T_TO_JETPACK[key]
    return f"L4T R{l4t}"


def read_nvpmodel_table(root: Path = Path("/")) -> Tuple[Dict[int, str], Optional[int]]:
    """The mode table of /etc/nvpmodel.conf: {id: name} and the default id."""
    text = _read(root, "/etc/nvpmodel.conf") or ""
    table = {int(i): name for i, name in _MODEL_LINE.findall(text)}
    m = _DEFAULT_MODE.search(text)
    return table, (int(m.group(1)) if m else None)


def read_power_mode(root: Path = Path("/")) -> Optional[str]:
    """The current nvpmodel mode's name (or its id as text when the table lacks it)."""
    status = _read(root, "/var/lib/nvpmodel/status")
    if not status:
        return None
    m = _PMODE.search(status)
    if not m:
        return None
    mode_id = int(m.group(1))
    table, _ = read_nvpmodel_table(root)
    return table.get(mode_id, str(mode_id))


def read_jetson_clocks(root: Path = Path("/")) -> Optional[bool]:
    """jetson_clocks pins the GPU's devfreq minimum to its maximum; None when no GPU devfreq."""
    base = Path(root) / "sys/class/devfreq"
    try:
        entries = sorted(p for p in base.iterdir())
    except OSError:
        return None
    for entry in entries:
        name = entry.name.lower()
        if not any(k in name for k in ("gpu", "gv11b", "ga10b", "gp10b", "gb10b", "gm20b")):
            continue
        lo, hi = _read_file(entry / "min_freq"), _read_file(entry / "max_freq")
        if lo and hi and lo.isdigit() and hi.isdigit():
            return int(lo) >= int(hi)
    return None


def read_tensorrt_version(root: Path = Path("/")) -> Optional[str]:
    """TensorRT's version without importing it: package metadata, else NvInferVersion.h, else dpkg."""
    if str(root) == "/":
        try:
            from importlib import metadata

            for dist in ("tensorrt", "tensorrt-cu12", "tensorrt_libs"):
                try:
                    return metadata.version(dist)
                except metadata.PackageNotFoundError:
                    continue
        except ImportError:  # pragma: no cover - Python < 3.8 only
            pass
    for header in ("/usr/include/aarch64-linux-gnu/NvInferVersion.h", "/usr/include/NvInferVersion.h"):
        text = _read(root, header)
        if text:
            parts = [re.search(rf"#define\s+NV_TENSORRT_{k}\s+(\d+)", text) for k in ("MAJOR", "MINOR", "PATCH")]
            if all(parts):
                return ".".join(p.group(1) for p in parts)  # type: ignore[union-attr]
    status = _read(root, "/var/lib/dpkg/status") or ""
    m = re.search(r"^Package: (?:tensorrt|libnvinfer\d*)\n(?:.+\n)*?Version: ([0-9.]+)", status, re.MULTILINE)
    return m.group(1) if m else None


def read_memory_bytes(root: Path = Path("/")) -> Optional[int]:
    text = _read(root, "/proc/meminfo") or ""
    m = re.search(r"MemTotal:\s+(\d+)\s+kB", text)
    return int(m.group(1)) * 1024 if m else None


@dataclass(frozen=True)
class Detection:
    """What the files say about this machine. ``is_jetson`` False means a plain host."""

    model_string: Optional[str] = None
    l4t: Optional[str] = None
    jetpack: Optional[str] = None
    power_mode: Optional[str] = None
    mode_table: Dict[int, str] = field(default_factory=dict)
    jetson_clocks: Optional[bool] = None
    tensorrt: Optional[str] = None
    memory_bytes: Optional[int] = None
    profile: Optional[Profile] = None
    notes: Tuple[str, ...] = ()

    @property
    def is_jetson(self) -> bool:
        return self.profile is not None or self.l4t is not None or (
            self.model_string is not None and "jetson" in self.model_string.lower()
        )


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


def detect(root: Path = Path("/")) -> Detection:
    """Read this machine's Jetson identity. Never raises: odd files give a partial answer."""
    root = Path(root)
    model = read_model(root)
    l4t = read_l4t(root)
    table, _ = read_nvpmodel_table(root)
    memory = read_memory_bytes(root)
    profile = match_profile(model, memory, list(table.values()))
    notes = []
    if model and profile is None and ("jetson" in model.lower() or l4t):
        notes.append(f"board {model!r} matches no known profile")
    return Detection(
        model_string=model,
        l4t=l4t,
        jetpack=jetpack_for(l4t),
        power_mode=read_power_mode(root),
        mode_table=table,
        jetson_clocks=read_jetson_clocks(root),
        tensorrt=read_tensorrt_version(root),
        memory_bytes=memory,
        profile=profile,
        notes=tuple(notes),
    )
