"""The baseline store: ``<root>/<device id>/<test module path>.json``, one file per test module.

Schema (version 2), written so that a reviewer reads it and a re-recording changes few lines: one
line per fingerprint, per metric and per sample, keys sorted, a trailing newline::

    {
      "schema": 2,
      "device": "orin-nano-8gb",
      "entries": {
        "tests/perf/test_x.py::test_a": {
          "fingerprint": {"accelerator": "gpu", "backend": "simulated", "batch": 8, ...},
          "measurement": "resnet50-int8-b8",
          "metrics": {
            "latency_mean": {"df": 29, "n": 653, "se_log": 0.00061, "value": 0.0076543},
            "memory": {"n": 52, "se_log": 0.0, "value": 431131240},
            ...
          },
          "recorded": "2026-11-22T21:45:00Z",
          "samples": {"latency": [0.0073, ...]}
        }
      }
    }

``value`` is the metric in base units, rounded to what the measurement resolves (its digits keep
the rounding below a fortieth of ``se_log``); ``se_log`` the within-run standard error of its log
(two significant digits; ``gate.stats``); ``df`` its degrees of freedom; ``n`` the samples behind
it; a baseline pooled from several recordings adds ``runs`` and ``between`` (the standard
deviation of log value between them). ``samples`` holds, per sample kind of ``metrics.METRICS``,
``SAMPLE_POINTS`` quantiles at (i + 0.5) / ``SAMPLE_POINTS``. Version 1 files (every field of
``MetricStats``, 200-point samples) are read and kept as they are until something in them
changes; a file that is rewritten is written as version 2.

**Recording** is staged: ``BaselineWriter.stage`` keeps entries in memory during the session and
``flush`` writes each file once at its end (one read-merge-write per file, under a lock beside the
file, so two runs with different ``TMPDIR`` on one checkout still exclude each other). The merge
(``merge_entry``) keeps a stored metric unless the new one differs *significantly* (the gate's own
error, run-to-run floor included, at a family-wise level over everything recorded), so re-recording
unchanged code writes zero bytes and a real change rewrites the lines of the metrics it moved.
``mode``: ``all`` (new entries, and metrics that changed), ``new`` (only entries not stored yet),
``force`` (every recorded entry rewritten as measured: after an intended change the noise test
would keep, or to reset a baseline).

**Files** are written atomically (a temporary file beside it, fsync, ``os.replace``). The lock file
(``.<name>.lock``) and a temporary file left by a killed writer are ignored by the ``.gitignore``
the store writes at its root when there is none, and the next writer removes leftover temporary
files under the lock. Anything that is not a readable baseline (not JSON, nested too deep, wrong
field types, a FIFO, a device, a directory where a file should be, a file where a directory should
be, a read-only directory when recording) raises ``BaselineError`` naming the file, the field and
the fix, and is never written over.
"""

import datetime as _dt
import json
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .. import fileio
from ..errors import BaselineError
from ..metrics import METRICS
from .compare import BaselineRef, env_differences
from .keys import PROJECT_MARKERS, baseline_key, baseline_path, key_test, project_root  # noqa: F401
from .stats import MetricStats, metric_stats, quantile_of, t_isf

SCHEMA = 2
READS = (1, 2)
LOCK_TIMEOUT = 120.0
SAMPLE_POINTS = 20
#: The chance that re-recording unchanged code rewrites anything, over all the metrics recorded.
REWRITE_ALPHA = 0.01
MAX_BYTES = 64 * 1024 * 1024
GITIGNORE = ("# written by pytest-jetson: lock files and interrupted writes are not baselines\n"
             ".*.lock\n.*.tmp\n")

