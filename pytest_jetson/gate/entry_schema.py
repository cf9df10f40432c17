"""What a stored entry must look like: every field's type checked, so that a hand-edited or
damaged baseline is a ``BaselineError`` naming the file, the entry, the field and the fix."""

import math
from pathlib import Path
from typing import Any, Dict

from ..engines.layer_profile import NAME_HASH
from ..errors import BaselineError

FIX_UNREADABLE = ("restore it from version control (git checkout -- {path}), or delete it and "
                  "re-record with --jetson-update-baselines")


#: Larger than any figure a measurement gives in the plugin's units (bytes, seconds, watts, joules,
#: items/s): a value beyond it is damage, and would overflow the gate's arithmetic further on.
MAX_VALUE = 1e15
#: Upper limits of the statistics stored beside a value. A standard error of the log above 10
#: would be a spread of e**10; no run has more than a trillion iterations.
LIMITS = {"se_log": 10.0, "between": 10.0, "df": 1e12, "n": 1e12, "runs": 1e9, "confidence": 1.0}


def _number(x: Any) -> bool:
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return False
    try:
        return math.isfinite(float(x)) and abs(x) <= MAX_VALUE
    except OverflowError:
        return False


def _type(x: Any) -> str:
    return "null" if x is None else type(x).__name__


def validate_entry(path: Path, key: str, entry: Any, schema: int, report: bool = False) -> None:
    """Raise BaselineError naming the file, the entry, the field and the fix when ``entry`` is not
    a baseline entry of ``schema``."""
    bad = _Complaint(path, key, report)
    if not isinstance(entry, dict):
        raise BaselineError(f"{bad.where}: expected an object with 'metrics', got {_type(entry)}; {bad.fix}")
    _check_fields(entry, bad)
    for name, m in entry["metrics"].items():
        _check_metric(f"metric {name!r}: ", m, schema, bad)
    _check_samples(entry.get("samples", {}), bad)
    _check_stages(entry.get("stages"), schema, bad)
    _check_structure(entry.get("structure"), bad)


class _Complaint:
    """The error about one field of one entry: where, what it must be, what it is, the fix."""

    def __init__(self, path: Path, key: str, report: bool = False) -> None:
        self.where = f"{'report' if report else 'baseline file'} {path}, entry {key!r}"
        if report:  # a report's kept summary is checked as a baseline entry is
            self.fix = f"re-create the report with pytest --jetson-report-json {path}"
            return
        self.fix = (f"fix the field or delete the entry and re-record it (--jetson-update-baselines); "
                    f"{FIX_UNREADABLE.format(path=path)}")

    def __call__(self, field_: str, want: str, got: Any) -> BaselineError:
        return BaselineError(f"{self.where}: {field_} must be {want}, got {got!r} ({_type(got)}); {self.fix}")


def _check_fields(entry: Dict[str, Any], bad: _Complaint) -> None:
    if not isinstance(entry.get("metrics"), dict):
        raise bad("'metrics'", "an object of metric name to numbers", entry.get("metrics"))
    if "fingerprint" in entry and not isinstance(entry["fingerprint"], dict):
        raise bad("'fingerprint'", "an object (device, power_mode, precision, ...)", entry["fingerprint"])
    for name in ("measurement", "recorded"):
        if name in entry and entry[name] is not None and not isinstance(entry[name], str):
            raise bad(f"'{name}'", "a string", entry[name])


def _whole(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 1


def _check_metric(at: str, m: Any, schema: int, bad: _Complaint) -> None:
    if not isinstance(m, dict):
        raise bad(at + "the entry", "an object with 'value'", m)
    if not _number(m.get("value")):
        raise bad(at + "'value'", f"a finite number of magnitude at most {MAX_VALUE:g}", m.get("value"))
    for f in ("n", "runs"):
        if not _whole(m.get(f, 1)) or m.get(f, 1) > LIMITS[f]:
            raise bad(at + f"'{f}'", f"a whole number from 1 to {LIMITS[f]:g}", m.get(f, 1))
    for f in ("se_log", "df", "between", "mean", "median", "stdev", "confidence"):
        top = LIMITS.get(f, MAX_VALUE)
        if m.get(f) is not None and (not _number(m[f]) or not 0 <= m[f] <= top):
            raise bad(at + f"'{f}'", f"a number from 0 to {top:g}, or null", m[f])
    ci = m.get("ci")
    if ci is not None and not (isinstance(ci, list) and len(ci) == 2 and all(_number(v) for v in ci)):
        raise bad(at + "'ci'", "null or a list of two numbers [low, high]", ci)
    if schema == 1 and m.get("sample") is not None and not isinstance(m["sample"], str):
        raise bad(at + "'sample'", "null or the name of a sample in 'samples' ('latency', ...)", m["sample"])


def _check_samples(samples: Any, bad: _Complaint, at: str = "") -> None:
    if samples is not None and not isinstance(samples, dict):
        raise bad(at + "'samples'", "an object of sample name to a list of numbers", samples)
    for kind, values in (samples or {}).items():
        if not isinstance(values, list) or not all(_number(v) for v in values):
            raise bad(f"{at}sample {kind!r}", "a list of finite numbers", values)


def _check_stages(stages: Any, schema: int, bad: _Complaint) -> None:
    """``stages``: stage name -> {"metrics": {...}, "samples": {...}}, each as an entry's own."""
    if stages is None:
        return
    if not isinstance(stages, dict):
        raise bad("'stages'", "an object of stage name to its 'metrics' and 'samples'", stages)
    for name, part in stages.items():
        at = f"stage {name!r}: "
        if not name.strip():
            raise bad("a stage name", "a non-empty string", name)
        if not isinstance(part, dict) or not isinstance(part.get("metrics"), dict):
            got = part.get("metrics") if isinstance(part, dict) else part
            raise bad(at + "'metrics'", "an object of metric name to numbers", got)
        for metric, m in part["metrics"].items():
            _check_metric(f"{at}metric {metric!r}: ", m, schema, bad)
        _check_samples(part.get("samples", {}), bad, at)


def _count(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _check_structure(s: Any, bad: _Complaint) -> None:
    """``structure``: the engine's layers as ``engines.layer_profile.structure`` keeps them."""
    if s is None:
        return
    if not isinstance(s, dict):
        raise bad("'structure'", "an object with 'digest', 'layers', 'reformats' and 'rows'", s)
    if not isinstance(s.get("digest"), str):
        raise bad("structure 'digest'", "a string (the layer list's sha256 prefix)", s.get("digest"))
    for name in ("layers", "reformats"):
        if not _count(s.get(name, 0)):
            raise bad(f"structure '{name}'", "a whole number >= 0", s.get(name))
    precisions = s.get("precisions", {})
    if not isinstance(precisions, dict) or not all(_count(v) for v in precisions.values()):
        raise bad("structure 'precisions'", "an object of precision to a layer count", precisions)
    names = s.get("names", "")
    if not isinstance(names, str) or len(names) % NAME_HASH:
        raise bad("structure 'names'", f"a string of {NAME_HASH} hex digits per layer", names)
    rows = s.get("rows", [])
    if not isinstance(rows, list):
        raise bad("structure 'rows'", "a list of [name, type, precision, seconds]", rows)
    for row in rows:
        if not (isinstance(row, list) and len(row) == 4 and all(isinstance(v, str) for v in row[:3])
                and _number(row[3]) and row[3] >= 0):
            raise bad("a structure row", "[name, type, precision, seconds]", row)
