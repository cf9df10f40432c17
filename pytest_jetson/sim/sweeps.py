"""``sweep``: predict a whole grid of configurations at once, vectorised with numpy.

The grid is power modes x batches x processes x precisions x accelerators. Engines are built once
per (precision, batch); every configuration is then a row of arrays through ``core.evaluate``,
DVFS included, so a Fulcrum-sized study (273,000 configurations) takes seconds.
"""

import itertools
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from ..devices.device import Device, as_device
from ..devices.profile import PowerMode
from ..errors import ConfigError
from ..units import parse_duration
from . import core, plan
from .hardware import profile_precisions, resolve
from .harness_model import get as get_harness
from .workload import load

#: Metrics where more is better (Pareto and best-mode searches maximise these).
HIGHER_BETTER = ("throughput", "per_process_throughput", "gpu_util")

FIELDS = ("device", "power_mode", "model", "harness", "precision", "accelerator", "batch", "processes",
          "throughput", "per_process_throughput", "latency", "latency_p50", "latency_p99",
          "gpu_time", "host_time", "memory", "memory_per_process", "power", "idle_power", "energy",
          "gpu_clock_mhz", "max_gpu_clock_mhz", "gpu_util", "emc_util", "bound", "oom")

_CHUNK = 65536


class SweepResult:
    """Columns of a sweep (numpy arrays, one entry per configuration) and queries over them.

    Rows have the fields of ``Prediction`` plus ``oom`` (True where the processes do not fit in
    memory: their other numbers are what the board would do with the memory, and they are left
    out of ``pareto`` and ``best_mode``).
    """

    def __init__(self, columns: Dict[str, np.ndarray], labels: Dict[str, List[str]],
                 meta: Dict[str, Any], notes: List[str]) -> None:
        self.columns = columns
        self.labels = labels      # categorical columns: index arrays in columns, names here
        self.meta = meta          # device, model
        self.notes = notes

    def __len__(self) -> int:
        return int(self.columns["throughput"].size)

    def column(self, name: str) -> np.ndarray:
        if name in self.labels:
            names = np.array(self.labels[name], dtype=object)
            return names[self.columns[name]]
        if name in self.meta:
            return np.array([self.meta[name]] * len(self), dtype=object)
        if name not in self.columns:
            raise ConfigError(f"sweep has no column {name!r}; columns: {', '.join(FIELDS)}")
        return self.columns[name]

    def subset(self, index: np.ndarray) -> "SweepResult":
        return SweepResult({k: v[index] for k, v in self.columns.items()}, self.labels, self.meta, self.notes)

    def _row(self, i: int) -> Dict[str, Any]:
        row: Dict[str, Any] = {}
        for f in FIELDS:
            if f in self.meta:
                row[f] = self.meta[f]
            elif f in self.labels:
                row[f] = self.labels[f][int(self.columns[f][i])]
            else:
                v = self.columns[f][i]
                row[f] = bool(v) if f == "oom" else (int(v) if f in ("batch", "processes") else float(v))
        return row

    def to_rows(self) -> List[Dict[str, Any]]:
        return [self._row(i) for i in range(len(self))]

    def _key(self, name: str) -> np.ndarray:
        v = np.asarray(self.column(name), float)
        return -v if name in HIGHER_BETTER else v

    def pareto(self, x: str = "latency", y: str = "energy") -> "SweepResult":
        """Configurations no other (fitting) configuration beats on both ``x`` and ``y``, by ``x``."""
        ok = np.flatnonzero(~self.columns["oom"])
        if ok.size == 0:
            return self.subset(ok)
        kx, ky = self._key(x)[ok], self._key(y)[ok]
        order = np.lexsort((ky, kx))
        best = np.minimum.accumulate(ky[order])
        prev = np.concatenate(([np.inf], best[:-1]))
        keep = ky[order] < prev
        return self.subset(ok[order[keep]])

    def best_mode(self, max_latency: Union[None, float, str] = None, metric: str = "energy",
                  max_power: Union[None, float, str] = None) -> Optional[Dict[str, Any]]:
        """The row minimising ``metric`` (energy per item) with latency <= ``max_latency`` (seconds or
        "5ms") and power <= ``max_power``; None when nothing meets the budget."""
        ok = ~self.columns["oom"]
        if max_latency is not None:
            limit = parse_duration(max_latency, "max latency") if isinstance(max_latency, str) else float(max_latency)
            ok &= self.columns["latency"] <= limit
        if max_power is not None:
            ok &= self.columns["power"] <= float(str(max_power).rstrip("Ww ").strip())
        idx = np.flatnonzero(ok)
        if idx.size == 0:
            return None
        return self._row(int(idx[np.argmin(self._key(metric)[idx])]))


