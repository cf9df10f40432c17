"""Which layers of an int8 engine run in int8: TensorRT's builder times each layer's tactics in
every precision the engine allows (int8 and fp16 for an int8 engine) and keeps, per layer, the
fastest once the reformats at each precision boundary are counted.

As modelled here, an engine's GPU time is a sum over its kernels (each kernel's roofline time plus
its fixed per-kernel cost, at the board's clock), so the choice is a labelling of the kernels with
two labels: a kernel's own time in each precision (unary), and the reformat a convolution,
matrix product or pool needs where it reads a tensor written in the other precision (pairwise,
the reformat kernel's time; streaming kernels convert while they read, at no extra kernel). Both
terms are non-negative and a pair of equal labels costs nothing, so the cheapest labelling is a
minimum cut (exact for this sum), found by augmenting paths over the engine's few hundred kernels.

What is assumed:

* a tensor read in the other precision by several layers is counted once per reader (TensorRT
  converts it once per format): the cut over-counts shared reformats, which the check below
  catches where it matters;
* the choice is made at the build's batch and the board's top clock (as the builder times
  tactics), and kept at every clock a power mode then runs;
* the kernels the rules of ``engine`` keep in fp16 (elementwise, resize, softmax, unknown
  operators, a detector's heads) stay fp16: only convolutions, matrix products and pools choose;
* the engine kept is the fastest of the cut's labelling, the all-int8 plan and the fp16 engine
  (each priced in full), so an int8 engine is never slower than the fp16 one.
"""

from collections import deque
from typing import Any, Callable, Dict, List

import numpy as np

from .core import kernel_fixed_s
from .costs import gpu_costs
from .engine import STRICT, Engine, P, plan, reformats
from .workload import KIND, Workload

#: Kernels that choose their precision (the others follow the rules of ``engine``).
CHOOSERS = (KIND["conv"], KIND["depthwise"], KIND["gemm"], KIND["pool"])


def _kernel_seconds(e: Engine, arch: str, sm: int, has_tc: bool, batch: int, c: Dict[str, float],
                    f: float, bw: float) -> np.ndarray:
    """Each kernel's GPU time at clock ``f`` and bandwidth ``bw``: roofline plus fixed cost."""
    k = gpu_costs(e, arch, sm, has_tc, batch, c)
    return np.maximum(np.asarray(k.a, float) / f, np.asarray(k.b, float) / bw) + kernel_fixed_s(c, f, 0.0)


def _by_source(e: Engine, t: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n)
    own = e.source >= 0
    np.add.at(out, e.source[own], t[own])
    return out


def min_cut(n: int, to_int8: np.ndarray, to_fp16: np.ndarray, pairs: List[Any]) -> np.ndarray:
    """The labelling of ``n`` nodes minimising sum of unary costs plus pairwise costs of unequal
    labels: True where a node takes fp16. ``to_int8[i]``: what node i costs more in int8 than in
    fp16 (inf: never int8); ``to_fp16`` the other way; ``pairs``: (i, j, cost)."""
    s, t = n, n + 1
    cap: List[Dict[int, float]] = [dict() for _ in range(n + 2)]

    def add(u: int, v: int, x: float) -> None:
        cap[u][v] = cap[u].get(v, 0.0) + x
        cap[v].setdefault(u, 0.0)

    for i in range(n):
        if to_fp16[i] > 0:
            add(s, i, float(to_fp16[i]))   # cut (paid) when i lands on the fp16 side
        if to_int8[i] > 0:
            add(i, t, float(to_int8[i]))   # cut when i stays on the int8 side
    for i, j, x in pairs:
        if x > 0 and i != j:
            add(i, j, x)
            add(j, i, x)
    eps = 1e-12
    while True:
        parent = {s: s}
        queue = deque([s])
        while queue and t not in parent:
            u = queue.popleft()
            for v, x in cap[u].items():
                if x > eps and v not in parent:
                    parent[v] = u
                    queue.append(v)
        if t not in parent:
            break
        path, v = [], t
        while v != s:
            path.append((parent[v], v))
            v = parent[v]
        push = min(cap[u][v] for u, v in path)
        for u, v in path:
            cap[u][v] -= push
            cap[v][u] += push
    # nodes still reachable from the int8 side keep int8
    return np.array([i not in parent for i in range(n)], bool)


def choose(w: Workload, arch: str, sm: int, has_tc: bool, batch: int, c: Dict[str, float],
           f: float, bw: float, planner: Callable[..., Engine] = plan) -> Engine:
    """The int8 engine TensorRT's builder keeps for ``w`` on this GPU at ``batch``; ``planner``:
    the engine planner (``engine.plan``, or the caller's own)."""
    n = w.n_kernels
    e8, e16 = planner(w, "int8", arch=arch), planner(w, "fp16", arch=arch)

    def total(e: Engine) -> float:
        return float(_kernel_seconds(e, arch, sm, has_tc, batch, c, f, bw).sum())

    t8 = _by_source(e8, _kernel_seconds(e8, arch, sm, has_tc, batch, c, f, bw), n)
    t16 = _by_source(e16, _kernel_seconds(e16, arch, sm, has_tc, batch, c, f, bw), n)
    prec8 = np.full(n, P["fp16"])
    prec8[e8.source[e8.source >= 0]] = e8.prec[e8.source >= 0]
    free = np.isin(w.kind, CHOOSERS) & (prec8 == P["int8"])
    concat = w.kind == KIND["concat"]
    # a concat follows its inputs: free to take either label, at the cost of a copy when they differ
    to_int8 = np.where(free, t8 - t16, np.where(concat, 0.0, np.inf))
    to_fp16 = np.where(free, t16 - t8, 0.0)
    # a reformat of each tensor, priced as its own kernel (int8 <-> fp16, the same bytes either way)
    r = _kernel_seconds(reformats(w.t_elems, P["fp16"], P["int8"]), arch, sm, has_tc, batch, c, f, bw)
    strict = np.isin(w.kind, STRICT) | concat
    pairs = [(int(w.t_producer[tt]), int(k), float(r[tt])) for k, tt in zip(w.e_kernel, w.e_tensor)
             if strict[k] and w.t_producer[tt] >= 0]
    fp16 = min_cut(n, np.maximum(to_int8, 0.0), np.maximum(to_fp16, 0.0), pairs) & free
    candidates = [e8, e16] if not fp16.any() else [planner(w, "int8", fp16=fp16, arch=arch), e8, e16]
    times = [total(e) for e in candidates]
    return candidates[int(np.argmin(times))]
