"""The published Jetson results the simulator is calibrated and cross-validated against.

``cases()`` reads ``data/published.json``, ``data/published_more.json`` and the seeds' figures
(``data/seeds.json``) and turns every row the model can express into a ``Case``: a board, power
mode, zoo network, precision, batch, accelerator and, above all, the harness that produced the
figure (``SOURCES``). Rows it cannot express are returned with the reason, so nothing is dropped
silently.
"""

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ..devices import catalog
from ..errors import SimulationError
from ..models import zoo
from .arch import normalise_precision

DATA = Path(__file__).resolve().parent / "data"
FILES = ("published.json", "published_more.json")


@dataclass(frozen=True)
class Source:
    """How one publication measured: its harness, and the board its device family means."""

    harness: str
    devices: Dict[str, str]
    why: str


#: Per source: the harness its numbers come from (read from its text and code) and its boards.
SOURCES: Dict[str, Source] = {
    "T2T_NANO": Source("python", {"nano": "nano"},
                       "torch2trt's benchmark: 50 calls on GPU tensors, one synchronize"),
    "T2T_XAV": Source("python", {"agx_xavier": "agx-xavier"},
                      "torch2trt's benchmark: 50 calls on GPU tensors, one synchronize"),
    "TRTPOSE": Source("python", {"nano": "nano", "agx_xavier": "agx-xavier"},
                      "trt_pose's live_demo.ipynb: 50 calls of the torch2trt fp16 module on a GPU tensor, "
                      "one synchronize"),
    "VD_E": Source("graphs", {"orin_nano": "orin-nano-8gb-super"},
                   "TensorRT 10, the engine replayed as a CUDA graph on device buffers"),
    "VD_G": Source("graphs", {"orin_nano": "orin-nano-8gb-super"}, "TensorRT GEMM microbenchmark"),
    "IGPU": Source("graphs", {"orin_nano": "orin-nano-8gb-super"}, "Vulkan roofline microbenchmarks"),
    "ULTRA": Source("python-sync", {"orin_nano": "orin-nano-8gb-super", "orin_nx": "orin-nx-16gb"},
                    "Ultralytics' benchmark: execute_v2 from Python on GPU tensors"),
    "ULTRA_DS": Source("deepstream", {"orin_nx": "orin-nx-16gb"}, "a DeepStream pipeline (nvinfer)"),
    "YOLODS": Source("trtexec", {"agx_orin": "agx-orin-64gb"},
                     "trtexec without CUDA graphs; DeepStream rows: the nvinfer pipeline"),
    "YOLOQAT": Source("trtexec-gpu", {"agx_orin": "agx-orin-64gb"}, "TensorRT engine time (trtexec)"),
    "CUDLA": Source("trtexec-gpu", {"agx_orin": "agx-orin-64gb"},
                    "trtexec's median GPU compute time, as the samples' README says"),
    "MLP20": Source("graphs", {"agx_orin": "agx-orin-64gb"}, "MLPerf's LWIS harness (CUDA graphs, device buffers)"),
    "MLP31": Source("graphs", {"agx_orin": "agx-orin-64gb", "orin_nx": "orin-nx-16gb"},
                    "MLPerf's LWIS harness (CUDA graphs, device buffers)"),
}

