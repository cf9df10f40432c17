"""The TensorRT backend's control flow, against FAKE tensorrt and pycuda modules (tests/fakes).

What these tests establish: the build options reach TensorRT's builder config, plans are cached and
never loaded when stale, foreign or corrupt, both runtime APIs are driven correctly, data goes
H2D -> enqueue -> D2H, CUDA-event device times reach the harness, and bad input gives clear errors.
What they cannot: that real TensorRT accepts these calls; see the README for what ran on hardware.
"""

import sys

import numpy as np
import pytest
from fakes import fake_pycuda, fake_tensorrt
from fakes.onnx_models import tiny_onnx

from pytest_jetson.devices.device import simulated
from pytest_jetson.engines import cache as plan_cache
from pytest_jetson.engines import open_engine
from pytest_jetson.errors import EngineError, ModelError
from pytest_jetson.run.harness import measure


@pytest.fixture(autouse=True)
def _fresh_process_context(monkeypatch):
    """Each test starts as a fresh process: no CUDA context retained yet."""
    from pytest_jetson.engines.tensorrt import _ProcessContext

    monkeypatch.setattr(_ProcessContext, "_by_pid", {})


@pytest.fixture
def trt(monkeypatch):
    return fake_tensorrt.install(monkeypatch)


@pytest.fixture
def onnx_file(tmp_path):
    return tiny_onnx(tmp_path / "tiny.onnx", features=8)


def _open(path, tmp_path, **kw):
    kw.setdefault("precision", "fp16")
    kw.setdefault("cache_dir", tmp_path / "plans")
    return open_engine(path, backend="tensorrt", device=None, **kw)


def test_missing_tensorrt_or_pycuda_says_how_to_install_on_jetpack(monkeypatch, onnx_file, tmp_path):
    monkeypatch.setitem(sys.modules, "tensorrt", None)
    with pytest.raises(EngineError, match=r"python3-libnvinfer.*--system-site-packages"):
        _open(onnx_file, tmp_path)
    fake_tensorrt.install(monkeypatch)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    with pytest.raises(EngineError, match=r"needs pycuda.*pytest-jetson\[tensorrt\].*/usr/local/cuda/bin"):
        _open(onnx_file, tmp_path)


@pytest.mark.parametrize("api", ["v3", "v2"])
def test_builds_runs_and_moves_data_through_the_device(monkeypatch, onnx_file, tmp_path, api):
    fake_tensorrt.install(monkeypatch, version="10.3.0" if api == "v3" else "8.5.2", api=api)
    engine = _open(onnx_file, tmp_path, batch=4)
    assert fake_tensorrt.LOG["builds"] == 1 and engine.built
    assert engine.name == "tiny-fp16-b4" and engine.max_batch == 4
    assert [s.shape for s in engine.inputs] == [(4, 8)]
    assert [s.shape for s in engine.outputs] == [(4, 8)]
    out = engine.infer()["y"]
    # the fake kernel writes each sample's input mean: proves H2D, enqueue and D2H all happened
    x = engine._views[0][1]
    np.testing.assert_allclose(out[:, 0], x.mean(axis=1), rtol=1e-6)
    assert fake_tensorrt.LOG[f"enqueue_{api}"] == 1
    assert fake_tensorrt.LOG["enqueue_v3" if api == "v2" else "enqueue_v2"] == 0
    assert engine.infer(2)["y"].shape == (2, 8)
    # TensorRT 8 needs the EXPLICIT_BATCH flag; 10.x has no such flag to pass
    assert fake_tensorrt.LOG["network_flags"] == (1 if api == "v2" else 0)


