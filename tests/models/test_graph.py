"""graph.analyze on any ONNX file: per-layer counts, unknown ops, fusion, and bad input."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from fakes.onnx_models import seg_onnx
from onnx import TensorProto, helper, numpy_helper

from pytest_jetson.errors import ModelError
from pytest_jetson.models import zoo
from pytest_jetson.models.builder import Net
from pytest_jetson.models.graph import analyze


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "handmade", inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _mlp(batch_dim="N"):
    """Gemm(784->128) + Relu + MatMul(128->10) + Softmax, with a dynamic batch."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((128, 784)).astype(np.float32), "w1"),
        numpy_helper.from_array(np.zeros(128, np.float32), "b1"),
        numpy_helper.from_array(rng.standard_normal((128, 10)).astype(np.float32), "w2"),
    ]
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w2"], ["l"], name="fc2"),
        helper.make_node("Softmax", ["l"], ["y"], name="softmax", axis=1),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch_dim, 784])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch_dim, 10])], inits)


def test_per_layer_counts_of_a_handmade_graph(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(_mlp(), str(path))
    stats = analyze(path, batch=4)
    layers = {x.name: x for x in stats.layers}
    assert layers["fc1"].macs == 4 * 784 * 128
    assert layers["fc1"].flops == 2 * 4 * 784 * 128 + 4 * 128  # bias adds
    assert layers["fc1"].params == 784 * 128 + 128
    assert layers["fc1"].weight_bytes == (784 * 128 + 128) * 4
    assert layers["fc1"].input_elems == 4 * 784 and layers["fc1"].bytes_read == 4 * 784 * 4
    assert layers["fc1"].output_elems == 4 * 128 and layers["fc1"].bytes_written == 4 * 128 * 4
    assert layers["fc2"].macs == 4 * 128 * 10 and layers["fc2"].params == 1280
    assert layers["relu"].macs == 0 and layers["relu"].flops == 4 * 128
    assert layers["softmax"].kind == "softmax"
    assert stats.params == 784 * 128 + 128 + 1280
    assert stats.macs == sum(x.macs for x in stats.layers)
    assert stats.input_shape == (4, 784) and stats.output_shapes == [(4, 10)]
    assert stats.unknown_ops == []
    kernels = stats.kernels()
    assert [k.layers for k in kernels] == [["fc1", "relu"], ["fc2"], ["softmax"]]
    assert kernels[0].kind == "gemm" and kernels[0].output_elems == 4 * 128


def test_unknown_ops_are_counted_memory_only_and_listed():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [
        helper.make_node("Einsum", ["x", "x"], ["e"], name="einsum", equation="bij,bkj->bik"),
        helper.make_node("Frobnicate", ["e"], ["y"], name="custom", domain="com.example"),
    ]
    model = _model(nodes, [x], [y])
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    stats = analyze(model, batch=2)
    assert stats.unknown_ops == ["Einsum", "com.example.Frobnicate"]
    einsum = stats.layers[0]
    assert einsum.macs == 0 and einsum.flops == 0
    assert einsum.bytes_read == 2 * (2 * 8 * 16 * 4)
    assert einsum.bytes_written == 2 * 8 * 8 * 4
    assert stats.layers[1].input_elems == 2 * 8 * 8


def test_resnet50_kernels_fuse_like_tensorrt():
    stats = zoo.stats("resnet50")
    kernels = stats.kernels()
    # 53 convolutions (BN, ReLU and the residual Add fused in), max pool, global pool, fc
    assert len(kernels) == 56
    assert sum(k.macs for k in kernels) == stats.macs
    # BatchNorm folds into the convolution: 4 vectors per channel become one bias
    bn_channels = sum(x.out_channels for x in stats.layers if x.op_type == "BatchNormalization")
    assert sum(k.weight_elems for k in kernels) == stats.weight_elems - 3 * bn_channels
    first = kernels[0]
    assert first.layers == ["conv1", "bn1", "relu"] and first.kind == "conv"
    assert first.out_channels == 64 and first.spatial == 112 * 112
    last_of_block = next(k for k in kernels if k.name == "layer1.0.conv3")
    assert [stats_op(stats, n) for n in last_of_block.layers] == ["Conv", "BatchNormalization", "Add", "Relu"]
    # reads its own input and the residual (the downsample's output: 256 x 56 x 56)
    assert last_of_block.input_elems == 64 * 56 * 56 + 256 * 56 * 56
    assert last_of_block.output_elems == 256 * 56 * 56
    assert {k.kind for k in kernels} == {"conv", "pool", "gemm"}


def stats_op(stats, name):
    return next(x.op_type for x in stats.layers if x.name == name)


def test_yolov8n_silu_and_depthwise_kinds():
    kernels = zoo.stats("yolov8n").kernels()
    assert [stats_op(zoo.stats("yolov8n"), n) for n in kernels[0].layers] == \
        ["Conv", "BatchNormalization", "Sigmoid", "Mul"]
    dw = [k for k in zoo.stats("mobilenet_v2").kernels() if k.kind == "depthwise"]
    assert len(dw) == 17 and all(k.groups == k.out_channels for k in dw)
    grouped = [k for k in zoo.stats("resnext50_32x4d").kernels() if k.groups == 32]
    assert len(grouped) == 16 and all(k.kind == "conv" for k in grouped)


def test_structure_only_and_full_weights_give_identical_stats():
    full = analyze(zoo.build("mobilenet_v2", resolution=96), batch=3)
    light = analyze(zoo.build_structure("mobilenet_v2", resolution=96), batch=3)
    assert [(x.name, x.macs, x.flops, x.params, x.weight_bytes, x.bytes_read, x.bytes_written)
            for x in full.layers] == \
           [(x.name, x.macs, x.flops, x.params, x.weight_bytes, x.bytes_read, x.bytes_written)
            for x in light.layers]


def test_to_batch_scales_activations_not_weights():
    one = zoo.stats("resnet18")
    eight = one.to_batch(8)
    assert eight.batch == 8 and eight.input_shape == (8, 3, 224, 224)
    assert eight.macs == 8 * one.macs and eight.flops == 8 * one.flops
    assert eight.bytes_written == 8 * one.bytes_written
    assert eight.params == one.params and eight.weight_bytes == one.weight_bytes
    assert eight.macs == zoo.stats("resnet18", batch=8).macs


def test_adaptive_pool_matches_torch_semantics():
    ort = pytest.importorskip("onnxruntime")
    net = Net("pool", (2, 5, 3))
    net.output(net.adaptive_avgpool(net.input, 7))
    model = net.model()
    onnx.checker.check_model(model, full_check=True)
    x = np.random.default_rng(1).random((1, 2, 5, 3), dtype=np.float32)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {"input": x})
    want = np.zeros((1, 2, 7, 7), np.float32)
    for i in range(7):
        h0, h1 = (i * 5) // 7, -(-((i + 1) * 5) // 7)
        for j in range(7):
            w0, w1 = (j * 3) // 7, -(-((j + 1) * 3) // 7)
            want[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # the averaging weights are constants, not parameters, next to a layer's weights
    net = Net("pool", (2, 5, 3))
    net.output(net.adaptive_avgpool(net.conv(net.input, 4, 1, bias=False), 7))
    assert analyze(net.model()).params == 2 * 4


# --- bad input --------------------------------------------------------------------------------


def test_a_file_that_is_not_onnx(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("this is not a model\n" * 50)
    with pytest.raises(ModelError, match="notes.onnx"):
        analyze(path)


def test_a_truncated_file(tmp_path):
    data = zoo.build("squeezenet1_1", resolution=64).SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelError, match="cut.onnx"):
        analyze(path)


def test_a_graph_whose_output_is_never_produced():
    model = _mlp()
    del model.graph.node[-1]
    with pytest.raises(ModelError, match="never produced"):
        analyze(model)


def test_a_missing_file(tmp_path):
    with pytest.raises(ModelError, match="missing.onnx"):
        analyze(tmp_path / "missing.onnx")


def test_a_dynamic_dimension_other_than_batch(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "height", "width"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [x], [y])
    path = tmp_path / "dyn.onnx"
    onnx.save(model, str(path))
    with pytest.raises(ModelError) as err:
        analyze(path)
    assert "dyn.onnx" in str(err.value) and "height" in str(err.value)


def test_a_fixed_batch_other_than_requested():
    model = zoo.build_structure("squeezenet1_1", resolution=64, batch=1)
    assert analyze(model, batch=1).input_shape == (1, 3, 64, 64)
    with pytest.raises(ModelError, match="fixed batch of 1"):
        analyze(model, batch=4)


def test_analyze_rejects_other_objects():
    with pytest.raises(ModelError):
        analyze(42)
    with pytest.raises(ModelError):
        analyze(_mlp(), batch=0)


def test_peak_activation_follows_fused_execution():
    stats = zoo.stats("resnet18")
    # largest live set: the stem's 64x112x112 output while max pool writes 64x56x56
    assert stats.peak_activation_elems == 64 * 112 * 112 + 64 * 56 * 56
    assert stats.to_batch(4).peak_activation_elems == 4 * stats.peak_activation_elems
    # in execution order every kernel's inputs exist before it runs
    resnet50 = zoo.stats("resnet50")
    views = {o for x in resnet50.layers if x.free for o in x.outputs}
    produced = {"input"}
    for k in resnet50.kernels():
        assert all(t in produced or t in views for t in k._inputs), k.name
        produced.update(k._outputs)


def test_external_weights_are_never_read(tmp_path):
    model = zoo.build("resnet18", resolution=64)
    path = tmp_path / "resnet18.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="resnet18.weights", size_threshold=1024)
    (tmp_path / "resnet18.weights").unlink()  # analysis must not need it
    assert path.stat().st_size < 1e6
    stats = analyze(path, batch=2)
    assert stats.params == 11_689_512
    assert stats.macs == zoo.stats("resnet18", resolution=64, batch=2).macs


def test_zoo_analyze_takes_a_zoo_name_and_names_the_zoo_otherwise(tmp_path):
    assert zoo.analyze("squeezenet1_1", batch=2).macs == zoo.stats("squeezenet1_1", batch=2).macs
    with pytest.raises(ModelError) as err:
        zoo.analyze("resnet51")
    assert "resnet51" in str(err.value) and "resnet50" in str(err.value)


def test_quantized_qdq_graph_counts_int8_weights_as_parameters():
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.integers(-127, 127, (16, 8, 3, 3)).astype(np.int8), "w_q"),
        numpy_helper.from_array(np.full(16, 0.01, np.float32), "w_scale"),
        numpy_helper.from_array(np.zeros(16, np.int8), "w_zero"),
        numpy_helper.from_array(np.zeros(16, np.float32), "bias"),
        numpy_helper.from_array(np.array(0.05, np.float32), "x_scale"),
        numpy_helper.from_array(np.array(0, np.int8), "x_zero"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["xq"], name="q"),
        helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zero"], ["xd"], name="dq"),
        helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zero"], ["w"], name="wdq", axis=0),
        helper.make_node("Conv", ["xd", "w", "bias"], ["c"], name="conv", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8, 20, 20])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16, 20, 20])], inits)
    onnx.checker.check_model(model, full_check=True)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert sess.run(None, {"x": np.ones((2, 8, 20, 20), np.float32)})[0].shape == (2, 16, 20, 20)

    stats = analyze(model, batch=2)
    assert stats.params == 16 * 8 * 9 + 16
    assert stats.macs == 2 * 16 * 20 * 20 * 8 * 9
    assert stats.unknown_ops == []
    (kernel,) = stats.kernels()
    assert kernel.layers == ["conv", "relu"] and kernel.kind == "conv"
    assert kernel.input_elems == 2 * 8 * 20 * 20


