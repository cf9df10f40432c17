"""The engine TensorRT would build, and what each class of kernel achieves on a board."""

import numpy as np
import pytest

from pytest_jetson.models import zoo
from pytest_jetson.models.builder import Net
from pytest_jetson.models.graph import analyze
from pytest_jetson.sim import constants, predict
from pytest_jetson.sim.costs import gpu_costs
from pytest_jetson.sim.engine import SLICE, P, plan
from pytest_jetson.sim.workload import KIND, load


def _kinds(e, name):
    return np.flatnonzero(e.kind == KIND[name])


def test_fp16_engine_runs_everything_in_fp16_and_reformats_only_its_bindings():
    e = plan(load("yolov8n"), "fp16")
    real = e.source >= 0
    assert np.all(e.prec[real] == P["fp16"])
    assert e.reformats == 2  # the fp32 input in, the fp32 output out
    # concatenations of whole outputs cost nothing (their producers write into their slices); the
    # eight C2f blocks' concatenations gather the halves of a split (views into cv1's output): copies
    assert _kinds(e, "concat").size == 8


def test_int8_engine_keeps_in_fp16_what_tensorrt_keeps_and_adds_reformats():
    w = load("yolov8n")
    e = plan(w, "int8")
    real = e.source >= 0
    ops = [w.op[i] for i in e.source[real]]
    prec = e.prec[real]
    kind = e.kind[real]
    for i, op in enumerate(ops):
        if kind[i] in (KIND["resize"], KIND["softmax"], KIND["elementwise"]):
            assert prec[i] == P["fp16"], op  # upsamples, the DFL softmax, the box decode
    # the detection head's last convolutions feed an output through no other one: fp16
    heads = [i for i, k in enumerate(e.source[real]) if w.op[k] == "Conv" and prec[i] == P["fp16"]]
    assert len(heads) == 7  # 3 box + 3 class 1x1 convolutions and the DFL's fixed conv
    assert np.sum((kind == KIND["conv"]) & (prec == P["int8"])) > 50
    # an upsampled (fp16) branch joining an int8 one is a real copy, as are the C2f blocks' 8; the
    # rest are eliminated
    assert _kinds(e, "concat").size == 10
    assert e.reformats > 6  # fp16 tensors into int8 convolutions, int8 into the fp16 heads
    assert plan(w, "int8").n > plan(w, "fp16").n


def test_resnet50_int8_runs_its_classifier_quantized():
    e = plan(load("resnet50"), "int8")
    gemm = _kinds(e, "gemm")
    assert e.prec[gemm].tolist() == [P["int8"]]
    assert np.sum(e.prec[_kinds(e, "conv")] == P["int8"]) == 53


