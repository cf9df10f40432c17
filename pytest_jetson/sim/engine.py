"""An engine plan: which precision each kernel runs in, where TensorRT adds reformats, and what
each kernel reads and writes.

What TensorRT does, as the plan models it:

* fp32/tf32/fp16 engines run every kernel in the engine's precision; a concatenation costs
  nothing where its producers can write straight into their slice of the output (concat
  elimination): each input is a kernel's whole output, read by no other concatenation (a tensor
  lives in one buffer). Otherwise it is a copy kernel: an input that is a slice of another
  tensor (ShuffleNetV2's channel split, YOLOv8's C2f split), or one that several
  concatenations gather (DenseNet's features).
* Quantized engines (int8, fp8, fp4) run convolutions, matrix products and pools quantized, and
  keep in fp16 what TensorRT keeps in fp16: stand-alone elementwise and activation layers,
  resizes, softmax, and a detector's heads (the last convolutions before an output, which
  quantization recipes leave unquantized for the boxes' sake). A classifier's fully connected
  layer runs quantized, as MLPerf's ResNet-50 engines and TensorRT's own int8 calibration run it:
  at batch 1 it is bound by reading its weights, half the bytes in int8. A concatenation is
  still eliminated when its inputs share a format; one that joins fp16 and int8 tensors (an
  upsampled branch beside a convolution's output) becomes a copy into fp16.
* A convolution, matrix product or pool reads its input only in its own format: where a tensor
  arrives in another precision, a reformat kernel converts it first. Streaming kernels
  (elementwise, concat, resize...) convert while they read.
* The bindings are fp32: an engine in another precision reformats its input after the copy in and
  its outputs before the copy out.
* A channel split or slice is a view into its input, except on the architectures of
  ``SLICE_COPY_ARCHS`` (Maxwell, Pascal, Volta), where each output is copied by a kernel of its own.
"""

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

from .arch import BYTES, PRECISIONS
from .workload import KIND, Workload

P = {p: i for i, p in enumerate(PRECISIONS)}
P_BYTES = np.array([BYTES[p] for p in PRECISIONS], dtype=float)
QUANTIZED = ("int8", "fp8", "fp4")
#: Kernels that read their input only in their own precision and layout.
STRICT = np.array([KIND["conv"], KIND["depthwise"], KIND["gemm"], KIND["pool"]])
_MM = (KIND["conv"], KIND["gemm"])
#: Architectures whose TensorRT copies every output of a Split or Slice in its own kernel, where
#: newer builders hand the next layer a view. Evidence: torch2trt's benchmark on AGX Xavier
#: (NVIDIA-AI-IOT/torch2trt benchmarks/JETSON_XAVIER.md, commit 4e820ae; the TensorRT of
#: JetPack 4.2) times ShuffleNetV2 x0.5 to x2.0 at 463-419 calls/s over a 14x range of MACs: fixed
#: per-kernel cost. MNASNet 0.5 runs 54 kernels (16 blocks of three convolutions, stem, head,
#: classifier) at 883 calls/s under the same harness, 21 us a kernel with its arithmetic; x0.5,
#: with less arithmetic, takes 2.16 ms a call: 103 kernels or more at that rate, where its
#: convolutions, concatenations and shuffles make 88, and 114 with a copy of each half of its 13
#: channel splits. These boards ran the TensorRT of JetPack 4 (5.x to 8.2; the Nano and TX2 never
#: went further), so the rule follows the architecture.
SLICE_COPY_ARCHS = ("maxwell", "pascal", "volta")
#: The workload kernel index a slice copy's row carries in ``Engine.source`` (reformats carry -1).
SLICE = -2


@dataclass
class Engine:
    """Per-kernel arrays of one engine (per item of the batch, except weights)."""

    kind: np.ndarray
    prec: np.ndarray        # index into PRECISIONS: the kernel's arithmetic and output precision
    macs: np.ndarray
    flops: np.ndarray
    weight_bytes: np.ndarray
    in_bytes: np.ndarray    # activations read per item
    out_bytes: np.ndarray   # activations written per item
    spatial: np.ndarray     # output positions per item (the GEMM's M per item)
    n_out: np.ndarray       # output channels per group (N)
    k_red: np.ndarray       # reduction length per output (K = input channels per group x window)
    cin_g: np.ndarray       # input channels per group
    groups: np.ndarray
    sfu: np.ndarray         # special-function ops per output element (fused epilogue or the op)
    simple: np.ndarray      # other elementwise ops per output element
    stride: np.ndarray      # a convolution's stride (1 for every other kernel)
    dla_ok: np.ndarray
    source: np.ndarray      # the workload kernel it came from; -1 for a reformat
    reformats: int
    #: per reformat row, in order: (tensor converted, its precision, the precision it becomes)
    reform: Tuple[Tuple[int, int, int], ...] = ()

    @property
    def n(self) -> int:
        return int(self.kind.size)