def test_cuda_events_give_device_and_compute_time_to_the_harness(trt, onnx_file, tmp_path):
    engine = _open(onnx_file, tmp_path, batch=2)
    engine.infer()
    assert engine.last_compute_time == pytest.approx(2 * fake_tensorrt.COMPUTE_MS_PER_ITEM * 1e-3)
    assert engine.last_device_time > engine.last_compute_time  # plus the copies
    m = measure(engine, iterations=20, warmup=0)
    assert m.backend == "tensorrt" and m.clock == "wall"
    assert m.device_latencies == [pytest.approx(engine.last_device_time)] * 20
    assert m.host_overhead is not None and m.host_overhead >= 0


def test_plan_is_cached_and_loaded_without_rebuilding(trt, onnx_file, tmp_path):
    first = _open(onnx_file, tmp_path, batch=2)
    first.close()
    second = _open(onnx_file, tmp_path, batch=2)
    assert fake_tensorrt.LOG["builds"] == 1 and not second.built
    assert second.plan_path == first.plan_path and second.plan_path.read_bytes().startswith(plan_cache.MAGIC)
    # other build options: another plan
    _open(onnx_file, tmp_path, batch=2, precision="int8")
    assert fake_tensorrt.LOG["builds"] == 2


def test_a_changed_onnx_file_is_rebuilt(trt, onnx_file, tmp_path):
    _open(onnx_file, tmp_path).close()
    tiny_onnx(onnx_file, features=8, layers=3)
    _open(onnx_file, tmp_path)
    assert fake_tensorrt.LOG["builds"] == 2


def test_a_foreign_plan_is_caught_by_the_header_and_rebuilt(monkeypatch, onnx_file, tmp_path):
    fake_tensorrt.install(monkeypatch, version="8.6.1")
    old = _open(onnx_file, tmp_path)
    old_bytes = old.plan_path.read_bytes()
    old.close()
    fake_tensorrt.install(monkeypatch, version="10.3.0")
    new = _open(onnx_file, tmp_path)
    assert new.plan_path != old.plan_path  # the version is part of the key
    # a plan built by 8.6 copied under 10.3's name: the header says so, and it is rebuilt
    new.plan_path.write_bytes(old_bytes)
    before = fake_tensorrt.LOG["builds"]
    with pytest.warns(plan_cache.PlanCacheWarning, match=r"built by TensorRT 8\.6\.1, this is TensorRT 10\.3\.0"):
        again = _open(onnx_file, tmp_path)
    assert again.built and fake_tensorrt.LOG["builds"] == before + 1
    assert plan_cache.decode(again.plan_path.read_bytes(), _key(again))  # repaired in place


def _key(engine):
    header = engine.plan_path.read_bytes()
    import json
    import struct

    off = len(plan_cache.MAGIC)
    (n,) = struct.unpack(">I", header[off:off + 4])
    h = json.loads(header[off + 4:off + 4 + n])
    return plan_cache.PlanKey(h["onnx_sha256"], h["tensorrt"], h["gpu_name"], h["compute_capability"], h["options"])


def test_a_truncated_plan_is_rebuilt_with_a_warning(trt, onnx_file, tmp_path):
    engine = _open(onnx_file, tmp_path)
    engine.plan_path.write_bytes(engine.plan_path.read_bytes()[:-10])
    with pytest.warns(plan_cache.PlanCacheWarning, match="do not match the header's hash"):
        again = _open(onnx_file, tmp_path)
    assert again.built


def test_a_plan_tensorrt_cannot_load_is_rebuilt_with_a_warning(trt, onnx_file, tmp_path):
    engine = _open(onnx_file, tmp_path)
    plan_cache.store(engine.plan_path, _key(engine), b"garbage that is not a plan")
    with pytest.warns(plan_cache.PlanCacheWarning, match=r"(?s)could not load the cached plan.*magicTagRead"):
        again = _open(onnx_file, tmp_path)
    assert again.built and again.infer()["y"].shape == (1, 8)


def test_parser_errors_are_shown(trt, tmp_path):
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("FancyOp", ["x"], ["y"], domain="custom")], "g", [x], [y])
    path = tmp_path / "fancy.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.raises(ModelError, match=r"fancy-fp16-b1: TensorRT's ONNX parser rejected .*fancy\.onnx(.|\n)*"
                                         r"No importer registered for op: FancyOp(.|\n)*Fix: re-export"):
        _open(path, tmp_path, batch=1)


