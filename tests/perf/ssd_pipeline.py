"""The SSD300 video pipeline of the profiling study (SEEDS.md section 3), as a team writes it.

A 1280x720 BGR camera frame goes through four stages: ``frame_to_tensor`` (BGR uint8 to RGB
float in [0, 1]), ``preprocess`` (torchvision's transform: normalise, resize to 300x300, HWC to
CHW), ``detector`` (ssd300_vgg16 from the zoo, ``engine(x)``) and ``postprocess`` (softmax over
91 classes, decode of 8732 boxes against the default boxes, score threshold, top-k and NMS per
class: torchvision's ``postprocess_detections`` with its thresholds). The study's five forms:

* ``baseline``: post-processing element by element, one default box at a time (the detector's
  outputs walked row by row, as a port of per-detection code does);
* ``cpu_post``: the detector's outputs taken to numpy in one go and post-processed vectorised;
* ``gpu_prepost``: pre-processing (cast, channel swap, layout, resize, normalise) and the
  softmax and box decode as two small ONNX graphs run as engines on the GPU; only the
  threshold, top-k and NMS stay on the CPU;
* ``batched``: the same, four frames per call;
* ``fp16``: the same, every engine in fp16.

Every stage does its real work in numpy or in an engine. The zoo's detector has seeded random
weights, so what it returns is no detection of anything: the pipeline post-processes instead
the outputs a trained SSD300 returns for the frame's scene (a few objects, confident background
elsewhere; :func:`scene_outputs`), prepared with the frames outside the timed region. Where an
engine computes nothing (the simulated board returns zeros) the decode engine's outputs are
taken from the scene the same way, so the CPU's NMS always has a real frame's work.
"""

import math
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence

import numpy as np

from pytest_jetson.models import torchvision_nets as tv

FRAME_H, FRAME_W = 720, 1280
SIZE = 300
CLASSES = tv.SSD300_CLASSES
# torchvision's ssd300_vgg16 transform: mean of the 0-1 image, std 1/255 (undoes ToTensor)
MEAN = np.array([0.48235, 0.45882, 0.40784], np.float32)
STD = np.array([1.0 / 255.0] * 3, np.float32)
# torchvision's SSD post-processing
SCORE_THRESH = 0.01
NMS_THRESH = 0.45
TOPK = 400
DETECTIONS = 200
BOX_WEIGHTS = tv.SSD300_BOX_WEIGHTS
WH_CLIP = math.log(1000.0 / 16)

FORMS = ("baseline", "cpu_post", "gpu_prepost", "batched", "fp16")
GPU_FORMS = ("gpu_prepost", "batched", "fp16")


def default_boxes_xywh() -> np.ndarray:
    """Default boxes in frame pixels: (A, 4) centre x, centre y, width, height."""
    d = tv.ssd300_default_boxes(SIZE, SIZE)
    return d * np.array([FRAME_W, FRAME_H, FRAME_W, FRAME_H], np.float32)


# --- the scene: frames, and what a trained detector returns for them ----------------------------


class Item(NamedTuple):
    """One call's input: the frames (batch, H, W, 3) and the outputs a trained SSD300 returns
    for them, raw (``boxes``, ``scores``) and decoded (``decoded``, ``probs``)."""

    frames: np.ndarray
    boxes: np.ndarray
    scores: np.ndarray
    decoded: np.ndarray
    probs: np.ndarray


def _encode(gt: np.ndarray, priors: np.ndarray) -> np.ndarray:
    """BoxCoder.encode_single: (x1, y1, x2, y2) targets against (cx, cy, w, h) priors."""
    w, h = gt[:, 2] - gt[:, 0], gt[:, 3] - gt[:, 1]
    cx, cy = gt[:, 0] + 0.5 * w, gt[:, 1] + 0.5 * h
    wx, wy, ww, wh = BOX_WEIGHTS
    return np.stack([wx * (cx - priors[:, 0]) / priors[:, 2], wy * (cy - priors[:, 1]) / priors[:, 3],
                     ww * np.log(w / priors[:, 2]), wh * np.log(h / priors[:, 3])], -1).astype(np.float32)


