"""The baseline file format: ``<root>/<device id>/<test module path>.json``, one file per module.

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

(the fields of an entry: ``gate.entries``). Version 1 files (every field of ``MetricStats``,
200-point samples) are read and kept as they are until something in them changes; a file that is
rewritten is written as version 2.
"""

import json
from pathlib import Path
from typing import Any, Dict, List

from ..errors import BaselineError
from .entry_schema import FIX_UNREADABLE, validate_entry
from .safe_read import JSONProblem, loads, read_text

SCHEMA = 2
READS = (1, 2)


def read_file(path: Path) -> Dict[str, Any]:
    """Read and validate one baseline file (version 1 or 2). Raises BaselineError naming the file,
    the field and the fix. A missing file reads as an empty baseline."""
    path = Path(path)
    fix = FIX_UNREADABLE.format(path=path)
    text = read_text(path, fix)
    if text is None:
        return {"schema": SCHEMA, "device": None, "entries": {}}
    if not text.strip():
        raise BaselineError(f"baseline file {path} is empty (truncated?); {fix}")
    try:
        doc = loads(text)
    except RecursionError:
        raise BaselineError(f"baseline file {path} is nested too deeply to be a baseline (a baseline "
                            f"is 4 levels deep); {fix}") from None
    except JSONProblem as exc:
        if "JSON allows" in str(exc):
            raise BaselineError(
                f"baseline file {path} holds NaN or Infinity ({exc}), which no measurement "
                f"produces; {fix}") from None
        if str(exc).startswith("not valid JSON"):
            raise BaselineError(f"baseline file {path} is not valid JSON (truncated or edited?): "
                                f"{str(exc)[len('not valid JSON: '):]}; {fix}") from None
        raise BaselineError(f"baseline file {path}: {exc}; {fix}") from None
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
        validate_entry(path, key, entry, schema)
    if schema == 1:
        doc = {"schema": 1, "device": doc.get("device"),
               "entries": {k: _from_v1(e) for k, e in entries.items()}}
    return doc



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
            elif f == "stages" and isinstance(v, dict) and v:
                lines += _dump_stages(v, comma)
            elif f == "structure" and isinstance(v, dict) and v:
                lines += _dump_structure(v, comma)
            else:
                lines.append(f"      {_dump_value(f)}: {_dump_value(v)}{comma}")
        lines.append("    }" + ("," if i < len(keys) - 1 else ""))
    lines.append("  },")
    lines.append(f'  "schema": {SCHEMA}')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dump_structure(structure: Dict[str, Any], comma: str) -> List[str]:
    """An entry's engine ``structure``: one line per field and one per kept layer, so that a
    changed layer is a changed line in review."""
    lines = ['      "structure": {']
    keys = sorted(structure)
    for j, f in enumerate(keys):
        c2 = "," if j < len(keys) - 1 else ""
        v = structure[f]
        if f == "rows" and isinstance(v, list) and v:
            lines.append('        "rows": [')
            lines += [f"          {_dump_value(r)}{',' if n < len(v) - 1 else ''}" for n, r in enumerate(v)]
            lines.append(f"        ]{c2}")
        else:
            lines.append(f"        {_dump_value(f)}: {_dump_value(v)}{c2}")
    return lines + [f"      }}{comma}"]


def _dump_stages(stages: Dict[str, Any], comma: str) -> List[str]:
    """An entry's ``stages``: per stage, one line per metric and per sample, as the entry's own."""
    lines = ['      "stages": {']
    names = sorted(stages)
    for i, name in enumerate(names):
        part = stages[name]
        lines.append(f"        {_dump_value(name)}: {{")
        keys = sorted(part)
        for j, f in enumerate(keys):
            c2 = "," if j < len(keys) - 1 else ""
            rows = part[f]
            if isinstance(rows, dict) and rows:
                lines.append(f"          {_dump_value(f)}: {{")
                last = len(rows) - 1
                lines += [f"            {_dump_value(k)}: {_dump_value(rows[k])}{',' if n < last else ''}"
                          for n, k in enumerate(sorted(rows))]
                lines.append(f"          }}{c2}")
            else:
                lines.append(f"          {_dump_value(f)}: {_dump_value(rows)}{c2}")
        lines.append("        }" + ("," if i < len(names) - 1 else ""))
    return lines + [f"      }}{comma}"]
