"""The baseline store: ``<root>/<device id>/<test module path>.json``, one file per test module.

Schema (version 1), written with sorted keys, indent 2 and a trailing newline so that review diffs
stay small::

    {
      "schema": 1,
      "device": "orin-nano-8gb",
      "entries": {
        "<node id>": {                      # "<node id>|<measurement>" when a test records several
          "fingerprint": {"device": ..., "power_mode": ..., "jetson_clocks": ..., "jetpack": ...,
                          "l4t": ..., "tensorrt": ..., "simulated": ..., "backend": ...,
                          "precision": ..., "batch": ..., "model": ..., "plugin": ...},
          "measurement": "<Measurement.name>",
          "recorded": "2026-11-22T21:45:00Z",
          "metrics": {"<metric>": {"value": ..., "n": ..., "mean": ..., "median": ..., "stdev": ...,
                                   "se_log": ..., "df": ..., "ci": [low, high], "confidence": ...,
                                   "sample": "latency" | "throughput" | "per_process_throughput" | null}},
          "samples": {"latency": [<= 200 quantile-preserving points], "throughput": [...]}
        }
      }
    }

``value`` is the metric (base units: items/s, s, bytes, W, J per item, C, %); ``se_log`` the standard
error of its log (see ``gate.stats``); a metric's ``sample`` names the compact sample it shares
(all latency metrics share one).

Writes are read-merge-write under a file lock (one lock per baseline file, kept in the temp
directory so the baselines directory stays clean) and atomic (a temporary file in the same
directory, fsync, ``os.replace``): several pytest-xdist workers updating one file lose nothing, and
a crash or Ctrl-C leaves the old file or the new one, never half of one. A file that cannot be read
(not JSON, truncated, NaN, a future schema) raises ``BaselineError`` naming the file and the fix and
is never overwritten.
"""

import datetime as _dt
import hashlib
import json
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .. import fileio
from ..errors import BaselineError
from ..metrics import METRICS
from .compare import BaselineRef, env_differences
from .keys import baseline_path
from .stats import MetricStats, metric_stats

SCHEMA = 1
LOCK_TIMEOUT = 120.0
_SIGNIFICANT = 6


FIX_UNREADABLE = ("restore it from version control (git checkout -- {path}), or delete it and "
                  "re-record with --jetson-update-baselines")


