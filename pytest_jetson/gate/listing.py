"""Baseline files as the command line lists them (``pytest-jetson show`` and ``diff``)."""

import tempfile
from pathlib import Path
from typing import Any, Dict, List

from ..errors import BaselineError
from .file_format import read_file


def describe_file(path: Path) -> List[Dict[str, Any]]:
    """One row per entry of a baseline file (for ``pytest-jetson show``)."""
    doc = read_file(path)
    rows = []
    for key, entry in sorted(doc.get("entries", {}).items()):
        rows.append({
            "key": key,
            "recorded": entry.get("recorded", "") or "",
            "fingerprint": entry.get("fingerprint", {}) or {},
            "metrics": {k: v.get("value") for k, v in sorted(entry.get("metrics", {}).items())},
            "stages": {name: {k: v.get("value") for k, v in sorted((part.get("metrics") or {}).items())}
                       for name, part in (entry.get("stages") or {}).items()},
        })
    return rows


def entries_of_text(text: str, name: str = "<text>") -> Dict[str, Any]:
    """The entries of a baseline file's text (another revision's, for ``pytest-jetson diff``),
    validated like a file on disk."""
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "baseline.json"
        p.write_text(text, encoding="utf-8")
        try:
            return read_file(p).get("entries", {})
        except BaselineError as exc:
            raise BaselineError(str(exc).replace(str(p), name)) from None
