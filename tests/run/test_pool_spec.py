"""What a pool runs: the workload forms users write, and the bad ones they get told about."""

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_jetson.errors import ConfigError
from pytest_jetson.run.pool import run_pool
from pytest_jetson.run.pool_spec import worker_specs


def test_one_model_repeated():
    specs = worker_specs("resnet50", 3, {"precision": "int8", "batch": 2})
    assert [s.index for s in specs] == [0, 1, 2]
    assert {s.model for s in specs} == {"resnet50"}
    assert all(s.precision == "int8" and s.batch == 2 for s in specs)


def test_model_with_options_and_path(tmp_path):
    onnx_file = tmp_path / "net.onnx"
    specs = worker_specs((onnx_file, {"batch": 4}), 2)
    assert len(specs) == 2
    assert specs[0].model == str(onnx_file)
    assert specs[0].model_name == "net"
    assert specs[0].batch == 4
    assert specs[0].precision == "fp16"  # the engines' default


def test_multi_tenant_list_expands_processes_and_keeps_order():
    specs = worker_specs([("resnet50", {"precision": "int8"}), ("yolov8n", {"processes": 2}), "mobilenet_v2"])
    assert [s.model for s in specs] == ["resnet50", "yolov8n", "yolov8n", "mobilenet_v2"]
    assert [s.index for s in specs] == [0, 1, 2, 3]
    assert "processes" not in specs[1].options


def test_common_options_do_not_override_a_workloads_own():
    specs = worker_specs([("resnet50", {"precision": "int8"}), ("yolov8n", {})], None, {"precision": "fp16"})
    assert [s.precision for s in specs] == ["int8", "fp16"]


def test_engine_factory_is_taken_out_of_the_engine_options():
    specs = worker_specs(("m", {"engine_factory": "a.b:c", "delay": 1}), 1)
    assert specs[0].engine_factory == "a.b:c"
    assert specs[0].options == {"delay": 1}


@pytest.mark.parametrize("processes", [0, -1])
def test_fewer_than_one_process_is_a_config_error(processes):
    with pytest.raises(ConfigError, match=r"at least 1 process"):
        worker_specs("resnet50", processes)


@pytest.mark.parametrize("processes", [True, 2.5, "4"])
def test_processes_must_be_an_integer(processes):
    with pytest.raises(ConfigError, match="integer"):
        worker_specs("resnet50", processes)


def test_per_workload_processes_below_one():
    with pytest.raises(ConfigError, match=r"workload 1 \(yolov8n\) processes=0"):
        worker_specs([("resnet50", {}), ("yolov8n", {"processes": 0})])


def test_list_with_mismatched_processes():
    with pytest.raises(ConfigError, match="does not match the 2 workloads"):
        worker_specs([("resnet50", {}), ("yolov8n", {})], 4)


@pytest.mark.parametrize("bad", [[], 42, [("resnet50", "int8")], [(1, 2, 3)]])
def test_malformed_workloads(bad):
    with pytest.raises(ConfigError, match="process_pool"):
        worker_specs(bad)


def test_bad_batch_names_the_worker():
    with pytest.raises(ConfigError, match=r"worker 0 \(resnet50\): batch=0"):
        worker_specs(("resnet50", {"batch": 0}), 2)


def test_bad_input_fails_before_any_process_starts():
    import psutil

    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(ConfigError):
        run_pool("resnet50", processes=0, backend="onnxruntime")
    with pytest.raises(ConfigError, match="shorter than the warm-up"):
        run_pool("resnet50", processes=2, backend="onnxruntime", duration="0.5s", warmup="1s")
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= before


def test_duration_shorter_than_warmup_names_both_and_the_fix():
    with pytest.raises(ConfigError) as info:
        run_pool("resnet50", processes=2, duration="200ms", warmup="1s")
    msg = str(info.value)
    assert "200 ms" in msg and "1 s" in msg and "warmup=" in msg


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(1, 4)), min_size=1, max_size=5))
def test_worker_count_is_the_sum_of_per_workload_processes(entries):
    specs = worker_specs([(m, {"processes": n}) for m, n in entries])
    assert len(specs) == sum(n for _, n in entries)
    assert [s.index for s in specs] == list(range(len(specs)))
    expected = [m for m, n in entries for _ in range(n)]
    assert [s.model for s in specs] == expected


def test_pathlib_model_is_accepted_in_a_list():
    specs = worker_specs([Path("x/y.onnx"), ("resnet50", None)])
    assert [s.model_name for s in specs] == ["y", "resnet50"]
