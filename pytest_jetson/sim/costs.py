"""Per-kernel-class achieved rates: the two roofline terms of every kernel of an engine.

Each kernel costs ``max(A / f, B / bw)`` (A: GPU cycles of arithmetic at the achieved rate, B:
DRAM bytes over the achieved bandwidth fraction), plus a fixed ramp per kernel added in ``core``.
Nothing is assumed to stay in L2 between kernels: every kernel reads its inputs and weights from
DRAM and writes its output there. The achieved rate depends on the kernel's class:

* convolutions and matrix products (tensor cores where the precision has them, else CUDA cores):
  the peak times ``tc_eff`` (``cuda_eff``; ``tf32_factor`` and ``int8_factor`` for TF32 and int8
  relative to fp16, ``int8_arch`` for an architecture's own int8 kernels), ``conv_eff`` for a convolution with a window on tensor cores (an implicit GEMM
  gathering its operands, against a plain GEMM or 1x1 convolution), and ``K / (K + k0)`` for the
  reduction length K, k0 being ``conv_k0`` scaled by the unit's rate relative to fp16 tensor cores
  and by the element size (``K0_FILL_EXP``): the loop's fixed cost per tile is latency in cycles
  and the fill of its first operand stages, so the faster unit needs the longer K to hide it (a
  1x1 conv over 16 channels runs far below a 3x3 over 256). Input channels are padded to the
  tensor cores' vector width (8 in fp16, 16 in int8), except that a 3- or 4-channel image at a
  network's stem takes TensorRT's 4-wide vector format and pays for 4. The output tile is the one
  that finishes first after padding, operand reuse and wave quantisation over the SMs (a
  16-channel conv still fills a 32-wide tile; a 7x7 feature map at batch 1 leaves SMs idle; a
  batch-1 fully connected layer takes a thin tile and is bound by reading its weights). The stride
  enters through the output size and the whole input each kernel reads;
* depthwise and thin grouped convolutions: CUDA cores at ``dw_eff``;
* elementwise, pooling, concat, resize, softmax, reformats and operators without a model:
  streaming kernels, bound by DRAM at the achieved fraction ``mem_eff`` (their few operations on
  CUDA cores at ``cuda_eff``).

Every kernel also pays for its elementwise work per output element after its main loop: a
convolution's fused activation and residual add (a SiLU is an exponential and a reciprocal on the
special-function units, 16 per SM: next to a thin convolution's few tensor-core cycles per output
it is not small), an int8 convolution's requantisation, a stand-alone activation's own op.
"""

from dataclasses import dataclass
from typing import Any, Dict

import numpy as np

from .arch import ARCH, PRECISIONS, rate
from .engine import P_BYTES, Engine, P
from .workload import KIND

ARCHS = tuple(ARCH)
A = {a: i for i, a in enumerate(ARCHS)}


def _table(unit: str) -> np.ndarray:
    return np.array([[float(ARCH[a][unit].get(p, 0.0)) for p in PRECISIONS] for a in ARCHS])


