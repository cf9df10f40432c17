"""Faults of the real TensorRT releases on JetPack boards that the backend must work around,
against the version-exact fakes (tests/fakes/fake_tensorrt.py cites where each behaviour comes from)."""

import numpy as np
import pytest
from fakes import fake_tensorrt
from fakes.onnx_models import conv_onnx

from pytest_jetson.engines import open_engine

pytestmark = pytest.mark.usefixtures("fresh_trt_process")  # tests/engines/conftest.py


def _open(path, tmp_path, **kw):
    kw.setdefault("precision", "fp16")
    kw.setdefault("cache_dir", tmp_path / "plans")
    kw.setdefault("device", None)
    return open_engine(path, backend="tensorrt", **kw)


@pytest.fixture
def numpy_1_24(monkeypatch):
    """numpy as pip installs it on a JetPack 5 board's Python 3.8 (1.24.4): ``np.bool`` removed
    (numpy 1.24 release notes, expired deprecations; numpy 2.0 added it back)."""
    monkeypatch.delattr(np, "bool", raising=False)


# -- item 1: TensorRT 8.2.1/8.5.2's own nptype cannot run on numpy 1.24+ --------------------------
@pytest.mark.parametrize("version", ["8.2.1", "8.5.2"])
def test_an_engine_opens_on_jetpack_5s_numpy_although_tensorrts_nptype_fails_there(
        monkeypatch, tmp_path, numpy_1_24, version):
    trt = fake_tensorrt.install(monkeypatch, version=version)
    with pytest.raises(AttributeError, match="bool"):  # the release's own function, as shipped
        trt.nptype(trt.DataType.FLOAT)
    engine = _open(conv_onnx(tmp_path / "net.onnx"), tmp_path, batch=2)
    out = engine.infer()["y"]
    assert out.dtype == np.float32 and out.shape == (2, 4)
    assert engine.inputs[0].dtype == np.float32
    engine.close()


@pytest.mark.parametrize("version", ["8.2.1", "8.5.2", "10.3.0", "10.13.3", "11.1.0"])
def test_every_data_type_of_every_release_has_a_numpy_dtype_or_a_clear_refusal(monkeypatch, version):
    from pytest_jetson.engines.tensorrt_dtypes import NUMPY_DTYPES, numpy_dtype
    from pytest_jetson.errors import EngineError

    trt = fake_tensorrt.install(monkeypatch, version=version)
    members = [m for m in fake_tensorrt.API["classes"]["DataType"] if not m.startswith("_")]
    assert set(members) <= set(NUMPY_DTYPES)
    for m in members:
        if NUMPY_DTYPES[m] is None:
            with pytest.raises(EngineError, match=f"is {m}, which numpy has no dtype for"):
                numpy_dtype(getattr(trt.DataType, m), "net")
        else:
            assert np.dtype(numpy_dtype(getattr(trt.DataType, m), "net")).name == np.dtype(NUMPY_DTYPES[m]).name


# -- item 12: TensorRT 11 builds fp32 and tf32 (it dropped FP16/INT8 flags, not TF32) -------------
@pytest.mark.parametrize("precision, flags", [("fp32", set()), ("tf32", {"TF32"})])
def test_tensorrt_11_builds_fp32_and_tf32(monkeypatch, tmp_path, precision, flags):
    trt = fake_tensorrt.install(monkeypatch, version="11.1.0")
    with pytest.raises(AttributeError):  # BuilderFlag of 11.1.0/11.4.0 (tensorrt_surface tables)
        getattr(trt.BuilderFlag, "FP16")  # noqa: B009
    engine = _open(conv_onnx(tmp_path / "net.onnx"), tmp_path, batch=2, precision=precision)
    assert engine.infer()["y"].shape == (2, 4) and engine.precision == precision
    assert {f.name for f in fake_tensorrt.LOG["configs"][0]._flags} == flags
    engine.close()