def _iou_one_to_many(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    xx1 = np.maximum(box[0], boxes[:, 0])
    yy1 = np.maximum(box[1], boxes[:, 1])
    xx2 = np.minimum(box[2], boxes[:, 2])
    yy2 = np.minimum(box[3], boxes[:, 3])
    inter = np.clip(xx2 - xx1, 0, None) * np.clip(yy2 - yy1, 0, None)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return inter / np.maximum(area + areas - inter, 1e-9)


def scene_outputs(seed: int, objects: int = 8) -> tuple:
    """What a trained SSD300 returns for a street scene of ``objects`` objects: (boxes (A, 4)
    offsets, scores (A, 91) logits). Default boxes that overlap an object (IoU >= 0.4) score its
    class the more the better they overlap and regress towards it; the rest is confident
    background with a few weak class scores, as a trained detector's are."""
    rng = np.random.default_rng(seed)
    priors = default_boxes_xywh()
    corners = np.concatenate([priors[:, :2] - priors[:, 2:] / 2, priors[:, :2] + priors[:, 2:] / 2], 1)
    a = len(priors)
    scores = rng.normal(-2.0, 1.0, (a, CLASSES)).astype(np.float32)
    scores[:, 0] = rng.normal(8.0, 1.0, a)
    boxes = rng.normal(0.0, 0.5, (a, 4)).astype(np.float32)
    for _ in range(objects):
        w = rng.uniform(60, 400)
        h = rng.uniform(60, 400)
        x1 = rng.uniform(0, FRAME_W - w)
        y1 = rng.uniform(0, FRAME_H - h)
        gt = np.array([x1, y1, x1 + w, y1 + h], np.float32)
        label = int(rng.integers(1, CLASSES))
        iou = _iou_one_to_many(gt, corners)
        hit = np.nonzero(iou >= 0.4)[0]
        scores[hit, label] = scores[hit, 0] + rng.normal(4.0 * iou[hit], 0.5)
        boxes[hit] = _encode(np.repeat(gt[None], len(hit), 0), priors[hit]) + rng.normal(0, 0.1, (len(hit), 4))
    return boxes, scores


def frame(seed: int) -> np.ndarray:
    """A 1280x720 BGR uint8 frame (smooth gradients and noise: the values do not change the work)."""
    rng = np.random.default_rng(seed)
    base = np.linspace(0, 255, FRAME_W, dtype=np.float32)[None, :, None]
    img = base + rng.normal(0, 20, (FRAME_H, 1, 3)).astype(np.float32)
    return np.clip(img + rng.integers(0, 16, (FRAME_H, FRAME_W, 3)), 0, 255).astype(np.uint8)


def items(count: int, batch: int = 1, seed: int = 0) -> List[Item]:
    """``count`` inputs of ``batch`` frames each, with their scenes' outputs."""
    out = []
    for i in range(count):
        seeds = [seed * 1000 + i * batch + j for j in range(batch)]
        raw = [scene_outputs(s) for s in seeds]
        boxes = np.stack([r[0] for r in raw])
        scores = np.stack([r[1] for r in raw])
        decoded, probs = decode_vectorised(boxes, scores)
        out.append(Item(np.stack([frame(s) for s in seeds]), boxes, scores, decoded, probs))
    return out


# --- the stages on the CPU ----------------------------------------------------------------------


def frame_to_tensor(frames: np.ndarray) -> np.ndarray:
    """BGR uint8 (batch, H, W, 3) to RGB float32 in [0, 1] (what ToTensor does, before layout)."""
    return frames[..., ::-1].astype(np.float32) * np.float32(1.0 / 255.0)


def _resize_axis(x: np.ndarray, axis: int, size: int) -> np.ndarray:
    """Bilinear resampling of one axis, half-pixel centres (F.interpolate, align_corners=False)."""
    n = x.shape[axis]
    pos = np.clip((np.arange(size, dtype=np.float32) + 0.5) * (n / size) - 0.5, 0, n - 1)
    lo = np.floor(pos).astype(np.intp)
    hi = np.minimum(lo + 1, n - 1)
    shape = [1] * x.ndim
    shape[axis] = size
    frac = (pos - lo).reshape(shape)
    return np.take(x, lo, axis=axis) * (1 - frac) + np.take(x, hi, axis=axis) * frac


def preprocess(images: np.ndarray) -> np.ndarray:
    """torchvision's transform: normalise, resize to 300x300, then (batch, 3, 300, 300)."""
    x = (images - MEAN) / STD
    x = _resize_axis(_resize_axis(x, 1, SIZE), 2, SIZE)
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2), dtype=np.float32)


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def decode_vectorised(boxes: np.ndarray, scores: np.ndarray, priors: Optional[np.ndarray] = None):
    """Softmax and BoxCoder.decode of whole (batch, A, ...) arrays: (x1, y1, x2, y2) clipped to
    the frame, and class probabilities."""
    priors = default_boxes_xywh() if priors is None else priors
    rel = boxes / np.array(BOX_WEIGHTS, np.float32)
    ctr = rel[..., :2] * priors[:, 2:] + priors[:, :2]
    wh = np.exp(np.minimum(rel[..., 2:], WH_CLIP)) * priors[:, 2:]
    out = np.concatenate([ctr - 0.5 * wh, ctr + 0.5 * wh], -1)
    out = np.clip(out, 0, np.array([FRAME_W, FRAME_H, FRAME_W, FRAME_H], np.float32))
    return out.astype(np.float32), softmax(scores).astype(np.float32)


