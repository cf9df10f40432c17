"""The TensorRT backend against version-exact FAKE tensorrt and pycuda modules (tests/fakes).

Each supported TensorRT (8.2 of JetPack 4.6, 8.5 of JetPack 5, 10.3 of JetPack 6, 10.13 of
JetPack 7) is exercised through a fake exposing exactly the members that release's bindings
define, warning where they warn; TensorRT 11 through its own table, for the error it gets. What
these tests cannot show: that real TensorRT builds and times these engines on a board (see the
README's "TensorRT, measured as trtexec measures" for what ran where).
"""

import sys
import warnings

import numpy as np
import pytest
from fakes import fake_pycuda, fake_tensorrt
from fakes.onnx_models import conv_onnx, tiny_onnx

from pytest_jetson.devices.device import simulated
from pytest_jetson.engines import cache as plan_cache
from pytest_jetson.engines import open_engine
from pytest_jetson.engines.tensorrt import PlanNoteWarning, PrecisionFallbackWarning
from pytest_jetson.errors import EngineError, ModelError
from pytest_jetson.run.harness import measure

VERSIONS = fake_tensorrt.VERSIONS
READ_COMPATIBLE = plan_cache.read_compatible


pytestmark = pytest.mark.usefixtures("fresh_trt_process")  # tests/engines/conftest.py


@pytest.fixture
def trt(monkeypatch):
    return fake_tensorrt.install(monkeypatch)


@pytest.fixture
def onnx_file(tmp_path):
    return tiny_onnx(tmp_path / "tiny.onnx", features=8)


def _open(path, tmp_path, **kw):
    kw.setdefault("precision", "fp16")
    kw.setdefault("cache_dir", tmp_path / "plans")
    kw.setdefault("device", None)
    return open_engine(path, backend="tensorrt", **kw)


def _board(name, monkeypatch, *, cc, sms, integrated=1, dla=0):
    monkeypatch.setattr(fake_pycuda.Device, "CC", cc)
    monkeypatch.setattr(fake_pycuda.Device, "SMS", sms)
    monkeypatch.setattr(fake_pycuda.Device, "INTEGRATED", integrated)
    monkeypatch.setattr(fake_tensorrt, "DLA_CORES", dla)
    from pytest_jetson.devices.device import Device

    profile = simulated(name).profile
    return Device(profile=profile, power_mode=profile.default_mode, simulated=False)


# -- the supported releases ----------------------------------------------------------------------
def test_missing_tensorrt_or_pycuda_says_how_to_install_on_jetpack(monkeypatch, onnx_file, tmp_path):
    monkeypatch.setitem(sys.modules, "tensorrt", None)
    with pytest.raises(EngineError, match=r"python3-libnvinfer.*--system-site-packages"):
        _open(onnx_file, tmp_path)
    fake_tensorrt.install(monkeypatch)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    with pytest.raises(EngineError, match=r"needs pycuda.*pytest-jetson\[tensorrt\].*/usr/local/cuda/bin"):
        _open(onnx_file, tmp_path)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("precision", ["fp32", "fp16", "int8"])