def _heads(w: Workload) -> np.ndarray:
    """Convolutions/matrix products from which a graph output is reached through no other one."""
    n = w.n_kernels
    reaches = np.zeros(n, bool)
    consumers: Dict[int, List[int]] = {}
    for k, t in zip(w.e_kernel, w.e_tensor):
        consumers.setdefault(int(t), []).append(int(k))
    outs_of: Dict[int, List[int]] = {}
    for t, p in enumerate(w.t_producer):
        if p >= 0:
            outs_of.setdefault(int(p), []).append(t)
    mm = np.isin(w.kind, _MM)
    # walk backwards: a kernel "reaches" an output if one of its tensors is an output or feeds a
    # non-matmul kernel that reaches one
    for i in range(n - 1, -1, -1):
        for t in outs_of.get(i, []):
            if w.t_output[t] or any(reaches[j] and not mm[j] for j in consumers.get(t, [])):
                reaches[i] = True
                break
    return reaches & mm


def _quantize(w: Workload, prec: np.ndarray, concat: np.ndarray, concat_free: np.ndarray,
              fp16: Optional[np.ndarray] = None) -> None:
    """Int8 layer precisions in place: elementwise, resize, softmax and unknown kernels and the
    convolutions that produce a graph output stay fp16, and so do the kernels ``fp16`` marks (the
    builder's per-layer choice, ``precision_choice``); a concat takes its inputs' format."""
    kind = w.kind
    keep16 = np.isin(kind, [KIND["elementwise"], KIND["resize"], KIND["softmax"], KIND["other"]]) | (_heads(w) & (kind != KIND["gemm"]))
    if fp16 is not None:
        keep16 = keep16 | fp16
    prec[:] = np.where(keep16, P["fp16"], prec)
    # A concat is eliminated when its inputs share one format (its producers write their slices);
    # where they do not (an fp16 resize beside an int8 conv), it is a real copy into fp16.
    inputs: Dict[int, List[int]] = {}
    for k, t in zip(w.e_kernel, w.e_tensor):
        inputs.setdefault(int(k), []).append(int(t))
    for i in np.flatnonzero(concat):
        srcs = {int(prec[w.t_producer[t]]) if w.t_producer[t] >= 0 else P["fp32"] for t in inputs.get(int(i), [])}
        if len(srcs) == 1:
            prec[i] = srcs.pop()
        else:
            prec[i] = P["fp16"]
            concat_free[i] = False


def _in_place(w: Workload, concat: np.ndarray) -> np.ndarray:
    """Concatenations whose every input its producer can write into the output's buffer: a
    kernel's whole output (not a view into a larger tensor) that no other concatenation reads."""
    gathered = np.bincount(w.e_tensor[concat[w.e_kernel]], minlength=w.t_producer.size)
    ok = np.ones(w.n_kernels, bool)
    for k, t, e in zip(w.e_kernel, w.e_tensor, w.e_elems):
        if concat[k] and (w.t_producer[t] < 0 or gathered[t] > 1 or e < w.t_elems[t] * (1 - 1e-9)):
            ok[k] = False
    return ok


def _reads(w: Workload, prec: np.ndarray, t_prec: np.ndarray):
    """Bytes each kernel reads, and the reformats TensorRT inserts: (tensor, format) -> (elements,
    source format). A strict kernel reads its own format, so a tensor stored in another is
    converted once for it."""
    strict = np.isin(w.kind, STRICT)
    in_bytes = np.zeros(w.n_kernels)
    reform: Dict[Tuple[int, int], Tuple[float, int]] = {}
    for k, t, e in zip(w.e_kernel, w.e_tensor, w.e_elems):
        src = t_prec[t]
        dst = prec[k]
        if strict[k] and P_BYTES[src] != P_BYTES[dst]:
            key = (int(t), int(dst))
            if key not in reform:
                reform[key] = (float(w.t_elems[t]), int(src))
            in_bytes[k] += e * P_BYTES[dst]
        else:
            in_bytes[k] += e * P_BYTES[src]
    return in_bytes, reform


def _reformat_columns(elems: np.ndarray, src: np.ndarray, dst: np.ndarray) -> List[np.ndarray]:
    """Reformat kernels as ``plan``'s columns: each reads ``elems`` values in ``src`` and writes
    them in ``dst`` (one conversion per value)."""
    m = elems.size
    zeros, ones = np.zeros(m), np.ones(m)
    return [np.full(m, KIND["reformat"]), dst, zeros, elems, zeros, elems * P_BYTES[src], elems * P_BYTES[dst],
            ones, ones, ones, ones, ones, np.ones(m, bool), np.full(m, -1), zeros, ones, ones]