def _round(x: Any) -> Any:
    if isinstance(x, float):
        return float(f"{x:.{_SIGNIFICANT}g}")
    if isinstance(x, list):
        return [_round(v) for v in x]
    if isinstance(x, tuple):
        return [_round(v) for v in x]
    if isinstance(x, dict):
        return {k: _round(v) for k, v in x.items()}
    return x


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def fingerprint(measurement: Any, device_fingerprint: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """What a baseline must share with a run: the device's fingerprint, then the measurement's
    environment, then its own backend / precision / batch / model."""
    fp: Dict[str, Any] = dict(device_fingerprint or {})
    fp.update({k: v for k, v in dict(getattr(measurement, "environment", {}) or {}).items()
               if v is not None or k not in fp})
    for key in ("backend", "precision", "model"):
        value = getattr(measurement, key, "")
        if value:
            fp[key] = value
    batch = getattr(measurement, "batch", None)
    if batch is not None:
        fp["batch"] = int(batch)
    return fp


def make_entry(measurement: Any, fp: Dict[str, Any], confidence: float = 0.99,
               recorded: Optional[str] = None) -> Dict[str, Any]:
    """The baseline entry of one measurement (every metric it has, not only the bounded ones)."""
    metrics: Dict[str, Any] = {}
    samples: Dict[str, List[float]] = {}
    for name in METRICS:
        st = metric_stats(measurement, name, confidence)
        if st is None:
            continue
        d = st.to_dict()
        kind = METRICS[name].sample
        sample = d.pop("sample")
        d["sample"] = None
        if kind and sample:
            samples.setdefault(kind, sample)
            d["sample"] = kind
        value = d.pop("value")
        d = _round(d)
        # The value itself stays exact: bounds and reports quote it.
        d["value"] = value
        metrics[name] = d
    return {
        "fingerprint": dict(fp),
        "measurement": getattr(measurement, "name", ""),
        "recorded": recorded or now_iso(),
        "metrics": metrics,
        "samples": _round(samples),
    }


def entry_ref(entry: Dict[str, Any], file: str = "", key: str = "") -> BaselineRef:
    samples = entry.get("samples") or {}
    metrics = {}
    for name, d in (entry.get("metrics") or {}).items():
        d = dict(d)
        kind = d.pop("sample", None)
        d["sample"] = samples.get(kind, []) if isinstance(kind, str) else (kind or [])
        metrics[name] = MetricStats.from_dict(d)
    return BaselineRef(metrics=metrics, fingerprint=dict(entry.get("fingerprint") or {}),
                       recorded=str(entry.get("recorded") or ""), file=file, key=key)


# -- reading ------------------------------------------------------------------------------------
def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def read_file(path: Path) -> Dict[str, Any]:
    """Read and validate one baseline file. Raises BaselineError naming the file and the fix."""
    path = Path(path)
    fix = FIX_UNREADABLE.format(path=path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {"schema": SCHEMA, "device": None, "entries": {}}
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"baseline file {path} cannot be read ({exc}); {fix}") from None
    if not text.strip():
        raise BaselineError(f"baseline file {path} is empty (truncated?); {fix}")
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        if "JSON allows" in str(exc):
            raise BaselineError(
                f"baseline file {path} holds NaN or Infinity ({exc}), which no measurement "
                f"produces; {fix}"
            ) from None
        raise BaselineError(f"baseline file {path} is not valid JSON (truncated or edited?): {exc}; {fix}") from None
    if not isinstance(doc, dict) or "entries" not in doc or "schema" not in doc:
        raise BaselineError(
            f"baseline file {path} is not a pytest-jetson baseline (expected an object with "
            f"'schema' and 'entries'); {fix}"
        )
    schema = doc.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise BaselineError(f"baseline file {path}: 'schema' must be an integer, got {schema!r}; {fix}")
    if schema > SCHEMA:
        raise BaselineError(
            f"baseline file {path} has schema {schema}, written by a newer pytest-jetson (this one "
            f"reads schema {SCHEMA}); upgrade pytest-jetson (pip install -U pytest-jetson)"
        )
    if schema < 1:
        raise BaselineError(f"baseline file {path}: unknown schema {schema}; {fix}")
    entries = doc["entries"]
    if not isinstance(entries, dict):
        raise BaselineError(f"baseline file {path}: 'entries' must be an object; {fix}")
    for key, entry in entries.items():
        _validate_entry(path, key, entry, fix)
    return doc


def _validate_entry(path: Path, key: str, entry: Any, fix: str) -> None:
    where = f"baseline file {path}, entry {key!r}"
    if not isinstance(entry, dict) or not isinstance(entry.get("metrics"), dict):
        raise BaselineError(f"{where}: expected an object with 'metrics'; {fix}")
    for name, m in entry["metrics"].items():
        if not isinstance(m, dict) or not isinstance(m.get("value"), (int, float)) or isinstance(
            m.get("value"), bool
        ):
            raise BaselineError(f"{where}, metric {name!r}: 'value' must be a number; {fix}")
        if not math.isfinite(float(m["value"])):
            raise BaselineError(f"{where}, metric {name!r}: value is not finite; {fix}")
    if "samples" in entry and not isinstance(entry["samples"], dict):
        raise BaselineError(f"{where}: 'samples' must be an object; {fix}")


# -- writing ------------------------------------------------------------------------------------
def _lock_path(path: Path) -> str:
    digest = hashlib.sha1(str(Path(path).resolve()).encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"pytest-jetson-baseline-{digest}.lock")


def lock(path: Path):
    from filelock import FileLock

    return FileLock(_lock_path(path), timeout=LOCK_TIMEOUT)


def dumps(doc: Dict[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True, indent=2, allow_nan=False, ensure_ascii=False) + "\n"


def write_atomic(path: Path, doc: Dict[str, Any]) -> None:
    """Write ``doc`` to ``path`` atomically: the old file or the new one, never half of either."""
    fileio.write_atomic(path, dumps(doc))


def _changed(old: Dict[str, Any], new: Dict[str, Any], confidence: float) -> bool:
    """Whether a new entry differs from the stored one by more than noise (so re-recording an
    unchanged suite leaves the file as it is)."""
    if env_differences(new.get("fingerprint", {}), old.get("fingerprint", {})):
        return True
    om, nm = old.get("metrics", {}), new.get("metrics", {})
    if set(om) != set(nm):
        return True
    from .stats import t_ppf

    for name in nm:
        a, b = om[name], nm[name]
        va, vb = float(a["value"]), float(b["value"])
        if va <= 0 or vb <= 0:
            if va != vb:
                return True
            continue
        sa, sb = a.get("se_log"), b.get("se_log")
        diff = abs(math.log(vb / va))
        if sa is None or sb is None:
            if diff > 0.01:
                return True
            continue
        if diff > t_ppf((1 + confidence) / 2, None) * math.sqrt(sa ** 2 + sb ** 2):
            return True
    return False


def needs_write(old: Optional[Dict[str, Any]], new: Dict[str, Any], mode: str = "all",
                confidence: float = 0.99) -> bool:
    """Whether recording ``new`` over the stored ``old`` (None: no entry yet) writes it."""
    return old is None or (mode == "all" and _changed(old, new, confidence))


def update_file(path: Path, entries: Dict[str, Dict[str, Any]], mode: str = "all",
                device: Optional[str] = None, confidence: float = 0.99,
                remove: Iterable[str] = ()) -> Tuple[List[str], List[str]]:
    """Merge ``entries`` into the file under its lock: ``mode`` "all" writes new and changed
    entries, "new" only new ones; keys in ``remove`` are dropped. Returns (written, removed).
    Raises BaselineError (and writes nothing) when the stored file cannot be read."""
    path = Path(path)
    with lock(path):
        doc = read_file(path)
        stored = doc.setdefault("entries", {})
        written = []
        for key, entry in entries.items():
            if needs_write(stored.get(key), entry, mode, confidence):
                stored[key] = entry
                written.append(key)
        removed = [k for k in remove if k in stored]
        for k in removed:
            del stored[k]
        if not written and not removed and path.exists():
            return written, removed
        doc["schema"] = SCHEMA
        if device:
            doc["device"] = device
        if not stored and removed:
            # A file that held only pruned entries goes away with them.
            os.unlink(path)
            return written, removed
        write_atomic(path, doc)
        return written, removed


@dataclass
class BaselineStore:
    """Baselines of one device under ``root``. Reads are cached per file; errors too, so a file
    that could not be read is reported once per test and never written."""

    root: Path
    device: str

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self._cache: Dict[Path, Any] = {}

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

    def update(self, nodeid: str, entries: Dict[str, Dict[str, Any]], mode: str = "all",
               confidence: float = 0.99) -> List[str]:
        path = self.path_for(nodeid)
        if isinstance(self._cache.get(path), BaselineError):
            raise self._cache[path]
        try:
            written, _ = update_file(path, entries, mode=mode, device=self.device, confidence=confidence)
        except BaselineError as exc:
            self._cache[path] = exc
            raise
        self._cache.pop(path, None)
        return written

    def files(self) -> List[Path]:
        if not self.directory.is_dir():
            return []
        return sorted(self.directory.rglob("*.json"))

    def module_of(self, path: Path) -> str:
        rel = Path(path).relative_to(self.directory).as_posix()
        return rel[: -len(".json")] if rel.endswith(".json") else rel

    def unused(self, used_keys: Iterable[str], modules: Iterable[str]) -> Dict[Path, List[str]]:
        """Entries of the given modules' files that no key in ``used_keys`` matched."""
        used = set(used_keys)
        out: Dict[Path, List[str]] = {}
        for module in sorted(set(modules)):
            path = self.directory / (module + ".json")
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

    def prune(self, stale: Dict[Path, List[str]]) -> int:
        n = 0
        for path, keys in stale.items():
            _, removed = update_file(path, {}, remove=keys, device=self.device)
            n += len(removed)
        return n


def describe_file(path: Path) -> List[Dict[str, Any]]:
    """One row per entry of a baseline file (for ``pytest-jetson show``)."""
    doc = read_file(path)
    rows = []
    for key, entry in sorted(doc.get("entries", {}).items()):
        rows.append({
            "key": key,
            "recorded": entry.get("recorded", ""),
            "fingerprint": entry.get("fingerprint", {}),
            "metrics": {k: v.get("value") for k, v in sorted(entry.get("metrics", {}).items())},
        })
    return rows
