"""The recorded board trees under tests/data/boards/ (see its README): names, expectations, and
copies a test may change."""

import json
import shutil
from pathlib import Path
from typing import Any, Dict, List, Tuple

BOARDS = Path(__file__).parent / "data" / "boards"
TEGRASTATS = Path(__file__).parent / "data" / "tegrastats"


def names() -> List[str]:
    return sorted(p.name for p in BOARDS.iterdir() if (p / "tree.json").is_file())


def meta(name: str) -> Dict[str, Any]:
    """What a reader of the tree should find (tree.json, written by build.py from the sources)."""
    return json.loads((BOARDS / name / "tree.json").read_text())


def tree(name: str) -> Path:
    return BOARDS / name


def copy(name: str, dest: Path) -> Path:
    """A copy of the tree to change (links kept as links)."""
    shutil.copytree(BOARDS / name, dest, symlinks=True)
    return dest


def tegrastats_line(name: str) -> str:
    ref = meta(name)["tegrastats"]
    lines = [x for x in (TEGRASTATS / ref["file"]).read_text().splitlines() if x.strip() and not x.startswith("#")]
    return lines[ref["line"]]


def write(root: Path, rel: str, data: Any) -> None:
    path = root / rel
    if path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else (str(data) + "\n").encode())


ALL: List[str] = names()
PAIRS: List[Tuple[str, Dict[str, Any]]] = [(n, meta(n)) for n in ALL]
