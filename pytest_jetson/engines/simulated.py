"""The simulated backend: an engine on the simulated device.

``infer`` returns zero outputs of the right shapes and dtypes and advances the shared virtual
clock by the simulator's per-batch latency with its seeded noise, so the harness times it exactly
as it times a real engine, and a 10 s measurement costs milliseconds. Called on the caller's
inputs (``engine(inputs)``) it does the same and returns fresh zero outputs. An ONNX file with
dynamic dimensions besides the batch (a detector's height and width) is opened at
``input_shape=`` (or ``resolution=``) and analysed at that shape; a call with another size is
priced at that size (one prediction per shape, cached), as a pipeline feeding crops of varying
size is on the board. Each stretch of
back-to-back inferences is announced on the clock with its prediction (``SimClock.announce``,
the one way the simulated telemetry source learns what runs), so that source reads the board
under that load, however the engine is driven.
"""

import time
import warnings
import zlib
from collections import deque
from itertools import islice
from operator import length_hint
from typing import Any, Dict, Hashable, Iterator, List, Optional, Tuple

import numpy as np

from .. import sim
from ..clock import SimClock
from ..devices.device import as_device
from ..errors import EngineError, ModelError, SimulationError
from ..models import zoo
from ..models.reference import resolve
from ..sim import workload
from ..sim.layers import layer_times
from ..sim.noise import LatencyNoise
from .base import (
    Engine,
    TensorSpec,
    check_onnx_path,
    check_open_batch,
    check_precision,
    dynamic_ranges,
    engine_name,
    given_shape,
    graph_io,
    loop_limits,
    onnx_dims,
    read_onnx_io,
    shape_inputs,
)
from .layer_profile import LayerProfile, LayerTime

#: Noise is drawn this many iterations at a time (one numpy call instead of one per infer).
NOISE_CHUNK = 2048
#: ``loop_limits``'s time limit when there is none.
_NO_LIMIT = float("inf")


class OutputShapeWarning(UserWarning):
    """The simulator could not size an output at the input size given (it returns a placeholder)."""


class CostModelWarning(UserWarning):
    """Part of the model has no cost model: the prediction priced it by an assumption it names."""


#: How the prediction's notes begin where it priced part of the model by an assumption: said in
#: the test's warnings, since a figure built on them can hide what the operator really costs.
_ASSUMPTION_NOTES = ("operators without a cost model", "output shape of ", "operator(s) with no inferable")


def _hw(resolution: Any) -> Tuple[int, int]:
    if isinstance(resolution, (int, np.integer)):
        return int(resolution), int(resolution)
    h, w = resolution
    return int(h), int(w)


def _zoo_resolution(name: str, label: str, batch: int, resolution: Any, input_shape: Any) -> Any:
    """A zoo model is built at a resolution: ``input_shape=`` gives it as its height and width."""
    given = given_shape(name, "input", 4, batch, input_shape)
    if given is None:
        return resolution
    hw = (given[2], given[3])
    if resolution is not None and _hw(resolution) != hw:
        raise EngineError(f"{name}: input_shape={tuple(given[1:])} and resolution={resolution!r} disagree "
                          f"on the height and width; give one of them")
    return hw


def _zoo_io(name: str, batch: int, resolution: Any) -> Tuple[List[TensorSpec], List[TensorSpec]]:
    """Inputs/outputs of a zoo model from its structure-only graph (no weights generated)."""
    inputs, outputs, _ = graph_io(zoo.build_structure(name, resolution=resolution), batch)
    return inputs, outputs