def nms(boxes: np.ndarray, scores: np.ndarray, thresh: float = NMS_THRESH,
        limit: int = DETECTIONS) -> np.ndarray:
    """Greedy NMS, vectorised over the remaining boxes: the first ``limit`` kept, in decreasing
    score (the same as keeping all and truncating, since boxes are kept in score order)."""
    order = np.argsort(-scores, kind="stable")
    keep = []
    while order.size and len(keep) < limit:
        i = order[0]
        keep.append(i)
        rest = order[1:]
        order = rest[_iou_one_to_many(boxes[i], boxes[rest]) <= thresh]
    return np.array(keep, dtype=np.intp)


class Detections(NamedTuple):
    boxes: np.ndarray  # (n, 4) x1, y1, x2, y2 in frame pixels
    scores: np.ndarray
    labels: np.ndarray


def select_and_nms(decoded: np.ndarray, probs: np.ndarray) -> Detections:
    """One image: every (box, class) pair above the threshold, the top 400 of each class, then
    NMS per class at once (boxes offset by class, as torchvision's batched_nms) and the best 200."""
    anchor, label = np.nonzero(probs[:, 1:] > SCORE_THRESH)
    label = label + 1
    score = probs[anchor, label]
    # the top-k per class: sort by (class, score) and keep each class's first TOPK
    order = np.lexsort((-score, label))
    anchor, label, score = anchor[order], label[order], score[order]
    first = np.searchsorted(label, label, side="left")
    top = np.arange(len(label)) - first < TOPK
    anchor, label, score = anchor[top], label[top], score[top]
    boxes = decoded[anchor]
    offset = (label * (max(FRAME_W, FRAME_H) + 1)).astype(np.float32)[:, None]
    keep = nms(boxes + offset, score)
    return Detections(boxes[keep], score[keep], label[keep])


def postprocess_vectorised(boxes: np.ndarray, scores: np.ndarray) -> List[Detections]:
    decoded, probs = decode_vectorised(boxes, scores)
    return [select_and_nms(d, p) for d, p in zip(decoded, probs)]


def postprocess_per_box(boxes: np.ndarray, scores: np.ndarray) -> List[Detections]:
    """The same results, one default box at a time: softmax, threshold and decode per row, then
    per class a greedy NMS over Python lists."""
    priors = default_boxes_xywh().tolist()
    wx, wy, ww, wh = BOX_WEIGHTS
    results = []
    for img_boxes, img_scores in zip(boxes, scores):
        per_class: Dict[int, list] = {}
        for i in range(img_scores.shape[0]):
            row = img_scores[i]
            e = np.exp(row - row.max())
            p = e / e.sum()
            hits = np.nonzero(p[1:] > SCORE_THRESH)[0]
            if not len(hits):
                continue
            dx, dy, dw, dh = img_boxes[i].tolist()
            cx, cy, pw, ph = priors[i]
            x = dx / wx * pw + cx
            y = dy / wy * ph + cy
            w = math.exp(min(dw / ww, WH_CLIP)) * pw
            h = math.exp(min(dh / wh, WH_CLIP)) * ph
            box = (min(max(x - w / 2, 0.0), FRAME_W), min(max(y - h / 2, 0.0), FRAME_H),
                   min(max(x + w / 2, 0.0), FRAME_W), min(max(y + h / 2, 0.0), FRAME_H))
            for c in hits.tolist():
                per_class.setdefault(c + 1, []).append((float(p[c + 1]), box))
        found = []
        for label in sorted(per_class):
            cands = sorted(per_class[label], key=lambda t: -t[0])[:TOPK]
            kept: list = []
            for score, box in cands:
                if all(_iou(box, k) <= NMS_THRESH for _, k in kept):
                    kept.append((score, box))
            found += [(s, b, label) for s, b in kept]
        found.sort(key=lambda t: -t[0])
        found = found[:DETECTIONS]
        results.append(Detections(np.array([b for _, b, _ in found], np.float32).reshape(-1, 4),
                                  np.array([s for s, _, _ in found], np.float32),
                                  np.array([c for _, _, c in found], np.int64)))
    return results


