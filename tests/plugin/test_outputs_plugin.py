"""perf.check_outputs as a user meets it: right answers checked beside the perf bounds, against
onnxruntime or golden files recorded beside the baselines; skipped, and said so, where the
simulated device computes nothing."""

import json
import xml.etree.ElementTree as ET

import pytest

pytest.importorskip("onnxruntime")

MODEL = '''
import os

import numpy as np
import onnx
from onnx import TensorProto, helper


def make(path, scale=2.0, classes=10):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", classes])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])
    s = helper.make_tensor("s", TensorProto.FLOAT, [1], [scale])
    graph = helper.make_graph([helper.make_node("Mul", ["x", "s"], ["logits"])], "g", [x], [y], [s])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    # each xdist worker writes it: atomically, so no worker opens another's half-written file
    onnx.save(model, f"{path}.{os.getpid()}")
    os.replace(f"{path}.{os.getpid()}", path)
    return path
'''

SUITE = '''
import numpy as np
import pytest
from model import make


@pytest.mark.perf(latency_p50="<= 10 s")
def test_engine_matches_onnxruntime(trt_engine, perf):
    engine = trt_engine(make("m.onnx"), precision="fp32")
    perf.measure(engine, iterations=5, warmup=0)
    perf.check_outputs(engine)


@pytest.mark.perf(latency_p50="<= 10 s")
def test_pipeline_differs(trt_engine, perf):
    engine = trt_engine(make("m.onnx"), precision="fp32")
    x = np.arange(10, dtype=np.float32)[None]
    perf.measure(engine, iterations=5, warmup=0)
    out = engine(x)
    out["logits"][0, 7] += 0.5
    perf.check_outputs(out, inputs={"x": x}, model="m.onnx", topk=(3, 1.0), atol=1e-3)


def test_wrong_shape(perf):
    perf.check_outputs({"boxes": np.zeros((1, 100, 4), np.float32)},
                       reference={"boxes": np.zeros((1, 4, 100), np.float32)})
'''

GOLDEN = '''
import os
from model import make


def test_golden(trt_engine, perf):
    engine = trt_engine(make("g.onnx", scale=float(os.environ.get("SCALE", "2.0"))), precision="fp32")
    perf.check_outputs(engine, reference="golden")
'''


def said(result, text):
    """Whether the run's output says ``text`` (however the terminal wrapped it)."""
    return " ".join(text.split()) in " ".join(result.stdout.str().split())


def run(pytester, *args):
    return pytester.runpytest("-p", "no:cacheprovider", "-W", "ignore::UserWarning", *args)


