"""The verdict says where, layer by layer: a profile against the structure its baseline keeps."""

import json

import pytest
from fakes.sim_causes import fp32_layer, reformat_after, widened

from pytest_jetson.engines.layer_profile import LayerProfile, LayerTime, structure
from pytest_jetson.engines.simulated import SimulatedEngine
from pytest_jetson.errors import BaselineError
from pytest_jetson.gate.attribution import Where, layer_where, where
from pytest_jetson.gate.entries import entry_ref, make_entry
from pytest_jetson.gate.entry_schema import validate_entry
from pytest_jetson.gate.merge import merge_entry
from pytest_jetson.report.render import layer_texts, where_lines
from pytest_jetson.run.harness import measure

R50 = "layer3.1.conv2 + layer3.1.bn2 + layer3.1.relu2"
YOLO = "model.2.m.0.cv1.conv + model.2.m.0.cv1.bn + model.2.m.0.cv1.act.sigmoid + model.2.m.0.cv1.act"


def _profile(model="resnet50", batch=8):
    return SimulatedEngine(model, "orin-nano", "int8", batch, seed=0).layer_profile(batch)


@pytest.mark.parametrize("model,layer", [("resnet50", R50), ("yolov8n", YOLO)])
def test_each_injected_cause_is_named_first(model, layer):
    base = structure(_profile(model))
    with fp32_layer(model, layer):
        lw = layer_where(_profile(model), base)
    first = lw.layers[0]
    assert (first.name, first.status, first.baseline_precision, first.precision) == (layer, "precision", "int8", "fp32")
    assert lw.precision_changes[0] == [layer, "int8", "fp32"] and lw.graph_changed

    with reformat_after(model, layer):
        lw = layer_where(_profile(model), base)
    first = lw.layers[0]
    assert first.status == "added" and first.type == "Reformat" and layer in first.name
    assert lw.reformats == (base["reformats"], base["reformats"] + 1)

    with widened(model, layer):
        lw = layer_where(_profile(model), base)
    assert lw.layers[0].name == layer and lw.layers[0].status == "moved" and lw.layers[0].change > 0
    assert not lw.graph_changed  # the same layers, in the same precisions


def test_the_same_engine_moves_no_layer():
    lw = layer_where(_profile(), structure(_profile()))
    assert not lw.graph_changed and not [x for x in lw.layers if x.moved]
    assert layer_texts(lw) == []


def _renamed(p, prefix="/model/"):
    return LayerProfile(p.source, [LayerTime(prefix + x.name, x.type, x.precision, x.time, size=x.size)
                                   for x in p.layers])


def test_renamed_layers_match_by_structure_where_the_baseline_keeps_every_layer():
    base = structure(_profile())  # 58 layers: all kept
    with widened("resnet50", R50):
        lw = layer_where(_renamed(_profile()), base)
    assert lw.layers[0].name == "/model/" + R50 and lw.layers[0].matched == "structure"
    assert lw.layers[0].baseline_name == R50
    assert "renamed" in lw.notes[0]


def test_renamed_layers_are_said_not_guessed_where_the_baseline_keeps_only_its_slowest():
    base = structure(_profile("yolov8n"))
    assert len(base["rows"]) < base["layers"]
    lw = layer_where(_renamed(_profile("yolov8n")), base)
    assert lw.layers == [] and "renamed" in lw.notes[0] and "not compared" in lw.notes[0]


def test_a_layer_the_baseline_knows_only_by_name_is_neither_new_nor_compared():
    base = structure(_profile("yolov8n"))
    lw = layer_where(_profile("yolov8n"), base)
    assert not [x for x in lw.layers if x.moved] and lw.fused_differently == 0


def test_the_where_lines_fit_100_columns_and_name_the_cause():
    base = structure(_profile())
    with fp32_layer("resnet50", R50):
        lw = layer_where(_profile(), base)
    w = Where("test_x.py::test_r50", 1.0, 0.9, layers=lw)
    lines = where_lines(type("R", (), {"where": [w]})())
    assert all(len(line) <= 100 for line in lines)
    text = " ".join(" ".join(lines).split())
    assert text.startswith(f"layers: {R50} +")
    assert "(int8 -> fp32)" in text and "reformats 2 -> 4" in text
    back = Where.from_dict(json.loads(json.dumps(w.to_dict())))
    assert back.layers.to_dict() == lw.to_dict()


