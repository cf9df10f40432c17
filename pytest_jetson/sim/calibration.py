"""Calibration of the model's few free constants against published Jetson results, and its
cross-validation.

The fit separates what the boards do from how each publication measured them:

* board constants (efficiencies of each kernel class, per-kernel GPU and CPU costs, power terms)
  are shared by every board, or per architecture where only that architecture's rows can tell,
  each bounded to what is physically possible;
* each publication's harness (``published.SOURCES``: trtexec, CUDA graphs, a Python loop...) is
  modelled for what it does, and the host time it adds is scaled by a nuisance term of that
  source's own, fitted on its rows and never carried into a board constant;
* constants measured directly (DRAM and GEMM microbenchmarks) are read off those rows, not fitted.

A group of constants is fitted only on more rows than it has parameters. The headline figure is
leave-one-source-out error: fit without a source, predict its rows with its nuisance term at the
harness's default, as a new user's numbers would be predicted.

    pytest-jetson calibrate --report        # in-sample and cross-validated error
    pytest-jetson calibrate --fit --write   # refit (developers; deterministic)
"""

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..devices.device import Device, as_device
from ..devices.profile import PowerMode
from ..fileio import write_atomic
from . import constants as K
from .arch import rate
from .core import Tables, evaluate
from .costs import ARCHS, A, Costs, dla_costs, fallback_costs, gpu_costs
from .engine import Engine, P, plan
from .hardware import Hardware, cores_per_sm, resolve
from .harness_model import get as get_harness
from .plan import (
    available_memory,
    check_accelerator,
    harness_columns,
    idle_rule,
    memory,
    resolve_precision,
    transitions,
)
from .precision_choice import choose
from .published import SOURCES, Case, cases, contrasts
from .workload import KIND, load

# ---------------------------------------------------------------------------------------------
# Fitted parameters: (name, lower, upper, scope). Bounds are what the hardware allows.


@dataclass(frozen=True)
class Param:
    name: str
    lo: float
    hi: float
    scope: str = "global"   # "global" or an architecture
    why: str = ""
    # a host-side cost that only shows once it outgrows the GPU's time: below that point the
    # least-squares surface is flat, so the fit starts it from the best of a grid
    grid: bool = False


TIME_PARAMS: Tuple[Param, ...] = (
    Param("conv_k0", 4.0, 256.0, why="reduction length at half tile efficiency"),
    Param("dw_eff", 0.05, 0.9, why="fraction of CUDA-core peak a depthwise convolution reaches"),
    # A kernel's ramp-up and tail: a block's launch, its first loads and the last wave's drain, a
    # few microseconds at the GPU's clock (Nsight traces of small TensorRT kernels on Orin show
    # 2-4 us at 1.3 GHz); the launch gap between two stream kernels is microseconds whatever the
    # clock (1-8 us on Tegra's front end).
    Param("kernel_cycles", 300.0, 5000.0, why="GPU cycles per kernel beyond its roofline time (ramp, tail)"),
    Param("kernel_us", 0.5, 8.0, why="GPU-side microseconds per kernel that do not follow the clock (launch gap)"),
    Param("graph_kernel_frac", 0.1, 1.0, why="share of the per-kernel launch gap left under a CUDA graph"),
    Param("conv_eff", 0.4, 1.0, why="a windowed convolution's efficiency on tensor cores relative to a plain GEMM"),
    Param("int8_factor", 0.5, 1.45, why="int8 tensor-core efficiency relative to fp16 (at most 1/tc_eff)"),
    # trtexec's enqueue time for yolov5s int8 on an AGX Xavier is 0.63 ms for 76 kernels: 8 us per
    # kernel on a Carmel core at 2.27 GHz, about 7 us on the reference core; other logs span 4-10 us
    Param("launch_us", 3.0, 9.0, why="TensorRT's host enqueue per kernel on an A78AE core at 1.5 GHz",
          grid=True),
    # a stream synchronize returns within tens of microseconds of the GPU's last kernel (spin or
    # yield); more than that is the harness's own work, which belongs in its source's term
    Param("sync_us", 5.0, 150.0, why="one synchronous wait per inference (stream synchronize, wake-up)"),
    Param("tc_eff", 0.3, 0.95, "volta", "fraction of tensor-core peak a large GEMM reaches on Volta"),
    Param("cuda_eff", 0.3, 0.95, "maxwell", "fraction of CUDA-core peak a large GEMM reaches on Maxwell"),
    Param("wino_gain", 1.0, 2.25, "maxwell", "a Winograd 3x3 convolution's rate over an implicit GEMM's on "
          "Maxwell's CUDA cores (at most F(2x2, 3x3)'s 2.25x fewer multiplies)"),
    # an SM's shared-memory port moves 128 B per cycle and its L1 64 B to L2; the epilogue goes
    # through both (out to shared memory, back, then to L2), so it drains at 16-64 B per cycle
    Param("store_bpc", 16.0, 64.0, why="bytes per SM per cycle a tile kernel's epilogue stores its outputs at"),
    Param("dla_eff", 0.05, 0.9, why="fraction of NVDLA's peak a convolution reaches"),
    Param("contention", 0.01, 5.0, why="slow-down of a busy GPU per unit of a DLA neighbour's DRAM load"),
)
POWER_PARAMS: Tuple[Param, ...] = (
    Param("mac_pj", 0.3, 10.0, why="GPU energy per fp16 multiply-accumulate at 1 V (pJ)"),
    Param("gpu_byte_pj", 20.0, 600.0, why="GPU energy per DRAM byte it moves at 1 V (pJ)"),
    Param("gpu_w", 0.05, 3.0, why="GPU clock-tree power per 128 CUDA cores per GHz at 1 V while busy"),
    Param("gpu_leak_w", 0.01, 1.0, why="GPU leakage per 128 CUDA cores per V while it runs"),
)
NUISANCE = (0.05, 50.0)    # a source's fixed host time per inference, relative to its harness's default
PRIOR_SIGMA = 10.0         # weak priors (in the logit of each parameter's range) keep the fit defined
NUISANCE_SIGMA = 1.0       # ... and pull an ill-determined source term toward its harness's default
ORIN_NANO_IDLE_W = 3.52    # published board idle (VD_E, Orin Nano 8GB devkit, VDD_IN)

