"""Calibration of the model's few free constants against published Jetson results.

``cases()`` turns every published row the model can express (a zoo network or a microbenchmark, on
a profiled board and power mode) plus the seeds' figures into a prediction target. ``report()``
compares the model with them (predicted vs published, error, MAPE per metric). ``fit()`` fits
the constants once, per architecture, never per model, and ``write()`` stores them in
``pytest_jetson/sim/data/calibration.json`` with a note of what each was fitted to.

    pytest-jetson calibrate --report        # predicted vs published
    pytest-jetson calibrate --fit --write   # refit (developers; deterministic)
"""

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import constants as K
from .arch import normalise_precision, rate
from .hardware import resolve
from .workload import Workload, load

DATA = Path(__file__).resolve().parent / "data"

#: published.json device_family -> profile id. The Orin Nano rows come from Super firmware
#: (15W at 612 MHz, 25W at 918 MHz, MAXN_SUPER), whose modes the orin-nano-8gb-super profile holds.
FAMILY = {"nano": "nano", "agx_xavier": "agx-xavier", "orin_nano": "orin-nano-8gb-super"}

#: Model names as published -> zoo names.
MODELS = {"mobilenetv2": "mobilenet_v2", "mobilenet_v2": "mobilenet_v2"}

TIME_METRICS = ("throughput", "latency", "per_process_throughput")


@dataclass
class Case:
    """One published figure the model can express."""

    id: str
    source: str
    device: str
    mode: str
    model: str
    precision: str
    batch: int
    processes: int
    metric: str        # throughput | latency | power | per_process_throughput | roof_gemm | roof_peak | roof_dram
    value: float       # SI units (items/s, s, W, FLOP/s, B/s)
    unit: str
    group: str         # time | power | roof | seeds
    note: str = ""
    accelerator: str = "gpu"
    extra: Dict[str, Any] = field(default_factory=dict)


class _Gemm:
    """A square GEMM as a one-kernel graph (the TensorRT peak-GEMM microbenchmark)."""

    def __init__(self, n: int) -> None:
        from types import SimpleNamespace

        self.name = f"gemm{n}"
        self.params = n * n
        self.macs = n ** 3
        self.batch = 1
        self.input_shape = (1, 1)
        self.output_shapes = [(1, 1)]
        self.unknown_ops: List[str] = []
        self._k = [SimpleNamespace(name="gemm", op_type="MatMul", kind="gemm", macs=n ** 3, flops=2 * n ** 3,
                                   weight_elems=n * n, input_elems=n * n, output_elems=n * n,
                                   out_channels=n, spatial=n, groups=1)]

    def kernels(self):
        return self._k


def _mode_of(family: str, text: str) -> Optional[str]:
    t = (text or "").strip()
    if family in ("nano", "agx_xavier"):
        if t.startswith("not stated"):
            return "MAXN"
        return None
    for name in ("MAXN_SUPER", "25W", "15W"):
        if t.startswith(name):
            return name
    return None


def _si(value: float, unit: str) -> float:
    u = unit.strip()
    scale = {"FPS": 1.0, "qps": 1.0, "ms": 1e-3, "W": 1.0, "TFLOP/s": 1e12, "TOP/s": 1e12, "GB/s": 1e9}
    return float(value) * scale[u]


def published_rows() -> List[Dict[str, Any]]:
    return json.loads((DATA / "published.json").read_text(encoding="utf-8"))["results"]


def _micro(row: Dict[str, Any], device: str, mode: str) -> Optional[Case]:
    name = row["model"].split(":", 1)[1].strip()
    base = dict(id=str(row["id"]), source=row["source_id"], device=device, mode=mode, batch=1, processes=1,
                value=_si(row["value"], row["unit"]), unit=row["unit"])
    if name.startswith("TensorRT GEMM N="):
        n = int(name.split("=")[1].split()[0])
        prec = normalise_precision(name.split()[3])
        return Case(model=f"gemm:{n}", precision=prec, metric="roof_gemm", group="roof", **base)
    if name == "board power during dense GEMM":
        base["value"] = float(row["value"])
        return Case(model="gemm:2048", precision="fp16", metric="power", group="power",
                    note="continuous dense GEMM, fp16", **base)
    if name.startswith("FP16 matrix"):
        return Case(model="-", precision="fp16", metric="roof_peak", group="roof",
                    note="Vulkan cooperative-matrix peak vs the spec tensor-core peak", **base)
    if name.startswith("INT8 matrix"):
        return Case(model="-", precision="int8", metric="roof_peak", group="roof",
                    note="Vulkan cooperative-matrix peak vs the spec tensor-core peak", **base)
    if name == "FP32 scalar FMA":
        return Case(model="-", precision="fp32", metric="roof_peak", group="roof", extra={"unit": "cuda"},
                    note="shader FMA peak vs the spec CUDA-core peak", **base)
    if name == "DRAM read":
        return Case(model="-", precision="fp32", metric="roof_dram", group="roof", **base)
    return None


