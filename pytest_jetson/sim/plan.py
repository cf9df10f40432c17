"""From user inputs (device, model, precision, batch, processes, mode, accelerator, harness) to the
arrays ``core.evaluate`` takes. Shared by ``predict`` (one row), ``sweep`` (a grid) and the
calibration (one row per published figure)."""

from typing import Dict, List, Optional, Tuple

import numpy as np

from ..errors import ConfigError
from . import constants as K
from .arch import effective_precision, rate
from .core import Tables
from .costs import dla_costs, fallback_costs, gpu_costs, memory_per_process
from .engine import Engine, plan
from .hardware import Hardware, cores_per_sm
from .harness_model import Harness
from .precision_choice import choose
from .workload import Workload

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
        self.engines: Dict[str, Engine] = {}
        self._tables: Optional[Tables] = None

    def engine(self, precision: str) -> Engine:
        """The engine by the rules of ``engine.plan`` (every layer that can be quantized is)."""
        if precision not in self.engines:
            self.engines[precision] = plan(self.w, precision, arch=self.hw.arch)
        return self.engines[precision]

    def gpu_engine(self, precision: str, batch: int, sm: Optional[int] = None) -> Engine:
        """The engine the GPU runs: an int8 engine as the builder keeps it, each layer in the
        faster of int8 and fp16 with its reformats (``precision_choice``), at this batch and SM
        count and the board's top clocks (the same engine in every power mode)."""
        if precision != "int8" or not (self.hw.has_tensor_cores or rate(self.hw.arch, "cuda", "int8")):
            return self.engine(precision)
        key = f"{precision}:{batch}:{int(sm or self.hw.sm_count)}"
        if key not in self.engines:
            hw = self.hw
            self.engines[key] = choose(self.w, hw.arch, int(sm or hw.sm_count), hw.has_tensor_cores, batch,
                                       self.c, float(hw.top_hz), float(hw.top_bw or hw.bw), planner=plan)
        return self.engines[key]

    def gid(self, unit: str, precision: str, batch: int, sm: Optional[int] = None) -> int:
        """The table of one engine; ``sm``: the SMs the power mode leaves on (default the profile's)."""
        sm = int(sm or self.hw.sm_count)
        key = (unit, precision, batch, sm)
        if key not in self.index:
            hw, c = self.hw, self.c
            if unit == "gpu":
                item = gpu_costs(self.gpu_engine(precision, batch, sm), hw.arch, sm, hw.has_tensor_cores,
                                 batch, c)
            elif unit == "dla":
                item = dla_costs(self.engine(precision), hw.arch, precision, batch, c)
            else:  # the layers a DLA engine hands back to the GPU, in fp16
                item = fallback_costs(self.engine("fp16"), hw.arch, sm, hw.has_tensor_cores, batch, c)
            self.index[key] = len(self.items)
            self.items.append(item)
            self._tables = None
        return self.index[key]

    @property
    def tables(self) -> Tables:
        if self._tables is None:
            self._tables = Tables(self.items)
        return self._tables


def idle_rule(hw: Hardware) -> float:
    """Idle board power where nothing is published: it grows with the module's size (its largest
    budget); the Orin Nano idles at 3.52 W against a 25 W top budget, about 0.14 of it."""
    return round(0.14 * (hw.max_budget_w or 15.0) + 0.5, 2)


def device_constants(hw: Hardware, notes: List[str]) -> Dict[str, float]:
    c = K.constants(hw.arch, hw.device_id, hw.family)
    if not (K.has_device_entry(hw.device_id, "idle_w") or K.has_family_entry(hw.family, "idle_w")):
        c["idle_w"] = idle_rule(hw)
        notes.append(f"no published idle power for {hw.name}: idle {c['idle_w']} W assumed "
                     "(0.14 x the largest mode budget + 0.5 W, the Orin Nano's ratio)")
    return c