def test_every_supported_release_builds_and_runs_without_deprecated_calls(monkeypatch, tmp_path, version,
                                                                          precision):
    fake_tensorrt.install(monkeypatch, version=version)
    path = conv_onnx(tmp_path / "net.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        engine = _open(path, tmp_path, batch=4, precision=precision, workspace="64 MiB")
        out = engine.infer()["y"]
        m = measure(engine, iterations=10, warmup=0)
        engine.close()
    assert engine.built and fake_tensorrt.LOG["builds"] == 1
    assert out.shape == (4, 4) and m.iterations == 10
    binding_api = version == "8.2.1"  # the last TensorRT a Nano or TX2 runs: no name-based API
    assert fake_tensorrt.LOG["enqueue_v2" if binding_api else "enqueue_v3"] > 0
    assert fake_tensorrt.LOG["enqueue_v3" if binding_api else "enqueue_v2"] == 0
    # explicit batch: a flag before TensorRT 10, the only mode (flag deprecated) from 10
    assert fake_tensorrt.LOG["network_flags"] == (1 if version.startswith("8.") else 0)
    config = fake_tensorrt.LOG["configs"][0]
    workspace = config._workspace if binding_api else config._pools.get("WORKSPACE")
    assert workspace == 64 * 1024 ** 2


def test_tensorrt_11_is_refused_with_what_it_would_need(monkeypatch, onnx_file, tmp_path):
    fake_tensorrt.install(monkeypatch, version="11.1.0")
    with pytest.raises(EngineError, match=r"(?s)TensorRT 11.*strongly typed.*AutoCast.*Q/DQ.*TensorRT 10"):
        _open(onnx_file, tmp_path)


def test_the_fake_is_exact_to_its_release(monkeypatch):
    """The gate itself: members of other releases are absent, deprecated ones warn."""
    trt = fake_tensorrt.install(monkeypatch, version="8.5.2")
    assert not hasattr(trt, "STRONGLY_TYPED") and not hasattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED")
    trt = fake_tensorrt.install(monkeypatch, version="10.3.0")
    t = fake_tensorrt.ITensor("x", (1,))
    with pytest.warns(DeprecationWarning, match="Deprecated in TensorRT 10.1"):
        t.set_dynamic_range(-1, 1)
    engine = fake_tensorrt.ICudaEngine({"tensors": [], "layers": []})
    with pytest.raises(AttributeError, match="num_bindings"):
        engine.num_bindings  # noqa: B018 - removed in TensorRT 10
    with pytest.raises(AttributeError):
        trt.MemoryPoolType.NOT_A_POOL  # noqa: B018


# -- timing as trtexec ---------------------------------------------------------------------------
def test_timed_loop_keeps_two_inferences_in_flight_and_records_gpu_compute(trt, tmp_path):
    engine = _open(conv_onnx(tmp_path / "net.onnx"), tmp_path, batch=2)
    fake_pycuda.STATE.trace.clear()
    m = measure(engine, iterations=20, warmup=0, profile=False)  # the timed loop's own enqueues
    trace = [kind for kind, _ in fake_pycuda.STATE.trace]
    # enqueue, enqueue, then wait for the oldest while the next is queued: as trtexec's loop
    assert trace[:3] == ["enqueue", "enqueue", "sync"]
    assert trace.count("enqueue") == 20 and trace.count("sync") == 20
    assert trace[-2:] == ["sync", "sync"]  # drained at the end: nothing left in flight
    gpu = fake_tensorrt.COMPUTE_MS_PER_ITEM * 2 * 1e-3
    assert m.latency_gpu == pytest.approx(gpu)
    assert m.device_latencies == [pytest.approx(gpu)] * 20
    # device buffers filled once, on an integrated GPU too: latency is the GPU compute time
    assert m.latency_mean == pytest.approx(gpu) and m.extra["io"] == "device"
    assert m.extra["inflight"] == 2 and m.throughput > 0
    assert "cuda-python is not installed" in m.extra["cuda_graph"]
    assert m.build_time is not None and m.latency_first is not None and m.latency_first > 0


@pytest.mark.parametrize("io, integrated, copies_per_inference", [
    (None, 1, 0),        # an integrated GPU: device buffers filled once, as trtexec's
    (None, 0, 0),        # a discrete GPU: the same
    ("mapped", 1, 0),    # asked for: zero copy
    ("host", 1, 2),      # asked for: one copy in, one copy out per inference
])
def test_io_modes(monkeypatch, tmp_path, io, integrated, copies_per_inference):
    fake_tensorrt.install(monkeypatch)
    monkeypatch.setattr(fake_pycuda.Device, "INTEGRATED", integrated)
    engine = _open(conv_onnx(tmp_path / "net.onnx"), tmp_path, batch=2, io=io)
    expected = io or "device"
    assert engine.io == expected
    before = fake_pycuda.STATE.copies
    m = measure(engine, iterations=10, warmup=0)
    assert fake_pycuda.STATE.copies - before == 10 * copies_per_inference
    gpu = fake_tensorrt.COMPUTE_MS_PER_ITEM * 2 * 1e-3
    if io == "host":
        assert m.latency_mean > gpu and m.host_overhead > 0  # the copies are in the latency
    else:
        assert m.latency_mean == pytest.approx(gpu)
    # whatever the mode, outputs come back to the host and survive the engine
    out = engine.infer()["y"]
    engine.close()
    assert np.isfinite(out).all() and out.shape == (2, 4)


def test_data_goes_through_the_buffers(trt, onnx_file, tmp_path):
    engine = _open(onnx_file, tmp_path, batch=4)
    out = engine.infer()["y"]
    x = engine._bindings[0].host[:4]
    np.testing.assert_allclose(out[:, 0], x.mean(axis=1), rtol=1e-6)
    assert engine.infer(2)["y"].shape == (2, 8)


# -- teardown ------------------------------------------------------------------------------------
def test_close_frees_every_buffer_before_the_context_goes(trt, tmp_path):
    for io in ("mapped", "device", "host"):
        engine = _open(conv_onnx(tmp_path / "net.onnx"), tmp_path, batch=2, io=io)
        out = engine.infer()
        measure(engine, iterations=5, warmup=0)
        engine.close()
        assert fake_pycuda.STATE.leaked == 0, io
        assert not fake_pycuda.STATE.live, io  # no allocation, stream or event left
        assert not fake_pycuda.STATE.memory, io
        assert out["y"].shape == (2, 4)  # copies, not views of freed memory


def test_the_fake_leaks_what_is_freed_after_its_context_died(trt):
    """Why the order matters: pycuda skips, silently, a free whose context was detached."""
    ctx = fake_pycuda.Device(0).retain_primary_context()
    ctx.push()
    host = fake_pycuda.pagelocked_empty((4,), np.float32)
    ctx.detach()
    host.base.free()
    assert fake_pycuda.STATE.leaked == 1


def test_one_context_per_process_released_with_the_last_engine(trt, onnx_file, tmp_path):
    a = _open(onnx_file, tmp_path)
    b = _open(onnx_file, tmp_path, batch=2)
    assert len(fake_pycuda.STATE.contexts) == 1
    a.close()
    assert fake_pycuda.STATE.contexts[0].valid
    b.close()
    assert not fake_pycuda.STATE.contexts[0].valid and fake_pycuda.STATE.leaked == 0


def test_another_thread_pushes_the_context_for_its_call(trt, onnx_file, tmp_path):
    import threading

    engine = _open(onnx_file, tmp_path)
    pushes = fake_pycuda.STATE.pushes
    t = threading.Thread(target=engine.infer)
    t.start()
    t.join()
    assert fake_pycuda.STATE.pushes == pushes + 1


def test_an_engine_used_after_fork_says_to_open_it_in_the_worker(trt, onnx_file, tmp_path):
    engine = _open(onnx_file, tmp_path)
    engine._pid = -1  # as seen from a forked child
    with pytest.raises(EngineError, match="does not survive fork: open the engine in the process"):
        engine.infer()


# -- the plan cache ------------------------------------------------------------------------------
def test_plan_is_cached_with_its_build_time_and_loaded_without_rebuilding(trt, onnx_file, tmp_path):
    first = _open(onnx_file, tmp_path, batch=2)
    first.close()
    second = _open(onnx_file, tmp_path, batch=2)
    assert fake_tensorrt.LOG["builds"] == 1 and not second.built
    assert second.build_time == pytest.approx(first.build_time)
    assert second.measurement_extra()["build_time_source"] == "plan cache"
    _open(onnx_file, tmp_path, batch=2, precision="fp32")  # other options: another plan
    assert fake_tensorrt.LOG["builds"] == 2


def test_the_key_is_the_module_not_pycudas_name(monkeypatch, onnx_file, tmp_path):
    """An AGX Orin and an Orin Nano both say "Orin" through pycuda: their plans must differ."""
    fake_tensorrt.install(monkeypatch)
    agx = _open(onnx_file, tmp_path, device=_board("agx-orin-64gb", monkeypatch, cc=(8, 7), sms=16))
    monkeypatch.setattr(plan_cache, "read_compatible", lambda root=None: "nvidia,p3768-0000+p3767-0004")
    nano = _open(onnx_file, tmp_path, device=_board("orin-nano-4gb", monkeypatch, cc=(8, 7), sms=4))
    assert agx.plan_path != nano.plan_path and fake_tensorrt.LOG["builds"] == 2
    assert fake_pycuda.Device.NAME == "Orin"


def test_module_identity_reads_the_device_tree(monkeypatch, tmp_path):
    monkeypatch.setattr(plan_cache, "read_compatible", READ_COMPATIBLE)
    dt = tmp_path / "proc" / "device-tree"
    dt.mkdir(parents=True)
    (dt / "compatible").write_bytes(b"nvidia,p3768-0000+p3767-0005\x00nvidia,p3767-0005\x00nvidia,tegra234\x00")
    assert plan_cache.module_identity(root=tmp_path) == "nvidia,p3768-0000+p3767-0005"
    assert plan_cache.module_identity(gpu_name="NVIDIA H100", root=tmp_path / "none") == "gpu:NVIDIA H100"


def test_a_plan_built_in_another_power_mode_is_used_with_a_note(monkeypatch, onnx_file, tmp_path):
    from pytest_jetson.devices.device import as_device

    fake_tensorrt.install(monkeypatch)
    board = _board("orin-nano-8gb", monkeypatch, cc=(8, 7), sms=8)
    _open(onnx_file, tmp_path, device=board).close()
    other = as_device(board, "7W")
    with pytest.warns(PlanNoteWarning, match="built in power mode 15W and is used in 7W"):
        again = _open(onnx_file, tmp_path, device=other)
    assert not again.built and "power mode 15W" in again.measurement_extra()["notes"][0]


def test_a_foreign_cached_plan_is_caught_by_the_header_and_rebuilt(monkeypatch, onnx_file, tmp_path):
    fake_tensorrt.install(monkeypatch, version="8.5.2")
    old = _open(onnx_file, tmp_path)
    old_bytes = old.plan_path.read_bytes()
    old.close()
    fake_tensorrt.install(monkeypatch, version="10.3.0")
    new = _open(onnx_file, tmp_path)
    assert new.plan_path != old.plan_path  # the version is part of the key
    new.plan_path.write_bytes(old_bytes)
    with pytest.warns(plan_cache.PlanCacheWarning, match=r"built by TensorRT 8\.5\.2, this is TensorRT 10\.3\.0"):
        again = _open(onnx_file, tmp_path)
    assert again.built


def test_a_truncated_or_unloadable_cached_plan_is_rebuilt_with_a_warning(trt, onnx_file, tmp_path):
    engine = _open(onnx_file, tmp_path)
    engine.plan_path.write_bytes(engine.plan_path.read_bytes()[:-10])
    with pytest.warns(plan_cache.PlanCacheWarning, match="do not match the header's hash"):
        assert _open(onnx_file, tmp_path).built
    header = plan_cache.load_with_header(engine.plan_path, _key(engine), "x")[1]
    plan_cache.store(engine.plan_path, _key(engine), b"garbage that is not a plan", header["built"])
    with pytest.warns(plan_cache.PlanCacheWarning, match=r"(?s)could not load the cached plan.*Serialization"):
        assert _open(onnx_file, tmp_path).built


def _key(engine):
    import json
    import struct

    data = engine.plan_path.read_bytes()
    off = len(plan_cache.MAGIC)
    (n,) = struct.unpack(">I", data[off:off + 4])
    h = json.loads(data[off + 4:off + 4 + n])
    return plan_cache.PlanKey(h["onnx_sha256"], h["tensorrt"], h["module"], h["sm_count"],
                              h["compute_capability"], h["options"])


def test_a_failed_build_quotes_tensorrt_and_leaves_nothing_in_the_cache(trt, onnx_file, tmp_path):
    fake_tensorrt.FAIL_BUILD = True
    with pytest.raises(EngineError, match=r"(?s)could not build.*on Orin.*workspace=.*reformatting-free"):
        _open(onnx_file, tmp_path)
    left = [p.name for p in (tmp_path / "plans").iterdir() if not p.name.endswith(".lock")]
    assert left == []


def test_build_errors_reach_the_message_when_a_runtime_came_first_on_tensorrt_82(monkeypatch, onnx_file,
                                                                                tmp_path):
    """TensorRT 8.0-8.2 keep the first logger of the process: one logger for all keeps the errors."""
    trt = fake_tensorrt.install(monkeypatch, version="8.2.1")
    from pytest_jetson.engines.tensorrt_build import process_logger

    trt.Runtime(process_logger(trt))  # a runtime before any builder
    fake_tensorrt.FAIL_BUILD = True
    with pytest.raises(EngineError, match="reformatting-free"):
        _open(onnx_file, tmp_path)


def test_timing_cache_is_shared_between_builds(trt, onnx_file, tmp_path):
    _open(onnx_file, tmp_path)
    assert fake_tensorrt.LOG["configs"][0]._loaded_timing == b""
    timing = list((tmp_path / "plans").glob("timing-*.cache"))
    assert len(timing) == 1 and timing[0].read_bytes() == b"fake-timing-cache"
    _open(onnx_file, tmp_path, precision="fp32")
    assert fake_tensorrt.LOG["configs"][1]._loaded_timing == b"fake-timing-cache"


# -- shapes --------------------------------------------------------------------------------------
def test_dynamic_batch_gets_a_profile_from_one_to_batch(trt, onnx_file, tmp_path):
    _open(onnx_file, tmp_path, batch=8)
    (config,) = fake_tensorrt.LOG["configs"]
    assert config._profiles[0]._shapes["x"] == ((1, 8), (8, 8), (8, 8))


def test_dynamic_height_and_width_need_real_sizes(trt, tmp_path):
    path = conv_onnx(tmp_path / "anysize.onnx", size=None)
    with pytest.raises(EngineError, match=r"(?s)anysize-fp16-b1: input 'x' has dynamic dimensions besides "
                                          r"the batch \(\?x3x\?x\?.*input_shape=.*resolution="):
        _open(path, tmp_path)
    _open(path, tmp_path, batch=2, resolution=32)
    assert fake_tensorrt.LOG["configs"][-1]._profiles[0]._shapes["x"] == (
        (1, 3, 32, 32), (2, 3, 32, 32), (2, 3, 32, 32))
    engine = _open(path, tmp_path, batch=2, input_shape=(3, 48, 64))
    assert engine.inputs[0].shape == (2, 3, 48, 64)
    with pytest.raises(EngineError, match="says batch 4"):
        _open(path, tmp_path, batch=2, input_shape=(4, 3, 48, 64))


def test_fixed_batch_onnx_needs_no_profile(trt, tmp_path):
    path = tiny_onnx(tmp_path / "fixed.onnx", features=8, batch=4)
    engine = _open(path, tmp_path, batch=4)
    assert engine.max_batch == 4 and fake_tensorrt.LOG["configs"][0]._profiles == []
    with pytest.raises(EngineError, match="fixed batch of 4"):
        _open(path, tmp_path, batch=2)


def test_a_batch_beyond_the_profile_is_a_clear_error(trt, onnx_file, tmp_path):
    engine = _open(onnx_file, tmp_path, batch=2)
    with pytest.raises(EngineError, match=r"tiny-fp16-b2: batch 3 is larger.*max batch 2.*batch=3"):
        engine.infer(3)


# -- precisions ----------------------------------------------------------------------------------
@pytest.mark.parametrize("precision, present, absent", [
    ("fp32", set(), {"TF32", "FP16", "INT8"}),
    ("tf32", {"TF32"}, {"FP16", "INT8"}),
    ("fp16", {"FP16"}, {"INT8"}),
    ("int8", {"INT8", "FP16"}, set()),
])
def test_precision_flags(trt, onnx_file, tmp_path, precision, present, absent):
    _open(onnx_file, tmp_path, precision=precision)
    flags = {f.name for f in fake_tensorrt.LOG["configs"][0]._flags}
    assert present <= flags and not (absent & flags)


def test_int8_before_tensorrt_10_1_sets_trtexecs_placeholder_ranges(monkeypatch, tmp_path):
    fake_tensorrt.install(monkeypatch, version="8.5.2")
    _open(conv_onnx(tmp_path / "net.onnx"), tmp_path, precision="int8")
    assert fake_tensorrt.LOG["ranges"] > 0
    assert fake_tensorrt.LOG["parsed_paths"] == [str(tmp_path / "net.onnx")]


@pytest.mark.parametrize("version", ["10.3.0", "10.13.3"])
def test_int8_from_tensorrt_10_1_gets_placeholder_qdq_instead_of_deprecated_ranges(monkeypatch, tmp_path, version):
    fake_tensorrt.install(monkeypatch, version=version)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        engine = _open(conv_onnx(tmp_path / "net.onnx"), tmp_path, precision="int8")
    assert fake_tensorrt.LOG["ranges"] == 0
    (parsed,) = fake_tensorrt.LOG["parsed_paths"]
    assert parsed.endswith(".qdq.onnx")
    assert not list((tmp_path / "plans").glob("*.qdq.onnx"))  # the copy is not left behind
    assert engine.precision == "int8"


@pytest.mark.parametrize("version", ["8.5.2", "10.3.0"])
def test_int8_on_a_network_with_its_own_qdq_gets_no_placeholders(monkeypatch, tmp_path, version):
    fake_tensorrt.install(monkeypatch, version=version)
    path = conv_onnx(tmp_path / "qat.onnx", qdq=True)
    _open(path, tmp_path, precision="int8")
    assert fake_tensorrt.LOG["ranges"] == 0 and fake_tensorrt.LOG["parsed_paths"] == [str(path)]


def test_int8_on_a_board_without_fast_int8_falls_back_visibly(monkeypatch, tmp_path):
    fake_tensorrt.install(monkeypatch, version="8.2.1")
    nano = _board("nano", monkeypatch, cc=(5, 3), sms=1)
    path = conv_onnx(tmp_path / "net.onnx")
    with pytest.warns(PrecisionFallbackWarning, match=r"int8 requested; Jetson Nano .*sm_53.*built fp16"):
        engine = _open(path, tmp_path, precision="int8", device=nano)
    assert engine.precision == "fp16" and engine.name == "net-fp16-b1"
    flags = {f.name for f in fake_tensorrt.LOG["configs"][0]._flags}
    assert "INT8" not in flags
    m = measure(engine, iterations=3, warmup=0)
    assert m.precision == "fp16" and m.extra["requested_precision"] == "int8"
    with pytest.raises(EngineError, match=r"int8 requested, but Jetson Nano.*precision='fp16'"):
        _open(path, tmp_path, precision="int8", device=nano, precision_fallback=False)


def test_tf32_before_ampere_is_an_error(monkeypatch, onnx_file, tmp_path):
    fake_tensorrt.install(monkeypatch, version="8.5.2")
    xavier = _board("xavier-nx", monkeypatch, cc=(7, 2), sms=6)
    with pytest.raises(EngineError, match=r"tf32 needs an Ampere.*Jetson Xavier NX.*7\.2.*'fp32' or 'fp16'"):
        _open(onnx_file, tmp_path, precision="tf32", device=xavier)


# -- DLA -----------------------------------------------------------------------------------------
# 8.x prints the placement in its own layout (dashed headings, no trailing commas), 10.x in
# sampleCudla's: the guard reads both
@pytest.mark.parametrize("version", ["8.2.1", "8.5.2", None])
def test_dla_builds_a_static_profile_and_reports_where_layers_ran(monkeypatch, tmp_path, version):
    fake_tensorrt.install(monkeypatch, **({"version": version} if version else {}))
    board = _board("agx-orin-64gb", monkeypatch, cc=(8, 7), sms=16, dla=2)
    path = conv_onnx(tmp_path / "net.onnx", softmax=True)
    engine = _open(path, tmp_path, batch=4, dla_core=1, device=board)
    config = fake_tensorrt.LOG["configs"][0]
    assert config._profiles[0]._shapes["x"] == ((4, 3, 16, 16),) * 3  # static: min = opt = max
    assert config._device.name == "DLA" and config._dla == 1
    assert "GPU_FALLBACK" in {f.name for f in config._flags}
    assert fake_tensorrt.LOG["runtimes"][-1].DLA_core == 1
    assert engine.placement.describe() == "dla1, 1 of 7 layers on the GPU"
    assert engine.placement.gpu_layers == ["/softmax/Softmax"]
    m = measure(engine, iterations=3, warmup=0)
    assert m.extra["placement"] == "dla1, 1 of 7 layers on the GPU"
    engine.close()
    again = _open(path, tmp_path, batch=4, dla_core=1, device=board)
    assert not again.built and again.placement.describe() == "dla1, 1 of 7 layers on the GPU"


@pytest.mark.parametrize("version", ["8.2.1", "8.5.2", None])
def test_a_dla_request_that_lands_nowhere_on_the_dla_is_an_error(monkeypatch, tmp_path, version):
    fake_tensorrt.install(monkeypatch, **({"version": version} if version else {}))
    board = _board("agx-orin-64gb", monkeypatch, cc=(8, 7), sms=16, dla=2)
    path = conv_onnx(tmp_path / "soft.onnx", only_softmax=True)
    with pytest.raises(EngineError, match=r"(?s)no layer of .*soft\.onnx.* runs on the DLA.*dla_core=None"
                                          r".*no layer in the network can run on DLA"):
        _open(path, tmp_path, dla_core=0, device=board)
    assert not list((tmp_path / "plans").glob("*.plan"))


def test_dla_on_a_board_without_one(monkeypatch, onnx_file, tmp_path):
    fake_tensorrt.install(monkeypatch)
    with pytest.raises(EngineError, match="DLA runs fp16 or int8, not fp32"):
        _open(onnx_file, tmp_path, precision="fp32", dla_core=0)
    with pytest.raises(EngineError, match=r"Jetson Orin Nano 8GB has 0 DLA core"):
        _open(onnx_file, tmp_path, dla_core=0, device=simulated("orin-nano"))
    with pytest.raises(EngineError, match=r"Orin has 0 DLA core\(s\) \(TensorRT's Builder.num_DLA_cores\)"):
        _open(onnx_file, tmp_path, dla_core=0)


# -- bad input -----------------------------------------------------------------------------------
def test_an_onnx_tensorrt_cannot_parse(trt, tmp_path):
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("FancyOp", ["x"], ["y"], domain="custom")], "g", [x], [y])
    path = tmp_path / "fancy.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.raises(ModelError, match=r"(?s)fancy-fp16-b1: TensorRT 10\.3\.0's ONNX parser rejected "
                                         r".*fancy\.onnx' on Orin.*No importer registered for op: FancyOp"
                                         r".*Fix: re-export"):
        _open(path, tmp_path)


