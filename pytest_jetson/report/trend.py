"""Trends over a metric's history of runs: steps (change points) and slow drifts.

Plain Python (no numpy, no scipy): histories are short, one value per run.

* **Change points**: binary segmentation with a two-sample test. On the log of the values, every
  split leaving at least ``min_size`` runs on each side is tested with Student's two-sample
  t-test (pooled variance: the run-to-run scatter is the same on both sides of a step; Welch's
  test is liberal with 3 runs on a side, 3.5% false alarms at a nominal 1%); the split with the
  smallest p-value is a change point when that p-value, Bonferroni-corrected for the number of
  splits tried, is under ``alpha`` and the step is at least ``min_change``; then each side is
  searched the same way.
* **Across a suite**, ``benjamini_hochberg`` keeps the false discoveries among hundreds of
  metrics at the level asked for (``report.run_history`` applies it to the steps and the drifts).
* **Drift**: the Mann-Kendall trend test (variance corrected for ties) with the Theil-Sen slope
  and Sen's confidence interval for it, on the log values, so a slope reads as a relative change
  per run. A drift is reported when the test is significant at ``alpha``, the drift over the
  whole history is at least ``min_change``, and a straight line explains the runs better than
  the steps found (lower BIC), so a single step is not also called a drift.
"""

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import List, Optional, Sequence, Tuple

from ..gate import family
from ..gate.distributions import t_sf


def t_sf2(t: float, df: float) -> float:
    """The two-sided p-value of Student's t with ``df`` degrees of freedom (``gate.stats``'s)."""
    return min(1.0, 2.0 * t_sf(abs(t), df))


def student(a: Sequence[float], b: Sequence[float]) -> Tuple[float, float]:
    """Student's two-sample t-test with pooled variance: (t, two-sided p). Two constant samples
    differ with p = 0 when their values do, and p = 1 when they do not."""
    na, nb = len(a), len(b)
    ma, mb = sum(a) / na, sum(b) / nb
    ss = sum((x - ma) ** 2 for x in a) + sum((x - mb) ** 2 for x in b)
    df = na + nb - 2
    diff = mb - ma
    se2 = (ss / df) * (1.0 / na + 1.0 / nb) if df > 0 else 0.0
    if se2 <= 1e-24:
        return (math.copysign(math.inf, diff), 0.0) if abs(diff) > 1e-12 else (0.0, 1.0)
    t = diff / math.sqrt(se2)
    return t, t_sf2(t, df)


def benjamini_hochberg(pvalues: Sequence[float], q: float, tests: Optional[int] = None) -> List[bool]:
    """Which of ``pvalues`` are discoveries at false discovery rate ``q``, among ``tests``
    hypotheses (default: as many as p-values; more when only the smallest were kept)."""
    # an adjusted p-value at most q is the step-up procedure's discovery; the margin keeps p = q r/m
    # a discovery whichever way the product rounds
    return [p <= q * (1.0 + 1e-12) for p in family.benjamini_hochberg(pvalues, tests)]


# -- change points -------------------------------------------------------------------------------
@dataclass
class Step:
    """A change point: the first run of the new level, the relative change, its p-value."""

    at: int
    change: float
    p: float


def change_points(values: Sequence[float], alpha: float = 0.01, min_size: int = 3,
                  min_change: float = 0.01) -> List[Step]:
    """Steps in ``values`` (positive) found by binary segmentation with Student's t-test on their
    logs, Bonferroni-corrected for the splits tried in each segment."""
    logs = [math.log(v) for v in values]
    centre = sum(logs) / len(logs) if logs else 0.0
    y = [v - centre for v in logs]  # centred: the running sums of squares lose no digits
    # running sums make each split's test O(1): a history of 1,000 runs costs 1,000 splits, not 10^6
    s1, s2 = [0.0], [0.0]
    for v in y:
        s1.append(s1[-1] + v)
        s2.append(s2[-1] + v * v)
    found: List[Step] = []

    def split_test(lo: int, k: int, hi: int) -> Tuple[float, float]:
        """(two-sided p of Student's test of y[lo:k] against y[k:hi], difference of the means)."""
        na, nb = k - lo, hi - k
        sa, sb = s1[k] - s1[lo], s1[hi] - s1[k]
        ma, mb = sa / na, sb / nb
        ss = max(0.0, (s2[k] - s2[lo] - sa * ma) + (s2[hi] - s2[k] - sb * mb))
        df = na + nb - 2
        diff = mb - ma
        se2 = (ss / df) * (1.0 / na + 1.0 / nb) if df > 0 else 0.0
        if se2 <= 1e-24:
            return (0.0 if abs(diff) > 1e-12 else 1.0), diff
        return t_sf2(diff / math.sqrt(se2), df), diff

    def search(lo: int, hi: int) -> None:
        n = hi - lo
        splits = range(lo + min_size, hi - min_size + 1)
        if n < 2 * min_size or not splits:
            return
        best: Optional[Tuple[float, int, float]] = None
        for k in splits:
            na, nb = k - lo, hi - k
            diff = (s1[hi] - s1[k]) / nb - (s1[k] - s1[lo]) / na
            if abs(math.expm1(diff)) < min_change:
                continue
            p, diff = split_test(lo, k, hi)
            if best is None or p < best[0] or (p == best[0] and abs(diff) > abs(best[2])):
                best = (p, k, diff)
        if best is None or min(1.0, best[0] * len(splits)) >= alpha:
            return
        p, k, diff = best
        found.append(Step(at=k, change=math.expm1(diff), p=min(1.0, p * len(splits))))
        search(lo, k)
        search(k, hi)

    search(0, len(y))
    return sorted(found, key=lambda s: s.at)


