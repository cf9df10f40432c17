"""Stages in baseline entries: recorded with their own metrics and samples, read back as the gate's
reference, merged and pooled like the whole's, and a damaged stage is a clear error. Entries
without stages stay as they were, byte for byte."""

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_jetson.errors import BaselineError
from pytest_jetson.gate import baseline
from pytest_jetson.gate.bounds import stage_metrics
from pytest_jetson.gate.merge import merge_entry, metric_count, needs_write
from pytest_jetson.run.measurement import Measurement

FP = {"device": "orin-nano-8gb", "power_mode": "15W", "simulated": True, "precision": "fp16", "batch": 1}
REPO_BASELINES = Path(__file__).resolve().parents[2] / "baselines"


def pipeline(post=1.0, seed=0, n=1500, stages=("pre", "infer", "post")):
    rng = np.random.default_rng(seed)
    means = {"pre": 0.002, "infer": 0.006, "post": 0.004 * post}
    parts = {s: means[s] * rng.lognormal(0, 0.05, n) for s in stages}
    lat = [float(x) for x in sum(parts.values()) + 0.0005]
    m = Measurement(name="p", batch=1, latencies=lat, duration=float(sum(lat)), items=n, precision="fp16")
    m.stages = {s: Measurement(name=s, batch=1, latencies=[float(x) for x in v], duration=m.duration,
                               items=n, precision="fp16") for s, v in parts.items()}
    return m


def write(tmp_path, entries, name="test_x.py.json"):
    path = tmp_path / name
    baseline.write_baseline(path, {"schema": baseline.SCHEMA, "device": "orin-nano-8gb", "entries": entries})
    return path


def test_an_entry_records_each_stage_with_the_metrics_of_a_stage():
    entry = baseline.make_entry(pipeline(), FP)
    assert sorted(entry["stages"]) == ["infer", "post", "pre"]
    post = entry["stages"]["post"]
    assert sorted(post["metrics"]) == sorted(stage_metrics())
    assert post["metrics"]["latency_mean"]["value"] == pytest.approx(0.004, rel=0.01)
    assert len(post["samples"]["latency"]) == baseline.SAMPLE_POINTS
    assert "throughput" in entry["metrics"] and "throughput" not in post["metrics"]


def test_an_entry_without_stages_has_no_stages_field():
    m = pipeline()
    m.stages = {}
    assert "stages" not in baseline.make_entry(m, FP)


def test_stages_round_trip_through_a_file_as_the_gate_reads_them(tmp_path):
    entry = baseline.make_entry(pipeline(), FP)
    path = write(tmp_path, {"k": entry})
    text = path.read_text()
    # one line per stage metric and per sample, like the whole's: a re-recording changes few lines
    assert '\n        "post": {\n          "metrics": {\n            "latency_max": {' in text
    assert '\n            "latency": [' in text
    stored = baseline.read_file(path)["entries"]["k"]
    assert stored == json.loads(json.dumps(entry))
    assert baseline.dump_baseline(baseline.read_file(path)) == text
    ref = baseline.entry_ref(stored, file="f.json", key="k")
    post = ref.stages["post"]
    assert post.metrics["latency_mean"].value == entry["stages"]["post"]["metrics"]["latency_mean"]["value"]
    assert post.metrics["latency_p99"].sample and post.metrics["latency_mean"].se_log
    assert (post.fingerprint, post.file, post.key) == (ref.fingerprint, "f.json", "k")
    assert baseline.entry_ref(baseline.make_entry(Measurement("m", 1, [0.01] * 50, 0.5, 50), FP)).stages == {}


@pytest.mark.parametrize("path", sorted(REPO_BASELINES.rglob("*.json")), ids=lambda p: p.parent.name)
def test_the_project_baselines_are_written_byte_for_byte_as_they_are(path):
    """With stages (the SSD300 pipeline's) or without: reading and writing a file changes nothing."""
    doc = baseline.read_file(path)
    if doc["schema"] == baseline.SCHEMA:
        assert baseline.dump_baseline(doc) == path.read_text(encoding="utf-8")


def test_re_recording_an_unchanged_pipeline_changes_nothing():
    old = baseline.make_entry(pipeline(seed=1), FP)
    assert merge_entry(old, baseline.make_entry(pipeline(seed=1), FP)) is None
    assert not needs_write(old, baseline.make_entry(pipeline(seed=1), FP))


