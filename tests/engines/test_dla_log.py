"""The DLA guard's reading of real TensorRT build logs (tests/data/tensorrt_logs)."""

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_jetson.engines import tensorrt_build as tb
from pytest_jetson.errors import EngineError

LOGS = Path(__file__).resolve().parents[1] / "data" / "tensorrt_logs"
_PREFIX = re.compile(r"^(?:\[\d\d/\d\d/\d{4}-[\d:]+\] )?\[[IWEV]\] \[TRT\] ?")


def messages(*names):
    """The logger messages of recorded trtexec output (trtexec's own lines dropped)."""
    out = []
    for name in names:
        for line in (LOGS / name).read_text(encoding="utf-8").splitlines():
            if _PREFIX.match(line):
                out.append(_PREFIX.sub("", line))
    return out


GROUPNORM_LAYERS = ["Conv_0", "Reshape_2", "InstanceNormalization_5", "Reshape_7", "Mul_8", "Add_9",
                    "Relu_10", "Conv_11", "Reshape_13", "Relu_21", "Conv_22", "Relu_43"]


def test_trt8_log_counts_each_dla_subgraph_once():
    p = tb.placement_from_log(messages("trt8_orin_dla_groupnorm.log"), GROUPNORM_LAYERS, 0)
    assert p.dla_subgraphs == 5
    assert p.gpu_layers == ["Reshape_2", "InstanceNormalization_5", "Reshape_7", "Mul_8", "Add_9",
                            "Reshape_13"]


def test_trt8_log_of_xavier_counts_two_subgraphs():
    p = tb.placement_from_log(messages("trt8_xavier_dla_vgg19.log"), ["conv1_1", "pool5", "fc6", "prob"], 0)
    assert (p.dla_subgraphs, p.gpu_layers) == (2, ["fc6", "prob"])


def test_empty_dla_section_of_trt8_counts_no_subgraph_and_the_guard_fires():
    # what an 8.x build where every layer fell back prints: the headings with no [DlaLayer] line
    log = [m for m in messages("trt8_xavier_dla_vgg19.log") if not m.startswith("[DlaLayer]")]
    p = tb.placement_from_log(log, ["conv1_1", "fc6"], 0)
    assert p.dla_subgraphs == 0
    req = SimpleNamespace(name="vgg19", dla_core=0, onnx="vgg19.onnx")
    logger = SimpleNamespace(heard=SimpleNamespace(since=lambda mark, n: log[-n:]))
    with pytest.raises(EngineError, match="no layer of 'vgg19.onnx' runs on the DLA"):
        tb._dla_placement(log, ["conv1_1", "fc6"], req, SimpleNamespace(label="AGX Xavier"), logger, None)


def test_memusage_lines_after_the_gpu_section_are_not_gpu_layers():
    log = messages("trt8_xavier_dla_vgg19.log", "trt8_memusage_after_build.log")
    p = tb.placement_from_log(log, ["conv1_1", "fc6", "cuDNN", "Init cuDNN: CPU +0"], 0)
    assert p.gpu_layers == ["fc6"]


def test_a_layer_name_is_matched_whole_not_as_a_prefix():
    # Reshape_13 runs on the GPU; a layer named Reshape_1 is not thereby on the GPU
    p = tb.placement_from_log(messages("trt8_orin_dla_groupnorm.log"), ["Reshape_1", "Reshape_13"], 0)
    assert p.gpu_layers == ["Reshape_13"]


def test_cudla_sample_of_trt10_15_has_one_subgraph_and_no_gpu_layer():
    log = messages("trt10_15_cudla_sample.log")
    p = tb.placement_from_log(log, ["(Unnamed Layer* 0) [ElementWise]"], 0)
    assert (p.dla_subgraphs, p.gpu_layers) == (1, [])


def test_trt7_layout_groups_count_as_subgraphs():
    # TensorRT 7's layout (jkjung-avt/tensorrt_demos#200, JetPack 4.4): untagged groups and names
    log = ["", "--------------- Layers running on DLA:",
           "{Tanh_3,Mul_4,Conv_5}, {Tanh_8,Mul_9,Conv_10,Conv_15},",
           "--------------- Layers running on GPU:",
           "Conv_0, Softplus_2, Softplus_7, Softplus_12",
           "[MemUsageChange] Init cuDNN: CPU +0, GPU +1, now: CPU 653, GPU 2201 (MiB)"]
    p = tb.placement_from_log(log, ["Conv_0", "Conv_1", "Softplus_2", "Softplus_1", "Conv_5", "cuDNN"], 0)
    assert (p.dla_subgraphs, p.gpu_layers) == (2, ["Conv_0", "Softplus_2"])


def test_a_log_without_headings_gives_no_placement():
    assert tb.placement_from_log(messages("trt8_memusage_after_build.log"), ["Conv_0"], 0) is None
