"""The onnxruntime reference of an output check (engines/reference.py) and what the recorder makes
of a check (run/outputs.py), on real ONNX files run by real onnxruntime."""

import numpy as np
import pytest
from fakes.onnx_models import tiny_onnx

from pytest_jetson.engines import open_engine, reference
from pytest_jetson.errors import EngineError, ModelError
from pytest_jetson.gate.outputs import compare
from pytest_jetson.run.outputs import SIMULATED_REASON, OutputsError, prepare

pytest.importorskip("onnxruntime")


@pytest.fixture
def onnx_file(tmp_path):
    return tiny_onnx(tmp_path / "tiny.onnx", features=8)


def _engine(path, **kw):
    kw.setdefault("precision", "fp32")
    return open_engine(path, backend="onnxruntime", device=None, **kw)


def _numpy_tiny(x, path):
    import onnx
    from onnx import numpy_helper

    w = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(path)).graph.initializer}
    return np.maximum(np.maximum(x @ w["w0"], 0) @ w["w1"], 0)


def test_the_reference_runs_the_onnx_on_the_cpu_once_per_file(onnx_file):
    reference.clear()
    x = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    out = reference.run(onnx_file, {"x": x})
    assert list(out) == ["y"] and out["y"].shape == (3, 8)
    np.testing.assert_allclose(out["y"], _numpy_tiny(x, onnx_file), rtol=1e-5, atol=1e-5)
    first = reference.session(onnx_file)
    assert reference.session(onnx_file) is first
    assert first.get_providers() == ["CPUExecutionProvider"]


def test_the_reference_says_what_it_cannot_run(onnx_file, tmp_path):
    with pytest.raises(EngineError, match=r"takes inputs x; 'x' was not given \(given: z\)"):
        reference.run(onnx_file, {"z": np.zeros((1, 8), np.float32)})
    with pytest.raises(EngineError, match="could not run the reference model .* on these inputs"):
        reference.run(onnx_file, {"x": np.zeros((1, 5), np.float32)})
    with pytest.raises(ModelError, match="does not exist"):
        reference.run(tmp_path / "nope.onnx", {})
    (tmp_path / "bad.onnx").write_bytes(b"garbage")
    with pytest.raises(ModelError, match="onnxruntime cannot open the reference model"):
        reference.run(tmp_path / "bad.onnx", {})


def test_an_engine_checked_against_onnxruntime_runs_both_on_the_same_inputs(onnx_file):
    with _engine(onnx_file, batch=2) as engine:
        rec = prepare(None, engine)
        assert rec.source == f"onnxruntime (CPUExecutionProvider) on {onnx_file.as_posix()}"
        assert set(rec.inputs) == {"x"} and rec.inputs["x"].shape == (2, 8)
        np.testing.assert_allclose(rec.actual["y"], _numpy_tiny(rec.inputs["x"], onnx_file), rtol=1e-5, atol=1e-5)
        (check,) = compare(rec.actual, rec.reference, rec.tolerance_of)
        assert check.passed and check.max_abs == 0.0
        given = np.ones((1, 8), np.float32)
        rec = prepare(None, engine, inputs=given, atol=0.5)
        assert rec.actual["y"].shape == (1, 8) and rec.default.atol == 0.5


def test_outputs_checked_against_onnxruntime_need_the_model_and_inputs(onnx_file):
    x = np.ones((1, 8), np.float32)
    with pytest.raises(OutputsError, match="need model= .* and inputs="):
        prepare(None, {"y": x}, reference="onnxruntime")
    rec = prepare(None, {"y": _numpy_tiny(x, onnx_file)}, inputs={"x": x}, model=str(onnx_file))
    assert compare(rec.actual, rec.reference, rec.tolerance_of)[0].passed


def test_a_simulated_engine_is_not_run_and_says_why():
    engine = open_engine("squeezenet1_1", backend="simulated", device="orin-nano")
    rec = prepare(None, engine)
    assert rec.skipped == SIMULATED_REASON and rec.actual == {} and rec.reference is None
    assert "--jetson-backend onnxruntime" in SIMULATED_REASON


def test_a_reference_that_is_neither_is_said(onnx_file):
    with _engine(onnx_file) as engine:
        with pytest.raises(OutputsError, match="reference must be 'onnxruntime', 'golden' or outputs by name"):
            prepare(None, engine, reference="cpu")
        with pytest.raises(OutputsError, match="tolerances\\['y'\\] must be a dict"):
            prepare(None, engine, tolerances={"y": 0.1})
