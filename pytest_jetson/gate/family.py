"""Session-level error control: the family of relative comparisons one session makes.

A gate run on unchanged code makes hundreds of comparisons; a per-comparison false-alarm rate of
0.5% would fail most runs. The session instead controls the chance that *any* unchanged
comparison fails, at ``FAMILY_ALPHA`` (1%), by Bonferroni over the family counted before
measuring: each comparison gets ``alpha = FAMILY_ALPHA / n`` (halved when an inconclusive
comparison fails the run, so that both ways an unchanged comparison can fail share the budget).

Why Bonferroni and not Holm or Benjamini-Hochberg: a test's outcome is reported when the test
ends, before the rest of the session has run, so a step-down procedure that needs every p-value at
once cannot decide it; Bonferroni decides each comparison alone and is what Holm reduces to for
the first rejection. Under the complete null (an unchanged suite) the false discovery rate that BH
controls *is* the family-wise rate, so nothing is lost where the promise matters; with a real
regression, its power at twice the tolerance is set by the sequential design, not by the
procedure. ``holm`` and ``benjamini_hochberg`` adjust a finished session's p-values for reports.

The family is counted at collection: one comparison per relative bound of each collected test
that applies to the session's device and backend (``family_size``; a bound limited to others is
never compared here, ``gate.scope``). A test that records several measurements makes more comparisons than counted;
``Family.overrun`` says by how much the guarantee weakens (to ``FAMILY_ALPHA * made / planned``).
"""

import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from ..metrics import METRICS
from .scope import applies
from .sequential import DEFAULT_BETA, DEFAULT_BUDGET, Design

FAMILY_ALPHA = 0.01


def per_comparison_alpha(n: int, family_alpha: float = FAMILY_ALPHA,
                         inconclusive_fails: bool = True) -> float:
    """The one-sided level of each of ``n`` comparisons so that an unchanged session fails with
    probability at most ``family_alpha`` (``inconclusive_fails``: --jetson-inconclusive=fail)."""
    if not 0 < family_alpha < 1:
        raise ValueError(f"family_alpha={family_alpha!r} must lie in (0, 1)")
    n = max(int(n), 1)
    return family_alpha / (2 * n if inconclusive_fails else n)


def design_for(n: int, family_alpha: float = FAMILY_ALPHA, beta: float = DEFAULT_BETA,
               budget: float = DEFAULT_BUDGET, inconclusive_fails: bool = True) -> Design:
    """The sequential design of each comparison of a family of ``n``."""
    return Design(alpha=per_comparison_alpha(n, family_alpha, inconclusive_fails), beta=beta,
                  budget=budget)


def confidence_for(n: int, family_alpha: float = FAMILY_ALPHA, inconclusive_fails: bool = True) -> float:
    """The ``confidence`` to pass to ``checks.check_relative`` (two-sided, so its one-sided level
    is (1 - confidence) / 2) for one comparison of a family of ``n``."""
    return 1.0 - 2.0 * per_comparison_alpha(n, family_alpha, inconclusive_fails)


def family_size(bounds_per_test: Iterable[Sequence[object]], device: Optional[str] = None,
                backend: Optional[str] = None) -> int:
    """The comparisons a session on ``device`` with ``backend`` will make: one per relative bound
    of each collected test that applies there (None: any device, any backend)."""
    return sum(sum(1 for b in bounds if getattr(b, "relative", False) and applies(b, device, backend))
               for bounds in bounds_per_test)


@dataclass
class Family:
    """The family of one session: ``planned`` (counted at collection) and ``made`` so far."""

    planned: int
    family_alpha: float = FAMILY_ALPHA
    inconclusive_fails: bool = True
    budget: float = DEFAULT_BUDGET
    beta: float = DEFAULT_BETA
    made: int = 0

    def design(self) -> Design:
        return design_for(self.planned, self.family_alpha, self.beta, self.budget, self.inconclusive_fails)

    def confidence(self) -> float:
        return confidence_for(self.planned, self.family_alpha, self.inconclusive_fails)

    def count(self, k: int = 1) -> None:
        self.made += int(k)

    @property
    def overrun(self) -> Optional[str]:
        """A note when the session made more comparisons than it planned (None otherwise)."""
        if self.made <= self.planned:
            return None
        rate = self.family_alpha * self.made / max(self.planned, 1)
        return (f"this session made {self.made} relative comparisons, more than the {self.planned} "
                f"counted at collection (tests that record several measurements): the chance that "
                f"unchanged code fails the run is at most {rate:.2%} instead of {self.family_alpha:.2%}")


