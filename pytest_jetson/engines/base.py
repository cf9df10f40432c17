"""The Engine contract every backend implements, and what backends share: model resolution and
input/output specs read from the ONNX graph.

An engine is built once when it is opened. The harness then calls, and a backend overrides where
its default does not fit (as Polygraphy's ``BaseRunner`` is subclassed):

* ``infer(batch)``: one batch on inputs made when the engine was opened (``_infer`` does the work);
* ``timed_run(...)``: the timed loop (the default runs ``infer`` back to back on ``clock``; its
  own work is ``end_times``, which the harness calls directly where ``timed_run`` is the default);
* ``check_batch(batch)``: whether the engine's profile takes ``batch``;
* ``measurement_extra(batch)``: what a Measurement carries beyond its samples (default none);
* ``layer_profile(batch)``: per-layer times (``layer_profile.LayerProfile``) from a separate pass
  after the timed window, or None where the backend cannot say (the default);
* ``memory_bytes``, ``last_device_time``: what the engine holds, and the device time of the
  last call where the backend can tell (both None by default);
* ``engine(inputs)`` (``__call__``, ``_run`` does the work): one batch on the caller's inputs,
  returning the outputs by name; ``input_specs`` / ``output_specs``: their names, shapes, dtypes.

Timing is the harness's job; an engine only says which clock its time is on (``clock.kind``:
``"virtual"``, ``"wall"`` or ``"cuda"``).
"""

import os
import sys
from dataclasses import dataclass
from operator import sub as _sub
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import EngineError, ModelError
from ..models.reference import Model, resolve

if TYPE_CHECKING:
    import numpy as np

# numpy, the model zoo, the engine cache and file locks (filelock) are imported where they are
# used: a pool worker running a host engine imports this module and needs none of them

PRECISIONS = ("fp32", "tf32", "fp16", "int8")

ModelRef = Model

#: Iterations after which a clock that has not moved is reported instead of looped on forever.
STALL_ITERATIONS = 10000

Outputs = Dict[str, "np.ndarray"]


#: ``loop_limits``'s time limit when there is none.
_NO_TIME_LIMIT = float("inf")


def loop_limits(until_t: Optional[float], until_n: Optional[int]) -> Tuple[float, int]:
    """A timed loop's stops as its ``while`` tests them: the clock time it runs below and the
    iteration count it stops at (-1: none). A nanosecond of slack: ten virtual 10 ms steps add up
    to 0.0999..., not 0.1."""
    return (_NO_TIME_LIMIT if until_t is None else until_t - 1e-9), (-1 if until_n is None else int(until_n))


class Unsupported(EngineError, NotImplementedError):
    """A part of the contract the backend does not implement (the message says which and why)."""


@dataclass(frozen=True)
class TensorSpec:
    """One input or output. ``shape`` is for the engine's default batch (first dimension)."""

    name: str
    shape: Tuple[int, ...]
    dtype: Any  # numpy dtype

    def with_batch(self, batch: int) -> "TensorSpec":
        if not self.shape:
            return self
        return TensorSpec(self.name, (batch,) + tuple(self.shape[1:]), self.dtype)

    @property
    def nbytes(self) -> int:
        import numpy as np

        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize


def is_integer(value: Any) -> bool:
    """Whether ``value`` is an int or a numpy integer (not a bool); numpy is not imported for it:
    a numpy integer exists only once numpy is."""
    if isinstance(value, int):
        return not isinstance(value, bool)
    np = sys.modules.get("numpy")
    return np is not None and isinstance(value, np.integer)


