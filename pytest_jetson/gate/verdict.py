"""Verdicts are data: an outcome, a reason from a fixed vocabulary, and the numbers behind them.

The gate decides; ``report.render`` alone turns a verdict into words. Terminal, Markdown, JSON,
JUnit and the CLI read the fields below and never parse text.

Outcomes, worst first (``OUTCOMES``)::

    error         the bound could not be checked (a metric nothing measured, an unreadable baseline)
    fail          a violated absolute bound, or a significant regression past the tolerance
    inconclusive  too noisy to tell a change within the tolerance from a regression
    skip          not checked: a relative bound with no comparable baseline (fails with
                  --jetson-missing-baseline fail), a metric this backend or device cannot measure,
                  a bound limited to other devices or backends (neither fails nor passes)
    recorded      a relative bound whose baseline this run (re)recorded
    pass

Reasons (``REASONS``), each with the outcome it gives: bound_met, bound_violated (absolute);
within_tolerance, improvement, regression, inconclusive (relative, compared); no_baseline,
env_mismatch (relative, not compared); cannot_check (either: a fault, such as a metric that should
have been measured and was not, or an unreadable baseline); not_measured (either: the metric is
one this backend or device cannot measure, ``gate.scope``); not_applicable (either: the bound is
limited to other devices or backends); recorded (relative, written).
Output checks (``gate.outputs``, kind "outputs"): outputs_match, outputs_differ, outputs_unchecked
(the simulated device computes no outputs), outputs_no_reference (no golden file yet: by policy,
as no_baseline), outputs_recorded (the golden file this run wrote).
"""

from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Tuple


@dataclass(frozen=True)
class Outcome:
    """One outcome and everything the reports say about it: renderers read these fields and never
    branch on the name."""

    name: str
    rank: int  # 0 is the worst; reports list worst first
    fails: bool  # fails the test (see ``by_policy``)
    label: str  # as tables print it (failures in capitals)
    needs_look: bool  # listed in the default tables and stated in full in the reports
    icon: str = ""  # Markdown
    colour: str = "#607d8b"  # plots
    lead: str = ""  # how a failing test's report introduces the bound
    by_policy: bool = False  # fails only with --jetson-inconclusive fail
    said_once: bool = False  # reports say these once per reason, not once per bound


OUTCOMES: Dict[str, Outcome] = {o.name: o for o in (
    Outcome("error", 0, True, "ERROR", True, "❌", "#c62828", lead="perf bound error: "),
    Outcome("fail", 1, True, "FAIL", True, "❌", "#c62828", lead="perf bound failed: "),
    Outcome("inconclusive", 2, False, "inconclusive", True, "⚠️", "#f9a825", by_policy=True,
            lead="perf bound inconclusive (--jetson-inconclusive=fail): "),
    Outcome("skip", 3, False, "skip", False, "⏭️", "#9e9e9e", said_once=True),
    Outcome("recorded", 4, False, "recorded", False, "📝", "#1565c0"),
    Outcome("pass", 5, False, "pass", False, "✅", "#2e7d32"),
)}


def outcome(name: str) -> Outcome:
    """The row of an outcome; a name outside the table (a test with no bound: "none") is shown as
    it is and never needs a look."""
    o = OUTCOMES.get(name)
    return o if o is not None else Outcome(name, len(OUTCOMES), False, name, False)


#: reason -> the outcome it gives (None: by policy, --jetson-missing-baseline skip|fail)
REASONS: Dict[str, Optional[str]] = {
    "bound_met": "pass",
    "bound_violated": "fail",
    "within_tolerance": "pass",
    "improvement": "pass",
    "regression": "fail",
    "inconclusive": "inconclusive",
    "no_baseline": None,
    "env_mismatch": None,
    "cannot_check": "error",
    "not_measured": "skip",
    "not_applicable": "skip",
    "recorded": "recorded",
    "outputs_match": "pass",
    "outputs_differ": "fail",
    "outputs_unchecked": "skip",
    "outputs_no_reference": None,
    "outputs_recorded": "recorded",
}