def reformats(elems: np.ndarray, src: int, dst: int) -> Engine:
    """An engine of reformat kernels alone, one per entry of ``elems`` (to price them)."""
    cols = _reformat_columns(np.asarray(elems, float), np.full(np.size(elems), src), np.full(np.size(elems), dst))
    return Engine(kind=cols[0].astype(np.int64), prec=cols[1].astype(np.int64), macs=cols[2], flops=cols[3],
                  weight_bytes=cols[4], in_bytes=cols[5], out_bytes=cols[6], spatial=cols[7], n_out=cols[8],
                  k_red=cols[9], cin_g=cols[10], groups=cols[11], dla_ok=cols[12].astype(bool),
                  source=cols[13].astype(np.int64), sfu=cols[14], simple=cols[15], stride=cols[16], reformats=int(np.size(elems)))


def _slice_columns(w: Workload, t_prec: np.ndarray) -> List[np.ndarray]:
    """A copy kernel per view output of a Split or Slice: it reads and writes the slice in the
    precision of the tensor it is cut from (no arithmetic)."""
    elems = np.asarray(w.v_elems, float)
    m = elems.size
    prec = t_prec[w.v_tensor] if m else np.zeros(0, dtype=np.int64)
    zeros, ones = np.zeros(m), np.ones(m)
    moved = elems * P_BYTES[prec]
    return [np.full(m, KIND["other"]), prec, zeros, zeros, zeros, moved, moved, ones, ones, ones, ones, ones,
            np.zeros(m, bool), np.full(m, SLICE), zeros, zeros, ones]


def plan(w: Workload, precision: str, fp16: Optional[np.ndarray] = None, arch: Optional[str] = None) -> Engine:
    """The engine TensorRT builds from ``w`` at ``precision`` (already the effective precision);
    ``fp16``: kernels of a quantized engine kept in fp16 besides those the rules above keep;
    ``arch``: the GPU's architecture (slices are copied on ``SLICE_COPY_ARCHS``; None: views)."""
    n = w.n_kernels
    base = P[precision]
    prec = np.full(n, base, dtype=np.int64)
    kind = w.kind
    quant = precision in QUANTIZED
    concat = np.array([k == KIND["concat"] and op == "Concat" for k, op in zip(kind, w.op)], bool)
    concat_free = concat & _in_place(w, concat)
    if quant:
        _quantize(w, prec, concat, concat_free, fp16)

    t_prec = np.full(w.t_producer.size, P["fp32"], dtype=np.int64)  # graph inputs: fp32 bindings
    produced = w.t_producer >= 0
    t_prec[produced] = prec[w.t_producer[produced]]
    in_bytes, reform = _reads(w, prec, t_prec)
    out_bytes = w.k_out * P_BYTES[prec]
    for t in np.flatnonzero(w.t_output):
        if P_BYTES[t_prec[t]] != 4:
            reform[(int(t), P["fp32"])] = (float(w.t_elems[t]), int(t_prec[t]))

    keep = ~concat_free
    k_red = np.where(np.isin(kind, _MM), w.k_macs / np.maximum(w.k_out, 1.0), 1.0)
    cin_g = np.maximum(w.k_cin / np.maximum(w.k_groups, 1.0), 1.0)
    groups = np.maximum(w.k_groups, 1.0)
    n_out = np.maximum(w.k_channels / groups, 1.0)
    spatial = np.where(kind == KIND["gemm"], np.maximum(w.k_out / np.maximum(w.k_channels, 1.0), 1.0),
                       np.maximum(w.k_spatial, 1.0))
    weight_bytes = w.k_weights * P_BYTES[prec]
    # a quantized convolution rescales and rounds every output in its epilogue
    simple = w.k_simple + np.where(np.isin(kind, _MM) & (P_BYTES[prec] <= 1), 2.0, 0.0)
    stride = np.where(kind == KIND["conv"], np.maximum(w.k_stride, 1.0), 1.0)
    cols = [kind[keep], prec[keep], w.k_macs[keep], w.k_flops[keep], weight_bytes[keep], in_bytes[keep],
            out_bytes[keep], spatial[keep], n_out[keep], k_red[keep], cin_g[keep], groups[keep], w.dla_ok[keep],
            np.flatnonzero(keep), w.k_sfu[keep], simple[keep], stride[keep]]
    if reform:
        extra = _reformat_columns(np.array([v[0] for v in reform.values()]),
                                  np.array([v[1] for v in reform.values()]), np.array([k[1] for k in reform]))
        cols = [np.concatenate([a, b]) for a, b in zip(cols, extra)]
    if arch in SLICE_COPY_ARCHS and np.size(w.v_elems):
        cols = [np.concatenate([a, b]) for a, b in zip(cols, _slice_columns(w, t_prec))]
    return Engine(kind=cols[0].astype(np.int64), prec=cols[1].astype(np.int64), macs=cols[2], flops=cols[3],
                  weight_bytes=cols[4], in_bytes=cols[5], out_bytes=cols[6], spatial=cols[7], n_out=cols[8],
                  k_red=cols[9], cin_g=cols[10], groups=cols[11], dla_ok=cols[12].astype(bool),
                  source=cols[13].astype(np.int64), sfu=cols[14], simple=cols[15], stride=cols[16], reformats=len(reform),
                  reform=tuple((t, v[1], d) for (t, d), v in reform.items()))