FIX_UNREADABLE = ("restore it from version control (git checkout -- {path}), or delete it and "
                  "re-record with --jetson-update-baselines")


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- keys and places --------------------------------------------------------------------------------
def outside_project(root: Any, project: Any) -> Optional[str]:
    """A warning when the baselines directory ``root`` lies outside ``project`` (None otherwise):
    baselines belong to the code they gate, reviewed with it."""
    r, p = Path(root).resolve(), Path(project).resolve()
    try:
        r.relative_to(p)
        return None
    except ValueError:
        return (f"the baselines directory {r} lies outside the project {p}: baselines are reviewed "
                f"and versioned with the code they gate; keep them inside it (--jetson-baselines "
                f"baselines), or ignore this if a shared directory is intended")


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


# -- entries ----------------------------------------------------------------------------------------
def _digits(se_log: Optional[float]) -> int:
    """Significant digits that resolve a value with relative error ``se_log``: rounding stays
    below a fortieth of it (4 digits without an error, 7 at most)."""
    if se_log is None or not se_log > 0 or not math.isfinite(se_log):
        return 4
    return int(min(7, max(3, math.ceil(-math.log10(se_log)) + 2)))


def _sig(x: float, digits: int) -> Any:
    if x == 0 or not math.isfinite(x):
        return x
    y = float(f"{x:.{digits}g}")
    return int(y) if y.is_integer() and abs(y) < 2 ** 53 else y


def _metric_record(st: MetricStats) -> Dict[str, Any]:
    # a byte count with no spread (read once, or constant over the run): keep it exact
    exact = not st.se_log and float(st.value).is_integer()
    d: Dict[str, Any] = {"value": int(st.value) if exact else _sig(st.value, _digits(st.se_log)),
                         "n": int(st.n)}
    if st.se_log is not None:
        d["se_log"] = _sig(st.se_log, 2)
    if st.df is not None:
        d["df"] = int(round(st.df))
    if st.runs > 1:
        d["runs"] = int(st.runs)
        if st.between is not None:
            d["between"] = _sig(st.between, 2)
    return d


def _compact_sample(values: Sequence[float], resolution: Optional[float]) -> List[Any]:
    import numpy as np

    x = np.sort(np.asarray(values, dtype=float))
    x = x[np.isfinite(x)]
    if not x.size:
        return []
    probs = (np.arange(SAMPLE_POINTS) + 0.5) / SAMPLE_POINTS
    q = np.quantile(x, probs) if x.size > SAMPLE_POINTS else x
    digits = _digits(resolution)
    return [_sig(float(v), digits) for v in q]


def make_entry(measurement: Any, fp: Dict[str, Any], confidence: float = 0.99,
               recorded: Optional[str] = None) -> Dict[str, Any]:
    """The baseline entry of one measurement (every metric it has, not only the bounded ones)."""
    metrics: Dict[str, Any] = {}
    samples: Dict[str, List[Any]] = {}
    for name, row in METRICS.items():
        st = metric_stats(measurement, name, confidence, keep_sample=False)
        if st is None:
            continue
        metrics[name] = _metric_record(st)
        if row.sample and row.sample not in samples:
            raw = measurement.metric_samples(name)
            if raw:
                samples[row.sample] = _compact_sample(raw, st.se_log)
    return {
        "fingerprint": dict(fp),
        "measurement": getattr(measurement, "name", ""),
        "recorded": recorded or now_iso(),
        "metrics": metrics,
        "samples": samples,
    }


