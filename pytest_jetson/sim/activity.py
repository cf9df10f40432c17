"""What the GPU's units do while engines run: SM, issue-slot, tensor-core and DRAM activity, as
Nsight Systems' GPU metrics sampling reports them (each a share of the elapsed time, averaged over
the SMs; DRAM a share of the board's peak bandwidth).

"GPU utilisation" (the load tegrastats and jtop print) only says that some kernel was running.
The concurrency study (SEEDS.md section 1) read it at 100% while SMs were active 75-90% of the
time, issued an instruction in 25-40% of the issue slots and kept the tensor cores busy 15-30%.
The per-kernel model (``costs.gpu_costs``) already knows why; this module adds it up:

* **SM active**: during a kernel's main loop, the share of SMs its blocks occupy (the last wave
  of a small kernel leaves some idle); during its fixed cost (launch gap, ramp-up, tail:
  ``kernel_cycles``) on average half of them; between kernels and while the GPU waits for the
  host, copies or another process's time slice, none.
* **Tensor active**: the tensor cores' busy cycles (the padded multiply-accumulates of the
  convolutions and matrix products they run, at their peak rate for the kernel's precision) over
  the elapsed cycles. A kernel below its tensor peak (short reductions, small tiles, a memory-bound
  layer, int8's heavier epilogue) lowers it; kernels on CUDA cores add nothing.
* **Issue active**: warp instructions issued over the issue slots (four per SM per cycle). An
  ``mma.sync`` keeps a sub-partition's tensor core busy ``MMA_CYCLES`` cycles at full rate and
  brings ``ISSUE_PER_MMA`` instructions with it; CUDA-core arithmetic (depthwise convolutions,
  the fused epilogues, elementwise kernels) issues one slot per 128 lanes; loads and stores one
  per 16 bytes a thread moves (with its address arithmetic), so a memory-bound kernel stalls
  with few slots issued.
* **DRAM utilisation**: the bytes the kernels (and any copies) move per second over the board's
  peak bandwidth (``core``'s ``emc_util``).

Processes time-slicing the GPU add switch time in which no SM works (``core``: the busy share
``gpu_util`` falls with the number of processes), so SM and tensor activity fall with it.
"""

from dataclasses import dataclass
from typing import Any, Dict

import numpy as np

from .costs import Costs

#: Cycles one ``mma.sync`` (m16n8k16 fp16/bf16, m16n8k32 int8, m16n8k8 tf32) occupies an Ampere
#: sub-partition's tensor core at its full rate (2048, 4096 and 1024 MACs at 256, 512 and 128
#: MACs per cycle).
MMA_CYCLES = 8.0
#: Instructions an implicit-GEMM main loop issues per ``mma.sync``: the MMA, its operands'
#: ``ldmatrix`` from shared memory, the ``cp.async`` staging of the next tile, the gather
#: addresses of a convolution's window, the loop's predicates. TensorRT's kernels are not
#: published; 8, one issue per cycle the MMA holds the tensor core, is what the concurrency
#: study's issue-slot figure (25-40% beside tensor cores at 15-30%) implies: the one figure of
#: this module set from a measurement rather than from the architecture.
ISSUE_PER_MMA = 8.0
#: Bytes one load or store instruction moves per thread (a 128-bit vector access).
BYTES_PER_THREAD_ACCESS = 16.0
#: Instructions per memory access: the access and its address arithmetic.
ISSUE_PER_ACCESS = 2.0
#: Share of SMs busy, on average, during a kernel's fixed cost (ramp-up and tail fill and drain
#: them linearly; the launch gap between kernels leaves them idle).
RAMP_SM = 0.5
#: Threads per warp; issue slots per SM per cycle (one per sub-partition).
WARP = 32.0
SLOTS = 4.0


