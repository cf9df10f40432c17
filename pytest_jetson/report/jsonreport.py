"""``--jetson-report-json PATH``: everything the session measured and decided, as one JSON file.

Consumed by ``pytest-jetson compare OLD.json NEW.json`` and ``pytest-jetson plot``. Schema 1::

    {
      "kind": "pytest-jetson-report",
      "schema": 1,
      "created": "2026-11-22T21:45:00Z",          # UTC
      "plugin": "0.1.0",
      "device": {<the session's fingerprint>: device, power_mode, jetson_clocks, jetpack, l4t,
                 tensorrt, simulated, plugin; on a host: cpu, cores, os; backend_version},
      "target": {"id": <baseline directory: orin-nano-8gb, host-<cpu>-onnxruntime, ...>,
                 "title": <where the numbers come from, in words>, "backend": <backend name>},
      "commit": {"id", "branch", "dirty", "time", "author_time", "project", "source"},
                                                   # the code under test (provenance.commit_info);
                                                   # every field null: no commit
      "machine": {"hostname", "serial"},           # where it ran; serial: the board's, where readable
      "settings": {"confidence", "inconclusive", "missing_baseline", "allow_env_mismatch",
                   "update_baselines", "baselines", "backend", "seed", "duration", "telemetry"},
      "summary": {"tests": N,                     # perf tests pytest reported (skipped included)
                  "failed": n, "passed": n, "skipped": n, "xfailed": n, "xpassed": n,
                  "error": n,                     # counted as pytest counts them
                  "bounds": {"error": n, "fail": n, "inconclusive": n, "skip": n,
                             "recorded": n, "pass": n}},  # every bound by its verdict
      "tests": [
        {
          "nodeid": "tests/perf/test_x.py::test_a",
          "outcome": "pass" | "fail" | "error" | "inconclusive" | "skip" | "recorded" | "none",
          "measurements": [<Measurement.to_dict()> + {"key": <baseline key>}],
                                                   # samples, telemetry summary, environment, summary,
                                                   # "profile": the per-layer profile, where any
          "keys": [<baseline key per measurement>],
          "fingerprint": {<device fingerprint + backend, precision, batch, model>},
          "bounds": [{"metric", "text", "kind", "comparator", "value", "unit", "tolerance", "where",
                      "stage", "devices", "backends"}],   # stage: null for the whole measurement
          "verdicts": [<gate.verdict.Verdict.to_dict()>: {"test", "measurement", "metric",
                        "outcome", "reason", "kind", "bound", "comparator", "threshold",
                        "tolerance", "value", "ci", "confidence", "baseline", "change", "worse",
                        "worse_ci", "p_value", "basis", "env_diffs", "env_ignored", "workload_diffs",
                        "baseline_file", "baseline_recorded", "baseline_env", "detail",
                        "previous", "stage", "outputs": <an output check's numbers (kind "outputs",
                        gate.outputs.OutputCheck.to_dict), else {}>} + {"message": <report.render.message>}],
                                                   # stage: the bound's stage, null for the whole
          "baseline_file": "baselines/<device>/<module>.json",
          "staged": {<key>: <baseline entry recorded by --jetson-update-baselines>},
          "notes": [<text>],
          "error": null | "<why the test errored>",
          "where": [{"measurement": <key>, "now", "baseline", "change", "relative",
                     "stages": [{"stage", "now", "baseline", "change", "relative", "share"}],
                     "layers": <gate.attribution.LayerWhere.to_dict(): the per-layer profile
                                against the baseline's structure, present when both exist>}]
                                                   # mean time per call (s) of each stage the
                                                   # baseline has too, the stage that explains most
                                                   # of the whole's change first (share: of it);
                                                   # layers: time per inference (s), the layer
                                                   # that moved most first
        }
      ]
    }

Values are in base units (items/s, s, bytes, W, J per item, C, %); ``change`` is
current / baseline - 1, ``worse`` the same signed so that positive is worse. ``reason`` is one of
``gate.verdict.REASONS``; ``message`` is the rendered text, for people only. Paths (models,
baseline files) are relative to the project root.
"""

