"""A pool on the simulated device: the simulator's contention model, no processes.

Jetson GPUs have no MPS, so concurrent processes are time-sliced. For N copies of one model the
simulator's ``predict(..., processes=N)`` already says how long one iteration of one process takes
under N-way contention (``latency``), what each process holds (``memory_per_process``) and whether
they fit at all (``OutOfMemory``).

Mixed pools (different models or options) are combined as round-robin time slicing: in one round
every worker runs one iteration, so a round lasts the sum of the workers' single-process
latencies, stretched by the contention overhead the simulator predicts for N processes of each
worker's own model::

    latency_i = predict(model_i, processes=N).latency * mean_j(L_j) / L_i,   L_j = predict(model_j, 1).latency

For a homogeneous pool this is exactly ``predict(model, processes=N).latency``. A small model
sharing the board with a big one is slowed by the big one's slices, as on the board. Memory is the
sum of every worker's own allocation (``memory_per_process`` at N=1, since each process allocates
its own engine and buffers), checked against the board's memory; board power and GPU utilisation
are the workers' contended figures weighted by their share of each round.

Each worker's latencies are drawn from ``LatencyNoise`` with its own seed, for as many
iterations as fit in the window; the shared virtual clock then advances by warm-up plus window.
"""

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .. import sim
from ..clock import SimClock
from ..errors import SimulationError
from ..sim import plan as sim_plan
from ..sim.hardware import resolve as resolve_hardware
from ..sim.noise import LatencyNoise
from ..telemetry.series import ACTIVITY
from ..units import format_bytes
from .measurement import Measurement, PoolMeasurement
from .pool import add_model_digests, assemble, environment, measured_window
from .pool_procs import worker_seed
from .pool_spec import PoolRun


@dataclass
class PoolLoad:
    """What the simulated telemetry source runs during a mixed pool's window (duck-typed like a
    Prediction: ``power``, ``idle_power``, ``gpu_util``, ``gpu_clock_mhz``, ``memory``)."""

    power: Optional[float]
    idle_power: Optional[float]
    gpu_util: Optional[float]
    gpu_clock_mhz: Optional[float]
    max_gpu_clock_mhz: Optional[float]
    memory: Optional[float]
    sm_active: Optional[float] = None
    tensor_active: Optional[float] = None
    issue_active: Optional[float] = None
    dram_util: Optional[float] = None

    def to_dict(self) -> Dict[str, Any]:
        return dict(self.__dict__)


def _predict(device: Any, spec: Any, processes: int) -> Any:
    kwargs: Dict[str, Any] = {"processes": processes}
    if spec.options.get("dla_core") is not None:
        kwargs["accelerator"] = "dla"
    if spec.options.get("resolution") is not None:
        kwargs["resolution"] = spec.options["resolution"]
    return sim.predict(device, spec.model, spec.precision, spec.batch, **kwargs)


def _per_process_memory(pred: Any, processes: int) -> Optional[float]:
    per = getattr(pred, "memory_per_process", None)
    if per is None and getattr(pred, "memory", None) is not None:
        per = pred.memory / max(1, processes)
    return None if per is None else float(per)


def _available_memory(device: Any) -> float:
    """Unified memory the simulator lets engines use (the board's minus the OS's share)."""
    hw = resolve_hardware(device, None)
    return float(sim_plan.available_memory(hw, sim_plan.device_constants(hw, [])))


def _oom_message(specs: List[Any], device: Any, detail: str) -> str:
    n = len(specs)
    kinds = sorted({s.describe() for s in specs})
    return (
        f"pool of {n} process(es) ({'; '.join(kinds)}) does not fit in the memory of the "
        f"simulated {device.name}: {detail}. Fix: fewer processes, a smaller batch, a lower "
        "precision (int8), or a board with more memory"
    )