def cases() -> Tuple[List[Case], List[Tuple[Dict[str, Any], str]]]:
    """(expressible cases, [(row, why not expressible)])."""
    from ..models import zoo

    out: List[Case] = []
    skipped: List[Tuple[Dict[str, Any], str]] = []
    names = set(zoo.names())
    for row in published_rows():
        fam = row.get("device_family")
        device = FAMILY.get(fam)
        mode = _mode_of(fam, row.get("power_mode") or "") if device else None
        if not device:
            skipped.append((row, f"no profile for device family {fam!r}"))
            continue
        if not mode:
            skipped.append((row, f"power mode {row.get('power_mode')!r} (governor state) is not modelled"))
            continue
        if str(row["model"]).startswith("microbenchmark"):
            case = _micro(row, device, mode)
            if case is None:
                skipped.append((row, "microbenchmark without a model counterpart"))
            else:
                out.append(case)
            continue
        model = MODELS.get(str(row["model"]).lower(), str(row["model"]).lower())
        if model not in names:
            skipped.append((row, f"model {row['model']!r} is not in the zoo"))
            continue
        metric = {"throughput": "throughput", "latency": "latency", "power_VDD_IN_mean": "power"}.get(row["metric"])
        if metric is None:
            skipped.append((row, f"metric {row['metric']!r} is not predicted"))
            continue
        # The VD harness replays the engine as a CUDA graph with device-resident buffers: no per-kernel
        # CPU launches and almost no host work per inference, unlike trtexec (the seeds' harness).
        graphs = str(row.get("source_id", "")).startswith("VD")
        out.append(Case(
            extra={"graphs": graphs}, note="CUDA graphs harness" if graphs else "",
            id=str(row["id"]), source=row["source_id"], device=device, mode=mode, model=model,
            precision=normalise_precision(row["precision"]), batch=int(row["batch"] or 1),
            processes=int(row.get("concurrency") or 1), metric=metric,
            value=_si(row["value"], row["unit"]), unit=row["unit"],
            group="power" if metric == "power" else "time",
        ))
    seeds = json.loads((DATA / "seeds.json").read_text(encoding="utf-8"))["targets"]
    for s in seeds:
        out.append(Case(
            id=s["id"], source="SEEDS", device=s["device"], mode=s["power_mode"], model=s["model"],
            precision=s["precision"], batch=int(s["batch"]), processes=int(s["processes"]),
            metric=s["metric"], value=float(s["value"]), unit=s["unit"], group="seeds", note=s["text"],
            accelerator=s.get("accelerator", "gpu"), extra={"graphs": s.get("harness") == "graphs"},
        ))
    return out, skipped


# ---------------------------------------------------------------------------------------------
# Evaluating a case under a set of constants

_CACHE: Dict[Tuple[str, str], Any] = {}


def _hw(device: str, mode: str):
    key = (device, mode)
    if key not in _CACHE:
        _CACHE[key] = resolve(device, mode)
    return _CACHE[key]


def _workload(model: str) -> Workload:
    key = ("model", model)
    if key not in _CACHE:
        _CACHE[key] = load(_Gemm(int(model.split(":")[1])) if model.startswith("gemm:") else model)
    return _CACHE[key]


def constants_for(case: Case, overrides: Optional[Dict[str, float]] = None) -> Dict[str, float]:
    hw = _hw(case.device, case.mode)
    c = K.constants(hw.arch, hw.device_id, hw.family)
    c["l2_bytes"] = hw.l2_bytes
    if overrides:
        c.update(overrides)
    if case.extra.get("graphs"):
        c = dict(c)
        g = c.get("graphs_factor", 0.2)
        c["host_us"] *= g
        c["launch_us"] *= g
        c["copy_gbs"] /= g
    return c


