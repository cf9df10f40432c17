"""The model's free constants: code defaults, overridden by the fitted values in calibration.json.

Constants are shared by every board (``global``), or per architecture, family or device where the
physics differs; never per model: a constant that only fits one network would be a lookup of the
answer. ``pytest_jetson/sim/calibration.py`` writes ``pytest_jetson/sim/data/calibration.json`` with
a note of what each value was fitted to. The file ships with the package: a missing or malformed
one is an error naming it, never a silent fall-back to the defaults.
"""

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Optional

from ..errors import SimulationError

CALIBRATION_PATH = Path(__file__).resolve().parent / "data" / "calibration.json"
SCHEMA = 2

#: Starting values of the fit (and the values of constants no published row constrains).
ARCH_DEFAULTS: Dict[str, float] = {
    # GPU time
    "tc_eff": 0.66,          # fraction of tensor-core peak a large TensorRT GEMM reaches
    "cuda_eff": 0.80,        # fraction of CUDA-core peak
    "tf32_factor": 0.80,     # tf32 tensor-core efficiency relative to fp16
    "int8_factor": 0.85,     # int8 tensor-core efficiency relative to fp16
    "int8_arch": 1.0,        # an architecture's int8 efficiency relative to that shared factor
    "conv_eff": 0.85,        # a windowed convolution's efficiency relative to a plain GEMM
    "conv_k0": 32.0,         # reduction length at which a conv reaches half its tile efficiency
    "wino_gain": 1.3,        # a Winograd 3x3 convolution's rate over an implicit GEMM's (CUDA cores)
    "dw_eff": 0.30,          # depthwise / thin grouped convs on CUDA cores
    "mem_eff": 0.90,         # fraction of DRAM peak a kernel's traffic reaches
    "write_cost": 1.0,       # bus time of a written byte over a read one (DRAM write roof over read roof)
    "store_bpc": 32.0,       # bytes per SM per cycle a tile kernel's epilogue stores (shared memory, then L2)
    "kernel_cycles": 2000.0,  # fixed GPU cycles per kernel (block ramp-up, tail)
    "kernel_us": 3.0,        # fixed microseconds per kernel, whatever the clock (launch gap)
    "graph_kernel_frac": 0.5,  # share of that gap left when a CUDA graph launches the kernels
    # host time, microseconds on a Cortex-A78AE core at cpu_ref_mhz
    "cpu_ref_mhz": 1500.0,
    "launch_us": 8.0,        # TensorRT enqueue per kernel
    "enqueue_us": 20.0,      # enqueue work per inference (bindings, profile, stream)
    "sync_us": 40.0,         # one synchronous wait per inference (stream synchronize, wake-up)
    "graph_us": 15.0,        # one CUDA-graph launch per inference
    "copy_eff": 0.47,        # payload rate of a host<->device copy over the DRAM peak (read + write)
    # concurrency
    "switch_frac": 0.03,     # GPU time-slice switching overhead per extra process
    "pressure": 0.25,        # slow-down at 100% of unified memory, growing from 80% (not fitted: no data)
    "core_share": 0.5,       # share of online CPU cores inference threads get (big.LITTLE, seeds)
    "dla_eff": 0.40,
    "dla_transition_us": 150.0,  # DLA <-> GPU hand-over for a fallback segment
    "contention": 0.75,      # coupling of a DLA instance's DRAM traffic to a busy GPU instance
    # memory
    "context_mb": 350.0,     # CUDA + TensorRT context per process
    "workspace_factor": 2.0,  # activation workspace over the largest layer's in+out
    "os_reserved_frac": 0.12,  # unified memory the OS and desktop keep
    # power
    "idle_w": 3.5,
    # GPU energy per fp16 multiply-accumulate at 1 V (pJ). Starting value from the AGX Orin GPU
    # rail under a stress test (FORUM_AGX_PWR, not a calibration row): 40.4 W at MAXN and 5.2 W in
    # the 15 W mode over 14 and 6 SMs of tensor-core arithmetic give 2.4-4.9 pJ per MAC at 1 V.
    "mac_pj": 3.0,
    "gpu_byte_pj": 60.0,     # GPU energy per DRAM byte it moves at 1 V: L2, crossbar, SM loads (pJ)
    "gpu_w": 0.3,            # GPU clock tree: W per 128 CUDA cores per GHz at 1 V while busy
    "gpu_leak_w": 0.15,      # W per 128 CUDA cores per V while the GPU runs (leakage)
    "v0": 0.6,               # GPU voltage towards 0 MHz (V)
    "v_max": 1.0,            # GPU voltage at the board's highest GPU clock (V): the top DVFS points sit near 1.0 V
    "mem_w_per_gbs": 0.04,   # DRAM W per GB/s moved (LPDDR5 about 5 pJ/bit)
    "emc_w": 0.5,            # W per 100 GB/s of the mode's peak bandwidth while the EMC is awake
    "cpu_w": 0.6,            # W per busy core at cpu_ref_mhz
    "dla_w": 1.5,            # W per busy DLA core at its max clock
}

