"""``engine(x)`` on the TensorRT backend, against the version-exact fakes (tests/fakes): the
caller's numpy arrays through every I/O mode, a batch below the profile's largest, dynamic height
and width within the profile's range, arrays already on the GPU bound in place with no copy, and
outputs left on the GPU.

What these tests cannot show: real TensorRT on a board reading a CuPy or PyTorch buffer (the
fake checks that the address TensorRT is given is the caller's and that nothing copies it)."""

import numpy as np
import pytest
from fakes import fake_cudart, fake_pycuda, fake_tensorrt
from fakes.onnx_models import seg_onnx

from pytest_jetson.engines import open_engine
from pytest_jetson.engines.tensorrt_run import DeviceView
from pytest_jetson.errors import EngineError
from pytest_jetson.run.harness import measure

pytestmark = pytest.mark.usefixtures("fresh_trt_process")  # tests/engines/conftest.py

RANGE = [(3, 32, 32), (3, 480, 640), (3, 960, 960)]  # smallest, usual, largest
V2, V3 = "8.2.1", "10.3.0"  # the bindings-array API (JetPack 4.6) and the name-based one


def _open(tmp_path, monkeypatch, version=V3, io=None, integrated=1, **kw):
    fake_tensorrt.install(monkeypatch, version=version)
    monkeypatch.setattr(fake_pycuda.Device, "INTEGRATED", integrated)
    kw.setdefault("input_shape", RANGE)
    kw.setdefault("batch", 2)
    tmp_path.mkdir(parents=True, exist_ok=True)
    return open_engine(seg_onnx(tmp_path / "det.onnx"), backend="tensorrt", precision="fp16", io=io,
                       cache_dir=tmp_path / "plans", device=None, **kw)


class CudaArray:
    """What CuPy, PyTorch CUDA tensors and Numba device arrays expose (version 3 of the interface),
    over memory of the fake GPU."""

    def __init__(self, data, ptr, strides=None, device=None):
        self.__cuda_array_interface__ = {"shape": data.shape, "typestr": data.dtype.str, "data": (ptr, False),
                                         "strides": strides, "version": 3, "stream": None}
        if device is not None:
            self.device = type("Device", (), {"index": device})()


def _on_gpu(engine, data):
    """``data`` copied into a fresh allocation of the fake GPU (outside what is asserted on)."""
    with engine._ctx.current():
        alloc = fake_pycuda.mem_alloc(data.nbytes)
    fake_pycuda.device_bytes(alloc)[: data.nbytes] = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
    return alloc


def _means(x):
    return x.reshape(x.shape[0], -1).mean(axis=1)


@pytest.mark.parametrize("version", [V2, V3])
@pytest.mark.parametrize("io, integrated", [("mapped", 1), (None, 0), ("host", 1)])  # mapped, device, host
def test_dynamic_height_and_width_within_the_profile_give_outputs_of_each_calls_size(
        tmp_path, monkeypatch, version, io, integrated):
    engine = _open(tmp_path, monkeypatch, version, io, integrated)
    (config,) = fake_tensorrt.LOG["configs"]
    assert config._profiles[0]._shapes["x"] == ((1, 3, 32, 32), (2, 3, 480, 640), (2, 3, 960, 960))
    assert engine.inputs[0].shape == (2, 3, 480, 640) and engine.outputs[0].shape == (2, 1, 480, 640)
    assert engine.input_ranges == {"x": ((3, 32, 32), (3, 960, 960))}
    rng = np.random.default_rng(0)
    for shape in [(2, 3, 480, 640), (1, 3, 48, 320), (2, 3, 960, 960), (1, 3, 480, 640)]:
        x = rng.random(shape, dtype=np.float32)
        y = engine(x)["y"]
        assert y.shape == (shape[0], 1) + shape[2:]
        # the fake's kernel writes each sample's input mean: these outputs are of these inputs
        np.testing.assert_allclose(y.reshape(shape[0], -1)[:, 0], _means(x), rtol=1e-5)
    # the timed loop still runs at the opened size, at full batch, after calls at other sizes
    m = measure(engine, iterations=5, warmup=0)
    assert m.batch == 2 and engine.infer()["y"].shape == (2, 1, 480, 640)


