"""The CUDA-graph path of the TensorRT backend against fake cuda-python runtimes whose functions,
parameter counts and returns are read from the real wheels (tests/fakes/cuda_api/generate.py).

What these tests cannot show: that a real driver captures TensorRT's enqueue.
"""

import inspect
import re

import pytest
from fakes import fake_cudart, fake_pycuda, fake_tensorrt
from fakes.onnx_models import conv_onnx

from pytest_jetson.engines import cuda_graphs, open_engine
from pytest_jetson.run.harness import measure

pytestmark = pytest.mark.usefixtures("fresh_trt_process")  # tests/engines/conftest.py


def _open(tmp_path, **kw):
    tmp_path.mkdir(parents=True, exist_ok=True)
    return open_engine(conv_onnx(tmp_path / "net.onnx"), backend="tensorrt", precision="fp16", batch=2,
                       cache_dir=tmp_path / "plans", device=None, **kw)


def test_the_tables_are_read_from_the_wheels_and_differ_where_the_wheels_do():
    """The point of generating them: 11.8's cudaGraphInstantiate is not 12's."""
    assert {"11.8.7", "12.4.0", "12.9.0", "13.0.0"} <= set(fake_cudart.VERSIONS)
    old, new = fake_cudart.table("11.8.7"), fake_cudart.table("13.0.0")
    assert old["functions"]["cudaGraphInstantiate"]["params"] == ["graph", "pLogBuffer", "bufferSize"]
    assert new["functions"]["cudaGraphInstantiate"]["params"] == ["graph", "flags"]
    for version in fake_cudart.VERSIONS:
        assert fake_cudart.table(version)["functions"]["cudaGraphInstantiateWithFlags"]["params"] == [
            "graph", "flags"]
    cudart = fake_cudart.module("11.8.7")
    with pytest.raises(TypeError, match="exactly 3 positional arguments"):
        cudart.cudaGraphInstantiate(1, 0)


@pytest.mark.parametrize("version", fake_cudart.VERSIONS)
def test_every_cuda_python_line_captures_and_replays(monkeypatch, tmp_path, version):
    """cuda-python 11.8 (the only line JetPack 5's CUDA 11.4 can use) once crashed engine open."""
    fake_tensorrt.install(monkeypatch)
    fake_cudart.install(monkeypatch, version)
    engine = _open(tmp_path)
    fake_pycuda.STATE.trace.clear()
    m = measure(engine, iterations=10, warmup=0, profile=False)  # the profiling pass enqueues directly
    engine.close()
    assert m.extra["cuda_graph"] == "on"
    assert fake_cudart.STATE.launches >= 10
    # the timed loop replays the graph: no direct enqueue of TensorRT's inside it
    assert [kind for kind, _ in fake_pycuda.STATE.trace].count("enqueue") == 0
    assert m.latency_gpu == pytest.approx(fake_tensorrt.COMPUTE_MS_PER_ITEM * 2 * 1e-3)
    assert not fake_cudart.STATE.graphs and not fake_cudart.STATE.execs  # nothing left behind


def test_any_failure_of_the_graph_path_falls_back_with_the_reason(monkeypatch, tmp_path):
    fake_tensorrt.install(monkeypatch)
    cudart = fake_cudart.install(monkeypatch, "12.9.0")

    def broken(graph, flags):
        raise TypeError("cudaGraphInstantiateWithFlags() takes exactly 3 positional arguments (2 given)")

    monkeypatch.setattr(cudart, "cudaGraphInstantiateWithFlags", broken)
    engine = _open(tmp_path)
    m = measure(engine, iterations=5, warmup=0)
    engine.close()
    assert m.iterations == 5 and fake_cudart.STATE.launches == 0
    assert m.extra["cuda_graph"].startswith("cudaGraphInstantiateWithFlags() takes exactly 3")
    assert m.extra["cuda_graph"].endswith("; enqueued directly")


@pytest.mark.parametrize("version, driver, line", [
    ("13.0.0", 12060, "cuda-python>=12,<13"),    # JetPack 6: CUDA 12.6
    ("12.9.0", 11040, "cuda-python>=11.8,<12"),  # JetPack 5: CUDA 11.4
])
def test_a_cuda_python_too_new_for_the_driver_is_said_once_with_the_fix(monkeypatch, tmp_path, version, driver,
                                                                       line):
    monkeypatch.setattr(cuda_graphs, "_WARNED", set())
    fake_tensorrt.install(monkeypatch)
    fake_cudart.install(monkeypatch, version, driver=driver)
    with pytest.warns(cuda_graphs.CudaGraphWarning) as record:
        engines = [_open(tmp_path / str(i)) for i in range(2)]
    texts = [str(w.message) for w in record if issubclass(w.category, cuda_graphs.CudaGraphWarning)]
    assert len(texts) == 1  # once per session, not per engine
    major, minor = driver // 1000, driver % 1000 // 10
    assert f"cuda-python {version} needs a CUDA {version.split('.')[0]} driver" in texts[0]
    assert f"driver is CUDA {major}.{minor}" in texts[0] and f"pip install '{line}'" in texts[0]
    for engine in engines:
        m = measure(engine, iterations=3, warmup=0)
        engine.close()
        assert m.iterations == 3 and fake_cudart.STATE.launches == 0
        assert m.extra["cuda_graph"].startswith(f"cuda-python {version} needs")


def test_every_cudart_name_the_plugin_uses_exists_with_its_arity_in_every_line():
    """A conformance check of the source itself against the tables read from the wheels."""
    source = inspect.getsource(cuda_graphs)
    used = set(re.findall(r"cudart\.(cuda\w+)\(", source))
    assert {"cudaGraphInstantiateWithFlags", "cudaStreamBeginCapture", "cudaDriverGetVersion"} <= used
    assert "cudaGraphInstantiate" not in used  # 11.8 and 12 disagree on it
    for version in fake_cudart.VERSIONS:
        functions = fake_cudart.table(version)["functions"]
        for name in used:
            assert name in functions, (version, name)
            calls = re.findall(rf"cudart\.{name}\(([^)]*)\)", source)
            for args in calls:
                given = len([a for a in args.split(",") if a.strip()])
                assert given == len(functions[name]["params"]), (version, name, args)