TC = _table("tensor")
CUDA = _table("cuda")
#: Architectures whose TensorRT runs 3x3 convolutions as Winograd transforms: those whose
#: convolutions run on CUDA cores (from Volta on, tensor-core implicit GEMMs are faster).
WINOGRAD = np.array([a in ("maxwell", "pascal") for a in ARCHS])
#: Special-function units (exp, reciprocal) per SM: 4 per SM sub-partition from Volta on, 8 before.
SFU = np.array([{"maxwell": 32.0, "pascal": 32.0}.get(a, 16.0) for a in ARCHS])
#: Channels a tensor-core kernel pads each input channel group to (its vector width).
ALIGN = np.array([1, 4, 8, 8, 16, 16, 32], dtype=float)  # fp32 tf32 fp16 bf16 int8 fp8 fp4
#: Output tiles (M x N) TensorRT's tactics choose from. A smaller tile fills the SMs sooner but
#: reuses each operand less: its rate relative to 128 x 128 is (reuse / 64) ** 0.3, reuse being
#: the tile's outputs per operand element loaded, m n / (m + n) (0.81 at 64 x 64, 0.66 at 32 x 32).
#: Thin tiles serve thin matrices (a batch-1 fully connected layer is a matrix-vector product):
#: 8 rows on tensor cores (an MMA's narrow side), 1 on CUDA cores.
TILES_TC = ((128, 128), (128, 64), (64, 128), (64, 64), (64, 32), (32, 64), (32, 32), (16, 64), (8, 128))
TILES_CUDA = TILES_TC + ((1, 128),)
_TILE_AREA = 128.0 * 128.0
#: Split-K factors a tactic may use (a long reduction over few output tiles).
SPLITS = (1, 2, 4)
#: A stream-K kernel's cost over an ideal even split (partial tiles summed across blocks).
STREAM_K_FIXUP = 1.06
#: How an SM's time for a wave shrinks when it holds fewer blocks than it has room for: a
#: fraction x of its block slots takes x ** OCCUPANCY_EXP of a full wave. 1 would be perfect
#: scaling, 0 a partial wave as long as a full one (the block-count quantisation alone). Fewer
#: resident warps hide less of the operand loads' latency, so each block runs faster but not in
#: proportion; 0.5 is the assumption (a quarter-full SM runs its blocks at about twice the speed
#: of a full one), which keeps the whole-block quantisation per SM and removes the plateaus a
#: full-wave charge gives at batch 1, where most layers fit in one wave.
OCCUPANCY_EXP = 0.5
#: Width of the soft minimum over tactics, in log cost: a tactic 35% dearer than the best keeps
#: 1/e of its weight. It is the model's uncertainty on where a tactic's tile and wave edges
#: leave it (the occupancy law above and the tile set are approximations to some tens of
#: percent), not TensorRT's timing noise (a few percent): at 0.08, every layer's tile fit jumped
#: together where the input side crosses a power of two (256 -> 264 px: +26-33% of time for +12%
#: of MACs) and stayed flat between, 17% of the benchmark's input-size steps out of band, 7% at
#: 0.35. Only the quantisation is averaged (``gpu_costs``): a large GEMM costs its best tile.
SOFTMIN = 0.35


#: How a tile's fixed loop cost (``conv_k0``) grows with the operand's element size. That cost is
#: partly latency (the first loads in flight: cycles, whatever the unit) and partly the pipeline's
#: fill (its first stages' operand bytes, which per step of the reduction double from fp16 to
#: TF32 and halve in int8). All latency (0) made a thin TF32 convolution saturate as early as an
#: fp16 one: the small YOLO11 models read 12-14% fast in fp32 and n -> x 10.7x against a
#: published 8.9x; all fill (1) made int8's thin layers 20-24% too fast against fp16 (VD_E's
#: mobilenet_v2, YOLOv7 int8). Half of each (the geometric middle) is the assumption.
K0_FILL_EXP = 0.5


#: Switching energy of one multiply-accumulate relative to fp16 (a multiplier's energy grows about
#: with the square of its operand width; the accumulators and operand delivery do not shrink).
MAC_ENERGY = np.array([2.0, 1.5, 1.0, 1.0, 0.5, 0.5, 0.35])  # fp32 tf32 fp16 bf16 int8 fp8 fp4


@dataclass
class Costs:
    """Per-kernel roofline terms for one (device, precision, batch, unit) or a stack of them."""

    a: np.ndarray      # arithmetic cycles at the achieved rate
    b: np.ndarray      # DRAM bytes over the achieved bandwidth fraction
    bytes: np.ndarray  # DRAM bytes actually moved
    n: int             # kernels (launches)
    ops: Any = 0.0     # multiply-accumulates weighted by their energy relative to fp16
    # What the GPU's units do in each kernel, for ``activity`` (per SM, in cycles at full rate):
    # the tensor cores' busy cycles, the CUDA-core issue cycles (one per 128 lanes of arithmetic,
    # fused epilogue included), and the share of SMs the kernel's blocks occupy.
    tensor: Any = 0.0
    alu: Any = 0.0
    fill: Any = 1.0