def test_a_failed_build_quotes_tensorrt(trt, onnx_file, tmp_path):
    fake_tensorrt.FAIL_BUILD = True
    with pytest.raises(EngineError, match=r"could not build(.|\n)*workspace=(.|\n)*reformatting-free"):
        _open(onnx_file, tmp_path)


def test_batch_beyond_the_profile_is_a_clear_error(trt, onnx_file, tmp_path):
    engine = _open(onnx_file, tmp_path, batch=2)
    with pytest.raises(EngineError, match=r"tiny-fp16-b2: batch 3 is larger.*max batch 2.*batch=3"):
        engine.infer(3)


def test_dynamic_batch_gets_a_profile_from_one_to_batch(trt, onnx_file, tmp_path):
    _open(onnx_file, tmp_path, batch=8)
    (config,) = fake_tensorrt.LOG["configs"]
    assert config.profiles[0].shapes["x"] == ((1, 8), (8, 8), (8, 8))


def test_fixed_batch_onnx_needs_no_profile(trt, tmp_path):
    path = tiny_onnx(tmp_path / "fixed.onnx", features=8, batch=4)
    engine = _open(path, tmp_path, batch=4)
    assert engine.max_batch == 4 and fake_tensorrt.LOG["configs"][0].profiles == []
    with pytest.raises(EngineError, match="fixed batch of 4"):
        _open(path, tmp_path, batch=2)


@pytest.mark.parametrize("precision, present, absent", [
    ("fp32", set(), {"TF32", "FP16", "INT8"}),
    ("tf32", {"TF32"}, {"FP16", "INT8"}),
    ("fp16", {"FP16"}, {"INT8"}),
    ("int8", {"INT8", "FP16"}, set()),
])
def test_precision_flags(trt, onnx_file, tmp_path, precision, present, absent):
    _open(onnx_file, tmp_path, precision=precision)
    flags = fake_tensorrt.LOG["configs"][0].flags
    assert present <= flags and not (absent & flags)
    # int8 without a calibrator: placeholder ranges on every tensor, like trtexec
    assert (fake_tensorrt.LOG["ranges"] > 0) == (precision == "int8")


def test_dla_core_with_gpu_fallback(trt, onnx_file, tmp_path):
    engine = open_engine(onnx_file, backend="tensorrt", device=simulated("orin-nx-16gb"), precision="int8",
                         dla_core=1, cache_dir=tmp_path)
    config = fake_tensorrt.LOG["configs"][0]
    assert config.default_device_type == "DLA" and config.DLA_core == 1
    assert "GPU_FALLBACK" in config.flags
    assert fake_tensorrt.LOG["runtimes"][-1].DLA_core == 1
    assert engine.name == "tiny-int8-b1-dla1"


def test_dla_needs_reduced_precision_and_an_existing_core(trt, onnx_file, tmp_path):
    with pytest.raises(EngineError, match="DLA runs fp16 or int8, not fp32"):
        _open(onnx_file, tmp_path, precision="fp32", dla_core=0)
    with pytest.raises(EngineError, match=r"Orin Nano 8GB has 0 DLA core"):
        open_engine(onnx_file, backend="tensorrt", device=simulated("orin-nano"), dla_core=0, cache_dir=tmp_path)


def test_workspace_limit_and_timing_cache(trt, onnx_file, tmp_path):
    _open(onnx_file, tmp_path, workspace="256 MiB")
    first = fake_tensorrt.LOG["configs"][0]
    assert first.pools == {"WORKSPACE": 256 * 1024 ** 2}
    assert first.timing_cache_loaded == b""
    timing = list((tmp_path / "plans").glob("timing-*.cache"))
    assert len(timing) == 1 and timing[0].read_bytes() == b"fake-timing-cache"
    _open(onnx_file, tmp_path, precision="fp32")  # another build reuses the timing cache
    assert fake_tensorrt.LOG["configs"][1].timing_cache_loaded == b"fake-timing-cache"