#: Reasons of bounds this session never compares: they do not count in its family
#: (``gate.family``), nor among the comparisons it made.
NOT_COMPARED = ("no_baseline", "cannot_check", "not_measured", "not_applicable")


def rank(name: str) -> int:
    return outcome(name).rank


def fails(name: str, inconclusive: str = "pass") -> bool:
    """Whether outcome ``name`` fails a test under the ``--jetson-inconclusive`` policy."""
    o = outcome(name)
    return inconclusive == "fail" if o.by_policy else o.fails


def outcome_of(reason: str, missing_baseline: str = "skip") -> str:
    if reason not in REASONS:
        raise ValueError(f"unknown verdict reason {reason!r}; one of {', '.join(REASONS)}")
    out = REASONS[reason]
    if out is None:
        return "fail" if missing_baseline == "fail" else "skip"
    return out


def worst(outcomes: Any) -> Optional[str]:
    outs = list(outcomes)
    return min(outs, key=rank) if outs else None


@dataclass
class Verdict:
    """One bound checked on one measurement.

    Values are in the metric's base unit (``metrics.METRICS``). ``ci``: the measured value's
    interval at ``confidence``. Relative bounds: ``change`` is current / baseline - 1; ``worse``
    the same change signed so that positive is worse for this metric; ``worse_ci`` its interval
    (positive is worse); ``basis`` "statistics" (a significance test), "spread" (no within-run
    error on either side: tested against the run-to-run spread alone) or "values" (decided on the
    values). ``min_tolerance``: the smallest tolerance this comparison's noise could decide;
    ``looks``: how many looks a comparison extended by the recorder took (None: one);
    ``log_worse``/``within_se``: the log worsening and the within-run part of its error, which
    the session's noise diagnosis pools (``gate.family.excess_spread``; None across a workload
    change, which is no noise). ``env_diffs``: [field, baseline, now] for each environment field
    that differs; ``workload_diffs``: the same for what runs (model, precision, batch,
    resolution, accelerator, processes), compared across. ``detail``: why a bound could not be
    checked or was skipped. ``previous``: for a recorded bound, the reason the comparison gave
    before the baseline was rewritten.
    """

    metric: str
    outcome: str
    reason: str
    kind: str  # "absolute" | "relative"
    bound: str = ""
    comparator: Optional[str] = None
    threshold: Optional[float] = None
    tolerance: Optional[float] = None
    value: Optional[float] = None
    ci: Optional[Tuple[float, float]] = None
    confidence: Optional[float] = None
    baseline: Optional[float] = None
    change: Optional[float] = None
    worse: Optional[float] = None
    worse_ci: Optional[Tuple[float, float]] = None
    p_value: Optional[float] = None
    basis: Optional[str] = None
    min_tolerance: Optional[float] = None
    looks: Optional[int] = None
    log_worse: Optional[float] = None
    within_se: Optional[float] = None
    env_diffs: List[List[Any]] = field(default_factory=list)
    env_ignored: bool = False
    workload_diffs: List[List[Any]] = field(default_factory=list)
    baseline_file: str = ""
    baseline_recorded: str = ""
    baseline_env: Dict[str, Any] = field(default_factory=dict)
    detail: str = ""
    previous: Optional[str] = None
    measurement: str = ""
    test: str = ""
    #: an output check's numbers (``gate.outputs.OutputCheck.to_dict``); empty for a bound
    outputs: Dict[str, Any] = field(default_factory=dict)
    #: the stage of the measurement the bound is on (None: the whole measurement)
    stage: Optional[str] = None

    @property
    def failed(self) -> bool:
        return fails(self.outcome)

    @property
    def outcome_row(self) -> Outcome:
        """What reports say about this verdict's outcome (its label, whether it needs a look)."""
        return outcome(self.outcome)

    def to_dict(self) -> Dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        for key in ("ci", "worse_ci"):
            if d[key] is not None:
                d[key] = [d[key][0], d[key][1]]
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Verdict":
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in d.items() if k in known}
        for key in ("ci", "worse_ci"):
            if kwargs.get(key) is not None:
                kwargs[key] = (kwargs[key][0], kwargs[key][1])
        return cls(**kwargs)
