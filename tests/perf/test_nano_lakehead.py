"""The classification models of the Jetson Nano study (SEEDS.md section 4, Table 1): PyTorch ->
ONNX (dynamic batch) -> TensorRT, batch 1, fp16 (the Nano has no int8 speed-up)."""

import pytest

pytestmark = pytest.mark.jetson("nano")

MODELS = ["alexnet", "vgg19", "resnet50", "squeezenet1_1", "densenet121", "shufflenet_v2_x1_0",
          "mobilenet_v2", "resnext50_32x4d"]


@pytest.mark.perf(throughput="5%", latency_mean="5%", memory="5%")
@pytest.mark.parametrize("model", MODELS)
def test_lakehead_model(trt_engine, perf, model):
    perf.measure(trt_engine(model, precision="fp16", batch=1), duration="5s", warmup="1s")
