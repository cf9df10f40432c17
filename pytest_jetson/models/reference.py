"""What a model argument names: a zoo model, an ONNX file or a prebuilt TensorRT plan.

Every place that takes a model (engines, pools, the command line, reports) reads it one way::

    ref = resolve("models/tiny.onnx")
    ref.kind, ref.name, ref.path, ref.display   # "onnx", "tiny", Path("models/tiny.onnx"), "models/tiny.onnx"

A PathLike, or a string that ends in ``.onnx`` or a plan suffix or holds a path separator, is a
file; anything else is a zoo name. Nothing here touches the file system: whether the file exists
is the opener's question, asked where the error can name the engine.
"""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

#: Serialized TensorRT engines, loaded as they are instead of built from ONNX.
PLAN_SUFFIXES = (".engine", ".plan", ".trt")

ZOO, ONNX, PLAN = "zoo", "onnx", "plan"

Model = Union[str, "os.PathLike[str]", "ModelRef"]


@dataclass(frozen=True)
class ModelRef:
    """``name``: the short name measurements carry (the zoo name, or the file's stem);
    ``path``: the file (None for a zoo model); ``kind``: ``"zoo"``, ``"onnx"`` or ``"plan"``;
    ``display``: the model as engines record it (the zoo name, or the path as given)."""

    name: str
    path: Optional[Path]
    kind: str
    display: str

    @property
    def is_file(self) -> bool:
        return self.kind != ZOO

    def __str__(self) -> str:
        return self.display


def _looks_like_file(text: str) -> bool:
    return (text.endswith(".onnx") or text.lower().endswith(PLAN_SUFFIXES)
            or os.sep in text or "/" in text)


def resolve(model: Any) -> ModelRef:
    """The reference ``model`` names (a ``ModelRef`` is returned as is)."""
    if isinstance(model, ModelRef):
        return model
    if not isinstance(model, os.PathLike) and not _looks_like_file(str(model)):
        name = str(model)
        return ModelRef(name=name, path=None, kind=ZOO, display=name)
    path = Path(model)
    kind = PLAN if path.suffix.lower() in PLAN_SUFFIXES else ONNX
    return ModelRef(name=path.stem, path=path, kind=kind, display=str(model))