def _iou(a: Sequence[float], b: Sequence[float]) -> float:
    iw = min(a[2], b[2]) - max(a[0], b[0])
    ih = min(a[3], b[3]) - max(a[1], b[1])
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


# --- the stages on the GPU: two small ONNX graphs -----------------------------------------------


def preprocess_graph():
    """uint8 BGR frames (batch, 720, 1280, 3) -> normalised (batch, 3, 300, 300) float: cast,
    layout, channel swap, resize (half-pixel bilinear), then normalise (a per-channel affine map,
    which commutes with the resize, so the GPU normalises 90,000 pixels instead of 921,600)."""
    from onnx import TensorProto, helper, numpy_helper

    scale = (1.0 / 255.0 / STD).reshape(1, 3, 1, 1).astype(np.float32)
    shift = (-MEAN / STD).reshape(1, 3, 1, 1).astype(np.float32)
    inits = [numpy_helper.from_array(np.array([2, 1, 0], np.int64), "bgr_to_rgb"),
             numpy_helper.from_array(np.array([0], np.int64), "zero"),
             numpy_helper.from_array(np.array([2], np.int64), "two"),
             numpy_helper.from_array(np.array([SIZE, SIZE], np.int64), "hw"),
             numpy_helper.from_array(np.array([], np.float32), "no_roi"),
             numpy_helper.from_array(np.array([], np.float32), "no_scales"),
             numpy_helper.from_array(scale, "scale"), numpy_helper.from_array(shift, "shift")]
    nodes = [
        helper.make_node("Cast", ["frames"], ["f"], to=TensorProto.FLOAT, name="cast"),
        helper.make_node("Transpose", ["f"], ["chw"], perm=[0, 3, 1, 2], name="hwc_to_chw"),
        helper.make_node("Gather", ["chw", "bgr_to_rgb"], ["rgb"], axis=1, name="bgr_to_rgb"),
        helper.make_node("Shape", ["rgb"], ["shape"], name="shape"),
        helper.make_node("Slice", ["shape", "zero", "two"], ["nc"], name="nc"),
        helper.make_node("Concat", ["nc", "hw"], ["sizes"], axis=0, name="sizes"),
        helper.make_node("Resize", ["rgb", "no_roi", "no_scales", "sizes"], ["small"], mode="linear",
                         coordinate_transformation_mode="half_pixel", name="resize"),
        helper.make_node("Mul", ["small", "scale"], ["scaled"], name="scale"),
        helper.make_node("Add", ["scaled", "shift"], ["input"], name="normalise"),
    ]
    graph = helper.make_graph(
        nodes, "ssd300_preprocess",
        [helper.make_tensor_value_info("frames", TensorProto.UINT8, ["batch", FRAME_H, FRAME_W, 3])],
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, SIZE, SIZE])], inits)
    return _model(graph)