def _net(channels, k=3, stride=1, side=56, depthwise=False):
    net = Net(f"c{channels}", (channels, side, side), structure=True)
    y = net.conv(net.input, channels, k, stride, k // 2, groups=channels if depthwise else 1, name="conv")
    net.output(y)
    return analyze(net.model())


def _cycles(stats, precision="fp16", sm=8, arch="ampere"):
    c = constants.constants(arch)
    e = plan(load(stats), precision)
    costs = gpu_costs(e, arch, sm, True, 1, c)
    conv = np.flatnonzero(e.source >= 0)
    return float(costs.a[conv].sum()), float(e.macs[conv].sum())


def test_thin_convolutions_pay_for_padded_tiles_and_short_reductions():
    per_mac = {}
    for ch in (16, 32, 64, 256):
        cycles, macs = _cycles(_net(ch))
        per_mac[ch] = cycles / macs
    # 16 channels fill a 32-wide tile at least, and reduce over 144 values only
    assert per_mac[16] > 1.8 * per_mac[32] > per_mac[64] > per_mac[256]
    assert per_mac[16] > 3 * per_mac[256]


def test_an_image_stem_pays_for_four_channels_so_int8_is_never_dearer_than_fp16():
    def stem_cycles(channels, precision):
        net = Net("stem", (channels, 224, 224), structure=True)
        y = net.conv(net.input, 64, 7, 2, 3, name="stem")
        net.output(net.conv(y, 64, 1, 1, 0, name="head"))  # the stem is no head: it runs quantized
        e = plan(load(analyze(net.model())), precision)
        stem = np.flatnonzero(e.source >= 0)[0]
        assert e.prec[stem] == P[precision]
        return float(gpu_costs(e, "ampere", 8, True, 1, constants.constants("ampere")).a[stem])

    # padded to the full vector width, int8's 3 channels would pay for 16 (5.3x) and fp16's for 8
    assert stem_cycles(3, "int8") < stem_cycles(3, "fp16") == stem_cycles(4, "fp16")
    assert stem_cycles(3, "int8") == stem_cycles(4, "int8")


def test_a_depthwise_convolution_runs_on_cuda_cores_far_below_a_dense_ones_rate():
    dense, dense_macs = _cycles(_net(128))
    dw, dw_macs = _cycles(_net(128, depthwise=True))
    assert dw / dw_macs > 5 * dense / dense_macs


def test_a_fused_silu_costs_more_than_a_relu_after_a_thin_convolution():
    def cost(act):
        net = Net(act, (16, 160, 160), structure=True)
        y = net.conv(net.input, 32, 3, 1, 1, name="conv")
        y = net.silu(y) if act == "silu" else net.relu(y)
        net.output(y)
        return _cycles(analyze(net.model()))[0]

    assert cost("silu") > 1.15 * cost("relu")


def test_a_batch_one_classifier_reads_its_weights_instead_of_padding_a_matrix():
    p = predict("nano", "vgg16", "fp16", 1)
    # vgg16's 124 M classifier weights at 2 bytes over the Nano's 25.6 GB/s: about 10 ms of a
    # ~90 ms inference, not the 30 ms a 32-row padded tile would cost
    assert 0.06 < p.gpu_time < 0.12


@pytest.mark.parametrize("name", ["yolo11n", "yolov5s", "yolov7"])
def test_new_detectors_predict(name):
    res = 672 if name == "yolov5s" else None
    for precision in ("fp16", "int8"):
        p = predict("agx-orin-64gb", name, precision, 1, power_mode="MAXN", resolution=res)
        assert p.throughput > 0 and p.gpu_time > 0
    assert zoo.task(name) == "detection"


@pytest.mark.parametrize("model,copies,eliminated", [("shufflenet_v2_x1_0", 13, 3), ("squeezenet1_1", 0, 8),
                                                      ("densenet121", 58, 0)])
def test_a_concatenation_is_eliminated_only_where_its_producers_can_write_into_it(model, copies, eliminated):
    # ShuffleNetV2's stride-1 units join a channel slice of their input (a view into another
    # tensor) with their branch: a copy. SqueezeNet's fire modules join two whole convolution
    # outputs: eliminated. DenseNet gathers each layer's features into every later concatenation
    # of its block: a tensor lives in one buffer, so each is a copy.
    w = load(model)
    e = plan(w, "fp16")
    concats = [i for i, op in enumerate(w.op) if op == "Concat"]
    kept = set(e.source[e.kind == KIND["concat"]].tolist())
    assert len(kept) == copies and len(concats) - len(kept) == eliminated


def test_a_channel_split_is_a_view_on_ampere_and_a_copy_per_slice_on_older_architectures():
    # ShuffleNetV2's 13 stride-1 units split their input's channels in two: the TensorRT of
    # JetPack 4 (Maxwell, Pascal, Volta boards) copies each half in a kernel of its own.
    w = load("shufflenet_v2_x1_0")
    new, old = plan(w, "fp16", arch="ampere"), plan(w, "fp16", arch="volta")
    copies = old.source == SLICE
    assert not np.any(new.source == SLICE)
    assert int(copies.sum()) == 26 and old.n - new.n == 26
    # each copy reads and writes its half once, in the precision of the tensor it is cut from
    assert np.array_equal(old.in_bytes[copies], old.out_bytes[copies])
    assert np.array_equal(np.sort(old.in_bytes[copies]), np.sort(w.v_elems * 2.0))
    assert np.all(old.macs[copies] == 0)
    # a network without a split plans the same kernels on every architecture
    assert plan(load("resnet50"), "fp16", arch="maxwell").n == plan(load("resnet50"), "fp16", arch="ampere").n



def test_transposed_convolutions_are_priced_as_convolutions_of_their_macs():
    """trt_pose's upsampling ConvTranspose layers (4x4, stride 2) are tensor-core convolutions whose
    work is every input element times its 256 x 16 outputs, not operators without a model."""
    w = load("trt_pose_resnet18_att")
    up = [i for i, op in enumerate(w.op) if op == "ConvTranspose"]
    assert len(up) == 6 and all(w.kind[i] == KIND["conv"] for i in up)
    assert sorted(w.k_macs[up]) == sorted([7 * 7 * 512 * 256 * 16, 14 * 14 * 256 * 256 * 16,
                                           28 * 28 * 256 * 256 * 16] * 2)
    assert w.unknown_ops == ()
