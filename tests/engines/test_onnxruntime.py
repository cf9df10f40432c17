"""The onnxruntime backend: real CPU inference behind the Engine protocol, measured by the harness."""

import numpy as np
import pytest
from fakes.onnx_models import tiny_onnx

from pytest_jetson.engines import open_engine
from pytest_jetson.engines.base import TensorSpec
from pytest_jetson.errors import ConfigError, EngineError, ModelError
from pytest_jetson.run.harness import measure

pytest.importorskip("onnxruntime")


@pytest.fixture
def onnx_file(tmp_path):
    return tiny_onnx(tmp_path / "tiny.onnx", features=32)


def _open(path, **kw):
    kw.setdefault("precision", "fp32")
    return open_engine(path, backend="onnxruntime", device=None, **kw)


def test_runs_real_inference_with_the_graphs_shapes(onnx_file):
    with _open(onnx_file, batch=4) as engine:
        assert engine.backend == "onnxruntime"
        assert engine.model == str(onnx_file)
        assert engine.name == "tiny-fp32-b4"
        assert engine.inputs == [TensorSpec("x", (4, 32), np.dtype(np.float32))]
        assert engine.outputs == [TensorSpec("y", (4, 32), np.dtype(np.float32))]
        out = engine.infer()
        assert out["y"].shape == (4, 32) and out["y"].dtype == np.float32
        assert (out["y"] >= 0).all() and out["y"].any()  # a Relu ran on real numbers
        assert engine.infer(2)["y"].shape == (2, 32)
        assert engine.memory_bytes > 0
        assert engine.clock.kind == "wall"
        assert engine.last_device_time is None
        assert "prediction" not in engine.measurement_extra(4)  # only the simulator predicts
    assert engine.closed
    with pytest.raises(EngineError, match="closed"):
        engine.infer()


def test_harness_measures_it_on_the_wall_clock(onnx_file):
    engine = _open(onnx_file, batch=2)
    m = measure(engine, iterations=50, warmup="10ms")
    assert m.clock == "wall" and m.backend == "onnxruntime"
    assert m.iterations == 50 and m.items == 100
    assert m.throughput > 0 and 0 < m.latency_p50 <= m.latency_max
    assert m.duration == pytest.approx(sum(m.latencies))


def test_zoo_model_by_name(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_JETSON_CACHE", str(tmp_path))
    engine = _open("squeezenet1_1", batch=1, resolution=64)
    assert engine.model == "squeezenet1_1"
    assert engine.inputs[0].shape == (1, 3, 64, 64)
    assert engine.infer()[engine.outputs[0].name].shape[0] == 1


def test_batch_larger_than_the_engine_is_a_clear_error(onnx_file):
    engine = _open(onnx_file, batch=2)
    with pytest.raises(EngineError, match=r"tiny-fp32-b2: batch 8 is larger.*max batch 2.*batch=8"):
        engine.infer(8)
    with pytest.raises(EngineError, match="positive integer"):
        engine.infer(0)


def test_fixed_batch_onnx_must_be_opened_at_its_batch(tmp_path):
    path = tiny_onnx(tmp_path / "fixed.onnx", batch=4)
    assert _open(path, batch=4).infer()["y"].shape == (4, 64)
    with pytest.raises(EngineError, match="fixed batch of 4.*batch=4"):
        _open(path, batch=1)


def test_missing_onnx_path_names_the_file_and_the_fix(tmp_path):
    missing = tmp_path / "nope.onnx"
    with pytest.raises(ModelError, match=r"nope\.onnx.*does not exist.*zoo name"):
        _open(missing)


def test_a_file_that_is_not_onnx_is_a_model_error(tmp_path):
    bad = tmp_path / "garbage.onnx"
    bad.write_bytes(b"\x00not a protobuf at all" * 10)
    with pytest.raises(ModelError, match="garbage.onnx"):
        _open(bad)


def test_reduced_precision_is_a_label_on_the_cpu(onnx_file):
    with pytest.warns(UserWarning, match="runs fp32"):
        engine = open_engine(onnx_file, backend="onnxruntime", device=None, precision="int8")
    assert engine.precision == "int8"


def test_bad_backend_precision_and_dla_are_clear_errors(onnx_file):
    with pytest.raises(ConfigError, match="'cuda' is not a known engine backend"):
        open_engine(onnx_file, backend="cuda", device=None)
    with pytest.raises(EngineError, match="precision 'fp8'"):
        _open(onnx_file, precision="fp8")
    with pytest.raises(ConfigError, match="dla_core=0 needs the tensorrt backend"):
        _open(onnx_file, dla_core=0)
