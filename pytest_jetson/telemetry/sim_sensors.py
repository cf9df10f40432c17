"""The ``simulated`` source: what a simulated Jetson's sensors would have read, on virtual time.

The workload is a duck-typed object (the simulator's ``Prediction`` fits) with:

* ``power`` (W, board, under load) and ``idle_power`` (W; default 40 % of ``power``);
* ``gpu_util``: a fraction (0..1) or a percent (above 1 is read as percent);
* ``gpu_clock_mhz`` under load, optionally ``max_gpu_clock_mhz`` (the mode's maximum: a lower
  ``gpu_clock_mhz`` reads as throttling) and ``idle_gpu_clock_mhz``;
* ``memory`` (bytes in use under load) and optionally ``idle_memory`` (bytes; default 0);
* optionally ``thermal_resistance_c_per_w``, ``thermal_tau_s`` and ``ambient_c``;
* optionally ``cpu_util`` (percent of all cores): a measured function's own host code on the
  simulated board is announced as such a load (``run.host_time.HostLoad``: one core busy, the
  GPU idle). CPU load counts that host code only: an engine's own host work (enqueue, sync) is
  inside its simulated latency, not CPU load, and an idle board reads 0 %.
* optionally ``sm_active``, ``tensor_active``, ``issue_active`` and ``dram_util``: the GPU
  activity Nsight Systems samples, fractions (0..1) as the Prediction has them (``sim.activity``).
  A load whose GPU idles (``gpu_util`` 0) reads 0; a busy load without them leaves the readings
  of its span unknown (None), never a made-up figure.

What runs when comes from one place: the loads announced on the virtual clock
(``SimClock.announce``). Simulated engines announce each stretch of inferences as they run and a
simulated pool its window, so a ``telemetry`` sampler around plain ``engine.infer()`` calls reads
the board under that engine's load with nothing else to set up; ``set_load`` (a workload handed
to a sampler) announces on the same clock. Where loads overlap, the latest to start runs.
Outside any load the board idles (at the idle power of the source's workload, else of the first
load announced). Temperature follows a first-order thermal model,
``dT/dt = (ambient + R * P - T) / tau``, carried across windows, so back-to-back runs start warm.
Noise is small, Gaussian and seeded; memory has none (allocations are deterministic).
"""

import math
from array import array
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..clock import SimClock
from .base import Reading, Source
from .series import ACTIVITY, Series

AMBIENT_C = 25.0
#: Module plus heatsink and fan: about 3 C per W above ambient (an Orin Nano dev kit at 15 W
#: settles near 70 C), with a time constant of tens of seconds.
THERMAL_RESISTANCE_C_PER_W = 3.0
THERMAL_TAU_S = 40.0
POWER_NOISE = 0.01
UTIL_NOISE_PCT = 0.5
TEMP_NOISE_C = 0.1
IDLE_POWER_FRACTION = 0.4
IDLE_CLOCK_FRACTION = 0.3
#: What ``generate`` keeps of each span's state before the noise, one typed column each.
_STATE = ("power", "memory", "util", "clock", "emc", "cpu", "temp") + ACTIVITY


def _attr(obj: Any, name: str, default: Optional[float] = None) -> Optional[float]:
    value = getattr(obj, name, None) if obj is not None else None
    return default if value is None else float(value)


def util_percent(value: Optional[float]) -> Optional[float]:
    """Utilisation as percent: values up to 1 are fractions, above 1 already percent."""
    if value is None:
        return None
    return float(value) * 100.0 if float(value) <= 1.0 else float(value)


