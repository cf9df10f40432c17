"""The zoo: architectures match their references (parameter counts, published MACs), build
valid runnable ONNX, cache safely across processes, and analyse without generating weights."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import numpy as np
import onnx
import pytest

from pytest_jetson.errors import ModelError
from pytest_jetson.models import zoo

ROOT = Path(__file__).resolve().parents[2]

def _pose_head_params(c_in: int) -> int:
    """trt_pose's CmapPafHeadAttention(c_in, 18, 42, 256, num_upsample=3): per branch three
    ConvTranspose2d(4x4, bias) + BatchNorm2d(256), a 3x3 attention conv; then 1x1 convs to 18, 42."""
    up = (c_in + 256 + 256) * 256 * 16 + 3 * 256 + 3 * 2 * 256
    att = 256 * 256 * 9 + 256
    return 2 * (up + att) + (256 * 18 + 18) + (256 * 42 + 42)


# sum(p.numel() for p in model.parameters()) of torchvision; Ultralytics' model summaries (unfused)
# for YOLOv8 (the counts in ultralytics/cfg/models/v8/yolov8.yaml; the docs round them to 3.2,
# 11.2, 25.9, 43.7 and 68.2 M), YOLO11 (the counts in ultralytics/cfg/models/11/yolo11.yaml) and YOLOv5s.
PARAMS = {
    "resnet18": 11_689_512,
    "resnet34": 21_797_672,
    "resnet50": 25_557_032,
    "resnet101": 44_549_160,
    "resnet152": 60_192_808,
    "resnext50_32x4d": 25_028_904,
    "vgg16": 138_357_544,
    "vgg19": 143_667_240,
    "alexnet": 61_100_840,
    "squeezenet1_1": 1_235_496,
    "densenet121": 7_978_856,
    "shufflenet_v2_x1_0": 2_278_604,
    "mobilenet_v2": 3_504_872,
    "fcn_resnet50": 32_957_013,  # aux_loss=None; 35,322_218 with the aux classifier
    "yolov8n": 3_157_200,
    "yolov8s": 11_166_560,
    "yolov8m": 25_902_640,
    "yolov8l": 43_691_520,
    "yolov8x": 68_229_648,
    "yolo11n": 2_624_080,
    "yolo11s": 9_458_752,
    "yolo11m": 20_114_688,
    "yolo11l": 25_372_160,
    "yolo11x": 56_966_176,
    "yolov5s": 7_235_389,
    # The deploy graph (RepConv re-parameterised, BatchNorm and IDetect's implicit layers folded
    # into the convolutions): the authors' 36.9 M. Their fused summary prints 36,907,898 because
    # fuse() leaves IDetect's 2,557 folded ImplicitA (256 + 512 + 1024) and ImplicitM (3 x 255)
    # parameters registered.
    "yolov7": 36_907_898 - 2_557,
    # jetson-inference's (dusty-nv/pytorch-segmentation): resnet18 backbone at output stride 32
    # (no dilation) = 11,176,512 + FCNHead(512, 21) = 589,824 + 256 + 2,709.
    "fcn_resnet18": 11_769_301,
    # torchvision's SSD300_VGG16_Weights.COCO_V1 meta["num_params"]
    "ssd300_vgg16": 35_641_826,
    # trt_pose (commit 336b8cd) states no count: torchvision's backbone without its classifier
    # (resnet18 11,689,512 - 513,000; densenet121 7,978,856 - 1,025,000) plus CmapPafHeadAttention.
    # With the classifier trt_pose keeps but never calls, torch counts 21,278,308 and 21,761,956:
    # 81 and 83 MiB of float32, the README's 81 MB and 84 MB weight files.
    "trt_pose_resnet18_att": 11_689_512 - 513_000 + _pose_head_params(512),
    "trt_pose_densenet121_att": 7_978_856 - 1_025_000 + _pose_head_params(1024),
}

# Published multiply-adds in GMACs at the default input: torchvision's model tables ("GFLOPS"
# there are multiply-adds) and Ultralytics' 8.7 GFLOPs (= 2 x MACs) for yolov8n at 640.
PUBLISHED_GMACS = {
    "resnet18": 1.81, "resnet34": 3.66, "resnet50": 4.09, "resnet101": 7.80, "resnet152": 11.51,
    "resnext50_32x4d": 4.23, "vgg16": 15.47, "vgg19": 19.63, "alexnet": 0.71,
    "squeezenet1_1": 0.35, "densenet121": 2.83, "mobilenet_v2": 0.30,
    # torchvision rounds to 0.14; the ShuffleNet V2 paper lists 146 M for the 1.0x model
    "shufflenet_v2_x1_0": 0.146,
    "yolov8n": 8.7 / 2,
    # docs.ultralytics.com/models/yolov8 (detection, 640): 28.6, 78.9, 165.2, 257.8 GFLOPs
    "yolov8s": 28.6 / 2, "yolov8m": 78.9 / 2, "yolov8l": 165.2 / 2, "yolov8x": 257.8 / 2,
    # Ultralytics' docs tables (GFLOPs at 640 = 2 x MACs) and the YOLOv7 paper's 104.7 GFLOPs
    "yolo11n": 6.5 / 2, "yolo11s": 21.5 / 2, "yolo11m": 68.0 / 2, "yolo11l": 86.9 / 2, "yolo11x": 194.9 / 2,
    "yolov5s": 16.5 / 2, "yolov7": 104.7 / 2,
    # SSD300_VGG16_Weights.COCO_V1 meta["_ops"] at 300x300
    "ssd300_vgg16": 34.858,
}


def test_names_lists_the_whole_zoo_in_natural_order():
    assert sorted(zoo.names()) == sorted(PARAMS)
    resnets = [n for n in zoo.names() if re.fullmatch(r"resnet\d+", n)]
    assert resnets == ["resnet18", "resnet34", "resnet50", "resnet101", "resnet152"]


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_parameter_count_equals_the_reference(name):
    assert zoo.stats(name).params == PARAMS[name]


@pytest.mark.parametrize("name", sorted(PUBLISHED_GMACS))
def test_macs_match_published_figures_within_3_percent(name):
    gmacs = zoo.stats(name).macs / 1e9
    assert gmacs == pytest.approx(PUBLISHED_GMACS[name], rel=0.03)


def test_fcn_resnet50_macs_match_torchvision_with_its_aux_head():
    # torchvision's 152.72 GFLOPS is for the weights with the aux classifier (aux_loss=True):
    # FCNHead(1024, 21) on layer3's 65x65 output adds 3x3x1024x256 + 256x21 MACs per pixel.
    aux = 65 * 65 * (3 * 3 * 1024 * 256 + 256 * 21)
    assert (zoo.stats("fcn_resnet50").macs + aux) / 1e9 == pytest.approx(152.72, rel=0.03)


def test_default_resolutions():
    assert zoo.default_resolution("resnet50") == (224, 224)
    assert zoo.default_resolution("yolov8n") == (640, 640)
    assert zoo.default_resolution("fcn_resnet50") == (520, 520)
    assert zoo.stats("yolov8n").output_shapes == [(1, 84, 8400)]
    # exported without the upsample: jetson-inference scales the 1/32 class grid up itself
    assert zoo.stats("fcn_resnet18").output_shapes == [(1, 21, 17, 17)]
    assert zoo.stats("fcn_resnet50").output_shapes == [(1, 21, 520, 520)]
    assert zoo.stats("yolov5s", resolution=672).output_shapes == [(1, 255, 84, 84), (1, 255, 42, 42),
                                                                   (1, 255, 21, 21)]
    assert zoo.stats("yolov7").output_shapes == [(1, 25200, 85)]
    assert zoo.stats("yolo11x").output_shapes == [(1, 84, 8400)]
    assert zoo.stats("resnet50").input_shape == (1, 3, 224, 224)
    assert zoo.stats("ssd300_vgg16").input_shape == (1, 3, 300, 300)
    assert zoo.stats("ssd300_vgg16").output_shapes == [(1, 8732, 4), (1, 8732, 91)]


def test_other_resolutions_change_shapes_and_macs():
    small = zoo.stats("resnet50", resolution=112)
    assert small.input_shape == (1, 3, 112, 112)
    assert small.params == PARAMS["resnet50"]
    assert small.macs < zoo.stats("resnet50").macs / 3
    assert zoo.stats("yolov8n", resolution=(320, 480)).output_shapes == [(1, 84, 40 * 60 + 20 * 30 + 10 * 15)]
    # vgg's adaptive pool to 7x7 for a 3x3 feature map keeps the classifier's shape
    assert zoo.stats("vgg16", resolution=96).params == PARAMS["vgg16"]


def test_unknown_name_lists_the_zoo():
    with pytest.raises(ModelError) as err:
        zoo.build("resnet51")
    assert "resnet51" in str(err.value) and "resnet50" in str(err.value) and "yolov8n" in str(err.value)
    with pytest.raises(ModelError, match="resnet51"):
        zoo.path("resnet51")
    with pytest.raises(ModelError, match="resnet51"):
        zoo.stats("resnet51")


def test_yolo_resolution_must_be_a_multiple_of_32():
    with pytest.raises(ModelError, match="multiple of 32"):
        zoo.stats("yolov8n", resolution=300)


def test_too_small_resolution_is_a_model_error():
    with pytest.raises(ModelError, match="resnet18"):
        zoo.stats("resnet18", resolution=8)


def test_build_is_deterministic():
    a = zoo.build("squeezenet1_1", resolution=64).SerializeToString()
    b = zoo.build("squeezenet1_1", resolution=64).SerializeToString()
    assert a == b


RUNNABLE = [
    ("resnet18", 64, (2, 1000)),
    ("squeezenet1_1", 64, (2, 1000)),
    ("mobilenet_v2", 96, (2, 1000)),
    ("shufflenet_v2_x1_0", 64, (2, 1000)),
    ("densenet121", 64, (2, 1000)),
    ("yolov8n", 320, (2, 84, 2100)),
    ("yolo11n", 320, (2, 84, 2100)),
    ("yolov7", 64, (2, 3 * (64 + 16 + 4), 85)),
    ("fcn_resnet18", 96, (2, 21, 3, 3)),
]


@pytest.mark.parametrize("name,resolution,shape", RUNNABLE)
def test_small_models_pass_full_check_and_run_in_onnxruntime(name, resolution, shape):
    ort = pytest.importorskip("onnxruntime")
    model = zoo.build(name, resolution=resolution)
    onnx.checker.check_model(model, full_check=True)
    assert model.opset_import[0].version == 17
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).random((2, 3, resolution, resolution), dtype=np.float32)
    (out,) = sess.run(None, {sess.get_inputs()[0].name: x})
    assert out.shape == shape
    assert np.isfinite(out).all()
    # the analysis of the real graph agrees with the structure-only one
    stats = zoo.stats(name, resolution=resolution, batch=2)
    assert stats.output_shapes == [shape]
    if name == "yolov7":
        assert np.all(out[..., 4:] <= 1.0)  # objectness and classes through the sigmoid
    from pytest_jetson.models.graph import analyze
    full = analyze(model, batch=2)
    assert (full.params, full.macs, full.flops) == (stats.params, stats.macs, stats.flops)


@pytest.mark.parametrize("name,backbone,features,side", [("trt_pose_resnet18_att", "resnet18", 512, 224),
                                                          ("trt_pose_densenet121_att", "densenet121", 1024, 256)])
def test_trt_pose_macs_are_the_backbone_and_the_attention_head(name, backbone, features, side):
    """The backbone's MACs (the torchvision network's without its classifier) plus, per branch,
    three stride-2 4x4 transposed convolutions (every input element times 256 x 16), the 3x3
    attention convolution and the 1x1 output convolution at a quarter of the input."""
    f = side // 32
    up = (f * f * features + (2 * f) ** 2 * 256 + (4 * f) ** 2 * 256) * 256 * 16
    att = (8 * f) ** 2 * 256 * 256 * 9
    out = (8 * f) ** 2 * 256 * (18 + 42)
    trunk = zoo.stats(backbone, resolution=side).macs - features * 1000
    assert zoo.default_resolution(name) == (side, side)
    assert zoo.stats(name).macs == trunk + 2 * (up + att) + out
    assert zoo.task(name) == "pose"
    assert zoo.stats(name).output_shapes == [(1, 18, side // 4, side // 4), (1, 42, side // 4, side // 4)]


@pytest.mark.parametrize("name", ["trt_pose_resnet18_att", "trt_pose_densenet121_att"])
def test_trt_pose_nets_pass_full_check_and_run_in_onnxruntime(name):
    """The transposed convolutions' tracked shapes are onnxruntime's; the heads' gates are live."""
    ort = pytest.importorskip("onnxruntime")
    model = zoo.build(name, resolution=64)
    onnx.checker.check_model(model, full_check=True)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("ConvTranspose") == 6 and {"Sigmoid", "Tanh"} <= set(ops)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).random((2, 3, 64, 64), dtype=np.float32)
    cmap, paf = sess.run(None, {sess.get_inputs()[0].name: x})
    assert (cmap.shape, paf.shape) == ((2, 18, 16, 16), (2, 42, 16, 16))
    assert np.isfinite(cmap).all() and np.isfinite(paf).all() and cmap.std() > 0
    stats = zoo.stats(name, resolution=64, batch=2)
    assert stats.output_shapes == [cmap.shape, paf.shape]
    from pytest_jetson.models.graph import analyze
    full = analyze(model, batch=2)
    assert (full.params, full.macs, full.flops) == (stats.params, stats.macs, stats.flops)