def pool_entries(entries: Sequence[Dict[str, Any]], recorded: Optional[str] = None) -> Dict[str, Any]:
    """One entry from several recordings of one test (another boot, another day): each metric's
    value is the geometric mean, ``se_log`` the mean's within-run error, ``runs`` how many and
    ``between`` their spread (the run-to-run part the gate then uses instead of the floor alone).
    The fingerprint, measurement and samples are the last recording's."""
    if not entries:
        raise ValueError("pool_entries needs at least one entry")
    last = entries[-1]
    out = {k: v for k, v in last.items() if k != "metrics"}
    out["recorded"] = recorded or now_iso()
    metrics: Dict[str, Any] = {}
    for name in last.get("metrics", {}):
        rows = [e["metrics"][name] for e in entries if name in e.get("metrics", {})]
        logs = [math.log(r["value"]) for r in rows if r.get("value", 0) > 0]
        if len(logs) != len(rows) or not rows:
            metrics[name] = dict(last["metrics"][name])
            continue
        k = len(logs)
        mean = sum(logs) / k
        ses = [r.get("se_log") for r in rows]
        st = MetricStats(value=math.exp(mean), n=sum(int(r.get("n", 1)) for r in rows), runs=k)
        if all(s is not None for s in ses):
            st.se_log = math.sqrt(sum(s * s for s in ses)) / k
            dfs = [r.get("df") for r in rows]
            st.df = float(sum(d for d in dfs if d is not None)) if all(d is not None for d in dfs) else None
        if k > 1:
            st.between = math.sqrt(sum((x - mean) ** 2 for x in logs) / (k - 1))
        metrics[name] = _metric_record(st)
    out["metrics"] = metrics
    return out


def entry_ref(entry: Dict[str, Any], file: str = "", key: str = "") -> BaselineRef:
    samples = entry.get("samples") or {}
    metrics = {}
    for name, d in (entry.get("metrics") or {}).items():
        kind = METRICS[name].sample if name in METRICS else None
        st = MetricStats(value=float(d["value"]), n=int(d.get("n", 1) or 1), se_log=_opt(d.get("se_log")),
                         df=_opt(d.get("df")), runs=int(d.get("runs", 1) or 1), between=_opt(d.get("between")))
        st.sample = [float(v) for v in samples.get(kind, [])] if kind else []
        if st.sample and name.startswith("latency_"):
            st.median = quantile_of(st.sample, 0.5)
        metrics[name] = st
    return BaselineRef(metrics=metrics, fingerprint=dict(entry.get("fingerprint") or {}),
                       recorded=str(entry.get("recorded") or ""), file=file, key=key)


def _opt(v: Any) -> Optional[float]:
    return None if v is None else float(v)


# -- the merge: what a recording changes ------------------------------------------------------------
def _metric_changed(name: str, old: Dict[str, Any], new: Dict[str, Any], alpha: float) -> bool:
    """Whether a recorded metric differs from the stored one by more than the gate's own error
    (within both runs and between runs), two-sided at ``alpha``."""
    from .sequential import Evidence

    a, b = float(old["value"]), float(new["value"])
    if a <= 0 or b <= 0:
        return a != b
    if name not in METRICS:
        return a != b
    sa, sb = _opt(old.get("se_log")), _opt(new.get("se_log"))
    if sa is None and sb is not None:
        # stored without an error (a version 1 peak): noise cannot be told from change, so it is
        # kept until a forced re-recording
        return False
    sb = sa if sb is None else sb
    ea = MetricStats(value=a, se_log=sa, df=_opt(old.get("df")) or _opt(new.get("df")),
                     runs=int(old.get("runs", 1) or 1), between=_opt(old.get("between")))
    eb = MetricStats(value=b, se_log=sb, df=_opt(new.get("df")) or _opt(old.get("df")))
    ev = Evidence.of(name, eb, ea)
    return abs(ev.d) > t_isf(alpha / 2, ev.df) * ev.se


