"""The onnxruntime reference of an output check (engines/reference.py) and what the recorder makes
of a check (run/outputs.py), on real ONNX files run by real onnxruntime."""

from pathlib import Path

import numpy as np
import pytest
from fakes.onnx_models import tiny_onnx

from pytest_jetson.engines import open_engine, reference
from pytest_jetson.errors import EngineError, ModelError
from pytest_jetson.gate.outputs import compare
from pytest_jetson.run.outputs import SIMULATED_REASON, OutputsError, prepare, write_golden
from pytest_jetson.run.recorder import Recorder

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
    # an array (or a sequence) is named after the model's inputs
    rec = prepare(None, {"y": _numpy_tiny(x, onnx_file)}, inputs=x, model=str(onnx_file))
    assert list(rec.inputs) == ["x"] and compare(rec.actual, rec.reference, rec.tolerance_of)[0].passed
    with pytest.raises(OutputsError, match=r"2 inputs given for the model's 1 \(x\); pass them by name"):
        prepare(None, {"y": x}, inputs=[x, x], model=str(onnx_file))


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


def test_a_golden_file_replays_the_inputs_it_was_recorded_with(onnx_file, tmp_path):
    path = tmp_path / "g.outputs.npz"
    recorded_with = {"x": np.full((2, 8), 0.25, np.float32)}
    with _engine(onnx_file, batch=2) as engine:
        write_golden(path, engine(recorded_with), recorded_with)
        rec = prepare(None, engine, reference="golden", golden=lambda name: path)
        assert np.array_equal(rec.inputs["x"], recorded_with["x"])  # not the seeded inputs
        assert compare(rec.actual, rec.reference, rec.tolerance_of)[0].max_abs == 0.0
        with pytest.raises(OutputsError, match="needs the perf fixture"):
            prepare(None, engine, reference="golden")


def test_two_checks_of_one_test_need_their_own_names(onnx_file):
    recorder = Recorder()
    with _engine(onnx_file) as engine:
        recorder.check_outputs(engine)
        recorder.check_outputs(engine, name="again")
        with pytest.raises(OutputsError, match="already checked outputs under the name ''; give each"):
            recorder.check_outputs(engine)
    assert [r.name for r in recorder.output_checks] == ["", "again"]


def _pb(path):
    import onnx
    from onnx import numpy_helper

    tensor = onnx.TensorProto()
    tensor.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(tensor)


def test_a_model_nobody_here_wrote_matches_the_outputs_pytorch_gave_it():
    # the onnx package's PyTorch-converted test cases: a model and PyTorch's own outputs for it
    import onnx

    case = Path(onnx.__file__).parent / "backend/test/data/pytorch-converted/test_Conv2d"
    if not (case / "model.onnx").is_file():
        pytest.skip("this onnx wheel ships no backend test data")
    x = _pb(case / "test_data_set_0/input_0.pb")
    y = _pb(case / "test_data_set_0/output_0.pb")
    with _engine(case / "model.onnx", batch=x.shape[0]) as engine:
        out = engine.output_specs[0].name
        rec = prepare(None, engine, inputs=x, reference={out: y})
        (check,) = compare(rec.actual, rec.reference, rec.tolerance_of)
        assert check.passed and check.max_abs < 1e-5 and check.cosine > 0.999999
        moved = y.copy()
        moved.flat[17] += 1e-2
        rec = prepare(None, engine, inputs=x, reference={out: moved})
        (check,) = compare(rec.actual, rec.reference, rec.tolerance_of)
        assert not check.passed and check.mismatched == 1
        assert check.where_abs == tuple(int(i) for i in np.unravel_index(17, y.shape))