class SimulatedSource(Source):
    """Generates readings for ``[start, end]`` of virtual time on ``clock`` (a ``SimClock``)."""

    name = "simulated"
    virtual = True
    power_basis = "simulated board power"
    memory_scope = "simulated memory in use"

    def __init__(self, clock: Any, workload: Any = None, seed: int = 0, ambient_c: Optional[float] = None) -> None:
        self.clock = clock if clock is not None else SimClock()
        self.workload = workload
        self.seed = int(seed)
        self._rng = np.random.default_rng(self.seed)
        self.ambient_c = ambient_c if ambient_c is not None else _attr(workload, "ambient_c", AMBIENT_C)
        #: loads announced through ``set_load`` with no end yet (``end_load`` closes them)
        self._open: List[List[Any]] = []
        self._thermal_t = float(self.clock.now())
        #: while ``generate`` runs: each workload's figures by id (``_state``), else None
        self._memo: Optional[Dict[int, Tuple[Any, Any]]] = None
        self._temp = self._steady(self._idle_power(workload))

    # -- the load API --------------------------------------------------------------------------
    def set_load(self, workload: Any, t_start: float, t_end: Optional[float] = None) -> None:
        """Announce on the clock that ``workload`` runs from ``t_start`` to ``t_end`` (None:
        until ``end_load``)."""
        rec = self.clock.announce(workload, t_start, math.inf if t_end is None else t_end)
        if t_end is None:
            self._open.append(rec)
        if self.workload is None:
            self.workload = workload

    def end_load(self, t_end: float) -> None:
        """End at ``t_end`` every load ``set_load`` left open."""
        for rec in self._open:
            rec[1] = float(t_end)
        self._open = []

    def _latest(self) -> Any:
        """The workload to read idle figures from: the source's own, else the first announced
        (so a board's idle does not depend on which test ran last)."""
        if self.workload is not None:
            return self.workload
        return self.clock.first_load()

    def max_gpu_clock_mhz(self) -> Optional[float]:
        return _attr(self._latest(), "max_gpu_clock_mhz")

    # -- the model -----------------------------------------------------------------------------
    def _idle_power(self, wl: Any) -> float:
        if wl is None:
            return 3.0
        return _attr(wl, "idle_power", IDLE_POWER_FRACTION * (_attr(wl, "power", 7.5) or 7.5)) or 0.0

    def _steady(self, power: float, wl: Any = None) -> float:
        r = _attr(wl, "thermal_resistance_c_per_w", THERMAL_RESISTANCE_C_PER_W)
        return float(self.ambient_c + r * power)

    def _tau(self, wl: Any) -> float:
        return _attr(wl, "thermal_tau_s", THERMAL_TAU_S) or THERMAL_TAU_S

    def _active(self, t: float) -> Any:
        """The workload running at ``t``, or None when idle."""
        return self.clock.load_at(t)

    def _state(self, t: float) -> Tuple[float, float, Optional[float], Optional[float], Optional[float], Any]:
        """(power W, memory bytes, gpu util %, gpu clock MHz, emc util %, workload) at ``t``;
        CPU load and GPU activity: ``_load_of(workload)``."""
        wl = self._active(t)
        memo = self._memo
        if memo is None:
            return self._state_of(wl)
        got = memo.get(id(wl))
        if got is None:  # (the tuple holds the workload: its id is not reused while it is kept)
            got = memo[id(wl)] = (self._state_of(wl), self._load_of(wl))
        return got[0]

    def _load_of(self, wl: Any) -> Tuple[float, Optional[Dict[str, float]]]:
        """(CPU load %, GPU activity) of ``wl``; read them, do not change them (kept for the
        window being generated)."""
        memo = self._memo
        got = memo.get(id(wl)) if memo is not None else None
        if got is not None:
            return got[1]
        return _attr(wl, "cpu_util", 0.0) or 0.0, self._activity(wl)

    def _state_of(self, wl: Any) -> Tuple[float, float, Optional[float], Optional[float], Optional[float], Any]:
        base = self._latest()
        if wl is None:
            idle_clock = _attr(base, "idle_gpu_clock_mhz")
            if idle_clock is None and base is not None:
                top = _attr(base, "max_gpu_clock_mhz") or _attr(base, "gpu_clock_mhz")
                idle_clock = None if top is None else IDLE_CLOCK_FRACTION * top
            return self._idle_power(base), _attr(base, "idle_memory", 0.0) or 0.0, 0.0, idle_clock, 2.0, None
        util = util_percent(_attr(wl, "gpu_util"))
        emc = util_percent(_attr(wl, "emc_util"))
        if emc is None and util is not None:
            emc = 0.5 * util
        return (
            _attr(wl, "power", 0.0) or 0.0,
            _attr(wl, "memory", 0.0) or 0.0,
            util,
            _attr(wl, "gpu_clock_mhz"),
            emc,
            wl,
        )

    @staticmethod
    def _activity(wl: Any) -> Optional[Dict[str, float]]:
        """The GPU activity of ``wl`` in percent: zeros when idle (no load, or a load whose GPU
        idles), None when a busy load does not say."""
        values = {name: _attr(wl, name) for name in ACTIVITY}
        if wl is not None and all(v is not None for v in values.values()):
            return {name: 100.0 * float(v) for name, v in values.items()}
        if wl is None or _attr(wl, "gpu_util") == 0.0:
            return {name: 0.0 for name in ACTIVITY}
        return None

    def _advance_thermal(self, t: float) -> None:
        """Carry the die temperature from the last time it was computed to ``t``, exactly for
        piecewise-constant power (boundaries at the load windows' edges)."""
        if t <= self._thermal_t:
            return
        edges = self.clock.load_edges(self._thermal_t, t)
        cur = self._thermal_t
        for nxt in edges + [t]:
            power, _, _, _, _, wl = self._state(cur)
            target = self._steady(power, wl)
            self._temp = target + (self._temp - target) * math.exp(-(nxt - cur) / self._tau(wl))
            cur = nxt
        self._thermal_t = t

    def _over(self, a: float, b: float) -> Tuple[float, float, Optional[float], Optional[float], Optional[float], Any, float,
                                                 Optional[Dict[str, float]]]:
        """The state averaged over ``(a, b]`` as a board's counters report it (a GPU load file, a
        power monitor average the time since their last reading, not the instant): power, GPU,
        EMC and CPU load and GPU activity weighted by time, memory at its peak, the clock and
        workload of the longest busy part. ``b`` alone when the span is empty. Exact for the
        piecewise-constant loads the clock announces, so a sample grid in step with a fixed
        arrival rate does not alias (every sample landing on a busy instant)."""
        if b <= a:
            power, memory, util, clock, emc, wl = self._state(b)
            cpu, activity = self._load_of(wl)
            return power, memory, util, clock, emc, wl, cpu, activity
        cuts = [a] + self.clock.load_edges(a, b) + [b]
        acc = {"power": 0.0, "util": 0.0, "emc": 0.0, "cpu": 0.0}
        act: Optional[Dict[str, float]] = {name: 0.0 for name in ACTIVITY}
        known_util, longest, pick = False, -1.0, None
        for x, y in zip(cuts, cuts[1:]):
            w = (y - x) / (b - a)
            st = self._state(0.5 * (x + y))
            power, _, util, _, emc, wl = st
            acc["power"] += w * power
            acc["util"] += w * (util or 0.0)
            acc["emc"] += w * (emc or 0.0)
            cpu, part = self._load_of(wl)
            acc["cpu"] += w * cpu
            act = None if act is None or part is None else {k: v + w * part[k] for k, v in act.items()}
            known_util = known_util or util is not None
            busy = wl is not None
            if (busy, y - x) > (pick is not None and pick[5] is not None, longest):
                longest, pick = y - x, st
        assert pick is not None
        memory = self._state(b)[1]
        return (acc["power"], memory, acc["util"] if known_util else None, pick[3], acc["emc"], pick[5],
                acc["cpu"], act)

    def generate(self, start: float, end: float, interval: float) -> Series:
        """Readings at ``start``, ``start + interval``, ... up to ``end`` (inclusive), each the
        average of the span since the one before it (``_over``; the first: the instant), as a
        ``Series`` of typed columns: a long window at a short interval is millions of samples.

        The state of each span is walked in order (the temperature carries from one to the
        next); the noise is drawn afterwards in one call, the same stream as three draws per
        reading in turn (board power, load, temperature), and applied column by column."""
        if end < start:
            return Series.from_columns([], {}, clock="virtual")
        n = int(math.floor((end - start) / interval + 1e-9)) + 1
        times = array("d", (start + i * interval for i in range(n)))
        if times[-1] < end - 1e-12:
            times.append(end)
        cols = {name: array("d") for name in _STATE}
        add = [cols[name].append for name in _STATE]
        nan = math.nan
        # what a workload reads as is worked out once per window: loads do not change while
        # a window is generated (the workloads' own attributes are read, not called)
        self._memo = {}
        try:
            self._advance_thermal(start)
            prev = start
            for t in times:
                self._advance_thermal(t)
                power, memory, util, clock, emc, wl, cpu, act = self._over(prev, t)
                prev = t
                values = (power, memory, util, clock, emc, cpu, self._temp,
                          *(act[k] if act is not None else None for k in ACTIVITY))
                for append, v in zip(add, values):
                    append(nan if v is None else v)
        finally:
            self._memo = None
        return self._noisy(times, {k: np.frombuffer(v, dtype=float) for k, v in cols.items()})

    def _noisy(self, times: "array[float]", x: Dict[str, np.ndarray]) -> Series:
        """The readings of the states ``x`` (columns of ``_STATE``) with the sensors' noise."""
        z = self._rng.standard_normal(3 * len(times)).reshape(-1, 3)
        z_power, z_load, z_temp = z[:, 0], z[:, 1], z[:, 2]
        noisy = x["power"] * (1.0 + POWER_NOISE * z_power)
        power = np.where(noisy > 0.0, noisy, 0.0)  # max(0.0, noisy), as a reading had it
        # An idle GPU reads exactly 0 %, as the load file does (an unknown load stays NaN).
        util = np.where(x["util"] == 0, 0.0, np.clip(x["util"] + UTIL_NOISE_PCT * z_load, 0.0, 100.0))
        # the same draw, relative: the activity counters are sampled with the load
        relative = 1.0 + 0.01 * UTIL_NOISE_PCT * z_load
        temp = x["temp"] + TEMP_NOISE_C * z_temp
        # the state's own columns are views of typed arrays made for this window: taken as they are
        columns = {"board_power_w": power, "memory_bytes": x["memory"], "gpu_util": util,
                   "gpu_clock_mhz": x["clock"], "emc_util": x["emc"], "cpu_util": x["cpu"]}
        columns.update({k: np.clip(x[k] * relative, 0.0, 100.0) for k in ACTIVITY})
        return Series.from_columns(times, columns, rails_w={"VDD_IN": power.copy()},
                                   temps_c={"gpu": temp, "cpu": temp - 1.5, "tj": temp + 0.5}, clock="virtual")

    def collect(self, now: float) -> List[Reading]:
        return []
