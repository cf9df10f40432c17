"""The model's arithmetic, vectorised over configurations: one code path for predict, sweep and the
calibration.

Per kernel the roofline time is max(A/f, B/bw) (A arithmetic cycles, B bytes, f the clock, bw the
DRAM bandwidth). Summed over a network that is (1/bw) * g(f/bw) with g piecewise in f/bw, so each
(precision, batch) engine is stored once as its kernels' breakpoints sorted, with prefix sums:
evaluating any clock and bandwidth is one binary search, whatever the number of kernels. That is
what lets DVFS be solved by bisection over hundreds of thousands of configurations at once.

Around the GPU time, the harness (``harness.py``) decides what an inference costs: copies, the
host's enqueue work and whether it overlaps the GPU, a synchronous wait. Concurrent processes
time-slice the GPU (Jetson has no MPS) and share the CPU cores.
"""

from typing import Dict, List

import numpy as np

from .costs import Costs

_SPAN = 80.0          # log(a/b) is clipped to +-_SPAN ...
_OFFSET = 4 * _SPAN   # ... so that each table's keys occupy their own band of one sorted array

BOUNDS = ("compute", "memory", "launch", "contention")
#: How sharply the time of N processes bends from the CPU bound to the GPU bound: a p-norm, so
#: that near the crossover both resources show (queueing at the one not saturated).
_BEND = 4.0


class Tables:
    """Kernel lists (one per engine) prepared for fast evaluation of their summed roofline time."""

    def __init__(self, items: List[Costs]) -> None:
        keys, pa, pb = [], [], []
        kstart, pstart = [], []
        tot_a, tot_bytes, tot_ops, n = [], [], [], []
        nk = npf = 0
        for g, c in enumerate(items):
            a = np.asarray(c.a, float)
            b = np.maximum(np.asarray(c.b, float), 1e-12)
            x = np.clip(np.log(np.maximum(a, 1e-300) / b), -_SPAN, _SPAN)
            order = np.argsort(x, kind="stable")
            keys.append(x[order] + g * _OFFSET)
            pa.append(np.concatenate(([0.0], np.cumsum(a[order]))))
            pb.append(np.concatenate(([0.0], np.cumsum(b[order]))))
            kstart.append(nk)
            pstart.append(npf)
            nk += a.size
            npf += a.size + 1
            tot_a.append(float(a.sum()))
            tot_bytes.append(float(np.sum(c.bytes)))
            tot_ops.append(float(np.sum(c.ops)))
            n.append(c.n)
        self.keys = np.concatenate(keys) if keys else np.zeros(0)
        self.pa = np.concatenate(pa) if pa else np.zeros(1)
        self.pb = np.concatenate(pb) if pb else np.zeros(1)
        self.kstart = np.array(kstart, dtype=np.int64)
        self.pstart = np.array(pstart, dtype=np.int64)
        self.size = np.array([np.asarray(c.a).size for c in items], dtype=np.int64)
        self.tot_a = np.array(tot_a)
        self.tot_bytes = np.array(tot_bytes)
        self.tot_ops = np.array(tot_ops)
        self.n = np.array(n, dtype=float)

    def eval(self, gid: np.ndarray, f: np.ndarray, bw: np.ndarray):
        """(math-bound seconds, memory-bound seconds) of table ``gid`` at clock f (Hz), bandwidth bw."""
        q = np.clip(np.log(f / bw), -_SPAN, _SPAN) + gid * _OFFSET
        idx = np.searchsorted(self.keys, q, side="right") - self.kstart[gid]
        idx = np.clip(idx, 0, self.size[gid])
        p = self.pstart[gid] + idx
        t_mem = self.pb[p] / bw
        t_math = (self.tot_a[gid] - self.pa[p]) / f
        return t_math, t_mem


def kernel_fixed_s(c: Dict[str, float], f, graphs):
    """Seconds each kernel costs beyond its roofline: GPU cycles (block ramp-up and tail, paid at
    the GPU's clock) plus microseconds that do not follow the clock (the front end fetching the
    next launch, semaphores, the gap between two stream launches); a CUDA graph pre-builds the
    launches and keeps ``graph_kernel_frac`` of that gap. Splitting the two is what makes a change
    of power mode move a many-kernel network by less than the clock ratio."""
    gap = c["kernel_us"] * 1e-6 * np.where(np.asarray(graphs) > 0, c["graph_kernel_frac"], 1.0)
    return c["kernel_cycles"] / f + gap


