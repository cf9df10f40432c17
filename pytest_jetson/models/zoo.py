"""The networks the research measured, built in code (nothing is downloaded).

``build(name)`` returns an ONNX model (opset 17, dynamic batch axis named ``batch``, seeded random
weights: the same bytes on every machine). ``path(name)`` caches it on disk for engine builders.
``stats(name)`` analyses a structure-only build (weights as dims only), so the simulator can ask
for vgg19's MACs and bytes without ever generating its 575 MB of weights.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple, Tuple, Union

from ..errors import ModelError
from ..fileio import lock as file_lock
from ..fileio import write_atomic
from . import pose_nets as pose
from . import torchvision_nets as tv
from . import yolo
from .builder import Net
from .graph import analyze as analyze_graph
from .reference import resolve

# Bump when a definition changes, so stale cache files are never reused.
ZOO_VERSION = 2

Resolution = Union[int, Tuple[int, int], None]


class _Entry(NamedTuple):
    build: Callable[[Net], None]
    resolution: int
    task: str
    multiple: int  # input sides must be a multiple of this
    minimum: int  # smallest side the architecture accepts


_ZOO: Dict[str, _Entry] = {
    "resnet18": _Entry(lambda n: tv.resnet(n, "basic", [2, 2, 2, 2]), 224, "classification", 1, 32),
    "resnet34": _Entry(lambda n: tv.resnet(n, "basic", [3, 4, 6, 3]), 224, "classification", 1, 32),
    "resnet50": _Entry(lambda n: tv.resnet(n, "bottleneck", [3, 4, 6, 3]), 224, "classification", 1, 32),
    "resnet101": _Entry(lambda n: tv.resnet(n, "bottleneck", [3, 4, 23, 3]), 224, "classification", 1, 32),
    "resnet152": _Entry(lambda n: tv.resnet(n, "bottleneck", [3, 8, 36, 3]), 224, "classification", 1, 32),
    "resnext50_32x4d": _Entry(lambda n: tv.resnet(n, "bottleneck", [3, 4, 6, 3], groups=32, width_per_group=4),
                              224, "classification", 1, 32),
    "vgg16": _Entry(lambda n: tv.vgg(n, tv.VGG_CFG["vgg16"]), 224, "classification", 1, 32),
    "vgg19": _Entry(lambda n: tv.vgg(n, tv.VGG_CFG["vgg19"]), 224, "classification", 1, 32),
    "alexnet": _Entry(tv.alexnet, 224, "classification", 1, 63),
    "squeezenet1_1": _Entry(tv.squeezenet1_1, 224, "classification", 1, 17),
    "densenet121": _Entry(tv.densenet121, 224, "classification", 1, 32),
    "shufflenet_v2_x1_0": _Entry(tv.shufflenet_v2, 224, "classification", 1, 32),
    "mobilenet_v2": _Entry(tv.mobilenet_v2, 224, "classification", 1, 32),
    "yolov8n": _Entry(yolo.yolov8n, 640, "detection", 32, 32),
    "yolov8s": _Entry(lambda n: yolo.yolov8(n, "s"), 640, "detection", 32, 32),
    "yolov8m": _Entry(lambda n: yolo.yolov8(n, "m"), 640, "detection", 32, 32),
    "yolov8l": _Entry(lambda n: yolo.yolov8(n, "l"), 640, "detection", 32, 32),
    "yolov8x": _Entry(lambda n: yolo.yolov8(n, "x"), 640, "detection", 32, 32),
    "yolo11n": _Entry(lambda n: yolo.yolo11(n, "n"), 640, "detection", 32, 32),
    "yolo11s": _Entry(lambda n: yolo.yolo11(n, "s"), 640, "detection", 32, 32),
    "yolo11m": _Entry(lambda n: yolo.yolo11(n, "m"), 640, "detection", 32, 32),
    "yolo11l": _Entry(lambda n: yolo.yolo11(n, "l"), 640, "detection", 32, 32),
    "yolo11x": _Entry(lambda n: yolo.yolo11(n, "x"), 640, "detection", 32, 32),
    "yolov5s": _Entry(yolo.yolov5s, 640, "detection", 32, 32),
    "yolov7": _Entry(yolo.yolov7, 640, "detection", 32, 32),
    "fcn_resnet18": _Entry(lambda n: tv.fcn(n, "resnet18"), 520, "segmentation", 1, 32),
    "fcn_resnet50": _Entry(lambda n: tv.fcn(n, "resnet50"), 520, "segmentation", 1, 32),
    # the extra blocks' unpadded 3x3 convolutions need a 5x5 map at conv10: 268 pixels at least
    "ssd300_vgg16": _Entry(tv.ssd300_vgg16, 300, "detection", 1, 268),
    # trt_pose's pre-trained human-pose models, at the sizes they were trained and timed at
    "trt_pose_resnet18_att": _Entry(pose.resnet18_baseline_att, 224, "pose", 1, 32),
    "trt_pose_densenet121_att": _Entry(pose.densenet121_baseline_att, 256, "pose", 1, 32),
}


def names() -> List[str]:
    """The zoo's model names in natural order (resnet18, resnet34, ..., resnet152)."""
    return sorted(_ZOO, key=lambda n: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", n)])


def _entry(name: str) -> _Entry:
    try:
        return _ZOO[name]
    except (KeyError, TypeError):
        close = difflib.get_close_matches(str(name), names(), n=3, cutoff=0.5)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ModelError("unknown zoo model {!r}.{} Choose one of {}, or pass the path of an .onnx "
                         "file".format(name, hint, ", ".join(names()))) from None


def default_resolution(name: str) -> Tuple[int, int]:
    """The input (height, width) the published figures use: 224, 640 (yolov8n), 520 (FCN), 300 (SSD300),
    256 (trt_pose's densenet121)."""
    r = _entry(name).resolution
    return (r, r)


def task(name: str) -> str:
    """"classification", "detection", "segmentation" or "pose"."""
    return _entry(name).task


def _resolution(name: str, resolution: Resolution) -> Tuple[int, int]:
    entry = _entry(name)
    if resolution is None:
        return default_resolution(name)
    try:
        hw = (int(resolution), int(resolution)) if not isinstance(resolution, (tuple, list)) \
            else (int(resolution[0]), int(resolution[1]))
        if len(resolution if isinstance(resolution, (tuple, list)) else (0, 0)) != 2:
            raise ValueError
    except (TypeError, ValueError):
        raise ModelError(f"{name}: resolution {resolution!r} is not an int or (height, width)") from None
    for side in hw:
        if side < entry.minimum or side % entry.multiple:
            rule = f"at least {entry.minimum}"
            if entry.multiple > 1:
                rule += f" and a multiple of {entry.multiple}"
            raise ModelError(f"{name}: input side {side} is not supported: use {rule} (default {entry.resolution})")
    return hw


def _build(name: str, hw: Tuple[int, int], structure: bool, batch: int | None = None):
    entry = _entry(name)
    net = Net(name, (3,) + hw, structure=structure, batch=batch)
    try:
        entry.build(net)
    except ValueError as exc:
        raise ModelError(f"{name} at {hw[0]}x{hw[1]}: {exc}; use a larger resolution") from None
    return net.model()


def build(name: str, resolution: Resolution = None, batch: int | None = None):
    """The model as an ``onnx.ModelProto`` with deterministic seeded weights.

    ``resolution``: an int (square) or ``(height, width)``; default :func:`default_resolution`.
    ``batch``: None for a dynamic batch axis named ``batch``, or a fixed batch size.
    """
    return _build(name, _resolution(name, resolution), structure=False, batch=batch)


def build_structure(name: str, resolution: Resolution = None, batch: int | None = None):
    """The same graph with weight initializers that carry dims but no bytes (for analysis only:
    it cannot run and does not pass onnx.checker's data checks)."""
    return _build(name, _resolution(name, resolution), structure=True, batch=batch)


@functools.lru_cache(maxsize=256)
def _stats(name: str, hw: Tuple[int, int], batch: int):
    stats = analyze_graph(build_structure(name, hw), batch=batch)
    stats.name = name
    return stats


def stats(name: str, resolution: Resolution = None, batch: int = 1):
    """:class:`~pytest_jetson.models.graph.GraphStats` of a zoo model, cached in-process.

    No weight bytes are generated: this is what the simulator calls for every prediction.
    """
    return _stats(name, _resolution(name, resolution), int(batch))


def analyze(name_or_path, batch: int = 1):
    """``graph.analyze`` that also takes a zoo name (a typo is an error naming the closest)."""
    if isinstance(name_or_path, str) and not resolve(name_or_path).is_file and not os.path.isfile(name_or_path):
        return analyze_graph(build_structure(name_or_path), batch=batch)  # _entry names a typo
    return analyze_graph(name_or_path, batch=batch)


def cache_dir() -> Path:
    """``$PYTEST_JETSON_CACHE``, else the user cache dir (XDG / Library/Caches / LOCALAPPDATA)."""
    env = os.environ.get("PYTEST_JETSON_CACHE")
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "pytest-jetson"


class ZooCacheWarning(UserWarning):
    """A cached zoo file was not what the zoo writes (replaced, corrupt, or unrecorded) and is
    being rebuilt."""


#: (file, size, mtime, inode) -> sha256 of cached files already verified in this process
_VERIFIED: Dict[Tuple[str, int, int, int], str] = {}


def _sidecar(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def _sha256(target: Path) -> str:
    h = hashlib.sha256()
    with open(target, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _check_cached(target: Path) -> str | None:
    """None when the cached file holds the bytes whose sha256 was recorded beside it when the
    zoo wrote it; else why not. A cache shared between jobs (a self-hosted runner's) can be
    written by another job: a replaced file is never measured as the zoo's model."""
    try:
        recorded = _sidecar(target).read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return "no sha256 was recorded when it was written"
    except (OSError, UnicodeDecodeError) as exc:
        return f"its recorded sha256 cannot be read ({exc})"
    try:
        st = target.stat()
        state = (str(target), st.st_size, st.st_mtime_ns, st.st_ino)
        if _VERIFIED.get(state) == recorded:
            return None
        actual = _sha256(target)
    except OSError as exc:
        return f"it cannot be read ({exc})"
    if actual != recorded:
        return "its content is not what the zoo wrote (its sha256 differs from the one recorded then)"
    _VERIFIED[state] = recorded
    return None


def path(name: str, batch: int | None = None, resolution: Resolution = None) -> Path:
    """The model's ONNX file in the cache, written once, verified on every use.

    Safe across processes (pytest-xdist workers, pools): the first caller builds under a file
    lock and publishes with an atomic rename, so no caller ever reads a half-written file. The
    file's sha256 is recorded beside it (``<file>.sha256``); a cached file that does not match it
    is rebuilt with a ``ZooCacheWarning``, never used.
    """
    hw = _resolution(name, resolution)
    if batch is not None and (not isinstance(batch, int) or batch < 1):
        raise ModelError(f"{name}: batch {batch!r} must be a positive int, or None for a dynamic batch")
    folder = cache_dir() / "models"
    kind = f"b{batch}" if batch else "dynamic"
    target = folder / f"{name}-{hw[0]}x{hw[1]}-{kind}-v{ZOO_VERSION}.onnx"
    if target.exists() and _check_cached(target) is None:
        return target
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelError(f"cannot create the model cache {folder} ({exc}): set PYTEST_JETSON_CACHE to a writable "
                         "directory") from None
    with file_lock(str(target) + ".lock"):  # never through a link
        if target.exists():
            why = _check_cached(target)
            if why is None:
                return target
            warnings.warn(f"the cached zoo model {str(target)!r} cannot be used: {why}; rebuilding it",
                          ZooCacheWarning, stacklevel=2)
        data = _build(name, hw, structure=False, batch=batch).SerializeToString()
        write_atomic(target, data)
        write_atomic(_sidecar(target), (hashlib.sha256(data).hexdigest() + "\n").encode("ascii"))
    return target
