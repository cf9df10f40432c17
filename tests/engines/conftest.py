import pytest

from pytest_jetson.engines import cache as plan_cache
from pytest_jetson.engines import tensorrt_build
from pytest_jetson.engines.tensorrt_run import ProcessContext


@pytest.fixture
def fresh_trt_process(monkeypatch):
    """A TensorRT test starts as a fresh process: no CUDA context, no TensorRT logger, and the
    board's module string (which keys cached plans) of an Orin Nano devkit."""
    monkeypatch.setattr(ProcessContext, "_by_pid", {})
    monkeypatch.setattr(tensorrt_build, "_LOGGERS", {})
    monkeypatch.setattr(plan_cache, "read_compatible", lambda root=None: "nvidia,p3768-0000+p3767-0005")