#: Constants that differ by architecture (the rest are shared by every board).
ARCH_KEYS = ("tc_eff", "cuda_eff", "tf32_factor", "int8_arch", "wino_gain")
#: Volta's int8 relative to the shared int8 factor, read off MLPerf's ResNet-50 offline results
#: (closed, NVIDIA): AGX Orin over AGX Xavier is 3.06x. Xavier's tensor cores peak at twice their
#: fp16 rate in int8, but its int8 kernels (IMMA on the first tensor-core generation, with
#: reformats to the 32-wide vector layout) reach far less of that peak than Ampere's.
MLPERF_ORIN_OVER_XAVIER = 3.06
#: An architecture no row of a fit covers takes these constants from its nearest measured relative
#: (in that order: Pascal inherits what Maxwell has, itself measured or inherited).
DONORS: Tuple[Tuple[str, str, Tuple[str, ...]], ...] = (
    ("volta", "ampere", ("tc_eff",)),
    ("maxwell", "ampere", ("cuda_eff",)),
    ("pascal", "maxwell", ("cuda_eff", "wino_gain")),
    ("blackwell", "ampere", ("tc_eff", "tf32_factor", "cuda_eff")),
)


# ---------------------------------------------------------------------------------------------
# Evaluating many cases at once


class _Gemm:
    """A square GEMM as a one-kernel engine (the TensorRT peak-GEMM microbenchmark)."""

    @staticmethod
    def engine(n: int, precision: str) -> Engine:
        one = np.ones(1)
        return Engine(kind=np.array([KIND["gemm"]]), prec=np.array([P[precision]]), macs=one * n ** 3,
                      flops=one * 2 * n ** 3, weight_bytes=one * 0.0, in_bytes=one * 2 * n * n * 2,
                      out_bytes=one * n * n * 2, spatial=one * n, n_out=one * n, k_red=one * n, cin_g=one * n,
                      groups=one, dla_ok=np.array([False]), source=np.array([0]), sfu=one * 0.0,
                      simple=one * 0.0, stride=one, reformats=0)


@dataclass
class _Prepared:
    case: Case
    hw: Hardware
    precision: str
    n_gpu: int
    n_dla: int
    engine: Optional[Engine]
    io: Tuple[int, int]
    n_tr: int
    mem_frac: float
    notes: List[str] = field(default_factory=list)
    workload: Any = None


_PREP: Dict[str, _Prepared] = {}
_ENGINES: Dict[Tuple[Any, ...], Engine] = {}


def _prepare(case: Case) -> _Prepared:
    key = f"{case.id}:{case.source}"
    if key in _PREP:
        return _PREP[key]
    dev = as_device(case.device)
    if isinstance(case.mode, PowerMode):
        dev = Device(profile=dev.profile, power_mode=case.mode, simulated=True)
        hw = resolve(dev)
    else:
        hw = resolve(dev, case.mode)
    h = get_harness(case.harness)
    notes: List[str] = []
    # microbenchmarks name their precision exactly (their FP32 GEMM is not TF32)
    strict = case.metric.startswith("roof")
    prec = case.precision if strict else resolve_precision(hw, case.precision, dev.profile.precisions, notes, h)
    w = None
    if case.model.startswith("gemm:"):
        n = int(case.model.split(":")[1])
        engine = _Gemm.engine(n, prec)
        io, n_tr, n_gpu, n_dla = (0, 0), 0, 1, 0
    elif case.model == "-":
        engine, io, n_tr, n_gpu, n_dla = None, (0, 0), 0, 0, 0
    else:
        w = load(case.model, case.resolution)
        n_gpu, n_dla = check_accelerator(case.accelerator, hw, case.processes, prec)
        ekey = (case.model, case.resolution, prec, hw.arch)
        if ekey not in _ENGINES:
            _ENGINES[ekey] = plan(w, prec, arch=hw.arch)
        engine = _ENGINES[ekey]
        if n_gpu and prec == "int8":
            engine = _chosen(w, hw, case, engine)
        io, n_tr = (w.io_in, w.io_out), (transitions(w) if n_dla else 0)
    mem_frac = 0.0
    if w is not None:
        c0 = dict(K.ARCH_DEFAULTS)
        per = memory(w, engine, case.batch, c0)[0]
        mem_frac = per * (n_gpu + n_dla) / available_memory(hw, c0)
    prep = _Prepared(case=case, hw=hw, precision=prec, n_gpu=n_gpu, n_dla=n_dla, engine=engine, io=io,
                     n_tr=n_tr, mem_frac=mem_frac, notes=notes, workload=w)
    _PREP[key] = prep
    return prep


#: The constants the int8 builder's per-layer choice is priced with during a fit (the fit's own,
#: set before each of its rounds); empty: the shipped ones.
_CHOICE: Dict[str, Any] = {}


def _chosen(w: Any, hw: Hardware, case: Case, default: Engine) -> Engine:
    """The int8 engine the GPU runs (``precision_choice``), as ``plan.KernelTables`` chooses it."""
    if not (hw.has_tensor_cores or rate(hw.arch, "cuda", "int8")):
        return default
    key = (case.model, case.resolution, "int8", hw.device_id, hw.sm_count, case.batch)
    if key not in _ENGINES:
        c = K.constants(hw.arch, hw.device_id, hw.family)
        if _CHOICE:
            c.update({k: v for k, v in _CHOICE["c"].items() if k not in ARCH_KEYS})
            c.update(_CHOICE["arch"][hw.arch])
        _ENGINES[key] = choose(w, hw.arch, hw.sm_count, hw.has_tensor_cores, case.batch, c, hw.top_hz,
                               hw.top_bw or hw.bw)
    return _ENGINES[key]