SECTIONS = ("global", "arch", "families", "devices")


def _fail(why: str) -> None:
    raise SimulationError(
        f"calibration file {CALIBRATION_PATH} {why}: the simulated device cannot run without its "
        "fitted constants. Reinstall pytest-jetson (the file ships with it), or regenerate it with "
        "`pytest-jetson calibrate --fit --write`")


@lru_cache(maxsize=None)
def _file() -> Dict[str, Any]:
    try:
        text = CALIBRATION_PATH.read_text(encoding="utf-8")
    except FileNotFoundError:
        _fail("is missing")
    except OSError as exc:
        _fail(f"cannot be read ({exc.strerror or exc})")
    try:
        data = json.loads(text)
    except ValueError as exc:
        _fail(f"is not valid JSON ({exc})")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        _fail(f"has schema {got!r}, not {SCHEMA}")
    for section in SECTIONS:
        part = data.get(section, {})
        if not isinstance(part, dict):
            _fail(f"has a malformed {section!r} section (expected an object)")
        entries = part.items() if section == "global" else (
            (f"{owner}.{k}", v) for owner, params in part.items() for k, v in (params or {}).items())
        for key, entry in entries:
            value = entry.get("value") if isinstance(entry, dict) else entry
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                _fail(f"has a malformed value for {section}.{key} ({value!r}; expected a number)")
    return data


def _values(section: Optional[Dict[str, Any]]) -> Dict[str, float]:
    out: Dict[str, float] = {}
    for key, entry in (section or {}).items():
        out[key] = float(entry["value"] if isinstance(entry, dict) else entry)
    return out


def constants(arch: str, device_id: Optional[str] = None, family: Optional[str] = None,
              overrides: Optional[Dict[str, float]] = None) -> Dict[str, float]:
    """Defaults, then the shared fitted values, the architecture's, the family's, the device's."""
    data = _file()
    out = dict(ARCH_DEFAULTS)
    out.update(_values(data.get("global")))
    out.update(_values(data.get("arch", {}).get(arch)))
    if family:
        out.update(_values(data.get("families", {}).get(family)))
    if device_id:
        out.update(_values(data.get("devices", {}).get(device_id)))
    if overrides:
        out.update(overrides)
    return out


def has_device_entry(device_id: str, key: str) -> bool:
    return key in (_file().get("devices", {}).get(device_id) or {})


def has_family_entry(family: str, key: str) -> bool:
    return key in (_file().get("families", {}).get(family) or {})


def validation() -> Dict[str, Any]:
    """What the last fit stored about itself (cross-validated error per source and metric)."""
    return dict(_file().get("validation") or {})


def reload() -> None:
    """Forget the cached file (after calibrate writes a new one)."""
    _file.cache_clear()