class Engine:
    """Base of every backend. Subclasses set the attributes in ``__init__`` and implement
    ``_infer(batch)`` (and ``_run(feeds, batch)`` to run on the caller's inputs); the base checks
    batches and inputs against the engine's profile and specs."""

    backend = "engine"
    #: Whether each ``infer`` sets ``last_device_time`` (the device's own time of the call): the
    #: backend row's ``device_time``, set by ``open_engine``, so a plugin's backend can say it.
    reports_device_time = False

    def __init__(self) -> None:
        self.name: str = ""
        self.model: str = ""
        self.precision: str = ""
        self.batch: int = 1
        self.max_batch: int = 1
        self.inputs: List[TensorSpec] = []
        self.outputs: List[TensorSpec] = []
        #: Bytes the engine holds (weights, activations, I/O buffers); None where unknown.
        self.memory_bytes: Optional[int] = None
        self.clock: Any = None
        #: The DLA core the engine runs on (None: the GPU), which names its accelerator.
        self.dla_core: Optional[int] = None
        #: The device's own time of the last ``infer`` call (backends whose row says device_time).
        self.last_device_time: Optional[float] = None
        #: what ``input_ranges`` returns (a backend with dynamic sizes sets it when opening)
        self._input_ranges: Dict[str, Tuple[Tuple[int, ...], Tuple[Optional[int], ...]]] = {}
        self.closed = False

    # -- running on pre-made inputs (what the harness times) ------------------------------------
    def infer(self, batch: Optional[int] = None) -> Any:
        """Run one batch (default: the engine's batch) on the pre-made inputs; return outputs."""
        b = self.batch if batch is None else batch
        if b != self.batch:
            self.check_batch(b)
        return self._infer(b)

    def _infer(self, batch: int) -> Any:
        raise Unsupported(f"{self.name or type(self).__name__}: {type(self).__name__} does not "
                          "implement _infer(batch), which every engine must")

    def timed_run(self, batch: int, t_start: float, until_t: Optional[float], until_n: Optional[int],
                  latencies: List[float], ends: List[float], device_times: Optional[List[float]]) -> float:
        """Run back to back from ``t_start`` (on ``clock``) until the clock passes ``until_t`` or
        ``until_n`` more iterations ran; append each iteration's latency, end time and (when
        ``device_times`` is a list) ``last_device_time``. Returns the last end time.

        The clock is read once per iteration (each starts where the previous ended), so a
        latency is everything the caller pays for it. A backend that keeps inferences in flight
        (TensorRT) runs its own loop with the same lists and return value."""
        if device_times is None:
            return self._run_plain(batch, t_start, until_t, until_n, latencies, ends)
        infer, now = self.infer, self.clock.now
        append_lat, append_end, append_dev = latencies.append, ends.append, device_times.append
        limit_t, limit_n = loop_limits(until_t, until_n)
        prev = t_start
        n = 0
        while n != limit_n and prev < limit_t:
            infer(batch)
            t = now()
            append_lat(t - prev)
            append_end(t)
            append_dev(self.last_device_time)
            prev = t
            n += 1
            if n == STALL_ITERATIONS:
                self._check_moved(t, t_start)
        return prev

    def _run_plain(self, batch: int, t_start: float, until_t: Optional[float], until_n: Optional[int],
                   latencies: List[float], ends: List[float]) -> float:
        """The loop without device times: ``end_times``, each latency then the gap from the end
        before it (``t_start`` for the first), the same float a subtraction in the loop gives."""
        got: List[float] = []
        try:
            return self.end_times(batch, t_start, until_t, until_n, got)
        finally:
            # also when an iteration raised: those that ran
            latencies.extend(map(_sub, got, [t_start, *got]))
            ends.extend(got)

    def end_times(self, batch: int, t_start: float, until_t: Optional[float], until_n: Optional[int],
                  ends: List[float]) -> float:
        """The default loop's own work, as close to a bare ``perf_counter`` loop as it can be:
        one call and one clock read an iteration, the end time stored by index into a buffer
        (the latencies are the gaps, taken after the loop: the harness takes them from the end
        times in one C pass). Chunks of ``STALL_ITERATIONS``, each a ``for`` over a range; the
        time limit tested only where there is one, every iteration (testing less often would
        run past it). Appends the end times to ``ends``; returns the last (``t_start`` when
        nothing ran)."""
        infer, now = self.infer, self.clock.now
        limit_t, limit_n = loop_limits(until_t, until_n)
        timed = limit_t != _NO_TIME_LIMIT
        size = STALL_ITERATIONS if limit_n < 0 else min(limit_n, STALL_ITERATIONS)
        buf = [0.0] * size
        prev = t_start
        n = 0
        while n != limit_n and prev < limit_t:
            chunk = size if limit_n < 0 else min(size, limit_n - n)
            done = 0
            try:
                if timed:
                    for done in range(chunk):
                        if prev >= limit_t:
                            break
                        infer(batch)
                        prev = buf[done] = now()
                    else:
                        done = chunk
                else:
                    for done in range(chunk):
                        infer(batch)
                        buf[done] = now()
                    else:
                        done = chunk
            finally:
                # also when an iteration raised: the end times of those that ran
                ends.extend(buf[:done] if done < size else buf)
                n += done
            if done:
                prev = buf[done - 1]
            if n == STALL_ITERATIONS:
                # a simulated engine that does not advance its clock would loop forever
                self._check_moved(prev, t_start)
        return prev

    def _check_moved(self, t: float, t_start: float) -> None:
        if t == t_start:
            raise EngineError(
                f"{self.name or type(self).__name__}: its clock did not move in {STALL_ITERATIONS} "
                "iterations; a simulated engine must advance its virtual clock (SimClock.advance) "
                "in infer()")

    def measurement_extra(self, batch: int) -> Dict[str, Any]:
        """What a Measurement of this engine at ``batch`` carries beyond its samples
        (``Measurement.extra``: I/O mode, build time, placement, the simulator's prediction)."""
        return {}

    def layer_profile(self, batch: int) -> Any:
        """Where one inference at ``batch`` spends its time, layer by layer
        (``layer_profile.LayerProfile``), from a pass of its own after the timed window so that
        profiling never perturbs the measured figures; None where the backend cannot say. A
        backend that can profile but did not this time says why in the profile's ``notes``."""
        return None

    # -- running on the caller's inputs ---------------------------------------------------------
    @property
    def input_specs(self) -> List[TensorSpec]:
        """The inputs ``engine(inputs)`` takes, at the engine's batch."""
        if not self.inputs:
            raise Unsupported(f"{self.name or type(self).__name__}: the {self.backend} backend does "
                              "not say what inputs it takes (it sets no input specs)")
        return list(self.inputs)

    @property
    def output_specs(self) -> List[TensorSpec]:
        """The outputs ``engine(inputs)`` returns, at the engine's batch."""
        if not self.outputs:
            raise Unsupported(f"{self.name or type(self).__name__}: the {self.backend} backend does "
                              "not say what outputs it returns (it sets no output specs)")
        return list(self.outputs)

    def __call__(self, inputs: Any = None, *, outputs: str = "host", **named: Any) -> Any:
        """One inference on the caller's inputs; the outputs by name.

        The inputs: ``engine(x)`` (one-input engine), ``engine([a, b])`` (``input_specs`` order),
        ``engine({"images": x})`` or ``engine(images=x)``. Numpy arrays everywhere; on a backend
        with ``device_inputs`` (TensorRT) also arrays already on the GPU (``__cuda_array_interface__``:
        CuPy, PyTorch CUDA tensors, Numba; pycuda's ``GPUArray`` and ``DeviceAllocation``), used in
        place without a copy. The batch is the inputs' first dimension; the other dimensions must
        match ``input_specs`` except where the engine takes a range (``input_ranges``: the
        dynamic dimensions of its profile). ``outputs="device"`` (TensorRT) returns the engine's own
        device buffers (``DeviceView``, valid until the next call) instead of numpy copies."""
        if self.closed:
            raise EngineError(f"{self.name}: called on a closed engine")
        if inputs is not None and named:
            raise EngineError(f"{self.name}: inputs given both positionally and by name "
                              f"({', '.join(sorted(named))}); pass engine(x), engine([a, b]), "
                              "engine({'name': x}) or engine(name=x), one form at a time")
        if inputs is None and not named:
            raise EngineError(f"{self.name}: no inputs given; the engine takes "
                              f"{', '.join(_shown_spec(s, self.input_ranges.get(s.name)) for s in self.input_specs)} "
                              "(engine.infer() runs on inputs it makes itself)")
        if not isinstance(outputs, str) or outputs not in ("host", "device"):
            shown = outputs if isinstance(outputs, str) else type(outputs).__name__
            raise EngineError(f"{self.name}: outputs={shown!r} is not 'host' (numpy arrays) or "
                              "'device' (the engine's device buffers); an input named 'outputs' "
                              "goes in a dict: engine({'outputs': x})")
        feeds, batch = self._feeds(named if inputs is None else inputs)
        if outputs == "device":
            return self._run_on_device(feeds, batch)
        return self._run(feeds, batch)

    #: Whether ``engine(x)`` takes inputs already on the GPU (without a copy).
    device_inputs = False

    @property
    def input_ranges(self) -> Dict[str, Tuple[Tuple[int, ...], Tuple[Optional[int], ...]]]:
        """Inputs whose dimensions besides the batch may vary from call to call: name -> (smallest,
        largest) shape without the batch, None where unbounded. Inputs not named take exactly
        their ``input_specs`` shape."""
        return dict(getattr(self, "_input_ranges", None) or {})

    def _run(self, feeds: Dict[str, Any], batch: int) -> Outputs:
        raise Unsupported(f"{self.name or type(self).__name__}: the {self.backend} backend runs only "
                          "on the inputs it makes itself (engine.infer()), not on the caller's")

    def _run_on_device(self, feeds: Dict[str, Any], batch: int) -> Any:
        raise Unsupported(f"{self.name or type(self).__name__}: the {self.backend} backend returns "
                          "outputs on the host only; call engine(x) without outputs='device'")

    def _feeds(self, inputs: Any) -> Tuple[Dict[str, Any], int]:
        import numpy as np

        specs = self.input_specs
        ranges = self.input_ranges
        named = _by_name(inputs, specs, self.name)
        extra = sorted(set(named) - {s.name for s in specs})
        if extra:
            raise EngineError(f"{self.name}: the engine has no input {extra[0]!r}; the inputs are "
                              f"{', '.join(s.name for s in specs)}")
        batches = set()
        feeds: Dict[str, Any] = {}
        for spec in specs:
            if spec.name not in named:
                raise EngineError(f"{self.name}: input {spec.name!r} is missing; the inputs are "
                                  f"{', '.join(s.name for s in specs)}")
            value = named[spec.name]
            dev = device_array(value, spec)
            if dev is not None and not self.device_inputs:
                raise EngineError(
                    f"{self.name}: input {spec.name!r} is an array on the GPU ({type(value).__name__}); "
                    f"the {self.backend} backend runs on the host: pass a numpy array (CuPy: x.get(); "
                    "PyTorch: x.cpu().numpy())")
            arr = dev if dev is not None else np.asarray(value)
            shape, dtype = tuple(arr.shape), np.dtype(arr.dtype)
            self._check_shape(spec, shape, ranges.get(spec.name))
            if dtype != np.dtype(spec.dtype):
                raise EngineError(f"{self.name}: input {spec.name!r} is {dtype}; the engine takes "
                                  f"{np.dtype(spec.dtype)} (convert with .astype)")
            batches.add(int(shape[0]) if shape else 1)
            feeds[spec.name] = dev if dev is not None else np.ascontiguousarray(arr)
        if len(batches) > 1:
            raise EngineError(f"{self.name}: the inputs disagree on the batch ({sorted(batches)}); "
                              "give every input the same first dimension")
        batch = batches.pop() if batches else self.batch
        if batch != self.batch:
            batch = self.check_batch(batch)
        return feeds, batch

    def _check_shape(self, spec: TensorSpec, shape: Tuple[int, ...],
                     rng: Optional[Tuple[Tuple[int, ...], Tuple[Optional[int], ...]]]) -> None:
        want = tuple(spec.shape[1:])
        rest = tuple(shape[1:])
        if len(shape) == len(spec.shape):
            if rng is None and rest == want:
                return
            if rng is not None and all(lo <= d and (hi is None or d <= hi) for d, lo, hi in zip(rest, *rng)):
                return
        raise EngineError(f"{self.name}: input {spec.name!r} has shape {tuple(shape)}; the engine takes "
                          f"{_shown_dims(spec, rng)}")

    # -- life cycle -----------------------------------------------------------------------------
    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- shared checks ------------------------------------------------------------------------
    def check_batch(self, batch: Any) -> int:
        if not is_integer(batch) or batch < 1:
            raise EngineError(f"{self.name}: batch must be a positive integer, not {batch!r}")
        if batch > self.max_batch:
            raise EngineError(
                f"{self.name}: batch {batch} is larger than the engine's profile allows "
                f"(max batch {self.max_batch}); open the engine with batch={batch} "
                f"(trt_engine({self.model!r}, batch={batch}, ...))"
            )
        return int(batch)

    def describe(self) -> Dict[str, Any]:
        return {
            "name": self.name, "model": self.model, "backend": self.backend,
            "precision": self.precision, "batch": self.batch, "max_batch": self.max_batch,
            "memory_bytes": self.memory_bytes, "clock": getattr(self.clock, "kind", None),
        }

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