def arch_index(arch: Any) -> Any:
    """An architecture name, or an array of names or indices, as indices into ARCHS."""
    if isinstance(arch, str):
        return A[arch]
    arr = np.asarray(arch)
    if arr.dtype.kind in "iu":
        return arr
    return np.array([A[str(x)] for x in arr.ravel()], dtype=np.int64).reshape(arr.shape)


def _cuda_rate(arch_i: Any, prec: np.ndarray) -> np.ndarray:
    r = CUDA[arch_i, prec]
    fp16 = CUDA[arch_i, P["fp16"]]
    fp32 = CUDA[arch_i, P["fp32"]]
    return np.where(r > 0, r, np.where(fp16 > 0, fp16, fp32))


def gpu_costs(e: Engine, arch: Any, sm: Any, has_tc: Any, batch: Any, c: Dict[str, Any]) -> Costs:
    """Roofline terms of every kernel of ``e`` (or of a stack of engines: then ``arch``, ``sm``,
    ``has_tc``, ``batch`` and the constants may be per-kernel arrays)."""
    arch_i = arch_index(arch)
    kind = e.kind
    prec = e.prec
    batch = np.asarray(batch, float)
    sm = np.asarray(sm, float)
    mm = (kind == KIND["conv"]) | (kind == KIND["gemm"])
    tc = np.where(np.asarray(has_tc, bool), TC[arch_i, prec], 0.0)
    cuda = _cuda_rate(arch_i, prec)
    fp32 = CUDA[arch_i, P["fp32"]]
    thin = mm & (e.groups > 1) & ((e.cin_g < 16) | (e.n_out < 16))
    dense = mm & ~thin
    on_tc = dense & (tc > 0)

    # Convolutions and matrix products: padded reduction, best tile, K saturation.
    # A 3- or 4-channel input (the image at a network's stem) takes TensorRT's 4-wide vector format
    # (kCHW4) and its first-layer kernels: padding it to 16 would make int8's stem dearer than fp16's.
    align = np.where(on_tc, np.where(e.cin_g <= 4, np.minimum(ALIGN[prec], 4.0), ALIGN[prec]), 1.0)
    window = np.maximum(e.k_red / np.maximum(e.cin_g, 1.0), 1.0)
    k_pad = np.where(kind == KIND["conv"], np.ceil(e.cin_g / align) * align * window,
                     np.ceil(e.k_red / align) * align)
    k_pad = np.maximum(k_pad, e.k_red)
    m = batch * e.spatial
    n_out = e.n_out
    useful = np.maximum(e.groups * m * n_out, 1.0)
    rate_unit = np.where(on_tc, tc, cuda)
    k0 = c["conv_k0"] * rate_unit / 1024.0 * (P_BYTES[prec] / 2.0) ** K0_FILL_EXP
    k_sat = k_pad / (k_pad + k0)
    # Tactics: every tile, each with the reduction split over 1, 2 or 4 blocks (split-K: more
    # blocks to fill the SMs, each with a shorter loop and a partial sum to add), or dealt out
    # over the SMs as stream-K (CUTLASS 2.11 on; cuBLAS and TensorRT 8.6+ pick it for shapes
    # whose last wave would be thin). TensorRT times
    # each tactic on the board and keeps the fastest; how close two tactics come is known to the
    # model only to within the idealised wave count, so the cost is a soft minimum over them
    # (weights (best / cost) ** (1 / SOFTMIN)): the tile and wave steps keep their physical size
    # where one tactic is far ahead and blend where several are close, as TensorRT's own choice
    # (and stream-K kernels) smooth them on a board.
    costs, ideals, pads, fills = [], [], [], []
    for tm, tn in TILES_CUDA:
        ctas1 = e.groups * np.ceil(m / tm) * np.ceil(n_out / tn)
        per_wave = sm * _TILE_AREA / (tm * tn)
        reuse = (tm * tn / (tm + tn) / 64.0) ** 0.3
        for split in SPLITS:
            ctas = ctas1 * split
            waves = _waves(ctas, per_wave, sm)
            k_s = k_pad / split
            cost = waves * per_wave * tm * tn / split / useful / reuse
            ideal = np.ones(cost.shape) / reuse
            if split > 1:  # the shorter loop hides less of its fixed cost; the partial sums' pass
                more = k_sat * (k_s + k0) / np.maximum(k_s, 1.0)
                cost = cost * more + split * 2.0 / np.maximum(k_pad, 1.0)
                ideal = ideal * more + split * 2.0 / np.maximum(k_pad, 1.0)
                cost = np.where(k_s < 64.0, np.inf, cost)
            if tm < 8:
                cost = np.where(on_tc, np.inf, cost)
            costs.append(cost)
            ideals.append(np.where(np.isfinite(cost), ideal, np.inf))
            pads.append(ctas * tm * tn / split / useful)
            fills.append(_fill(ctas, per_wave, sm))
        # stream-K: the tiles' reduction loops dealt out evenly over the SMs, so the last wave is
        # as full as the others, for a fixup of the tiles split between two blocks
        x = ctas1 / per_wave
        waves = np.where(x >= 1.0, x, x ** OCCUPANCY_EXP)
        costs.append(np.where(on_tc | (tm >= 8), waves * per_wave * tm * tn / useful / reuse * STREAM_K_FIXUP, np.inf))
        ideals.append(np.where(on_tc | (tm >= 8), STREAM_K_FIXUP / reuse, np.inf))
        pads.append(ctas1 * tm * tn / useful)
        fills.append(np.minimum(ctas1 / per_wave, 1.0))
    weight, blend = _soft_min(np.array(costs))
    # The average is over where each tactic's tile and wave edges fall, not over how well its
    # tile reuses operands (a large GEMM's 128x128 tile is a clear choice): the same average over
    # the tactics without their quantisation, over its minimum, is taken out again.
    _, ideal_blend = _soft_min(np.array(ideals))
    best = blend * np.min(np.array(ideals), axis=0) / ideal_blend
    total = weight.sum(axis=0)
    pad = (weight * np.array(pads)).sum(axis=0) / total
    fill = (weight * np.array(fills)).sum(axis=0) / total
    unit_eff = np.where(on_tc, c["tc_eff"] * np.where(P_BYTES[prec] >= 4, c["tf32_factor"],
                                                       np.where(P_BYTES[prec] <= 1, c["int8_factor"] * c["int8_arch"], 1.0)),
                        c["cuda_eff"])
    # an implicit-GEMM convolution with a window gathers its operands: below a plain GEMM's rate
    unit_eff = unit_eff * np.where(on_tc & (kind == KIND["conv"]) & (window > 1), c["conv_eff"], 1.0)
    # A 3x3, stride-1 convolution in fp16 or fp32 on CUDA cores (Maxwell, Pascal): TensorRT's
    # fastest tactics there are Winograd F(2x2, 3x3) (2.25x fewer multiplies, less the input and
    # output transforms); ``wino_gain`` (per architecture) is what is left of that gain. On tensor
    # cores (Volta on) the implicit GEMMs win: with the gain on Volta too, Xavier's fitted
    # tensor-core efficiency fell to 0.50 to make up for it, and held out, Volta came out 20-40%
    # too fast on every network. The stride is the convolution's own: a ResNet basic block's
    # second 3x3 reads its residual too (a fused add), and told from the bytes it reads, half
    # of ResNet-18/34's 3x3 convolutions passed for strided ones, losing the transform (the
    # Nano's ResNet-34 read 16% slow, ResNet-50 over it 1.19x against a published 1.48x).
    wino = (dense & (kind == KIND["conv"]) & (window == 9) & (e.stride <= 1.0) & (e.cin_g >= 16)
            & WINOGRAD[arch_i] & ~on_tc & (P_BYTES[prec] >= 2))
    unit_eff = unit_eff * np.where(wino, c["wino_gain"], 1.0)
    # The main loop's fixed cost per tile (operand loads in flight before the first product) is
    # the same cycles whatever the unit: the faster the unit, the longer K it takes to hide it
    # (``k0`` above).
    rate_mm = rate_unit * sm * unit_eff * k_sat
    work = batch * e.macs * np.where(e.k_red > 0, k_pad / np.maximum(e.k_red, 1.0), 1.0) * np.maximum(best, 1.0)
    a_mm = work / np.maximum(rate_mm, 1e-9)

    # Depthwise and thin grouped convolutions on CUDA cores.
    dw = (kind == KIND["depthwise"]) | thin
    a_dw = batch * e.macs / (cuda * sm * c["dw_eff"])

    # Streaming kernels: their arithmetic on CUDA cores.
    a_st = batch * e.flops / (2.0 * np.where(P_BYTES[prec] <= 2, cuda, fp32) * sm * c["cuda_eff"])
    # Elementwise work per output element: special-function ops and plain ones on fp32 lanes.
    outputs = batch * e.out_bytes / P_BYTES[prec]
    a_epi = outputs * (e.sfu / SFU[arch_i] + e.simple / fp32) / (sm * c["cuda_eff"])
    # A tile kernel writes its outputs after its main loop: accumulators staged through shared
    # memory and stored to L2 at ``store_bpc`` bytes per SM per cycle, and a block's last tile
    # has no loop left to hide that behind. So the drain grows with the bytes written (fp32 twice
    # fp16's), which a thin, high-resolution layer (few MACs per output) feels and a wide one
    # does not: a thin network's fp16/tf32/int8 times differ by more than its MACs' rates say.
    # A depthwise kernel is no tile kernel: each thread writes its outputs straight from its
    # registers, and its loads and stores stream together (DRAM-bound, the roofline's other term).
    a_epi = a_epi + np.where(dense, outputs * P_BYTES[prec] / (c["store_bpc"] * sm), 0.0)
    a = np.where(dense, a_mm + a_epi, np.where(dw, a_dw + a_epi, np.maximum(a_st, a_epi)))
    moved = batch * (e.in_bytes + e.out_bytes) + e.weight_bytes
    ops = batch * np.maximum(e.macs, e.flops / 2.0) * MAC_ENERGY[prec]
    pipe_mm = batch * e.macs * np.where(e.k_red > 0, k_pad / np.maximum(e.k_red, 1.0), 1.0) * pad / (rate_unit * sm)
    alu = (np.where(dense & ~on_tc, pipe_mm, 0.0) + np.where(dw, a_dw * c["dw_eff"], 0.0)
           + np.where(dense | dw, 0.0, a_st * c["cuda_eff"]) + outputs * (e.sfu + e.simple) / (fp32 * sm))
    # streaming and depthwise kernels: a block per 1024 outputs (256 threads, 4 each)
    fill = np.where(dense, fill, _fill(np.ceil(outputs / 1024.0), sm, sm))
    # ``mem_eff`` is the read roof; a written byte takes ``write_cost`` times a read one's bus time
    # (the DRAM microbenchmarks' read over write bandwidth: bus turnarounds, write-backs from L2)
    bus = moved + (c["write_cost"] - 1.0) * batch * e.out_bytes
    return Costs(a=a, b=bus / c["mem_eff"], bytes=moved, n=int(kind.size), ops=ops,
                 tensor=np.where(on_tc, pipe_mm, 0.0), alu=alu, fill=fill)


