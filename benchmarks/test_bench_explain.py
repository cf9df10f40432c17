"""Per-layer profiles and ``explain``: what the profiling pass costs, that it moves no gated figure,
the size of a baseline entry with the engine's structure, and whether the cause of an injected
slowdown comes first.

* cost: one profiling pass (simulator: resnet50 and yolov8n at batch 8; onnxruntime on the host:
  resnet18 at batch 1, a session of its own plus 21 inferences), against a measurement;
* A/A: ``JETSON_BENCH_SEEDS`` seeds (default 20) of the same simulated measurement with profiling
  on and off: the samples, the window and the virtual clock must be identical;
* entry size: bytes of a baseline entry (as written, indented) with and without ``structure``;
* causes: one layer dropped to fp32, a reformat added after it, the layer widened x2, for
  ``JETSON_BENCH_LAYERS`` (default 4) 3x3 convolutions of resnet50 and yolov8n each: is the
  cause the first row of the per-layer diff?

Run: ``python3 -m pytest benchmarks/test_bench_explain.py -q -s``
"""

import json
import os
import time

import pytest

from pytest_jetson.clock import SimClock
from pytest_jetson.engines.layer_profile import structure
from pytest_jetson.engines.simulated import SimulatedEngine
from pytest_jetson.gate.attribution import layer_where
from pytest_jetson.gate.entries import make_entry
from pytest_jetson.gate.file_format import dump_baseline, read_file
from pytest_jetson.models import zoo
from pytest_jetson.run.harness import measure
from tests.fakes.sim_causes import fp32_layer, reformat_after, widened

SEEDS = int(os.environ.get("JETSON_BENCH_SEEDS", "20"))
LAYERS = int(os.environ.get("JETSON_BENCH_LAYERS", "4"))


@pytest.mark.parametrize("model", ["resnet50", "yolov8n"])
def test_simulated_profile_pass(benchmark, model):
    engine = SimulatedEngine(model, "orin-nano", "int8", 8, seed=0)
    # a lambda, not the bound method: an engine's own methods are timed on its virtual clock,
    # which the profile (rightly) never moves
    p = benchmark(lambda: engine.layer_profile(8))
    t0 = time.perf_counter()
    measure(SimulatedEngine(model, "orin-nano", "int8", 8, seed=0), duration="10s", profile=False)
    window = time.perf_counter() - t0
    benchmark.extra_info.update(layers=len(p.layers), measure_10s_host_s=round(window, 4))
    print(f"\n{model}: profile pass {benchmark.stats.stats.median * 1e3:.1f} ms for {len(p.layers)} layers; "
          f"a simulated 10 s measurement takes {window * 1e3:.0f} ms of host time")


def test_onnxruntime_profile_pass(benchmark, tmp_path):
    pytest.importorskip("onnxruntime")
    from pytest_jetson.engines.onnxruntime import OnnxRuntimeEngine

    engine = OnnxRuntimeEngine(str(zoo.path("resnet18")), "fp32", 1)
    p = benchmark.pedantic(engine.layer_profile, args=(1,), rounds=3, iterations=1)
    m = measure(engine, duration="1s", warmup="0.2s", profile=False)
    benchmark.extra_info.update(layers=len(p.layers), latency_mean_s=m.latency_mean)
    print(f"\nonnxruntime resnet18: profile pass {benchmark.stats.stats.median:.2f} s ({len(p.layers)} nodes, "
          f"21 inferences of {m.latency_mean * 1e3:.1f} ms and a session build)")


def _run(seed, profile):
    clock = SimClock()
    engine = SimulatedEngine("resnet50", "orin-nano", "int8", 8, clock=clock, seed=seed)
    a = measure(engine, duration="2s", warmup="0.5s", profile=profile)
    b = measure(engine, duration="2s", warmup="0s", profile=profile)
    return [(m.latencies, m.windows, m.duration, m.throughput, m.latency_p99) for m in (a, b)], clock.now()


def test_aa_profiling_on_and_off_moves_nothing_on_the_simulator():
    moved = [seed for seed in range(SEEDS) if _run(seed, True) != _run(seed, False)]
    print(f"\nA/A over {SEEDS} seeds, profiling on vs off: {len(moved)} seeds with any sample, window, "
          "gated figure or clock reading different")
    assert moved == []


def _entry_bytes(entry):
    """Bytes the entry takes in its baseline file, as the store writes it."""
    return len(dump_baseline({"device": "orin-nano-8gb", "entries": {"k": entry}}).encode())


@pytest.mark.parametrize("model", ["resnet50", "yolov8n"])
def test_entry_size_with_structure(model, tmp_path):
    m = measure(SimulatedEngine(model, "orin-nano", "int8", 8, seed=0), duration="2s")
    full = make_entry(m, {"device": "orin-nano-8gb"})
    bare = {k: v for k, v in full.items() if k != "structure"}
    s = full["structure"]
    path = tmp_path / "b.json"
    path.write_text(dump_baseline({"device": "orin-nano-8gb", "entries": {"k": full}}))
    assert read_file(path)["entries"]["k"]["structure"] == json.loads(json.dumps(s))
    print(f"\n{model}: entry {_entry_bytes(bare)} B without structure, {_entry_bytes(full)} B with it "
          f"({s['layers']} layers, {len(s['rows'])} kept with times, names hashed: {'names' in s})")


def _convs_3x3(model, n):
    p = SimulatedEngine(model, "orin-nano", "int8", 8, seed=0).layer_profile(8)
    convs = [x for x in p.layers if x.type == "Convolution" and x.precision == "int8" and "conv2" in x.name
             or x.type == "Convolution" and model == "yolov8n" and ".m.0.cv" in x.name]
    step = max(1, len(convs) // n)
    return [x.name for x in convs[::step][:n]]


def test_the_cause_comes_first():
    rows = []
    for model in ("resnet50", "yolov8n"):
        base = structure(SimulatedEngine(model, "orin-nano", "int8", 8, seed=0).layer_profile(8))
        for layer in _convs_3x3(model, LAYERS):
            for cause in (fp32_layer, reformat_after, widened):
                with cause(model, layer):
                    now = SimulatedEngine(model, "orin-nano", "int8", 8, seed=0).layer_profile(8)
                lw = layer_where(now, base)
                first = next((x for x in lw.layers if x.moved), None)
                if cause is reformat_after:
                    ok = first is not None and first.status == "added" and first.type == "Reformat" and layer in first.name
                elif cause is fp32_layer:
                    ok = first is not None and first.name == layer and first.status == "precision"
                else:
                    ok = first is not None and first.name == layer and first.change > 0
                rows.append((model, cause.__name__, layer, ok, lw.change / lw.baseline_total))
    for cause in ("fp32_layer", "reformat_after", "widened"):
        mine = [r for r in rows if r[1] == cause]
        print(f"\n{cause}: cause first in {sum(r[3] for r in mine)}/{len(mine)} "
              f"(slowdown of all layers {min(r[4] for r in mine):+.1%} .. {max(r[4] for r in mine):+.1%})")
    for r in rows:
        if not r[3]:
            print("  not first:", r[:3])
    assert all(r[3] for r in rows)
