"""What a user's first inference costs, and closing an engine from another thread, against fake
TensorRT + pycuda + cuda-python (tests/fakes).

``latency_first`` is the first enqueue after open: TensorRT's lazy loading of its kernels happens
there, whether CUDA graphs are captured afterwards or not. pycuda keeps one context stack per
thread and aborts the process at exit when one still holds a context (fake_pycuda's docstring
cites the source).
"""

import threading
import time

import pytest
from fakes import fake_cudart, fake_pycuda, fake_tensorrt
from fakes.onnx_models import conv_onnx

from pytest_jetson.engines import open_engine
from pytest_jetson.run.harness import measure

#: what the fake's first enqueue of the process costs on the host (lazy loading)
LAZY_S = 0.25


pytestmark = pytest.mark.usefixtures("fresh_trt_process")  # tests/engines/conftest.py


def _open(tmp_path, **kw):
    return open_engine(conv_onnx(tmp_path / "net.onnx"), backend="tensorrt", precision="fp16", batch=2,
                       cache_dir=tmp_path / "plans", device=None, **kw)


def _lazy_first_enqueue(monkeypatch):
    """The fake's first enqueue sleeps LAZY_S, as the first enqueue after open loads kernels."""
    done = []
    real = fake_tensorrt.IExecutionContext.execute_async_v3

    def enqueue(self, stream_handle):
        if not done:
            done.append(1)
            time.sleep(LAZY_S)
        return real(self, stream_handle)

    monkeypatch.setattr(fake_tensorrt.IExecutionContext, "execute_async_v3", enqueue)


@pytest.mark.parametrize("graphs", [True, False], ids=["cuda-graph", "no-graph"])
def test_latency_first_is_the_first_enqueue_after_open_with_or_without_graphs(monkeypatch, tmp_path, graphs):
    fake_tensorrt.install(monkeypatch)
    fake_cudart.install(monkeypatch, "12.9.0")
    _lazy_first_enqueue(monkeypatch)
    engine = _open(tmp_path, cuda_graph=graphs)
    m = measure(engine, iterations=3, warmup=0)
    engine.close()
    assert m.extra["cuda_graph"] == ("on" if graphs else "off")
    # with graphs the first enqueue is the warm-up before capture; it is what a user first waits for
    assert LAZY_S <= m.latency_first < LAZY_S + 0.2
    if graphs:
        # captured once, at the opened batch: no second bind, enqueue and capture for the timing
        assert fake_cudart.STATE.calls.count("cudaStreamBeginCapture") == 1
        assert 0 <= m.extra["cuda_graph_capture_s"] < LAZY_S
    else:
        assert "cuda_graph_capture_s" not in m.extra


def test_an_engine_closed_from_another_thread_leaves_no_context_pushed_at_exit(monkeypatch, tmp_path):
    """A timeout thread closes the engine: pycuda must not abort the process at exit."""
    fake_tensorrt.install(monkeypatch)
    engine = _open(tmp_path, cuda_graph=False)
    engine.infer()
    t = threading.Thread(target=engine.close)
    t.start()
    t.join()
    assert fake_pycuda.abort_at_exit() == []
    assert fake_pycuda.STATE.leaked == 0  # every buffer freed in its context
    assert fake_pycuda.STATE.released == 1 and not fake_pycuda.STATE.contexts[0].valid


def test_an_engine_opened_in_a_thread_and_closed_in_the_main_one_leaves_no_stack_behind(monkeypatch, tmp_path):
    fake_tensorrt.install(monkeypatch)
    box = []
    t = threading.Thread(target=lambda: box.append(_open(tmp_path, cuda_graph=False)))
    t.start()
    t.join()
    out = box[0].infer()
    box[0].close()
    assert out and fake_pycuda.abort_at_exit() == []
    assert fake_pycuda.STATE.leaked == 0 and fake_pycuda.STATE.released == 1
