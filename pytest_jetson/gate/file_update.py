"""One baseline file's read-merge-write: atomic, under a lock beside the file (so two runs with
different ``TMPDIR`` on one checkout still exclude each other), writing nothing when nothing
changes. The lock file (``.<name>.lock``) and a temporary file left by a killed writer are
ignored by the ``.gitignore`` the store writes at its root when there is none, and the next writer
removes leftover temporary files under the lock."""

import os
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .. import fileio
from ..errors import BaselineError
from .file_format import dump_baseline, dumps, read_file
from .merge import _rewrite_alpha, merge_entry, metric_count
from .safe_read import blocking_component

LOCK_TIMEOUT = 120.0
GITIGNORE = ("# written by pytest-jetson: lock files and interrupted writes are not baselines\n"
             ".*.lock\n.*.tmp\n")


def lock_path(path: Path) -> Path:
    """The lock of a baseline file: beside it (``.<name>.lock``), so every run on one checkout
    takes the same lock whatever its temporary directory."""
    path = Path(path)
    return path.with_name(f".{path.name}.lock")


def lock(path: Path):
    return fileio.lock(lock_path(path), timeout=LOCK_TIMEOUT)  # never through a link



def _write_error(path: Path, exc: OSError) -> BaselineError:
    if isinstance(exc, PermissionError) or getattr(exc, "errno", None) in (13, 30):
        return BaselineError(
            f"baseline file {path} cannot be written: {exc.strerror or exc} (a read-only baselines "
            f"directory?); make {path.parent} writable, or record into another directory with "
            f"--jetson-baselines DIR; the file is unchanged")
    if isinstance(exc, (NotADirectoryError, FileExistsError)):
        block = blocking_component(path)
        return BaselineError(
            f"baseline file {path} cannot be written: {block or 'a parent'} is a file where a "
            f"directory should be; move that file away; nothing was written")
    return BaselineError(f"baseline file {path} cannot be written ({exc.strerror or exc}); the file is unchanged")


def write_atomic(path: Path, doc: Dict[str, Any]) -> None:
    """Write a JSON ``doc`` to ``path`` atomically: the old file or the new one, never half of either
    (reports use it too)."""
    fileio.write_atomic(path, dumps(doc))


def write_baseline(path: Path, doc: Dict[str, Any]) -> None:
    """Write a baseline file atomically, in the baseline layout."""
    fileio.write_atomic(path, dump_baseline(doc))


def _clean_leftovers(path: Path) -> None:
    """Temporary files of this baseline left by a killed writer (only ever written under the
    lock we hold, so any that exist are stale)."""
    try:
        for p in path.parent.glob(f".{path.name}.*.tmp"):
            try:
                p.unlink()
            except OSError:
                pass
    except OSError:
        pass


def ensure_gitignore(root: Path) -> None:
    """A ``.gitignore`` at the baselines root that keeps lock files and interrupted writes out of
    version control (written only when the root has none)."""
    gi = Path(root) / ".gitignore"
    if gi.exists() or gi.is_symlink():
        return
    try:
        fileio.write_atomic(gi, GITIGNORE)
    except OSError:
        pass  # a read-only root: the write that follows reports it


def update_file(path: Path, entries: Dict[str, Dict[str, Any]], mode: str = "all",
                device: Optional[str] = None, confidence: float = 0.99,
                remove: Iterable[str] = (), n_metrics: Optional[int] = None,
                root: Optional[Path] = None) -> Tuple[List[str], List[str]]:
    """Merge ``entries`` into the file under its lock (``merge_entry``); keys in ``remove`` are
    dropped. When nothing changes: one read, no lock, no write. Otherwise one read-merge-write
    under the lock. Returns (written, removed). Raises BaselineError, writing nothing, when the
    stored file cannot be read or the directory cannot be written."""
    path = Path(path)
    n = n_metrics if n_metrics is not None else sum(metric_count(e) for e in entries.values())
    change = _Change(entries, mode, _rewrite_alpha(n, confidence), list(remove), device)
    block = blocking_component(path)
    if block is not None:
        raise BaselineError(f"baseline file {path} cannot be written: {block} is a file where a "
                            f"directory should be; move that file away; nothing was written")
    # A look without the lock first (reads are safe: files are replaced atomically): when nothing
    # would change, nothing is written, locked or created.
    if change.changes_nothing(read_file(path).get("entries", {})):
        return [], []
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if root is not None:
            ensure_gitignore(Path(root))
        with lock(path):
            return change.apply(path)
    except BaselineError:
        raise
    except OSError as exc:
        raise _write_error(path, exc) from None
    except Exception as exc:  # filelock's Timeout
        if type(exc).__name__ == "Timeout":
            raise BaselineError(f"baseline file {path}: another run held its lock ({lock_path(path)}) "
                                f"for {LOCK_TIMEOUT:.0f} s; is a run stuck? the file is unchanged") from None
        raise


class _Change:
    """What one ``update_file`` call records into, and removes from, one file."""

    def __init__(self, entries: Dict[str, Dict[str, Any]], mode: str, alpha: float, remove: List[str],
                 device: Optional[str]) -> None:
        self.entries, self.mode, self.alpha, self.remove, self.device = entries, mode, alpha, remove, device

    def changes_nothing(self, stored: Dict[str, Any]) -> bool:
        self.remove = [k for k in self.remove if k in stored]
        return not self.remove and all(merge_entry(stored.get(k), e, self.mode, self.alpha) is None
                                       for k, e in self.entries.items())

    def apply(self, path: Path) -> Tuple[List[str], List[str]]:
        """The read-merge-write itself, under the file's lock."""
        doc = read_file(path)
        stored = doc.setdefault("entries", {})
        written = []
        for key, entry in self.entries.items():
            merged = merge_entry(stored.get(key), entry, self.mode, self.alpha)
            if merged is not None:
                stored[key] = merged
                written.append(key)
        removed = [k for k in self.remove if k in stored]
        for k in removed:
            del stored[k]
        if not written and not removed:
            return written, removed
        _clean_leftovers(path)
        if self.device:
            doc["device"] = self.device
        if not stored and removed:
            os.unlink(path)  # a file that held only pruned entries goes away with them
        else:
            write_baseline(path, doc)
        return written, removed