class SimulatedEngine(Engine):
    backend = "simulated"

    def __init__(self, model: Any, device: Any, precision: str = "fp16", batch: int = 1,
                 dla_core: Optional[int] = None, clock: Any = None, seed: int = 0,
                 resolution: Any = None, processes: int = 1, harness: Any = None,
                 input_shape: Any = None) -> None:
        super().__init__()
        ref = resolve(model)
        label = ref.name
        where = f"simulated engine {label!r}"
        self.precision = check_precision(precision, where)
        self.batch = self.max_batch = check_open_batch(batch, where)
        self.device = as_device(device)
        self.model = ref.display
        self.name = engine_name(label, self.precision, self.batch, dla_core)
        self.dla_core = dla_core
        self.resolution = resolution
        self.processes = int(processes)
        self.harness = harness
        self.seed = int(seed)
        self.clock = clock if clock is not None else SimClock()
        if getattr(self.clock, "kind", None) != "virtual" or not all(
                hasattr(self.clock, attr) for attr in ("advance", "announce")):
            raise EngineError(f"{self.name}: a simulated engine needs a virtual clock (SimClock), "
                              f"not {self.clock!r}")
        self.accelerator = "gpu"
        if dla_core is not None:
            count = getattr(self.device.profile, "dla_count", 0) or 0
            if not 0 <= int(dla_core) < count:
                raise EngineError(
                    f"{self.name}: {self.device.name} has {count} DLA core(s), so dla_core={dla_core} "
                    "does not exist; use dla_core=None (GPU)"
                    + (f" or 0..{count - 1}" if count else "")
                )
            self.accelerator = "dla"

        # keyed by the batch, or by (batch, input shapes) for a call at another size
        self._predictions: Dict[Hashable, Any] = {}
        self._noise: Dict[Hashable, Any] = {}
        self._iters: Dict[Hashable, Iterator[float]] = {}
        #: the noise chunk each iterator steps through (``timed_run`` takes from it in bulk)
        self._chunks: Dict[Hashable, np.ndarray] = {}
        self._outputs: Dict[Hashable, Dict[str, np.ndarray]] = {}
        #: the per-kernel rows of a prediction, kept beside it: a suite measuring one engine in
        #: every test would otherwise plan and cost it again each time (most of a test's CPU)
        self._layer_rows: Dict[Hashable, Tuple[Any, List[Any]]] = {}
        self._shape_outputs: Dict[Any, List[TensorSpec]] = {}
        self._warned_unsized = False
        #: host seconds spent inside ``engine(x)`` calls pricing sizes and making outputs: the
        #: simulator's own work, not the board's (a function measured around these calls
        #: subtracts it from the host time it scales to the board)
        self.host_time_s = 0.0
        #: the file's dynamic input sizes the engine was opened at (a ``workload.file_shapes`` key)
        self._shapes: Any = None
        self._path: Any = None
        if ref.is_file:
            self._open_file(check_onnx_path(model, where), where, input_shape)
        else:
            if input_shape is not None:
                self.resolution = resolution = _zoo_resolution(self.name, label, self.batch, resolution,
                                                               input_shape)
            self.inputs, self.outputs = _zoo_io(label, self.batch, resolution)

        self.prediction = self._predict(self.batch)
        for note in getattr(self.prediction, "notes", ()):
            if note.startswith(_ASSUMPTION_NOTES) or _ASSUMPTION_NOTES[2] in note:
                warnings.warn(f"{self.name}: {note}", CostModelWarning, stacklevel=2)
        self.memory_bytes = self._memory(self.prediction)
        self._advance = self.clock.advance
        self._now = self.clock.now
        self._announce = self.clock.announce
        self._busy: Optional[list] = None  # the stretch of back-to-back inferences now running
        self._busy_batch = 0
        self._default_outputs = self._infer_outputs(self.batch)

    def _open_file(self, path: Any, where: str, input_shape: Any) -> None:
        self._path = path
        self.inputs, self.outputs, fixed = read_onnx_io(path, self.batch, where)
        if fixed is not None and fixed != self.batch:
            raise EngineError(
                f"{self.name}: {str(path)!r} has a fixed batch of {fixed}; open it with "
                f"batch={fixed} or export the ONNX with a dynamic batch dimension"
            )
        dims = onnx_dims(path, where)
        ranges = dynamic_ranges(dims)
        if not ranges:
            if input_shape is not None:  # still checked: a shape the file contradicts is an error
                shape_inputs(self.inputs, dims, self.batch, input_shape, self.name, required=False)
            return
        given = input_shape
        if given is None and self.resolution is not None:
            hw = _hw(self.resolution)
            given = {name: (d[1],) + hw for name, d in dims.items() if len(d) == 4 and d[1] is not None}
        self.inputs = shape_inputs(self.inputs, dims, self.batch, given, self.name, required=True)
        opened = {s.name: tuple(s.shape[1:]) for s in self.inputs}
        try:
            self._shapes = workload.file_shapes(path, self.resolution, opened)
        except ModelError as exc:
            raise EngineError(f"{self.name}: {exc}") from None
        self._input_ranges = ranges
        self.outputs = self._outputs_at(self._shapes)

    def _outputs_at(self, shapes: Any) -> List[TensorSpec]:
        """The output specs (at the engine's batch) of the file analysed at ``shapes``."""
        specs = self._shape_outputs.get(shapes)
        if specs is not None:
            return specs
        stats = workload.file_stats(self._path, shapes)
        specs = []
        unsized = []
        for spec, shape in zip(self.outputs, stats.output_shapes):
            full = tuple(int(d) for d in shape) if shape and all(isinstance(d, int) and d > 0 for d in shape) \
                else None
            if full is None or len(full) != len(spec.shape):
                specs.append(spec)
                unsized.append(spec.name)
            else:
                specs.append(TensorSpec(spec.name, (self.batch,) + full[1:], spec.dtype))
        self._shape_outputs[shapes] = specs
        if unsized and not self._warned_unsized:
            self._warned_unsized = True
            warnings.warn(f"{self.name}: ONNX shape inference cannot size output(s) {', '.join(map(repr, unsized))} "
                          f"at the input size given; the simulated engine returns them at "
                          f"{', '.join(str(s.shape) for s in specs if s.name in unsized)} (its outputs are "
                          "zeros in any case: compare outputs on the onnxruntime or tensorrt backend)",
                          OutputShapeWarning, stacklevel=4)
        return specs

    def _infer_outputs(self, batch: int) -> Dict[str, np.ndarray]:
        out = self._outputs[batch] = {
            s.name: np.zeros(s.with_batch(batch).shape, dtype=s.dtype) for s in self.outputs
        }
        return out

    # -- simulation -----------------------------------------------------------------------------
    def _predict(self, key: Hashable) -> Any:
        """The prediction for ``key``: a batch at the opened shapes, or (batch, input shapes)."""
        pred = self._predictions.get(key)
        if pred is None:
            batch, shapes = key if isinstance(key, tuple) else (key, self._shapes)
            if shapes is not None:  # a file with dynamic sizes: priced at these
                res, given = None, dict(shapes)
            else:
                res, given = self.resolution, None
            try:
                pred = sim.predict(self.device, self.model, self.precision, batch,
                                   processes=self.processes, accelerator=self.accelerator,
                                   harness=self.harness, resolution=res, input_shape=given)
            except SimulationError:
                raise
            except (KeyError, ValueError) as exc:
                raise EngineError(f"{self.name}: the simulator cannot run this engine: {exc}") from None
            self._predictions[key] = pred
        return pred

    def _memory(self, pred: Any) -> Optional[int]:
        per_process = getattr(pred, "memory_per_process", None)
        if per_process is None and getattr(pred, "memory", None) is not None:
            per_process = pred.memory / max(1, self.processes)
        return None if per_process is None else int(per_process)

    def _draws(self, batch: Hashable) -> Iterator[float]:
        """The next chunk of noisy latencies for ``batch`` (a prediction key), as a plain
        iterator (cheap to step)."""
        noise = self._noise.get(batch)
        if noise is None:
            # one stream per (seed, batch, shape): another batch size must not shift this one's noise
            salt = batch if isinstance(batch, int) else zlib.crc32(repr(batch).encode())
            noise = self._noise[batch] = LatencyNoise(self.seed * 1000003 + salt)
        pred = self._predict(batch)
        t = self.clock.now()
        if hasattr(noise, "sample_prediction"):
            # includes the time-slice waits of a contended (processes > 1) prediction
            draws = noise.sample_prediction(pred, NOISE_CHUNK, t_start=t)
        else:
            draws = noise.sample(float(pred.latency), NOISE_CHUNK, t_start=t)
        chunk = self._chunks[batch] = np.asarray(draws, dtype=float)
        it = iter(chunk.tolist())
        self._iters[batch] = it
        return it

    def _step(self, batch: Hashable) -> float:
        it = self._iters.get(batch)
        if it is not None:
            for lat in it:
                return lat
        return next(self._draws(batch))

    def _tick(self, batch: int) -> None:
        """One inference on the virtual clock, announced as load (a running stretch grows).

        Inside a measured function (the clock ``hosting``), the host code that ran before this
        call is first added to virtual time (``checkpoint``); the host timer restarts after this
        bookkeeping (``resume``), which is the simulator's, not the function's."""
        clock = self.clock
        hosting = getattr(clock, "hosting", False)
        if hosting:
            clock.checkpoint()
        t0 = self._now()
        t1 = self._advance(self._step(batch))
        if t1 is None:  # a virtual clock whose advance returns nothing
            t1 = self._now()
        rec = self._busy
        if rec is not None and rec[1] == t0 and self._busy_batch == batch:
            rec[1] = t1
        else:
            self._busy = self._announce(self._predictions[batch], t0, t1)
            self._busy_batch = batch
        if hosting:
            clock.resume()

    # -- the harness's loop ----------------------------------------------------------------------
    def timed_run(self, batch: int, t_start: float, until_t: Optional[float], until_n: Optional[int],
                  latencies: List[float], ends: List[float], device_times: Optional[List[float]]) -> float:
        """The loop ``Engine.timed_run`` runs, a chunk of noise draws at a time: the same draws
        in the same order, the clock at the same end times, the same stretch announced, so the
        same latencies, ends and return value as calling ``infer`` back to back, at a few
        hundred nanoseconds an iteration instead of microseconds. Where something could tell
        the difference (an ``infer`` or noise step replaced, a clock other than a ``SimClock``,
        host time being measured, device times asked for) the plain loop runs."""
        if not self._runs_by_chunk(batch, device_times):
            return super().timed_run(batch, t_start, until_t, until_n, latencies, ends, device_times)
        limit_t, limit_n = loop_limits(until_t, until_n)
        clock, key = self.clock, self.batch
        prev = t_start
        n = 0
        while n != limit_n and prev < limit_t:
            it = self._iters.get(key)
            left = 0 if it is None else length_hint(it)
            if not left:
                it = self._draws(key)  # at the clock's present, as ``_step`` draws them
                left = NOISE_CHUNK
            chunk = self._chunks[key]
            draws = chunk[len(chunk) - left:]
            if limit_n >= 0 and len(draws) > limit_n - n:
                draws = draws[:limit_n - n]
            t0 = clock.now()
            # the clock's own sums, one after another (accumulate never reorders them)
            end = np.add.accumulate(np.concatenate(([t0], draws)))[1:]
            if limit_t != _NO_LIMIT:
                # an iteration runs while the previous one ended before the limit
                end = end[:int(np.searchsorted(end, limit_t, side="left")) + 1]
            k = len(end)
            t1 = float(end[-1])
            step = t1 - t0
            if t0 + step == t1:
                clock.advance(step)
            else:  # one sum would round differently from the clock's own: add them one by one
                advance = clock.advance
                for d in draws[:k].tolist():
                    advance(d)
            deque(islice(it, k), maxlen=0)  # the draws used
            rec = self._busy
            if rec is not None and rec[1] == t0 and self._busy_batch == key:
                rec[1] = t1
            else:
                self._busy = self._announce(self._predictions[key], t0, t1)
                self._busy_batch = key
            ends_now = end.tolist()
            latencies.extend((end - np.concatenate(([prev], end[:-1]))).tolist())
            ends.extend(ends_now)
            prev = ends_now[-1]
            n += k
        return prev

    def _runs_by_chunk(self, batch: int, device_times: Optional[List[float]]) -> bool:
        own = type(self)
        replaced = any(name in self.__dict__ for name in ("infer", "_tick", "_step", "_draws"))
        return (device_times is None and batch == self.batch and not self.closed and not replaced
                and own.infer is SimulatedEngine.infer and own._tick is SimulatedEngine._tick
                and own._step is SimulatedEngine._step and own._draws is SimulatedEngine._draws
                and type(self.clock) is SimClock and not self.clock.hosting)

    def infer(self, batch: Optional[int] = None) -> Dict[str, np.ndarray]:
        # the hot path of every simulated measurement: kept to a few attribute lookups
        if self.closed:
            raise EngineError(f"{self.name}: infer() on a closed engine")
        if batch is None or batch == self.batch:
            self._tick(self.batch)
            return self._default_outputs
        return super().infer(batch)

    def _infer(self, batch: int) -> Dict[str, np.ndarray]:
        self._tick(batch)
        out = self._outputs.get(batch)
        return out if out is not None else self._infer_outputs(batch)

    #: nothing reads the inputs' values, so arrays on a GPU (a pipeline written for the board) do
    device_inputs = True

    def _run(self, feeds: Dict[str, Any], batch: int) -> Dict[str, np.ndarray]:
        t0 = time.perf_counter()
        key: Hashable = batch
        outputs = self.outputs
        if self._input_ranges:
            shapes = tuple(sorted((name, tuple(int(d) for d in feeds[name].shape[1:]))
                                  for name in self._input_ranges))
            if shapes != self._shapes:
                key = (batch, shapes)
                outputs = self._outputs_at(shapes)  # a new size: its graph analysed once (~0.1 s)
        self._tick(key)  # type: ignore[arg-type]
        # fresh arrays: a pipeline may write into what it was given
        out = {s.name: np.zeros(s.with_batch(batch).shape, dtype=s.dtype) for s in outputs}
        self.host_time_s += time.perf_counter() - t0
        return out

    def measurement_extra(self, batch: int) -> Dict[str, Any]:
        return {"prediction": self._predict(batch).to_dict()}

    def layer_profile(self, batch: int) -> Optional[LayerProfile]:
        """The simulator's per-kernel prediction at ``batch`` (at the engine's opened input size):
        computed from the plan, never run, so the virtual clock and the noise streams stay as the
        timed window left them."""
        pred = self._predict(batch)
        if self.accelerator != "gpu":
            return LayerProfile("simulator", notes=[f"{self.name}: no per-layer prediction for a DLA "
                                                    "engine (its layers run on the DLA as one graph)"])
        kept = self._layer_rows.get(batch)
        if kept is not None and kept[0] is pred:
            rows = kept[1]
        else:
            given = dict(self._shapes) if self._shapes is not None else None
            rows = layer_times(self.device, self.model, self.precision, batch, harness=self.harness,
                               resolution=None if given else self.resolution, input_shape=given,
                               prediction=pred)
            self._layer_rows[batch] = (pred, rows)
        return LayerProfile("simulator", [LayerTime(name=r.name, type=r.type, precision=r.precision,
                                                    time=r.time, kernel=r.kernel, bound=r.bound,
                                                    size=r.size) for r in rows]).with_shares()

    def prediction_at(self, batch: Optional[int] = None, input_shape: Any = None) -> Any:
        """The simulator's prediction at ``batch`` and ``input_shape`` (a shape without the batch, or
        a dict by input name; default: the shape the engine was opened at)."""
        b = self.batch if batch is None else self.check_batch(batch)
        if input_shape is None or not self._input_ranges:
            return self._predict(b)
        shapes = []
        for name in sorted(self._input_ranges):
            spec = next(s for s in self.inputs if s.name == name)
            given = given_shape(self.name, name, len(spec.shape), b, input_shape)
            shape = tuple(spec.shape[1:]) if given is None else tuple(given[1:])
            self._check_shape(spec, (b,) + shape, self._input_ranges[name])
            shapes.append((name, shape))
        key = tuple(shapes)
        return self._predict(b if key == self._shapes else (b, key))

    def prediction_for(self, batch: Optional[int] = None) -> Any:
        """The simulator's prediction for ``batch`` (default: the engine's batch)."""
        return self._predict(self.batch if batch is None else batch)