def default_loop(engine: Engine) -> bool:
    """Whether ``engine`` times with the default loop, whose own work is ``Engine.end_times``
    (end times only: the harness takes the latencies from them in one C pass); an adapted
    object does unless it has a ``timed_run`` of its own."""
    own = type(engine)
    if own is _Adapted:
        forwarded = engine._get("timed_run")  # type: ignore[attr-defined]
        return forwarded is None or getattr(forwarded, "__func__", None) is Engine.timed_run
    return own.timed_run is Engine.timed_run and own._run_plain is Engine._run_plain


class _Adapted(Engine):
    """The contract over an object that runs like an engine without subclassing ``Engine`` (a
    wrapper that forwards to one, an engine written before the contract was declared): what it
    has is used, the base's defaults stand in for what it lacks. Only ``as_engine`` makes one."""

    def __init__(self, obj: Any) -> None:  # no Engine.__init__: the attributes are the object's
        self.obj = obj
        self.closed = False

    def _get(self, name: str, default: Any = None) -> Any:
        value = getattr(self.obj, name, None)
        return default if value is None else value

    backend = property(lambda self: str(self._get("backend", "")))  # type: ignore[assignment]
    name = property(lambda self: str(self._get("name", "") or type(self.obj).__name__))  # type: ignore[assignment]
    model = property(lambda self: self._get("model", ""))  # type: ignore[assignment]
    precision = property(lambda self: self._get("precision", ""))  # type: ignore[assignment]
    batch = property(lambda self: self._get("batch", 1))  # type: ignore[assignment]
    max_batch = property(lambda self: self._get("max_batch", self.batch))  # type: ignore[assignment]
    memory_bytes = property(lambda self: self._get("memory_bytes"))  # type: ignore[assignment]
    dla_core = property(lambda self: self._get("dla_core"))  # type: ignore[assignment]
    clock = property(lambda self: self.obj.clock)  # type: ignore[assignment]
    last_device_time = property(lambda self: self._get("last_device_time"))  # type: ignore[assignment]
    reports_device_time = property(lambda self: bool(self._get("reports_device_time", False)))  # type: ignore[assignment]
    inputs = property(lambda self: list(self._get("inputs", [])))  # type: ignore[assignment]
    outputs = property(lambda self: list(self._get("outputs", [])))  # type: ignore[assignment]

    def infer(self, batch: Optional[int] = None) -> Any:
        return self.obj.infer(batch)

    def timed_run(self, batch: int, t_start: float, until_t: Optional[float], until_n: Optional[int],
                  latencies: List[float], ends: List[float], device_times: Optional[List[float]]) -> float:
        own = self._get("timed_run")
        if own is None or getattr(own, "__func__", None) is Engine.timed_run:
            # the default loop, over this object's infer (a wrapper's, not the engine's behind it)
            return super().timed_run(batch, t_start, until_t, until_n, latencies, ends, device_times)
        return own(batch, t_start, until_t, until_n, latencies, ends, device_times)

    def measurement_extra(self, batch: int) -> Dict[str, Any]:
        own = self._get("measurement_extra")
        if own is None:
            extra: Dict[str, Any] = {}
        elif isinstance(getattr(own, "__self__", None), Engine):
            extra = dict(own(batch))  # forwarded from an Engine: the contract's signature
        else:
            extra = dict(own())  # an engine written before the contract: no batch
        for_batch = self._get("prediction_for")
        prediction = for_batch(batch) if for_batch is not None else self._get("prediction")
        if "prediction" not in extra and hasattr(prediction, "to_dict"):
            extra["prediction"] = prediction.to_dict()
        return extra

    def layer_profile(self, batch: int) -> Any:
        own = self._get("layer_profile")
        return own(batch) if callable(own) else None

    def check_batch(self, batch: Any) -> int:
        own = self._get("check_batch")
        return own(batch) if own is not None else super().check_batch(batch)