def _soft_min(costs: np.ndarray):
    """Weights (best / cost) ** (1 / SOFTMIN) over the tactics (axis 0), and the weighted cost."""
    ok = np.isfinite(costs)
    best = costs.min(axis=0)
    weight = np.where(ok, (best / np.where(ok, costs, 1.0)) ** (1.0 / SOFTMIN), 0.0)
    return weight, (weight * np.where(ok, costs, 0.0)).sum(axis=0) / weight.sum(axis=0)


def _waves(ctas: Any, per_wave: Any, sm: Any) -> Any:
    """A tile kernel's time in full waves: the full waves, then the last one as long as its
    busiest SM takes with the blocks it holds (``OCCUPANCY_EXP``: fewer resident blocks each
    run faster, not in proportion)."""
    full = np.floor(ctas / per_wave)
    rem = ctas - full * per_wave
    slots = per_wave / sm
    return full + np.where(rem > 0, (np.ceil(rem / sm) / slots) ** OCCUPANCY_EXP, 0.0)


def _fill(ctas: Any, per_wave: Any, sm: Any) -> Any:
    """Share of SMs holding a block, averaged over the waves: the scheduler spreads each wave's
    blocks over all SMs first, so only the last, partial wave leaves some idle."""
    ctas = np.maximum(ctas, 1.0)
    waves = np.ceil(ctas / per_wave)
    last = ctas - (waves - 1) * per_wave
    return ((waves - 1) * sm + np.minimum(sm, last)) / (waves * sm)


