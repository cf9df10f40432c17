"""The simulator's per-layer prediction: the engine's fused kernels, their times and bounds."""

import pytest
from fakes.onnx_models import conv_onnx
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_jetson.sim import predict
from pytest_jetson.sim.layers import layer_times


@settings(max_examples=12, deadline=None)
@given(model=st.sampled_from(["resnet18", "resnet50", "mobilenet_v2", "yolov8n"]),
       precision=st.sampled_from(["fp32", "fp16", "int8"]), batch=st.sampled_from([1, 4, 16]),
       device=st.sampled_from(["orin-nano", "agx-orin", "xavier-nx"]))
def test_the_layers_add_up_to_the_predicted_gpu_time(model, precision, batch, device):
    pred = predict(device, model, precision, batch)
    rows = layer_times(device, model, precision, batch, prediction=pred)
    assert sum(r.time for r in rows) == pytest.approx(pred.gpu_time, rel=1e-9)
    assert len(rows) == pred.breakdown["kernels"]
    assert sum(r.type == "Reformat" for r in rows) == pred.breakdown["reformats"]
    assert all(r.time > 0 and r.bound in ("compute", "memory", "launch") for r in rows)
    assert {r.precision for r in rows} <= {"fp32", "tf32", "fp16", "int8"}


def test_without_a_prediction_the_layers_are_priced_at_the_top_clock():
    pred = predict("orin-nano", "resnet50", "fp16", 1)  # 25 W: no DVFS cap at batch 1
    alone = layer_times("orin-nano", "resnet50", "fp16", 1)
    assert sum(r.time for r in alone) == pytest.approx(pred.gpu_time, rel=1e-6)


def test_fused_layers_are_named_as_tensorrt_names_them_and_reformats_by_their_reader():
    rows = layer_times("orin-nano", "resnet50", "int8", 1)
    names = [r.name for r in rows]
    assert "conv1 + bn1 + relu" in names
    reformats = [r for r in rows if r.type == "Reformat"]
    assert [r.name for r in reformats] == [
        "Reformatting CopyNode for Input Tensor 0 to conv1 + bn1 + relu (fp32 to int8)",
        "Reformatting CopyNode for Output Tensor of fc (int8 to fp32)"]
    assert all(r.kernel == "reformat" for r in reformats)
    # the image's conversion streams 600 kB; the 1000 scores' conversion is all ramp
    assert [r.bound for r in reformats] == ["memory", "launch"]
    assert len(set(names)) == len(names)


def test_what_bounds_a_layer_follows_the_roofline():
    rows = {r.name: r for r in layer_times("orin-nano", "mobilenet_v2", "fp16", 8)}
    # a depthwise convolution does a few products per byte it streams; a 3x3 over 512 channels many
    assert {r.bound for r in rows.values() if r.kernel == "depthwise"} == {"memory"}
    big = {r.name: r for r in layer_times("orin-nano", "resnet50", "fp16", 1)}
    assert big["layer1.0.conv2 + layer1.0.bn2 + layer1.0.relu2"].bound == "compute"
    # at batch 1, layer4's 3x3 over 512 channels on a 7x7 map reads 4.7 MB of weights for 115 M
    # products, 24 per byte: at the Orin Nano's ridge point once its 49 rows are padded to a
    # 64-row tile (which side wins moves with the fitted efficiencies); at batch 8 the same
    # weights serve 8 maps: compute-bound
    layer4 = "layer4.0.conv2 + layer4.0.bn2 + layer4.0.relu2"
    assert big[layer4].bound in ("compute", "memory")
    assert {r.name: r for r in layer_times("orin-nano", "resnet50", "fp16", 8)}[layer4].bound == "compute"
    # a tiny kernel launched from a stream waits on its launch, not on the GPU
    tiny = layer_times("orin-nano", "resnet18", "int8", 1, harness="python")
    assert any(r.bound == "launch" for r in tiny)


def test_an_onnx_file_s_layers_carry_its_node_names(tmp_path):
    path = conv_onnx(tmp_path / "c.onnx", channels=8, size=32)
    rows = layer_times("orin-nano", str(path), "fp16", 2)
    assert all(r.name for r in rows)
    assert sum(r.time for r in rows) == pytest.approx(predict("orin-nano", str(path), "fp16", 2).gpu_time)


@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_xavier_copies_each_half_of_a_channel_split_just_before_the_layer_after_it(precision):
    rows = layer_times("agx-xavier", "shufflenet_v2_x1_0", precision, 1)
    names = [r.name for r in rows]
    slices = [i for i, r in enumerate(rows) if r.type == "Slice"]
    assert len(slices) == 26 and all(names[i].endswith(".chunk") for i in slices)
    first = slices[0]
    assert names[first] == names[first + 1] == "stage2.1.chunk"
    assert names[first + 2].startswith("stage2.1.branch2.0")
    pred = predict("agx-xavier", "shufflenet_v2_x1_0", precision, 1)
    assert len(rows) == pred.breakdown["kernels"]
    # the Orin's TensorRT hands the branch a view
    assert not any(r.type == "Slice" for r in layer_times("agx-orin", "shufflenet_v2_x1_0", precision, 1))