def as_engine(obj: Any) -> Engine:
    """``obj`` as an Engine: itself when it is one; adapted when it runs like one (``infer`` and a
    ``clock``); else an error naming it and the fix."""
    if isinstance(obj, Engine):
        return obj
    if callable(getattr(obj, "infer", None)) and getattr(obj, "clock", None) is not None:
        return _Adapted(obj)
    raise EngineError(
        f"{type(obj).__name__}: the harness measures engines, subclasses of "
        "pytest_jetson.engines.Engine (open one with trt_engine / open_engine, or subclass Engine "
        "and implement _infer(batch)); this object has no infer(batch) and clock")


def _shown_dims(spec: TensorSpec, rng: Optional[Tuple[Tuple[int, ...], Tuple[Optional[int], ...]]]) -> str:
    """``(batch, 3, 480, 640)``, or with ranges ``(batch, 3, 32..960, 1..)``."""
    if rng is None:
        dims = [str(d) for d in spec.shape[1:]]
    else:
        dims = [str(lo) if lo == hi else f"{lo}..{'' if hi is None else hi}" for lo, hi in zip(*rng)]
    return f"(batch{''.join(', ' + d for d in dims)})"


def _shown_spec(spec: TensorSpec, rng: Optional[Tuple[Tuple[int, ...], Tuple[Optional[int], ...]]]) -> str:
    import numpy as np

    return f"{spec.name!r} {_shown_dims(spec, rng)} {np.dtype(spec.dtype)}"