import datetime as _dt
import json
import math
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from .. import __version__, fileio
from ..errors import BaselineError
from ..gate.safe_read import JSONProblem, loads, read_text
from ..gate.session import TestResult
from ..options import REPORTED_FIELDS
from .counts import TestCounts, from_results
from .render import message

KIND = "pytest-jetson-report"
SCHEMA = 1
#: Reports keep every sample only on request; even then a suite's report stays well under this.
MAX_REPORT_BYTES = 1 << 30

SETTINGS_FIELDS = REPORTED_FIELDS


def _clean(x: Any) -> Any:
    """JSON has no NaN: non-finite floats become null."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def _test(result: Any) -> Dict[str, Any]:
    d = result.to_json()
    for vd, v in zip(d["verdicts"], result.verdicts):
        vd["message"] = message(v)
    return d


def build(results: Sequence[Any], settings: Any, device: Any, counts: Optional[TestCounts] = None,
          target: Optional[Dict[str, Any]] = None, provenance: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The report; ``provenance``: its "commit" and "machine" blocks."""
    tests = [_test(r) for r in results]
    counts = counts if counts is not None else from_results(results)
    fp = device.fingerprint() if hasattr(device, "fingerprint") else dict(device or {})
    return _clean({
        "kind": KIND,
        "schema": SCHEMA,
        "created": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "plugin": __version__,
        "device": fp,
        "target": dict(target or {"id": fp.get("device"), "title": "", "backend": getattr(settings, "backend", None)}),
        "settings": {k: getattr(settings, k, None) for k in SETTINGS_FIELDS},
        "summary": counts.to_dict(),
        "tests": tests,
        **dict(provenance or {}),
    })


def write(path: Union[str, Path], report: Dict[str, Any]) -> Path:
    path = Path(path)
    fileio.write_atomic(path, json.dumps(report, sort_keys=True, indent=2, allow_nan=False) + "\n")
    return path


def load(path: Union[str, Path]) -> Dict[str, Any]:
    """Read a report; BaselineError naming the file and the fix when it is not one. A FIFO, a
    device or a link to one is refused unread; numbers are read as strictly as baselines."""
    path = Path(path)
    if path.is_dir():
        raise BaselineError(f"report {path} is a directory; pass the JSON file written by "
                            f"--jetson-report-json (e.g. {path / 'report.json'})")
    fix = f"re-create it with pytest --jetson-report-json {path}"
    text = read_text(path, fix, what="report", kind="the JSON file written by --jetson-report-json",
                     max_bytes=MAX_REPORT_BYTES)
    if text is None:
        raise BaselineError(f"report {path} does not exist; write one with pytest --jetson-report-json {path}")
    try:
        doc = loads(text)
    except RecursionError:
        raise BaselineError(f"report {path} is nested too deeply to be a report; {fix}") from None
    except JSONProblem as exc:
        why = str(exc)
        if why.startswith("not valid JSON: "):
            raise BaselineError(f"report {path} is not valid JSON ({why[16:]}); {fix}") from None
        raise BaselineError(f"report {path} is not a report as pytest-jetson writes it ({why}); {fix}") from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise BaselineError(f"{path} is not a pytest-jetson report (no \"kind\": \"{KIND}\"); "
                            f"write one with pytest --jetson-report-json {path}")
    if not isinstance(doc.get("schema"), int) or doc["schema"] > SCHEMA:
        raise BaselineError(f"report {path} has schema {doc.get('schema')!r}; this pytest-jetson reads "
                            f"schema {SCHEMA}: upgrade pytest-jetson")
    if not isinstance(doc.get("tests"), list):
        raise BaselineError(f"report {path}: 'tests' must be a list; re-create the report")
    return doc


def results(doc: Dict[str, Any], path: Union[str, Path] = "") -> List[TestResult]:
    """A report's tests as gate results (``Measurement`` and ``Verdict`` objects); a test the
    report holds in another shape is a BaselineError naming the file and the test."""
    out = []
    for t in doc.get("tests", []):
        try:
            out.append(TestResult.from_json(t))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            nodeid = t.get("nodeid", "?") if isinstance(t, dict) else "?"
            raise BaselineError(f"report {path}: test {nodeid} cannot be read ({type(exc).__name__}: {exc}); "
                                f"re-create the report with pytest --jetson-report-json") from None
    return out
