"""A pool's fingerprint carries the sha256 of the model files its workers measured, as a
single-process measurement's does, so a model replaced under its name reads as a workload change
for pools too."""

import pytest

from pytest_jetson.devices.device import simulated
from pytest_jetson.engines import open_engine
from pytest_jetson.engines.cache import onnx_digest
from pytest_jetson.models import zoo
from pytest_jetson.run.pool import run_pool
from pytest_jetson.run.recorder import environment_of


@pytest.fixture
def net(tmp_path):
    path = tmp_path / "net.onnx"
    path.write_bytes(zoo.build("squeezenet1_1", 64).SerializeToString())
    return path


def test_a_simulated_pool_of_a_model_file_carries_its_sha256(net):
    single = environment_of(None, open_engine(str(net), backend="simulated", device=simulated("orin-nano"),
                                              precision="int8"))
    m = run_pool(str(net), processes=2, precision="int8", duration="1s", warmup="0.1s")
    assert single["model_sha256"] == onnx_digest(net)
    assert m.environment["model_sha256"] == single["model_sha256"]
    assert [w.environment["model_sha256"] for w in m.workers] == [single["model_sha256"]] * 2


def test_a_simulated_pool_of_a_zoo_model_measures_no_file():
    m = run_pool("squeezenet1_1", processes=2, precision="int8", duration="1s", warmup="0.1s")
    assert "model_sha256" not in m.environment
    assert all("model_sha256" not in w.environment for w in m.workers)


def test_real_pool_workers_carry_the_sha256_of_the_files_they_measured(tmp_path):
    pytest.importorskip("onnxruntime")
    from fakes.onnx_models import tiny_onnx

    net = tiny_onnx(tmp_path / "mlp.onnx", features=16, layers=1)
    zoo_file = zoo.path("squeezenet1_1", resolution=64)
    m = run_pool([(str(net), {}), ("squeezenet1_1", {"resolution": 64})], backend="onnxruntime",
                 precision="fp32", duration="0.1s", warmup=0)
    mine, cached = onnx_digest(net), onnx_digest(zoo_file)
    assert [w.environment["model_sha256"] for w in m.workers] == [mine, cached]
    assert m.environment["model_sha256"] == f"{mine}+{cached}"
    single = environment_of(None, open_engine(str(net), backend="onnxruntime", device=None, precision="fp32"))
    assert single["model_sha256"] == mine
