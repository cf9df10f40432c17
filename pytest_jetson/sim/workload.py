"""A network as the simulator sees it: per-kernel arrays (batch 1) from the graph analysis.

Kernels are TensorRT-style fused layers (conv+bn+relu(+add) count once), as
``GraphStats.kernels()`` gives them. ``costs`` turns them into the two roofline terms per kernel
for one device, precision and batch: math cycles (A) and DRAM bytes (B).
"""

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, List, Optional, Tuple

import numpy as np

from ..errors import ModelError
from .arch import BYTES, rate

KINDS = ("conv", "depthwise", "gemm", "pool", "elementwise", "resize", "concat", "softmax", "other")
_KIND = {k: i for i, k in enumerate(KINDS)}
#: Kernel kinds NVDLA cannot run: TensorRT falls back to the GPU for them.
DLA_UNSUPPORTED = ("resize", "softmax", "other")


@dataclass
class Workload:
    name: str
    params: int
    macs: int
    kind: np.ndarray        # index into KINDS
    k_macs: np.ndarray      # per item
    k_flops: np.ndarray
    k_weights: np.ndarray   # elements
    k_in: np.ndarray        # elements per item
    k_out: np.ndarray
    k_channels: np.ndarray
    k_spatial: np.ndarray
    k_groups: np.ndarray
    dla_ok: np.ndarray      # bool per kernel
    io_in: int              # graph input elements per item
    io_out: int
    unknown_ops: Tuple[str, ...] = ()
    notes: List[str] = field(default_factory=list)

    @property
    def n_kernels(self) -> int:
        return int(self.kind.size)


def _elems_per_item(shape: Any) -> int:
    dims = list(shape or ())[1:]
    n = 1
    for d in dims:
        if isinstance(d, (int, np.integer)) and d > 0:
            n *= int(d)
    return n


def from_stats(stats: Any) -> Workload:
    """Any GraphStats-like object (``kernels()``, ``params``, ``macs``, ``batch`` ...) -> Workload."""
    b = max(1, int(getattr(stats, "batch", 1) or 1))
    ks = list(stats.kernels())
    if not ks:
        raise ModelError(f"model {getattr(stats, 'name', '?')!r} has no layers the simulator can cost; "
                         "pass a model with at least one operator")

    def arr(attr: str, per_item: bool, default: float = 0.0) -> np.ndarray:
        v = np.array([float(getattr(k, attr, default) or default) for k in ks])
        return v / b if per_item else v

    kind = np.array([_KIND.get(str(getattr(k, "kind", "other")), _KIND["other"]) for k in ks])
    spatial = arr("spatial", False, 1.0)
    ops = [str(getattr(k, "op_type", "")) for k in ks]
    # GlobalAveragePool (a pool down to 1x1) is the layer the seeds name as falling back from DLA.
    dla_ok = np.array([
        KINDS[kd] not in DLA_UNSUPPORTED and not (KINDS[kd] == "pool" and (sp <= 1 or "Global" in op))
        for kd, sp, op in zip(kind, spatial, ops)
    ])
    outs = getattr(stats, "output_shapes", None) or []
    io_out = sum(_elems_per_item(s) for s in outs) or int(arr("output_elems", True)[-1])
    io_in = _elems_per_item(getattr(stats, "input_shape", None)) or int(arr("input_elems", True)[0])
    unknown = tuple(getattr(stats, "unknown_ops", ()) or ())
    notes = []
    if unknown:
        notes.append("graph has operators with no cost model, counted for memory traffic only: "
                     + ", ".join(sorted(set(map(str, unknown)))))
    return Workload(
        name=str(getattr(stats, "name", "model")),
        params=int(getattr(stats, "params", 0) or 0),
        macs=int(float(getattr(stats, "macs", 0) or 0) / b),
        kind=kind, k_macs=arr("macs", True), k_flops=arr("flops", True),
        k_weights=arr("weight_elems", False), k_in=arr("input_elems", True),
        k_out=arr("output_elems", True), k_channels=arr("out_channels", False, 1.0),
        k_spatial=spatial, k_groups=arr("groups", False, 1.0), dla_ok=dla_ok,
        io_in=int(io_in), io_out=int(io_out), unknown_ops=unknown, notes=notes,
    )


@lru_cache(maxsize=64)
def _zoo_workload(name: str, resolution: Any) -> Workload:
    from ..models import zoo

    return from_stats(zoo.stats(name, resolution=resolution, batch=1))


@lru_cache(maxsize=32)
def _file_workload(path: str, mtime: float) -> Workload:
    from ..models import graph

    return from_stats(graph.analyze(path, batch=1))


def load(model: Any, resolution: Any = None) -> Workload:
    """A zoo name, an ONNX path, a GraphStats(-like) object or a Workload -> Workload."""
    if isinstance(model, Workload):
        return model
    if hasattr(model, "kernels"):
        return from_stats(model)
    if isinstance(model, Path) or (isinstance(model, str) and model.lower().endswith(".onnx")):
        p = Path(model)
        if not p.exists():
            raise ModelError(f"ONNX file {p} does not exist; pass an existing .onnx path or a zoo name")
        return _file_workload(str(p.resolve()), p.stat().st_mtime)
    if isinstance(model, str):
        res = tuple(resolution) if isinstance(resolution, list) else resolution
        return _zoo_workload(model, res)
    raise ModelError(f"model {model!r} is not a zoo name, an .onnx path or GraphStats; pass one of those")