#: Rows left out, by source or id, and why (the model cannot express them).
LEFT_OUT: Dict[str, str] = {
    "T2T_188": "the GPU and CPU clocks were left to the governor (jetson_clocks not run): an unpinned "
               "governor state the model does not describe",
    "TRTPOSE44": "an issue comment's figures on Xavier NX: the clocks of its 15 W 2-core and 4-core modes "
                 "and how the frames were timed are not stated, and the two modes' gap (128 against 82 FPS) "
                 "is larger than their GPU clocks explain",
    "NANOSAM": "MobileSAM/NanoSAM encoders and the SAM mask decoder are not in the zoo",
    "NANOOWL": "OWL-ViT image encoders (ViT-B) are not in the zoo",
    "JAL": "vision transformers not in the zoo, with precision, batch and units not stated",
    "RFDETR": "RF-DETR is not in the zoo (and Jetson Thor has no other published row to check it by)",
    "TAYAL": "PyTorch eager on the CUDA cores, not a TensorRT engine",
    "FORUM_AGX_PWR": "a GPU stress test of unstated kind (not a network), read on the GPU rail alone",
    "29": "the source disagrees with itself: torch2trt's benchmarks/JETSON_XAVIER.md gives densenet121 76.6 "
          "FPS (13 ms), the same commit's README summary table 168 FPS for the same run; neither is used",
    "1007": "SSD-MobileNet-v1 is not in the zoo",
    "1008": "SSD-MobileNet-v1 is not in the zoo",
    "1011": "the MaxQ offline run's accelerators and DLA clock are not stated (the clocks quoted are the "
            "MultiStream config's)",
}

TIME_METRICS = ("throughput", "latency", "per_process_throughput")
_MODELS = {"mobilenetv2": "mobilenet_v2", "resnet-50 (mlperf offline)": "resnet50",
           "yolo11n": "yolo11n", "yolo11s": "yolo11s", "yolo11m": "yolo11m", "yolo11l": "yolo11l",
           "yolo11x": "yolo11x", "yolov7": "yolov7", "yolov5s (qat)": "yolov5s",
           "yolov7 (deepstream end-to-end, 1080p video)": "yolov7", "yolo11s (deepstream)": "yolo11s",
           "trt_pose resnet18_baseline_att": "trt_pose_resnet18_att",
           "trt_pose densenet121_baseline_att": "trt_pose_densenet121_att"}
_UNITS = {"fps": 1.0, "qps": 1.0, "samples/s": 1.0, "images/s": 1.0, "fps (total)": 1.0, "ms": 1e-3,
          "ms/image": 1e-3, "w": 1.0, "tflop/s": 1e12, "top/s": 1e12, "gb/s": 1e9}


@dataclass
class Case:
    """One published figure the model can express."""

    id: str
    source: str
    device: str
    mode: Any          # a mode name, "fastest", or a PowerMode (a clock setting the source states)
    model: str
    precision: str
    batch: int
    processes: int
    metric: str        # throughput | latency | per_process_throughput | power | roof_gemm | roof_peak | roof_dram
    value: float       # SI units (items/s, s, W, FLOP/s, B/s)
    unit: str
    group: str         # time | power | roof
    harness: str = "plugin"
    accelerator: str = "gpu"
    resolution: Optional[int] = None
    note: str = ""
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        mode = getattr(self.mode, "name", self.mode)
        return f"{self.device} {mode} {self.model} {self.precision} b{self.batch}"


def _read(name: str, key: str = "results") -> Dict[str, Any]:
    path = DATA / name
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SimulationError(f"published results file {path} is missing: reinstall pytest-jetson") from None
    except (OSError, ValueError) as exc:
        raise SimulationError(f"published results file {path} cannot be read ({exc}); reinstall "
                              "pytest-jetson or restore the file") from None
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        raise SimulationError(f"published results file {path} has no {key!r} list; restore the file")
    return data


def published_rows() -> List[Dict[str, Any]]:
    rows: List[Dict[str, Any]] = []
    for name in FILES:
        rows.extend(_read(name)["results"])
    return rows


def _si(value: float, unit: str) -> float:
    u = str(unit).strip().lower()
    for key, scale in _UNITS.items():
        if u == key or u.startswith(key + " "):
            return float(value) * scale
    raise SimulationError(f"published row unit {unit!r} is not one the calibration reads")


