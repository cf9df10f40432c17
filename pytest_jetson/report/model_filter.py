"""Which measurements a ``--model`` names: a zoo name or an ``.onnx`` path, spelled either way.

Reports and baselines store a zoo model by name and an ONNX file by its path relative to the
project root (pool workers by the file's stem), so ``--model models/tinynet.onnx``,
``--model ./models/tinynet.onnx``, an absolute path and ``--model tinynet`` all find it.
"""

import os
from pathlib import PurePath
from typing import Any, List, Optional, Sequence

from ..models.reference import resolve


def _norm(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))


def same_model(recorded: Optional[str], wanted: str) -> bool:
    if not recorded:
        return False
    if recorded == wanted:
        return True
    rec_path, want_path = resolve(recorded).is_file, resolve(wanted).is_file
    if rec_path and want_path:
        return _norm(recorded) == _norm(wanted) or PurePath(recorded).name == PurePath(wanted).name
    if rec_path or want_path:  # a file's stem stands for it where only the label was kept
        return PurePath(recorded).stem == PurePath(wanted).stem
    return False


def models_of(measurement: Any) -> List[str]:
    """Every model a ``Measurement`` ran: its own, its environment's, its workers' (none for None)."""
    if measurement is None:
        return []
    found = [measurement.model, (measurement.environment or {}).get("model")]
    found += [w.model for w in getattr(measurement, "workers", None) or []]
    return [m for m in found if m]


def matches(measurement: Any, wanted: Sequence[str]) -> bool:
    """Whether the measurement ran any of ``wanted`` (empty: every measurement matches)."""
    if not wanted:
        return True
    return any(same_model(m, w) for m in models_of(measurement) for w in wanted)


def check_known(wanted: Sequence[str], seen: Sequence[str], where: str) -> Optional[str]:
    """Why a ``--model`` matched nothing (None when each matched something): lists what there is."""
    for w in wanted:
        if not any(same_model(s, w) for s in seen):
            known = ", ".join(sorted(set(seen))) or "none"
            return f"--model {w}: no measurement of it in {where}; the models there: {known}"
    return None