@dataclass
class Costs:
    """Per-kernel roofline terms for one (device, precision, batch, unit)."""

    a: np.ndarray   # math cycles at the unit's clock (already over the efficiency)
    b: np.ndarray   # DRAM bytes over the achievable bandwidth fraction
    bytes: np.ndarray  # DRAM bytes actually moved
    n: int          # kernels (launches)


def _quantisation(m: np.ndarray, n: np.ndarray, tile: float, slots: float) -> np.ndarray:
    """Padded work over useful work: partial tiles and the last partial wave of CTAs."""
    # TensorRT picks smaller tiles for thin dimensions (a batch-1 FC is a GEMV, not a padded GEMM).
    edge_m = np.minimum(tile, 2.0 ** np.ceil(np.log2(np.maximum(m, 1.0))))
    edge_n = np.minimum(tile, 2.0 ** np.ceil(np.log2(np.maximum(n, 1.0))))
    tiles = np.ceil(m / edge_m) * np.ceil(n / edge_n)
    waves = np.ceil(tiles / slots)
    return np.maximum(1.0, waves * slots * edge_m * edge_n / np.maximum(m * n, 1.0))


def costs(w: Workload, arch: str, sm: int, has_tc: bool, precision: str, batch: int,
          c: dict, unit: str = "gpu", select: Optional[np.ndarray] = None) -> Costs:
    """Roofline terms of the kernels in ``select`` (default all) on the GPU or one DLA core."""
    idx = np.arange(w.n_kernels) if select is None else np.flatnonzero(select)
    s = BYTES[precision]
    kind = w.kind[idx]
    macs = np.maximum(w.k_macs[idx], w.k_flops[idx] / 2.0) * batch
    act = batch * (w.k_in[idx] + w.k_out[idx]) * s
    # Activations small enough to live in L2 between producer and consumer mostly never reach DRAM.
    l2 = c.get("l2_bytes", 0.0)
    hit = c["l2_reuse"] * np.minimum(1.0, l2 / np.maximum(act, 1.0)) if l2 > 0 else 0.0
    moved = w.k_weights[idx] * s + act * (1.0 - hit)
    b = moved / c["mem_eff"]
    if unit == "dla":
        r = rate(arch, "dla", precision)
        if r <= 0:
            r = rate(arch, "dla", "fp16")
        a = macs / (r * c["dla_eff"])
        return Costs(a=a, b=b, bytes=moved, n=int(idx.size))

    tc = rate(arch, "tensor", precision) if has_tc else 0.0
    cuda = rate(arch, "cuda", precision) or rate(arch, "cuda", "fp16") or rate(arch, "cuda", "fp32")
    fp32 = rate(arch, "cuda", "fp32")
    is_mm = (kind == _KIND["conv"]) | (kind == _KIND["gemm"])
    groups = w.k_groups[idx]
    channels = w.k_channels[idx]
    depthwise = (kind == _KIND["depthwise"]) | (is_mm & (groups > 1) & (channels / np.maximum(groups, 1) < 8))
    grouped = is_mm & (groups > 1) & ~depthwise
    mm = is_mm & ~depthwise

    per_sm = np.where(mm, tc if tc > 0 else cuda, np.where(depthwise, cuda, fp32))
    eff = np.where(mm, c["tc_eff"] if tc > 0 else c["cuda_eff"],
                   np.where(depthwise, c["dw_eff"], c["cuda_eff"]))
    eff = np.where(grouped, eff * 0.5, eff)
    if tc > 0 and BYTES[precision] >= 4:
        # tf32 feeds the tensor cores 4-byte operands: shared-memory bandwidth, not the MMA rate, limits it.
        eff = np.where(mm, eff * c["tf32_factor"], eff)
    m = batch * np.maximum(w.k_spatial[idx], 1.0)
    tile = c["tile"]
    n = np.where(mm, np.maximum(channels / np.where(grouped, groups, 1.0), 1.0), tile)
    # Non-GEMM kernels: one CTA per tile*tile output elements, quantised the same way.
    m = np.where(mm, m, batch * np.maximum(w.k_out[idx], 1.0) / tile)
    q = _quantisation(m, n, tile, float(sm))
    a = macs * q / (per_sm * sm * eff)
    return Costs(a=a, b=b, bytes=moved, n=int(idx.size))


def memory_per_process(w: Workload, precision: str, batch: int, c: dict) -> Tuple[float, dict]:
    """Bytes one process holds: engine weights + activation workspace + 2 x batch I/O + context."""
    s = BYTES[precision]
    weights = float(w.k_weights.sum()) * s
    workspace = c["workspace_factor"] * float((w.k_in + w.k_out).max()) * batch * s
    io = 2.0 * batch * (w.io_in + w.io_out) * 4.0  # fp32 bindings, one batch pre-enqueued
    context = c["context_mb"] * 2.0 ** 20
    parts = {"weights": weights, "workspace": workspace, "io": io, "context": context}
    return weights + workspace + io + context, parts