def _measured(engine):
    return measure(engine, duration="0.5s", warmup="0s")


def test_a_baseline_entry_keeps_the_structure_and_the_gate_reads_it_back(tmp_path):
    m = _measured(SimulatedEngine("resnet50", "orin-nano", "int8", 8, seed=0))
    entry = json.loads(json.dumps(make_entry(m, {"device": "orin-nano"})))
    validate_entry(tmp_path / "b.json", "k", entry, 2)
    s = entry["structure"]
    assert s["layers"] == len(m.profile.layers) and s["digest"] == m.profile.digest
    assert "profile" not in entry["metrics"]
    assert entry_ref(entry).structure == s
    with fp32_layer("resnet50", R50):
        slow = _measured(SimulatedEngine("resnet50", "orin-nano", "int8", 8, seed=0))
    found = where(slow, entry_ref(entry), "k")
    assert found.layers.layers[0].name == R50 and found.stages == []


def test_an_entry_without_a_profile_has_no_structure_and_a_bad_one_is_named(tmp_path):
    m = _measured(SimulatedEngine("resnet18", "orin-nano", "fp16", 1, seed=0))
    m.profile = None
    assert "structure" not in make_entry(m, {})
    entry = make_entry(_measured(SimulatedEngine("resnet18", "orin-nano", "fp16", 1, seed=0)), {})
    entry["structure"]["rows"][0] = ["conv1", "Convolution", 16, 1e-4]
    with pytest.raises(BaselineError, match=r"entry 'k': a structure row must be \[name, type, precision"):
        validate_entry(tmp_path / "b.json", "k", entry, 2)


def test_re_recording_rewrites_the_structure_only_when_the_graph_changed():
    m = _measured(SimulatedEngine("resnet50", "orin-nano", "int8", 8, seed=0))
    old = make_entry(m, {"device": "orin-nano"})
    assert merge_entry(old, make_entry(m, {"device": "orin-nano"})) is None
    bare = {k: v for k, v in old.items() if k != "structure"}
    assert merge_entry(bare, old)["structure"] == old["structure"]
    with reformat_after("resnet50", R50):
        changed = make_entry(_measured(SimulatedEngine("resnet50", "orin-nano", "int8", 8, seed=0)),
                             {"device": "orin-nano"})
    assert merge_entry(old, changed)["structure"]["reformats"] == 3


SUITE = '''
import contextlib
import os
import pytest
from fakes.sim_causes import fp32_layer

LAYER = "layer3.1.conv2 + layer3.1.bn2 + layer3.1.relu2"

@pytest.mark.perf(latency_mean="5%")
def test_r50(trt_engine, perf):
    cause = fp32_layer("resnet50", LAYER) if os.environ.get("INJECT_FP32") else contextlib.nullcontext()
    with cause:
        perf.measure(trt_engine("resnet50", precision="int8", batch=8), duration="2s")
'''


def test_a_failing_test_names_the_layer_first_in_its_report_markdown_and_json(pytester, monkeypatch):
    pytester.syspathinsert(str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    pytester.makepyfile(test_r50=SUITE)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("INJECT_FP32", raising=False)
    args = ("--jetson-device", "orin-nano", "-p", "no:cacheprovider")
    pytester.runpytest(*args, "--jetson-update-baselines").assert_outcomes(passed=1)
    doc = json.loads((pytester.path / "baselines" / "orin-nano-8gb" / "test_r50.py.json").read_text())
    entry = doc["entries"]["test_r50.py::test_r50"]
    assert entry["structure"]["layers"] == 58 and entry["structure"]["reformats"] == 2
    pytester.runpytest(*args).assert_outcomes(passed=1)

    monkeypatch.setenv("INJECT_FP32", "1")
    r = pytester.runpytest(*args, "--jetson-report-json", "r.json", "--jetson-report-md", "r.md")
    r.assert_outcomes(failed=1)
    out = r.stdout.str()
    start = out.index("layers: ")
    assert out[start:].startswith("layers: layer3.1.conv2 + layer3.1.bn2 + layer3.1.relu2 +")
    assert "reformats 2 -> 4" in " ".join(out.split())
    where = json.loads((pytester.path / "r.json").read_text())["tests"][0]["where"][0]
    assert where["layers"]["layers"][0]["status"] == "precision"
    assert "layers: layer3.1.conv2" in (pytester.path / "r.md").read_text()