def test_a_stage_that_moved_is_rewritten_alone():
    old = baseline.make_entry(pipeline(seed=1), FP, recorded="2026-01-01T00:00:00Z")
    new = baseline.make_entry(pipeline(post=1.5, seed=1), FP, recorded="2026-02-01T00:00:00Z")
    merged = merge_entry(old, new)
    assert merged is not None and merged["recorded"] == "2026-02-01T00:00:00Z"
    assert merged["stages"]["post"]["metrics"]["latency_mean"] == new["stages"]["post"]["metrics"]["latency_mean"]
    assert merged["stages"]["post"]["samples"] == new["stages"]["post"]["samples"]
    assert merged["stages"]["infer"] == old["stages"]["infer"]  # the same seed: unchanged, kept
    assert merged["stages"]["pre"] == old["stages"]["pre"]


def test_a_new_stage_is_added_and_a_stage_not_recorded_is_kept():
    old = baseline.make_entry(pipeline(seed=1, stages=("pre", "infer")), FP)
    new = baseline.make_entry(pipeline(seed=1, stages=("infer", "post")), FP)
    merged = merge_entry(old, new)
    assert sorted(merged["stages"]) == ["infer", "post", "pre"]
    assert merged["stages"]["post"] == new["stages"]["post"]
    assert merged["stages"]["pre"] == old["stages"]["pre"]


def test_the_rewrite_level_counts_stage_metrics():
    entry = baseline.make_entry(pipeline(), FP)
    assert metric_count(entry) == len(entry["metrics"]) + 3 * len(stage_metrics())


def test_pooled_recordings_pool_each_stage():
    a = baseline.make_entry(pipeline(seed=1), FP)
    b = baseline.make_entry(pipeline(post=1.02, seed=2), FP)
    pooled = baseline.pool_entries([a, b])
    post = pooled["stages"]["post"]["metrics"]["latency_mean"]
    assert post["runs"] == 2 and post["between"] > 0
    va, vb = (e["stages"]["post"]["metrics"]["latency_mean"]["value"] for e in (a, b))
    assert post["value"] == pytest.approx((va * vb) ** 0.5, rel=1e-3)


GOOD_METRIC = {"value": 0.004, "n": 100, "se_log": 0.001, "df": 9}


@pytest.mark.parametrize("stages, fragment", [
    ([1, 2], "'stages' must be an object of stage name to its 'metrics' and 'samples', got [1, 2] (list)"),
    ({"post": 3}, "stage 'post': 'metrics' must be an object of metric name to numbers, got 3 (int)"),
    ({"post": {"samples": {}}}, "stage 'post': 'metrics' must be an object of metric name to numbers, got None"),
    ({"post": {"metrics": []}}, "stage 'post': 'metrics' must be an object"),
    ({"post": {"metrics": {"latency_mean": {"value": "fast"}}}},
     "stage 'post': metric 'latency_mean': 'value' must be a finite number of magnitude at most 1e+15, got 'fast' (str)"),
    ({"post": {"metrics": {"latency_mean": dict(GOOD_METRIC, n=0)}}}, "stage 'post': metric 'latency_mean': 'n'"),
    ({"post": {"metrics": {"latency_mean": GOOD_METRIC}, "samples": [1]}},
     "stage 'post': 'samples' must be an object of sample name to a list of numbers"),
    ({"post": {"metrics": {"latency_mean": GOOD_METRIC}, "samples": {"latency": [0.1, "x"]}}},
     "stage 'post': sample 'latency' must be a list of finite numbers"),
    ({" ": {"metrics": {}}}, "a stage name must be a non-empty string"),
])
def test_a_damaged_stage_is_a_baseline_error_naming_the_file_entry_and_field(tmp_path, stages, fragment):
    entry = baseline.make_entry(pipeline(), FP)
    entry["stages"] = stages
    path = tmp_path / "test_x.py.json"
    path.write_text(json.dumps({"schema": 2, "device": "orin-nano-8gb", "entries": {"k": entry}}))
    with pytest.raises(BaselineError) as info:
        baseline.read_file(path)
    msg = str(info.value)
    assert msg.startswith(f"baseline file {path}, entry 'k': ")
    assert fragment in msg and "--jetson-update-baselines" in msg


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=12)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stages=st.one_of(JSON, st.dictionaries(st.text(max_size=5), st.fixed_dictionaries(
    {"metrics": st.dictionaries(st.sampled_from(stage_metrics()), JSON, max_size=2)},
    optional={"samples": JSON}), max_size=2)))
def test_any_stages_field_reads_or_is_a_baseline_error(tmp_path, stages):
    entry = {"fingerprint": FP, "metrics": {"latency_mean": GOOD_METRIC}, "stages": stages}
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps({"schema": 2, "device": "x", "entries": {"k": entry}}))
    try:
        doc = baseline.read_file(path)
    except BaselineError as exc:
        assert str(exc).startswith(f"baseline file {path}")
        return
    ref = baseline.entry_ref(doc["entries"]["k"])  # what reads cleanly, the gate can use
    assert set(ref.stages) == set(stages or {})
