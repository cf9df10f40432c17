"""An int8 engine as TensorRT's builder keeps it: each layer in the faster of int8 and fp16, the
reformats at each precision boundary counted."""

import importlib.util
import itertools
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_jetson.sim import predict
from pytest_jetson.sim.engine import plan
from pytest_jetson.sim.layers import layer_times
from pytest_jetson.sim.precision_choice import min_cut
from pytest_jetson.sim.workload import load

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: boards whose TensorRT has an int8 path (Maxwell and Pascal run int8 as fp16)
INT8_BOARDS = ("orin-nano", "agx-orin-64gb", "agx-xavier", "xavier-nx")
ZOO = ("resnet18", "resnet50", "resnext50_32x4d", "mobilenet_v2", "shufflenet_v2_x1_0", "squeezenet1_1",
       "densenet121", "yolov8n", "yolo11n", "fcn_resnet18", "ssd300_vgg16")
_SPEC = importlib.util.find_spec("rapidocr_onnxruntime")
#: PP-OCR's detector, classifier and recogniser as PaddleOCR exports them (rapidocr ships them)
OCR = Path(_SPEC.origin).parent / "models" if _SPEC and _SPEC.origin else Path("/nonexistent")


def _cost(labels, to_int8, to_fp16, pairs):
    unary = sum(to_int8[i] if not x else to_fp16[i] for i, x in enumerate(labels))
    return unary + sum(c for i, j, c in pairs if labels[i] != labels[j])


@SETTINGS
@given(st.integers(2, 7), st.integers(0, 2 ** 31 - 1))
def test_the_cut_is_the_cheapest_labelling(n, seed):
    rng = random.Random(seed)
    gain = [rng.uniform(-1.0, 1.0) for _ in range(n)]
    to_int8 = np.array([max(g, 0.0) for g in gain])      # what int8 costs more than fp16
    to_fp16 = np.array([max(-g, 0.0) for g in gain])
    if rng.random() < 0.3:
        to_int8[rng.randrange(n)] = np.inf                # a layer that must stay fp16
    pairs = [(i, j, rng.uniform(0.0, 0.8)) for i, j in itertools.combinations(range(n), 2) if rng.random() < 0.5]
    fp16 = min_cut(n, to_int8, to_fp16, pairs)
    best = min(_cost(lab, to_int8, to_fp16, pairs) for lab in itertools.product((False, True), repeat=n))
    assert _cost(list(fp16), to_int8, to_fp16, pairs) == pytest.approx(best, abs=1e-9)
    assert all(fp16[i] for i in range(n) if np.isinf(to_int8[i]))


def test_a_layer_slightly_faster_in_fp16_stays_int8_between_int8_neighbours():
    # three layers in a chain: the middle one gains 0.1 in fp16, but would cost two reformats of 0.3
    fp16 = min_cut(3, np.array([0.0, 0.1, 0.0]), np.array([1.0, 0.0, 1.0]), [(0, 1, 0.3), (1, 2, 0.3)])
    assert not fp16.any()
    # a gain larger than both reformats flips it
    fp16 = min_cut(3, np.array([0.0, 0.7, 0.0]), np.array([1.0, 0.0, 1.0]), [(0, 1, 0.3), (1, 2, 0.3)])
    assert list(fp16) == [False, True, False]


@SETTINGS
@given(st.sampled_from(ZOO), st.sampled_from(INT8_BOARDS), st.sampled_from((1, 2, 8)))
def test_int8_is_never_slower_than_fp16(model, device, batch):
    # The builder keeps a layer in fp16 where int8 and its reformats would cost more: an int8 engine
    # on the GPU is at worst the fp16 one (the choice is made at the board's top clocks, as the
    # engine is built there, and kept in slower modes).
    kw = dict(harness="trtexec", power_mode="fastest")
    fp16 = predict(device, model, "fp16", batch, **kw)
    int8 = predict(device, model, "int8", batch, **kw)
    assert int8.gpu_time <= fp16.gpu_time * (1 + 1e-9)
    assert int8.throughput >= fp16.throughput * (1 - 1e-9)


@pytest.mark.parametrize("model", ["shufflenet_v2_x1_0", "densenet121"])
def test_networks_of_small_layers_no_longer_read_slower_in_int8(model):
    # The all-int8 plan puts a reformat between every shuffle or concatenation and the convolution
    # after it (12-22% slower than fp16 on ShuffleNetV2): the builder leaves those layers in fp16.
    for device in ("orin-nano", "agx-xavier"):
        fp16 = predict(device, model, "fp16", 1, harness="trtexec")
        int8 = predict(device, model, "int8", 1, harness="trtexec")
        assert int8.gpu_time <= fp16.gpu_time
        assert int8.breakdown["reformats"] <= plan(load(model), "int8").reformats
    # ShuffleNetV2's shuffles and splits stay fp16 with the layers around them: few reformats left
    if model == "shufflenet_v2_x1_0":
        assert predict("orin-nano", model, "int8", 1).breakdown["reformats"] < plan(load(model), "int8").reformats / 2


@pytest.mark.skipif(not OCR.is_dir(), reason="rapidocr_onnxruntime's models are not installed")
@pytest.mark.parametrize("name,shape", [("ch_PP-OCRv4_rec_infer.onnx", (1, 3, 48, 320)),
                                        ("ch_ppocr_mobile_v2.0_cls_infer.onnx", (1, 3, 48, 192)),
                                        ("ch_PP-OCRv4_det_infer.onnx", (1, 3, 640, 640))])
def test_exported_ocr_models_are_not_slower_in_int8(name, shape):
    for device in ("orin-nano", "agx-orin-64gb"):
        fp16 = predict(device, str(OCR / name), "fp16", 1, harness="trtexec", input_shape=shape)
        int8 = predict(device, str(OCR / name), "int8", 1, harness="trtexec", input_shape=shape)
        assert int8.gpu_time <= fp16.gpu_time


@pytest.mark.parametrize("device", ["orin-nano", "agx-orin-64gb", "agx-xavier"])
def test_resnet50_keeps_its_int8_speed_up(device):
    # every convolution of ResNet-50 is large and dense: the builder runs all of them in int8
    fp16 = predict(device, "resnet50", "fp16", 1, harness="trtexec")
    int8 = predict(device, "resnet50", "int8", 1, harness="trtexec")
    assert int8.gpu_time < 0.75 * fp16.gpu_time
    convs = [r for r in layer_times(device, "resnet50", "int8") if r.type == "Convolution"]
    assert len(convs) == 53 and all(r.precision == "int8" for r in convs)
    assert int8.breakdown["reformats"] == 2   # the fp32 bindings in and out


def test_the_layers_shown_are_the_engine_the_prediction_runs():
    rows = layer_times("orin-nano", "shufflenet_v2_x1_0", "int8")
    p = predict("orin-nano", "shufflenet_v2_x1_0", "int8")
    assert len(rows) == p.breakdown["kernels"]
    assert sum(r.type == "Reformat" for r in rows) == p.breakdown["reformats"]
    assert {r.precision for r in rows if r.type == "Convolution"} == {"int8", "fp16"}
