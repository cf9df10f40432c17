"""The simulator's per-layer prediction: each fused kernel of the engine it plans, its time per
inference at the board's clock, its kernel class and what bounds it.

The same arithmetic as ``core``'s summed roofline, kernel by kernel: a kernel takes
max(A / f, B / bw) plus its fixed ramp, and is "compute" or "memory" bound by which term wins, or
"launch" bound where its ramp (or, launched from a stream, the host's enqueue of it) is longer
than both. Layers are named as TensorRT names fused layers (``conv1 + bn1 + relu1``) and
reformats (``Reformatting CopyNode for Input Tensor 0 to conv2``). Nothing here touches a clock
or a noise stream: a profile never moves a simulated measurement.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Tuple

import numpy as np

from ..models import zoo
from ..models.reference import resolve as resolve_model
from . import plan as planning
from .arch import PRECISIONS
from .core import kernel_fixed_s
from .costs import gpu_costs
from .engine import P_BYTES, SLICE, STRICT, Engine
from .hardware import profile_precisions, resolve
from .harness_model import get as get_harness
from .workload import KINDS, Workload, _aliases, _costed_kernels, file_shapes, file_stats, load

#: the layer type a kernel class shows as (TensorRT's layer types, as its inspector names them)
TYPES = {"conv": "Convolution", "depthwise": "Convolution", "gemm": "MatrixMultiply", "pool": "Pooling",
         "elementwise": "PointWise", "resize": "Resize", "concat": "Concatenation", "softmax": "SoftMax",
         "other": "Other", "reformat": "Reformat"}


@dataclass
class SimLayer:
    """One kernel of a simulated engine (time: seconds per inference of the whole batch)."""

    name: str
    type: str
    kernel: str
    precision: str
    time: float
    bound: str
    size: int


def _kernel_names(model: Any, resolution: Any, input_shape: Any, w: Workload) -> List[str]:
    """The fused layers' names (``a + b + c``), in the workload's kernel order; ``op_i`` where the
    graph cannot be read again (a hand-made GraphStats)."""
    stats = None
    if hasattr(model, "kernels"):
        stats = model
    elif isinstance(model, (str, Path)):
        ref = resolve_model(model)
        if ref.is_file:
            stats = file_stats(model, file_shapes(model, resolution, input_shape))
        else:
            res = tuple(resolution) if isinstance(resolution, list) else resolution
            stats = zoo.stats(str(model), resolution=res, batch=1)
    if stats is not None:
        ks = _costed_kernels(stats, list(stats.kernels()), _aliases(stats))
        if len(ks) == w.n_kernels:
            return [" + ".join(getattr(k, "layers", None) or [k.name]) for k in ks]
    return [f"{op or 'layer'}_{i}" for i, op in enumerate(w.op)]


def _reformat_names(w: Workload, e: Engine, names: List[str]) -> List[Tuple[str, Tuple[int, int]]]:
    """TensorRT's names for the reformats, by the layer that reads the converted tensor or by the
    output it converts, and where each runs: (kernel, 0) just before that reader, (kernel, 2) just
    after the output's producer."""
    wprec = np.full(w.n_kernels, -1)
    wprec[e.source[e.source >= 0]] = e.prec[e.source >= 0]
    strict = np.isin(w.kind, STRICT)
    out = []
    for t, src, dst in e.reform:
        readers = [int(k) for k, tt in zip(w.e_kernel, w.e_tensor) if tt == t and strict[k] and wprec[k] == dst]
        move = f"{PRECISIONS[src]} to {PRECISIONS[dst]}"
        if readers:
            slot = [int(tt) for k, tt in zip(w.e_kernel, w.e_tensor) if k == readers[0]].index(t)
            out.append((f"Reformatting CopyNode for Input Tensor {slot} to {names[readers[0]]} ({move})",
                        (readers[0], 0)))
        else:
            producer = int(w.t_producer[t])
            what = names[producer] if producer >= 0 else "the input"
            out.append((f"Reformatting CopyNode for Output Tensor of {what} ({move})", (max(producer, 0), 2)))
    return out


def layer_times(device: Any, model: Any, precision: str = "fp16", batch: int = 1, power_mode: Any = None,
                harness: Any = None, resolution: Any = None, input_shape: Any = None,
                prediction: Any = None) -> List[SimLayer]:
    """Every kernel of the GPU engine ``predict`` plans for this configuration, in execution order,
    with its predicted time per inference (the whole batch) at the board's clock.

    ``prediction``: the configuration's ``Prediction``, when known: its GPU clock (after DVFS) is
    used, and the times are scaled to sum to its GPU time (they differ only under a DLA
    neighbour's traffic, which no single kernel carries)."""
    batch = planning.check_batch(batch)
    h = get_harness(harness)
    hw = resolve(device, power_mode)
    notes: List[str] = []
    p = planning.resolve_precision(hw, precision, profile_precisions(device), notes, h)
    w = load(model, resolution, input_shape)
    c = planning.device_constants(hw, notes)
    e = planning.KernelTables(w, hw, c).gpu_engine(p, batch)
    costs = gpu_costs(e, hw.arch, hw.sm_count, hw.has_tensor_cores, batch, c)
    f = float(prediction.gpu_clock_mhz) * 1e6 if prediction is not None else float(hw.gpu_hz)
    t_math = np.asarray(costs.a, float) / f
    t_mem = np.asarray(costs.b, float) / float(hw.bw)
    ramp = float(kernel_fixed_s(c, f, float(h.graphs)))
    times = np.maximum(t_math, t_mem) + ramp
    launch = 0.0 if h.gpu_only else planning.harness_columns(h, hw, c, 0.0)["h_launch"]
    bound = np.where(np.maximum(ramp, launch) > np.maximum(t_math, t_mem), "launch",
                     np.where(t_math >= t_mem, "compute", "memory"))
    if prediction is not None and getattr(prediction, "gpu_time", 0) and times.sum() > 0:
        times = times * (float(prediction.gpu_time) / float(times.sum()))
    names = _kernel_names(model, resolution, input_shape, w)
    reformats = iter(_reformat_names(w, e, names))
    views = iter(range(len(w.v_name)))
    rows, order = [], []
    for i in range(e.n):
        kind = KINDS[int(e.kind[i])]
        src = int(e.source[i])
        if src >= 0:
            name = names[src]
            typ = TYPES[kind] if kind != "other" else (w.op[src] or TYPES[kind])
            size = int(w.k_out[src])
            order.append((src, 1))
        elif src == SLICE:
            # slice copies follow the workload's views in order, each just before the kernel after it
            j = next(views)
            name, typ, size = w.v_name[j], "Slice", int(w.v_elems[j])
            order.append((int(w.v_at[j]), 0))
        else:
            (name, at), typ = next(reformats), TYPES[kind]
            size = int(e.out_bytes[i] / P_BYTES[int(e.prec[i])])
            order.append(at)
        rows.append(SimLayer(name=name, type=typ, kernel=kind, precision=PRECISIONS[int(e.prec[i])],
                             time=float(times[i]), bound=str(bound[i]), size=size))
    # TensorRT runs a reformat right before the layer that reads it (or after an output's producer)
    return [r for _, r in sorted(zip(order, rows), key=lambda p: p[0])]
