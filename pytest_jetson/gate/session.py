"""One test session's gate: checks each test's bounds on what it recorded, stages the baselines
to record, and at the end of the session writes them, one read-merge-write per file. The plugin
calls it; scripts can too (no pytest here).

Several measurements in one test: every bound is checked against every measurement (a test
usually records one; with several, each must satisfy the bounds), and each measurement has its own
baseline entry (``gate.keys.entry_keys``).

Everything here is data: ``TestResult`` (the measurements and verdicts of one test, objects until
they cross to the pytest-xdist controller or into a file) and ``BaselineSummary`` (what the end of the session wrote,
found unused and pruned). ``report.render`` words both.
"""

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ..errors import BaselineError
from ..run.measurement import Measurement, PoolMeasurement
from ..telemetry.throttle_counters import describe as describe_throttle
from . import verdict as _verdict
from .attribution import Where, where
from .baseline import BaselineStore, fingerprint, make_entry, needs_write, outside_project, read_file
from .bounds import Bound
from .checks import (
    COMPARED_KEYS,
    BaselineRef,
    Verdict,
    cannot_check,
    check,
    check_relative,
    env_differences,
    environment_keys,
)
from .extend import Extension
from .family import Family, excess_spread, noisier_than_assumed
from .keys import entry_keys, key_test, module_of, relative_models, relative_to


def nothing_recorded_message(test: str) -> str:
    return (f"{test} has perf bounds but recorded no measurement: call perf.measure(...) or "
            f"perf.record(...) in the test (it needs the perf fixture)")



def throttle_notes(keyed: Sequence[Tuple[str, Any]]) -> List[str]:
    """A note for each measurement during which the board throttled (over-current events counted
    around its window): its verdicts judge figures that are not the board's unthrottled speed."""
    return [f"{key}: {describe_throttle(m.extra['throttle_events'])}" for key, m in keyed
            if (getattr(m, "extra", None) or {}).get("throttle_events")]

@dataclass
class TestResult:
    """What the gate concluded about one test: its ``Measurement`` objects (model paths relative
    to the project root, as reports show them), their baseline keys and its ``Verdict`` objects.
    ``to_json``/``from_json`` carry it across the pytest-xdist boundary and into the JSON report,
    nowhere else."""

    __test__ = False  # not a pytest test class, despite the name

    nodeid: str
    measurements: List[Measurement] = field(default_factory=list)
    keys: List[str] = field(default_factory=list)
    fingerprint: Dict[str, Any] = field(default_factory=dict)
    bounds: List[Dict[str, Any]] = field(default_factory=list)
    verdicts: List[Verdict] = field(default_factory=list)
    baseline_file: Optional[str] = None
    #: baseline entries this run records, by key; written at the end of the session
    staged: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    error: Optional[str] = None
    #: per measurement with stages that its baseline has too: where its time moved
    #: (``gate.attribution``), the stage that explains most first
    where: List[Where] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        if self.error:
            return "error"
        return _verdict.worst(v.outcome for v in self.verdicts) or "none"

    def failing(self, inconclusive: str = "pass") -> List[Verdict]:
        return [v for v in self.verdicts if _verdict.fails(v.outcome, inconclusive)]

    def keyed(self) -> List[Tuple[str, Measurement]]:
        """(baseline key, measurement) of each measurement."""
        return list(zip(self.keys, self.measurements))

    def to_json(self, samples: bool = True) -> Dict[str, Any]:
        """The result as plain JSON data (a test of the JSON report, less the verdicts' messages);
        ``samples=False``: without what grows with a run (``Measurement.to_dict``)."""
        return {
            "nodeid": self.nodeid,
            "outcome": self.outcome,
            "measurements": [dict(m.to_dict(samples), key=k) for k, m in self.keyed()],
            "keys": self.keys,
            "fingerprint": self.fingerprint,
            "bounds": self.bounds,
            "verdicts": [v.to_dict() for v in self.verdicts],
            "baseline_file": self.baseline_file,
            "staged": self.staged,
            "notes": self.notes,
            "error": self.error,
            "where": [w.to_dict() for w in self.where],
        }

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "TestResult":
        stored = list(d.get("measurements", []))
        keys = list(d.get("keys", []))
        if len(keys) != len(stored):  # each serialised measurement names its own key too
            keys = [m.get("key") or d["nodeid"] for m in stored]
        return cls(
            nodeid=d["nodeid"],
            measurements=[Measurement.from_dict(m) for m in stored],
            keys=keys, fingerprint=dict(d.get("fingerprint", {})),
            bounds=list(d.get("bounds", [])),
            verdicts=[Verdict.from_dict(v) for v in d.get("verdicts", [])],
            baseline_file=d.get("baseline_file"), staged=dict(d.get("staged") or {}),
            notes=list(d.get("notes", [])), error=d.get("error"),
            where=[Where.from_dict(w) for w in d.get("where") or []],
        )


