"""The numbers the model needs from one device in one power mode, with explicit fallbacks.

Public sources leave some mode fields unknown (``null`` in the profile). Each fallback here is a
stated rule, and it adds a note to the prediction so nobody mistakes it for a spec-sheet figure.
"""

import math
from dataclasses import dataclass, field
from typing import Any, List, Optional

from ..devices.device import as_device
from ..errors import ConfigError
from .arch import arch_key


@dataclass
class Hardware:
    device_id: str
    name: str
    family: str
    arch: str
    sm_count: int
    has_tensor_cores: bool
    dla_count: int
    memory_bytes: int
    mode: str
    budget_w: Optional[float]
    gpu_hz: float           # the mode's maximum GPU clock
    top_hz: float           # the board's highest GPU clock over all its modes (its top DVFS point)
    bw: float               # the mode's DRAM bandwidth (bytes/s, peak)
    cpu_online: int
    cpu_mhz: float
    dla_hz: float
    max_budget_w: Optional[float] = None  # the largest budget among the profile's modes
    top_bw: float = 0.0     # the board's peak DRAM bandwidth (its fastest memory clock)
    cpu_perf: float = 1.0   # work per clock of one CPU core relative to a Cortex-A78AE
    notes: List[str] = field(default_factory=list)

    def cpu_scale(self, ref_mhz: float) -> float:
        """Host time on this board's CPU relative to a Cortex-A78AE core at ``ref_mhz``."""
        mhz = self.cpu_mhz or ref_mhz
        return ref_mhz / mhz / (self.cpu_perf or 1.0)

    @property
    def gpu_mhz(self) -> float:
        return self.gpu_hz / 1e6


#: Single-thread work per clock of the boards' CPU cores relative to a Cortex-A78AE: approximate
#: ratios of public Geekbench 5 single-core scores per GHz (Nano ~160, AGX Xavier ~245, AGX Orin
#: ~410 per GHz); host-side TensorRT work is integer and branch heavy. Not fitted.
CPU_PERF = (("a57", 0.4), ("denver", 0.55), ("carmel", 0.6), ("a78", 1.0), ("neoverse-v3", 1.5))


def cpu_perf(cpu_model: Optional[str]) -> float:
    text = str(cpu_model or "").lower().replace(" ", "")
    found = [v for key, v in CPU_PERF if key in text]
    return min(found) if found else 1.0  # a mixed cluster (TX2) is as fast as its slower cores


def cores_per_sm(arch: str) -> int:
    return 64 if arch == "volta" else 128


def _clock_from_budget(prof: Any, mode: Any):
    """A stand-in GPU clock for a mode whose clock is unknown: scaled from a known mode.

    Dynamic power grows about as f x V^2 and V with f, so the clock grows slower than the budget:
    f = f_ref x sqrt(budget / budget_ref). A mode without a budget (MAXN) counts as 1.25 x the
    largest named budget.
    """
    known = [m for m in prof.power_modes if m.gpu_max_mhz]
    if not known:
        raise ConfigError(f"device profile {prof.id}: no power mode gives gpu_max_mhz; add it to "
                          f"{prof.path}")
    budgets = [m.budget_w for m in prof.power_modes if m.budget_w]
    top = 1.25 * max(budgets) if budgets else None

    def budget(m: Any) -> Optional[float]:
        return m.budget_w or top

    if mode.budget_w is None or not top:
        ref = max(known, key=lambda m: m.gpu_max_mhz)
        return float(ref.gpu_max_mhz), f"(the clock of {ref.name})"
    ref = min(known, key=lambda m: abs(math.log(budget(m) / mode.budget_w)))
    f = ref.gpu_max_mhz * math.sqrt(min(1.0, mode.budget_w / budget(ref)))
    return float(f), f"scaled from {ref.name} ({ref.gpu_max_mhz:.0f} MHz) by sqrt of the budget ratio"