def _safe_div(a, b):
    return np.divide(a, b, out=np.zeros(np.broadcast(a, b).shape), where=np.asarray(b) > 0)


def at_clock(T: Tables, cfg: Dict[str, np.ndarray], c: Dict[str, float], f: np.ndarray) -> Dict[str, np.ndarray]:
    """Everything about each configuration at GPU clock ``f`` (Hz)."""
    bw = cfg["bw"]
    n_g = cfg["n_gpu"]
    n_d = cfg["n_dla"]
    n_all = n_g + n_d
    has_g = n_g > 0
    has_d = n_d > 0
    launch = cfg["h_launch"]
    t_host = cfg["h_host"]
    t_copy = cfg["h_copy"]
    sync = cfg["h_sync"] > 0
    gpu_only = cfg["h_gpu_only"] > 0
    cores = np.maximum(1.0, cfg["cores"] * c["core_share"])
    # Time-slice switching grows with the number of contexts; near full memory, page-cache eviction and
    # allocator pressure slow every process further (seeds section 1: "memory pressure").
    pressure = 1.0 + c["pressure"] * np.maximum(0.0, (cfg["mem_frac"] - 0.8) / 0.2)
    sw = (1.0 + c["switch_frac"] * (n_all - 1)) * pressure

    # DLA instances: their own engine on a DLA core plus GPU fallback segments.
    gd, gf = cfg["gid_dla"], cfg["gid_fb"]
    zero = np.zeros_like(f)
    gd0 = np.where(has_d, gd, 0)
    gf0 = np.where(has_d, gf, 0)
    if np.any(has_d):
        dm, db = T.eval(gd0, np.maximum(cfg["dla_hz"], 1.0), bw)
        # NVDLA runs a batch as one pass of the network per image, so each layer's set-up is paid
        # once per image (cuDLA-samples: YOLOv5s 3.82 ms at batch 1, 62.54 ms at batch 16).
        per_image = T.n[gd0] * cfg["batch"] * kernel_fixed_s(c, np.maximum(cfg["dla_hz"], 1.0), 0.0)
        t_dla = np.where(has_d, dm + db + per_image, 0.0)
        fm, fb = T.eval(gf0, f, bw)
        t_fb = np.where(has_d & (T.n[gf0] > 0), fm + fb + T.n[gf0] * kernel_fixed_s(c, f, 0.0), 0.0)
        n_tr = cfg["n_tr"]
        t_launch_d = (T.n[gf0] + n_tr) * launch
        t1d = np.where(has_d, t_dla + np.maximum(t_fb, t_launch_d) + n_tr * c["dla_transition_us"] * 1e-6
                       + t_host + t_copy, 0.0)
        bytes_d = np.where(has_d, T.tot_bytes[gd0] + T.tot_bytes[gf0], 0.0)
        phi = np.minimum(0.8, _safe_div(n_d * bytes_d, t1d) / (bw * c["mem_eff"]))
        u_fb = np.minimum(0.8, _safe_div(n_d * t_fb, t1d))
    else:
        t_dla = t_fb = t1d = bytes_d = phi = u_fb = n_tr = t_launch_d = zero

    # GPU instances, slowed by a DLA neighbour's DRAM traffic and GPU fallback segments.
    gg0 = np.where(has_g, cfg["gid_gpu"], 0)
    tm, tb = T.eval(gg0, f, bw)
    k_g = T.n[gg0]
    # a CUDA graph's kernels follow each other with shorter gaps than stream launches
    t_fixed = k_g * kernel_fixed_s(c, f, cfg["h_graphs"])
    tm = tm * (1.0 + c["contention"] * phi)
    tb = tb / (1.0 - phi)
    t_gpu = tm + tb + t_fixed
    t_launch = k_g * launch
    t_cpu = np.where(gpu_only, 0.0, t_launch + t_host)
    # One inference alone: a synchronous harness waits for the GPU before it enqueues the next
    # (enqueue overlaps the GPU's own work, the rest is serial); a pipelined one (trtexec: copies on
    # their own streams, two iterations in flight) runs at the pace of the slowest of GPU, copy
    # engine and host; trtexec's GPU compute time is the kernels alone.
    t1 = np.where(gpu_only, t_gpu, np.where(sync, t_copy + np.maximum(t_gpu, t_launch) + t_host,
                                            np.maximum(np.maximum(t_gpu, t_copy), t_cpu)))
    lat1 = np.where(gpu_only, t_gpu, np.where(sync, t1, t_copy + t_gpu))
    cap = 1.0 - u_fb * (1.0 + c["contention"])
    solo = t1 * sw
    gpu_sat = n_g * np.where(sync, t_gpu + t_copy, np.maximum(t_gpu, t_copy)) * sw / cap
    cpu_sat = (n_g * t_cpu + n_d * (t_launch_d + t_host)) / cores
    shared = (gpu_sat ** _BEND + cpu_sat ** _BEND) ** (1.0 / _BEND)
    T_g = np.where(n_all > 1, np.maximum(solo, shared), solo)
    T_g = np.where(has_g, T_g, 0.0)

    if np.any(has_d):
        u_g = np.minimum(1.0, _safe_div(n_g * t_gpu, T_g))
        wait = n_tr * u_g * 0.5 * _safe_div(t_gpu, np.maximum(k_g, 1.0)) * has_g
        per_core = np.ceil(_safe_div(n_d, cfg["dla_cores"]))
        T_d = np.maximum(np.maximum(t1d * sw + wait, per_core * t_dla),
                         np.maximum(_safe_div(n_d * t_fb * sw, np.maximum(1.0 - u_g, 0.2)), cpu_sat))
        T_d = np.where(has_d, T_d, 0.0)
    else:
        T_d = zero

    batch = cfg["batch"]
    thr_g = _safe_div(n_g * batch, T_g)
    thr_d = _safe_div(n_d * batch, T_d)
    thr = thr_g + thr_d
    # latency: the harness's own latency of one inference plus the wait for other processes' slices
    lat_g = T_g - t1 + lat1
    latency = (n_g * lat_g + n_d * T_d) / n_all
    alone = (n_g * lat1 + n_d * t1d) / n_all
    gpu_busy = np.minimum(1.0, _safe_div(n_g * (t_gpu + t_copy), T_g) + _safe_div(n_d * t_fb, T_d))
    # a copy reads and writes every byte
    bytes_rate = (_safe_div(n_g * T.tot_bytes[gg0], T_g) * has_g + _safe_div(n_d * bytes_d, T_d)
                  + thr / batch * cfg["copy_bytes"] * 2.0)
    emc_util = np.minimum(1.0, bytes_rate / bw)

    # Power, as an energy roofline (Pagoda, arXiv 2509.20189) at the mode's voltage: each
    # multiply-accumulate and each byte the GPU moves costs switching energy that scales with V^2
    # (int8 less per MAC than fp16, fp16 less than TF32), the GPU's clock tree costs power while it
    # is busy, its leakage while it runs; DRAM energy per byte plus the memory controller awake at
    # the mode's EMC clock; the host's busy cores; the DLA; the board's idle floor.
    f_ghz = f / 1e9
    # The GPU rail's voltage rises with clock along the board's DVFS table, reaching its ceiling at
    # the board's highest clock (no extrapolation past it).
    volt = c["v0"] + (c["v_max"] - c["v0"]) * np.minimum(f / cfg["f_top"], 1.0)
    units = cfg["sm"] * cfg["cores_per_sm"] / 128.0  # per 128 CUDA cores (an Ampere SM)
    ops_rate = _safe_div(n_g * T.tot_ops[gg0], T_g) * has_g + _safe_div(n_d * T.tot_ops[gf0] * has_d, T_d)
    gpu_bytes = bytes_rate - thr / batch * cfg["copy_bytes"] * 2.0
    p_gpu = (volt * volt * (c["mac_pj"] * 1e-12 * ops_rate + c["gpu_byte_pj"] * 1e-12 * gpu_bytes
                            + units * c["gpu_w"] * f_ghz * gpu_busy)
             + units * c["gpu_leak_w"] * volt * (n_g + n_d * (T.n[gf0] > 0) > 0))
    p_mem = c["mem_w_per_gbs"] * bytes_rate / 1e9 + c["emc_w"] * bw / 1e11
    # the host threads' busy cores (a thread blocks while it waits for the GPU)
    cpu_busy = np.minimum(np.minimum(cfg["cores"], n_all),
                          _safe_div(n_g * t_cpu, T_g) + _safe_div(n_d * (t_launch_d + t_host), T_d))
    p_cpu = c["cpu_w"] * cpu_busy * cfg["cpu_clk"]
    p_dla = c["dla_w"] * _safe_div(n_d * t_dla, T_d)
    power = cfg["idle"] + p_cpu + p_gpu + p_mem + p_dla

    host_part = t_copy + t_host + np.maximum(0.0, t_launch - t_gpu)
    # the host sets the pace when its share of an inference outweighs the GPU's, or when its
    # enqueue outlasts the kernels it enqueues (the GPU then waits for each launch)
    host_paced = (host_part > t_gpu) | (np.where(sync, t_launch, t_cpu) > t_gpu)
    contended = (n_all > 1) & (shared > solo * 1.0001)
    bound = np.where(contended, 3, np.where(~gpu_only & host_paced, 2, np.where(tm + t_fixed >= tb, 0, 1)))
    bound = np.where(has_g, bound, np.where(n_all > 1, 3, 0))
    return {
        "throughput": thr, "latency": latency, "latency_alone": alone, "power": power,
        "gpu_util": gpu_busy, "emc_util": emc_util, "bound": bound, "t_gpu": t_gpu,
        "t_host": t_cpu, "t_copy": t_copy + zero, "p_gpu": p_gpu, "p_mem": p_mem, "p_cpu": p_cpu,
        "p_dla": p_dla, "bytes_rate": bytes_rate,
    }