def predicted(case: Case, overrides: Optional[Dict[str, float]] = None) -> float:
    """The model's value for a case (SI units), under the stored constants plus ``overrides``."""
    from .prediction import evaluate_one

    hw = _hw(case.device, case.mode)
    c = constants_for(case, overrides)
    if case.metric == "roof_peak":
        unit = case.extra.get("unit", "tensor")
        return 2.0 * rate(hw.arch, unit, case.precision) * hw.sm_count * hw.gpu_hz
    if case.metric == "roof_dram":
        return hw.bw * c["mem_eff"]
    w = _workload(case.model)
    n_dla = case.processes if case.accelerator == "dla" else 0
    out = evaluate_one(hw, w, case.precision, case.batch, case.processes - n_dla, n_dla, c)
    if case.metric == "roof_gemm":
        return 2.0 * w.macs / out["t_gpu"]
    if case.metric == "per_process_throughput":
        return out["throughput"] / case.processes
    return float(out[case.metric])


# ---------------------------------------------------------------------------------------------
# Report

def contrasts() -> List[Dict[str, Any]]:
    return json.loads((DATA / "seeds.json").read_text(encoding="utf-8")).get("contrasts", [])


def contrast_value(t: Dict[str, Any], overrides: Optional[Dict[str, float]] = None) -> float:
    """(1 GPU + 1 DLA instance) minus (2 GPU instances), items/s, as the Tayal contrast defines it."""
    from .prediction import evaluate_one

    hw = _hw(t["device"], t["power_mode"])
    c = K.constants(hw.arch, hw.device_id, hw.family)
    c["l2_bytes"] = hw.l2_bytes
    if overrides:
        c.update(overrides)
    w = _workload(t["model"])
    both = evaluate_one(hw, w, t["precision"], int(t["batch"]), 1, 1, c)["throughput"]
    two = evaluate_one(hw, w, t["precision"], int(t["batch"]), 2, 0, c)["throughput"]
    return float(both - two)


def report(overrides: Optional[Dict[str, float]] = None) -> Dict[str, Any]:
    """Every expressible row: predicted vs published and the error; MAPE per metric and group."""
    cs, skipped = cases()
    rows = []
    for cse in cs:
        pred = predicted(cse, overrides)
        err = (pred - cse.value) / cse.value
        rows.append({"case": cse, "predicted": pred, "error": err})
    by_metric: Dict[str, List[float]] = {}
    for r in rows:
        cse = r["case"]
        keys = [cse.metric]
        if cse.group == "time" or (cse.group == "seeds" and cse.metric in TIME_METRICS):
            keys.append("time (all)")
        if cse.metric == "power":
            keys.append("power (all)")
        if cse.group == "seeds":
            keys.append("seeds")
        for k in keys:
            by_metric.setdefault(k, []).append(abs(r["error"]))
    mape = {k: 100.0 * float(np.mean(v)) for k, v in by_metric.items()}
    counts = {k: len(v) for k, v in by_metric.items()}
    extra = [{"target": t, "predicted": contrast_value(t, overrides)} for t in contrasts()]
    return {"rows": rows, "mape": mape, "counts": counts, "skipped": skipped, "contrasts": extra}


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
    lines = []
    if verbose:
        head = f"{'id':>6} {'device':<20} {'mode':<10} {'model':<18} {'prec':<5} {'b':>3} {'n':>2} " \
               f"{'metric':<22} {'published':>12} {'predicted':>12} {'error':>8}"
        lines.append(head)
        lines.append("-" * len(head))
        for r in rep["rows"]:
            c = r["case"]
            lines.append(f"{c.id:>6} {c.device:<20} {c.mode:<10} {c.model:<18} {c.precision:<5} {c.batch:>3} "
                         f"{c.processes:>2} {c.metric:<22} {_fmt(c.value, c.metric):>12} "
                         f"{_fmt(r['predicted'], c.metric):>12} {100 * r['error']:>+7.1f}%")
        lines.append("")
    for x in rep.get("contrasts", []):
        t = x["target"]
        lines.append(f"contrast {t['id']} ({t['device']} {t['model']} {t['precision']} batch {t['batch']}): "
                     f"{t['metric']}: published {t['value']:+.1f} {t['unit']}, predicted {x['predicted']:+.1f}")
    lines.append("")
    lines.append("MAPE per metric (rows):")
    for k in sorted(rep["mape"]):
        lines.append(f"  {k:<24} {rep['mape'][k]:6.1f}%  ({rep['counts'][k]})")
    lines.append(f"goals: time <= 15%, power <= 10%.  {len(rep['skipped'])} published rows not expressible "
                 "(unmodelled governor state, models outside the zoo); --verbose lists them")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Fitting (developers run this once; the result is committed in calibration.json)

