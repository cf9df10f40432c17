"""``pytest-jetson explain``: a test's per-layer diff, sorted by contribution, and TREx files."""

import contextlib
import json

import pytest
from fakes.sim_causes import fp32_layer, reformat_after, widened

from pytest_jetson.cli import main
from pytest_jetson.engines.layer_profile import LayerProfile, LayerTime
from pytest_jetson.engines.simulated import SimulatedEngine
from pytest_jetson.gate.entries import make_entry
from pytest_jetson.report import jsonreport
from pytest_jetson.report.trex import FORMATS
from pytest_jetson.run.harness import measure

LAYER = "layer3.1.conv2 + layer3.1.bn2 + layer3.1.relu2"
KEY = "test_r50.py::test_r50"


def _measured(cause=None, model="resnet50"):
    with cause or contextlib.nullcontext():
        return measure(SimulatedEngine(model, "orin-nano", "int8", 8, seed=0), duration="0.5s", warmup="0s")


def _report(path, m, baseline_file=None):
    doc = {"kind": jsonreport.KIND, "schema": jsonreport.SCHEMA,
           "tests": [{"nodeid": KEY, "measurements": [dict(m.to_dict(), key=KEY)], "baseline_file": baseline_file}]}
    path.write_text(json.dumps(doc))
    return str(path)


def _baseline(path, m):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schema": 2, "device": "orin-nano-8gb",
                                "entries": {KEY: make_entry(m, {"device": "orin-nano-8gb"})}}))
    return str(path)


def _explain(capsys, monkeypatch, *args):
    monkeypatch.setenv("COLUMNS", "100")
    rc = main(["explain", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def _first_row(out):
    lines = out.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.strip() and not line.strip(" -"))
    return lines[rule + 1]


@pytest.mark.parametrize("cause,first", [
    (fp32_layer, ("layer3.1.conv2", "int8 -> fp32")),
    (reformat_after, ("Reformatting", "(int8 to fp32)")),
    (widened, ("layer3.1.conv2 + layer3.1.bn2 + layer3.1.relu2", "int8")),
])
def test_the_injected_cause_comes_first_against_a_report_and_a_baseline(tmp_path, capsys, monkeypatch, cause, first):
    base = _measured()
    now = _report(tmp_path / "now.json", _measured(cause("resnet50", LAYER)))
    for other in (_report(tmp_path / "base.json", base), _baseline(tmp_path / "b" / "x.json", base)):
        rc, out, _ = _explain(capsys, monkeypatch, now, other)
        assert rc == 0
        row = _first_row(out)
        assert row.split()[0] == "1" and all(part in row for part in first)
        assert all(len(line) <= 100 for line in out.splitlines() if "against" not in line)  # a path may not


def test_without_base_the_report_s_own_baseline_file_is_used(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _baseline(tmp_path / "baselines" / "orin-nano-8gb" / "test_r50.py.json", _measured())
    now = _report(tmp_path / "now.json", _measured(fp32_layer("resnet50", LAYER)),
                  "baselines/orin-nano-8gb/test_r50.py.json")
    rc, out, _ = _explain(capsys, monkeypatch, now)
    assert rc == 0 and "against baselines/orin-nano-8gb/test_r50.py.json" in out
    assert "int8 -> fp32" in _first_row(out)
    assert "reformats 2 -> 4" in out


def test_a_baseline_without_structure_says_so_and_lists_the_profile(tmp_path, capsys, monkeypatch):
    base = _measured()
    base.profile = None
    rc, out, _ = _explain(capsys, monkeypatch, _report(tmp_path / "now.json", _measured()),
                          _baseline(tmp_path / "b.json", base))
    assert rc == 0 and "keeps no engine structure" in out and "--jetson-update-baselines" in out
    assert "all layers:" in out and "share" in out


def test_a_measurement_without_a_profile_gets_a_note(tmp_path, capsys, monkeypatch):
    m = _measured()
    m.profile = LayerProfile("onnxruntime", notes=["no per-layer profile: the profiler wrote no trace"])
    rc, out, _ = _explain(capsys, monkeypatch, _report(tmp_path / "now.json", m))
    assert rc == 0 and "no per-layer profile: the profiler wrote no trace" in out


def test_renamed_layers_are_matched_by_structure_and_said(tmp_path, capsys, monkeypatch):
    base = _measured()
    now = _measured(widened("resnet50", LAYER))
    now.profile = LayerProfile(now.profile.source, [LayerTime("/m/" + x.name, x.type, x.precision, x.time)
                                                    for x in now.profile.layers])
    rc, out, _ = _explain(capsys, monkeypatch, _report(tmp_path / "now.json", now),
                          _report(tmp_path / "base.json", base))
    assert "/m/layer3.1.conv2" in _first_row(out)
    assert "matched the baseline's by structure" in " ".join(out.split())


def test_bad_input_is_named_with_exit_status_2(tmp_path, capsys, monkeypatch):
    now = _report(tmp_path / "now.json", _measured())
    assert _explain(capsys, monkeypatch, now, "-k", "nothing")[0] == 2
    (tmp_path / "x.json").write_text("[1, 2]")
    rc, _, err = _explain(capsys, monkeypatch, now, str(tmp_path / "x.json"))
    assert rc == 2 and "neither a JSON report" in err
    rc, _, err = _explain(capsys, monkeypatch, str(tmp_path / "missing.json"))
    assert rc == 2 and "does not exist" in err


def test_trex_files_have_the_shapes_the_engine_explorer_reads(tmp_path, capsys, monkeypatch):
    base = _measured()
    now = _measured(reformat_after("resnet50", LAYER))
    rc, out, _ = _explain(capsys, monkeypatch, _report(tmp_path / "now.json", now),
                          _report(tmp_path / "base.json", base), "--trex", str(tmp_path / "trex"))
    assert rc == 0
    files = sorted(p.name for p in (tmp_path / "trex").iterdir())
    assert files == ["test_r50.py_test_r50.base.graph.json", "test_r50.py_test_r50.base.profile.json",
                     "test_r50.py_test_r50.graph.json", "test_r50.py_test_r50.profile.json"]
    graph = json.loads((tmp_path / "trex" / files[2]).read_text())
    profile = json.loads((tmp_path / "trex" / files[3]).read_text())
    # what trex.parser and trex.layer read: Layers of dicts with Name, LayerType, Inputs, Outputs
    # (activations with Name, Dimensions and a known Format/Datatype), Bindings naming tensors
    layers = graph["Layers"]
    assert isinstance(layers[0], dict) and len(layers) == len(now.profile.layers)
    tensors = {t["Name"] for x in layers for t in x["Inputs"] + x["Outputs"]}
    assert set(graph["Bindings"]) <= tensors
    for x in layers:
        for t in x["Inputs"] + x["Outputs"]:
            assert t["Format/Datatype"] in FORMATS.values() and all(d > 0 for d in t["Dimensions"])
    # trtexec --exportProfile: a count, then rows of 5 fields in the graph's order (TREx joins by it)
    assert profile[0] == {"count": 1}
    rows = [r for r in profile if len(r) in (4, 5)]
    assert [r["name"] for r in rows] == [x["Name"] for x in layers]
    assert sum(r["percentage"] for r in rows) == pytest.approx(100.0)
    assert sum(r["averageMs"] for r in rows) == pytest.approx(now.profile.total * 1e3, rel=1e-3)