def evaluate(T: Tables, cfg: Dict[str, np.ndarray], c: Dict[str, float],
             iterations: int = 32) -> Dict[str, np.ndarray]:
    """``at_clock`` at each mode's maximum clock, then DVFS: where board power exceeds the mode's
    budget, the highest clock that meets it (bisection; power grows monotonically with clock)."""
    f_max = cfg["f_max"]
    out = at_clock(T, cfg, c, f_max)
    out["f"] = f_max.copy()
    out["budget_unmet"] = np.zeros(f_max.shape, bool)
    budget = cfg["budget"]
    over = np.isfinite(budget) & (out["power"] > budget)
    if not np.any(over):
        return out
    idx = np.flatnonzero(over)
    sub = {k: (v[idx] if isinstance(v, np.ndarray) and v.shape == f_max.shape else v) for k, v in cfg.items()}
    lo = f_max[idx] * c.get("f_floor", 0.1)
    hi = f_max[idx].copy()
    lo_out = at_clock(T, sub, c, lo)
    unmet = lo_out["power"] > sub["budget"]
    if idx.size * _GRID <= 65536:
        lo, hi = _grid_search(T, sub, c, lo, hi)
    else:
        for _ in range(iterations):
            mid = 0.5 * (lo + hi)
            ok = at_clock(T, sub, c, mid)["power"] <= sub["budget"]
            lo = np.where(ok, mid, lo)
            hi = np.where(ok, hi, mid)
    f_new = np.where(unmet, f_max[idx] * c.get("f_floor", 0.1), lo)
    fixed = at_clock(T, sub, c, f_new)
    for k, v in fixed.items():
        out[k][idx] = v
    out["f"][idx] = f_new
    out["budget_unmet"][idx] = unmet
    return out