class SimulatedPlan:
    """Per-worker predictions for one pool on the simulated device (see the module doc)."""

    def __init__(self, specs: List[Any], device: Any) -> None:
        self.specs = specs
        self.device = device
        n = len(specs)
        keys = [self._key(s) for s in specs]
        groups: Dict[Any, Any] = {}
        for s, k in zip(specs, keys):
            groups.setdefault(k, s)
        self.homogeneous = len(groups) == 1
        oom = getattr(sim, "OutOfMemory", SimulationError)
        try:
            single, contended, per_memory = self._predict_groups(groups, keys, n, oom)
        except oom as exc:
            # the simulator's message already names the sizes and how many processes would fit
            raise SimulationError(f"process_pool of {n} process(es): {exc}") from None
        self.single = [single[k] for k in keys]
        self.contended = [contended[k] for k in keys]
        if self.homogeneous:
            per_memory = [_per_process_memory(p, n) for p in self.contended]
        self.memory = per_memory
        base = np.array([float(p.latency) for p in self.single])
        if self.homogeneous:
            self.latency = [float(p.latency) for p in self.contended]
        else:
            mean = float(base.mean())
            self.latency = [float(c.latency) * mean / b for c, b in zip(self.contended, base)]
        self.share = list(base / base.sum())
        #: Each worker's own compute per iteration; the rest of ``latency`` is waiting for the
        #: others' time slices (the noise draws that wait separately, as the simulator does).
        self.alone = [min(lat, float(getattr(c, "latency_alone", 0.0) or lat))
                      for lat, c in zip(self.latency, self.contended)]

    def _predict_groups(self, groups: Dict[Any, Any], keys: List[Any], n: int,
                        oom: Any) -> Tuple[Dict[Any, Any], Dict[Any, Any], List[Optional[float]]]:
        """Each distinct workload alone and under N-way contention, and each worker's memory."""
        single = {k: _predict(self.device, s, 1) for k, s in groups.items()}
        per_memory = [_per_process_memory(single[k], 1) for k in keys]
        if not self.homogeneous:
            # the simulator checks N copies of one model itself; a mix only we can add up
            self._check_memory(per_memory)
        contended: Dict[Any, Any] = {}
        for k, s in groups.items():
            try:
                contended[k] = _predict(self.device, s, n)
            except oom:
                if self.homogeneous:
                    raise
                # N copies of this model would not fit, but the mix does (checked above):
                # take the contention of as many copies as fit.
                contended[k] = self._largest_fitting(s, n)
        return single, contended, per_memory

    @staticmethod
    def _key(spec: Any) -> Any:
        return (spec.model, spec.precision, spec.batch, spec.options.get("dla_core"),
                str(spec.options.get("resolution")))

    def _check_memory(self, per_memory: List[Optional[float]]) -> None:
        known = [m for m in per_memory if m is not None]
        if not known:
            return
        total = sum(known)
        capacity = _available_memory(self.device)
        if capacity and total > capacity:
            raise SimulationError(_oom_message(
                self.specs, self.device,
                f"the processes need {format_bytes(total)} in all, the board has {format_bytes(capacity)}",
            ))

    def _largest_fitting(self, spec: Any, n: int) -> Any:
        oom = getattr(sim, "OutOfMemory", SimulationError)
        for k in range(n - 1, 0, -1):
            try:
                pred = _predict(self.device, spec, k)
            except oom:
                continue
            return pred
        return _predict(self.device, spec, 1)

    def load(self) -> Any:
        """The workload the simulated telemetry source runs during the window."""
        if self.homogeneous:
            return self.contended[0]

        def weighted(attr: str) -> Optional[float]:
            values = [getattr(p, attr, None) for p in self.contended]
            if any(v is None for v in values):
                return None
            return float(sum(w * float(v) for w, v in zip(self.share, values)))

        clocks = [getattr(p, "max_gpu_clock_mhz", None) for p in self.contended]
        memory = [m for m in self.memory if m is not None]
        return PoolLoad(
            power=weighted("power"), idle_power=weighted("idle_power"), gpu_util=weighted("gpu_util"),
            gpu_clock_mhz=weighted("gpu_clock_mhz"),
            max_gpu_clock_mhz=max((c for c in clocks if c is not None), default=None),
            memory=float(sum(memory)) if memory else None,
            **{name: weighted(name) for name in ACTIVITY},
        )


#: Chunks a worker's run is cut into for per-window throughput, as the harness does.
WINDOWS = 10