def _mode(source: str, family: str, text: str) -> Any:
    """The power mode a row ran in: named, stated clocks, or the board's fastest when unstated."""
    t = (text or "").strip()
    for name in ("MAXN_SUPER", "25W", "15W"):
        if source == "VD_E" and t.startswith(name):
            return name
    if source == "VD_G" and t.startswith("25W"):
        # "25W pinned (918 MHz)": the mode's clocks held at their maximum, no DVFS below them
        return replace(catalog.get("orin-nano-8gb-super").power_mode("25W"), name="25W-pinned",
                       budget_w=None)
    if source == "IGPU":
        return "15W"
    if source == "CUDLA":
        # "Orin-X" at GPU 1275 MHz, EMC 3200 MHz, DLA 1331 MHz: AGX Orin's MAXN at those clocks
        prof = catalog.get("agx-orin-64gb")
        return replace(prof.power_mode("MAXN"), name="GPU1275-DLA1331", gpu_max_mhz=1275.0,
                       emc_max_mhz=3200.0, dla_max_mhz=1331.0)
    if source in ("MLP20", "MLP31") or "MAXN" in t or t.startswith("not stated") or not t:
        return "fastest"
    return None


def _precision(text: str) -> Optional[str]:
    t = str(text or "").lower()
    for p in ("int8", "fp16", "fp32", "tf32"):
        if p in t:
            return p
    return None


def _batch(row: Dict[str, Any], source: str) -> Optional[int]:
    b = row.get("batch")
    if isinstance(b, int):
        return b
    if source in ("MLP20", "MLP31"):
        # not read from the round's harness config: MLPerf v3.0's Orin offline config runs the GPU
        # engine at batch 256 (seeds.json MLP-gpu), and the same batch is used for the DLA engines
        return 256
    return None


def _setting(row: Dict[str, Any]) -> Tuple[Optional[Dict[str, Any]], str]:
    """Where a row was measured: its source (with the harness it used), board and power mode."""
    rid = str(row["id"])
    src = str(row.get("source_id", ""))
    if rid in LEFT_OUT:
        return None, LEFT_OUT[rid]
    if src in LEFT_OUT:
        return None, LEFT_OUT[src]
    spec = SOURCES.get(src)
    if spec is None:
        return None, f"source {src!r} has no harness description in sim/published.py"
    fam = str(row.get("device_family"))
    device = spec.devices.get(fam)
    if device is None:
        return None, f"no profile for device family {fam!r}"
    mode = _mode(src, fam, row.get("power_mode") or "")
    if mode is None:
        return None, f"power mode {row.get('power_mode')!r} is not one the model can set"
    return dict(id=rid, source=src, device=device, mode=mode, harness=spec.harness, processes=1), ""


def _zoo_model(model_text: str) -> Optional[str]:
    model = _MODELS.get(model_text.lower())
    if model is None and model_text.lower() in zoo.names():
        model = model_text.lower()
    return model


_METRICS = {"throughput": "throughput", "latency": "latency", "latency_per_batch": "latency",
            "power_VDD_IN_mean": "power"}
# what a harness other than the source's own measured, for the case's note
_HARNESS_NOTES = {"deepstream": "DeepStream's nvinfer pipeline on 1080p video",
                  "python-sync": "torch2trt's latency benchmark: a synchronize after every call"}


def _accelerator(row: Dict[str, Any]) -> Tuple[str, int]:
    """(accelerator, processes): a row on GPU + 2 DLAs runs three engines."""
    acc_text = str(row.get("accelerator") or "").lower()
    if acc_text.startswith("dla"):
        return "dla", 1
    if "gpu+2xdla" in acc_text.replace(" ", ""):
        return "gpu+dla", 3
    return "gpu", 1


def _harness(spec: Source, src: str, model_text: str, metric: str) -> str:
    if src == "YOLODS" and "deepstream" in model_text.lower():
        return "deepstream"
    if spec.harness == "python" and metric == "latency":
        return "python-sync"  # torch2trt times latency with a synchronize after every call
    return spec.harness


