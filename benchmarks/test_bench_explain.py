"""Per-layer profiles and ``explain``: what the profiling pass costs, that it moves no gated figure,
the size of a baseline entry with the engine's structure, and whether the cause of an injected
slowdown comes first.

* cost: one profiling pass (simulator: resnet50 and yolov8n at batch 8; onnxruntime on the host:
  resnet18 at batch 1, a session of its own plus 1 + ``PROFILE_RUNS`` inferences), against a measurement;
* A/A: ``JETSON_BENCH_SEEDS`` seeds (default 3; 20 for the figures) of the same simulated measurement with profiling
  on and off: the samples, the window and the virtual clock must be identical; on onnxruntime
  (resnet18, batch 1, real time) ``JETSON_BENCH_SEEDS`` rounds of a measurement after one with a
  profiling pass and one after one without (``JETSON_BENCH_ORT_WINDOW``, default 0.2 s each; 0.5 s for the figures, the
  order alternating): the paired difference of their mean latency, with a 95% interval;
* entry size: bytes of a baseline entry (as written, indented) with and without ``structure``;
* concurrency: the simulator's SM and tensor-core activity of ResNet50 pools (batch 1, int8, fp16
  and tf32) at 1, 2, 4 and 8 processes, beside the study's (SM 75-90%, tensor cores about 25% at
  1-2 processes, 15-20% at 4-8);
* causes: one layer dropped to fp32, a reformat added after it, the layer widened x2, for
  ``JETSON_BENCH_LAYERS`` (default 1; 4 for the figures) 3x3 convolutions of resnet50 and yolov8n each: is the
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

SEEDS = int(os.environ.get("JETSON_BENCH_SEEDS", "3"))
ORT_WINDOW = os.environ.get("JETSON_BENCH_ORT_WINDOW", "0.2s")
LAYERS = int(os.environ.get("JETSON_BENCH_LAYERS", "1"))


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
    from pytest_jetson.engines.onnxruntime import PROFILE_RUNS, OnnxRuntimeEngine

    engine = OnnxRuntimeEngine(str(zoo.path("resnet18")), "fp32", 1)
    p = benchmark.pedantic(engine.layer_profile, args=(1,), rounds=3, iterations=1)
    m = measure(engine, duration="1s", warmup="0.2s", profile=False)
    benchmark.extra_info.update(layers=len(p.layers), latency_mean_s=m.latency_mean)
    print(f"\nonnxruntime resnet18: profile pass {benchmark.stats.stats.median:.2f} s ({len(p.layers)} nodes, "
          f"{1 + PROFILE_RUNS} inferences of {m.latency_mean * 1e3:.1f} ms and a session build)")


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


def test_aa_profiling_on_and_off_on_onnxruntime():
    pytest.importorskip("onnxruntime")
    import statistics

    from pytest_jetson.engines.onnxruntime import OnnxRuntimeEngine

    engine = OnnxRuntimeEngine(str(zoo.path("resnet18")), "fp32", 1)
    measure(engine, duration="0.5s", warmup="0.5s", profile=False)
    after = {True: [], False: []}
    for i in range(SEEDS):
        for first in ((True, False) if i % 2 == 0 else (False, True)):
            measure(engine, duration=ORT_WINDOW, warmup="0s", profile=first)  # the pass runs after this one
            after[first].append(measure(engine, duration=ORT_WINDOW, warmup="0s", profile=False).latency_mean)
    diffs = [(a - b) / b for a, b in zip(after[True], after[False])]
    mean = statistics.mean(diffs)
    half = 1.96 * statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else float("nan")
    print(f"\nonnxruntime resnet18 A/A over {SEEDS} rounds of {ORT_WINDOW}: a measurement after a profiling pass "
          f"vs after none: mean latency {mean:+.2%} (95% interval {mean - half:+.2%} .. {mean + half:+.2%}); "
          f"latency {statistics.mean(after[False]) * 1e3:.2f} ms")


#: the concurrency study (Nsight Systems on an Orin Nano, ResNet50 under trtexec): SM active and
#: tensor cores active, in %, by processes
STUDY = {1: ((75, 90), (25, 30)), 2: ((75, 90), (25, 30)), 4: ((75, 90), (15, 20)), 8: ((75, 90), (15, 20))}


def test_concurrency_activity_against_the_study():
    from pytest_jetson.sim.prediction import predict

    rows = []
    for processes, (sm, tensor) in STUDY.items():
        for precision in ("int8", "fp16", "tf32"):
            p = predict("orin-nano", "resnet50", precision, 1, processes=processes)
            rows.append((processes, precision) + tuple(100 * x for x in (p.sm_active, p.tensor_active, p.issue_active, p.gpu_util)))
        got = [r for r in rows if r[0] == processes]
        print(f"\n{processes} process(es): SM active {min(r[2] for r in got):.0f}-{max(r[2] for r in got):.0f}% "
              f"(study {sm[0]}-{sm[1]}%), tensor {min(r[3] for r in got):.0f}-{max(r[3] for r in got):.0f}% "
              f"(study {tensor[0]}-{tensor[1]}%), issue {min(r[4] for r in got):.0f}-{max(r[4] for r in got):.0f}%, "
              f"GPU util {min(r[5] for r in got):.0f}-{max(r[5] for r in got):.0f}%")
    assert all(0 <= r[3] <= 50 for r in rows)  # the study: tensor cores never above 50%


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
