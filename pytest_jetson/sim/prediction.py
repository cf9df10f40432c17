"""``predict``: one configuration on one simulated board -> a ``Prediction``."""

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Dict, List, Optional

import numpy as np

from ..errors import ConfigError, SimulationError
from ..units import format_bytes
from . import activity, core, plan
from .arch import TF32_ARCHS, normalise_precision
from .hardware import profile_precisions, resolve
from .harness_model import get as get_harness
from .workload import KINDS, load


class OutOfMemory(SimulationError):
    """The configuration needs more unified memory than the board has."""

    def __init__(self, message: str, needed: float = 0.0, available: float = 0.0) -> None:
        super().__init__(message)
        self.needed = needed
        self.available = available


@dataclass
class Prediction:
    """What the simulated board does for one configuration (SI units: s, B, W, J).

    ``latency`` is the mean time of one batch in one process under the harness (including waits
    for other processes' time slices); ``latency_p50``/``latency_p99`` are quantiles of the
    noise-free distribution. ``gpu_time`` is the GPU's compute time per batch (trtexec's "GPU
    Compute Time": the kernels alone, no copies); ``host_time`` the CPU time the harness spends per
    batch (enqueue or graph launch, synchronisation, its own overhead), which overlaps the GPU's
    work where the harness pipelines; ``copy_time`` the input and output copies per batch (0 under
    harnesses that do not copy). ``throughput`` counts items per second over all processes;
    ``energy`` is board J per item.
    """

    device: str
    power_mode: str
    model: str
    precision: str
    requested_precision: str
    accelerator: str
    batch: int
    processes: int
    throughput: float
    per_process_throughput: float
    latency: float
    latency_p50: float
    latency_p99: float
    memory: float
    memory_per_process: float
    power: float
    idle_power: float
    energy: float
    gpu_clock_mhz: float
    max_gpu_clock_mhz: float
    gpu_util: float
    emc_util: float
    bound: str
    gpu_time: float = 0.0
    host_time: float = 0.0
    copy_time: float = 0.0
    harness: str = "plugin"
    notes: List[str] = field(default_factory=list)
    breakdown: Dict[str, float] = field(default_factory=dict)
    latency_alone: float = 0.0
    #: GPU activity as Nsight Systems' GPU metrics sample it, fractions (0..1) of the elapsed
    #: time as ``gpu_util`` is (``sim.activity``): SMs with a resident block, tensor cores busy,
    #: issue slots used, DRAM bandwidth over its peak.
    sm_active: float = 0.0
    tensor_active: float = 0.0
    issue_active: float = 0.0
    dram_util: float = 0.0

    @property
    def device_id(self) -> str:
        return self.device

    @property
    def latency_mean(self) -> float:
        return self.latency

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["notes"] = list(self.notes)
        return d


