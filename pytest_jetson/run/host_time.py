"""The host's Python time of a measured function, as the simulated board's CPU would spend it.

On the simulated board a measured function's engine calls run on the virtual clock; the rest of
the function (frame conversion, pre- and post-processing in Python and numpy) really runs on the
host. Its host time is converted to the board's CPU::

    board_time = host_time * host_score / board_score

* ``board_score``: the board CPU's single-core figure (``cpu.single_core`` of its profile, a
  Geekbench 5 single-core score) scaled by the power mode's CPU clock over the clock it was
  published at;
* ``host_score``: this host's speed on the same scale, measured once per process: a fixed
  reference workload (Python loops, dicts and strings, and small numpy array work, about 20 ms)
  timed best of ``REPEATS``, against its time on the reference core, whose score is
  ``REFERENCE_SCORE``: ``host_score = REFERENCE_SCORE * REFERENCE_SECONDS / measured``.

The board and reference scores are estimates from per-GHz figures (each profile's
``cpu.single_core.source`` says which), not single cited results. Limits: one number stands for a mix
whose parts scale differently between two CPUs (interpreted Python follows branch prediction
and caches; numpy's kernels follow SIMD width: AVX-512 on the host against NEON on the board;
large arrays follow memory bandwidth), so a step dominated by one kind can be off by tens of
percent; multi-threaded steps are counted as one core's work; host time is the smaller of wall
and CPU time (``clock.SimClock.checkpoint``), so a busy CI runner's descheduling stays out of the
figure, but its cache and memory contention do not; waits in the function (``time.sleep``, I/O)
are not the board's work and count as nothing.
"""

import time
from dataclasses import dataclass
from typing import Any, Dict, Optional

import numpy as np

from ..sim.constants import constants

#: The reference core: the machine the reference workload was timed on (an AMD EPYC of the Zen 4
#: "Genoa" generation, CPU family 25 model 17, in a KVM guest; Python 3.11.7, numpy 2.4.6).
REFERENCE_CORE = "AMD EPYC (Zen 4, Genoa)"
#: Its Geekbench 5 single-core score: an estimate at Zen 4's ~385 points per GHz (desktop Zen 4
#: near 2200 at 5.7 GHz) and Genoa's 3.7 GHz boost. Not a published result for this machine.
REFERENCE_SCORE = 1400.0
#: The reference workload's best-of-``REPEATS`` time on the reference core (s), measured with
#: ``python -c "from pytest_jetson.run.host_time import measure_host; print(measure_host(9))"``, the
#: best of six such runs on a shared two-core guest (load average near 5: the figure is likely
#: 1.5x what an idle core of the same kind would take).
REFERENCE_SECONDS = 0.0196
REPEATS = 5

_HOST: Dict[str, float] = {}
_BUFFERS = ((np.arange(120 * 160 * 3, dtype=np.uint8) % 251).reshape(120, 160, 3),
            np.empty((120, 160, 3), dtype=np.float32), np.empty((3, 120, 160), dtype=np.float32))


def _reference_work() -> float:
    """The reference workload: what a pipeline's Python does between engine calls."""
    acc = 0
    boxes = []
    for i in range(24000):  # interpreted arithmetic, tuples and lists (box decoding, tracking)
        x, y = i % 97, i % 89
        if x * y % 3:
            boxes.append((x, y, x + 8, y + 8, (x * y) % 101 / 101.0))
        acc += x ^ y
    table: Dict[str, int] = {}
    for i in range(12000):  # dicts and strings (labels, bookkeeping)
        table[f"label-{i % 512}"] = table.get(f"label-{i % 512}", 0) + i
    # array work (convert, normalise, layout, reduce) into buffers made once: allocating large
    # arrays here would time the allocator's page faults, which differ between processes
    frame, x, chw = _BUFFERS
    for _ in range(72):
        np.multiply(frame, 1.0 / 255.0, out=x, casting="unsafe")
        np.subtract(x, 0.5, out=x)
        np.copyto(chw, x.transpose(2, 0, 1))
        acc += int(chw.sum() > 0) + int(np.argmax(chw[0, 0]))
    scores = np.asarray([b[4] for b in boxes], dtype=np.float32)
    acc += int(np.argsort(scores)[-1])
    return float(acc + len(table))


