"""The model's free constants: code defaults, overridden by the fitted values in calibration.json.

Constants are per architecture (time, power coefficients) with a few per device (idle power),
never per model: a constant that only fits one network would be a lookup of the answer.
``pytest_jetson/sim/calibrate.py`` writes ``pytest_jetson/sim/data/calibration.json`` with a note
of what each value was fitted to.
"""

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Optional

CALIBRATION_PATH = Path(__file__).resolve().parent / "data" / "calibration.json"

#: Starting values (and the values for architectures no published row covers).
ARCH_DEFAULTS: Dict[str, float] = {
    # time
    "tc_eff": 0.65,          # fraction of tensor-core peak a large TensorRT GEMM/conv reaches
    "cuda_eff": 0.75,        # fraction of CUDA-core peak
    "tf32_factor": 0.8,      # tf32 tensor-core efficiency relative to fp16/int8
    "dw_eff": 0.35,          # depthwise / grouped convs on CUDA cores
    "mem_eff": 0.85,         # fraction of DRAM peak a streaming kernel reaches
    "l2_reuse": 0.0,         # share of an L2-sized activation's traffic that stays in L2
    "tile": 64.0,            # output tile edge of a conv/GEMM CTA (wave quantisation)
    "kernel_cycles": 4000.0,  # fixed GPU cycles per kernel (ramp, prologue, epilogue)
    "launch_us": 6.0,        # CPU enqueue cost per kernel at cpu_ref_mhz
    "host_us": 120.0,        # per-inference host cost (sync, bindings) at cpu_ref_mhz
    "copy_gbs": 2.0,         # host staging rate of fp32 I/O (pageable H2D/D2H copies)
    "cpu_ref_mhz": 1500.0,
    "graphs_factor": 0.2,    # host work left when a harness replays CUDA graphs (calibration only)
    "switch_frac": 0.03,     # GPU time-slice switching overhead per extra process
    "pressure": 0.25,        # slow-down at 100% of unified memory, growing from 80% (not fitted: no data)
    "core_share": 0.5,       # share of online CPU cores inference threads get (big.LITTLE, seeds)
    "dla_eff": 0.25,
    "dla_transition_us": 150.0,  # DLA <-> GPU hand-over for a fallback segment
    "contention": 0.5,       # coupling of a DLA instance's DRAM traffic to a busy GPU instance
    # memory
    "context_mb": 350.0,     # CUDA + TensorRT context per process
    "workspace_factor": 2.0,  # activation workspace over the largest layer's in+out
    "os_reserved_frac": 0.12,  # unified memory the OS and desktop keep
    # power
    "idle_w": 3.5,
    "gpu_w": 1.0,            # W per SM per GHz at 1 V, fully busy
    "v0": 0.6,               # GPU voltage at 0 MHz (V)
    "v1": 0.45,              # V per GHz
    "v_max": 1.0,            # GPU rail ceiling (V): Orin's top DVFS points sit near 1.0 V
    "gpu_base_frac": 0.35,   # power of a busy SM that is waiting on memory, relative to math
    "mem_w_per_gbs": 0.06,   # DRAM + EMC W per GB/s moved
    "emc_w": 0.5,            # W per 100 GB/s of the mode's peak bandwidth while the EMC is awake
    "cpu_w": 0.6,            # W per busy core at cpu_ref_mhz
    "dla_w": 1.5,            # W per busy DLA core at its max clock
}


@lru_cache(maxsize=None)
def _file() -> Dict[str, Any]:
    try:
        return json.loads(CALIBRATION_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _values(section: Optional[Dict[str, Any]]) -> Dict[str, float]:
    out: Dict[str, float] = {}
    for key, entry in (section or {}).items():
        if isinstance(entry, dict) and "value" in entry:
            out[key] = float(entry["value"])
        elif isinstance(entry, (int, float)):
            out[key] = float(entry)
    return out


def constants(arch: str, device_id: Optional[str] = None, family: Optional[str] = None,
              overrides: Optional[Dict[str, float]] = None) -> Dict[str, float]:
    """Defaults, then the architecture's fitted values, then the family's, then the device's."""
    data = _file()
    out = dict(ARCH_DEFAULTS)
    out.update(_values(data.get("arch", {}).get(arch)))
    if family:
        out.update(_values(data.get("families", {}).get(family)))
    if device_id:
        out.update(_values(data.get("devices", {}).get(device_id)))
    if overrides:
        out.update(overrides)
    return out


def calibrated() -> bool:
    """False when calibration.json is missing or unreadable (a packaging fault): defaults apply."""
    return bool(_file().get("arch"))


def has_device_entry(device_id: str, key: str) -> bool:
    return key in (_file().get("devices", {}).get(device_id) or {})


def has_family_entry(family: str, key: str) -> bool:
    return key in (_file().get("families", {}).get(family) or {})


def reload() -> None:
    """Forget the cached file (after calibrate writes a new one)."""
    _file.cache_clear()