def merge_entry(old: Optional[Dict[str, Any]], new: Dict[str, Any], mode: str = "all",
                alpha: float = REWRITE_ALPHA) -> Optional[Dict[str, Any]]:
    """The entry to store when ``new`` is recorded over ``old`` (None: leave the stored one as is).

    ``new`` mode: only when nothing is stored. ``force``: the new entry as measured. ``all``: a new
    entry; or, over a stored one with the same environment, the stored entry with each metric
    that changed significantly (``_metric_changed`` at ``alpha``) replaced, metrics measured for
    the first time added, metrics not measured this time kept, and the samples of the metrics
    that moved; a changed environment replaces the whole entry."""
    if mode not in ("all", "new", "force"):
        raise ValueError(f"mode {mode!r}: one of all, new, force")
    if old is None:
        return new
    if mode == "new":
        return None
    if mode == "force":
        return None if _same(old, new) else new
    if env_differences(new.get("fingerprint", {}), old.get("fingerprint", {})):
        return new
    om, nm = old.get("metrics") or {}, new.get("metrics") or {}
    changed = [k for k in nm if k not in om or _metric_changed(k, om[k], nm[k], alpha)]
    if not changed:
        return None
    out = json.loads(json.dumps(old))
    out["metrics"] = dict(om)
    for k in changed:
        out["metrics"][k] = nm[k]
    kinds = {METRICS[k].sample for k in changed if k in METRICS and METRICS[k].sample}
    samples = dict(out.get("samples") or {})
    for kind in kinds:
        if kind in (new.get("samples") or {}):
            samples[kind] = new["samples"][kind]
    out["samples"] = samples
    out["fingerprint"] = new.get("fingerprint", out.get("fingerprint"))
    out["measurement"] = new.get("measurement", out.get("measurement"))
    out["recorded"] = new.get("recorded", out.get("recorded"))
    return out


def _same(a: Dict[str, Any], b: Dict[str, Any]) -> bool:
    strip = lambda e: {k: v for k, v in e.items() if k != "recorded"}  # noqa: E731
    return strip(a) == strip(b)


def _rewrite_alpha(n_metrics: int, confidence: float) -> float:
    return min((1.0 - confidence) / 2.0, REWRITE_ALPHA / max(int(n_metrics), 1))


def needs_write(old: Optional[Dict[str, Any]], new: Dict[str, Any], mode: str = "all",
                confidence: float = 0.99, n_metrics: Optional[int] = None) -> bool:
    """Whether recording ``new`` over the stored ``old`` (None: no entry yet) changes anything.
    ``n_metrics``: how many metrics the session records in all (for the family-wise level; default
    this entry's)."""
    n = n_metrics if n_metrics is not None else len(new.get("metrics") or {})
    return merge_entry(old, new, mode, _rewrite_alpha(n, confidence)) is not None


