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

Samples (``--jetson-report-samples``): by default each measurement (and each of its stages and
pool workers) keeps its samples as the baselines do (``gate.entries``): ``"samples_kept":
"summary"``, its per-iteration arrays (``latencies``, ``windows``, ``device_latencies``, the
telemetry series, the simulated engine's prediction) emptied, its per-layer ``profile`` kept only
for a test that failed, errored or is inconclusive (what ``pytest-jetson explain`` is for; ``all``
keeps every test's), and the baseline entry's ``"metrics"`` (per metric: value, n,
se_log, df) and ``"samples"`` (per sample kind, ``SAMPLE_POINTS`` quantiles) added beside
``"iterations"`` and ``"summary"``: a few KB per test whatever it ran for. ``all`` keeps every
sample (``"samples_kept": "all"``); a report path ending in ``.gz`` is then written gzip-compressed,
and ``load`` reads either. The file is compact JSON (no indentation).

Values are in base units (items/s, s, bytes, W, J per item, C, %); ``change`` is
current / baseline - 1, ``worse`` the same signed so that positive is worse. ``reason`` is one of
``gate.verdict.REASONS``; ``message`` is the rendered text, for people only. Paths (models,
baseline files) are relative to the project root.
"""

import datetime as _dt
import gzip
import json
import math
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from .. import __version__, fileio
from ..errors import BaselineError
from ..gate.entries import entry_ref, make_entry
from ..gate.entry_schema import validate_entry
from ..gate.safe_read import JSONProblem, loads
from ..gate.session import TestResult
from ..metrics import METRICS
from ..options import REPORTED_FIELDS
from ..run.measurement import Spread
from .counts import TestCounts, from_results
from .render import message
from .report_text import MAX_REPORT_BYTES as MAX_REPORT_BYTES  # where readers of reports find it
from .report_text import Source, Walk

KIND = "pytest-jetson-report"
SCHEMA = 1

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


#: the per-iteration arrays a summarised measurement leaves out (``Measurement.to_dict`` fields)
_ARRAYS = {"latencies": [], "windows": [], "device_latencies": None}


#: what a summarised measurement's ``extra`` leaves out: the telemetry series (per reading) and the
#: simulated engine's prediction (the calibrated model's inputs, the same for every run of a model)
_EXTRA_LEFT_OUT = ("telemetry_series", "prediction")
#: the outcomes whose tests keep their per-layer profile in a summarised report (``explain`` reads it)
_EXPLAINED = ("fail", "error", "inconclusive")


def summarise(d: Dict[str, Any], m: Any, confidence: float, keep_profile: bool = False) -> Dict[str, Any]:
    """A measurement's dict (``Measurement.to_dict``) with its samples summarised as a baseline
    entry summarises them, its workers' and stages' too: bounded whatever the run's length."""
    entry = make_entry(m, {}, confidence, recorded="")
    out = dict(d, **_ARRAYS, samples_kept="summary", iterations=len(getattr(m, "latencies", ()) or ()),
               metrics=entry["metrics"], samples=entry["samples"])
    if not keep_profile:
        out.pop("profile", None)
    out["extra"] = {k: v for k, v in (d.get("extra") or {}).items() if k not in _EXTRA_LEFT_OUT}
    stages = getattr(m, "stages", None) or {}
    if stages and isinstance(d.get("stages"), dict):
        out["stages"] = {k: summarise(d["stages"][k], stages[k], confidence, keep_profile) for k in d["stages"] if k in stages}
    workers = getattr(m, "workers", None) or []
    if workers and isinstance(d.get("workers"), list):
        out["workers"] = [summarise(wd, w, confidence, keep_profile) for wd, w in zip(d["workers"], workers)]
    return out


def test_json(result: Any, samples: str = "summary", confidence: float = 0.99) -> Dict[str, Any]:
    """One test of the report (``TestResult.to_json`` with the verdicts' messages); ``samples``:
    summary (the measurements summarised, ``summarise``) or all."""
    text = getattr(result, "kept_text", None)
    if text is not None:  # summarised already (``kept``): as it was then
        return json.loads(text)
    d = result.to_json(samples == "all")  # summarised: the samples are never turned into lists
    for vd, v in zip(d["verdicts"], result.verdicts):
        vd["message"] = message(v)
    if samples == "all":
        for md in d["measurements"]:
            md["samples_kept"] = "all"
    else:
        keep = result.outcome in _EXPLAINED
        d["measurements"] = [summarise(md, m, confidence, keep) for md, m in zip(d["measurements"], result.measurements)]
    return d


def build(results: Sequence[Any], settings: Any, device: Any, counts: Optional[TestCounts] = None,
          target: Optional[Dict[str, Any]] = None, provenance: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The report; ``provenance``: its "commit" and "machine" blocks."""
    samples = getattr(settings, "report_samples", None) or "summary"
    confidence = float(getattr(settings, "confidence", 0.99) or 0.99)
    tests = [r if isinstance(r, dict) else _Text(r.kept_text) if getattr(r, "kept_text", None) is not None
             else test_json(r, samples, confidence) for r in results]
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


class _Text(str):
    """A test already written as compact JSON (``kept``): spliced into the report as it is."""


def compact(x: Any) -> str:
    """``x`` as the report writes it: compact JSON, keys sorted, no NaN."""
    return json.dumps(_clean(x), sort_keys=True, separators=(",", ":"), allow_nan=False)


def kept(result: Any, samples: str = "summary", confidence: float = 0.99) -> TestResult:
    """A judged result as a session keeps it to its end: its report test (``test_json``) held
    once, as compact JSON text, and read back (``result_of``) for the terminal, the Markdown
    report, the baselines and the history store. A session of thousands of tests then holds a
    few KB per test, not every sample, telemetry reading and layer of each."""
    if getattr(result, "kept_text", None) is not None:
        return result
    return from_text(kept_text(result, samples, confidence))


def kept_text(result: Any, samples: str = "summary", confidence: float = 0.99) -> str:
    """The text ``kept`` holds: what an xdist worker sends for a result."""
    text = getattr(result, "kept_text", None)
    return text if text is not None else compact(test_json(result, samples, confidence))


def from_text(text: str) -> TestResult:
    """A result ``kept`` wrote (in this session, or on an xdist worker)."""
    result = result_of(json.loads(text), check=False)
    result.kept_text = text  # type: ignore[attr-defined]
    return result


def write(path: Union[str, Path], report: Dict[str, Any]) -> Path:
    """Compact JSON (an indented report of a thousand tests is mostly spaces); gzip-compressed
    when ``path`` ends in ``.gz``. Tests already kept as text are written as they are."""
    path = Path(path)
    text = "{" + ",".join(json.dumps(str(k)) + ":" + _value_text(k, report[k]) for k in sorted(report)) + "}\n"
    if path.suffix == ".gz":
        fileio.write_atomic(path, gzip.compress(text.encode("utf-8"), mtime=0))
    else:
        fileio.write_atomic(path, text)
    return path


def _value_text(key: str, value: Any) -> str:
    if key == "tests" and isinstance(value, list):
        return "[" + ",".join(t if isinstance(t, _Text) else compact(t) for t in value) + "]"
    return compact(value)


def _unreadable(path: Path, fix: str, exc: BaseException) -> BaselineError:
    if isinstance(exc, RecursionError):
        return BaselineError(f"report {path} is nested too deeply to be a report; {fix}")
    why = str(exc)
    if why.startswith("not valid JSON: "):
        return BaselineError(f"report {path} is not valid JSON ({why[16:]}); {fix}")
    return BaselineError(f"report {path} is not a report as pytest-jetson writes it ({why}); {fix}")


def load(path: Union[str, Path]) -> Dict[str, Any]:
    """Read a report; BaselineError naming the file and the fix when it is not one. A FIFO, a
    device or a link to one is refused unread; numbers are read as strictly as baselines."""
    path = Path(path)
    source = Source(path)
    text = source.check(keep=True)
    try:
        doc = loads(text)
    except (RecursionError, JSONProblem) as exc:
        raise _unreadable(path, source.fix, exc) from None
    _check_head(path, doc)
    return doc


def _check_head(path: Path, doc: Any) -> None:
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise BaselineError(f"{path} is not a pytest-jetson report (no \"kind\": \"{KIND}\"); "
                            f"write one with pytest --jetson-report-json {path}")
    if not isinstance(doc.get("schema"), int) or doc["schema"] > SCHEMA:
        raise BaselineError(f"report {path} has schema {doc.get('schema')!r}; this pytest-jetson reads "
                            f"schema {SCHEMA}: upgrade pytest-jetson")
    if not isinstance(doc.get("tests"), list):
        raise BaselineError(f"report {path}: 'tests' must be a list; re-create the report")


def stream(path: Union[str, Path]) -> Tuple[Dict[str, Any], Iterator[TestResult]]:
    """A report's header and its tests as gate results, read one at a time (``result_of``);
    every error ``load`` and ``results`` give, raised where it is met. A report whose "tests" come
    before its "kind" (not as pytest-jetson writes them) is read whole."""
    head, tests = passes(path)
    return head, tests()


def passes(path: Union[str, Path]) -> Tuple[Dict[str, Any], Callable[[], Iterator[TestResult]]]:
    """As ``stream``, for a reader that goes through the tests more than once: the file is checked
    whole once (``report_text.Source``), then read again, a piece at a time, by each call of the
    function returned, which walks its tests afresh; a file changed meanwhile is a BaselineError
    naming it, never a second pass over other tests."""
    path = Path(path)
    source = Source(path)
    source.check()
    walk = _walk(source)
    if walk is None:
        text = "".join(source.pieces())
        try:
            doc = loads(text)
        except (RecursionError, JSONProblem) as exc:
            raise _unreadable(path, source.fix, exc) from None
        _check_head(path, doc)
        listed = doc.pop("tests")
        return doc, lambda: _results(iter(listed), path)
    head = walk.head
    first: List[Optional[Walk]] = [walk]

    def each() -> Iterator[Any]:
        current = first.pop() if first else _walk(source)
        if current is None:  # the first walk found the tests after the header
            raise source.changed()
        try:
            yield from current.tests()
        except (RecursionError, JSONProblem) as exc:
            source.same()
            raise _unreadable(path, source.fix, exc) from None

    return head, lambda: _results(each(), path)


def _walk(source: Source) -> Optional[Walk]:
    """A walk through the report standing at its first test, its header read and checked (None:
    the report must be read whole, its tests before its kind)."""
    walk = Walk(source.pieces())
    try:
        walk.members(first=True)
    except (RecursionError, JSONProblem) as exc:
        source.same()
        raise _unreadable(source.path, source.fix, exc) from None
    if not walk.at_tests or "kind" not in walk.head or "schema" not in walk.head:
        return None
    _check_head(source.path, dict(walk.head, tests=[]))
    return walk


class Figures:
    """What a comparison reads of a summarised measurement (``_Summarised``) once its test is
    gone: its kept statistics (``ref``) and its stages', a few hundred bytes of text each."""

    __slots__ = ("ref_text", "stages")

    def __init__(self, ref_text: str, stages: Dict[str, "Figures"]) -> None:
        self.ref_text = ref_text
        self.stages = stages

    @property
    def ref(self) -> Any:
        """The statistics as a baseline reference (``gate.entries.entry_ref``)."""
        return entry_ref(json.loads(self.ref_text))

    @property
    def kept_metrics(self) -> Any:
        """The metrics ``ref`` gives statistics of, without computing them."""
        return set(json.loads(self.ref_text).get("metrics") or {})


def figures_of(m: Any) -> Any:
    """``m``'s ``Figures`` where the report summarised it and its stages; else ``m`` itself (a
    report with every sample: its statistics come from them)."""
    if not isinstance(m, _Summarised):
        return m
    stages = {}
    for name, stage in (getattr(m, "stages", None) or {}).items():
        if not isinstance(stage, _Summarised):
            return m
        stages[name] = figures_of(stage)
    return Figures(m.ref_text, stages)


class _Summarised:
    """A measurement read from a summarised report: its metrics are the values the report kept
    (``"summary"``), its samples the kept quantiles, and ``ref`` the statistics as a baseline
    reference (``gate.entries.entry_ref``: value, n, se_log, df per metric) for comparisons."""

    kept: Dict[str, Any]
    kept_iterations: int
    #: the report's "metrics" and "samples" of this measurement as JSON text, read into ``ref``
    #: each time it is asked for and not kept: a session or a comparison holds thousands of
    #: these and reads each once or twice
    ref_text: str

    # the same reading of the same text as a comparison's Figures (a slotted base class would
    # change the layout the class swap in _as_summarised needs)
    ref = Figures.ref
    kept_metrics = Figures.kept_metrics

    @property
    def iterations(self) -> int:
        return self.kept_iterations

    def metric(self, name: str) -> Optional[float]:
        if name not in METRICS:
            raise KeyError(name)
        value = self.kept.get(name)
        if isinstance(value, dict):  # a pool's per-process spread: its minimum, as metric() gives
            value = value.get("min")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def metric_samples(self, name: str) -> Optional[List[float]]:
        st = self.ref.metrics.get(name)
        return list(st.sample) if st is not None and st.sample and METRICS[name].samples else None


def _summarised_class(base: type) -> type:

    def reader(name: str) -> property:
        def get(self: Any) -> Any:
            value = self.kept.get(name)
            if isinstance(value, dict):
                return Spread.from_dict(value)
            return self.metric(name)
        return property(get)

    props = {n: reader(n) for n in METRICS if isinstance(getattr(base, n, None), property)}
    return type("Summarised" + base.__name__, (_Summarised, base), props)


_CLASSES: Dict[type, type] = {}


def _as_summarised(m: Any, d: Dict[str, Any], path: Any = "", check: bool = True) -> Any:
    """``m`` (read by ``Measurement.from_dict`` from the summarised ``d``) answering from what the
    report kept, checked as a baseline entry is (finite, bounded figures); its stages and workers
    too."""
    if d.get("samples_kept") != "summary" or not isinstance(d.get("summary"), dict):
        return m
    figures = {"metrics": d.get("metrics") or {}, "samples": d.get("samples") or {}}
    if check:
        validate_entry(path, str(d.get("key") or d.get("name") or "?"), figures, 2, report=True)
    base = type(m)
    cls = _CLASSES.get(base) or _CLASSES.setdefault(base, _summarised_class(base))
    m.__class__ = cls
    m.kept = dict(d["summary"])
    m.kept_iterations = int(d.get("iterations") or 0)
    m.ref_text = json.dumps(figures, separators=(",", ":"))
    for name, stage in (getattr(m, "stages", None) or {}).items():
        if isinstance((d.get("stages") or {}).get(name), dict):
            _as_summarised(stage, d["stages"][name], path, check)
    for w, wd in zip(getattr(m, "workers", None) or [], d.get("workers") or []):
        if isinstance(wd, dict):
            _as_summarised(w, wd, path, check)
    return m


def result_of(t: Dict[str, Any], path: Any = "", check: bool = True) -> TestResult:
    """One test of a report (``test_json``) as a gate result; ``check``: its kept figures
    checked as a baseline entry's (not for a test this session summarised itself)."""
    result = TestResult.from_json(t)
    for m, md in zip(result.measurements, t.get("measurements") or []):
        _as_summarised(m, md, path, check)
    return result


def results(doc: Dict[str, Any], path: Union[str, Path] = "") -> List[TestResult]:
    """A report's tests as gate results (``Measurement`` and ``Verdict`` objects; a summarised
    measurement answers its metrics from what the report kept, ``_Summarised``); a test the
    report holds in another shape is a BaselineError naming the file and the test."""
    return list(_results(iter(doc.get("tests", [])), path))


def _results(tests: Iterator[Any], path: Union[str, Path]) -> Iterator[TestResult]:
    for t in tests:
        try:
            yield result_of(t, path)
        except BaselineError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            nodeid = t.get("nodeid", "?") if isinstance(t, dict) else "?"
            raise BaselineError(f"report {path}: test {nodeid} cannot be read ({type(exc).__name__}: {exc}); "
                                f"re-create the report with pytest --jetson-report-json") from None