@dataclass
class Activity:
    """Shares (0..1) of the elapsed time: ``sm_active`` (SMs with a resident block),
    ``tensor_active`` (tensor cores busy), ``issue_active`` (issue slots used), ``dram_util``
    (DRAM bandwidth over its peak)."""

    sm_active: float
    tensor_active: float
    issue_active: float
    dram_util: float

    def to_dict(self) -> Dict[str, float]:
        return dict(self.__dict__)


@dataclass
class KernelShares:
    """One engine's kernels at one clock: seconds per inference (``time``) and the time-integrals
    of SM, tensor and issue activity over them (seconds x share), per kernel."""

    time: np.ndarray
    sm: np.ndarray
    tensor: np.ndarray
    issue: np.ndarray

    def shares(self) -> Dict[str, float]:
        """Each activity over the engine's own GPU time (the kernels back to back)."""
        total = float(self.time.sum())
        if total <= 0:
            return {"sm": 0.0, "tensor": 0.0, "issue": 0.0}
        return {"sm": float(self.sm.sum()) / total, "tensor": float(self.tensor.sum()) / total,
                "issue": float(self.issue.sum()) / total}


def kernel_shares(costs: Costs, f: float, bw: float, sm: float, kernel_cycles: float,
                  graphs: bool = False, graph_frac: float = 1.0, kernel_us: float = 0.0) -> KernelShares:
    """Per-kernel time and activity of one engine at GPU clock ``f`` (Hz) and DRAM bandwidth
    ``bw`` (B/s) on ``sm`` SMs, each kernel ``max(A/f, B/bw)`` plus its fixed cost as ``core``
    times it: ``kernel_cycles`` at the clock plus ``kernel_us`` of launch gap (``graph_frac`` of
    the gap when a CUDA graph launches the kernels)."""
    a = np.asarray(costs.a, float)
    main = np.maximum(a / f, np.asarray(costs.b, float) / bw)
    ramp = np.full(a.shape, kernel_cycles / f)
    # the launch gap between two kernels: no block resident, so no SM active
    fixed = ramp + kernel_us * 1e-6 * (graph_frac if graphs else 1.0)
    fill = np.broadcast_to(np.asarray(costs.fill, float), a.shape)
    tensor = np.minimum(np.broadcast_to(np.asarray(costs.tensor, float), a.shape) / f, main * fill)
    accesses = np.asarray(costs.bytes, float) / (BYTES_PER_THREAD_ACCESS * WARP) / (SLOTS * sm)
    slots = (tensor * f * ISSUE_PER_MMA / MMA_CYCLES + np.broadcast_to(np.asarray(costs.alu, float), a.shape)
             + accesses * ISSUE_PER_ACCESS) / f
    return KernelShares(time=main + fixed, sm=main * fill + ramp * RAMP_SM, tensor=tensor,
                        issue=np.minimum(slots, main * fill))


def predict(costs: Costs, out: Dict[str, Any], cfg: Dict[str, Any], c: Dict[str, float],
            copies: bool = True) -> Activity:
    """The activity of one configuration ``core.evaluate`` priced (``out``, one row of
    ``cfg``): the kernels of its GPU engine (``costs``: a DLA engine's GPU fallback where no
    instance runs on the GPU) at the clock DVFS settled on, over the share of time the GPU runs
    kernels (``gpu_util``, less the copies' part of it where ``copies``)."""
    k = kernel_shares(costs, float(out["f"]), float(cfg["bw"]), float(cfg["sm"]), c["kernel_cycles"],
                      graphs=bool(cfg.get("h_graphs", 0.0)), graph_frac=c["graph_kernel_frac"],
                      kernel_us=c["kernel_us"])
    share = k.shares()
    t_gpu, t_copy = float(out["t_gpu"]), float(out["t_copy"]) if copies else 0.0
    busy = float(out["gpu_util"]) * (t_gpu / (t_gpu + t_copy) if t_gpu + t_copy > 0 else 1.0)
    return Activity(sm_active=busy * share["sm"], tensor_active=busy * share["tensor"],
                    issue_active=busy * share["issue"], dram_util=float(out["emc_util"]))