def _oom_message(hw, model, precision, batch, processes, per_process, parts, available) -> str:
    fit = int(available // per_process) if per_process > 0 else 0
    detail = ", ".join(f"{k} {format_bytes(v)}" for k, v in parts.items())
    fix = (f"use at most {fit} processes at this batch" if fit >= 1
           else "use a smaller batch or precision (one process alone does not fit)")
    return (f"out of memory on {hw.name}: {processes} x {model} ({precision}, batch {batch}) needs "
            f"{format_bytes(per_process * processes)} ({format_bytes(per_process)} per process: {detail}) "
            f"but {format_bytes(available)} of unified memory is available; {fix}, or fewer/smaller "
            "batches")


def _with_tf32(h: Any, tf32: Optional[bool], hw: Any, precision: str, notes: List[str]) -> Any:
    """The harness with its TF32 choice for fp32 engines overridden by ``tf32`` (None: its own)."""
    if tf32 is None:
        return h
    if not isinstance(tf32, bool):
        raise ConfigError(f"tf32={tf32!r} must be True, False or None (the harness's own choice)")
    if hw.arch not in TF32_ARCHS:
        notes.append(f"tf32={tf32} ignored: {hw.name} ({hw.arch}) has no TF32 tensor cores, so fp32 engines "
                     "run true fp32 whatever TensorRT's TF32 flag says")
        return h
    if not tf32 and normalise_precision(precision) == "tf32":
        raise ConfigError("precision='tf32' with tf32=False contradict each other: pass precision='fp32' "
                          "with tf32=False for true fp32, or drop tf32=")
    return replace(h, tf32=tf32)


def predict(device: Any, model: Any, precision: str = "fp16", batch: int = 1, processes: int = 1,
            power_mode: Any = None, accelerator: str = "gpu", harness: Any = None,
            resolution: Any = None, input_shape: Any = None, tf32: Optional[bool] = None) -> Prediction:
    """Predict throughput, latency, memory, power and energy of ``model`` on a simulated ``device``.

    ``device``: a name, ``Profile`` or ``Device``; ``model``: a zoo name, an ONNX path or
    ``GraphStats``; ``power_mode``: a mode name or nvpmodel id of the board, or ``"fastest"`` (its
    highest-clock mode); ``harness``: what measures the engine (``sim.harness_model.names()``: the
    plugin's own loop on a board by default, trtexec's host latency, trtexec's GPU compute time,
    a CUDA-graph replay, a zero-copy application, a Python application); ``resolution`` (an int or
    (height, width)) and, for an ONNX file, ``input_shape`` (one shape without the batch, or a
    dict by input name) size the inputs' dynamic dimensions; ``tf32`` overrides whether the
    harness builds "fp32" engines with TensorRT's TF32 flag on (``tf32=False``: true fp32 under any
    harness, as ``trtexec --noTF32``; ignored, with a note, on a GPU without TF32). Raises ``ConfigError``
    for impossible inputs (unknown harness, power mode or precision, batch < 1, DLA on a board
    without one) and ``OutOfMemory`` when the processes do not fit in memory.
    """
    batch = plan.check_batch(batch)
    processes = plan.check_processes(processes)
    h = get_harness(harness)
    hw = resolve(device, power_mode)
    notes: List[str] = list(hw.notes)
    h = _with_tf32(h, tf32, hw, precision, notes)
    p = plan.resolve_precision(hw, precision, profile_precisions(device), notes, h)
    n_gpu, n_dla = plan.check_accelerator(accelerator, hw, processes, p)
    w = load(model, resolution, input_shape)
    notes.extend(w.notes)
    c = plan.device_constants(hw, notes)
    if n_dla:
        fb = [KINDS[k] for k in w.kind[~w.dla_ok]]
        if fb:
            notes.append(f"DLA: {len(fb)} of {w.n_kernels} layers fall back to the GPU "
                         f"({', '.join(sorted(set(fb)))}), {plan.transitions(w)} DLA<->GPU hand-overs per inference")

    kernels = plan.KernelTables(w, hw, c)
    per_process, parts = plan.memory(w, kernels.engine(p), batch, c)
    available = plan.available_memory(hw, c)
    if per_process * processes > available:
        raise OutOfMemory(_oom_message(hw, w.name, p, batch, processes, per_process, parts, available),
                          needed=per_process * processes, available=available)

    cfg = plan.stack([plan.config_row(hw, w, kernels, p, batch, n_gpu, n_dla, c, h)])
    out = core.scalar(core.evaluate(kernels.tables, cfg, c))
    used = per_process * processes / available
    if used > 0.8:
        notes.append(f"memory pressure: {100 * used:.0f}% of the unified memory available to engines is in "
                     "use, which slows every process (fewer processes or a smaller batch avoid it)")
    p50, p99 = core.percentiles(np.array([out["latency"]]), np.array([out["latency_alone"]]))
    if out["budget_unmet"]:
        notes.append(f"power mode {hw.mode}: board power exceeds the {hw.budget_w} W budget even at the "
                     "lowest GPU clock modelled")
    elif out["f"] < hw.gpu_hz * 0.999:
        notes.append(f"DVFS: {hw.budget_w} W budget caps the GPU at {out['f'] / 1e6:.0f} MHz "
                     f"(max {hw.gpu_mhz:.0f} MHz)")
    thr = out["throughput"]
    for key in ("throughput", "latency", "power"):
        if not math.isfinite(out[key]) or out[key] <= 0:
            raise SimulationError(f"the model produced an invalid {key} ({out[key]}) for {w.name} on "
                                  f"{hw.name}; please report this configuration")
    acc = str(accelerator).strip().lower().replace(" ", "")
    row = {k: v[0] for k, v in cfg.items()}
    act = activity.predict(kernels.items[int(row["gid_gpu"] if n_gpu else row["gid_fb"])], out, row, c,
                           copies=bool(n_gpu))
    breakdown = dict(parts)
    breakdown.update({k: out[k] for k in ("t_gpu", "t_host", "t_copy", "p_gpu", "p_mem", "p_cpu", "p_dla")})
    breakdown["dram_bytes_per_item"] = out["bytes_rate"] / thr
    if n_gpu:
        eng = kernels.gpu_engine(p, batch)
        breakdown["kernels"] = float(eng.n)
        breakdown["reformats"] = float(eng.reformats)
    return Prediction(
        device=hw.device_id, power_mode=hw.mode, model=w.name, precision=p,
        requested_precision=str(precision), accelerator=acc, batch=batch, processes=processes,
        throughput=thr, per_process_throughput=thr / processes, latency=out["latency"],
        latency_p50=float(p50[0]), latency_p99=float(p99[0]), memory=per_process * processes,
        memory_per_process=per_process, power=out["power"], idle_power=c["idle_w"],
        energy=out["power"] / thr, gpu_clock_mhz=out["f"] / 1e6, max_gpu_clock_mhz=hw.gpu_mhz,
        gpu_util=out["gpu_util"], emc_util=out["emc_util"], bound=core.BOUNDS[int(out["bound"])],
        gpu_time=out["t_gpu"], host_time=out["t_host"], copy_time=out["t_copy"], harness=h.name,
        notes=notes, breakdown=breakdown, latency_alone=out["latency_alone"],
        sm_active=act.sm_active, tensor_active=act.tensor_active, issue_active=act.issue_active,
        dram_util=act.dram_util,
    )