def _plan_file(monkeypatch, tmp_path, version="10.3.0"):
    fake_tensorrt.install(monkeypatch, version=version)
    engine = _open(tiny_onnx(tmp_path / "tiny.onnx", features=8), tmp_path, batch=2)
    plan = plan_cache.decode(engine.plan_path.read_bytes(), _key(engine))
    engine.close()
    path = tmp_path / "tiny.engine"
    path.write_bytes(plan)
    return path


def test_a_plan_file_runs(monkeypatch, tmp_path):
    path = _plan_file(monkeypatch, tmp_path)
    engine = _open(path, tmp_path, batch=2)
    assert engine.max_batch == 2 and engine.infer()["y"].shape == (2, 8)


@pytest.mark.parametrize("case, said", [
    ("corrupt", r"Serialization assertion safeVersionRead"),
    ("other-version", r"not compatible with this version of TensorRT, expecting library version 10\.3\.0 got 8\.5\.2"),
    ("other-gpu", r"incompatible device, expecting compute 8\.7 got compute 7\.2"),
])
def test_a_plan_file_tensorrt_cannot_load(monkeypatch, tmp_path, case, said):
    path = _plan_file(monkeypatch, tmp_path, version="8.5.2" if case == "other-version" else "10.3.0")
    if case == "corrupt":
        path.write_bytes(b"\x00not a plan" * 10)
    fake_tensorrt.install(monkeypatch, version="10.3.0")
    if case == "other-gpu":
        monkeypatch.setattr(fake_pycuda.Device, "CC", (7, 2))
    with pytest.raises(EngineError, match=r"(?s)tiny-fp16-b1: TensorRT 10\.3\.0 cannot load the plan file "
                                          r".*tiny\.engine' on Orin.*Fix: rebuild it on this board.*" + said):
        _open(path, tmp_path)