def decode_graph():
    """The head's outputs -> (``decoded`` (batch, A, 4) x1, y1, x2, y2 in frame pixels, ``probs``
    (batch, A, 91)): softmax over the classes and BoxCoder.decode against the default boxes."""
    from onnx import TensorProto, helper, numpy_helper

    priors = default_boxes_xywh()
    a = len(priors)
    consts = {
        "inv_weights": 1.0 / np.array(BOX_WEIGHTS, np.float32),
        "prior_ctr": priors[:, :2], "prior_wh": priors[:, 2:],
        "wh_clip": np.array(WH_CLIP, np.float32), "half": np.array(0.5, np.float32),
        "lo": np.array(0.0, np.float32),
        "hi": np.array([FRAME_W, FRAME_H, FRAME_W, FRAME_H], np.float32),
        "s0": np.array([0], np.int64), "s2": np.array([2], np.int64), "s4": np.array([4], np.int64),
        "ax": np.array([2], np.int64),
    }
    inits = [numpy_helper.from_array(np.asarray(v, np.asarray(v).dtype), k) for k, v in consts.items()]
    nodes = [
        helper.make_node("Softmax", ["scores"], ["probs"], axis=-1, name="softmax"),
        helper.make_node("Mul", ["boxes", "inv_weights"], ["rel"], name="unweight"),
        helper.make_node("Slice", ["rel", "s0", "s2", "ax"], ["dxy"], name="dxy"),
        helper.make_node("Slice", ["rel", "s2", "s4", "ax"], ["dwh"], name="dwh"),
        helper.make_node("Mul", ["dxy", "prior_wh"], ["off"], name="offset"),
        helper.make_node("Add", ["off", "prior_ctr"], ["ctr"], name="centre"),
        helper.make_node("Min", ["dwh", "wh_clip"], ["dwh_c"], name="clip_wh"),
        helper.make_node("Exp", ["dwh_c"], ["ewh"], name="exp"),
        helper.make_node("Mul", ["ewh", "prior_wh"], ["wh"], name="size"),
        helper.make_node("Mul", ["wh", "half"], ["half_wh"], name="half_size"),
        helper.make_node("Sub", ["ctr", "half_wh"], ["x1y1"], name="x1y1"),
        helper.make_node("Add", ["ctr", "half_wh"], ["x2y2"], name="x2y2"),
        helper.make_node("Concat", ["x1y1", "x2y2"], ["xyxy"], axis=2, name="xyxy"),
        helper.make_node("Max", ["xyxy", "lo"], ["pos"], name="clip_lo"),
        helper.make_node("Min", ["pos", "hi"], ["decoded"], name="clip_hi"),
    ]
    graph = helper.make_graph(
        nodes, "ssd300_decode",
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, ["batch", a, 4]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["batch", a, CLASSES])],
        [helper.make_tensor_value_info("decoded", TensorProto.FLOAT, ["batch", a, 4]),
         helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", a, CLASSES])], inits)
    return _model(graph)


def _model(graph):
    from onnx import helper

    model = helper.make_model(graph, producer_name="pytest-jetson example",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def write_graphs(folder: Path) -> Dict[str, Path]:
    """Both graphs as .onnx files in ``folder`` (what an engine factory opens)."""
    import onnx

    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, build in (("ssd300_preprocess", preprocess_graph), ("ssd300_decode", decode_graph)):
        path = folder / f"{name}.onnx"
        onnx.save(build(), str(path))
        paths[name] = path
    return paths


# --- the five forms -----------------------------------------------------------------------------


@contextmanager
def _no_stage(name: str):
    yield


class Pipeline:
    """One form of the pipeline over engines opened by the caller: ``pipeline(item)`` runs one
    call (``item.frames`` holds its batch) and returns the detections per frame.

    ``stage`` is ``perf.stage`` (each stage's time lands in the measurement); ``detector``,
    ``pre`` and ``decode`` are engines (``pre``/``decode`` only for the GPU forms)."""

    def __init__(self, form: str, detector: Callable, pre: Optional[Callable] = None,
                 decode: Optional[Callable] = None, stage: Callable = _no_stage) -> None:
        if form not in FORMS:
            raise ValueError(f"form {form!r}: use one of {', '.join(FORMS)}")
        if form in GPU_FORMS and (pre is None or decode is None):
            raise ValueError(f"form {form!r} runs pre-processing and decoding as engines: pass pre= and "
                             "decode= (engines of preprocess_graph() and decode_graph())")
        self.form = form
        self.detector = detector
        self.pre = pre
        self.decode = decode
        self.stage = stage
        # the simulated board computes no outputs: take the decode engine's from the scene
        self._decode_computes = getattr(decode, "backend", "simulated") != "simulated"

    def __call__(self, item: Item) -> List[Detections]:
        stage = self.stage
        gpu = self.form in GPU_FORMS
        with stage("frame_to_tensor"):
            x = np.ascontiguousarray(item.frames) if gpu else frame_to_tensor(item.frames)
        with stage("preprocess"):
            x = self.pre(x)["input"] if gpu else preprocess(x)
        with stage("detector"):
            self.detector(x)
        # random weights detect nothing: post-process what a trained SSD300 returns here
        boxes, scores = item.boxes, item.scores
        with stage("postprocess"):
            if self.form == "baseline":
                return postprocess_per_box(boxes, scores)
            if self.form == "cpu_post":
                return postprocess_vectorised(boxes, scores)
            out = self.decode({"boxes": boxes, "scores": scores})
            decoded, probs = (out["decoded"], out["probs"]) if self._decode_computes \
                else (item.decoded, item.probs)
            return [select_and_nms(d, p) for d, p in zip(decoded, probs)]