def _rechoose(f: "Fit") -> None:
    """Price the int8 engines' per-layer choice with the fit's current constants."""
    _CHOICE.update(c=dict(f.c), arch={a: dict(v) for a, v in f.arch.items()})
    for k in [k for k in _ENGINES if len(k) > 4]:
        del _ENGINES[k]
    for k in [k for k, p in _PREP.items() if p.precision == "int8" and p.n_gpu]:
        del _PREP[k]


class Batch:
    """A set of cases evaluated together under one set of constants (vectorised)."""

    def __init__(self, items: Sequence[Case]) -> None:
        self.cases = list(items)
        self.prep = [_prepare(c) for c in self.cases]
        self.core_idx = [i for i, p in enumerate(self.prep) if p.engine is not None]
        # distinct GPU tables: (engine, batch, sm, arch, tensor cores)
        self.gpu_keys: List[Tuple[Any, ...]] = []
        self.gpu_of: Dict[int, int] = {}
        for i in self.core_idx:
            p = self.prep[i]
            if not p.n_gpu:
                continue
            key = (id(p.engine), p.case.batch, p.hw.sm_count, p.hw.arch, p.hw.has_tensor_cores)
            if key not in self.gpu_keys:
                self.gpu_keys.append(key)
            self.gpu_of[i] = self.gpu_keys.index(key)
        self._stack_gpu_kernels()
        self._cost_key: Optional[Tuple[float, ...]] = None
        self._tables: Optional[Tables] = None
        self._dla_gid: Dict[int, Tuple[int, int]] = {}

    def _stack_gpu_kernels(self) -> None:
        """One array per engine field over every distinct GPU table, with each kernel's
        architecture, SMs, tensor cores and batch beside it, so one ``gpu_costs`` call costs all."""
        engines = {id(p.engine): p.engine for p in self.prep if p.engine is not None}
        parts = [engines[k[0]] for k in self.gpu_keys]
        self._sizes = np.array([e.n for e in parts], dtype=np.int64)
        if not parts:
            return
        fields = [f for f in Engine.__dataclass_fields__ if isinstance(getattr(parts[0], f), np.ndarray)]
        self._stack = Engine(**{f: np.concatenate([getattr(e, f) for e in parts]) for f in fields},
                             reformats=0)
        rep = np.repeat
        self._k_arch = rep(np.array([A[k[3]] for k in self.gpu_keys]), self._sizes)
        self._k_sm = rep(np.array([float(k[2]) for k in self.gpu_keys]), self._sizes)
        self._k_tc = rep(np.array([bool(k[4]) for k in self.gpu_keys]), self._sizes)
        self._k_batch = rep(np.array([float(k[1]) for k in self.gpu_keys]), self._sizes)

    # -- the per-kernel part (depends on the efficiency constants only) -----------------------
    def _costs(self, c: Dict[str, Any], arch_c: Dict[str, Dict[str, float]]) -> Tables:
        key = tuple(float(c[k]) for k in ("conv_k0", "dw_eff", "mem_eff", "dla_eff", "int8_factor",
                                           "conv_eff", "store_bpc", "write_cost")) + tuple(
            float(arch_c[a][k]) for a in ARCHS for k in ARCH_KEYS)
        if key == self._cost_key and self._tables is not None:
            return self._tables
        items: List[Costs] = []
        if self.gpu_keys:
            per_kernel = {k: np.array([arch_c[a][k] for a in ARCHS])[self._k_arch] for k in ARCH_KEYS}
            cc = dict(c, **per_kernel)
            full = gpu_costs(self._stack, self._k_arch, self._k_sm, self._k_tc, self._k_batch, cc)
            ends = np.cumsum(self._sizes)
            starts = ends - self._sizes
            for s, e in zip(starts, ends):
                items.append(Costs(a=full.a[s:e], b=full.b[s:e], bytes=full.bytes[s:e], n=int(e - s),
                                   ops=full.ops[s:e]))
        self._dla_gid = {}
        for i in self.core_idx:
            p = self.prep[i]
            if not p.n_dla:
                continue
            ca = dict(c, **arch_c[p.hw.arch])
            e16 = _ENGINES.setdefault((p.case.model, p.case.resolution, "fp16"), plan(p.workload, "fp16"))
            items.append(dla_costs(p.engine, p.hw.arch, p.precision, p.case.batch, ca))
            items.append(fallback_costs(e16, p.hw.arch, p.hw.sm_count, p.hw.has_tensor_cores, p.case.batch, ca))
            self._dla_gid[i] = (len(items) - 2, len(items) - 1)
        self._tables = Tables(items) if items else None
        self._cost_key = key
        return self._tables

    # -- everything else ----------------------------------------------------------------------
    def evaluate(self, c: Dict[str, Any], arch_c: Dict[str, Dict[str, float]],
                 host_scale: Dict[str, float]) -> np.ndarray:
        """The model's value of every case (SI units), NaN where it has none."""
        out = np.full(len(self.cases), np.nan)
        for i, p in enumerate(self.prep):
            if p.case.metric == "roof_peak":
                unit = p.case.extra.get("unit", "tensor")
                out[i] = 2.0 * rate(p.hw.arch, unit, p.case.precision) * p.hw.sm_count * p.hw.gpu_hz
            elif p.case.metric == "roof_dram":
                out[i] = p.hw.bw * c["mem_eff"]
        if not self.core_idx:
            return out
        T = self._costs(c, arch_c)
        rows = []
        for i in self.core_idx:
            p = self.prep[i]
            hw = p.hw
            h = get_harness(p.case.harness)
            gid = self.gpu_of.get(i, 0)
            dla, fb = self._dla_gid.get(i, (0, 0))
            row = {"mem_frac": p.mem_frac, "gid_gpu": gid, "gid_dla": dla, "gid_fb": fb,
                   "n_gpu": float(p.n_gpu), "n_dla": float(p.n_dla), "n_tr": float(p.n_tr),
                   "f_max": hw.gpu_hz, "f_top": hw.top_hz, "bw": hw.bw, "cpu_clk": (hw.cpu_mhz or 1500.0) / c["cpu_ref_mhz"],
                   "cores": float(hw.cpu_online), "budget": np.inf if hw.budget_w is None else float(hw.budget_w),
                   "dla_hz": hw.dla_hz, "dla_cores": float(max(hw.dla_count, 1)), "sm": float(hw.sm_count),
                   "cores_per_sm": float(cores_per_sm(hw.arch)), "idle": _idle(hw, c), "batch": float(p.case.batch)}
            copy_bytes = float(p.case.batch * (p.io[0] + p.io[1]) * 4.0)
            row.update(harness_columns(h, hw, c, copy_bytes, host_scale.get(p.case.source, 1.0)))
            rows.append(row)
        cfg = {k: np.array([r[k] for r in rows], dtype=np.int64 if k.startswith("gid") else float)
               for k in rows[0]}
        res = evaluate(T, cfg, c)
        for j, i in enumerate(self.core_idx):
            p = self.prep[i]
            m = p.case.metric
            if m == "roof_gemm":
                out[i] = 2.0 * float(p.engine.macs[0]) / res["t_gpu"][j]
            elif m == "per_process_throughput":
                out[i] = res["throughput"][j] / p.case.processes
            else:
                out[i] = res[m][j]
        return out