def resolve_precision(hw: Hardware, precision: str, precisions, notes: List[str],
                      harness: Optional[Harness] = None) -> str:
    p, note = effective_precision(hw.arch, precision, tuple(precisions), hw.name,
                                  tf32=bool(harness and harness.tf32),
                                  harness_name=harness.name if harness else "")
    if note and note not in notes:
        notes.append(note)
    return p


def harness_columns(h: Harness, hw: Hardware, c: Dict[str, float], copy_bytes: float,
                    host_scale: float = 1.0) -> Dict[str, float]:
    """What one inference costs the host under harness ``h`` on this board (seconds), and its copies.

    ``host_scale``: a multiplier on the harness's fixed host time per inference (the calibration's
    per-source term; the per-kernel enqueue is the board's and TensorRT's, not the harness's).
    """
    cpu = hw.cpu_scale(c["cpu_ref_mhz"])
    if h.gpu_only:  # the GPU's own time: nothing on the host counts
        return {"h_launch": 0.0, "h_host": 0.0, "h_copy": 0.0, "h_sync": 0.0, "h_gpu_only": 1.0,
                "h_graphs": 0.0, "copy_bytes": 0.0}
    if h.graphs:
        launch = 0.0
        fixed = c["graph_us"] + h.framework_us
    else:
        launch = c["launch_us"]
        fixed = c["enqueue_us"] + h.framework_us
    if h.sync:
        fixed += c["sync_us"]
    copy_s = copy_bytes / (hw.bw * c["copy_eff"]) if h.copies else 0.0
    return {"h_launch": launch * 1e-6 * cpu, "h_host": fixed * 1e-6 * cpu * host_scale, "h_copy": copy_s,
            "h_sync": float(h.sync), "h_gpu_only": float(h.gpu_only), "h_graphs": float(h.graphs),
            "copy_bytes": copy_bytes if h.copies else 0.0}


def config_row(hw: Hardware, w: Workload, tables: KernelTables, precision: str, batch: int,
               n_gpu: int, n_dla: int, c: Dict[str, float], h: Harness,
               host_scale: float = 1.0) -> Dict[str, float]:
    sm = hw.sm_count
    gpu = tables.gid("gpu", precision, batch, sm) if n_gpu else 0
    dla = tables.gid("dla", precision, batch, sm) if n_dla else 0
    fb = tables.gid("fb", precision, batch, sm) if n_dla else 0
    ref = c["cpu_ref_mhz"]
    per_process = memory(w, tables.engine(precision), batch, c)[0]
    io_bytes = float(batch * (w.io_in + w.io_out) * 4.0)
    row = {
        "mem_frac": per_process * (n_gpu + n_dla) / available_memory(hw, c),
        "gid_gpu": gpu, "gid_dla": dla, "gid_fb": fb,
        "n_gpu": float(n_gpu), "n_dla": float(n_dla), "n_tr": float(transitions(w) if n_dla else 0),
        "f_max": hw.gpu_hz, "f_top": hw.top_hz, "bw": hw.bw, "cpu_clk": (hw.cpu_mhz or ref) / ref,
        "cores": float(hw.cpu_online), "budget": np.inf if hw.budget_w is None else float(hw.budget_w),
        "dla_hz": hw.dla_hz, "dla_cores": float(max(hw.dla_count, 1)), "sm": float(hw.sm_count),
        "cores_per_sm": float(cores_per_sm(hw.arch)),
        "idle": c["idle_w"], "batch": float(batch),
    }
    row.update(harness_columns(h, hw, c, io_bytes, host_scale))
    return row


INT_KEYS = ("gid_gpu", "gid_dla", "gid_fb")


def stack(rows: List[Dict[str, float]]) -> Dict[str, np.ndarray]:
    out = {}
    for k in rows[0]:
        out[k] = np.array([r[k] for r in rows], dtype=np.int64 if k in INT_KEYS else float)
    return out


def available_memory(hw: Hardware, c: Dict[str, float]) -> float:
    return hw.memory_bytes * (1.0 - c["os_reserved_frac"])


def memory(w: Workload, e: Engine, batch: int, c: Dict[str, float]):
    return memory_per_process(e, w.io_in, w.io_out, batch, c)
