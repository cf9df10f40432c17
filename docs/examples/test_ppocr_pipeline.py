import pytest

import ppocr  # the application's code: pages, crops, CTC decoding

STAGES = {"detect": {"latency_mean": "10%"}, "crop": {"latency_mean": "15%"},
          "recognise": {"latency_mean": "10%"}}


@pytest.mark.perf(latency_p99="<= 400 ms", backends=["tensorrt", "simulated"])  # the board's budget
@pytest.mark.perf(stages=STAGES)
def test_ppocr(trt_engine, perf):
    det = trt_engine(ppocr.DET, precision="fp16", input_shape=(3, ppocr.SIDE, ppocr.SIDE))
    rec = trt_engine(ppocr.REC, precision="fp16", batch=ppocr.LINES, input_shape=(3, 48, 320))
    chars = ppocr.charset()

    def ocr(img):
        with perf.stage("detect"):
            prob = det(ppocr.normalise(img))["sigmoid_0.tmp_0"]
        with perf.stage("crop"):
            lines = ppocr.crop_lines(img, prob[0, 0])
        with perf.stage("recognise"):
            return ppocr.read_text(rec(lines)["softmax_11.tmp_0"], chars)

    pages = [ppocr.page(seed) for seed in range(4)]
    perf.measure(ocr, inputs=pages, duration="10s")
    perf.check_outputs(det, inputs=ppocr.normalise(pages[0]))  # against onnxruntime on the CPU
