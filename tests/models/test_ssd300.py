"""ssd300_vgg16 as torchvision builds it: default boxes, outputs, and the example pipeline's
post-processing (tests/perf/ssd_pipeline.py) agreeing in every form."""

import numpy as np
import onnx
import pytest

from pytest_jetson.errors import ModelError
from pytest_jetson.models import torchvision_nets as tv
from pytest_jetson.models import zoo
from tests.perf import ssd_pipeline as ssd


def test_default_boxes_are_torchvisions():
    boxes = tv.ssd300_default_boxes()
    assert boxes.shape == (8732, 4)
    assert tv.ssd300_anchors_per_location() == [4, 6, 6, 6, 4, 4]
    assert tv.ssd300_feature_sizes(300, 300) == [(38, 38), (19, 19), (10, 10), (5, 5), (3, 3), (1, 1)]
    # the first cell of conv4_3: centre 0.5 / (300 / 8), then (s, s), (s', s'), ratio 2 both ways
    s, s1 = 0.07, (0.07 * 0.15) ** 0.5
    np.testing.assert_allclose(boxes[:4], [[0.5 / 37.5, 0.5 / 37.5, s, s], [0.5 / 37.5, 0.5 / 37.5, s1, s1],
                                           [0.5 / 37.5, 0.5 / 37.5, s * 2 ** 0.5, s / 2 ** 0.5],
                                           [0.5 / 37.5, 0.5 / 37.5, s / 2 ** 0.5, s * 2 ** 0.5]], rtol=1e-6)
    # the 1x1 map's widest box is clipped to the image
    np.testing.assert_allclose(boxes[-2], [0.5, 0.5, 1.0, 0.87 / 2 ** 0.5], rtol=1e-6)


@pytest.mark.parametrize("side", [268, 300, 512])
def test_default_boxes_match_the_graphs_outputs_at_any_size(side):
    assert len(tv.ssd300_default_boxes(side, side)) == zoo.stats("ssd300_vgg16", resolution=side).output_shapes[0][1]


def test_smaller_than_268_is_refused_with_the_minimum():
    with pytest.raises(ModelError, match="at least 268"):
        zoo.stats("ssd300_vgg16", resolution=256)


def test_runs_in_onnxruntime_with_boxes_and_scores():
    ort = pytest.importorskip("onnxruntime")
    model = zoo.build("ssd300_vgg16", resolution=268)
    onnx.checker.check_model(model, full_check=True)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert [o.name for o in sess.get_outputs()] == ["boxes", "scores"]
    x = np.random.default_rng(0).random((1, 3, 268, 268), dtype=np.float32)
    boxes, scores = sess.run(None, {"input": x})
    assert boxes.shape == (1, 7034, 4) and scores.shape == (1, 7034, 91)
    assert np.isfinite(boxes).all() and np.isfinite(scores).all()


@pytest.fixture(scope="module")
def item():
    return ssd.items(1, batch=2, seed=3)[0]


def test_per_box_and_vectorised_postprocessing_find_the_same_detections(item):
    slow = ssd.postprocess_per_box(item.boxes, item.scores)
    fast = ssd.postprocess_vectorised(item.boxes, item.scores)
    assert len(slow) == len(fast) == 2
    for a, b in zip(slow, fast):
        assert len(a.scores) > 8  # the scene's objects and some weak detections
        np.testing.assert_array_equal(a.labels, b.labels)
        np.testing.assert_allclose(a.scores, b.scores, rtol=1e-5)
        np.testing.assert_allclose(a.boxes, b.boxes, atol=0.05)
    # the scene's objects are found with high scores
    assert (fast[0].scores > 0.5).sum() >= 4


def test_the_gpu_graphs_compute_what_the_cpu_stages_do(item):
    ort = pytest.importorskip("onnxruntime")

    def run(model, feeds):
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))

    pre = run(ssd.preprocess_graph(), {"frames": item.frames})["input"]
    cpu = ssd.preprocess(ssd.frame_to_tensor(item.frames))
    assert pre.shape == cpu.shape == (2, 3, 300, 300)
    np.testing.assert_allclose(pre, cpu, atol=0.02)  # of values up to 150: float rounding
    out = run(ssd.decode_graph(), {"boxes": item.boxes, "scores": item.scores})
    np.testing.assert_allclose(out["decoded"], item.decoded, atol=1e-3)
    np.testing.assert_allclose(out["probs"], item.probs, atol=1e-6)


def test_a_gpu_form_on_onnxruntime_finds_what_the_cpu_form_finds(item, tmp_path):
    pytest.importorskip("onnxruntime")
    from pytest_jetson.engines.onnxruntime import OnnxRuntimeEngine

    paths = ssd.write_graphs(tmp_path)
    pre = OnnxRuntimeEngine(str(paths["ssd300_preprocess"]), batch=2)
    dec = OnnxRuntimeEngine(str(paths["ssd300_decode"]), batch=2)
    seen = []
    gpu = ssd.Pipeline("gpu_prepost", lambda x: seen.append(x.shape) or {}, pre=pre, decode=dec)(item)
    cpu = ssd.Pipeline("cpu_post", lambda x: seen.append(x.shape) or {})(item)
    assert seen == [(2, 3, 300, 300)] * 2
    for a, b in zip(gpu, cpu):
        np.testing.assert_array_equal(a.labels, b.labels)
        np.testing.assert_allclose(a.boxes, b.boxes, atol=0.05)


def test_an_unknown_form_or_a_missing_engine_is_named():
    with pytest.raises(ValueError, match="'gpu'.*baseline"):
        ssd.Pipeline("gpu", detector=None)
    with pytest.raises(ValueError, match="'batched'.*pre= and decode="):
        ssd.Pipeline("batched", detector=None, pre=None)