def _as_list(value: Any, default: Sequence[Any]) -> List[Any]:
    if value is None:
        return list(default)
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        return [value]
    return list(value)


def _modes(device: Any, power_modes: Any) -> List[Any]:
    dev = as_device(device)
    if power_modes is None:
        return [dev]
    if isinstance(power_modes, str) and power_modes.strip().lower() == "all":
        return [as_device(dev, m.name) for m in dev.profile.power_modes]
    out = []
    for m in _as_list(power_modes, []):
        if isinstance(m, PowerMode):  # a synthetic mode (a study of clocks the profile does not list)
            out.append(Device(profile=dev.profile, power_mode=m, simulated=True))
        else:
            out.append(as_device(dev, m))
    return out


class _Combo(NamedTuple):
    """One valid (accelerator, precision, batch, processes), with its GPU/DLA instance split."""

    accelerator: str
    precision: str
    batch: int
    processes: int
    n_gpu: int
    n_dla: int


def _combos(hw: Any, accs: List[str], precs: List[str], bats: List[int], procs: List[int]) -> List[_Combo]:
    combos = []
    for a, p, b, n in itertools.product(accs, precs, bats, procs):
        try:
            n_g, n_d = plan.check_accelerator(a, hw, n, p)
        except ConfigError as exc:
            if a == "gpu+dla" and n < 2:
                continue  # not a configuration: gpu+dla needs two instances
            raise exc
        combos.append(_Combo(a, p, b, n, n_g, n_d))
    if not combos:
        raise ConfigError("the sweep is empty: give at least one valid combination of precisions, "
                          "batches, processes and accelerators")
    return combos


def _mode_notes(hws: List[Any]) -> List[str]:
    notes: List[str] = []
    for hw in hws:
        for n in hw.notes:
            if n not in notes:
                notes.append(n)
    return notes


def _mode_columns(hws: List[Any], h: Any, c: Dict[str, float]) -> Dict[str, np.ndarray]:
    """The configuration columns a power mode sets, one entry per mode."""
    ref = c["cpu_ref_mhz"]
    host = [plan.harness_columns(h, m, c, 0.0) for m in hws]
    return {
        "f_max": np.array([m.gpu_hz for m in hws]),
        "f_top": np.array([m.top_hz for m in hws]),
        "bw": np.array([m.bw for m in hws]),
        "cpu_clk": np.array([(m.cpu_mhz or ref) / ref for m in hws]),
        "cores": np.array([float(m.cpu_online) for m in hws]),
        "budget": np.array([np.inf if m.budget_w is None else float(m.budget_w) for m in hws]),
        "dla_hz": np.array([m.dla_hz for m in hws]),
        "sm": np.array([float(m.sm_count) for m in hws]),
        "h_launch": np.array([x["h_launch"] for x in host]),
        "h_host": np.array([x["h_host"] for x in host]),
    }


def _grid(hws: List[Any], combos: List[_Combo], w: Any, kernels: plan.KernelTables, c: Dict[str, float],
          h: Any) -> Tuple[Dict[str, np.ndarray], np.ndarray, np.ndarray, Dict[str, np.ndarray]]:
    """Mode-level columns (M) x combo-level columns (C) -> M*C configuration rows, mode-major;
    with each row's mode and combo index, and the mode columns."""
    # Engine tables depend on the SMs a mode leaves on: one set per distinct SM count.
    sms = sorted({m.sm_count for m in hws})
    per_sm = []
    for sm in sms:
        hw_s = next(m for m in hws if m.sm_count == sm)
        per_sm.append(plan.stack([plan.config_row(hw_s, w, kernels, x.precision, x.batch, x.n_gpu, x.n_dla, c, h)
                                  for x in combos]))
    mode_cols = _mode_columns(hws, h, c)
    sm_index = np.array([sms.index(m.sm_count) for m in hws])
    M, C = len(hws), len(combos)
    mi = np.repeat(np.arange(M), C)
    ci = np.tile(np.arange(C), M)
    si = sm_index[mi]
    cfg: Dict[str, np.ndarray] = {}
    for k in per_sm[0]:
        if k in mode_cols:
            cfg[k] = mode_cols[k][mi]
        else:
            cfg[k] = np.stack([cols[k] for cols in per_sm])[si, ci]
    if h.copies:
        cfg["h_copy"] = cfg["copy_bytes"] / (cfg["bw"] * c["copy_eff"])
    return cfg, mi, ci, mode_cols


