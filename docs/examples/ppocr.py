"""The application's own PP-OCR code around the two networks: pages to read, the detection
network's input, text-line crops from its probability map, and CTC decoding of the recognition
network's output. (numpy, scipy and Pillow; the networks come from the rapidocr_onnxruntime wheel.)"""

import os

import numpy as np
from PIL import Image, ImageDraw, ImageFont
from scipy import ndimage

MODELS = os.environ.get("PPOCR_MODELS", "models")
DET = os.path.join(MODELS, "ch_PP-OCRv4_det_infer.onnx")
REC = os.path.join(MODELS, "ch_PP-OCRv4_rec_infer.onnx")
SIDE = 736  # the detector's input side (a multiple of 32)
LINES = 6  # crops per recognition batch
WORDS = ["INVOICE 2026", "Jetson Nano", "TOTAL 42.50", "pytest-jetson", "SSD300 VGG16", "frame 1280x720"]


def page(seed: int) -> np.ndarray:
    """A 736x736 RGB page with six lines of text at seeded offsets."""
    img = Image.new("RGB", (SIDE, SIDE), "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=28)
    rng = np.random.default_rng(seed)
    for i, word in enumerate(WORDS):
        draw.text((40 + int(rng.integers(0, 200)), 60 + 100 * i), word, fill="black", font=font)
    return np.asarray(img)


def normalise(img: np.ndarray) -> np.ndarray:
    """RGB uint8 (H, W, 3) -> the detector's (1, 3, H, W) float input, in [-1, 1]."""
    return ((img / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)[None].astype(np.float32)


def crop_lines(img: np.ndarray, prob: np.ndarray, count: int = LINES) -> np.ndarray:
    """Text lines where the probability map passes 0.3, each cropped with a margin, resized to
    48 pixels high and padded to 320 wide: (count, 3, 48, 320), blank crops after the last line."""
    labels, _ = ndimage.label(ndimage.binary_dilation(prob > 0.3, iterations=2))
    out = np.zeros((count, 3, 48, 320), np.float32)
    boxes = [s for s in ndimage.find_objects(labels) if s[0].stop - s[0].start >= 4]
    for i, (ys, xs) in enumerate(sorted(boxes, key=lambda s: s[0].start)[:count]):
        m = (ys.stop - ys.start) // 3
        crop = Image.fromarray(img[max(ys.start - m, 0):ys.stop + m, max(xs.start - m, 0):xs.stop + m])
        width = min(320, int(48 * crop.width / crop.height))
        line = np.asarray(crop.resize((width, 48)), np.float32)
        out[i, :, :, :width] = ((line / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)
    return out


def charset(rec_path: str = REC) -> list:
    """The recognition network's characters (in its ONNX metadata), with CTC's blank first."""
    import onnx

    meta = {p.key: p.value for p in onnx.load(rec_path, load_external_data=False).metadata_props}
    return ["<blank>"] + meta["character"].splitlines() + [" "]


def read_text(probs: np.ndarray, chars: list) -> list:
    """Greedy CTC decoding: the best character per step, repeats merged, blanks dropped."""
    texts = []
    for seq in probs.argmax(-1):
        keep = [c for i, c in enumerate(seq) if c and (i == 0 or c != seq[i - 1])]
        texts.append("".join(chars[c] for c in keep))
    return texts