def test_model_local_functions_are_counted_inside():
    pytest.importorskip("onnx.inliner")
    body = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]),
            helper.make_node("Relu", ["c"], ["y"])]
    fn = helper.make_function("custom.blocks", "ConvRelu", ["x", "w"], ["y"], body,
                              [helper.make_opsetid("", 17)])
    w = numpy_helper.from_array(np.ones((4, 3, 1, 1), np.float32), "w")
    call = helper.make_node("ConvRelu", ["input", "w"], ["out"], domain="custom.blocks", name="block")
    model = _model([call], [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 8, 8])],
                   [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 4, 8, 8])], [w])
    model.opset_import.append(helper.make_opsetid("custom.blocks", 1))
    model.functions.append(fn)
    stats = analyze(model, batch=2)
    assert stats.unknown_ops == []
    assert stats.macs == 2 * 4 * 8 * 8 * 3 and stats.params == 12
    assert stats.output_shapes == [(2, 4, 8, 8)]


def test_dynamic_height_and_width_are_analysed_at_the_given_shape(tmp_path):
    path = seg_onnx(tmp_path / "det.onnx")
    with pytest.raises(ModelError, match=r"input 'x' has dynamic dimension\(s\) 2, 3 besides the batch "
                                         r"\(batchx3xheightxwidth\); give its size: input_shape=\(3, H, W\) without "
                                         r"the batch, or a dict by input name; or resolution=\(H, W\)"):
        analyze(path)
    small = analyze(path, input_shapes=(3, 48, 320))
    frame = analyze(path, input_shapes={"x": (1, 3, 480, 640)})
    assert small.input_shape == (1, 3, 48, 320) and frame.output_shapes == [(1, 1, 480, 640)]
    # conv work scales with the pixels; the weights do not
    assert frame.macs / small.macs == pytest.approx(480 * 640 / (48 * 320))
    assert frame.params == small.params
    assert frame.to_batch(2).macs == 2 * frame.macs
    with pytest.raises(ModelError, match=r"sets dimension 1 to 4; the graph fixes it at 3"):
        analyze(path, input_shapes=(4, 48, 320))