def nelder_mead(fun: Callable[[np.ndarray], float], x0: np.ndarray, step: float = 0.3,
                iterations: int = 600, tol: float = 1e-7) -> np.ndarray:
    """A plain Nelder-Mead minimiser (numpy only: scipy is not a dependency)."""
    n = x0.size
    pts = [x0.astype(float)]
    for i in range(n):
        p = x0.astype(float).copy()
        p[i] += step
        pts.append(p)
    vals = [fun(p) for p in pts]
    for _ in range(iterations):
        order = np.argsort(vals)
        pts = [pts[i] for i in order]
        vals = [vals[i] for i in order]
        if abs(vals[-1] - vals[0]) < tol:
            break
        centroid = np.mean(pts[:-1], axis=0)
        xr = centroid + (centroid - pts[-1])
        fr = fun(xr)
        if fr < vals[0]:
            xe = centroid + 2.0 * (centroid - pts[-1])
            fe = fun(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = centroid + 0.5 * (pts[-1] - centroid)
            fc = fun(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                for i in range(1, len(pts)):
                    pts[i] = pts[0] + 0.5 * (pts[i] - pts[0])
                    vals[i] = fun(pts[i])
    return pts[int(np.argmin(vals))]


#: (parameter, lower, upper) fitted per architecture. Positive quantities are fitted in log space.
TIME_PARAMS: Dict[str, Sequence[Tuple[str, float, float]]] = {
    "ampere": (("dw_eff", 0.05, 0.9), ("l2_reuse", 0.01, 0.95),
               ("kernel_cycles", 500, 40000), ("launch_us", 1, 40), ("host_us", 20, 2000),
               ("copy_gbs", 0.3, 20), ("switch_frac", 0.01, 0.2), ("graphs_factor", 0.02, 1.0),
               ("dla_eff", 0.05, 0.9)),
    "volta": (("tc_eff", 0.1, 0.95), ("dw_eff", 0.05, 0.9), ("kernel_cycles", 500, 40000),
              ("launch_us", 1, 60), ("host_us", 20, 3000), ("mem_eff", 0.3, 0.95), ("l2_reuse", 0.01, 0.95)),
    # No depthwise network among the Nano rows: dw_eff keeps its default there.
    "maxwell": (("cuda_eff", 0.2, 0.95), ("kernel_cycles", 500, 40000),
                ("launch_us", 1, 60), ("host_us", 20, 3000), ("mem_eff", 0.3, 0.95), ("l2_reuse", 0.01, 0.95)),
}
POWER_PARAMS: Sequence[Tuple[str, float, float]] = (
    ("gpu_w", 0.1, 5.0), ("gpu_base_frac", 0.1, 0.95), ("mem_w_per_gbs", 0.03, 0.3), ("cpu_w", 0.3, 3.0),
    ("v0", 0.4, 0.8), ("v1", 0.05, 0.6), ("emc_w", 0.01, 4.0))

ARCH_OF = {"nano": "maxwell", "agx-xavier": "volta", "orin-nano-8gb-super": "ampere", "orin-nano-8gb": "ampere",
           "agx-orin-64gb": "ampere"}


def _objective(cs: List[Case], names: Sequence[str], lows, highs, fixed: Dict[str, float]):
    def fun(z: np.ndarray) -> float:
        vals = np.exp(np.clip(z, np.log(lows), np.log(highs)))
        over = dict(fixed)
        over.update(dict(zip(names, vals)))
        total = 0.0
        for cse in cs:
            try:
                pred = predicted(cse, over)
            except Exception:  # a parameter set the model cannot evaluate: a bad point
                return 1e9
            if not (pred > 0 and math.isfinite(pred)):
                return 1e9
            # The seeds' figures are the ones the project promises to reproduce: weigh them double.
            total += (2.0 if cse.group == "seeds" else 1.0) * math.log(pred / cse.value) ** 2
        penalty = float(np.sum((z - np.clip(z, np.log(lows), np.log(highs))) ** 2))
        return total / max(len(cs), 1) + penalty
    return fun


def _gemm_efficiencies(gemms: List[Case]) -> Dict[str, Tuple[float, str]]:
    """tc_eff (fp16 GEMM), tf32_factor (tf32 over fp16) and cuda_eff (fp32 GEMM) from TensorRT GEMM roofs."""
    eff: Dict[str, Tuple[float, str]] = {}
    by_prec = {}
    for c in gemms:
        hw = _hw(c.device, c.mode)
        unit = "tensor" if c.precision in ("fp16", "tf32", "int8", "bf16") else "cuda"
        peak = 2.0 * rate(hw.arch, unit, c.precision) * hw.sm_count * hw.gpu_hz
        by_prec[c.precision] = (c.value / peak, c)
    src = "TensorRT GEMM N=2048 on Orin Nano 25W pinned 918 MHz (VD_G)"
    if "fp16" in by_prec:
        v, c = by_prec["fp16"]
        eff["tc_eff"] = (v, f"published row {c.id}: {src} fp16 {c.value / 1e12:.2f} TFLOP/s over the tensor-core peak")
    if "tf32" in by_prec and "fp16" in by_prec:
        v, c = by_prec["tf32"]
        eff["tf32_factor"] = (v / by_prec["fp16"][0], f"published row {c.id}: {src} tf32 efficiency over fp16's")
    if "fp32" in by_prec:
        v, c = by_prec["fp32"]
        eff["cuda_eff"] = (v, f"published row {c.id}: {src} fp32 {c.value / 1e12:.2f} TFLOP/s over the CUDA-core peak")
    return eff


def fit(verbose: bool = False) -> Dict[str, Dict[str, Dict[str, Any]]]:
    """Fit time constants per architecture, then Ampere power constants; returns calibration data."""
    cs, _ = cases()
    result: Dict[str, Dict[str, Dict[str, Any]]] = {"arch": {}, "families": {}, "devices": {}}
    fitted: Dict[str, Dict[str, float]] = {}

    # Directly measured: DRAM efficiency (Orin Nano DRAM-read roof over the mode's peak bandwidth).
    dram = [c for c in cs if c.metric == "roof_dram"]
    mem_eff = None
    if dram:
        hw = _hw(dram[0].device, dram[0].mode)
        mem_eff = min(0.98, dram[0].value / hw.bw)
        result["arch"].setdefault("ampere", {})["mem_eff"] = {
            "value": round(mem_eff, 4),
            "fitted_to": f"published row {dram[0].id} (IGPU DRAM-read roof {dram[0].value / 1e9:.1f} GB/s "
                         f"over the 15W mode's {hw.bw / 1e9:.1f} GB/s peak); other architectures inherit it"}
        for arch in ("volta", "maxwell", "pascal", "blackwell"):
            result["arch"].setdefault(arch, {})["mem_eff"] = {
                "value": round(mem_eff, 4), "fitted_to": f"inherited from ampere (row {dram[0].id}): no DRAM "
                                                         "roof published for this architecture"}

    # Directly measured: how much of the peak a large TensorRT GEMM reaches, per unit and precision.
    direct = _gemm_efficiencies([c for c in cs if c.metric == "roof_gemm"])
    for n, (v, note) in direct.items():
        result["arch"].setdefault("ampere", {})[n] = {"value": float(f"{v:.4g}"), "fitted_to": note}

    for arch, params in TIME_PARAMS.items():
        sel = [c for c in cs if ARCH_OF.get(c.device) == arch and c.group in ("time", "seeds", "roof")
               and c.metric not in ("roof_peak", "roof_dram")]
        if arch == "ampere":
            sel = [c for c in sel if c.metric != "roof_gemm"]
        if not sel:
            continue
        names = [p[0] for p in params]
        lows = np.array([max(p[1], 1e-6) for p in params])
        highs = np.array([p[2] for p in params])
        fixed = {"mem_eff": mem_eff} if mem_eff and "mem_eff" not in names else {}
        if arch == "ampere":
            fixed.update({n: v for n, (v, _) in direct.items()})
        c0 = dict(K.ARCH_DEFAULTS)  # start from the code defaults: a refit reproduces the file
        x0 = np.log(np.clip([max(c0[n], 1e-3) for n in names], lows, highs))
        fun = _objective(sel, names, lows, highs, fixed)
        z = x0
        for _ in range(3):  # restarts shake Nelder-Mead out of a collapsed simplex
            z = nelder_mead(fun, z, step=0.4, iterations=500)
        vals = np.exp(np.clip(z, np.log(lows), np.log(highs)))
        fitted[arch] = dict(zip(names, vals))
        rows = ", ".join(sorted({f"{c.source}" for c in sel}))
        ids = ",".join(c.id for c in sel)
        for n, v in fitted[arch].items():
            result["arch"].setdefault(arch, {})[n] = {
                "value": float(f"{v:.4g}"),
                "fitted_to": f"{len(sel)} {arch} rows ({rows}; ids {ids}), least squares on log error"}
        if verbose:
            print(arch, fitted[arch], "rms log error", math.sqrt(fun(z)))

    # DLA/GPU contention: the one published contrast (Tayal), 1-D search on the coupling constant.
    for t in contrasts():
        base = dict(fitted.get("ampere", {}))
        base.update({n: v for n, (v, _) in direct.items()})
        if mem_eff:
            base["mem_eff"] = mem_eff
        grid = np.linspace(0.0, 5.0, 101)
        errs = [abs(contrast_value(t, dict(base, contention=g)) - t["value"]) for g in grid]
        best = round(float(grid[int(np.argmin(errs))]), 3)
        fitted.setdefault("ampere", {})["contention"] = best
        result["arch"].setdefault("ampere", {})["contention"] = {
            "value": best, "fitted_to": f"seeds contrast {t['id']}: {t['text'][:120]}"}
        if verbose:
            print("contention", best, "error", min(errs))

    # Pascal (TX2) has no published rows: Maxwell's software stack and SM design are its nearest.
    for n, v in fitted.get("maxwell", {}).items():
        result["arch"].setdefault("pascal", {})[n] = {
            "value": float(f"{v:.4g}"), "fitted_to": "inherited from maxwell: no published TX2 row"}
    for n, v in list(fitted.get("ampere", {}).items()) + [(n, v) for n, (v, _) in direct.items()]:
        result["arch"].setdefault("blackwell", {})[n] = {
            "value": float(f"{v:.4g}"), "fitted_to": "inherited from ampere: no published Thor row"}

    # Idle power: the published board idle baseline of the Orin Nano devkit (Super firmware).
    result["families"]["orin-nano"] = {"idle_w": {
        "value": 3.52, "fitted_to": "published rows 200-210 note: idle baseline 3.52 W board (VD_E, Orin Nano "
                                    "8GB devkit VDD_IN); used for the whole Orin Nano family"}}

    pw = [c for c in cs if c.metric == "power"]
    if pw:
        names = [p[0] for p in POWER_PARAMS]
        lows = np.array([p[1] for p in POWER_PARAMS])
        highs = np.array([p[2] for p in POWER_PARAMS])
        fixed = dict(fitted.get("ampere", {}))
        fixed.update({n: v for n, (v, _) in direct.items()})
        fixed["idle_w"] = 3.52
        if mem_eff:
            fixed["mem_eff"] = mem_eff
        c0 = dict(K.ARCH_DEFAULTS)
        x0 = np.log(np.clip([c0[n] for n in names], lows, highs))
        fun = _objective(pw, names, lows, highs, fixed)
        z = x0
        for _ in range(3):
            z = nelder_mead(fun, z, step=0.4, iterations=500)
        vals = dict(zip(names, np.exp(np.clip(z, np.log(lows), np.log(highs)))))
        ids = ",".join(c.id for c in pw)
        for n, v in vals.items():
            for arch in ("ampere", "volta", "maxwell", "pascal", "blackwell"):
                note = (f"{len(pw)} Orin Nano board-power rows (VD_E, VD_G; ids {ids}), least squares on log error"
                        if arch == "ampere" else
                        "inherited from ampere: no published power row for this architecture")
                result["arch"].setdefault(arch, {})[n] = {"value": float(f"{v:.4g}"), "fitted_to": note}
        if verbose:
            print("power", vals, "rms log error", math.sqrt(fun(z)))
    return result


def write(data: Dict[str, Any], path: Path = K.CALIBRATION_PATH) -> None:
    body = {
        "schema": 1,
        "about": ("Fitted constants of the simulated Jetson (pytest_jetson/sim). Per architecture, family "
                  "or device, never per model; each with what it was fitted to. Regenerate with "
                  "`pytest-jetson calibrate --fit --write`; check with "
                  "`pytest-jetson calibrate --report`. Constants not listed keep the defaults in "
                  "pytest_jetson/sim/constants.py."),
    }
    body.update(data)
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(body, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    K.reload()
