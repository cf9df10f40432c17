"""Graphs as exporters write them: residuals as ``Sum``, weights in ``Constant`` nodes, recurrent
layers (LSTM, GRU, RNN) as the GEMMs they run."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from pytest_jetson.models import zoo
from pytest_jetson.models.graph import analyze

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _residuals_as_sum(model):
    """Every two-input Add of activations rewritten as Sum, as Caffe2 and older MXNet export them."""
    inits = {t.name for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Add" and len(node.input) == 2 and not set(node.input) & inits:
            node.op_type = "Sum"
    return model


def test_a_residual_written_as_sum_fuses_like_add():
    add = zoo.stats("resnet50")
    summed = analyze(_residuals_as_sum(zoo.build_structure("resnet50")))
    assert sum(1 for x in summed.layers if x.op_type == "Sum") == 16
    assert len(summed.kernels()) == len(add.kernels()) == 56
    assert summed.macs == add.macs
    assert [k.layers[-1].startswith("Sum") or k.layers[-1] for k in summed.kernels()] == \
           [k.layers[-1].startswith("Add") or k.layers[-1] for k in add.kernels()]


def test_weights_held_in_constant_nodes_count_as_parameters():
    model = zoo.build_structure("resnet18")
    g = model.graph
    consts = [helper.make_node("Constant", [], [t.name], value=t) for t in g.initializer]
    nodes = consts + list(g.node)
    del g.initializer[:]
    del g.node[:]
    g.node.extend(nodes)
    stats = analyze(model)
    assert stats.params == zoo.stats("resnet18").params == 11_689_512
    assert len(stats.kernels()) == len(zoo.stats("resnet18").kernels())


def recurrent(op, steps=20, n_in=64, hidden=128, dirs=1, batch_first=True):
    """A batch-first sequence model as torch exports one: Transpose to (seq, batch, input), then
    the recurrent layer; returns its final hidden state."""
    g = GATES[op]
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((dirs, g * hidden, n_in)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.standard_normal((dirs, g * hidden, hidden)).astype(np.float32), "R"),
             numpy_helper.from_array(np.zeros((dirs, 2 * g * hidden), np.float32), "B")]
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
             helper.make_node(op, ["xt", "W", "R", "B"], ["y", "yh"], name="rnn", hidden_size=hidden,
                              direction="bidirectional" if dirs == 2 else "forward")]
    graph = helper.make_graph(nodes, op.lower(),
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", steps, n_in])],
                              [helper.make_tensor_value_info("yh", TensorProto.FLOAT, [dirs, "batch", hidden])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.mark.parametrize("op", sorted(GATES))
def test_a_recurrent_layer_counts_torchs_parameters_and_every_steps_products(op):
    steps, n_in, hidden, g = 20, 64, 128, GATES[op]
    stats = analyze(recurrent(op, steps, n_in, hidden))
    # torch.nn.LSTM/GRU/RNN: weight_ih, weight_hh, bias_ih, bias_hh
    assert stats.params == g * hidden * (n_in + hidden) + 2 * g * hidden
    assert stats.macs == steps * g * hidden * (n_in + hidden)
    assert stats.unknown_ops == []


@pytest.mark.parametrize("op", sorted(GATES))
def test_a_recurrent_layer_runs_as_an_input_gemm_then_one_gemm_per_step(op):
    steps, n_in, hidden, g = 20, 64, 128, GATES[op]
    ks = [k for k in analyze(recurrent(op, steps, n_in, hidden), batch=4).kernels() if k.op_type == op]
    assert len(ks) == 1 + steps
    assert {k.kind for k in ks} == {"gemm"}
    assert ks[0].macs == 4 * steps * g * hidden * n_in
    assert {k.macs for k in ks[1:]} == {4 * g * hidden * hidden}
    # each step reads the one before it: a chain, not independent work
    for a, b in zip(ks[1:], ks[2:]):
        assert a.outputs[0] in b.inputs
    assert sum(k.params for k in ks) == analyze(recurrent(op, steps, n_in, hidden)).params


def test_a_bidirectional_lstm_runs_both_directions_in_each_step():
    one = analyze(recurrent("LSTM", dirs=1))
    two = analyze(recurrent("LSTM", dirs=2))
    assert two.macs == 2 * one.macs > 0
    assert len(two.kernels()) == len(one.kernels())
    assert two.output_shapes == [(2, 1, 128)]


def _with_custom_op(name="resnet18", after=10):
    """A zoo model with a custom-domain operator (as a TensorRT plugin is exported) inserted after
    node ``after``: ONNX cannot infer its output."""
    model = zoo.build_structure(name)
    g = model.graph
    nodes = list(g.node)
    out = nodes[after].output[0]
    for other in nodes[after + 1:]:
        for i, x in enumerate(other.input):
            if x == out:
                other.input[i] = out + ".custom"
    nodes.insert(after + 1, helper.make_node("MyAct", [out], [out + ".custom"], name="plugin0",
                                             domain="com.example"))
    del g.node[:]
    g.node.extend(nodes)
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    return model


def test_a_custom_operator_leaves_the_layers_after_it_sized_and_says_so():
    plain = zoo.stats("resnet18")
    stats = analyze(_with_custom_op())
    assert stats.unknown_ops == ["com.example.MyAct"]
    assert stats.assumed_shapes == ["plugin0 (MyAct)"]
    # nothing after the plugin is costed as zero
    assert stats.macs == plain.macs and stats.output_shapes == plain.output_shapes
    assert len(stats.kernels()) == len(plain.kernels()) + 1
    assert analyze(zoo.build_structure("resnet18")).assumed_shapes == []


def test_a_dynamic_dimension_written_as_minus_one_is_named_in_the_error(tmp_path):
    # Paddle2ONNX (PP-OCR's cls model) writes dynamic dimensions as dim_value -1
    from fakes.onnx_models import seg_onnx

    from pytest_jetson.errors import ModelError

    model = onnx.load(str(seg_onnx(tmp_path / "det.onnx")))
    for d in model.graph.input[0].type.tensor_type.shape.dim:
        if d.dim_param:
            d.Clear()
            d.dim_value = -1
    with pytest.raises(ModelError, match=r"input 'x' has dynamic dimension\(s\) 2, 3 besides the batch "
                                         r"\(\?x3x\?x\?\); give its size: input_shape=\(3, H, W\)"):
        analyze(model)
    assert analyze(model, input_shapes=(3, 48, 192)).input_shape == (1, 3, 48, 192)


def test_a_simulated_engine_on_a_custom_operator_warns_in_the_test_that_uses_it(project_of):
    tester = project_of('''
import pytest

@pytest.mark.perf(throughput=">= 1/s")
def test_plugin_net(trt_engine, perf):
    perf.measure(trt_engine("custom.onnx"), duration="0.1s")
''')
    onnx.save(_with_custom_op(), str(tester.path / "custom.onnx"))
    result = tester.runpytest("--jetson-device", "orin-nano", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_plugin_net*", "*CostModelWarning*operators without a cost model: "
                                 "com.example.MyAct*"])