def _idle(hw: Hardware, c: Dict[str, Any]) -> float:
    """Board idle power: published for the Orin Nano family, else the rule ``plan`` states."""
    if hw.family == "orin-nano":
        return ORIN_NANO_IDLE_W
    return idle_rule(hw)


# ---------------------------------------------------------------------------------------------
# A fit: constants (global and per architecture) plus each source's nuisance term


@dataclass
class Fit:
    c: Dict[str, float]
    arch: Dict[str, Dict[str, float]]
    host_scale: Dict[str, float]
    notes: Dict[str, str] = field(default_factory=dict)
    rows: Dict[str, int] = field(default_factory=dict)   # rows each fitted group saw
    inherited: Dict[str, str] = field(default_factory=dict)  # architecture -> the one it took constants from


def _start() -> Fit:
    c = dict(K.ARCH_DEFAULTS)
    arch = {a: {k: c[k] for k in ARCH_KEYS} for a in ARCHS}
    return Fit(c=c, arch=arch, host_scale={})


def _direct(fit: Fit, train: List[Case]) -> None:
    """Constants read straight off microbenchmark rows: DRAM efficiency, then (given the fitted
    reduction saturation) the tensor-core, TF32 and CUDA-core GEMM efficiencies on Ampere."""
    dram = [c for c in train if c.metric == "roof_dram" and c.extra.get("kind") == "DRAM read"]
    if dram:
        hw = _prepare(dram[0]).hw
        fit.c["mem_eff"] = min(0.98, dram[0].value / hw.bw)
        fit.notes["mem_eff"] = (f"published row {dram[0].id}: GPU DRAM-read roof {dram[0].value / 1e9:.1f} GB/s "
                                f"over the {hw.mode} mode's {hw.bw / 1e9:.1f} GB/s peak")
    writes = [c for c in train if c.metric == "roof_dram" and c.extra.get("kind") == "DRAM write"]
    if dram and writes and writes[0].device == dram[0].device:
        fit.c["write_cost"] = max(1.0, dram[0].value / writes[0].value)
        fit.notes["write_cost"] = (f"published rows {dram[0].id} and {writes[0].id}: GPU DRAM read "
                                   f"{dram[0].value / 1e9:.1f} GB/s over write {writes[0].value / 1e9:.1f} GB/s "
                                   "on the same board and mode")
    gemms = {c.precision: c for c in train if c.metric == "roof_gemm"}
    if not gemms:
        return
    amp = fit.arch["ampere"]
    for name, prec in (("tc_eff", "fp16"), ("tf32_factor", "tf32"), ("cuda_eff", "fp32")):
        case = gemms.get(prec)
        if case is None:
            continue
        # the GEMM's time is its main loop (inversely as the efficiency) plus its output's
        # epilogue drain (whatever the efficiency): two probes separate them
        b = Batch([case])
        times = []
        for eff in (1.0, 0.5):
            probe = dict(fit.arch)
            probe["ampere"] = dict(amp, **{name: eff})
            times.append(1.0 / b.evaluate(fit.c, probe, {})[0])
        loop, rest = times[1] - times[0], 2.0 * times[0] - times[1]
        amp[name] = float(loop / max(1.0 / case.value - rest, 1e-30))
        what = {"tc_eff": "tensor-core", "tf32_factor": "TF32 relative to fp16", "cuda_eff": "CUDA-core"}[name]
        fit.notes[f"ampere.{name}"] = (f"published row {case.id}: TensorRT GEMM N=2048 {prec} "
                                       f"{case.value / 1e12:.2f} TFLOP/s on the Orin Nano at 918 MHz: "
                                       f"the {what} efficiency")