def relative_measurement(m: Measurement, root: Any) -> Measurement:
    """A copy of ``m`` whose model paths (its own, its environment's, its workers') are relative
    to ``root``, so reports hold no machine's home directory."""
    changes: Dict[str, Any] = {"model": relative_to(m.model, root) if isinstance(m.model, str) else m.model,
                               "environment": relative_models(m.environment, root)}
    if isinstance(m, PoolMeasurement):
        changes["workers"] = [relative_measurement(w, root) for w in m.workers]
    return replace(m, **changes)


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
    #: unused entries pruning left alone: it cannot attribute them to this project's tests
    kept: Dict[str, List[str]] = field(default_factory=dict)
    pruned: int = 0
    errors: List[str] = field(default_factory=list)
    #: what the session's comparisons say about the gate's assumptions (noise, family size)
    notes: List[str] = field(default_factory=list)


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
        #: the session's family of relative comparisons (``plan``); None: each is decided at
        #: ``settings.confidence`` alone
        self.family: Optional[Family] = None
        self._extensions: Dict[str, Extension] = {}

    # -- the session's error budget ---------------------------------------------------------------
    def plan(self, comparisons: int, budget: float = 3.0) -> Family:
        """Count the session's relative comparisons (at collection) so that the chance that an
        unchanged suite fails at all stays at 1 - ``settings.confidence``: each comparison's level
        is that divided among them (``gate.family``). ``budget``: how far a measurement may be
        extended, in requested durations."""
        s = self.settings
        self.family = Family(planned=max(int(comparisons), 1), family_alpha=1.0 - s.confidence,
                             inconclusive_fails=s.inconclusive == "fail", budget=budget)
        return self.family

    def _relative_confidence(self) -> float:
        return self.family.confidence() if self.family is not None else self.settings.confidence

    def extension(self, nodeid: str, bounds: Sequence[Bound], budget: Optional[float] = None
                  ) -> Optional[Extension]:
        """The extension of ``nodeid``'s first measurement (None: nothing to extend: no relative
        bound, no stored entry, a baseline file that cannot be read, or recording without
        comparing)."""
        s = self.settings
        # a stage's comparison is decided once: the looks follow the whole measurement
        relative = [b for b in bounds if b.relative and b.stage is None]
        if not relative or self.family is None or s.update_baselines == "force":
            return None
        try:
            ref = self.store.lookup(nodeid, nodeid)
        except BaselineError:
            return None
        if ref is None:
            return None
        design = self.family.design()
        if budget is not None:
            design = replace(design, budget=float(budget))
        ext = Extension(relative, ref, design,
                        fingerprint_of=self.fingerprint,
                        compared_keys=self.compared_keys, allow_env_mismatch=s.allow_env_mismatch)
        self._extensions[nodeid] = ext
        return ext

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
        measurements = list(measurements)
        result = self._result(nodeid, bounds, measurements)
        if not body_passed:
            return result
        if bounds and not measurements:
            result.error = nothing_recorded_message(test_name or nodeid)
            return result
        stored, load_error = self._stored(result, bounds)
        ext = self._extensions.pop(nodeid, None)
        if len(measurements) != 1:
            ext = None  # it looked at the entry of a test's only measurement
        for m, key in zip(measurements, result.keys):
            fp = self.fingerprint(m)
            ref = self.store.lookup(key, nodeid) if key in stored else None
            for b in bounds:
                v = self._check(b, m, ref, fp, ext, load_error) if b.stage is None else \
                    self._check_stage(b, m, ref, fp, load_error)
                v.measurement, v.test = key, nodeid
                result.verdicts.append(v)
            self._where(result, key, m, ref, fp)
            # staged even where its file could not be read: the flush then names that file among
            # those it could not write, and never writes over it
            self._stage(result, key, m, fp, stored.get(key))
        _mark_recorded(result)
        return result

    def _result(self, nodeid: str, bounds: Sequence[Bound], measurements: List[Any]) -> TestResult:
        """The result before any check: the measurements as reports show them, their keys, the
        baseline file."""
        result = TestResult(nodeid=nodeid, bounds=[b.to_dict() for b in bounds],
                            baseline_file=self.display(self.store.path_for(nodeid)))
        if measurements:
            result.keys = entry_keys(nodeid, [getattr(m, "name", "") or "" for m in measurements])
            result.fingerprint = self.fingerprint(measurements[0])
        result.measurements = [relative_measurement(m, self.rootdir) for m in measurements]
        result.notes += throttle_notes(result.keyed())
        return result

    def _stored(self, result: TestResult, bounds: Sequence[Bound]) -> Tuple[Dict[str, Any], Optional[str]]:
        """The entries of the test's baseline file, when a bound, recording or the stages of a
        measurement (``_where``) need them, and why the file could not be read (None: it could, or
        was not needed)."""
        staged = any(getattr(m, "stages", None) for m in result.measurements)
        if not (any(b.relative for b in bounds) or self.settings.update_baselines or staged):
            return {}, None
        try:
            return self.store.load(self.store.path_for(result.nodeid)).get("entries", {}), None
        except BaselineError as exc:
            result.notes.append(str(exc))
            return {}, str(exc)

    def _check(self, b: Bound, m: Any, ref: Any, fp: Dict[str, Any], ext: Optional[Extension],
               load_error: Optional[str]) -> Verdict:
        s = self.settings
        common = dict(missing_baseline=s.missing_baseline, fingerprint=fp,
                      allow_env_mismatch=s.allow_env_mismatch, device=self.device_id,
                      compared_keys=self.compared_keys)
        if not b.relative:
            return check(b, m, ref, confidence=s.confidence, **common)
        if load_error is not None:
            return cannot_check(b, m, load_error)
        return check_relative(b, m, ref, confidence=self._relative_confidence(),
                              step=ext.step(b) if ext is not None else None, **common)

    def _check_stage(self, b: Bound, m: Any, ref: Optional[BaselineRef], fp: Dict[str, Any],
                     load_error: Optional[str]) -> Verdict:
        """A stage's bound: checked on ``m.stages[b.stage]`` against the baseline entry's stage.
        The stage is decided once (the extension looks at the whole measurement only)."""
        stages = getattr(m, "stages", None) or {}
        stage = stages.get(b.stage)
        if stage is None:
            # checked on an empty stage, so that a bound limited to other devices or backends is
            # skipped as such; anywhere else the missing stage is the error
            empty = replace(m, name=b.stage or "", latencies=[], windows=[], device_latencies=None, stages={})
            v = self._check(b, empty, None, fp, None, load_error)
            if v.reason == "cannot_check":
                has = (f"its stages: {', '.join(stages)}" if stages else
                       "it has no stages: time that part of the function with perf.stage(...)")
                v.detail = f"the measurement has no stage {b.stage!r} ({has})"
        elif ref is not None and b.stage not in ref.stages and b.relative:
            bare = BaselineRef(metrics={}, fingerprint=ref.fingerprint, recorded=ref.recorded,
                               file=ref.file, key=ref.key)
            v = self._check(b, stage, bare, fp, None, load_error)
            if v.reason == "no_baseline":
                v.detail = f"the baseline has no stage {b.stage!r}"
        else:
            v = self._check(b, stage, ref.stages.get(b.stage) if ref is not None else None, fp, None,
                            load_error)
        v.stage = b.stage
        return v

    def _where(self, result: TestResult, key: str, m: Any, ref: Optional[BaselineRef],
               fp: Dict[str, Any]) -> None:
        """Where ``m``'s time moved against a comparable baseline, stage by stage and layer by layer."""
        profiled = getattr(m, "profile", None) is not None and ref is not None and ref.structure
        if ref is None or not (ref.stages and getattr(m, "stages", None) or profiled):
            return
        if env_differences(fp, ref.fingerprint, environment_keys(self.compared_keys)) and not self.settings.allow_env_mismatch:
            return
        found = where(m, ref, key)
        if found is not None:
            result.where.append(found)

    def _stage(self, result: TestResult, key: str, m: Any, fp: Dict[str, Any], stored: Any) -> None:
        """Stage ``m``'s baseline entry when this run records and the entry changed enough."""
        s = self.settings
        if not s.update_baselines:
            return
        entry = make_entry(m, fp, s.confidence)
        if needs_write(stored, entry, s.update_baselines, s.confidence):
            result.staged[key] = entry

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
        for r in self.results:
            for key, entry in r.staged.items():
                self.store.stage(r.nodeid, key, entry)
        remove: Dict[Path, List[str]] = {}
        unused: Dict[Path, List[str]] = {}
        if not (failed_session or partial_selection):
            unused = self._unused(set(ran))
            if unused and s.prune_baselines:
                remove = self._prunable(unused, set(ran))
        flushed = self.store.flush(mode=s.update_baselines or "all", confidence=s.confidence,
                                   remove=remove)
        for path, keys in sorted(flushed.written.items()):
            out.written += [[self.display(path), k] for k in keys]
        for path, message in sorted(flushed.errors.items()):
            out.errors.append(f"{self.display(path)}: {message}")
        out.pruned = sum(len(v) for v in flushed.removed.values())
        out.unused = {self.display(p): keys for p, keys in unused.items()}
        if s.prune_baselines:
            for path, keys in unused.items():
                kept = [k for k in keys if k not in remove.get(path, [])]
                if kept:
                    out.kept[self.display(path)] = kept
        out.notes = self.diagnosis()
        return out

    def diagnosis(self) -> List[str]:
        """What this session's comparisons say about the gate's own assumptions: a board noisier
        between runs than the floors assume (not when re-recording), more comparisons than were
        counted, baselines kept outside the project."""
        lines: List[str] = []
        # A session that re-records compares new figures with the entries they replace, usually
        # because the code changed: those differences are the change, not the board's noise.
        if self.settings.update_baselines not in ("all", "force"):
            rows = [(v.metric, v.log_worse, v.within_se) for r in self.results for v in r.verdicts
                    if v.kind == "relative" and v.log_worse is not None and v.within_se is not None]
            lines += noisier_than_assumed(excess_spread(rows))
        if self.family is not None:
            made = sum(1 for r in self.results for v in r.verdicts
                       if v.kind == "relative" and v.reason not in _verdict.NOT_COMPARED)
            self.family.made = made
            if self.family.overrun:
                lines.append(self.family.overrun)
        where = outside_project(self.store.root, self.rootdir, self.store.device)
        if where:
            lines.append(where)
        return lines

    def _prunable(self, unused: Dict[Path, List[str]], ran: set) -> Dict[Path, List[str]]:
        """What pruning may delete: entries it can attribute to this project's tests. Those of a
        collected module whose test is gone (``BaselineStore.prunable``), and those of a deleted
        module: the key names the file it sits in, and the module's directory still exists in
        the project while the module does not. Anything else is reported and kept."""
        out = self.store.prunable(unused, ran)
        modules = {module_of(n) for n in ran}
        for path, keys in unused.items():
            gone = [k for k in keys if module_of(k) not in modules and self.store.path_for(k) == path
                    and not (self.rootdir / module_of(k)).exists()
                    and (self.rootdir / module_of(k)).parent.is_dir()]
            if gone:
                out[path] = sorted(set(out.get(path, [])) | set(gone))
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


def _mark_recorded(result: TestResult) -> None:
    """A relative bound whose entry this run re-records says so, keeping what it compared to."""
    for v in result.verdicts:
        if v.kind == "relative" and v.measurement in result.staged and v.reason != "cannot_check":
            v.previous, v.reason, v.outcome = v.reason, "recorded", "recorded"


def partial_selection(args: Iterable[str], keyword: str = "", markexpr: str = "",
                      last_failed: bool = False, deselected: int = 0) -> bool:
    """Whether the session ran only part of the modules it touched (then no entry is 'unused')."""
    return bool(keyword or markexpr or last_failed or deselected or any("::" in a for a in args))