def _by_name(inputs: Any, specs: Sequence[TensorSpec], where: str) -> Mapping[str, Any]:
    import numpy as np

    if isinstance(inputs, Mapping):
        return inputs
    if isinstance(inputs, np.ndarray) or not isinstance(inputs, (list, tuple)):
        if len(specs) != 1:
            raise EngineError(f"{where}: the engine takes {len(specs)} inputs "
                              f"({', '.join(s.name for s in specs)}); pass them as a dict by name")
        return {specs[0].name: inputs}
    if len(inputs) != len(specs):
        raise EngineError(f"{where}: {len(inputs)} inputs given, the engine takes {len(specs)} "
                          f"({', '.join(s.name for s in specs)})")
    return {s.name: x for s, x in zip(specs, inputs)}


# -- arrays on the GPU ---------------------------------------------------------------------------
class DeviceArray:
    """An input the caller holds in GPU memory: its pointer, shape, dtype and (C order) strides,
    read from ``__cuda_array_interface__`` (CuPy, PyTorch, Numba, pycuda's GPUArray) or, for a bare
    pycuda ``DeviceAllocation`` (no shape of its own), taken to hold the input at its spec's shape.
    ``stream``: the stream the producer last wrote it on (interface version 3), None when the
    producer says no synchronisation is needed."""

    __slots__ = ("obj", "ptr", "shape", "dtype", "strides", "stream")

    def __init__(self, obj: Any, ptr: int, shape: Tuple[int, ...], dtype: Any,
                 strides: Optional[Tuple[int, ...]], stream: Optional[int]) -> None:
        import numpy as np

        self.obj, self.ptr, self.shape, self.dtype = obj, int(ptr), tuple(int(d) for d in shape), np.dtype(dtype)
        self.strides, self.stream = strides, stream

    @property
    def nbytes(self) -> int:
        import numpy as np

        return int(np.prod(self.shape)) * self.dtype.itemsize

    @property
    def contiguous(self) -> bool:
        if self.strides is None:
            return True
        expect, step = [], self.dtype.itemsize
        for d in reversed(self.shape):
            expect.append(step)
            step *= d
        return all(d == 1 or s == e for d, s, e in zip(self.shape, self.strides, reversed(expect)))


