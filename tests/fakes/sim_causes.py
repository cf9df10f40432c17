"""Causes of a slowdown injected into the simulator's engine plan, as a change to a model or a
TensorRT upgrade would make them: one layer's precision dropped to fp32, a reformat added after a
layer, one convolution widened. Each is a context manager naming its layer by its fused name."""

import contextlib
from typing import Iterator

import numpy as np

from pytest_jetson.sim import engine as sim_engine
from pytest_jetson.sim import plan as sim_plan
from pytest_jetson.sim.layers import _kernel_names
from pytest_jetson.sim.workload import load


def _index(model: str, layer: str) -> int:
    names = _kernel_names(model, None, None, load(model))
    return names.index(layer)


@contextlib.contextmanager
def fp32_layer(model: str, layer: str) -> Iterator[None]:
    """``layer`` runs in fp32 whatever the engine's precision (a layer TensorRT fell back on)."""
    i = _index(model, layer)
    original = sim_engine._quantize

    def quantize(w, prec, concat, concat_free, *rest):
        original(w, prec, concat, concat_free, *rest)
        if w.n_kernels > i and w.name == model:
            prec[i] = sim_engine.P["fp32"]

    sim_engine._quantize = quantize
    try:
        yield
    finally:
        sim_engine._quantize = original


@contextlib.contextmanager
def reformat_after(model: str, layer: str) -> Iterator[None]:
    """A reformat of ``layer``'s output into fp32 (a consumer that takes only linear fp32)."""
    i = _index(model, layer)
    original = sim_engine._reads

    def reads(w, prec, t_prec):
        in_bytes, reform = original(w, prec, t_prec)
        if w.name == model:
            t = int(np.flatnonzero(w.t_producer == i)[0])
            reform[(t, sim_engine.P["fp32"])] = (float(w.t_elems[t]), int(t_prec[t]))
        return in_bytes, reform

    sim_engine._reads = reads
    try:
        yield
    finally:
        sim_engine._reads = original


@contextlib.contextmanager
def widened(model: str, layer: str, factor: float = 2.0) -> Iterator[None]:
    """``layer`` (a convolution) with ``factor`` times its output channels."""
    i = _index(model, layer)
    original = sim_plan.plan

    def plan(w, precision, **kw):
        e = original(w, precision, **kw)
        if w.name == model:
            row = np.flatnonzero(e.source == i)
            for name in ("macs", "flops", "weight_bytes", "out_bytes", "n_out"):
                getattr(e, name)[row] *= factor
        return e

    sim_plan.plan = plan
    try:
        yield
    finally:
        sim_plan.plan = original