def _sm_count(prof: Any, mode: Any, arch: str, notes: List[str]) -> int:
    """SMs that run in this mode: the profile's count (or from its CUDA cores), fewer where
    the mode power-gates TPCs."""
    sm = prof.sm_count
    if not sm:
        if not prof.cuda_cores:
            raise ConfigError(f"device profile {prof.id}: neither gpu.sm_count nor gpu.cuda_cores is "
                              f"known; add one to {prof.path}")
        sm = max(1, int(round(prof.cuda_cores / cores_per_sm(arch))))
        notes.append(f"SM count unknown: {sm} from {prof.cuda_cores} CUDA cores")
    active = getattr(mode, "gpu_sm_active", None)
    if active and int(active) < sm:
        # Low-power modes power-gate TPCs: fewer SMs run, and fewer burn power.
        notes.append(f"power mode {mode.name}: {int(active)} of {sm} SMs active (the rest power-gated)")
        sm = int(active)
    return sm


def _gpu_mhz(prof: Any, mode: Any, notes: List[str]):
    f = mode.gpu_max_mhz
    if not f:
        f, how = _clock_from_budget(prof, mode)
        notes.append(f"power mode {mode.name}: GPU max clock unknown in public sources; "
                     f"{f:.0f} MHz {how}")
    return f


def _bandwidth(prof: Any, mode: Any, notes: List[str]) -> float:
    """Peak DRAM bandwidth (bytes/s) scaled by the mode's memory clock."""
    emcs = [m.emc_max_mhz for m in prof.power_modes if m.emc_max_mhz]
    bw_peak = prof.memory_bandwidth_gbs
    if not bw_peak:
        raise ConfigError(f"device profile {prof.id}: memory.bandwidth_gbs is unknown; add it to "
                          f"{prof.path}")
    bw = bw_peak * 1e9
    if mode.emc_max_mhz and emcs:
        bw *= mode.emc_max_mhz / max(emcs)
    elif emcs:
        default = prof.default_mode
        emc = default.emc_max_mhz or max(emcs)
        bw *= emc / max(emcs)
        notes.append(f"power mode {mode.name}: memory clock unknown; using {emc:.0f} MHz "
                     f"({default.name if default.emc_max_mhz else 'highest known'})")
    return bw


def _cpu(prof: Any, mode: Any, notes: List[str]):
    """Online CPU cores and their clock (MHz, 0 when unknown)."""
    default = prof.default_mode
    cpu_online = mode.cpu_online or default.cpu_online or prof.cpu_cores
    if not cpu_online:
        cpu_online = 4
        notes.append("CPU core count unknown: assuming 4")
    return cpu_online, mode.cpu_max_mhz or default.cpu_max_mhz or prof.cpu_max_mhz or 0.0


def _dla_mhz(prof: Any, mode: Any, notes: List[str]):
    dla_mhz = mode.dla_max_mhz or prof.dla_max_mhz or 0.0
    if prof.dla_count and not dla_mhz:
        dla_mhz = 1000.0
        notes.append("DLA clock unknown: assuming 1000 MHz")
    return dla_mhz


def resolve(device: Any, power_mode: Any = None) -> Hardware:
    """A Device (or name/Profile) and power mode -> Hardware, with notes for every fallback."""
    dev = as_device(device, power_mode)
    prof = dev.profile
    mode = dev.power_mode
    notes: List[str] = []
    arch = arch_key(prof.gpu_arch)
    sm = _sm_count(prof, mode, arch, notes)
    f = _gpu_mhz(prof, mode, notes)
    bw = _bandwidth(prof, mode, notes)
    cpu_online, cpu_mhz = _cpu(prof, mode, notes)
    dla_mhz = _dla_mhz(prof, mode, notes)
    budgets = [m.budget_w for m in prof.power_modes if m.budget_w]
    top = max([m.gpu_max_mhz for m in prof.power_modes if m.gpu_max_mhz] + [float(f)])
    return Hardware(top_hz=float(top) * 1e6, top_bw=float(prof.memory_bandwidth_gbs) * 1e9,
        max_budget_w=max(budgets) if budgets else None,
        device_id=prof.id, name=prof.name, family=prof.family, arch=arch, sm_count=int(sm),
        has_tensor_cores=bool(prof.tensor_cores), dla_count=int(prof.dla_count or 0),
        memory_bytes=int(prof.memory_bytes), mode=mode.name, budget_w=mode.budget_w,
        gpu_hz=float(f) * 1e6, bw=float(bw), cpu_online=int(cpu_online), cpu_mhz=float(cpu_mhz),
        dla_hz=float(dla_mhz) * 1e6, cpu_perf=cpu_perf(prof.cpu_model), notes=notes,
    )


def profile_precisions(device: Any):
    return as_device(device).profile.precisions