def _windows(latencies: List[float], batch: int) -> List[float]:
    """Throughput of consecutive chunks of iterations (the harness's fixed-run windows)."""
    n = min(WINDOWS, len(latencies))
    count = len(latencies)
    out = []
    for k in range(n):
        lo, hi = (count * k) // n, (count * (k + 1)) // n
        span = float(sum(latencies[lo:hi]))
        if hi > lo and span > 0:
            out.append((hi - lo) * batch / span)
    return out


def simulate_workers(plan: SimulatedPlan, *, window: float, t_start: float,
                     seeds: List[int], environment: Dict[str, Any]) -> List[Measurement]:
    """One Measurement per worker over ``[t_start, t_start + window]`` of virtual time."""
    workers = []
    for spec, base, alone, seed, memory, pred in zip(plan.specs, plan.latency, plan.alone, seeds,
                                                     plan.memory, plan.contended):
        noise = LatencyNoise(seed)
        wait = max(0.0, base - alone)
        lat: List[float] = []
        elapsed = 0.0
        t = t_start
        while elapsed < window:
            # enough draws for the rest of the window (noise is mostly above the mean, so +25%)
            n = max(16, int(1.25 * (window - elapsed) / base) + 1)
            draws = np.asarray(noise.sample(alone, n, t_start=t, wait=wait), dtype=float)
            ends = elapsed + np.cumsum(draws)
            # the harness runs an iteration whenever the window has not ended before it starts
            starts = ends - draws
            keep = int(np.searchsorted(starts, window, side="left"))
            lat.extend(float(x) for x in draws[:keep])
            if keep:
                elapsed = float(ends[keep - 1])
                t = t_start + elapsed
            if keep < n:
                break
        items = len(lat) * spec.batch
        windows = _windows(lat, spec.batch)
        extra: Dict[str, Any] = {"worker": spec.index, "seed": seed, "mode": "duration"}
        if hasattr(pred, "to_dict"):
            extra["prediction"] = pred.to_dict()
        env = dict(environment)
        env.update(precision=spec.precision, batch=spec.batch, model=spec.model_name)
        workers.append(Measurement(
            name=f"worker {spec.index}: {spec.describe()}",
            batch=spec.batch,
            latencies=lat,
            duration=float(elapsed if lat else window),
            items=items,
            clock="virtual",
            backend="simulated",
            model=spec.model_name,
            precision=spec.precision,
            windows=windows,
            engine_memory=None if memory is None else int(memory),
            environment=env,
            extra=extra,
        ))
    return workers


def run_pool(run: PoolRun) -> PoolMeasurement:
    """The simulated backend's pool runner: the plan's workers over one window of virtual time,
    the pool's load announced on the clock the telemetry reads."""
    clock = _virtual_clock(run)
    specs, window, warm = run.specs, run.window, run.warmup
    plan = SimulatedPlan(specs, run.device)
    env = environment(run.device, "simulated", specs, run.context)
    seeds = [worker_seed(run.seed, s.index) for s in specs]
    measured = measured_window(run.telemetry, run.context, run.device, clock, run.seed)
    clock.advance(warm)
    t0 = clock.now()
    with measured:
        clock.announce(plan.load(), t0, t0 + window)
        workers = simulate_workers(plan, window=window, t_start=t0, seeds=seeds, environment=env)
        clock.advance(window)
    for w in workers:
        w.extra["window_start"] = 0.0
    add_model_digests(env, workers, [{"model": s.model} for s in specs])
    tele = measured.finish(sum(w.items for w in workers))
    extra = {"warmup": warm, "contention": "homogeneous" if plan.homogeneous else "round-robin mix"}
    if not plan.homogeneous:
        extra["load"] = plan.load().to_dict()
    pool = assemble(specs, workers, backend="simulated", clock_kind="virtual", window=window,
                    start_skew=0.0, telemetry=tele, environment=env, extra=extra)
    pool.telemetry_series = measured.series()
    return pool


def _virtual_clock(run: PoolRun) -> Any:
    """The run's clock, else the session's, else the telemetry's (the pool's load is announced
    where the telemetry reads it); a fresh one when none of them is virtual."""
    for clock in (run.clock, getattr(run.context, "clock", None), getattr(run.telemetry, "clock", None)):
        if clock is not None:
            return clock if getattr(clock, "kind", None) == "virtual" else SimClock()
    return SimClock()
