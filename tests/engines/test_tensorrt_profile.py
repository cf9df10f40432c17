"""TensorRT's per-layer profile: an ``IProfiler`` on an execution context of its own after the
timed window, the engine inspector's layers (built with ``ProfilingVerbosity.DETAILED``), and a
note, never a failed test, where either says less.

Against the version-exact fake (tests/fakes/fake_tensorrt.py). What these cannot show without a
board: TensorRT's real layer names, fusions, formats and tactics, and that the profiled context
leaves the timed one's figures alone on a real GPU (the fake's kernels cost a fixed time).
"""

import json
import struct

import pytest
from fakes import fake_tensorrt
from fakes.onnx_models import conv_onnx

from pytest_jetson.engines import cache as plan_cache
from pytest_jetson.engines import open_engine
from pytest_jetson.engines import tensorrt_build as tb
from pytest_jetson.engines.layer_profile import REFORMAT, structure
from pytest_jetson.engines.tensorrt_run import PROFILE_RUNS
from pytest_jetson.run.harness import measure

pytestmark = pytest.mark.usefixtures("fresh_trt_process")  # tests/engines/conftest.py

#: The Developer Guide's example of one layer of the inspector's DETAILED JSON (TensorRT
#: Developer Guide, "Engine Inspector"), inside the "Layers" list get_engine_information returns.
GUIDE_LAYER = {
    "Name": "node_of_gpu_0/res4_0_branch2a_1 + node_of_gpu_0/res4_0_branch2a_bn_1 + node_of_gpu_0/res4_0_branch2a_bn_2",
    "LayerType": "CaskConvolution",
    "Inputs": [{"Name": "gpu_0/res3_3_branch2c_bn_3", "Dimensions": [16, 512, 28, 28],
                "Format/Datatype": "Thirty-two wide channel vectorized row major Int8 format."}],
    "Outputs": [{"Name": "gpu_0/res4_0_branch2a_bn_2", "Dimensions": [16, 256, 28, 28],
                 "Format/Datatype": "Thirty-two wide channel vectorized row major Int8 format."}],
    "ParameterType": "Convolution", "Kernel": [1, 1], "PaddingMode": "kEXPLICIT_ROUND_DOWN",
    "PrePadding": [0, 0], "PostPadding": [0, 0], "Stride": [1, 1], "Dilation": [1, 1], "OutMaps": 256,
    "Groups": 1, "Weights": {"Type": "Int8", "Count": 131072}, "Bias": {"Type": "Float", "Count": 256},
    "AllowSparse": 0, "Activation": "RELU", "HasBias": 1, "HasReLU": 1,
    "TacticName": "sm80_xmma_fprop_implicit_gemm_interleaved_i8i8_i8i32_f32_nchw_vect_c_32kcrs_vect_c_32_nchw_vect_"
                  "c_32_tilesize256x128x64_stage4_warpsize4x2x1_g1_tensor16x8x32_simple_t1r1s1_epifadd",
    "TacticValue": "0x11bde0e1d9f2f35d",
}
#: The same layer at kLAYER_NAMES_ONLY (the guide's other example): its name alone
GUIDE_NAMES_ONLY = GUIDE_LAYER["Name"]


def _open(path, tmp_path, **kw):
    kw.setdefault("precision", "fp16")
    kw.setdefault("cache_dir", tmp_path / "plans")
    kw.setdefault("device", None)
    return open_engine(path, backend="tensorrt", **kw)


def test_the_guides_detailed_layer_reduces_to_type_precision_format_and_tactic():
    layers, note = tb.reduce_inspector({"Layers": [GUIDE_LAYER], "Bindings": []})
    assert note is None
    (x,) = layers
    assert x.name == GUIDE_LAYER["Name"] and x.type == "Convolution" and x.precision == "int8"
    assert x.format == "Thirty-two wide channel vectorized row major Int8"
    assert x.tactic.startswith("sm80_xmma_fprop") and x.size == 256 * 28 * 28


