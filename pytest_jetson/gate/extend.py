"""The recorder's half of the sequential comparison: a measurement that cannot decide yet grows.

``perf.measure(engine, duration=D)`` of a test with relative bounds measures D, then asks its
``Extension`` whether to go on. The extension holds one ``Sequential`` per relative bound and
looks at the whole measurement so far against the stored baseline: when every comparison has
decided (regression, within the tolerance, improvement) the measurement stops; while one cannot
tell yet, it measures another ``design.step`` x D on the same engine, in the same window, until the
budget (``design.budget`` x D) is spent. The looks are nested extensions of one run, which is what
the group-sequential boundaries of ``gate.sequential`` assume, so the error rates hold under this
optional stopping. ``GateSession.evaluate`` then takes each comparison's last step as its decision.

Only a test's first measurement extends, and only when it has a comparable baseline entry (the
same environment; a changed workload is compared, so it extends like any other): the keys of
later measurements are known only when the test ends, and a pool is measured by its
workers, not here. Those comparisons are decided once, at the same error rate.
"""

from typing import Any, Dict, List, Optional, Sequence

from .bounds import Bound
from .checks import BaselineRef, env_differences, environment_keys
from .scope import not_applicable
from .sequential import Design, Sequential, Step
from .stats import metric_stats


class Extension:
    """The looks of one measurement: ``__call__(measurement, measured)`` returns how many more
    requested durations to measure (None: stop). ``fingerprint_of(measurement)`` gives the
    measurement's fingerprint, compared over the environment part of ``compared_keys`` with the
    baseline's; an environment that differs (unless ``allow_env_mismatch``) means no comparison
    and no extension. A bound limited to other devices or backends takes no part."""

    def __init__(self, bounds: Sequence[Bound], baseline: BaselineRef, design: Design,
                 fingerprint_of: Any = None, compared_keys: Sequence[str] = (),
                 allow_env_mismatch: bool = False) -> None:
        self.bounds: List[Bound] = [b for b in bounds if b.relative and b.metric in baseline.metrics]
        self.baseline = baseline
        self.design = design
        self.fingerprint_of = fingerprint_of
        self.compared_keys = environment_keys(compared_keys)
        self.allow_env_mismatch = allow_env_mismatch
        self.sequentials: Dict[int, Sequential] = {}
        self.looks = 0
        self.comparable: Optional[bool] = None

    def _comparable(self, measurement: Any) -> bool:
        if self.comparable is None:
            fp = self.fingerprint_of(measurement) if self.fingerprint_of is not None else {}
            diffs = env_differences(fp, self.baseline.fingerprint, self.compared_keys) if fp else []
            if fp:
                self.bounds = [b for b in self.bounds if not_applicable(b, fp) is None]
            self.comparable = bool(self.bounds) and (not diffs or self.allow_env_mismatch)
        return self.comparable

    def __call__(self, measurement: Any, measured: float) -> Optional[float]:
        if not self.bounds or not self._comparable(measurement):
            return None
        self.looks += 1
        undecided = False
        for i, b in enumerate(self.bounds):
            base = self.baseline.metrics[b.metric]
            st = metric_stats(measurement, b.metric, keep_sample=False)
            if st is None or not (st.value > 0 and base.value > 0):
                continue
            seq = self.sequentials.get(i)
            if seq is None:
                seq = self.sequentials[i] = Sequential(b.metric, float(b.tolerance or 0.0), design=self.design)
            undecided |= not seq.look(st, base, measured).decided
        left = self.design.budget - measured
        if not undecided or left <= 1e-9:
            return None
        return min(self.design.step, left)

    def step(self, bound: Bound) -> Optional[Step]:
        """The last decided step of ``bound``'s comparison (None: it never looked, or the
        measurement stopped before it decided, e.g. a test that measured on after an error)."""
        for i, b in enumerate(self.bounds):
            if b is bound or b.key() == bound.key():
                seq = self.sequentials.get(i)
                if seq is not None and seq.result is not None and seq.result.decided:
                    return seq.result
        return None