def test_missing_onnx_is_a_model_error(trt, tmp_path):
    with pytest.raises(ModelError, match=r"absent\.onnx.*does not exist"):
        _open(tmp_path / "absent.onnx", tmp_path)


def test_cuda_context_is_per_process_and_released(trt, onnx_file, tmp_path):
    a = _open(onnx_file, tmp_path)
    b = _open(onnx_file, tmp_path, batch=2)
    assert len(fake_pycuda.STATE.contexts) == 1  # one primary context for the process
    a.close()
    assert fake_pycuda.STATE.pops == 0
    b.close()
    assert fake_pycuda.STATE.pops == 1 and fake_pycuda.STATE.contexts[0].detached
    assert not fake_pycuda.STATE.memory  # every device buffer freed


def test_an_engine_used_after_fork_says_to_open_it_in_the_worker(trt, onnx_file, tmp_path):
    engine = _open(onnx_file, tmp_path)
    engine._pid = -1  # as seen from a forked child
    with pytest.raises(EngineError, match="does not survive fork: open the engine in the process"):
        engine.infer()


def test_another_thread_pushes_the_context_for_its_call(trt, onnx_file, tmp_path):
    import threading

    engine = _open(onnx_file, tmp_path)
    pushes = fake_pycuda.STATE.pushes
    t = threading.Thread(target=engine.infer)
    t.start()
    t.join()
    assert fake_pycuda.STATE.pushes == pushes + 1 and fake_pycuda.STATE.pops == 1


# -- on a real GPU: real pycuda, fake TensorRT ----------------------------------------------------
def _cuda_or_skip():
    cuda = pytest.importorskip("pycuda.driver")
    try:
        cuda.init()
        if cuda.Device.count() < 1:
            raise RuntimeError("no device")
    except Exception as exc:  # no driver, no device
        pytest.skip(f"no usable CUDA device: {exc}")
    return cuda


@pytest.mark.gpu
@pytest.mark.parametrize("api", ["v3", "v2"])
def test_real_pycuda_buffers_stream_and_events(monkeypatch, onnx_file, tmp_path, api):
    """The pycuda half for real: primary context, page-locked and device buffers, one stream,
    H2D, a device-side "kernel" (a device-to-device copy), D2H, CUDA-event timing."""
    import threading

    cuda = _cuda_or_skip()
    fake_tensorrt.install(monkeypatch, api=api, real_pycuda=True)
    engine = _open(onnx_file, tmp_path, batch=4)
    assert engine.plan_path.exists()
    assert _key(engine).gpu_name == cuda.Device(0).name()
    out = engine.infer()["y"]
    np.testing.assert_array_equal(out, engine._views[0][1])  # went to the GPU and back
    assert engine.last_device_time > 0 and 0 < engine.last_compute_time <= engine.last_device_time
    assert engine.infer(2)["y"].shape == (2, 8)
    m = measure(engine, iterations=200, warmup="50ms")
    assert len(m.device_latencies) == 200 and all(d > 0 for d in m.device_latencies)
    assert m.host_overhead is not None and m.host_overhead >= 0
    errors = []

    def other_thread():
        try:
            engine.infer()
        except Exception as exc:
            errors.append(exc)

    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert not errors
    engine.close()
    again = _open(onnx_file, tmp_path, batch=4)  # a fresh context after the last engine closed
    assert not again.built
    np.testing.assert_array_equal(again.infer()["y"], again._views[0][1])
    again.close()
    print(f"\nGPU {cuda.Device(0).name()}: {m.latency_mean * 1e6:.1f} us/iter wall clock, "
          f"{np.mean(m.device_latencies) * 1e6:.1f} us device (events), host overhead "
          f"{m.host_overhead * 1e6:.1f} us")
