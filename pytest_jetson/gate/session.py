"""One test session's gate: checks each test's bounds on what it recorded, stages the baselines
to record, and at the end of the session writes them, one read-merge-write per file. The plugin
calls it; scripts can too (no pytest here).

Several measurements in one test: every bound is checked against every measurement (a test
usually records one; with several, each must satisfy the bounds), and each measurement has its own
baseline entry (``gate.keys.entry_keys``).

Everything here is data: ``TestResult`` (the verdicts of one test, JSON-friendly so it travels from
pytest-xdist workers to the controller) and ``BaselineSummary`` (what the end of the session wrote,
found unused and pruned). ``report.render`` words both.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

from ..errors import BaselineError
from . import verdict as _verdict
from .baseline import BaselineStore, fingerprint, make_entry, needs_write, read_file, update_file
from .bounds import Bound
from .compare import COMPARED_KEYS, Verdict, cannot_check, check
from .keys import entry_keys, key_test, module_of, relative_models


def nothing_recorded_message(test: str) -> str:
    return (f"{test} has perf bounds but recorded no measurement: call perf.measure(...) or "
            f"perf.record(...) in the test (it needs the perf fixture)")


@dataclass
class TestResult:
    """What the gate concluded about one test."""

    __test__ = False  # not a pytest test class, despite the name

    nodeid: str
    measurements: List[Dict[str, Any]] = field(default_factory=list)
    keys: List[str] = field(default_factory=list)
    fingerprint: Dict[str, Any] = field(default_factory=dict)
    bounds: List[Dict[str, Any]] = field(default_factory=list)
    verdicts: List[Verdict] = field(default_factory=list)
    baseline_file: Optional[str] = None
    #: baseline entries this run records, by key; written at the end of the session
    staged: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    error: Optional[str] = None

    @property
    def outcome(self) -> str:
        if self.error:
            return "error"
        return _verdict.worst(v.outcome for v in self.verdicts) or "none"

    def failing(self, inconclusive: str = "pass") -> List[Verdict]:
        return [v for v in self.verdicts if _verdict.fails(v.outcome, inconclusive)]

    def to_dict(self) -> Dict[str, Any]:
        return {
            "nodeid": self.nodeid,
            "outcome": self.outcome,
            "measurements": self.measurements,
            "keys": self.keys,
            "fingerprint": self.fingerprint,
            "bounds": self.bounds,
            "verdicts": [v.to_dict() for v in self.verdicts],
            "baseline_file": self.baseline_file,
            "staged": self.staged,
            "notes": self.notes,
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "TestResult":
        return cls(
            nodeid=d["nodeid"], measurements=list(d.get("measurements", [])),
            keys=list(d.get("keys", [])), fingerprint=dict(d.get("fingerprint", {})),
            bounds=list(d.get("bounds", [])),
            verdicts=[Verdict.from_dict(v) for v in d.get("verdicts", [])],
            baseline_file=d.get("baseline_file"), staged=dict(d.get("staged") or {}),
            notes=list(d.get("notes", [])), error=d.get("error"),
        )


@dataclass
class BaselineSummary:
    """What the end of a session did to the baselines. ``written``: (file, key) per entry;
    ``unused``: file -> keys no selected test used; ``errors``: files that could not be written
    (their entries are lost for this run, the files untouched)."""

    update: Optional[str] = None
    prune: bool = False
    partial_selection: bool = False
    written: List[List[str]] = field(default_factory=list)
    unused: Dict[str, List[str]] = field(default_factory=dict)
    pruned: int = 0
    errors: List[str] = field(default_factory=list)


class GateSession:
    """The gate of one session: ``settings`` (``pytest_jetson.settings.Settings``), the device's
    fingerprint (with what plugins add), the device id, and the project root that relative
    baseline paths start from and reports show paths against."""

    def __init__(self, settings: Any, device_fingerprint: Dict[str, Any], device_id: str,
                 rootdir: Any = ".", compared_keys: Sequence[str] = COMPARED_KEYS) -> None:
        self.settings = settings
        self.device_fingerprint = dict(device_fingerprint)
        self.device_id = device_id
        self.rootdir = Path(rootdir)
        root = Path(settings.baselines)
        if not root.is_absolute():
            root = self.rootdir / root
        self.store = BaselineStore(root, device_id)
        self.compared_keys = tuple(compared_keys)
        self.results: List[TestResult] = []

    def display(self, path: Path) -> str:
        """A path as reports show it: relative to the project root where it lies inside."""
        try:
            rel = os.path.relpath(path, self.rootdir)
        except ValueError:  # another drive on Windows
            return str(path)
        return str(path) if rel.startswith("..") else Path(rel).as_posix()

    def fingerprint(self, measurement: Any) -> Dict[str, Any]:
        """What a baseline of ``measurement`` must share with it; an ONNX file by its path
        relative to the project root, so committed baselines hold no machine's home directory."""
        return relative_models(fingerprint(measurement, self.device_fingerprint), self.rootdir)

    # -- per test ------------------------------------------------------------------------------
    def evaluate(self, nodeid: str, bounds: Sequence[Bound], measurements: Sequence[Any],
                 body_passed: bool = True, test_name: str = "") -> TestResult:
        """Check ``bounds`` on ``measurements`` and, when recording, stage their baselines."""
        s = self.settings
        result = TestResult(nodeid=nodeid, bounds=[b.to_dict() for b in bounds])
        path = self.store.path_for(nodeid)
        result.baseline_file = self.display(path)
        measurements = list(measurements)
        keys = entry_keys(nodeid, [getattr(m, "name", "") or "" for m in measurements]) if measurements else []
        result.keys = keys
        result.measurements = [relative_models(dict(m.to_dict(), key=k), self.rootdir)
                               for m, k in zip(measurements, keys)]
        if measurements:
            result.fingerprint = self.fingerprint(measurements[0])
        if not body_passed:
            return result
        if bounds and not measurements:
            result.error = nothing_recorded_message(test_name or nodeid)
            return result
        stored: Dict[str, Any] = {}
        load_error: Optional[str] = None
        if any(b.relative for b in bounds) or s.update_baselines:
            try:
                stored = self.store.load(path).get("entries", {})
            except BaselineError as exc:
                load_error = str(exc)
                result.notes.append(load_error)
        for m, key in zip(measurements, keys):
            fp = self.fingerprint(m)
            ref = self.store.lookup(key, nodeid) if key in stored else None
            for b in bounds:
                if b.relative and load_error is not None:
                    v = cannot_check(b, m, load_error)
                else:
                    v = check(b, m, ref, confidence=s.confidence, missing_baseline=s.missing_baseline,
                              fingerprint=fp, allow_env_mismatch=s.allow_env_mismatch,
                              device=self.device_id, compared_keys=self.compared_keys)
                v.measurement = key
                v.test = nodeid
                result.verdicts.append(v)
            if s.update_baselines and load_error is None:
                entry = make_entry(m, fp, s.confidence)
                if needs_write(stored.get(key), entry, s.update_baselines, s.confidence):
                    result.staged[key] = entry
        for v in result.verdicts:
            if v.kind == "relative" and v.measurement in result.staged and v.reason != "cannot_check":
                v.previous, v.reason, v.outcome = v.reason, "recorded", "recorded"
        return result

    def add(self, result: TestResult) -> None:
        self.results.append(result)

    # -- end of session ------------------------------------------------------------------------
    def finish(self, ran: Iterable[str], partial_selection: bool = False,
               failed_session: bool = False) -> BaselineSummary:
        """Write the staged baselines (one read-merge-write per file, under its lock), then find
        (and with --jetson-prune-baselines remove) the entries no test of this session used.
        ``ran``: the node ids that ran; ``failed_session``: the session ended in a usage or
        internal error (nothing is found unused then)."""
        s = self.settings
        out = BaselineSummary(update=s.update_baselines, prune=bool(s.prune_baselines),
                              partial_selection=partial_selection)
        by_file: Dict[Path, Dict[str, Dict[str, Any]]] = {}
        for r in self.results:
            for key, entry in r.staged.items():
                by_file.setdefault(self.store.path_for(r.nodeid), {})[key] = entry
        for path, entries in sorted(by_file.items()):
            try:
                written, _ = update_file(path, entries, mode=s.update_baselines or "all",
                                         device=self.device_id, confidence=s.confidence)
            except (BaselineError, OSError) as exc:
                out.errors.append(f"{self.display(path)}: {exc}")
                continue
            out.written += [[self.display(path), k] for k in written]
        if failed_session or partial_selection:
            return out
        unused = self._unused(set(ran))
        out.unused = {self.display(p): keys for p, keys in unused.items()}
        if unused and s.prune_baselines:
            for path, keys in unused.items():
                try:
                    _, removed = update_file(path, {}, remove=keys, device=self.device_id)
                except (BaselineError, OSError) as exc:
                    out.errors.append(f"{self.display(path)}: {exc}")
                    continue
                out.pruned += len(removed)
        return out

    def _unused(self, ran: set) -> Dict[Path, List[str]]:
        """Baseline entries of the modules that ran which no test of this session used. Entries of
        tests that ran without recording (failed early, skipped) count as used."""
        modules = {module_of(n) for n in ran}
        used = {k for r in self.results for k in r.keys}
        recorded = {r.nodeid for r in self.results if r.keys}
        out: Dict[Path, List[str]] = {}
        for path, keys in self.store.unused(used, modules).items():
            keep = [k for k in keys if not (key_test(k) in ran and key_test(k) not in recorded)]
            if keep:
                out[path] = keep
        # Files of test modules that no longer exist are stale as a whole.
        for path in self.store.files():
            module = self.store.module_of(path)
            if path in out or module in modules or (self.rootdir / module).exists():
                continue
            try:
                entries = sorted(read_file(path).get("entries", {}))
            except BaselineError:
                continue
            if entries:
                out[path] = entries
        return out


def partial_selection(args: Iterable[str], keyword: str = "", markexpr: str = "",
                      last_failed: bool = False, deselected: int = 0) -> bool:
    """Whether the session ran only part of the modules it touched (then no entry is 'unused')."""
    return bool(keyword or markexpr or last_failed or deselected or any("::" in a for a in args))
