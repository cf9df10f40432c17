"""Properties: MACs follow the closed formula for any convolution and scale linearly with batch."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from pytest_jetson.models import zoo
from pytest_jetson.models.graph import analyze
from pytest_jetson.models.torchvision_nets import ssd300_default_boxes


def _conv_model(cin, cout, groups, h, w, k, stride, pad, dilation):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", cin, h, w])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    # the weight as a dims-only initializer: analysis never needs its bytes
    init = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[cout, cin // groups, k[0], k[1]])
    init.data_location = TensorProto.EXTERNAL
    init.external_data.add(key="location", value="nowhere")
    node = helper.make_node("Conv", ["x", "w"], ["y"], group=groups, kernel_shape=list(k),
                            strides=list(stride), pads=[pad[0], pad[1], pad[0], pad[1]],
                            dilations=list(dilation))
    graph = helper.make_graph([node], "conv", [x], [y], initializer=[init])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@st.composite
def convs(draw):
    groups = draw(st.integers(1, 4))
    cin = groups * draw(st.integers(1, 4))
    cout = groups * draw(st.integers(1, 4))
    k = (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    dilation = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    pad = (draw(st.integers(0, 3)), draw(st.integers(0, 3)))
    # input at least as large as the dilated kernel
    h = draw(st.integers(dilation[0] * (k[0] - 1) + 1, 40))
    w = draw(st.integers(dilation[1] * (k[1] - 1) + 1, 40))
    batch = draw(st.integers(1, 8))
    return cin, cout, groups, h, w, k, stride, pad, dilation, batch


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(convs())
def test_conv_macs_match_the_closed_formula(case):
    cin, cout, groups, h, w, k, stride, pad, dilation, batch = case
    oh = (h + 2 * pad[0] - dilation[0] * (k[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * pad[1] - dilation[1] * (k[1] - 1) - 1) // stride[1] + 1
    stats = analyze(_conv_model(cin, cout, groups, h, w, k, stride, pad, dilation), batch=batch)
    assert stats.output_shapes == [(batch, cout, oh, ow)]
    assert stats.macs == batch * cout * oh * ow * (cin // groups) * k[0] * k[1]
    assert stats.params == cout * (cin // groups) * k[0] * k[1]
    layer = stats.layers[0]
    assert layer.kind == ("depthwise" if groups > 1 and cin == groups else "conv")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(["resnet18", "mobilenet_v2", "squeezenet1_1", "yolov8n", "shufflenet_v2_x1_0"]),
       batch=st.integers(1, 32))
def test_macs_scale_linearly_with_batch(name, batch):
    one = zoo.stats(name, resolution=128)
    many = zoo.stats(name, resolution=128, batch=batch)
    assert many.macs == batch * one.macs
    assert many.flops == batch * one.flops
    assert many.params == one.params and many.weight_elems == one.weight_elems
    assert [k.output_elems for k in many.kernels()] == [batch * k.output_elems for k in one.kernels()]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(zoo.names()), h=st.integers(0, 200), w=st.integers(0, 200))
def test_every_model_takes_other_resolutions(name, h, w):
    entry = zoo._ZOO[name]
    side = lambda x: max(entry.minimum, x) // entry.multiple * entry.multiple  # noqa: E731
    hw = (side(h), side(w))
    stats = zoo.stats(name, resolution=hw)
    assert stats.input_shape == (1, 3) + hw
    assert stats.params == zoo.stats(name).params
    out = stats.output_shapes[0]
    cells = [(hw[0] // s) * (hw[1] // s) for s in (8, 16, 32)]
    if entry.task == "classification":
        assert out == (1, 1000)
    elif name == "fcn_resnet18":  # jetson-inference's export: the class grid at 1/32
        assert out[:2] == (1, 21) and out[2] == -(-hw[0] // 32) and out[3] == -(-hw[1] // 32)
    elif entry.task == "segmentation":
        assert out == (1, 21) + hw
    elif name == "yolov5s":  # the three detection convolutions, as the cuDLA samples trim it
        assert stats.output_shapes == [(1, 255, hw[0] // s, hw[1] // s) for s in (8, 16, 32)]
    elif name == "yolov7":
        assert out == (1, 3 * sum(cells), 85)
    elif entry.task == "pose":  # trt_pose: confidence maps and part affinity fields, one grid
        assert [s[:2] for s in stats.output_shapes] == [(1, 18), (1, 42)]
        assert stats.output_shapes[0][2:] == stats.output_shapes[1][2:]
        if hw[0] % 32 == 0 and hw[1] % 32 == 0:
            assert stats.output_shapes[0][2:] == (hw[0] // 4, hw[1] // 4)
    elif name == "ssd300_vgg16":  # boxes and class scores per default box at this size
        boxes = len(ssd300_default_boxes(*hw))
        assert stats.output_shapes == [(1, boxes, 4), (1, boxes, 91)]
    else:
        assert out == (1, 84, sum(cells))