def measure_host(repeats: int = REPEATS) -> float:
    """The reference workload's best time on this host (s)."""
    _reference_work()  # warm the interpreter and numpy's caches
    best = float("inf")
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        _reference_work()
        # as the clock counts a host stretch: wall time, less what the scheduler gave others
        best = min(best, time.perf_counter() - t0, time.process_time() - c0)
    return best


def host_seconds() -> float:
    """The reference workload's time on this host, measured once per process."""
    if "seconds" not in _HOST:
        _HOST["seconds"] = measure_host()
    return _HOST["seconds"]


def host_score() -> float:
    """This host's single-core speed on the reference's scale (Geekbench 5 points)."""
    return REFERENCE_SCORE * REFERENCE_SECONDS / host_seconds()


def board_score(device: Any) -> Optional[float]:
    """The board CPU's single-core score in the device's power mode, None where its profile has
    none."""
    prof = getattr(device, "profile", None)
    single = getattr(prof, "cpu_single_core", None) or {}
    score = single.get("score")
    if not score:
        return None
    published_mhz = single.get("mhz") or getattr(prof, "cpu_max_mhz", None)
    mode_mhz = getattr(getattr(device, "power_mode", None), "cpu_max_mhz", None)
    if published_mhz and mode_mhz:
        return float(score) * float(mode_mhz) / float(published_mhz)
    return float(score)


@dataclass(frozen=True)
class HostScale:
    """Board seconds per host second, and where the factor comes from."""

    scale: float
    host_score: float
    board_score: Optional[float]
    board_cpu: str

    def to_dict(self) -> Dict[str, Any]:
        return {"host_scale": self.scale, "host_score": self.host_score, "board_score": self.board_score,
                "board_cpu": self.board_cpu, "reference_core": REFERENCE_CORE,
                "reference_score": REFERENCE_SCORE, "benchmark": "Geekbench 5 single-core"}


def host_scale(device: Any) -> HostScale:
    """How much longer the board's CPU takes for what the host did (1.0 where the board's figure
    is unknown: host time is then added as measured, and said so)."""
    host = host_score()
    board = board_score(device)
    cpu = str(getattr(getattr(device, "profile", None), "cpu_model", None) or "unknown CPU")
    scale = host / board if board else 1.0
    return HostScale(scale, host, board, cpu)


class HostLoad:
    """The board while a measured function runs its own Python: one CPU core busy, the GPU idle
    (its clock held from the engine that ran last), the engine's memory still in use."""

    gpu_util = 0.0
    emc_util = 0.0

    def __init__(self, resident: Any, cores: int, core_w: float, idle_w: float) -> None:
        idle = getattr(resident, "idle_power", None)
        self.idle_power = float(idle) if idle is not None else idle_w
        self.power = self.idle_power + core_w
        self.cpu_util = 100.0 / max(1, cores)
        self.memory = getattr(resident, "memory", None)
        self.gpu_clock_mhz = getattr(resident, "gpu_clock_mhz", None)
        self.max_gpu_clock_mhz = getattr(resident, "max_gpu_clock_mhz", None)


def host_loads(device: Any) -> Any:
    """``load(resident)`` for ``SimClock.host_begin``: the HostLoad of ``device`` after the load
    ``resident`` (one object per resident load, reused)."""
    prof = getattr(device, "profile", None)
    mode = getattr(device, "power_mode", None)
    cores = int(getattr(mode, "cpu_online", None) or getattr(prof, "cpu_cores", None) or 1)
    c = constants(getattr(prof, "gpu_arch", "") or "", getattr(prof, "id", None), getattr(prof, "family", None))
    mhz = getattr(mode, "cpu_max_mhz", None) or c["cpu_ref_mhz"]
    core_w = c["cpu_w"] * float(mhz) / c["cpu_ref_mhz"]
    made: Dict[int, HostLoad] = {}

    def load(resident: Any) -> HostLoad:
        key = id(resident)
        found = made.get(key)
        if found is None or found.memory != getattr(resident, "memory", None):
            found = made[key] = HostLoad(resident, cores, core_w, c["idle_w"])
        return found

    return load
