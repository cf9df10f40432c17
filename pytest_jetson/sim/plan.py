"""From user inputs (device, model, precision, batch, processes, mode, accelerator) to the arrays
``core.evaluate`` takes. Shared by ``predict`` (one row) and ``sweep`` (a grid)."""

from typing import Dict, List, Optional, Tuple

import numpy as np

from ..errors import ConfigError
from . import constants as K
from .arch import effective_precision
from .core import Tables
from .hardware import Hardware, cores_per_sm
from .workload import Workload, costs, memory_per_process

ACCELERATORS = ("gpu", "dla", "gpu+dla")


def check_batch(batch) -> int:
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ConfigError(f"batch {batch!r} is not a positive integer; use a batch of 1 or more")
    return int(batch)


def check_processes(processes) -> int:
    if isinstance(processes, bool) or not isinstance(processes, (int, np.integer)) or processes < 1:
        raise ConfigError(f"processes {processes!r} is not a positive integer; use 1 or more")
    return int(processes)


def check_accelerator(accelerator: str, hw: Hardware, processes: int, precision: str) -> Tuple[int, int]:
    """(GPU instances, DLA instances) for this accelerator choice."""
    acc = str(accelerator).strip().lower().replace(" ", "")
    if acc not in ACCELERATORS:
        raise ConfigError(f"accelerator {accelerator!r} is unknown; use one of {', '.join(ACCELERATORS)}")
    if acc == "gpu":
        return processes, 0
    if not hw.dla_count:
        raise ConfigError(f"{hw.name} has no DLA: accelerator {accelerator!r} cannot run there; use "
                          "accelerator='gpu' (boards with DLAs: Xavier NX, AGX Xavier, Orin NX, AGX Orin)")
    if precision not in ("fp16", "int8"):
        raise ConfigError(f"the DLA runs fp16 or int8 only, not {precision}; use precision fp16 or int8, "
                          "or accelerator='gpu'")
    if acc == "dla":
        return 0, processes
    if processes < 2:
        raise ConfigError("accelerator 'gpu+dla' runs one engine on the GPU and one per DLA core beside "
                          "it: use processes=2 or more (processes counts all instances)")
    n_d = min(hw.dla_count, processes - 1)
    return processes - n_d, n_d


def transitions(w: Workload) -> int:
    """GPU<->DLA hand-overs per inference of a DLA engine (each run of fallback layers costs two)."""
    ok = w.dla_ok.astype(int)
    changes = int(np.count_nonzero(np.diff(ok)))
    return changes + (0 if ok[0] else 1) + (0 if ok[-1] else 1)


class KernelTables:
    """Builds each distinct engine's kernel table once (per precision, batch and unit)."""

    def __init__(self, w: Workload, hw: Hardware, c: Dict[str, float]) -> None:
        self.w, self.hw, self.c = w, hw, c
        self.items: list = []
        self.index: Dict[tuple, int] = {}
        self._tables: Optional[Tables] = None

    def gid(self, unit: str, precision: str, batch: int, sm: Optional[int] = None) -> int:
        """The table of one engine; ``sm``: the SMs the power mode leaves on (default the profile's)."""
        sm = int(sm or self.hw.sm_count)
        key = (unit, precision, batch, sm)
        if key not in self.index:
            w, hw = self.w, self.hw
            if unit == "gpu":
                item = costs(w, hw.arch, sm, hw.has_tensor_cores, precision, batch, self.c)
            elif unit == "dla":
                item = costs(w, hw.arch, sm, hw.has_tensor_cores, precision, batch, self.c,
                             unit="dla", select=w.dla_ok)
            else:  # the layers a DLA engine hands back to the GPU
                item = costs(w, hw.arch, sm, hw.has_tensor_cores, precision, batch, self.c,
                             select=~w.dla_ok)
            self.index[key] = len(self.items)
            self.items.append(item)
            self._tables = None
        return self.index[key]

    @property
    def tables(self) -> Tables:
        if self._tables is None:
            self._tables = Tables(self.items)
        return self._tables


def device_constants(hw: Hardware, notes: List[str]) -> Dict[str, float]:
    c = K.constants(hw.arch, hw.device_id, hw.family)
    c["l2_bytes"] = hw.l2_bytes
    if not K.calibrated():
        notes.append(f"{K.CALIBRATION_PATH} is missing or unreadable: the model runs on uncalibrated "
                     "defaults (reinstall pytest-jetson; the file ships with the package)")
    if not (K.has_device_entry(hw.device_id, "idle_w") or K.has_family_entry(hw.family, "idle_w")):
        # No published idle figure for this board: idle grows with the module's size (its budget).
        ref = hw.max_budget_w or 15.0
        # Orin Nano: 3.52 W idle against a 25 W top budget, about 0.14 of it.
        c["idle_w"] = round(0.14 * ref + 0.5, 2)
        notes.append(f"no published idle power for {hw.name}: idle {c['idle_w']} W assumed "
                     "(0.14 x the largest mode budget + 0.5 W, the Orin Nano's ratio)")
    return c


def resolve_precision(hw: Hardware, precision: str, precisions, notes: List[str]) -> str:
    p, note = effective_precision(hw.arch, precision, tuple(precisions), hw.name)
    if note and note not in notes:
        notes.append(note)
    return p


def config_row(hw: Hardware, w: Workload, tables: KernelTables, precision: str, batch: int,
               n_gpu: int, n_dla: int, c: Dict[str, float]) -> Dict[str, float]:
    sm = hw.sm_count
    gpu = tables.gid("gpu", precision, batch, sm) if n_gpu else 0
    dla = tables.gid("dla", precision, batch, sm) if n_dla else 0
    fb = tables.gid("fb", precision, batch, sm) if n_dla else 0
    ref = c["cpu_ref_mhz"]
    per_process = memory_per_process(w, precision, batch, c)[0]
    return {
        "mem_frac": per_process * (n_gpu + n_dla) / available_memory(hw, c),
        "gid_gpu": gpu, "gid_dla": dla, "gid_fb": fb,
        "n_gpu": float(n_gpu), "n_dla": float(n_dla), "n_tr": float(transitions(w) if n_dla else 0),
        "f_max": hw.gpu_hz, "bw": hw.bw, "cpu_scale": ref / (hw.cpu_mhz or ref),
        "cores": float(hw.cpu_online), "budget": np.inf if hw.budget_w is None else float(hw.budget_w),
        "dla_hz": hw.dla_hz, "dla_cores": float(max(hw.dla_count, 1)), "sm": float(hw.sm_count),
        "cores_per_sm": float(cores_per_sm(hw.arch)),
        "idle": c["idle_w"], "io_bytes": float(batch * (w.io_in + w.io_out) * 4.0),
        "batch": float(batch),
    }


INT_KEYS = ("gid_gpu", "gid_dla", "gid_fb")


def stack(rows: List[Dict[str, float]]) -> Dict[str, np.ndarray]:
    out = {}
    for k in rows[0]:
        out[k] = np.array([r[k] for r in rows], dtype=np.int64 if k in INT_KEYS else float)
    return out


def available_memory(hw: Hardware, c: Dict[str, float]) -> float:
    return hw.memory_bytes * (1.0 - c["os_reserved_frac"])


def memory(w: Workload, precision: str, batch: int, c: Dict[str, float]):
    return memory_per_process(w, precision, batch, c)
