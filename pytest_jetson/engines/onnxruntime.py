"""The onnxruntime backend: real CPU inference on a host (``--jetson-backend onnxruntime``).

For real measurements where no board is present, and for testing the harness and the pools with
real work. The CPU runs the graph in fp32 whatever precision was asked for; the engine keeps the
requested precision as its label (so tests and baselines line up) and says so once in a warning.

A graph with dynamic dimensions besides the batch (a detector's height and width) is opened at
``input_shape=`` (what ``infer`` runs on); ``engine(x)`` takes any size the graph allows.

Its per-layer profile (``layer_profile``) comes from onnxruntime's own profiler, on a session of
its own opened after the timed window (profiling the timed session would slow every run it
times): one inference to warm it, then ``PROFILE_RUNS``, each node's time averaged over them.
"""

import json
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from ..clock import WallClock
from ..errors import EngineError, ModelError
from ..models.reference import resolve
from .base import (
    Engine,
    TensorSpec,
    check_open_batch,
    check_precision,
    dynamic_ranges,
    engine_name,
    make_inputs,
    onnx_dims,
    read_onnx_io,
    resolve_onnx,
    shape_inputs,
)
from .layer_profile import REFORMAT, LayerProfile, LayerTime

_warned_precision = set()

#: inferences a profiling pass averages each node's time over (after one that warms it)
PROFILE_RUNS = 5
#: onnxruntime's layout conversions (its NCHWc kernels' reorders): its reformat layers
REFORMAT_OPS = ("ReorderInput", "ReorderOutput")
_DTYPES = {"float": "fp32", "float16": "fp16", "bfloat16": "bf16", "double": "fp64", "int8": "int8",
           "uint8": "int8", "int32": "int32", "int64": "int64", "bool": "bool"}


def _import_ort() -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise EngineError(
            "the onnxruntime backend needs onnxruntime: pip install 'pytest-jetson[onnxruntime]' "
            "(or pip install onnxruntime)"
        ) from None
    return onnxruntime


def _rss() -> Optional[int]:
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except Exception:  # psutil missing or the platform hides RSS: memory falls back to sizes
        return None