def _volta_int8(fit: Fit) -> None:
    """Volta's int8 multiplier such that AGX Orin over AGX Xavier on ResNet-50 int8 (batch 64, a
    CUDA-graph replay, each board's fastest mode) is MLPerf's ratio, on what MLPerf ran: the GPU
    and both DLAs, one process each (Xavier's DLAs add a larger share of its total than Orin's).

    Where no Volta row is in the fit (Volta held out), its tensor-core efficiency is not borrowed
    from Ampere (0.72 where Xavier's own rows give 0.61: the held-out Xavier came out 20-45% too
    fast): it is set from the same ratio, with Volta's int8 as efficient relative to its fp16 as
    Ampere's (``int8_arch`` 1). That puts the whole of MLPerf's gap into the tensor cores' reach;
    fitted on Xavier's own rows, the fp16 efficiency and the int8 shortfall separate again."""
    volta = fit.arch["volta"]
    held_out = fit.inherited.get("volta") is not None
    if held_out:
        volta["int8_arch"] = 1.0
        # no kernel passes its unit's peak: tc_eff x int8_factor stays below 0.95
        _match_mlperf(fit, "tc_eff", 0.3, min(0.95, 0.95 / fit.c["int8_factor"]))
        fit.notes["volta.tc_eff"] = (f"MLPerf Inference closed (NVIDIA) ResNet-50 offline: AGX Orin over AGX "
                                     f"Xavier {MLPERF_ORIN_OVER_XAVIER}x, GPU and two DLAs at batch 64, with "
                                     "Volta's int8 relative to fp16 as Ampere's (no Volta row in this fit)")
        return
    # no kernel passes its unit's peak: tc_eff x int8_factor x int8_arch stays below 0.95
    _match_mlperf(fit, "int8_arch", 0.2, 0.95 / (volta["tc_eff"] * fit.c["int8_factor"]))
    fit.notes["volta.int8_arch"] = (f"MLPerf Inference closed (NVIDIA) ResNet-50 offline: AGX Orin over AGX Xavier "
                                    f"{MLPERF_ORIN_OVER_XAVIER}x, GPU and two DLAs at batch 64")


def _match_mlperf(fit: Fit, name: str, lo: float, hi: float) -> None:
    """Volta's constant ``name`` (the higher, the faster Xavier's int8 ResNet-50) such that AGX
    Orin over AGX Xavier is MLPerf's ratio; bisection in log space within [lo, hi]."""
    common = dict(source="MLPERF_RATIO", mode="fastest", model="resnet50", precision="int8", batch=64,
                  processes=3, metric="throughput", value=1.0, unit="img/s", group="contrast", harness="graphs",
                  accelerator="gpu+dla")
    b = Batch([Case(id="xavier", device="agx-xavier", **common), Case(id="orin", device="agx-orin-64gb", **common)])
    for _ in range(30):
        mid = (lo * hi) ** 0.5
        fit.arch["volta"][name] = mid
        x, o = b.evaluate(fit.c, fit.arch, {})
        lo, hi = (mid, hi) if o / x > MLPERF_ORIN_OVER_XAVIER else (lo, mid)
    fit.arch["volta"][name] = (lo * hi) ** 0.5