def test_a_size_outside_the_profile_names_the_range(tmp_path, monkeypatch):
    engine = _open(tmp_path, monkeypatch)
    with pytest.raises(EngineError, match=r"input 'x' has shape \(1, 3, 16, 640\); the engine takes "
                                          r"\(batch, 3, 32\.\.960, 32\.\.960\)"):
        engine(np.zeros((1, 3, 16, 640), np.float32))
    with pytest.raises(EngineError, match="batch 3 is larger than the engine's profile allows"):
        engine(np.zeros((3, 3, 480, 640), np.float32))
    one = _open(tmp_path / "one", monkeypatch, input_shape=(3, 480, 640))
    assert one.input_ranges == {}
    with pytest.raises(EngineError, match=r"has shape \(1, 3, 48, 320\); the engine takes \(batch, 3, 480, 640\)"):
        one(np.zeros((1, 3, 48, 320), np.float32))


def test_a_range_that_shrinks_is_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(EngineError, match=r"give \(smallest, usual, largest\) with each dimension growing"):
        _open(tmp_path, monkeypatch, input_shape=[(3, 480, 640), (3, 32, 32), (3, 960, 960)])


@pytest.mark.parametrize("version", [V2, V3])
@pytest.mark.parametrize("io, integrated", [(None, 0), ("host", 1), ("mapped", 1)])  # device, host, mapped
def test_an_array_on_the_gpu_is_bound_in_place_without_a_copy(tmp_path, monkeypatch, version, io, integrated):
    engine = _open(tmp_path, monkeypatch, version, io, integrated)
    x = np.random.default_rng(1).random((1, 3, 48, 320), dtype=np.float32)
    alloc = _on_gpu(engine, x)
    fake_pycuda.STATE.copy_log.clear()
    y = engine(CudaArray(x, int(alloc)))["y"]
    np.testing.assert_allclose(y.reshape(1, -1)[:, 0], _means(x), rtol=1e-5)
    assert [c for c in fake_pycuda.STATE.copy_log if c[0] == "htod"] == []  # nothing copied in
    # the engine's own buffer untouched, and bound again for what runs next
    own = engine._bindings[0]
    assert not np.any(own.host.reshape(-1)[: x.size] == x.reshape(-1))
    if version == V3:
        assert engine._context._addresses["x"] == own.address
    else:
        assert engine._runner.ptrs[own.index] == own.address
    # the same call from a numpy array copies it where the mode copies (device, host modes)
    fake_pycuda.STATE.copy_log.clear()
    np.testing.assert_allclose(engine(x)["y"], y)
    copied = [c for c in fake_pycuda.STATE.copy_log if c[0] == "htod"]
    assert copied == ([] if engine.io == "mapped" else [("htod", own.address, x.nbytes)])


def test_an_array_on_the_gpu_runs_without_the_cuda_graph_its_addresses_are_captured_in(tmp_path, monkeypatch):
    fake_cudart.install(monkeypatch, fake_cudart.VERSIONS[-2])
    engine = _open(tmp_path, monkeypatch, input_shape=(3, 480, 640), batch=1)
    assert engine.measurement_extra()["cuda_graph"] == "on"
    x = np.ones((1, 3, 480, 640), np.float32)
    alloc = _on_gpu(engine, x)
    launches = fake_cudart.STATE.launches
    assert engine(CudaArray(x, int(alloc)))["y"].max() == 1.0
    assert fake_cudart.STATE.launches == launches  # enqueued directly at the caller's address
    engine.infer()
    assert fake_cudart.STATE.launches == launches + 1  # the graph again, on the engine's buffers