# -- reports ----------------------------------------------------------------------------------------
def holm(pvalues: Sequence[float]) -> List[float]:
    """Holm's step-down adjusted p-values (family-wise error), in the input order."""
    n = len(pvalues)
    order = sorted(range(n), key=lambda i: pvalues[i])
    out = [0.0] * n
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (n - rank) * pvalues[i]))
        out[i] = running
    return out


def benjamini_hochberg(pvalues: Sequence[float], tests: Optional[int] = None) -> List[float]:
    """Benjamini-Hochberg adjusted p-values (false discovery rate), in the input order, among
    ``tests`` hypotheses (default: as many as p-values; more when only the smallest were kept)."""
    n = len(pvalues)
    m = max(tests or 0, n)
    order = sorted(range(n), key=lambda i: pvalues[i], reverse=True)
    out = [0.0] * n
    running = 1.0
    for k, i in enumerate(order):
        rank = n - k
        running = min(running, pvalues[i] * m / rank)
        out[i] = min(1.0, running)
    return out


def excess_spread(comparisons: Iterable[Tuple[str, float, float]], floors: Optional[Dict[str, float]] = None
                  ) -> Dict[str, Tuple[float, int]]:
    """The run-to-run spread a session's comparisons show, per metric: {metric: (sigma_b, n)}.

    ``comparisons``: (metric, d, within_se) with ``d`` the log worsening and ``within_se`` the
    within-run part of its error (both runs). For unchanged code d ~ N(0, within^2 + 2 sigma_b^2);
    sigma_b is solved so that the median of |d| / sqrt(within^2 + 2 sigma_b^2) is the normal's
    0.6745 (a median, so that a few real changes do not inflate it). Compared with the floor the
    gate assumed (``METRICS[m].run_to_run`` or ``floors``), it tells a session whether the board is
    noisier than the gate was told."""
    by: Dict[str, List[Tuple[float, float]]] = {}
    for metric, d, w in comparisons:
        if math.isfinite(d) and math.isfinite(w):
            by.setdefault(metric, []).append((abs(d), w))
    out: Dict[str, Tuple[float, int]] = {}
    for metric, rows in by.items():
        if len(rows) < 5:
            continue

        def med(s: float, rows=rows) -> float:
            r = sorted(a / math.sqrt(w * w + 2 * s * s) if (w > 0 or s > 0) else math.inf for a, w in rows)
            return r[len(r) // 2]

        if med(0.0) <= 0.6745:
            out[metric] = (0.0, len(rows))
            continue
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if med(mid) > 0.6745:
                lo = mid
            else:
                hi = mid
        out[metric] = (0.5 * (lo + hi), len(rows))
    return out


def noisier_than_assumed(spread: Dict[str, Tuple[float, int]], floors: Optional[Dict[str, float]] = None,
                         factor: float = 1.5) -> List[str]:
    """Lines for a session summary: metrics whose measured run-to-run spread exceeds the assumed
    floor by ``factor`` (the gate then false-alarms more often than it promises)."""
    lines = []
    for metric, (sigma, n) in sorted(spread.items()):
        floor = (floors or {}).get(metric, METRICS[metric].run_to_run)
        if sigma > factor * floor:
            lines.append(f"{metric}: run-to-run spread on this board looks like {sigma:.2%} over {n} "
                         f"comparisons, above the {floor:.2%} the gate assumed; false alarms are "
                         f"likelier than promised: record baselines from several runs or raise the floor")
    return lines