def _squash(z: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.exp(np.log(lo) + (np.log(hi) - np.log(lo)) / (1.0 + np.exp(-z)))


def _unsquash(v: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    u = (np.log(np.clip(v, lo * 1.0001, hi * 0.9999)) - np.log(lo)) / (np.log(hi) - np.log(lo))
    return np.log(u / (1.0 - u))


def levenberg_marquardt(residuals, z0: np.ndarray, iterations: int = 60, tol: float = 1e-9,
                        step: float = 1e-4) -> np.ndarray:
    """Minimise sum(residuals(z)^2) (numpy only: scipy is not a dependency)."""
    z = np.asarray(z0, float).copy()
    r = residuals(z)
    cost = float(r @ r)
    lam = 1e-2
    for _ in range(iterations):
        J = np.empty((r.size, z.size))
        for j in range(z.size):
            dz = z.copy()
            dz[j] += step
            J[:, j] = (residuals(dz) - r) / step
        g = J.T @ r
        H = J.T @ J
        improved = False
        for _ in range(12):
            try:
                delta = np.linalg.solve(H + lam * np.diag(np.diag(H) + 1e-9), -g)
            except np.linalg.LinAlgError:
                lam *= 10
                continue
            r_new = residuals(z + delta)
            c_new = float(r_new @ r_new)
            if np.isfinite(c_new) and c_new < cost:
                z, r = z + delta, r_new
                improved = cost - c_new > tol * max(cost, 1.0)
                cost = c_new
                lam = max(lam / 3, 1e-7)
                break
            lam *= 5
        if not improved:
            break
    return z


def _set(fit: Fit, params: Sequence[Param], nuisance: Sequence[str], v: np.ndarray) -> None:
    """Write parameter values ``v`` (params, then one host term per nuisance source) into ``fit``."""
    for p, x in zip(params, v):
        if p.scope == "global":
            fit.c[p.name] = float(x)
        else:
            fit.arch[p.scope][p.name] = float(x)
    for s, x in zip(nuisance, v[len(params):]):
        fit.host_scale[s] = float(x)


# Host terms act only once the host's work outgrows the GPU's: the least-squares surface is flat
# below that point, so each starts from the best of a grid.
def _grid_start(fit: Fit, batch: Batch, obs: np.ndarray, p: Param) -> float:
    """Set global constant ``p`` to the best of 25 values across its range; returns it."""
    best_v, best_err = fit.c[p.name], np.inf
    for g in np.exp(np.linspace(np.log(p.lo * 1.01), np.log(p.hi * 0.99), 25)):
        fit.c[p.name] = float(g)
        e = np.log(np.maximum(batch.evaluate(fit.c, fit.arch, fit.host_scale), 1e-30) / obs)
        e = float(np.sum(np.where(np.isfinite(e), e, 10.0) ** 2))
        if e < best_err:
            best_v, best_err = float(g), e
    fit.c[p.name] = best_v
    return best_v


def _grid_start_host(fit: Fit, rows: List[Case], obs: np.ndarray, source: str) -> None:
    """Set ``source``'s host term to the best of 25 values over its own rows."""
    grid = np.exp(np.linspace(np.log(NUISANCE[0] * 1.01), np.log(NUISANCE[1] * 0.99), 25))
    mine = [i for i, c in enumerate(rows) if c.source == source]
    sub = Batch([rows[i] for i in mine])
    best, best_err = fit.host_scale.get(source, 1.0), np.inf
    for g in grid:
        pred = sub.evaluate(fit.c, fit.arch, dict(fit.host_scale, **{source: g}))
        e = float(np.sum(np.log(pred / obs[mine]) ** 2))
        if e < best_err:
            best, best_err = g, e
    fit.host_scale[source] = float(best)


def _fit_group(fit: Fit, rows: List[Case], params: Sequence[Param], nuisance: Sequence[str]) -> List[str]:
    """Least squares on log error over ``rows`` for ``params`` (+ a host term per source in
    ``nuisance``), with weak priors at the starting values. Returns what was fitted."""
    batch = Batch(rows)
    obs = np.array([c.value for c in rows])
    lo = np.array([p.lo for p in params] + [NUISANCE[0]] * len(nuisance))
    hi = np.array([p.hi for p in params] + [NUISANCE[1]] * len(nuisance))
    start = [fit.c[p.name] if p.scope == "global" else fit.arch[p.scope][p.name] for p in params]
    start += [fit.host_scale.get(s, 1.0) for s in nuisance]
    z0 = _unsquash(np.array(start), lo, hi)
    z_prior = _unsquash(np.array([K.ARCH_DEFAULTS[p.name] for p in params] + [1.0] * len(nuisance)), lo, hi)
    sigma = np.array([PRIOR_SIGMA] * len(params) + [NUISANCE_SIGMA] * len(nuisance))

    def apply(z: np.ndarray) -> None:
        _set(fit, params, nuisance, _squash(z, lo, hi))

    def residuals(z: np.ndarray) -> np.ndarray:
        apply(z)
        pred = batch.evaluate(fit.c, fit.arch, fit.host_scale)
        err = np.log(np.maximum(pred, 1e-30) / obs)
        err = np.where(np.isfinite(err), err, 10.0)
        return np.concatenate([err, (z - z_prior) / sigma])

    apply(z0)
    for k, p in enumerate(params):
        if p.grid and p.scope == "global":
            start[k] = _grid_start(fit, batch, obs, p)
    for s in nuisance:
        _grid_start_host(fit, rows, obs, s)
    z0 = _unsquash(np.array(start[:len(params)] + [fit.host_scale[s] for s in nuisance]), lo, hi)
    z = levenberg_marquardt(residuals, z0)
    apply(z)
    return [p.name if p.scope == "global" else f"{p.scope}.{p.name}" for p in params] + list(nuisance)


def contrast_values(f: Fit) -> List[Tuple[Dict[str, Any], float]]:
    """The seeds' contrasts (Tayal: 1 GPU + 1 DLA instance against 2 GPU instances), predicted."""
    out = []
    for t in contrasts():
        common = dict(source="TAYAL_CONTRAST", device=t["device"], mode=t["power_mode"], model=t["model"],
                      precision=t["precision"], batch=int(t["batch"]), processes=2, metric="throughput",
                      value=1.0, unit="img/s", group="contrast")
        both = Case(id=t["id"] + "+dla", accelerator="gpu+dla", **common)
        two = Case(id=t["id"] + "+gpu", accelerator="gpu", **common)
        v = Batch([both, two]).evaluate(f.c, f.arch, {})
        out.append((t, float(v[0] - v[1])))
    return out


def _fitted_archs(time_rows: List[Case]) -> set:
    """Architectures with more rows than constants of their own (Volta's one on two rows,
    Maxwell's two on three): two Nano rows of one source cannot separate Maxwell's CUDA-core
    efficiency from its Winograd gain, and left to them the held-out Nano came out 5-24% slow."""
    rows: Dict[str, int] = {}
    for c in time_rows:
        arch = _prepare(c).hw.arch
        rows[arch] = rows.get(arch, 0) + 1
    return {a for a, n in rows.items() if n > sum(1 for p in TIME_PARAMS if p.scope == a)}


def _time_params(time_rows: List[Case]) -> List[Param]:
    """The timing constants the rows can fit: a group is fitted only on more rows than it has
    parameters (DLA efficiency on three DLA rows, contention on two gpu+dla rows, an
    architecture's constants on more of its rows than it has constants)."""
    archs = _fitted_archs(time_rows)

    def enough(p: Param) -> bool:
        if p.name == "dla_eff":
            return sum(1 for c in time_rows if c.accelerator != "gpu") > 2
        if p.name == "contention":
            return sum(1 for c in time_rows if c.accelerator == "gpu+dla") > 1
        if p.scope == "global":
            return True
        return p.scope in archs

    return [p for p in TIME_PARAMS if enough(p)]


def _nuisance_sources(time_rows: List[Case]) -> List[str]:
    """Sources with a host term of their own: those with two or more rows timed on the host."""
    by_source: Dict[str, int] = {}
    for c in time_rows:
        if not get_harness(c.harness).gpu_only:
            by_source[c.source] = by_source.get(c.source, 0) + 1
    return sorted(s for s, n in by_source.items() if n > 1)


def _inherit(f: Fit, time_rows: List[Case]) -> None:
    """Architectures too few rows measured take their constants from the nearest one that was."""
    measured = _fitted_archs(time_rows) | ({"ampere"} if f.notes.get("ampere.tc_eff") else set())
    f.inherited = {}
    for arch, donor, names in DONORS:
        if arch not in measured:
            for name in names:
                f.arch[arch][name] = f.arch[donor][name]
            f.inherited[arch] = donor


def fit(train: Optional[List[Case]] = None) -> Fit:
    """Fit the constants on ``train`` (default: every expressible case)."""
    if train is None:
        train = cases()[0]
    f = _start()
    _direct(f, train)
    time_rows = [c for c in train if c.group == "time"]
    params = _time_params(time_rows)
    nuisance = _nuisance_sources(time_rows)
    for _ in range(2):  # the GEMM efficiencies depend on the fitted saturation, and back
        _rechoose(f)
        fitted = _fit_group(f, time_rows, params, nuisance)
        _direct(f, train)
    f.rows["time"] = len(time_rows)
    _inherit(f, time_rows)
    _volta_int8(f)
    power_rows = [c for c in train if c.group == "power"]
    if len(power_rows) > len(POWER_PARAMS):
        fitted += _fit_group(f, power_rows, POWER_PARAMS, [])
        f.rows["power"] = len(power_rows)
    f.notes["fitted"] = ", ".join(fitted)
    return f


# ---------------------------------------------------------------------------------------------
# Report: in-sample and leave-one-source-out


def predict_cases(f: Fit, items: List[Case], held_out: Sequence[str] = ()) -> np.ndarray:
    if _CHOICE.get("c") != f.c or _CHOICE.get("arch") != f.arch:
        # priced with f's own constants, not whichever fit ran last (a held-out source's, or the
        # unrounded ones before calibrate writes them)
        _rechoose(f)
    scale = {s: v for s, v in f.host_scale.items() if s not in held_out}
    return Batch(items).evaluate(f.c, f.arch, scale)


def stored_fit() -> Fit:
    """The constants the package ships (calibration.json) as a Fit."""
    f = _start()
    for a in ARCHS:
        f.arch[a] = {k: K.constants(a)[k] for k in ARCH_KEYS}
    f.c.update({k: v for k, v in K.constants("volta").items() if k not in ARCH_KEYS})
    f.host_scale = {s: float(v) for s, v in K.validation().get("host_scale", {}).items()}
    return f


def cross_validate(items: Optional[List[Case]] = None) -> Dict[str, float]:
    """Leave-one-source-out predictions: {case id: predicted value}."""
    if items is None:
        items = cases()[0]
    out: Dict[str, float] = {}
    sources = sorted({c.source for c in items if c.group in ("time", "power")})
    for s in sources:
        train = [c for c in items if c.source != s]
        test = [c for c in items if c.source == s and c.group in ("time", "power")]
        f = fit(train)
        for c, v in zip(test, predict_cases(f, test, held_out=[s])):
            out[c.id] = float(v)
    return out


def _metric_keys(c: Case) -> List[str]:
    keys = [c.metric]
    if c.group == "time":
        keys.append("time (all)")
    if c.group == "power":
        keys.append("power (all)")
    return keys


def _mape(errors: Dict[str, List[float]]) -> Dict[str, Tuple[float, int]]:
    return {k: (100.0 * float(np.mean(np.abs(v))), len(v)) for k, v in errors.items() if v}


def report(f: Optional[Fit] = None, loso: Optional[Dict[str, float]] = None,
           cross: bool = False) -> Dict[str, Any]:
    """Every expressible row: published, in-sample and cross-validated predictions; MAPE tables
    by metric, source and architecture.

    In-sample predictions come from ``f`` (default: the shipped constants). Cross-validated ones
    are ``loso``, else recomputed when ``cross`` (a fit per source), else the ones stored with the
    shipped constants by the fit that produced them.
    """
    items, skipped = cases()
    f = f or stored_fit()
    pred = predict_cases(f, items)
    if loso is None:
        loso = cross_validate(items) if cross else {k: float(v) for k, v in
                                                    K.validation().get("cross_validated", {}).items()}
    rows = []
    tables: Dict[str, Dict[str, Dict[str, List[float]]]] = {"metric": {}, "source": {}, "arch": {}}
    for c, p in zip(items, pred):
        err = (p - c.value) / c.value
        cv = None if loso is None or c.id not in loso else (loso[c.id] - c.value) / c.value
        rows.append({"case": c, "predicted": float(p), "error": float(err),
                     "loso": None if loso is None or c.id not in loso else loso[c.id], "loso_error": cv})
        if c.group not in ("time", "power"):
            continue
        arch = _prepare(c).hw.arch
        for table, keys in (("metric", _metric_keys(c)), ("source", [c.source]), ("arch", [f"{arch} {c.group}"])):
            for k in keys:
                entry = tables[table].setdefault(k, {"in": [], "cv": []})
                entry["in"].append(err)
                if cv is not None:
                    entry["cv"].append(cv)
    summary = {t: {k: {"in": _mape({"x": v["in"]}).get("x"), "cv": _mape({"x": v["cv"]}).get("x")}
                   for k, v in sorted(d.items())} for t, d in tables.items()}
    return {"rows": rows, "tables": summary, "skipped": skipped, "fit": f, "loso": loso}


def _fmt(value: float, metric: str) -> str:
    if metric == "latency":
        return f"{value * 1e3:.3g} ms"
    if metric == "power":
        return f"{value:.3g} W"
    if metric in ("roof_gemm", "roof_peak"):
        return f"{value / 1e12:.3g} T/s"
    if metric == "roof_dram":
        return f"{value / 1e9:.3g} GB/s"
    return f"{value:.4g}/s"


def format_report(rep: Dict[str, Any], verbose: bool = True) -> str:
    """The report at 100 columns: every row (verbose), the contrasts, the error tables, the sources."""
    lines = []
    if verbose:
        head = (f"{'id':>7} {'source':<11} {'device':<19} {'model':<14} {'prec':<4} {'b':>3} {'published':>11} "
                f"{'in-sample':>9} {'cross-val':>9}")
        lines += [head, "-" * len(head)]
        for r in rep["rows"]:
            c = r["case"]
            cv = "" if r["loso_error"] is None else f"{100 * r['loso_error']:+8.1f}%"
            lines.append(f"{c.id:>7} {c.source:<11} {c.device:<19} {c.model[:14]:<14} {c.precision:<4} "
                         f"{c.batch:>3} {_fmt(c.value, c.metric):>11} {100 * r['error']:>+8.1f}% {cv:>9}")
        lines.append("")
    for t, v in contrast_values(rep["fit"]):
        lines.append(f"contrast {t['id']} ({t['device']} {t['model']} {t['precision']} b{t['batch']}): "
                     f"1 GPU + 1 DLA instance minus 2 GPU ones:")
        lines.append(f"  published {t['value']:+.1f} {t['unit']} (PyTorch on the GPU), predicted {v:+.1f} "
                     "(TensorRT on both)")
    lines.append("")
    lines.append("Mean absolute percentage error, in-sample (the shipped constants, fitted on every source) and")
    lines.append("cross-validated (each source predicted by a fit without it, its harness term at the default):")
    for title, table in (("metric", "metric"), ("source", "source"), ("architecture", "arch")):
        lines.append(f"  by {title}:")
        for k, v in rep["tables"][table].items():
            ins, cv = v["in"], v["cv"]
            ins_text = f"{ins[0]:6.1f}%" if ins else "      -"
            cv_text = f"{cv[0]:6.1f}%" if cv else "      -"
            n = ins[1] if ins else 0
            lines.append(f"    {k:<24} in-sample {ins_text}   cross-validated {cv_text}   {n:>3} rows")
    lines.append("Goals, cross-validated: time <= 15%, power <= 10%.")
    lines.append("")
    lines.append("Sources and the harness each measured with:")
    used = sorted({r["case"].source for r in rep["rows"]})
    for src in used:
        spec = SOURCES.get(src)
        if spec is not None:
            lines.append(f"  {src:<11} {spec.harness:<11} {spec.why}"[:100])
    lines.append(f"  {'CHAKRABORTY':<11} {'trtexec':<11} the seeds' concurrency study (SEEDS.md section 1)")
    lines.append(f"  {'MLP30_CFG':<11} {'graphs':<11} MLPerf v3.0's Orin config (expected queries per second)")
    lines.append(f"{len(rep['skipped'])} published rows are not expressible; --verbose lists them with the reason.")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Writing calibration.json


def _round4(value: float) -> float:
    return float(f"{value:.4g}")


def _fitted_entries(f: Fit, data: Dict[str, Any]) -> None:
    """Every least-squares parameter, with how it was fitted or why it kept its starting value."""
    fitted = set(f.notes.get("fitted", "").split(", "))
    for p in TIME_PARAMS + POWER_PARAMS:
        key = p.name if p.scope == "global" else f"{p.scope}.{p.name}"
        value = f.c[p.name] if p.scope == "global" else f.arch[p.scope][p.name]
        group = "power" if p in POWER_PARAMS else "time"
        how = (f"fitted: {p.why}; {f.rows.get(group, 0)} {group} rows, least squares on log error within "
               f"[{p.lo:g}, {p.hi:g}]") if key in fitted else f"starting value ({p.why}): too few rows to fit"
        entry = {"value": _round4(value), "fitted_to": how}
        if p.scope == "global":
            data["global"][p.name] = entry
        else:
            data["arch"].setdefault(p.scope, {})[p.name] = entry


def _direct_entries(f: Fit, data: Dict[str, Any]) -> None:
    """Constants read straight off microbenchmark rows, and those inherited from a relative."""
    for name in ("mem_eff", "write_cost"):
        if name in f.notes:
            data["global"][name] = {"value": _round4(f.c[name]), "fitted_to": f.notes[name]}
    if "volta.int8_arch" in f.notes:
        data["arch"].setdefault("volta", {})["int8_arch"] = {"value": _round4(f.arch["volta"]["int8_arch"]),
                                                             "fitted_to": f.notes["volta.int8_arch"]}
    for name in ("tc_eff", "tf32_factor", "cuda_eff"):
        note = f.notes.get(f"ampere.{name}")
        if note:
            data["arch"].setdefault("ampere", {})[name] = {"value": _round4(f.arch["ampere"][name]),
                                                           "fitted_to": note}
    # boards no published row covers take their nearest relative's values
    for arch, donor, names in DONORS:
        if arch not in f.inherited:
            continue
        for name in names:
            data["arch"].setdefault(arch, {})[name] = {
                "value": _round4(f.arch[donor][name]),
                "fitted_to": f"inherited from {donor}: no published {arch} row"}


def _validation(f: Fit, rep: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {"host_scale": {s: _round4(v) for s, v in sorted(f.host_scale.items())}}
    if rep is None:
        return out

    def percent(x: Optional[Tuple[float, int]]) -> Optional[float]:
        return None if x is None else round(x[0], 2)

    out["cross_validated"] = {k: float(f"{v:.6g}") for k, v in rep["loso"].items()}
    out["mape"] = {t: {k: {"in_sample": percent(v["in"]), "cross_validated": percent(v["cv"]),
                           "rows": 0 if v["in"] is None else v["in"][1]}
                       for k, v in d.items()} for t, d in rep["tables"].items()}
    return out


def to_json(f: Fit, rep: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    data: Dict[str, Any] = {"schema": K.SCHEMA, "global": {}, "arch": {}, "families": {}, "devices": {}}
    _fitted_entries(f, data)
    _direct_entries(f, data)
    data["families"]["orin-nano"] = {"idle_w": {
        "value": ORIN_NANO_IDLE_W, "fitted_to": "published rows 200-210 note: idle baseline 3.52 W board "
                                                "(VD_E, Orin Nano 8GB devkit VDD_IN); used for the whole Orin Nano family"}}
    data["validation"] = _validation(f, rep)
    return data


def write(data: Dict[str, Any], path=None) -> None:
    path = path or K.CALIBRATION_PATH
    body = {"schema": K.SCHEMA,
            "about": ("Fitted constants of the simulated Jetson (pytest_jetson/sim): shared, or per architecture, "
                      "family or device, never per model; each with what it was fitted to. 'validation' holds each "
                      "published source's fitted harness term (used only to report in-sample error) and the "
                      "in-sample and leave-one-source-out errors of this fit. Regenerate with "
                      "`pytest-jetson calibrate --fit --write`.")}
    body.update(data)
    write_atomic(path, (json.dumps(body, indent=1) + "\n").encode("utf-8"))
    K.reload()
    _PREP.clear()