def test_names_only_is_a_note_naming_the_fix():
    layers, note = tb.reduce_inspector({"Layers": [GUIDE_NAMES_ONLY], "Bindings": []})
    assert [x.name for x in layers] == [GUIDE_NAMES_ONLY] and layers[0].type == ""
    assert "without detailed layer information" in note and "--profilingVerbosity=detailed" in note
    assert tb.reduce_inspector({"Layers": []})[1] and tb.reduce_inspector("not json")[1]


@pytest.mark.parametrize("version", ["8.5.2", "10.3.0", "10.13.3"])
def test_a_profile_of_every_layer_beside_the_measurement_from_a_context_of_its_own(monkeypatch, tmp_path, version):
    trt = fake_tensorrt.install(monkeypatch, version=version)
    engine = _open(conv_onnx(tmp_path / "net.onnx"), tmp_path, batch=2)
    contexts = fake_tensorrt.LOG["contexts"]
    m = measure(engine, iterations=20, warmup=0)
    engine.close()
    assert m.iterations == 20  # the profiling pass is no part of the window
    # built with detailed layer information, which keys the plan cache
    assert fake_tensorrt.LOG["configs"][-1].profiling_verbosity == trt.ProfilingVerbosity.DETAILED
    # a second context, profiled PROFILE_RUNS times; the timed one never had a profiler
    assert fake_tensorrt.LOG["contexts"] == contexts + 1
    assert fake_tensorrt.LOG["profiled_enqueues"] == PROFILE_RUNS
    p = m.profile
    assert p.source == "tensorrt" and p.runs == PROFILE_RUNS and not p.notes
    # fp16 engine, fp32 input: TensorRT's input reformat first, then the network's layers
    assert p.layers[0].type == REFORMAT and p.layers[0].name.startswith("Reformatting CopyNode")
    convs = [x for x in p.layers if x.type == "Convolution"]
    assert convs and all(x.precision == "fp16" and x.tactic and x.format for x in convs)
    # the fake's kernel costs COMPUTE_MS_PER_ITEM per item, shared by the layers
    assert p.total == pytest.approx(fake_tensorrt.COMPUTE_MS_PER_ITEM * 2e-3)
    assert sum(x.share for x in p.layers) == pytest.approx(1.0)
    s = structure(p)
    assert s["reformats"] == 1 and s["precisions"]["fp16"] == len(p.layers)
    assert sum(s["formats"].values()) == len(p.layers)


def _header(engine):
    data = engine.plan_path.read_bytes()
    off = len(plan_cache.MAGIC)
    (n,) = struct.unpack(">I", data[off:off + 4])
    return json.loads(data[off + 4:off + 4 + n])


def _key(engine):
    h = _header(engine)
    return plan_cache.PlanKey(h["onnx_sha256"], h["tensorrt"], h["module"], h["sm_count"],
                              h["compute_capability"], h["options"])


def test_the_plan_cache_keys_on_the_profiling_verbosity(monkeypatch, tmp_path):
    fake_tensorrt.install(monkeypatch)
    engine = _open(conv_onnx(tmp_path / "net.onnx"), tmp_path, batch=2)
    engine.close()
    assert _header(engine)["options"]["profiling_verbosity"] == "DETAILED"
    opened = engine.plan_path.name
    monkeypatch.setattr(tb, "PROFILING_VERBOSITY", "LAYER_NAMES_ONLY")
    again = _open(conv_onnx(tmp_path / "net.onnx"), tmp_path, batch=2)
    again.close()
    assert again.plan_path.name != opened  # a plan built with less detail is not reused


def _names_only_plan(monkeypatch, tmp_path):
    """A plan file as one built with TensorRT's default verbosity (layer names only) is."""
    fake_tensorrt.install(monkeypatch)
    engine = _open(conv_onnx(tmp_path / "net.onnx"), tmp_path, batch=2)
    plan = plan_cache.decode(engine.plan_path.read_bytes(), _key(engine))
    engine.close()
    doc = json.loads(plan[len(b"FAKEPLAN"):])
    doc["verbosity"] = "LAYER_NAMES_ONLY"
    path = tmp_path / "names-only.engine"
    path.write_bytes(b"FAKEPLAN" + json.dumps(doc).encode())
    return path


