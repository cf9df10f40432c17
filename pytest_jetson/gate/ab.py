"""A/B on one board: the rounds of a base revision and of a head, measured interleaved, compared
with the gate's own rule (``pytest-jetson ab``).

Each side's rounds of one measurement key are pooled as the baseline store pools recordings
(``entries.pool_entries``: the geometric mean, the within-run error, and the spread between
rounds, which the gate then uses instead of its run-to-run floor alone); the head's pooled
statistics are checked against the base's pooled entry by ``checks.check_relative`` with the
tolerance the test's relative bound declares (else ``tolerance``), the family of comparisons at
one confidence level, as ``pytest-jetson compare`` decides two reports.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..metrics import defaults, format_percent
from .bounds import Bound
from .checks import Verdict, check_relative
from .entries import entry_ref, make_entry, pool_entries
from .family import confidence_for
from .session import TestResult

#: A side's rounds: one list of test results per round.
Rounds = Sequence[Sequence[TestResult]]


def pooled(rounds: Rounds, confidence: float = 0.99) -> Dict[str, Tuple[Dict[str, Any], Any, TestResult]]:
    """key -> (the rounds' pooled entry, the last round's measurement, the last round's result)."""
    entries: Dict[str, List[Dict[str, Any]]] = {}
    last: Dict[str, Tuple[Any, TestResult]] = {}
    for results in rounds:
        for result in results:
            for key, m in result.keyed():
                entries.setdefault(key, []).append(make_entry(m, dict(result.fingerprint or {}), confidence))
                last[key] = (m, result)
    return {key: (pool_entries(es), last[key][0], last[key][1]) for key, es in entries.items()}


def compare_rounds(base: Rounds, head: Rounds, tolerance: float = 0.05, confidence: float = 0.99,
                   metrics: Optional[Sequence[str]] = None, label: str = "base") -> List[Verdict]:
    """The head's pooled rounds against the base's, key by key (keys only one side has are left
    out: the caller names them)."""
    base_pool, head_pool = pooled(base, confidence), pooled(head, confidence)
    default = set(defaults("compare"))
    pending = []
    for key, (head_entry, m, result) in head_pool.items():
        if key not in base_pool:
            continue
        ref = entry_ref(base_pool[key][0], file=label, key=key)
        cur = entry_ref(head_entry, key=key)
        tolerances = {b["metric"]: b.get("tolerance") for b in result.bounds if b.get("kind") == "relative"}
        for name in (list(metrics) if metrics else sorted(default | set(tolerances))):
            if name not in ref.metrics or name not in cur.metrics:
                continue
            tol = tolerances.get(name)
            tol = tolerance if tol is None else float(tol)
            bound = Bound(metric=name, text=format_percent(tol), kind="relative", tolerance=tol, unit="%")
            pending.append((bound, m, ref, cur.metrics[name], result, key))
    level = confidence_for(len(pending), family_alpha=1.0 - confidence, inconclusive_fails=False)
    out = []
    for bound, m, ref, st, result, key in pending:
        v = check_relative(bound, m, ref, confidence=level, fingerprint=None, stats=st)
        v.test, v.measurement = result.nodeid, key
        out.append(v)
    return out