def test_a_plan_file_opened_at_a_batch_its_profile_does_not_cover(monkeypatch, tmp_path):
    path = _plan_file(monkeypatch, tmp_path)
    with pytest.raises(EngineError, match=r"profile covers batch 1 to 2, not 3; open it with batch=2"):
        _open(path, tmp_path, batch=3)


def test_options_of_the_tensorrt_backend_elsewhere_are_ignored_but_typos_are_errors(onnx_file):
    # a suite written for the board runs unchanged on the host: io= means nothing to onnxruntime
    engine = open_engine(onnx_file, backend="onnxruntime", device=None, precision="fp32", io="host",
                         cuda_graph=False)
    assert engine.backend == "onnxruntime"
    with pytest.raises(EngineError, match=r"ioo='host' is not an engine option; the options are "
                                          r"precision, batch, dla_core, cache_dir, cuda_graph, input_shape, io"):
        open_engine(onnx_file, backend="onnxruntime", device=None, ioo="host")


def test_missing_onnx_is_a_model_error(trt, tmp_path):
    with pytest.raises(ModelError, match=r"absent\.onnx.*does not exist"):
        _open(tmp_path / "absent.onnx", tmp_path)


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
@pytest.mark.parametrize("io", ["device", "host", "mapped"])
def test_real_pycuda_buffers_stream_events(monkeypatch, onnx_file, tmp_path, io):
    """The pycuda half for real: primary context, page-locked, mapped and device buffers, one
    stream, two inferences in flight, CUDA-event timing, teardown before the context goes."""
    cuda = _cuda_or_skip()
    fake_tensorrt.install(monkeypatch, real_pycuda=True)
    engine = _open(onnx_file, tmp_path, batch=4, io=io)
    out = engine.infer()["y"]
    np.testing.assert_array_equal(out, engine._bindings[0].host[:4])  # through the GPU and back
    m = measure(engine, iterations=200, warmup="50ms")
    assert len(m.device_latencies) == 200 and m.latency_gpu > 0
    engine.close()
    again = _open(onnx_file, tmp_path, batch=4, io=io)
    assert not again.built
    again.close()
    print(f"\nGPU {cuda.Device(0).name()} io={io}: latency {m.latency_mean * 1e6:.1f} us, GPU compute "
          f"{m.latency_gpu * 1e6:.1f} us, {m.throughput:.0f} items/s, graphs: {m.extra['cuda_graph']}")