class OnnxRuntimeEngine(Engine):
    backend = "onnxruntime"

    def __init__(self, model: Any, precision: str = "fp32", batch: int = 1, seed: int = 0,
                 resolution: Any = None, threads: Optional[int] = None,
                 providers: Optional[List[str]] = None, input_shape: Any = None) -> None:
        super().__init__()
        ref = resolve(model)
        label = ref.name
        where = f"onnxruntime engine {label!r}"
        self.precision = check_precision(precision, where)
        self.batch = self.max_batch = check_open_batch(batch, where)
        self.model = ref.display
        self.name = engine_name(label, self.precision, self.batch)
        self.clock = WallClock()
        self.path = resolve_onnx(model, where, resolution=resolution)
        self.inputs, self.outputs, fixed = read_onnx_io(self.path, self.batch, where)
        if fixed is not None and fixed != self.batch:
            raise EngineError(
                f"{self.name}: {str(self.path)!r} has a fixed batch of {fixed}; open it with "
                f"batch={fixed} or export the ONNX with a dynamic batch dimension"
            )
        if self.precision != "fp32" and self.precision not in _warned_precision:
            _warned_precision.add(self.precision)
            warnings.warn(
                f"{self.name}: onnxruntime on the CPU runs fp32; precision {self.precision!r} is "
                "kept as a label only (use the tensorrt backend on a board for reduced precision)",
                stacklevel=3,
            )

        ort = _import_ort()
        self._threads, self._providers = threads, providers
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads is not None:
            opts.intra_op_num_threads = int(threads)
        before = _rss()
        t0 = time.perf_counter()
        try:
            self.session = ort.InferenceSession(
                str(self.path), sess_options=opts, providers=providers or ["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph/... types
            raise ModelError(
                f"{self.name}: onnxruntime rejected {str(self.path)!r}: {exc}; check the file with "
                "`python -m onnx.checker` or re-export it"
            ) from None
        _check_no_empty_input(self.session, self.name, self.path)
        dims = onnx_dims(self.path, where)
        self.inputs = shape_inputs(self.inputs, dims, self.batch, input_shape, self.name, required=True)
        self._input_ranges = dynamic_ranges(dims)
        #: the inputs ``infer`` runs on, made once per batch
        self._made: Dict[int, Dict[str, np.ndarray]] = {}
        self._output_names = [o.name for o in self.session.get_outputs()]
        self._made[self.batch] = make_inputs(self.inputs, self.batch, seed)
        self.seed = seed
        t1 = time.perf_counter()
        first = self.infer(self.batch)  # allocates the arena, so memory counts what a run holds
        t2 = time.perf_counter()
        # outputs whose size follows a dynamic input are known once the graph ran at input_shape
        self.outputs = [TensorSpec(s.name, tuple(first[s.name].shape), first[s.name].dtype)
                        if s.name in first else s for s in self.outputs]
        #: the session's graph optimisation is onnxruntime's build; the first run allocates its arena
        self.build_time, self.latency_first = t1 - t0, t2 - t1
        after = _rss()
        io_bytes = sum(s.nbytes for s in self.inputs + self.outputs)
        grown = (after - before) if (before is not None and after is not None) else 0
        self.memory_bytes = int(max(grown, self.path.stat().st_size + io_bytes))

    def measurement_extra(self, batch: int) -> Dict[str, Any]:
        return {"build_time": self.build_time, "latency_first": self.latency_first}

    def layer_profile(self, batch: int) -> LayerProfile:
        """Each node's mean time per inference, from onnxruntime's profiler on a session of its own."""
        ort = _import_ort()
        feeds = self._made.get(batch)
        if feeds is None:
            feeds = self._made[batch] = make_inputs(self.inputs, batch, self.seed)
        with tempfile.TemporaryDirectory(prefix="pytest-jetson-ort-") as tmp:
            opts = ort.SessionOptions()
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            if self._threads is not None:
                opts.intra_op_num_threads = int(self._threads)
            try:
                opts.enable_profiling = True
                opts.profile_file_prefix = str(Path(tmp) / "profile")
                session = ort.InferenceSession(str(self.path), sess_options=opts,
                                               providers=self._providers or ["CPUExecutionProvider"])
                for _ in range(1 + PROFILE_RUNS):
                    session.run(self._output_names, feeds)
                trace = json.loads(Path(session.end_profiling()).read_text(encoding="utf-8"))
            except Exception as exc:  # a build without profiling, an unwritable temp dir...
                return LayerProfile("onnxruntime", notes=[
                    f"{self.name}: onnxruntime could not profile this engine ({type(exc).__name__}: {exc})"])
        return profile_from_trace(trace, batch)

    def _infer(self, batch: int) -> Dict[str, np.ndarray]:
        if self.closed:
            raise EngineError(f"{self.name}: infer() on a closed engine")
        feeds = self._made.get(batch)
        if feeds is None:
            feeds = self._made[batch] = make_inputs(self.inputs, batch, self.seed)
        return self._run(feeds, batch)

    def _run(self, feeds: Dict[str, np.ndarray], batch: int) -> Dict[str, np.ndarray]:
        try:
            values = self.session.run(self._output_names, feeds)
        except MemoryError:
            raise
        except Exception as exc:  # onnxruntime's own Fail/InvalidArgument/RuntimeException types
            raise EngineError(_run_failed(self.session, self.name, feeds, exc)) from None
        return dict(zip(self._output_names, values))

    def close(self) -> None:
        if not self.closed:
            self.session = None
            self._made.clear()
        super().close()


def _shape_text(shape: Any) -> str:
    """A shape as the messages write it: ``?x3xHxW`` (a name for a symbolic dimension, ? unknown)."""
    return "x".join("?" if d is None else str(d) for d in shape) if shape else "a scalar"


def _check_no_empty_input(session: Any, name: str, path: Path) -> None:
    """An input the model fixes at 0 in some dimension holds no elements: nothing can run on it
    (onnxruntime would say so at the first run, in its own words)."""
    for node in session.get_inputs():
        shape = list(node.shape or [])
        zero = [i for i, d in enumerate(shape) if isinstance(d, int) and not isinstance(d, bool) and d == 0]
        if zero:
            which = "the batch" if zero[0] == 0 else f"dimension {zero[0]}"
            raise ModelError(
                f"{name}: input {node.name!r} of {str(path)!r} has {which} fixed at 0 "
                f"({_shape_text(shape)}): a tensor with no elements, which nothing can be measured on; "
                "re-export the model with that dimension sized, or dynamic (then sized by batch= or "
                "input_shape=)")


def _run_failed(session: Any, name: str, feeds: Dict[str, np.ndarray], exc: Exception) -> str:
    """onnxruntime's refusal to run, in one line that names the inputs given and those the model
    declares, and the fix."""
    given = ", ".join(f"{k} {_shape_text(v.shape)} ({v.dtype})" for k, v in feeds.items())
    declared = ", ".join(f"{n.name} {_shape_text(n.shape)}" for n in session.get_inputs())
    said = " ".join(str(exc).split()) or type(exc).__name__
    return (f"{name}: onnxruntime could not run the model on {given or 'no inputs'}: {said}; the model "
            f"declares {declared}: open the engine with a batch= and input_shape= the model accepts (its "
            f"named dimensions must also fit each other), or re-export it")


def _precision(args: Dict[str, Any]) -> str:
    shapes = args.get("output_type_shape") or []
    if shapes and isinstance(shapes[0], dict) and shapes[0]:
        return _DTYPES.get(next(iter(shapes[0])), str(next(iter(shapes[0]))))
    return ""


def _size(args: Dict[str, Any]) -> Optional[int]:
    shapes = args.get("output_type_shape") or []
    if shapes and isinstance(shapes[0], dict) and shapes[0]:
        dims = next(iter(shapes[0].values()))
        if isinstance(dims, list) and dims:
            return int(np.prod(dims[1:])) if len(dims) > 1 else 1
    return None


def profile_from_trace(trace: Any, batch: int = 1) -> LayerProfile:
    """onnxruntime's profile (a Chrome-trace list of events) as per-node mean times: the node
    events of every run but the first (which allocates), in the order the nodes ran."""
    events = trace if isinstance(trace, list) else []
    starts = sorted(e.get("ts", 0) for e in events if e.get("cat") == "Session" and e.get("name") == "model_run")
    since = starts[1] if len(starts) > 1 else (starts[0] if starts else 0)
    runs = max(1, len(starts) - 1) if len(starts) > 1 else max(1, len(starts))
    total: Dict[str, float] = {}
    first: Dict[str, Dict[str, Any]] = {}
    for e in events:
        name = str(e.get("name", ""))
        if e.get("cat") != "Node" or not name.endswith("_kernel_time") or e.get("ts", 0) < since:
            continue
        node = name[:-len("_kernel_time")]
        total[node] = total.get(node, 0.0) + float(e.get("dur", 0)) * 1e-6
        first.setdefault(node, dict(e.get("args") or {}))
    if not total:
        return LayerProfile("onnxruntime", notes=["onnxruntime's profile held no node timings"])
    layers = []
    for node, seconds in total.items():
        args = first[node]
        op = str(args.get("op_name", ""))
        layers.append(LayerTime(name=node, type=REFORMAT if op in REFORMAT_OPS else op, precision=_precision(args),
                                time=seconds / runs, size=_size(args)))
    return LayerProfile("onnxruntime", layers, runs=runs).with_shares()