_GRID = 32


def _grid_search(T: Tables, sub: Dict[str, np.ndarray], c: Dict[str, float], lo: np.ndarray, hi: np.ndarray,
                 rounds: int = 6):
    """The bisection's answer in a few vectorised rounds (few rows: a 32-point grid per row per round,
    each round narrowing [lo, hi] to one grid step: 31^6 ~ 1e9 resolution)."""
    n = lo.size
    steps = np.linspace(0.0, 1.0, _GRID)
    rep = {k: (np.repeat(v, _GRID) if isinstance(v, np.ndarray) and v.shape == lo.shape else v)
           for k, v in sub.items()}
    for _ in range(rounds):
        fs = lo[:, None] + (hi - lo)[:, None] * steps[None, :]
        ok = (at_clock(T, rep, c, fs.ravel())["power"] <= rep["budget"]).reshape(n, _GRID)
        k = np.maximum(ok.sum(axis=1) - 1, 0)  # power grows with clock: feasible points come first
        rows = np.arange(n)
        lo, hi = fs[rows, k], fs[rows, np.minimum(k + 1, _GRID - 1)]
    return lo, hi


def percentiles(latency: np.ndarray, alone: np.ndarray):
    """p50 and p99 of the noise-free per-batch latency: a process's own time plus the wait for other
    processes' time slices, spread uniformly between none and twice the mean wait."""
    wait = np.maximum(latency - alone, 0.0)
    return alone + wait, alone + 1.98 * wait


def scalar(d: Dict[str, np.ndarray], i: int = 0) -> Dict[str, float]:
    return {k: (v[i].item() if isinstance(v, np.ndarray) else v) for k, v in d.items()}