def _row_case(row: Dict[str, Any]) -> Tuple[Optional[Case], str]:
    base, why = _setting(row)
    if base is None:
        return None, why
    model_text = str(row["model"])
    if model_text.startswith("microbenchmark"):
        return _micro(row, base)
    model = _zoo_model(model_text)
    if model is None:
        return None, f"model {model_text!r} is not in the zoo"
    prec = _precision(row.get("precision"))
    batch = _batch(row, base["source"])
    if prec is None or batch is None:
        return None, "precision or batch not stated"
    metric = _METRICS.get(str(row["metric"]))
    if metric is None:
        return None, f"metric {row['metric']!r} is not predicted"
    accelerator, processes = _accelerator(row)
    spec = SOURCES[base["source"]]
    harness = _harness(spec, base["source"], model_text, metric)
    value = _si(row["value"], row["unit"])
    if base["source"] == "ULTRA_DS" and metric == "latency":
        # published as ms/image but measured as a pipeline's frames per second (the note's FPS)
        metric, value = "throughput", 1.0 / value
    res = str(row.get("resolution") or "")
    resolution = 672 if res.startswith("672") else None
    note = spec.why if harness == spec.harness else _HARNESS_NOTES[harness]
    return Case(model=model, precision=prec, batch=batch, metric=metric, value=value,
                unit=str(row["unit"]), group="power" if metric == "power" else "time", accelerator=accelerator,
                resolution=resolution, note=note, **dict(base, harness=harness, processes=processes)), ""


def _micro(row: Dict[str, Any], base: Dict[str, Any]) -> Tuple[Optional[Case], str]:
    name = str(row["model"]).split(":", 1)[1].strip()
    value = _si(row["value"], row["unit"])
    common = dict(base, batch=1, value=value, unit=str(row["unit"]))
    common["harness"] = "trtexec-gpu"
    if name.startswith("TensorRT GEMM N="):
        n = int(name.split("=")[1].split()[0])
        prec = normalise_precision(name.split()[3])
        return Case(model=f"gemm:{n}", precision=prec, metric="roof_gemm", group="roof", **common), ""
    if name == "board power during dense GEMM":
        common["value"] = float(row["value"])
        return Case(model="gemm:2048", precision="fp16", metric="power", group="power",
                    note="a continuous dense fp16 GEMM", **common), ""
    peaks = {"FP16 matrix": ("fp16", "tensor"), "INT8 matrix": ("int8", "tensor"),
             "FP16 scalar FMA": ("fp16", "cuda"), "FP32 scalar FMA": ("fp32", "cuda")}
    for prefix, (prec, unit) in peaks.items():
        if name.startswith(prefix):
            return Case(model="-", precision=prec, metric="roof_peak", group="roof", extra={"unit": unit},
                        note="shader peak over the spec peak", **common), ""
    if name in ("DRAM read", "DRAM copy", "DRAM write"):
        return Case(model="-", precision="fp32", metric="roof_dram", group="roof", extra={"kind": name},
                    **common), ""
    return None, "microbenchmark without a model counterpart (cache bandwidth, int8 dot products)"


def seeds() -> Dict[str, Any]:
    return _read("seeds.json", "targets")


def cases() -> Tuple[List[Case], List[Tuple[Dict[str, Any], str]]]:
    """(expressible cases, [(row, why not expressible)])."""
    out: List[Case] = []
    skipped: List[Tuple[Dict[str, Any], str]] = []
    for row in published_rows():
        case, why = _row_case(row)
        if case is None:
            skipped.append((row, why))
        else:
            out.append(case)
    for s in seeds()["targets"]:
        src = "CHAKRABORTY" if s["id"].startswith("S1") else "MLP30_CFG"
        out.append(Case(
            id=s["id"], source=src, device=s["device"], mode=s["power_mode"], model=s["model"],
            precision=s["precision"], batch=int(s["batch"]), processes=int(s["processes"]),
            metric=s["metric"], value=float(s["value"]), unit=s["unit"], group="time", note=s["text"],
            accelerator=s.get("accelerator", "gpu"),
            harness="graphs" if s.get("harness") == "graphs" else "trtexec",
        ))
    return out, skipped


def contrasts() -> List[Dict[str, Any]]:
    return list(seeds().get("contrasts", []))
