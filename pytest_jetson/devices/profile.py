"""Device profiles: the spec sheet of one Jetson module and its nvpmodel power modes, read from data.

Profiles are JSON files in ``profiles/`` (one per module), so adding a board is a data change.
A field the public sources do not give is ``null`` in the data, with a note saying so; code that
needs it falls back explicitly (and says so), never silently to an invented figure.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ..errors import ConfigError

PROFILE_SCHEMA = 1
PROFILE_DIR = Path(__file__).parent / "profiles"


@dataclass(frozen=True)
class PowerMode:
    """One nvpmodel mode. ``budget_w`` is None for modes without a power budget (MAXN)."""

    name: str
    id: Optional[int]
    budget_w: Optional[float]
    gpu_max_mhz: Optional[float]
    emc_max_mhz: Optional[float]
    cpu_online: Optional[int]
    cpu_max_mhz: Optional[float]
    dla_max_mhz: Optional[float] = None
    gpu_sm_active: Optional[int] = None
    notes: str = ""

    def to_dict(self) -> Dict[str, Any]:
        return {
            "name": self.name, "id": self.id, "budget_w": self.budget_w,
            "gpu_max_mhz": self.gpu_max_mhz, "emc_max_mhz": self.emc_max_mhz,
            "cpu_online": self.cpu_online, "cpu_max_mhz": self.cpu_max_mhz,
            "dla_max_mhz": self.dla_max_mhz, "gpu_sm_active": self.gpu_sm_active, "notes": self.notes,
        }


@dataclass(frozen=True)
class Profile:
    """The spec sheet of one Jetson module (see ``profiles/*.json`` for the fields' sources)."""

    id: str
    name: str
    family: str
    aliases: Tuple[str, ...]
    model_strings: Tuple[str, ...]
    gpu_arch: str
    compute_capability: Optional[str]
    sm_count: Optional[int]
    cuda_cores: Optional[int]
    tensor_cores: Optional[int]
    dla_count: int
    dla_max_mhz: Optional[float]
    cpu_cores: Optional[int]
    cpu_model: Optional[str]
    cpu_max_mhz: Optional[float]
    memory_bytes: int
    memory_bandwidth_gbs: Optional[float]
    memory_type: Optional[str]
    precisions: Tuple[str, ...]
    power_modes: Tuple[PowerMode, ...]
    default_power_mode: str
    l2_cache_bytes: Optional[int] = None
    int8_tops_dense: Optional[float] = None
    sources: Dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    #: The CPU's single-core figure (``cpu.single_core``: ``score``, ``benchmark``, ``mhz`` the
    #: clock it was measured at, ``source``), which scales a measured function's host time to
    #: this board on the simulator; None where the profile has none.
    cpu_single_core: Optional[Dict[str, Any]] = field(default=None, compare=False, hash=False)
    notes: Tuple[str, ...] = ()
    path: Optional[str] = field(default=None, compare=False, hash=False)

    @property
    def has_dla(self) -> bool:
        return self.dla_count > 0

    @property
    def has_tensor_cores(self) -> bool:
        return bool(self.tensor_cores)

    def mode_names(self) -> List[str]:
        return [m.name for m in self.power_modes]

    @property
    def fastest_mode(self) -> PowerMode:
        """The mode with the highest GPU clock (MAXN where the board has one); ties go to the higher
        memory clock, then the more CPU throughput (cores x clock), then no budget over a budget."""
        def rank(m: PowerMode):
            return (m.gpu_max_mhz or 0.0, m.emc_max_mhz or 0.0,
                    (m.cpu_online or 0) * (m.cpu_max_mhz or 0.0), m.budget_w is None, m.budget_w or 0.0)
        return max(self.power_modes, key=rank)

    def power_mode(self, name_or_id: Any = None, option: str = "--jetson-power-mode") -> PowerMode:
        """A power mode by name (case-insensitive) or nvpmodel id; None gives the default mode and
        ``"fastest"`` the highest-clock mode (``fastest_mode``). An unknown one is a ConfigError
        listing the board's modes and naming ``option``, where the user asked for it."""
        if name_or_id is None or name_or_id == "":
            name_or_id = self.default_power_mode
        key = str(name_or_id).strip()
        if key.lower() == "fastest" and not any(m.name.lower() == "fastest" for m in self.power_modes):
            return self.fastest_mode
        for mode in self.power_modes:
            if mode.name.lower() == key.lower():
                return mode
        # nvpmodel names AGX modes MODE_30W where people say 30W
        for mode in self.power_modes:
            if _bare(mode.name) == _bare(key):
                return mode
        if key.isdigit():
            for mode in self.power_modes:
                if mode.id == int(key):
                    return mode
        listing = ", ".join(
            f"{m.name} (id {m.id})" if m.id is not None else m.name for m in self.power_modes
        )
        raise ConfigError(
            f"power mode {name_or_id!r} does not exist on {self.name}; its modes are: {listing}. "
            f"Pass one of them to {option} (by name or nvpmodel id), or 'fastest' for "
            f"{self.fastest_mode.name}."
        )

    @property
    def default_mode(self) -> PowerMode:
        return self.power_mode(None)


def _bare(name: str) -> str:
    name = name.strip().lower().replace("-", "_")
    return name[5:] if name.startswith("mode_") else name


def _require(data: Dict[str, Any], key: str, path: Path) -> Any:
    if key not in data:
        raise ConfigError(f"device profile {path}: missing field {key!r}")
    return data[key]


def load_profile(path: Path) -> Profile:
    """Read one profile JSON file; a malformed file is an error naming the file and field."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"device profile {path} cannot be read: {exc}") from exc
    if data.get("schema") != PROFILE_SCHEMA:
        raise ConfigError(
            f"device profile {path}: schema {data.get('schema')!r} is not {PROFILE_SCHEMA}; "
            "upgrade pytest-jetson or fix the file"
        )
    gpu = _require(data, "gpu", path)
    cpu = _require(data, "cpu", path)
    mem = _require(data, "memory", path)
    dla = data.get("dla") or {}
    modes = tuple(
        PowerMode(
            name=str(m["name"]),
            id=m.get("id"),
            budget_w=m.get("budget_w"),
            gpu_max_mhz=m.get("gpu_max_mhz"),
            emc_max_mhz=m.get("emc_max_mhz"),
            cpu_online=m.get("cpu_online"),
            cpu_max_mhz=m.get("cpu_max_mhz"),
            dla_max_mhz=m.get("dla_max_mhz"),
            gpu_sm_active=m.get("gpu_sm_active"),
            notes=m.get("notes", ""),
        )
        for m in _require(data, "power_modes", path)
    )
    if not modes:
        raise ConfigError(f"device profile {path}: 'power_modes' is empty")
    profile = Profile(
        id=_require(data, "id", path),
        name=_require(data, "name", path),
        family=_require(data, "family", path),
        aliases=tuple(data.get("aliases", ())),
        model_strings=tuple(data.get("model_strings", ())),
        gpu_arch=_require(gpu, "arch", path),
        compute_capability=gpu.get("compute_capability"),
        sm_count=gpu.get("sm_count"),
        cuda_cores=gpu.get("cuda_cores"),
        tensor_cores=gpu.get("tensor_cores"),
        l2_cache_bytes=gpu.get("l2_cache_bytes"),
        int8_tops_dense=gpu.get("int8_tops_dense"),
        dla_count=int(dla.get("count") or 0),
        dla_max_mhz=dla.get("max_mhz"),
        cpu_cores=cpu.get("cores"),
        cpu_model=cpu.get("model"),
        cpu_max_mhz=cpu.get("max_mhz"),
        memory_bytes=int(_require(mem, "bytes", path)),
        memory_bandwidth_gbs=mem.get("bandwidth_gbs"),
        memory_type=mem.get("type"),
        precisions=tuple(_require(data, "precisions", path)),
        power_modes=modes,
        default_power_mode=_require(data, "default_power_mode", path),
        sources=dict(data.get("sources", {})),
        cpu_single_core=_single_core(cpu.get("single_core"), path),
        notes=tuple(data.get("notes", ())),
        path=str(path),
    )
    profile.power_mode(profile.default_power_mode)  # the default must be one of the modes
    return profile


def _single_core(block: Any, path: Any) -> Optional[Dict[str, Any]]:
    """``cpu.single_core`` checked: a positive ``score`` (and ``mhz`` where given)."""
    if block is None:
        return None
    score = block.get("score") if isinstance(block, dict) else None
    mhz = block.get("mhz") if isinstance(block, dict) else None
    bad = [k for k, v in (("score", score), ("mhz", mhz)) if v is not None and (
        isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0)]
    if not isinstance(block, dict) or score is None or bad:
        raise ConfigError(f"device profile {path}: cpu.single_core must be an object with a positive "
                          f"'score' (and optionally 'mhz', 'benchmark', 'source'), not {block!r}")
    return dict(block)