# -- the caller's inputs -------------------------------------------------------------------------
@pytest.mark.parametrize("version", ["8.2.1", "10.3.0"])
@pytest.mark.parametrize("io, integrated", [("mapped", 1), (None, 0), ("host", 1)])  # mapped, device, host
def test_the_callers_inputs_go_through_every_io_mode(monkeypatch, onnx_file, tmp_path, version, io,
                                                     integrated):
    fake_tensorrt.install(monkeypatch, version=version)
    monkeypatch.setattr(fake_pycuda.Device, "INTEGRATED", integrated)
    engine = _open(onnx_file, tmp_path, batch=4, io=io)
    assert [(s.name, s.shape, s.dtype) for s in engine.input_specs] == [("x", (4, 8), np.float32)]
    assert [(s.name, s.shape) for s in engine.output_specs] == [("y", (4, 8))]
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    out = engine(x)["y"]
    # the fake's kernel writes each row's input mean: the outputs are of these inputs
    np.testing.assert_allclose(out[:, 0], x.mean(axis=1), rtol=1e-6)
    small = engine({"x": x[:2] * 2})["y"]  # a smaller batch within the profile
    np.testing.assert_allclose(small[:, 0], 2 * x[:2].mean(axis=1), rtol=1e-6)
    assert engine.last_device_time is not None and engine.last_device_time > 0
    with pytest.raises(EngineError, match=r"input 'x' has shape \(4, 3\); the engine takes \(batch, 8\)"):
        engine(np.zeros((4, 3), np.float32))
    with pytest.raises(EngineError, match="batch 5 is larger than the engine's profile allows"):
        engine(np.zeros((5, 8), np.float32))
    engine.close()
    with pytest.raises(EngineError, match="called on a closed engine"):
        engine(x)
