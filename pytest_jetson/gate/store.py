"""The baselines of one device: looked up per test, staged during a session and written once
per file at its end, and the housekeeping of entries no test uses any more."""

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional

from ..errors import BaselineError
from .checks import BaselineRef
from .entries import entry_ref
from .file_format import read_file
from .file_update import update_file
from .keys import baseline_path, key_test
from .merge import metric_count


def outside_project(root: Any, project: Any, device: Optional[str] = None) -> Optional[str]:
    """A warning when the baselines directory ``root``, or its ``device`` directory (a link to
    another place), lies outside ``project`` (None otherwise): baselines belong to the code they
    gate, reviewed with it."""
    p = Path(project).resolve()
    for d in (Path(root),) + ((Path(root) / device,) if device else ()):
        r = d.resolve()
        try:
            r.relative_to(p)
            continue
        except ValueError:
            pass
        if d.is_symlink():
            shown = d
            for base in (Path(project), p):
                try:
                    shown = d.relative_to(base)
                    break
                except ValueError:
                    pass
            return (f"the baselines directory {shown.as_posix()} is a link to {r}, outside the project {p}: baselines "
                    f"written there are not reviewed and versioned with the code they gate; replace the "
                    f"link with a directory, or ignore this if a shared directory is intended")
        return (f"the baselines directory {r} lies outside the project {p}: baselines are reviewed "
                f"and versioned with the code they gate; keep them inside it (--jetson-baselines "
                f"baselines), or ignore this if a shared directory is intended")
    return None


@dataclass
class Flushed:
    """What ``BaselineWriter.flush`` did: keys written and removed per file, and the files it could
    not write (their message; those files are unchanged)."""

    written: Dict[Path, List[str]] = field(default_factory=dict)
    removed: Dict[Path, List[str]] = field(default_factory=dict)
    errors: Dict[Path, str] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.written.values())


@dataclass
class BaselineStore:
    """Baselines of one device under ``root``. Reads are cached per file; errors too, so a file
    that could not be read is reported once per test and never written."""

    root: Path
    device: str

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self._cache: Dict[Path, Any] = {}
        self._staged: Dict[Path, Dict[str, Dict[str, Any]]] = {}

    @property
    def directory(self) -> Path:
        return self.root / self.device

    def path_for(self, nodeid: str) -> Path:
        return baseline_path(self.directory, nodeid)

    def display(self, path: Path) -> str:
        try:
            return os.path.relpath(path)
        except ValueError:
            return str(path)

    def load(self, path: Path) -> Dict[str, Any]:
        hit = self._cache.get(path)
        if isinstance(hit, BaselineError):
            raise hit
        if hit is None:
            try:
                hit = read_file(path)
            except BaselineError as exc:
                self._cache[path] = exc
                raise
            self._cache[path] = hit
        return hit

    def lookup(self, key: str, nodeid: Optional[str] = None) -> Optional[BaselineRef]:
        path = self.path_for(nodeid or key)
        entry = self.load(path).get("entries", {}).get(key)
        if entry is None:
            return None
        return entry_ref(entry, file=self.display(path), key=key)

    # -- recording: staged during the session, written once per file at its end ----------------
    def stage(self, nodeid: str, key: str, entry: Dict[str, Any]) -> None:
        """Keep ``entry`` for ``key`` (of test ``nodeid``) until ``flush``. Staging the same key
        again replaces it."""
        self._staged.setdefault(self.path_for(nodeid), {})[key] = entry

    @property
    def staged(self) -> Dict[Path, Dict[str, Dict[str, Any]]]:
        return self._staged

    def flush(self, mode: str = "all", confidence: float = 0.99,
              remove: Optional[Dict[Path, List[str]]] = None) -> Flushed:
        """Write everything staged (and remove ``remove``): one read-merge-write per file under its
        lock, the rewrite test at a family-wise level over every staged metric. A file that cannot
        be read or written is reported in ``errors`` and left as it was; the others are written."""
        out = Flushed()
        n_metrics = sum(metric_count(e) for f in self._staged.values() for e in f.values())
        remove = remove or {}
        for path in sorted(set(self._staged) | set(remove)):
            if isinstance(self._cache.get(path), BaselineError):
                out.errors[path] = str(self._cache[path])
                continue
            try:
                written, removed = update_file(path, self._staged.get(path, {}), mode=mode, device=self.device,
                                               confidence=confidence, remove=remove.get(path, ()),
                                               n_metrics=n_metrics, root=self.root)
            except BaselineError as exc:
                out.errors[path] = str(exc)
                continue
            if written:
                out.written[path] = written
            if removed:
                out.removed[path] = removed
            self._cache.pop(path, None)
        self._staged = {}
        return out

    def update(self, nodeid: str, entries: Dict[str, Dict[str, Any]], mode: str = "all",
               confidence: float = 0.99) -> List[str]:
        """Write one test's entries now (one read-merge-write of its file). Prefer ``stage`` and
        ``flush``: a session that records N tests of one module this way rewrites the file N times."""
        path = self.path_for(nodeid)
        if isinstance(self._cache.get(path), BaselineError):
            raise self._cache[path]
        try:
            written, _ = update_file(path, entries, mode=mode, device=self.device, confidence=confidence,
                                     root=self.root)
        except BaselineError as exc:
            self._cache[path] = exc
            raise
        self._cache.pop(path, None)
        return written

    # -- housekeeping -------------------------------------------------------------------------------
    def files(self) -> List[Path]:
        if not self.directory.is_dir():
            return []
        return sorted(p for p in self.directory.rglob("*.json") if p.is_file())

    def module_of(self, path: Path) -> str:
        rel = Path(path).relative_to(self.directory).as_posix()
        return rel[: -len(".json")] if rel.endswith(".json") else rel

    def unused(self, used_keys: Iterable[str], modules: Iterable[str]) -> Dict[Path, List[str]]:
        """Entries of the given modules' files that no key in ``used_keys`` matched."""
        used = set(used_keys)
        out: Dict[Path, List[str]] = {}
        for module in sorted(set(modules)):
            path = self.path_for(module)
            if not path.exists():
                continue
            try:
                entries = read_file(path).get("entries", {})
            except BaselineError:
                continue
            stale = sorted(k for k in entries if k not in used)
            if stale:
                out[path] = stale
        return out

    def prunable(self, stale: Dict[Path, List[str]], collected: Iterable[str]) -> Dict[Path, List[str]]:
        """The entries of ``stale`` that pruning may delete: those it can attribute to this
        project's tests. An entry qualifies when its file is the file of its own key (so the key
        was written by this layout), its module was collected in this session (so its tests are
        known) and its test was not. Entries of modules that were not collected (deleted, moved,
        or keyed under another rootdir) are never deleted: they are reported for a person to
        remove."""
        collected = set(collected)
        modules = {n.split("::", 1)[0] for n in collected}
        out: Dict[Path, List[str]] = {}
        for path, keys in stale.items():
            keep = [k for k in keys
                    if self.path_for(k) == Path(path) and key_test(k, collected).split("::", 1)[0] in modules
                    and key_test(k, collected) not in collected]
            if keep:
                out[Path(path)] = keep
        return out

    def prune(self, stale: Dict[Path, List[str]]) -> int:
        n = 0
        for path, keys in stale.items():
            _, removed = update_file(path, {}, remove=keys, device=self.device, root=self.root)
            n += len(removed)
        return n