# -- reading ----------------------------------------------------------------------------------------
def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _what_is(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _blocking_component(path: Path) -> Optional[Path]:
    """The first ancestor of ``path`` that exists and is not a directory (a file where a directory
    should be), or None."""
    for parent in reversed(path.parents):
        try:
            st = os.stat(parent)
        except OSError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            return parent
    return None


def _read_text(path: Path, fix: str) -> Optional[str]:
    """The file's text; None when it does not exist. Never blocks on a FIFO, never reads a device."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(str(path), flags)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        block = _blocking_component(path)
        raise BaselineError(
            f"baseline file {path} cannot be read: {block or 'a parent'} is a file where a directory "
            f"should be; move that file away (baselines are <root>/<device>/<module>.json)") from None
    except IsADirectoryError:
        raise BaselineError(f"baseline file {path} is a directory where a file should be; remove or "
                            f"rename the directory") from None
    except OSError as exc:
        raise BaselineError(f"baseline file {path} cannot be read ({exc.strerror or exc}); {fix}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = _what_is(st.st_mode)
            where = "a directory where a file should be" if what == "a directory" else what
            link = f" (a link to {os.path.realpath(path)})" if os.path.islink(path) else ""
            raise BaselineError(
                f"baseline file {path} is {where}{link}, not a baseline file; remove it (a baseline "
                f"is a JSON file written by --jetson-update-baselines)")
        if st.st_size > MAX_BYTES:
            raise BaselineError(f"baseline file {path} is {st.st_size} bytes, more than any baseline "
                                f"({MAX_BYTES} at most); {fix}")
        chunks = []
        total = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_BYTES:
                raise BaselineError(f"baseline file {path} is larger than any baseline; {fix}")
            chunks.append(chunk)
    except OSError as exc:
        raise BaselineError(f"baseline file {path} cannot be read ({exc.strerror or exc}); {fix}") from None
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BaselineError(f"baseline file {path} is not UTF-8 text ({exc}); {fix}") from None


def read_file(path: Path) -> Dict[str, Any]:
    """Read and validate one baseline file (version 1 or 2). Raises BaselineError naming the file,
    the field and the fix. A missing file reads as an empty baseline."""
    path = Path(path)
    fix = FIX_UNREADABLE.format(path=path)
    text = _read_text(path, fix)
    if text is None:
        return {"schema": SCHEMA, "device": None, "entries": {}}
    if not text.strip():
        raise BaselineError(f"baseline file {path} is empty (truncated?); {fix}")
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise BaselineError(f"baseline file {path} is nested too deeply to be a baseline (a baseline "
                            f"is 4 levels deep); {fix}") from None
    except ValueError as exc:
        if "JSON allows" in str(exc):
            raise BaselineError(
                f"baseline file {path} holds NaN or Infinity ({exc}), which no measurement "
                f"produces; {fix}") from None
        raise BaselineError(f"baseline file {path} is not valid JSON (truncated or edited?): {exc}; {fix}") from None
    if not isinstance(doc, dict) or "entries" not in doc or "schema" not in doc:
        raise BaselineError(
            f"baseline file {path} is not a pytest-jetson baseline (expected an object with "
            f"'schema' and 'entries'); {fix}")
    schema = doc.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise BaselineError(f"baseline file {path}: 'schema' must be an integer, got {schema!r}; {fix}")
    if schema > SCHEMA:
        raise BaselineError(
            f"baseline file {path} has schema {schema}, written by a newer pytest-jetson (this one "
            f"reads schemas {', '.join(map(str, READS))}); upgrade pytest-jetson (pip install -U pytest-jetson)")
    if schema not in READS:
        raise BaselineError(f"baseline file {path}: unknown schema {schema}; {fix}")
    entries = doc["entries"]
    if not isinstance(entries, dict):
        raise BaselineError(f"baseline file {path}: 'entries' must be an object; {fix}")
    for key, entry in entries.items():
        _validate_entry(path, key, entry, schema)
    if schema == 1:
        doc = {"schema": 1, "device": doc.get("device"),
               "entries": {k: _from_v1(e) for k, e in entries.items()}}
    return doc


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(float(x))


def _type(x: Any) -> str:
    return "null" if x is None else type(x).__name__


def _validate_entry(path: Path, key: str, entry: Any, schema: int) -> None:
    fix = f"fix the field or delete the entry and re-record it (--jetson-update-baselines); {FIX_UNREADABLE.format(path=path)}"
    where = f"baseline file {path}, entry {key!r}"

    def bad(field_: str, want: str, got: Any) -> BaselineError:
        return BaselineError(f"{where}: {field_} must be {want}, got {got!r} ({_type(got)}); {fix}")

    if not isinstance(entry, dict):
        raise BaselineError(f"{where}: expected an object with 'metrics', got {_type(entry)}; {fix}")
    if not isinstance(entry.get("metrics"), dict):
        raise bad("'metrics'", "an object of metric name to numbers", entry.get("metrics"))
    if "fingerprint" in entry and not isinstance(entry["fingerprint"], dict):
        raise bad("'fingerprint'", "an object (device, power_mode, precision, ...)", entry["fingerprint"])
    for name in ("measurement", "recorded"):
        if name in entry and entry[name] is not None and not isinstance(entry[name], str):
            raise bad(f"'{name}'", "a string", entry[name])
    for name, m in entry["metrics"].items():
        at = f"metric {name!r}: "
        if not isinstance(m, dict):
            raise bad(at + "the entry", "an object with 'value'", m)
        if not _number(m.get("value")):
            raise bad(at + "'value'", "a finite number", m.get("value"))
        n = m.get("n", 1)
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise bad(at + "'n'", "a whole number >= 1", n)
        for f in ("se_log", "df", "between", "mean", "median", "stdev", "confidence"):
            if f in m and m[f] is not None and (not _number(m[f]) or m[f] < 0):
                raise bad(at + f"'{f}'", "a number >= 0 or null", m[f])
        runs = m.get("runs", 1)
        if not isinstance(runs, int) or isinstance(runs, bool) or runs < 1:
            raise bad(at + "'runs'", "a whole number >= 1", runs)
        ci = m.get("ci")
        if ci is not None and not (isinstance(ci, list) and len(ci) == 2 and all(_number(v) for v in ci)):
            raise bad(at + "'ci'", "null or a list of two numbers [low, high]", ci)
        if schema == 1 and "sample" in m and m["sample"] is not None and not isinstance(m["sample"], str):
            raise bad(at + "'sample'", "null or the name of a sample in 'samples' ('latency', ...)", m["sample"])
    samples = entry.get("samples", {})
    if samples is not None and not isinstance(samples, dict):
        raise bad("'samples'", "an object of sample name to a list of numbers", samples)
    for kind, values in (samples or {}).items():
        if not isinstance(values, list) or not all(_number(v) for v in values):
            raise bad(f"sample {kind!r}", "a list of finite numbers", values)


def _from_v1(entry: Dict[str, Any]) -> Dict[str, Any]:
    """A version 1 entry in the version 2 shape (values unchanged; redundant fields dropped; the
    200-point samples kept until the entry is rewritten)."""
    metrics = {}
    for name, m in entry.get("metrics", {}).items():
        d: Dict[str, Any] = {"value": m["value"], "n": int(m.get("n", 1) or 1)}
        for f in ("se_log", "df", "runs", "between"):
            if m.get(f) is not None:
                d[f] = m[f]
        metrics[name] = d
    out = {k: v for k, v in entry.items() if k not in ("metrics",)}
    out["metrics"] = metrics
    return out


# -- writing ----------------------------------------------------------------------------------------
def lock_path(path: Path) -> Path:
    """The lock of a baseline file: beside it (``.<name>.lock``), so every run on one checkout
    takes the same lock whatever its temporary directory."""
    path = Path(path)
    return path.with_name(f".{path.name}.lock")


def lock(path: Path):
    from filelock import FileLock

    return FileLock(str(lock_path(path)), timeout=LOCK_TIMEOUT)


def _dump_value(x: Any) -> str:
    return json.dumps(x, sort_keys=True, allow_nan=False, ensure_ascii=False, separators=(", ", ": "))


def dumps(doc: Dict[str, Any]) -> str:
    """Any JSON document as the project writes its files: sorted keys, indent 2, a final newline."""
    return json.dumps(doc, sort_keys=True, indent=2, allow_nan=False, ensure_ascii=False) + "\n"


def dump_baseline(doc: Dict[str, Any]) -> str:
    """A baseline file's text: one line per fingerprint, metric and sample, sorted keys."""
    lines = ["{", f'  "device": {_dump_value(doc.get("device"))},', '  "entries": {']
    entries = doc.get("entries") or {}
    keys = sorted(entries)
    for i, key in enumerate(keys):
        e = entries[key]
        lines.append(f"    {_dump_value(key)}: {{")
        fields_ = sorted(e)
        for j, f in enumerate(fields_):
            comma = "," if j < len(fields_) - 1 else ""
            v = e[f]
            if f in ("metrics", "samples") and isinstance(v, dict) and v:
                lines.append(f'      "{f}": {{')
                names = sorted(v)
                for k, name in enumerate(names):
                    c2 = "," if k < len(names) - 1 else ""
                    lines.append(f"        {_dump_value(name)}: {_dump_value(v[name])}{c2}")
                lines.append(f"      }}{comma}")
            else:
                lines.append(f"      {_dump_value(f)}: {_dump_value(v)}{comma}")
        lines.append("    }" + ("," if i < len(keys) - 1 else ""))
    lines.append("  },")
    lines.append(f'  "schema": {SCHEMA}')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _write_error(path: Path, exc: OSError) -> BaselineError:
    if isinstance(exc, PermissionError) or getattr(exc, "errno", None) in (13, 30):
        return BaselineError(
            f"baseline file {path} cannot be written: {exc.strerror or exc} (a read-only baselines "
            f"directory?); make {path.parent} writable, or record into another directory with "
            f"--jetson-baselines DIR; the file is unchanged")
    if isinstance(exc, (NotADirectoryError, FileExistsError)):
        block = _blocking_component(path)
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
    remove = list(remove)
    n = n_metrics if n_metrics is not None else sum(len(e.get("metrics") or {}) for e in entries.values())
    alpha = _rewrite_alpha(n, confidence)
    block = _blocking_component(path)
    if block is not None:
        raise BaselineError(f"baseline file {path} cannot be written: {block} is a file where a "
                            f"directory should be; move that file away; nothing was written")
    # A look without the lock first (reads are safe: files are replaced atomically): when nothing
    # would change, nothing is written, locked or created.
    stored = read_file(path).get("entries", {})
    remove = [k for k in remove if k in stored]
    if not remove and all(merge_entry(stored.get(k), e, mode, alpha) is None for k, e in entries.items()):
        return [], []
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if root is not None:
            ensure_gitignore(Path(root))
        with lock(path):
            doc = read_file(path)
            stored = doc.setdefault("entries", {})
            written = []
            for key, entry in entries.items():
                merged = merge_entry(stored.get(key), entry, mode, alpha)
                if merged is not None:
                    stored[key] = merged
                    written.append(key)
            removed = [k for k in remove if k in stored]
            for k in removed:
                del stored[k]
            if not written and not removed:
                return written, removed
            _clean_leftovers(path)
            if device:
                doc["device"] = device
            if not stored and removed:
                os.unlink(path)  # a file that held only pruned entries goes away with them
                return written, removed
            write_baseline(path, doc)
            return written, removed
    except BaselineError:
        raise
    except OSError as exc:
        raise _write_error(path, exc) from None
    except Exception as exc:  # filelock's Timeout
        if type(exc).__name__ == "Timeout":
            raise BaselineError(f"baseline file {path}: another run held its lock ({lock_path(path)}) "
                                f"for {LOCK_TIMEOUT:.0f} s; is a run stuck? the file is unchanged") from None
        raise


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
        n_metrics = sum(len(e.get("metrics") or {}) for f in self._staged.values() for e in f.values())
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
                    if self.path_for(k) == Path(path) and key_test(k).split("::", 1)[0] in modules
                    and key_test(k) not in collected]
            if keep:
                out[Path(path)] = keep
        return out

    def prune(self, stale: Dict[Path, List[str]]) -> int:
        n = 0
        for path, keys in stale.items():
            _, removed = update_file(path, {}, remove=keys, device=self.device, root=self.root)
            n += len(removed)
        return n

    def check_location(self, project: Any) -> Optional[str]:
        """``outside_project`` for this store's root."""
        return outside_project(self.root, project)


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
        })
    return rows


def entries_of_text(text: str, name: str = "<text>") -> Dict[str, Any]:
    """The entries of a baseline file's text (another revision's, for ``pytest-jetson diff``),
    validated like a file on disk."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "baseline.json"
        p.write_text(text, encoding="utf-8")
        try:
            return read_file(p).get("entries", {})
        except BaselineError as exc:
            raise BaselineError(str(exc).replace(str(p), name)) from None