# -- drift ---------------------------------------------------------------------------------------
@dataclass
class Drift:
    """A monotonic trend: Sen's slope of the log values per run (as a relative change per run),
    its confidence interval, Kendall's tau and the Mann-Kendall p-value."""

    slope: float
    ci: Tuple[float, float]
    tau: float
    p: float
    runs: int

    @property
    def total(self) -> float:
        """The relative change over the whole history the slope implies."""
        return math.expm1(self.slope * (self.runs - 1))


def _concordance(y: Sequence[float]) -> int:
    """The Mann-Kendall S: over the pairs i < j, how many rise (y[j] > y[i]) less how many fall,
    counted with a Fenwick tree over the values' ranks in O(n log n) (a history of 1,000 runs has
    half a million pairs)."""
    ranks = {v: r for r, v in enumerate(sorted(set(y)), 1)}
    size = len(ranks)
    tree = [0] * (size + 1)

    def below(r: int) -> int:  # how many earlier values have a rank <= r
        total = 0
        while r > 0:
            total += tree[r]
            r -= r & -r
        return total

    s = 0
    for seen, v in enumerate(y):
        r = ranks[v]
        lower, not_higher = below(r - 1), below(r)
        s += lower - (seen - not_higher)
        while r <= size:
            tree[r] += 1
            r += r & -r
    return s


def mann_kendall(y: Sequence[float]) -> Tuple[float, float, float, float]:
    """(S, variance of S with the ties correction, tau, two-sided p)."""
    n = len(y)
    s = float(_concordance(y))
    counts: dict = {}
    for v in y:
        counts[v] = counts.get(v, 0) + 1
    ties = sum(t * (t - 1) * (2 * t + 5) for t in counts.values() if t > 1)
    var = (n * (n - 1) * (2 * n + 5) - ties) / 18.0
    pairs = n * (n - 1) / 2
    tau = s / pairs if pairs else 0.0
    if var <= 0:
        return s, var, tau, 1.0
    z = (s - math.copysign(1.0, s)) / math.sqrt(var) if s else 0.0
    return s, var, tau, math.erfc(abs(z) / math.sqrt(2.0))


def _at_rank(sorted_values: Sequence[float], rank: float) -> float:
    """The value at a 1-based fractional rank (linear between neighbours, clamped)."""
    r = min(max(rank, 1.0), float(len(sorted_values)))
    lo = int(math.floor(r))
    frac = r - lo
    if lo >= len(sorted_values):
        return sorted_values[-1]
    return sorted_values[lo - 1] * (1 - frac) + sorted_values[lo] * frac


def theil_sen(y: Sequence[float], confidence: float = 0.95) -> Tuple[float, Tuple[float, float], float]:
    """(median of the pairwise slopes, Sen's confidence interval for it, intercept)."""
    n = len(y)
    slopes = sorted((y[j] - y[i]) / (j - i) for i in range(n - 1) for j in range(i + 1, n))
    m = len(slopes)
    slope = _at_rank(slopes, (m + 1) / 2)
    _, var, _, _ = mann_kendall(y)
    c = NormalDist().inv_cdf(0.5 + confidence / 2) * math.sqrt(max(var, 0.0))
    ci = (_at_rank(slopes, (m - c) / 2), _at_rank(slopes, (m + c) / 2 + 1))
    intercept = sorted(v - slope * i for i, v in enumerate(y))[n // 2] if n % 2 else \
        sum(sorted(v - slope * i for i, v in enumerate(y))[n // 2 - 1:n // 2 + 1]) / 2
    return slope, ci, intercept


def _bic(rss: float, n: int, params: int) -> float:
    return n * math.log(max(rss, 1e-300) / n) + params * math.log(n)


@dataclass
class Trend:
    steps: List[Step] = field(default_factory=list)
    drift: Optional[Drift] = None


def analyse(values: Sequence[float], alpha: float = 0.01, drift_alpha: float = 0.05,
            min_change: float = 0.01, min_size: int = 3, min_drift_runs: int = 5,
            confidence: float = 0.95) -> Trend:
    """The steps and the drift of one metric's history (values > 0, one per run, oldest first)."""
    vals = [float(v) for v in values]
    if len(vals) < 2 or any(v <= 0 or not math.isfinite(v) for v in vals):
        return Trend()
    steps = change_points(vals, alpha=alpha, min_size=min_size, min_change=min_change)
    out = Trend(steps=steps)
    n = len(vals)
    if n < min_drift_runs:
        return out
    y = [math.log(v) for v in vals]
    _, _, tau, p = mann_kendall(y)
    if p >= drift_alpha:
        return out
    slope, ci, intercept = theil_sen(y, confidence)
    drift = Drift(slope=slope, ci=ci, tau=tau, p=p, runs=n)
    if abs(drift.total) < min_change:
        return out
    rss_line = sum((v - (intercept + slope * i)) ** 2 for i, v in enumerate(y))
    bounds = [0] + [s.at for s in steps] + [n]
    rss_steps = 0.0
    for a, b in zip(bounds, bounds[1:]):
        mean = sum(y[a:b]) / (b - a)
        rss_steps += sum((v - mean) ** 2 for v in y[a:b])
    if steps and _bic(rss_steps, n, 2 * len(steps) + 1) <= _bic(rss_line, n, 2):
        return out  # the steps explain the runs: not a drift
    out.steps = []  # a ramp, not steps: binary segmentation splits a ramp where it crosses its mean
    out.drift = drift
    return out