def device_array(value: Any, spec: Optional[TensorSpec] = None) -> Optional[DeviceArray]:
    """``value`` as a DeviceArray when it lives on the GPU; None for anything else (numpy arrays,
    lists). A pycuda ``DeviceAllocation`` carries no shape: it is taken to hold ``spec``."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return None
    iface = getattr(value, "__cuda_array_interface__", None)
    if isinstance(iface, Mapping) and "data" in iface:
        strides = iface.get("strides")
        return DeviceArray(value, int(iface["data"][0]), tuple(iface["shape"]), np.dtype(iface["typestr"]),
                           None if strides is None else tuple(int(s) for s in strides), iface.get("stream"))
    gpudata = getattr(value, "gpudata", None)
    if gpudata is not None and hasattr(value, "shape") and hasattr(value, "dtype"):
        # a pycuda GPUArray of a version without the interface
        ptr = getattr(value, "ptr", None)
        return DeviceArray(value, int(gpudata) if ptr is None else int(ptr), tuple(value.shape),
                           value.dtype, tuple(getattr(value, "strides", ()) or ()) or None, None)
    if type(value).__name__ == "DeviceAllocation" and hasattr(value, "__int__") and spec is not None:
        return DeviceArray(value, int(value), spec.shape, spec.dtype, None, None)
    return None


def given_shape(where: str, input_name: str, rank: int, batch: int, input_shape: Any) -> Optional[List[int]]:
    """The user's ``input_shape=`` for one input as a full shape (batch first), or None when it
    does not name this input. ``input_shape``: one shape for every input, or a dict by input
    name; each with or without the batch dimension, or a (smallest, usual, largest) triple of
    shapes (a TensorRT profile's range; this is the usual one)."""
    got = given_profile(where, input_name, rank, batch, input_shape)
    return None if got is None else got[1]


def given_profile(where: str, input_name: str, rank: int, batch: int, input_shape: Any
                  ) -> Optional[Tuple[List[int], List[int], List[int]]]:
    """``input_shape=`` for one input as (smallest, usual, largest) full shapes; all three the same
    for a single shape; None when it does not name this input."""
    if input_shape is None:
        return None
    if isinstance(input_shape, Mapping):
        shape = input_shape.get(input_name)
        if shape is None:
            return None
    else:
        shape = input_shape
    if isinstance(shape, (list, tuple)) and len(shape) == 3 and all(isinstance(x, (list, tuple)) for x in shape):
        lo, opt, hi = (_one_shape(where, input_name, rank, batch, x, input_shape) for x in shape)
        if not all(a <= b <= c for a, b, c in zip(lo, opt, hi)):
            raise EngineError(f"{where}: input_shape for {input_name!r} gives the range {tuple(lo[1:])}, "
                              f"{tuple(opt[1:])}, {tuple(hi[1:])}; give (smallest, usual, largest) with "
                              "each dimension growing from one to the next")
        return lo, opt, hi
    one = _one_shape(where, input_name, rank, batch, shape, input_shape)
    return one, one, one


def _one_shape(where: str, input_name: str, rank: int, batch: int, shape: Any, input_shape: Any) -> List[int]:
    try:
        dims = [int(d) for d in shape]
    except (TypeError, ValueError):
        raise EngineError(f"{where}: input_shape={input_shape!r} is not a shape; give one as a tuple of "
                          "ints, e.g. input_shape=(3, 480, 640), or a dict by input name") from None
    if len(dims) == rank - 1:
        dims = [batch] + dims
    if len(dims) != rank:
        raise EngineError(f"{where}: input_shape={tuple(shape)} has {len(dims)} dimensions, input "
                          f"{input_name!r} has {rank}; give its shape with or without the batch "
                          "dimension, e.g. input_shape=(3, 640, 640)")
    if dims[0] != batch:
        raise EngineError(f"{where}: input_shape={tuple(shape)} says batch {dims[0]} but the engine "
                          f"is opened with batch={batch}; leave the batch out of input_shape")
    return dims


def onnx_dims(path: Path, where: str) -> Dict[str, Tuple[Optional[int], ...]]:
    """Each graph input's dims as the file gives them (None where dynamic)."""
    proto = _read_onnx(path, where)
    inits = {i.name for i in proto.graph.initializer}
    return {vi.name: tuple(int(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else None
                           for d in vi.type.tensor_type.shape.dim)
            for vi in proto.graph.input if vi.name not in inits}


def shape_inputs(specs: Sequence[TensorSpec], dims: Mapping[str, Sequence[Optional[int]]], batch: int,
                 input_shape: Any, where: str, required: bool) -> List[TensorSpec]:
    """``specs`` with the dynamic dimensions besides the batch sized by ``input_shape``. Where an
    input has such dimensions and ``input_shape`` does not size them: an error naming them and the
    fix when ``required``, else the spec as it was (1 for each)."""
    if isinstance(input_shape, Mapping):
        unknown = sorted(set(input_shape) - {s.name for s in specs})
        if unknown:
            raise EngineError(f"{where}: input_shape names {unknown[0]!r}, which is no input of the "
                              f"model; its inputs are {', '.join(s.name for s in specs)}")
    out = []
    for spec in specs:
        d = tuple(dims.get(spec.name, spec.shape))
        given = given_shape(where, spec.name, len(d), batch, input_shape)
        dynamic = [i for i, x in enumerate(d) if i and x is None]
        if given is None:
            if dynamic and required:
                shown = "x".join("?" if x is None else str(x) for x in d)
                example = ", ".join("H" if i == len(d) - 2 else "W" if i == len(d) - 1 else
                                    ("?" if x is None else str(x)) for i, x in enumerate(d) if i)
                raise EngineError(
                    f"{where}: input {spec.name!r} has dynamic dimension(s) "
                    f"{', '.join(map(str, dynamic))} besides the batch ({shown}); open it with "
                    f"input_shape=({example}) (one item, without the batch; a dict by input name "
                    "for several inputs)")
            out.append(spec)
            continue
        for i, (fixed, size) in enumerate(zip(d, given)):
            if i and fixed is not None and fixed != size:
                raise EngineError(f"{where}: input_shape gives dimension {i} of {spec.name!r} as "
                                  f"{size}, the model fixes it at {fixed}")
            if size < 1:
                raise EngineError(f"{where}: input_shape={tuple(given)} for {spec.name!r} has a "
                                  "dimension below 1")
        out.append(TensorSpec(spec.name, (spec.shape[0],) + tuple(given[1:]), spec.dtype))
    return out


def dynamic_ranges(dims: Mapping[str, Sequence[Optional[int]]]
                   ) -> Dict[str, Tuple[Tuple[int, ...], Tuple[Optional[int], ...]]]:
    """Inputs with dynamic dimensions besides the batch -> (smallest, largest) shape without the
    batch: a dynamic dimension takes any size (1..), a fixed one only its own."""
    out = {}
    for name, d in dims.items():
        rest = tuple(d[1:])
        if any(x is None for x in rest):
            out[name] = (tuple(1 if x is None else x for x in rest), tuple(rest))
    return out


def engine_name(model: str, precision: str, batch: int, dla_core: Optional[int] = None) -> str:
    dla = f"-dla{dla_core}" if dla_core is not None else ""
    return f"{model}-{precision}-b{batch}{dla}"


def check_precision(precision: str, where: str) -> str:
    p = str(precision).lower()
    if p not in PRECISIONS:
        raise EngineError(f"{where}: precision {precision!r} is not one of {', '.join(PRECISIONS)}")
    return p


def check_open_batch(batch: Any, where: str) -> int:
    if not is_integer(batch) or batch < 1:
        raise EngineError(f"{where}: batch must be a positive integer, not {batch!r}")
    return int(batch)


def model_label(model: ModelRef) -> str:
    """The short name measurements carry: the zoo name, or the file's stem."""
    return resolve(model).name


def check_onnx_path(model: ModelRef, where: str) -> Path:
    path = Path(model)
    what = _not_a_file(path)
    if what:
        raise ModelError(f"{where}: {str(path)!r} is {what}, not an ONNX file; pass the path of a regular "
                         f".onnx file or a zoo name")
    if not path.is_file():
        raise ModelError(
            f"{where}: ONNX file {str(path)!r} does not exist; pass an existing .onnx path or a "
            "zoo name (`pytest-jetson models` lists them)"
        )
    from .cache import external_data

    outside = external_data(path)[1]
    if outside:
        # onnx before 1.21 (all of it on Python 3.8 and 3.9), onnxruntime and TensorRT's parser
        # would read these files wherever they point: a model must not reach out of its folder
        raise ModelError(f"{where}: ONNX file {str(path)!r} keeps weights outside its folder "
                         f"({', '.join(map(repr, outside[:3]))}: a '../' path, an absolute path or a link "
                         f"out); move the external-data files beside the model and re-save it")
    return path


def _not_a_file(path: Path) -> Optional[str]:
    """What stands at ``path`` when it exists and is no regular file (a FIFO would block a
    reader forever), in words; None otherwise."""
    from ..fileio import file_kind

    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    return file_kind(mode)


def resolve_onnx(model: ModelRef, where: str, batch: Optional[int] = None,
                 resolution: Any = None) -> Path:
    """The ONNX file behind a model reference: the path as given, or the zoo's cached file
    (dynamic batch unless ``batch`` is given)."""
    from ..models import zoo

    ref = resolve(model)
    if ref.is_file:
        return check_onnx_path(model, where)
    try:
        return Path(zoo.path(ref.name, batch=batch, resolution=resolution))
    except (KeyError, ValueError) as exc:
        raise ModelError(f"{where}: unknown model {model!r} ({exc}); pass a zoo name or an .onnx path") from None


# -- ONNX input/output specs ----------------------------------------------------------------------
_ONNX_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64",
                9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64"}


def _np_dtype(elem_type: int) -> Any:
    import numpy as np

    return np.dtype(_ONNX_DTYPES.get(int(elem_type), "float32"))


def _value_info_spec(vi: Any, batch: int) -> Tuple[TensorSpec, bool]:
    """(spec with the batch dimension set, whether the first dimension is dynamic)."""
    tt = vi.type.tensor_type
    dims: List[int] = []
    dynamic_batch = False
    for i, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value") and d.dim_value > 0:
            dims.append(int(d.dim_value))
        elif i == 0:
            dims.append(batch)
            dynamic_batch = True
        else:
            # a dynamic non-batch dimension: 1 keeps buffers allocatable; TensorRT needs a profile
            dims.append(1)
    return TensorSpec(vi.name, tuple(dims), _np_dtype(tt.elem_type)), dynamic_batch


def graph_io(model_proto: Any, batch: int) -> Tuple[List[TensorSpec], List[TensorSpec], Optional[int]]:
    """Inputs and outputs of an ONNX graph at ``batch``, and the graph's fixed batch (None when
    the first input dimension is dynamic)."""
    graph = model_proto.graph
    inits = {i.name for i in graph.initializer}
    inputs, outputs = [], []
    fixed: Optional[int] = None
    for vi in graph.input:
        if vi.name in inits:
            continue
        spec, dynamic = _value_info_spec(vi, batch)
        if not dynamic and spec.shape:
            fixed = spec.shape[0]
        inputs.append(spec)
    for vi in graph.output:
        spec, _ = _value_info_spec(vi, batch)
        if fixed is None and spec.shape:
            spec = spec.with_batch(batch)
        outputs.append(spec)
    return inputs, outputs, fixed


def _read_onnx(path: Path, where: str) -> Any:
    import onnx

    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # onnx raises DecodeError, OSError, ... for a file it cannot read
        raise ModelError(
            f"{where}: {str(path)!r} is not a readable ONNX file ({type(exc).__name__}: {exc}); "
            "re-export the model or pass a zoo name"
        ) from None


def read_onnx_io(path: Path, batch: int, where: str) -> Tuple[List[TensorSpec], List[TensorSpec], Optional[int]]:
    return graph_io(_read_onnx(path, where), batch)


def _memory_bytes() -> Optional[int]:
    """This machine's physical memory (None where the platform does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None


def make_inputs(specs: Sequence[TensorSpec], batch: int, seed: int = 0) -> Dict[str, "np.ndarray"]:
    """Seeded random inputs for one batch: what every backend feeds (the values do not change the
    time of a dense network; seeding keeps runs reproducible)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    feeds = {}
    limit = _memory_bytes()
    for spec in specs:
        shape = spec.with_batch(batch).shape
        dtype = np.dtype(spec.dtype)
        need = int(np.prod([int(d) for d in shape], dtype=object)) * max(dtype.itemsize, 8)  # drawn as float64
        if limit is not None and need > limit // 2:
            raise EngineError(
                f"input {spec.name!r} of shape {'x'.join(str(d) for d in shape)} ({dtype.name}) would need "
                f"{need / 2 ** 30:.1f} GiB to make, more than half of this machine's "
                f"{limit / 2 ** 30:.1f} GiB; open the model with a smaller input_shape= or batch=")
        if dtype.kind == "f":
            feeds[spec.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind == "b":
            feeds[spec.name] = rng.integers(0, 2, size=shape).astype(dtype)
        else:
            feeds[spec.name] = rng.integers(0, 8, size=shape).astype(dtype)
    return feeds