#: Extra passes over a layer's output when NVDLA runs an activation that multiplies a special
#: function by its own input (SiLU, Swish, Mish, GELU): its post-processor applies its lookup
#: table last (after its ALU and multiplier stages), so it cannot fuse x * sigmoid(x) into the
#: convolution's output as a GPU epilogue does. The sigmoid is a pass of its own (read x, write
#: s) and the product another (read x and s, write y): four tensor transfers beyond the
#: convolution's own write. A ReLU or a plain sigmoid stays fused.
DLA_GATED_PASSES = 4.0


def dla_costs(e: Engine, arch: str, precision: str, batch: int, c: Dict[str, Any]) -> Costs:
    """The kernels of ``e`` that NVDLA runs, on one DLA core at ``dla_eff`` of its peak; a gated
    activation's own passes (``DLA_GATED_PASSES``) follow its layer as DRAM-bound steps."""
    sel = e.dla_ok & (e.source >= 0)
    r = rate(arch, "dla", precision) or rate(arch, "dla", "fp16")
    moved = batch * (e.in_bytes[sel] + e.out_bytes[sel]) + e.weight_bytes[sel]
    a = batch * e.macs[sel] / (max(r, 1.0) * c["dla_eff"])
    gated = (e.sfu[sel] > 0) & (e.simple[sel] > 0)
    passes = batch * e.out_bytes[sel][gated] * DLA_GATED_PASSES
    a = np.concatenate([a, np.zeros(passes.size)])
    moved = np.concatenate([moved, passes])
    return Costs(a=a, b=moved / c["mem_eff"], bytes=moved, n=int(sel.sum()))


def fallback_costs(e: Engine, arch: str, sm: int, has_tc: bool, batch: int, c: Dict[str, Any]) -> Costs:
    """The kernels a DLA engine hands back to the GPU."""
    sel = ~e.dla_ok & (e.source >= 0)
    sub = Engine(**{k: (getattr(e, k)[sel] if isinstance(getattr(e, k), np.ndarray) else getattr(e, k))
                    for k in e.__dataclass_fields__})
    return gpu_costs(sub, arch, sm, has_tc, batch, c)


def memory_per_process(e: Engine, io_in: int, io_out: int, batch: int, c: Dict[str, float]):
    """Bytes one process holds: engine weights + activation workspace + 2 x batch I/O + context."""
    weights = float(e.weight_bytes.sum())
    workspace = c["workspace_factor"] * float((e.in_bytes + e.out_bytes).max()) * batch
    io = 2.0 * batch * (io_in + io_out) * 4.0  # fp32 bindings, one batch pre-enqueued
    context = c["context_mb"] * 2.0 ** 20
    parts = {"weights": weights, "workspace": workspace, "io": io, "context": context}
    return weights + workspace + io + context, parts