_OUTPUTS = ("throughput", "latency", "latency_alone", "power", "gpu_util", "emc_util", "bound", "f", "t_gpu",
            "t_host")


def _evaluate(tables: Any, cfg: Dict[str, np.ndarray], c: Dict[str, float], rows: int) -> Dict[str, np.ndarray]:
    """``core.evaluate`` in chunks of rows, to bound the memory of a large grid."""
    out: Dict[str, List[np.ndarray]] = {}
    for s in range(0, rows, _CHUNK):
        part = {k: v[s:s + _CHUNK] for k, v in cfg.items()}
        res = core.evaluate(tables, part, c)
        for k in _OUTPUTS:
            out.setdefault(k, []).append(res[k])
    return {k: np.concatenate(v) for k, v in out.items()}


def sweep(device: Any, model: Any, precisions: Any = ("fp16",), batches: Any = (1,), processes: Any = (1,),
          power_modes: Any = None, accelerators: Any = ("gpu",), harness: Any = None,
          resolution: Any = None) -> SweepResult:
    """Every combination of the lists on one device and model. ``power_modes``: names, ids,
    ``PowerMode`` objects, "all", "fastest", or None (the default mode); ``harness``: as for
    ``predict`` (one harness for the whole grid)."""
    h = get_harness(harness)
    devices = _modes(device, power_modes)
    hws = [resolve(d) for d in devices]
    notes = _mode_notes(hws)
    hw0 = hws[0]
    w = load(model, resolution)
    notes.extend(w.notes)
    c = plan.device_constants(hw0, notes)
    precs = [plan.resolve_precision(hw0, p, profile_precisions(devices[0]), notes, h)
             for p in _as_list(precisions, ["fp16"])]
    precs = list(dict.fromkeys(precs))
    bats = [plan.check_batch(b) for b in _as_list(batches, [1])]
    procs = [plan.check_processes(n) for n in _as_list(processes, [1])]
    accs = [str(a).strip().lower().replace(" ", "") for a in _as_list(accelerators, ["gpu"])]

    kernels = plan.KernelTables(w, hw0, c)
    combos = _combos(hw0, accs, precs, bats, procs)
    cfg, mi, ci, mode_cols = _grid(hws, combos, w, kernels, c, h)
    tables = kernels.tables
    mem = {}
    for x in combos:
        if (x.precision, x.batch) not in mem:
            mem[(x.precision, x.batch)] = plan.memory(w, kernels.engine(x.precision), x.batch, c)[0]
    available = plan.available_memory(hw0, c)
    R = len(mi)
    res = _evaluate(tables, cfg, c, R)

    mem_pp = np.array([mem[(x.precision, x.batch)] for x in combos])[ci]
    n_proc = np.array([x.processes for x in combos], dtype=np.int64)[ci]
    p50, p99 = core.percentiles(res["latency"], res["latency_alone"])
    cols = {
        "power_mode": mi, "precision": np.array([precs.index(x.precision) for x in combos])[ci],
        "accelerator": np.array([accs.index(x.accelerator) for x in combos])[ci],
        "batch": np.array([x.batch for x in combos], dtype=np.int64)[ci],
        "processes": n_proc,
        "throughput": res["throughput"], "per_process_throughput": res["throughput"] / n_proc,
        "latency": res["latency"], "latency_p50": p50, "latency_p99": p99,
        "gpu_time": res["t_gpu"], "host_time": res["t_host"],
        "memory": mem_pp * n_proc, "memory_per_process": mem_pp, "power": res["power"],
        "idle_power": np.full(R, c["idle_w"]), "energy": res["power"] / res["throughput"],
        "gpu_clock_mhz": res["f"] / 1e6, "max_gpu_clock_mhz": mode_cols["f_max"][mi] / 1e6,
        "gpu_util": res["gpu_util"], "emc_util": res["emc_util"], "bound": res["bound"].astype(np.int64),
        "oom": mem_pp * n_proc > available,
    }
    labels = {"power_mode": [m.mode for m in hws], "precision": precs, "accelerator": accs,
              "bound": list(core.BOUNDS)}
    meta = {"device": hw0.device_id, "model": w.name, "harness": h.name}
    return SweepResult(cols, labels, meta, notes)