def test_tensorrt_11_still_refuses_fp16_and_says_what_builds(monkeypatch, tmp_path):
    from pytest_jetson.errors import EngineError

    fake_tensorrt.install(monkeypatch, version="11.1.0")
    with pytest.raises(EngineError, match=r"(?s)removed in TensorRT 11.*precision='fp32' or 'tf32'"):
        _open(conv_onnx(tmp_path / "net.onnx"), tmp_path, precision="fp16")


# -- item 3: TensorRT 8.2's builder defaults to a 0-byte workspace; trtexec 8.2 uses 16 MiB ----------
def test_tensorrt_8_2_without_workspace_builds_with_trtexecs_16_mib_and_says_so(monkeypatch, tmp_path):
    from pytest_jetson.run.harness import measure

    fake_tensorrt.install(monkeypatch, version="8.2.1")
    path = conv_onnx(tmp_path / "net.onnx")
    engine = _open(path, tmp_path)
    assert fake_tensorrt.LOG["configs"][0]._workspace == 16 << 20
    m = measure(engine, iterations=3, warmup=0)
    assert m.extra["workspace"] == "16 MiB, trtexec's default: this TensorRT's builder defaults to 0 bytes"
    engine.close()
    again = _open(path, tmp_path)  # from the plan cache: still said
    assert not again.built and again.measurement_extra()["workspace"].startswith("16 MiB")
    again.close()
    # the cache keys on the workspace the build got, not on "none given": a plan built under
    # another default is never taken for this one
    asked = _open(path, tmp_path, workspace="16 MiB")
    assert not asked.built  # the same plan: 16 MiB given is what "none given" built
    asked.close()


@pytest.mark.parametrize("version, workspace, expected", [
    ("8.2.1", "64 MiB", 64 << 20),  # the user's, untouched
    ("8.5.2", None, fake_tensorrt.DEVICE_MEMORY),  # 8.3+: the default is the device's memory
])
def test_the_workspace_is_left_alone_where_tensorrts_default_is_not_0(monkeypatch, tmp_path, version,
                                                                       workspace, expected):
    fake_tensorrt.install(monkeypatch, version=version)
    engine = _open(conv_onnx(tmp_path / "net.onnx"), tmp_path, workspace=workspace)
    config = fake_tensorrt.LOG["configs"][0]
    assert config._workspace == expected and config._pools.get("WORKSPACE") is None
    assert "workspace" not in engine.measurement_extra()
    engine.close()


# -- item 13: 8.x plans with several optimization profiles: bindings per profile -----------------
def _two_profile_plan(trt, onnx_path, plan_path):
    """A plan built as a user's script or trtexec builds one with two profiles (batch 1-2, 3-4)."""
    logger = trt.Logger()
    builder = trt.Builder(logger)
    network = builder.create_network(1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH))
    assert trt.OnnxParser(network, logger).parse_from_file(str(onnx_path))
    config = builder.create_builder_config()
    name = network.get_input(0).name
    rest = tuple(network.get_input(0).shape)[1:]
    for lo, hi in ((1, 2), (3, 4)):
        profile = builder.create_optimization_profile()
        profile.set_shape(name, (lo,) + rest, (hi,) + rest, (hi,) + rest)
        config.add_optimization_profile(profile)
    plan_path.write_bytes(bytes(builder.build_serialized_network(network, config)))
    return plan_path


@pytest.mark.parametrize("version", ["8.2.1", "8.5.2"])
def test_a_plan_with_two_profiles_runs_on_profile_0(monkeypatch, tmp_path, version):
    trt = fake_tensorrt.install(monkeypatch, version=version)
    plan = _two_profile_plan(trt, conv_onnx(tmp_path / "net.onnx"), tmp_path / "net.engine")
    engine = _open(plan, tmp_path, batch=2, precision="fp32")
    assert [t.name for t in engine.inputs] == ["x"] and [t.name for t in engine.outputs] == ["y"]
    assert engine.max_batch == 2  # profile 0's, not profile 1's
    assert engine.infer()["y"].shape == (2, 4)
    engine.close()