@pytest.fixture
def suite(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    pytester.makepyfile(model=MODEL, test_suite=SUITE, test_golden=GOLDEN)
    return pytester


def test_outputs_are_checked_beside_the_perf_bounds(suite):
    r = run(suite, "test_suite.py", "--jetson-backend", "onnxruntime", "--jetson-report-json", "r.json",
            "--junitxml", "j.xml")
    r.assert_outcomes(passed=1, failed=2)
    r.stdout.fnmatch_lines([
        "*_ test_pipeline_differs _*",
        "output check failed: output 'logits' differs from onnxruntime (CPUExecutionProvider) on m.onnx "
        "(atol 0.001 + rtol 0 x |reference|, top-3 >= 100%)",
        "  1 of 10 elements (10%) out of tolerance; max abs error 0.5 at [[]0, 7] (14.5 vs 14); "
        "max rel error 0.03571 at [[]0, 7]; mean abs error 0.05",
        "  cosine similarity 1 - 9e-05; top-3 agreement 100% (least 100%)",
        "  out of tolerance: elementwise",
        "  shape (1, 10) float32, as the reference",
        "other bounds: latency_p50 '<= 10 s' pass",
        "*_ test_wrong_shape _*",
        "output check failed: output 'boxes' has shape (1, 100, 4) and the reference (1, 4, 100): "
        "not compared (against the given reference)",
    ])
    report = json.loads((suite.path / "r.json").read_text())
    tests = {t["nodeid"].split("::")[1]: t for t in report["tests"]}
    ok = tests["test_engine_matches_onnxruntime"]["verdicts"]
    assert {(v["metric"], v["outcome"]) for v in ok} == {("latency_p50", "pass"), ("outputs:logits", "pass")}
    bad = [v for v in tests["test_pipeline_differs"]["verdicts"] if v["kind"] == "outputs"][0]
    assert bad["reason"] == "outputs_differ" and bad["outputs"]["where_abs"] == [0, 7]
    assert bad["outputs"]["mismatched_share"] == pytest.approx(0.1)
    assert bad["message"].startswith("output 'logits' differs from onnxruntime")
    assert report["summary"]["bounds"]["fail"] == 2
    props = {p.get("name"): p.get("value") for p in ET.parse(str(suite.path / "j.xml")).iter("property")}
    assert props["jetson.outputs:logits.verdict"].startswith("fail outputs_differ")
    # the same across pytest-xdist workers: the checks travel with their verdicts
    r = run(suite, "test_suite.py", "--jetson-backend", "onnxruntime", "-n", "2")
    r.assert_outcomes(passed=1, failed=2)
    r.stdout.fnmatch_lines(["output check failed: output 'logits' differs from onnxruntime*"])


def test_on_the_simulated_device_the_check_is_skipped_and_said(suite):
    r = run(suite, "test_suite.py::test_engine_matches_onnxruntime")
    r.assert_outcomes(passed=1)
    assert said(r, "skipped outputs vs onnxruntime of test_suite.py::test_engine_matches_onnxruntime: "
                   "outputs not checked: the simulated device computes no outputs; run on a board or "
                   "with --jetson-backend onnxruntime")
    assert said(r, "perf tests: 1 passed · bounds: 1 skip, 1 pass")


def test_golden_outputs_are_recorded_then_checked_and_a_change_fails_naming_the_output(suite, monkeypatch):
    args = ("test_golden.py", "--jetson-backend", "onnxruntime")
    r = run(suite, *args)
    r.assert_outcomes(passed=1)
    assert said(r, "skipped outputs vs golden of test_golden.py::test_golden: no golden outputs baselines/")
    assert said(r, "-onnxruntime/test_golden.py/test_golden.outputs.npz; record them with --jetson-update-baselines")
    run(suite, *args, "--jetson-missing-baseline", "fail").assert_outcomes(failed=1)
    assert not list(suite.path.glob("baselines/*/test_golden.py/*.npz"))

    run(suite, *args, "--jetson-update-baselines").assert_outcomes(passed=1)
    (golden,) = suite.path.glob("baselines/*/test_golden.py/test_golden.outputs.npz")
    written = golden.stat().st_mtime_ns
    run(suite, *args).assert_outcomes(passed=1)

    monkeypatch.setenv("SCALE", "2.5")  # the model changed: its outputs with it
    r = run(suite, *args)
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["output check failed: output 'logits' differs from golden outputs "
                            "baselines/*/test_golden.py/test_golden.outputs.npz (atol 1e-05 + rtol 1e-05 x |reference|)",
                            "  10 of 10 elements (100%) out of tolerance; max abs error *"])
    # the golden inputs were replayed: the same numbers as when they were recorded
    run(suite, *args, "--jetson-update-baselines=new").assert_outcomes(failed=1)
    assert golden.stat().st_mtime_ns == written
    run(suite, *args, "--jetson-update-baselines").assert_outcomes(passed=1)
    assert golden.stat().st_mtime_ns != written
    run(suite, *args).assert_outcomes(passed=1)


def test_a_check_written_wrong_fails_with_the_users_frame_and_the_fix(suite):
    suite.makepyfile(test_wrong='''
import numpy as np

def test_wrong(perf):
    perf.check_outputs({"y": np.zeros(3)}, reference="cpu")
''')
    r = run(suite, "test_wrong.py")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*perf.check_outputs({\"y\": np.zeros(3)}, reference=\"cpu\")",
                            "E * perf.check_outputs: reference must be 'onnxruntime', 'golden' or outputs by "
                            "name ({name: array}), not 'cpu'"])
    assert "pytest_jetson/run/outputs.py" not in r.stdout.str()


def test_outputs_of_a_pipeline_on_the_simulated_device_are_not_checked(suite):
    suite.makepyfile(test_pipe='''
import numpy as np

def test_pipe(perf):
    perf.check_outputs({"y": np.zeros(3)}, reference={"y": np.ones(3)})
''')
    r = run(suite, "test_pipe.py")
    r.assert_outcomes(passed=1)
    assert said(r, "skipped outputs vs the given reference of test_pipe.py::test_pipe: outputs not checked: "
                   "the simulated device computes no outputs")
    run(suite, "test_pipe.py", "--jetson-backend", "onnxruntime").assert_outcomes(failed=1)