def test_fixed_batch_build_has_a_static_batch_dimension():
    model = zoo.build("squeezenet1_1", resolution=64, batch=4)
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_value == 4


@pytest.mark.parametrize("name,weight_bytes", [("vgg19", 574e6), ("resnet152", 240e6)])
def test_stats_never_generates_weights(name, weight_bytes):
    zoo._stats.cache_clear()
    tracemalloc.start()
    try:
        stats = zoo.stats(name)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert stats.weight_bytes > weight_bytes  # the weights it describes...
    assert peak < 50e6  # ...are never allocated
    assert zoo.build_structure(name).ByteSize() < 1e6


def test_path_writes_once_and_reuses(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_JETSON_CACHE", str(tmp_path))
    p = zoo.path("squeezenet1_1", resolution=64)
    assert p.parent.parent == tmp_path and p.exists()
    mtime = p.stat().st_mtime_ns
    assert zoo.path("squeezenet1_1", resolution=64) == p
    assert p.stat().st_mtime_ns == mtime
    model = onnx.load(str(p))
    onnx.checker.check_model(model, full_check=True)
    assert zoo.path("squeezenet1_1", resolution=64, batch=2) != p
    assert [f for f in os.listdir(p.parent) if f.endswith(".tmp")] == []


def test_path_publishes_complete_files_only(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_JETSON_CACHE", str(tmp_path))
    real_replace = os.replace
    seen = []

    def checking_replace(src, dst):
        if not str(dst).endswith(".onnx"):  # the sha256 recorded beside it
            return real_replace(src, dst)
        # at publication time the target does not exist yet and the temp file is complete
        assert not os.path.exists(dst)
        onnx.checker.check_model(onnx.load(src))
        seen.append(dst)
        real_replace(src, dst)

    monkeypatch.setattr(zoo.os, "replace", checking_replace)
    p = zoo.path("squeezenet1_1", resolution=64)
    assert seen == [str(p)]


def test_concurrent_processes_get_the_same_complete_file(tmp_path):
    code = textwrap.dedent("""
        import sys
        from pytest_jetson.models import zoo
        print(zoo.path("squeezenet1_1", resolution=64))
    """)
    env = dict(os.environ, PYTEST_JETSON_CACHE=str(tmp_path),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    paths = {o[0].strip() for o in outs}
    assert len(paths) == 1
    data = Path(paths.pop()).read_bytes()
    assert data == zoo.build("squeezenet1_1", resolution=64).SerializeToString()
    assert not [f for f in os.listdir(tmp_path / "models") if f.endswith(".tmp")]


def test_cache_dir_defaults_to_user_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("PYTEST_JETSON_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if sys.platform.startswith("linux"):
        assert zoo.cache_dir() == tmp_path / "pytest-jetson"
    assert zoo.cache_dir().name == "pytest-jetson"


def test_yolov8_ladder_matches_the_published_rounded_figures():
    # docs.ultralytics.com's table: params (M) and GFLOPs at 640, rounded to one decimal
    published = {"yolov8n": (3.2, 8.7), "yolov8s": (11.2, 28.6), "yolov8m": (25.9, 78.9),
                 "yolov8l": (43.7, 165.2), "yolov8x": (68.2, 257.8)}
    for name, (mparams, gflops) in published.items():
        s = zoo.stats(name)
        assert round(s.params / 1e6, 1) == mparams, name
        # Ultralytics counts the fused model with thop: within one unit of the last digit
        assert 2 * s.macs / 1e9 == pytest.approx(gflops, abs=0.1), name
        assert s.output_shapes == [(1, 84, 8400)], name