def test_a_plan_built_without_detailed_information_still_profiles_with_a_note(monkeypatch, tmp_path):
    path = _names_only_plan(monkeypatch, tmp_path)
    engine = _open(path, tmp_path, batch=2)
    m = measure(engine, iterations=5, warmup=0)
    engine.close()
    p = m.profile
    assert p.source == "tensorrt" and p.layers and all(x.time > 0 for x in p.layers)
    assert all(x.precision == "" and x.tactic is None for x in p.layers)
    assert any("without detailed layer information" in n for n in p.notes)


def test_the_binding_index_api_says_why_there_is_no_profile(monkeypatch, tmp_path):
    fake_tensorrt.install(monkeypatch, version="8.2.1")
    engine = _open(conv_onnx(tmp_path / "net.onnx"), tmp_path, batch=2)
    m = measure(engine, iterations=5, warmup=0)
    engine.close()
    assert m.iterations == 5 and not m.profile.layers
    assert "binding-index API" in m.profile.notes[0] and "--separateProfileRun" in m.profile.notes[0]


def test_a_profiling_pass_that_fails_is_a_note_and_the_measurement_stands(monkeypatch, tmp_path):
    fake_tensorrt.install(monkeypatch)
    engine = _open(conv_onnx(tmp_path / "net.onnx"), tmp_path, batch=2)
    monkeypatch.setattr(fake_tensorrt.ICudaEngine, "create_execution_context", lambda self: None)
    m = measure(engine, iterations=5, warmup=0)
    engine.close()
    assert m.iterations == 5 and not m.profile.layers
    assert "second execution context" in m.profile.notes[0]


def _profiled(monkeypatch, tmp_path):
    fake_tensorrt.install(monkeypatch)
    engine = _open(conv_onnx(tmp_path / "net.onnx"), tmp_path, batch=2)
    p = engine.layer_profile(2)
    engine.close()
    return p


def test_a_layer_that_runs_another_tactic_is_named_against_the_baseline(monkeypatch, tmp_path):
    from pytest_jetson.gate.attribution import layer_where

    p = _profiled(monkeypatch, tmp_path)
    base = structure(p)
    assert len(base["tactics"]) == 6 * len(base["rows"])  # hashed: the names are long
    conv = next(x for x in p.layers if x.type == "Convolution")
    conv.tactic = "sm87_xmma_fprop_implicit_gemm_f16f16_f16f32_nhwckrsc_nhwc_tilesize64x64x64"
    lw = layer_where(p, base)
    assert lw.tactic_changes == [[conv.name, conv.tactic]]
    assert any("another tactic" in n and conv.name in n for n in lw.notes)
    assert not lw.graph_changed  # a tactic is no part of the graph's digest
    assert layer_where(_profiled(monkeypatch, tmp_path), base).tactic_changes == []


def test_layers_renamed_by_a_re_export_match_the_baseline_by_structure(monkeypatch, tmp_path):
    from pytest_jetson.gate.attribution import layer_where

    p = _profiled(monkeypatch, tmp_path)
    base = structure(p)
    for x in p.layers:
        x.name = "renamed/" + x.name
    lw = layer_where(p, base)
    assert {x.matched for x in lw.layers} == {"structure"}
    assert any("matched the baseline's by structure" in n for n in lw.notes)


def test_trex_files_carry_tensorrts_own_formats_and_tactics(monkeypatch, tmp_path):
    from pytest_jetson.report import trex

    p = _profiled(monkeypatch, tmp_path)
    graph, profile = (json.loads(f.read_text()) for f in trex.write(tmp_path / "trex", "t", p, batch=2))
    conv = next(x for x in graph["Layers"] if x["LayerType"] == "Convolution")
    assert conv["Outputs"][0]["Format/Datatype"].startswith("Channel major FP16")
    assert conv["TacticName"].startswith("fake_fp16_conv")
    assert profile[0] == {"count": PROFILE_RUNS} and len(profile) == 1 + len(graph["Layers"])
