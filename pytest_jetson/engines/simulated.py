"""The simulated backend: an engine on the simulated device.

``infer`` returns zero outputs of the right shapes and dtypes and advances the shared virtual
clock by the simulator's per-batch latency with its seeded noise, so the harness times it exactly
as it times a real engine, and a 10 s measurement costs milliseconds. Called on the caller's
inputs (``engine(inputs)``) it does the same and returns fresh zero outputs. Each stretch of
back-to-back inferences is announced on the clock with its prediction (``SimClock.announce``,
the one way the simulated telemetry source learns what runs), so that source reads the board
under that load, however the engine is driven.
"""

from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np

from .. import sim
from ..clock import SimClock
from ..devices.device import as_device
from ..errors import EngineError, SimulationError
from ..models import zoo
from ..models.reference import resolve
from ..sim.noise import LatencyNoise
from .base import (
    Engine,
    TensorSpec,
    check_onnx_path,
    check_open_batch,
    check_precision,
    engine_name,
    graph_io,
    read_onnx_io,
)

#: Noise is drawn this many iterations at a time (one numpy call instead of one per infer).
NOISE_CHUNK = 2048


def _zoo_io(name: str, batch: int, resolution: Any) -> Tuple[List[TensorSpec], List[TensorSpec]]:
    """Inputs/outputs of a zoo model from its structure-only graph (no weights generated)."""
    inputs, outputs, _ = graph_io(zoo.build_structure(name, resolution=resolution), batch)
    return inputs, outputs


class SimulatedEngine(Engine):
    backend = "simulated"

    def __init__(self, model: Any, device: Any, precision: str = "fp16", batch: int = 1,
                 dla_core: Optional[int] = None, clock: Any = None, seed: int = 0,
                 resolution: Any = None, processes: int = 1, harness: Any = None) -> None:
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

        if ref.is_file:
            path = check_onnx_path(model, where)
            self.inputs, self.outputs, fixed = read_onnx_io(path, self.batch, where)
            if fixed is not None and fixed != self.batch:
                raise EngineError(
                    f"{self.name}: {str(path)!r} has a fixed batch of {fixed}; open it with "
                    f"batch={fixed} or export the ONNX with a dynamic batch dimension"
                )
        else:
            self.inputs, self.outputs = _zoo_io(label, self.batch, resolution)

        self._predictions: Dict[int, Any] = {}
        self._noise: Dict[int, Any] = {}
        self._iters: Dict[int, Iterator[float]] = {}
        self._outputs: Dict[int, Dict[str, np.ndarray]] = {}
        self.prediction = self._predict(self.batch)
        self.memory_bytes = self._memory(self.prediction)
        self._advance = self.clock.advance
        self._now = self.clock.now
        self._announce = self.clock.announce
        self._busy: Optional[list] = None  # the stretch of back-to-back inferences now running
        self._busy_batch = 0
        self._default_outputs = self._infer_outputs(self.batch)

    def _infer_outputs(self, batch: int) -> Dict[str, np.ndarray]:
        out = self._outputs[batch] = {
            s.name: np.zeros(s.with_batch(batch).shape, dtype=s.dtype) for s in self.outputs
        }
        return out

    # -- simulation -----------------------------------------------------------------------------
    def _predict(self, batch: int) -> Any:
        pred = self._predictions.get(batch)
        if pred is None:
            try:
                pred = sim.predict(self.device, self.model, self.precision, batch,
                                   processes=self.processes, accelerator=self.accelerator,
                                   harness=self.harness, resolution=self.resolution)
            except SimulationError:
                raise
            except (KeyError, ValueError) as exc:
                raise EngineError(f"{self.name}: the simulator cannot run this engine: {exc}") from None
            self._predictions[batch] = pred
        return pred

    def _memory(self, pred: Any) -> Optional[int]:
        per_process = getattr(pred, "memory_per_process", None)
        if per_process is None and getattr(pred, "memory", None) is not None:
            per_process = pred.memory / max(1, self.processes)
        return None if per_process is None else int(per_process)

    def _draws(self, batch: int) -> Iterator[float]:
        """The next chunk of noisy latencies for ``batch``, as a plain iterator (cheap to step)."""
        noise = self._noise.get(batch)
        if noise is None:
            # one stream per (seed, batch): another batch size must not shift this one's noise
            noise = self._noise[batch] = LatencyNoise(self.seed * 1000003 + batch)
        pred = self._predict(batch)
        t = self.clock.now()
        if hasattr(noise, "sample_prediction"):
            # includes the time-slice waits of a contended (processes > 1) prediction
            draws = noise.sample_prediction(pred, NOISE_CHUNK, t_start=t)
        else:
            draws = noise.sample(float(pred.latency), NOISE_CHUNK, t_start=t)
        it = iter(np.asarray(draws, dtype=float).tolist())
        self._iters[batch] = it
        return it

    def _step(self, batch: int) -> float:
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

    def _run(self, feeds: Dict[str, np.ndarray], batch: int) -> Dict[str, np.ndarray]:
        self._tick(batch)
        # fresh arrays: a pipeline may write into what it was given
        return {s.name: np.zeros(s.with_batch(batch).shape, dtype=s.dtype) for s in self.outputs}

    def measurement_extra(self, batch: int) -> Dict[str, Any]:
        return {"prediction": self._predict(batch).to_dict()}

    def prediction_for(self, batch: Optional[int] = None) -> Any:
        """The simulator's prediction for ``batch`` (default: the engine's batch)."""
        return self._predict(self.batch if batch is None else batch)

