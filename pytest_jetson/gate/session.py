"""One test session's gate: checks each test's bounds on what it recorded, updates baselines, and
keeps the results the reports print. The plugin calls it; scripts can too (no pytest here).

Several measurements in one test: every bound is checked against every measurement (a test
usually records one; with several, each must satisfy the bounds), and each measurement has its own
baseline entry (``gate.baseline.entry_keys``).
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

from ..errors import BaselineError
from .baseline import BaselineStore, entry_keys, fingerprint, make_entry, read_file
from .bounds import Bound
from .compare import Verdict, check


def nothing_recorded_message(test: str) -> str:
    return (f"{test} has perf bounds but recorded no measurement: call perf.measure(...) or "
            f"perf.record(...) in the test (it needs the perf fixture)")


@dataclass
class TestResult:
    """What the gate concluded about one test (JSON-friendly through ``to_dict``)."""

    __test__ = False  # not a pytest test class, despite the name

    nodeid: str
    measurements: List[Dict[str, Any]] = field(default_factory=list)
    keys: List[str] = field(default_factory=list)
    fingerprint: Dict[str, Any] = field(default_factory=dict)
    bounds: List[Dict[str, Any]] = field(default_factory=list)
    verdicts: List[Verdict] = field(default_factory=list)
    baseline_file: Optional[str] = None
    baseline_written: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    error: Optional[str] = None

    @property
    def outcome(self) -> str:
        if self.error:
            return "error"
        outs = [v.outcome for v in self.verdicts]
        for o in ("error", "fail", "inconclusive", "skip", "pass"):
            if o in outs:
                return o
        return "none"

    def failing(self, inconclusive: str = "pass") -> List[Verdict]:
        bad = [v for v in self.verdicts if v.outcome in ("fail", "error")]
        if inconclusive == "fail":
            bad += [v for v in self.verdicts if v.outcome == "inconclusive"]
        return bad

    def failure_text(self, inconclusive: str = "pass") -> str:
        bad = self.failing(inconclusive)
        lines = [v.message if v.message.startswith("perf bound") or v.outcome != "inconclusive"
                 else "perf bound inconclusive (--jetson-inconclusive=fail): " + v.message for v in bad]
        others = [v for v in self.verdicts if v not in bad]
        if others:
            lines.append("other bounds: " + "; ".join(
                f"{v.metric} {v.bound!r} {v.outcome}"
                + (f" [{v.measurement.split('|')[-1]}]" if "|" in v.measurement else "")
                for v in others))
        return "\n".join(lines)

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
            "baseline_written": self.baseline_written,
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
            baseline_file=d.get("baseline_file"), baseline_written=list(d.get("baseline_written", [])),
            notes=list(d.get("notes", [])), error=d.get("error"),
        )


class GateSession:
    """The gate of one session: ``settings`` (pytest_jetson.settings.Settings), the device under
    test, and the directory relative baseline paths start from."""

    def __init__(self, settings: Any, device: Any, rootdir: Any = ".") -> None:
        self.settings = settings
        self.device = device
        root = Path(settings.baselines)
        if not root.is_absolute():
            root = Path(rootdir) / root
        self.store = BaselineStore(root, device.id)
        self.rootdir = Path(rootdir)
        self.results: List[TestResult] = []
        self.ran: List[str] = []
        self.deselected = 0

    @property
    def device_fingerprint(self) -> Dict[str, Any]:
        return self.device.fingerprint()

    def evaluate(self, nodeid: str, bounds: Sequence[Bound], measurements: Sequence[Any],
                 body_passed: bool = True, test_name: str = "") -> TestResult:
        """Check ``bounds`` on ``measurements`` and, when asked, record baselines."""
        s = self.settings
        result = TestResult(nodeid=nodeid, bounds=[b.to_dict() for b in bounds])
        result.baseline_file = self.store.display(self.store.path_for(nodeid))
        measurements = list(measurements)
        keys = entry_keys(nodeid, measurements) if measurements else []
        result.keys = keys
        result.measurements = [dict(m.to_dict(), key=k) for m, k in zip(measurements, keys)]
        if measurements:
            result.fingerprint = fingerprint(measurements[0], self.device_fingerprint)
        if not body_passed:
            return result
        if bounds and not measurements:
            result.error = nothing_recorded_message(test_name or nodeid)
            return result
        relative = any(b.relative for b in bounds)
        refs: Dict[str, Any] = {}
        load_error: Optional[str] = None
        if relative or s.update_baselines:
            for key in keys:
                try:
                    refs[key] = self.store.lookup(key, nodeid)
                except BaselineError as exc:
                    load_error = str(exc)
                    break
        for m, key in zip(measurements, keys):
            fp = fingerprint(m, self.device_fingerprint)
            for b in bounds:
                if b.relative and load_error is not None:
                    v = Verdict(metric=b.metric, outcome="error", bound=b.text, kind="relative",
                                message=f"perf bound {b.metric} {b.text!r} cannot be checked: {load_error}")
                else:
                    v = check(b, m, refs.get(key), confidence=s.confidence,
                              missing_baseline=s.missing_baseline, fingerprint=fp,
                              allow_env_mismatch=s.allow_env_mismatch, device=self.device.id)
                v.measurement = key if len(keys) > 1 else (getattr(m, "name", "") or "")
                if len(keys) > 1:
                    tag = f"[{key.split('|', 1)[-1]}] "
                    lead = "perf bound failed: "
                    v.message = (lead + tag + v.message[len(lead):] if v.message.startswith(lead)
                                 else tag + v.message)
                v.test = nodeid
                result.verdicts.append(v)
        if s.update_baselines and load_error is None:
            entries = {key: make_entry(m, fingerprint(m, self.device_fingerprint), s.confidence)
                       for m, key in zip(measurements, keys)}
            try:
                written = self.store.update(nodeid, entries, mode=s.update_baselines,
                                            confidence=s.confidence)
            except BaselineError as exc:
                result.notes.append(str(exc))
                written = []
            result.baseline_written = written
            for v in result.verdicts:
                rekey = v.measurement if len(keys) > 1 else nodeid
                if v.kind == "relative" and rekey in written and v.outcome in ("fail", "inconclusive", "skip"):
                    v.message = f"baseline re-recorded (was {v.outcome}): {v.message}"
                    v.outcome = "pass"
        elif load_error is not None:
            result.notes.append(load_error)
        return result

    def add(self, result: TestResult) -> None:
        self.results.append(result)

    # -- end of session -------------------------------------------------------------------------
    def used_keys(self) -> List[str]:
        keys = set()
        for r in self.results:
            keys.update(r.keys)
        return sorted(keys)

    def unused(self, partial_selection: bool = False) -> Dict[Path, List[str]]:
        """Baseline entries of the modules that ran which no test of this session used. Entries of
        tests that ran without recording (failed early, skipped) count as used."""
        if partial_selection:
            return {}
        ran = set(self.ran)
        modules = {n.split("::", 1)[0] for n in ran}
        used = set(self.used_keys())
        stale = self.store.unused(used, modules)
        recorded = {r.nodeid for r in self.results if r.keys}
        out = {}
        for path, keys in stale.items():
            keep = [k for k in keys if not (k.split("|", 1)[0] in ran and k.split("|", 1)[0] not in recorded)]
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

    def summary_lines(self, unused: Dict[Path, List[str]], pruned: int = 0,
                      partial_selection: bool = False) -> List[str]:
        lines = []
        written = [(r.baseline_file, k) for r in self.results for k in r.baseline_written]
        if written:
            files = sorted({f for f, _ in written if f})
            lines.append(f"baselines: wrote {len(written)} entr{'y' if len(written) == 1 else 'ies'} "
                         f"to {', '.join(files)}")
        elif self.settings.update_baselines:
            lines.append("baselines: nothing to write (no entry new or changed beyond noise)")
        n_unused = sum(len(v) for v in unused.values())
        if n_unused:
            if pruned:
                lines.append(f"baselines: pruned {pruned} unused entr{'y' if pruned == 1 else 'ies'}")
            else:
                lines.append(f"baselines: {n_unused} unused entr{'y' if n_unused == 1 else 'ies'} "
                             f"(no selected test used them; remove with --jetson-prune-baselines):")
            for path, keys in unused.items():
                for k in keys:
                    lines.append(f"  {self.store.display(path)}: {k}")
        elif self.settings.prune_baselines and partial_selection:
            lines.append("baselines: not pruned: the run selected part of the suite (-k, -m, node ids or --lf)")
        return lines


def partial_selection(args: Iterable[str], keyword: str = "", markexpr: str = "",
                      last_failed: bool = False, deselected: int = 0) -> bool:
    """Whether the session ran only part of the modules it touched (then no entry is 'unused')."""
    return bool(keyword or markexpr or last_failed or deselected or any("::" in a for a in args))