def test_pycuda_allocations_and_gpuarrays_are_taken_too(tmp_path, monkeypatch):
    engine = _open(tmp_path, monkeypatch, input_shape=(3, 64, 64), batch=1, integrated=0)
    x = np.full((1, 3, 64, 64), 3.0, np.float32)
    alloc = _on_gpu(engine, x)
    fake_pycuda.STATE.copy_log.clear()
    assert engine(alloc)["y"].max() == 3.0  # a bare DeviceAllocation: taken to hold the input's spec
    gpuarray = type("GPUArray", (), {"gpudata": alloc, "shape": x.shape, "dtype": x.dtype, "strides": x.strides})()
    assert engine(gpuarray)["y"].max() == 3.0
    assert [c for c in fake_pycuda.STATE.copy_log if c[0] == "htod"] == []


def test_arrays_on_the_gpu_that_tensorrt_cannot_read_are_refused_naming_the_fix(tmp_path, monkeypatch):
    engine = _open(tmp_path, monkeypatch, input_shape=(3, 64, 64), batch=1)
    x = np.zeros((1, 3, 64, 64), np.float32)
    alloc = _on_gpu(engine, x)  # held: a collected allocation is freed, as pycuda's is
    ptr = int(alloc)
    with pytest.raises(EngineError, match=r"input 'x' on the GPU \(CudaArray\) is not contiguous \(strides "
                                          r"\(4, 4, 768, 12\).*x.contiguous\(\)"):
        engine(CudaArray(x, ptr, strides=(4, 4, 768, 12)))
    with pytest.raises(EngineError, match=r"is on CUDA device 1; the engine runs on device 0"):
        engine(CudaArray(x, ptr, device=1))
    with pytest.raises(EngineError, match="has a null device pointer"):
        engine(CudaArray(x, 0))
    with pytest.raises(EngineError, match=r"starts at 0x[0-9a-f]+, not on a 256-byte boundary as TensorRT requires"):
        engine(CudaArray(x, ptr + 64))
    with pytest.raises(EngineError, match=r"input 'x' is float16; the engine takes float32"):
        engine(CudaArray(x.astype(np.float16), ptr))
    np.testing.assert_array_equal(engine(CudaArray(x, ptr, strides=(49152, 16384, 256, 4)))["y"], 0)  # C order


@pytest.mark.parametrize("io, integrated", [(None, 0), (None, 1), ("host", 1)])
def test_outputs_can_stay_on_the_gpu(tmp_path, monkeypatch, io, integrated):
    engine = _open(tmp_path, monkeypatch, io=io, integrated=integrated, input_shape=(3, 64, 64), batch=1)
    x = np.full((1, 3, 64, 64), 2.0, np.float32)
    fake_pycuda.STATE.copy_log.clear()
    (name, view), = engine(x, outputs="device").items()
    assert name == "y" and isinstance(view, DeviceView)
    iface = view.__cuda_array_interface__
    assert iface["shape"] == (1, 1, 64, 64) and iface["typestr"] == "<f4" and iface["strides"] is None
    assert iface["data"][0] == engine._bindings[1].address  # the engine's own buffer
    on_gpu = fake_pycuda.device_bytes(iface["data"][0])[: view.nbytes].view(np.float32)
    assert np.all(on_gpu == 2.0)
    if engine.io == "device":
        assert [c for c in fake_pycuda.STATE.copy_log if c[0] == "dtoh"] == []  # nothing copied out


def test_the_host_backends_have_no_device_outputs(tmp_path):
    from pytest_jetson.devices.device import simulated

    engine = open_engine(seg_onnx(tmp_path / "det.onnx"), backend="simulated", device=simulated("orin-nano"),
                         input_shape=(3, 64, 64))
    with pytest.raises(EngineError, match="returns outputs on the host only; call engine\\(x\\) without outputs='device'"):
        engine(np.zeros((1, 3, 64, 64), np.float32), outputs="device")
