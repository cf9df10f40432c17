"""The relative decision of one metric: a group-sequential test that measures more, not guesses.

**What is compared.** ``d``, the worsening of the metric in log space (log of current / baseline,
signed so that positive is worse), against two hypotheses: *unchanged* (d = 0) and *regressed by
twice the tolerance* (d = ``theta1``, the log worsening of a change of 2 x tolerance). The
tolerance ``tau`` itself lies between them: the gate promises nothing about a change of exactly
the tolerance (the indifference zone of a sequential probability ratio test), and everything
about the two ends.

**Its error.** ``S``, the standard error of ``d``, has three parts: the current run's within-run
error (batch means, ``gate.stats``), the baseline's, and the spread *between* runs (another boot,
another thermal state), which no within-run estimator sees. The between-run part is
``sigma_b^2 (1 + 1/m)``: one run-to-run draw in the current run and the mean of ``m`` in a
baseline pooled from ``m`` recordings. ``sigma_b`` is the baseline's own estimate when it pooled
several recordings (shrunk towards the floor: ``PRIOR_RUNS`` runs' worth of the floor), else the
metric's ``run_to_run`` floor from ``pytest_jetson.metrics``, else what the caller passes.

**The rule at look k** (k = 1 .. K; a look is the comparison after the measurement has been
extended to a fraction ``t`` of its budget, on the same engine), with boundaries ``a_k``, ``b_k``:

* ``regression``: ``d > tau`` and ``d > a_k S``: past the tolerance and significantly worse than
  unchanged;
* ``within_tolerance``: ``d <= theta1 - b_k S``: significantly better than a regression of twice
  the tolerance (``improvement`` when also ``d < -tau`` and ``d < -a_k S``);
* otherwise ``continue`` (measure another step), or, at the last look, ``inconclusive``.

**Error rates under optional stopping.** Nested extensions of one run give the canonical joint
distribution of group-sequential tests (Cov(d_j, d_k) = S_k^2 for j < k: the baseline and the
between-run parts are common to every look, the within-run part is a nested mean), with
information I_k = 1 / S_k^2. The boundaries spend ``alpha`` (the chance of ``regression`` when
unchanged) and ``beta`` (the chance of ``within_tolerance`` when regressed by twice the
tolerance) over the looks with Hwang-Shih-DeCani spending functions of the information fraction
t_k = I_k / I_K (I_K projected to the budget: the within-run error shrinks as 1 / duration; t
rounded to 0.01), each
boundary computed exactly by recursive numerical integration (Armitage, McPherson and Rowe; the
futility boundary non-binding, so alpha holds whatever the other side does), then turned into a
Student-t quantile at the look's degrees of freedom (Welch-Satterthwaite). Where extending cannot
add information (the baseline's or the between-run error dominates), t_1 is near 1 and the first
look already spends nearly everything: extensions cost no error rate.

**When the budget runs out** undecided, the outcome is ``inconclusive``: the data could not tell
unchanged from a regression of twice the tolerance at the stated rates. If ``S_K <= theta1 /
(a_K + b_K)`` ("the budget resolves this comparison"), that happens to an unchanged metric with
probability at most ``alpha`` (then ``theta1 - b_K S_K >= a_K S_K``); otherwise it is the expected
outcome, and ``Step.min_tolerance`` says which tolerance this noise could decide. So with
``--jetson-inconclusive=fail``, an unchanged comparison the budget resolves fails with probability
at most 2 alpha, and ``gate.family`` sets alpha to keep a whole session's chance below its level.
"""

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ..metrics import METRICS
from .distributions import norm_isf, norm_sf, t_isf, t_sf
from .stats import MetricStats

#: The floor acts as this many runs' worth of evidence when a baseline's own between-run estimate
#: is pooled with it (a scaled inverse chi-square prior).
PRIOR_RUNS = 4
DEFAULT_ALPHA = 0.005
DEFAULT_BETA = 0.05
DEFAULT_BUDGET = 3.0
DEFAULT_STEP = 0.5
#: Hwang-Shih-DeCani spending parameters: -4 spends alpha late (O'Brien-Fleming-like, so early
#: looks reject only on overwhelming evidence), -2 spends beta a little earlier (so clear passes
#: stop early and the measurement is extended only where it is needed).
ALPHA_GAMMA = -4.0
BETA_GAMMA = -2.0
#: Points of the numerical integration grid per look.
GRID = 241

DECISIONS = ("within_tolerance", "improvement", "regression", "continue", "inconclusive")


# -- the design -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Design:
    """How one comparison is decided.

    ``alpha``: the chance that an unchanged metric is called a ``regression`` (one-sided, over all
    looks); ``beta``: the chance that a metric worse by twice the tolerance is called
    ``within_tolerance``; ``budget``: the longest measurement, in requested durations (3.0: up
    to three times what the test asked for); ``step``: each extension, in requested durations."""

    alpha: float = DEFAULT_ALPHA
    beta: float = DEFAULT_BETA
    budget: float = DEFAULT_BUDGET
    step: float = DEFAULT_STEP
    alpha_gamma: float = ALPHA_GAMMA
    beta_gamma: float = BETA_GAMMA

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 0.5 or not 0 < self.beta < 0.5:
            raise ValueError(f"alpha={self.alpha!r} and beta={self.beta!r} must lie in (0, 0.5)")
        if self.budget < 1 or self.step <= 0:
            raise ValueError(f"budget={self.budget!r} must be >= 1 and step={self.step!r} > 0")

    def looks(self) -> List[float]:
        """The measured durations at which the comparison looks, in requested durations:
        1, 1 + step, ... up to the budget (the budget itself always the last)."""
        out, x = [], 1.0
        while x < self.budget - 1e-9:
            out.append(round(x, 9))
            x += self.step
        out.append(float(self.budget))
        return out


def spent(total: float, t: float, gamma: float) -> float:
    """Hwang-Shih-DeCani spending function: the share of ``total`` spent by information fraction t."""
    t = min(max(t, 0.0), 1.0)
    if t >= 1.0:
        return total
    if abs(gamma) < 1e-12:
        return total * t
    return total * (1.0 - math.exp(-gamma * t)) / (1.0 - math.exp(-gamma))


# -- group-sequential boundaries --------------------------------------------------------------------
def _erfc(x: np.ndarray) -> np.ndarray:
    """Vectorised complementary error function (Numerical Recipes' erfcc, relative error < 1.2e-7
    everywhere: enough for boundaries whose tail probabilities are 1e-7 and smaller)."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = (-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277)))))))))
    ans = t * np.exp(poly)
    return np.where(x >= 0, ans, 2.0 - ans)


def _q(x: np.ndarray) -> np.ndarray:
    return 0.5 * _erfc(x / math.sqrt(2.0))


def _simpson(n: int) -> np.ndarray:
    w = np.ones(n)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return w / 3.0


@lru_cache(maxsize=4096)
def upper_boundaries(t: Tuple[float, ...], increments: Tuple[float, ...]) -> Tuple[float, ...]:
    """z boundaries c_1..c_k of a one-sided group-sequential test at information fractions ``t``
    (increasing, in (0, 1]) that cross first at look j with probability ``increments[j]`` under the
    null: P(Z_1 < c_1, ..., Z_{j-1} < c_{j-1}, Z_j >= c_j) = increments[j]. Z_j = B(t_j)/sqrt(t_j)
    for a standard Brownian motion B (the canonical joint distribution). An increment of 0 is an
    infinite boundary (that look cannot reject)."""
    out: List[float] = []
    grid = dens = None  # the sub-density of B(t_{j}) on the continuation region
    prev_t = 0.0
    for j, (tj, inc) in enumerate(zip(t, increments)):
        sd = math.sqrt(tj)
        if j == 0:
            c = norm_isf(inc) if inc > 0 else math.inf
            hi = c * sd if math.isfinite(c) else 10.0 * sd
            grid = np.linspace(-10.0 * sd, hi, GRID)
            dens = np.exp(-0.5 * (grid / sd) ** 2) / (sd * math.sqrt(2 * math.pi))
        else:
            dt = max(tj - prev_t, 1e-12)
            sdd = math.sqrt(dt)
            h = grid[1] - grid[0]
            mass = dens * _simpson(grid.size) * h

            if inc <= 0:
                c = math.inf
            else:
                c = _solve(mass, grid, sd, sdd, inc)
            top = c * sd if math.isfinite(c) else float(grid[-1]) + 10.0 * sdd
            new = np.linspace(float(grid[0]) - 10.0 * sdd, top, GRID)
            kernel = np.exp(-0.5 * ((new[:, None] - grid[None, :]) / sdd) ** 2) / (sdd * math.sqrt(2 * math.pi))
            dens = kernel @ mass
            grid = new
        out.append(c)
        prev_t = tj
    return tuple(out)


def _solve(mass: np.ndarray, grid: np.ndarray, sd: float, sdd: float, target: float) -> float:
    """The boundary c (z scale) at which the mass ``mass`` on ``grid`` crosses with probability
    ``target``: two vectorised passes over candidate boundaries (coarse, then fine), then linear
    interpolation in log probability."""
    lo, hi = -12.0, 40.0
    for _ in range(3):
        cand = np.linspace(lo, hi, 49)
        cross = _q((cand[:, None] * sd - grid[None, :]) / sdd) @ mass
        above = np.nonzero(cross > target)[0]
        if not above.size:
            return lo
        i = int(above[-1])
        if i == cand.size - 1:
            return float(cand[-1])
        lo, hi = float(cand[i]), float(cand[i + 1])
        p_lo, p_hi = float(cross[i]), float(cross[i + 1])
    if p_hi <= 0 or p_lo <= 0:
        return 0.5 * (lo + hi)
    w = (math.log(p_lo) - math.log(target)) / (math.log(p_lo) - math.log(p_hi))
    return lo + min(max(w, 0.0), 1.0) * (hi - lo)


def _fractions(t: Sequence[float]) -> Tuple[float, ...]:
    """Information fractions made strictly increasing and at most 1, rounded for the cache."""
    out: List[float] = []
    for x in t:
        x = 1.0 if x >= 1.0 else min(max(round(float(x), 2), 0.01), 0.99)
        if out and x <= out[-1]:
            x = min(out[-1] + 0.01, 1.0)
        out.append(x)
    return tuple(out)


def boundaries(t: Sequence[float], design: Design) -> Tuple[List[float], List[float]]:
    """(a, b): the z boundaries of the efficacy side (regression, spending ``alpha``) and of the
    futility side (within the tolerance, spending ``beta``) at the looks with information fractions
    ``t`` so far (the last one 1.0 at the final look)."""
    tt = _fractions(t)
    a_inc, b_inc, pa, pb = [], [], 0.0, 0.0
    for x in tt:
        ca, cb = spent(design.alpha, x, design.alpha_gamma), spent(design.beta, x, design.beta_gamma)
        a_inc.append(float(f"{max(ca - pa, 0.0):.6g}"))
        b_inc.append(float(f"{max(cb - pb, 0.0):.6g}"))
        pa, pb = max(pa, ca), max(pb, cb)
    return list(upper_boundaries(tt, tuple(a_inc))), list(upper_boundaries(tt, tuple(b_inc)))


# -- one comparison ---------------------------------------------------------------------------------
def log_worse(metric: str, fraction: float) -> float:
    """A change of ``fraction`` in the metric's bad direction, as a log worsening: 5% on latency
    is log(1.05), 5% on throughput is -log(0.95)."""
    if METRICS[metric].worse == "higher":
        return math.log1p(fraction)
    return -math.log1p(-fraction) if fraction < 1 else math.inf


def worse_fraction(metric: str, log_bad: float) -> float:
    """The inverse of ``log_worse``: a log worsening as the fraction by which the metric got worse."""
    if METRICS[metric].worse == "higher":
        return math.expm1(log_bad)
    return -math.expm1(-log_bad)


def run_to_run(metric: str, baseline: Optional[MetricStats] = None,
               floor: Optional[float] = None) -> Tuple[float, int]:
    """(sigma_b, m): the standard deviation of log(metric) between runs on one board, and how many
    runs the baseline pooled. ``floor`` overrides the metric's documented floor; a baseline pooled
    from several recordings shrinks its own estimate towards the floor (``PRIOR_RUNS`` runs)."""
    f = METRICS[metric].run_to_run if floor is None else float(floor)
    m = int(getattr(baseline, "runs", 1) or 1) if baseline is not None else 1
    own = getattr(baseline, "between", None) if baseline is not None else None
    if m > 1 and own is not None and math.isfinite(own):
        return math.sqrt((PRIOR_RUNS * f * f + (m - 1) * own * own) / (PRIOR_RUNS + m - 1)), m
    return f, m


@dataclass
class Evidence:
    """The comparison at one look: ``d`` the log worsening, ``se`` its standard error (within both
    runs and between runs), ``df`` its degrees of freedom, ``floor_se`` the part no longer
    measurement removes (the baseline's and the between-run error), ``within_se`` the current
    run's within-run error and ``baseline_se`` the baseline's."""

    d: float
    se: float
    df: Optional[float]
    floor_se: float
    within_se: float
    baseline_se: float = 0.0

    @classmethod
    def of(cls, metric: str, current: MetricStats, baseline: MetricStats,
           floor: Optional[float] = None) -> "Evidence":
        if current.value <= 0 or baseline.value <= 0:
            raise ValueError(f"{metric}: cannot compare non-positive values "
                             f"({current.value} now, {baseline.value} baseline)")
        sign = 1.0 if METRICS[metric].worse == "higher" else -1.0
        d = sign * math.log(current.value / baseline.value)
        sb, m = run_to_run(metric, baseline, floor)
        vb = sb * sb * (1.0 + 1.0 / m)
        vc = (current.se_log or 0.0) ** 2
        v0 = (baseline.se_log or 0.0) ** 2
        var = vc + v0 + vb
        # Welch-Satterthwaite; the floor counts as known (infinite degrees of freedom)
        den = 0.0
        for v, df in ((vc, current.df), (v0, baseline.df)):
            if v > 0:
                den += v * v / max(df or 1e9, 1.0)
        dof = var * var / den if den > 0 else None
        return cls(d=d, se=math.sqrt(var), df=dof, floor_se=math.sqrt(v0 + vb), within_se=math.sqrt(vc),
                   baseline_se=math.sqrt(v0))


@dataclass
class Step:
    """What one look concluded. ``decision`` is one of ``DECISIONS``; ``reason`` the verdict reason
    it maps to (``continue`` has none). Numbers: ``worse`` (the change as a fraction, positive is
    worse), ``worse_ci`` (its interval at the look's efficacy level), ``p_value`` (two-sided, of no
    change), ``se``/``df`` of the log worsening, the boundaries ``a``/``b`` (t scale), ``look`` (1..),
    ``fraction`` (of the budget measured), ``resolvable`` (whether the budget can decide this noise)
    and ``min_tolerance`` (the smallest tolerance this noise, measured to the budget, could decide).
    ``d`` and ``within_se`` (the log worsening and the within-run part of its error) feed
    ``family.excess_spread`` at the end of a session."""

    decision: str
    worse: float
    worse_ci: Tuple[float, float]
    p_value: float
    se: float
    df: Optional[float]
    a: float
    b: float
    look: int
    fraction: float
    resolvable: bool
    min_tolerance: float
    d: float = 0.0
    within_se: float = 0.0

    @property
    def decided(self) -> bool:
        return self.decision not in ("continue",)

    @property
    def reason(self) -> Optional[str]:
        return None if self.decision == "continue" else self.decision


def _to_t(z: float, df: Optional[float]) -> float:
    """A z boundary as the t quantile with the same tail probability."""
    if not math.isfinite(z):
        return z
    if df is None or df > 1e5:
        return z
    p = norm_sf(z)
    if not 0.0 < p < 0.5:
        return z
    return t_isf(p, df)


def decide(metric: str, ev: Evidence, tolerance: float, a: float, b: float, final: bool) -> str:
    """The rule at one look (boundaries ``a``, ``b`` on the t scale)."""
    tau = log_worse(metric, tolerance)
    theta1 = log_worse(metric, min(2.0 * tolerance, 0.999))
    d, s = ev.d, ev.se
    if d > tau and d > a * s:
        return "regression"
    if d <= theta1 - b * s:
        if d < -tau and d < -a * s:
            return "improvement"
        return "within_tolerance"
    return "inconclusive" if final else "continue"


def min_tolerance(metric: str, se: float, a: float, b: float) -> float:
    """The smallest tolerance whose ends (unchanged, twice the tolerance) a comparison with
    standard error ``se`` separates at boundaries ``a``, ``b``: theta1 >= (a + b) se."""
    need = (a + b) * se
    if METRICS[metric].worse == "higher":
        return math.expm1(need) / 2.0
    return -math.expm1(-need) / 2.0


@dataclass
class Sequential:
    """One relative comparison decided look by look on one growing measurement.

    ``look(current, baseline, measured)``: ``measured`` is the duration measured so far in
    requested durations (1.0 after the first window, ``design.budget`` at the end). A decided
    comparison keeps its decision: later looks return it unchanged (re-deciding would spend error
    rate twice)."""

    metric: str
    tolerance: float
    design: Design = field(default_factory=Design)
    floor: Optional[float] = None
    history: List[float] = field(default_factory=list)
    result: Optional[Step] = None

    def look(self, current: MetricStats, baseline: MetricStats, measured: float) -> Step:
        if self.result is not None and self.result.decided:
            return self.result
        ev = Evidence.of(self.metric, current, baseline, self.floor)
        budget = self.design.budget
        final = measured >= budget - 1e-9
        # the within-run variance shrinks as 1/duration: project it to the budget
        proj_var = ev.within_se ** 2 * min(measured, budget) / budget + ev.floor_se ** 2
        info_k, info_max = 1.0 / max(ev.se ** 2, 1e-300), 1.0 / max(proj_var, 1e-300)
        frac = 1.0 if final else min(info_k / info_max, 0.9999)
        if self.history and frac <= self.history[-1]:
            frac = min(self.history[-1] + 1e-4, 1.0 if final else 0.9999)
        self.history.append(frac)
        az, bz = boundaries(self.history, self.design)
        a, b = _to_t(az[-1], ev.df), _to_t(bz[-1], ev.df)
        decision = decide(self.metric, ev, self.tolerance, a, b, final)
        # Can the budget resolve it? The final boundaries, approximated by one look's (the
        # spending functions leave most of alpha and beta to the end): a diagnostic only.
        if final:
            a_end, b_end = a, b
        else:
            a_end = _to_t(norm_isf(self.design.alpha), ev.df)
            b_end = _to_t(norm_isf(self.design.beta), ev.df)
        se_end = math.sqrt(proj_var)
        theta1 = log_worse(self.metric, min(2.0 * self.tolerance, 0.999))
        resolvable = (a_end + b_end) * se_end <= theta1
        step = _step(self.metric, ev, decision, a, b, len(self.history), measured / budget,
                     resolvable, min_tolerance(self.metric, se_end, a_end, b_end))
        self.result = step
        return step


def _step(metric: str, ev: Evidence, decision: str, a: float, b: float, look: int, fraction: float,
          resolvable: bool, min_tol: float) -> Step:
    z = ev.d / ev.se if ev.se > 0 else (math.inf if ev.d else 0.0)
    p = 2.0 * t_sf(abs(z), ev.df) if math.isfinite(z) else 0.0
    lo, hi = ev.d - a * ev.se, ev.d + a * ev.se
    return Step(decision=decision, worse=worse_fraction(metric, ev.d),
                worse_ci=(worse_fraction(metric, lo), worse_fraction(metric, hi)),
                p_value=min(p, 1.0), se=ev.se, df=ev.df, a=a, b=b, look=look, fraction=fraction,
                resolvable=resolvable, min_tolerance=min_tol, d=ev.d,
                within_se=math.hypot(ev.within_se, ev.baseline_se))


def decide_once(metric: str, current: MetricStats, baseline: MetricStats, tolerance: float,
                alpha: float = DEFAULT_ALPHA, beta: float = DEFAULT_BETA,
                floor: Optional[float] = None) -> Step:
    """A comparison with no extension (one look, the final one): regression when past the
    tolerance and significant at one-sided level ``alpha``; within the tolerance when a regression
    of twice the tolerance is excluded at level ``beta``; else inconclusive."""
    ev = Evidence.of(metric, current, baseline, floor)
    a, b = t_isf(alpha, ev.df), t_isf(beta, ev.df)
    decision = decide(metric, ev, tolerance, a, b, final=True)
    theta1 = log_worse(metric, min(2.0 * tolerance, 0.999))
    return _step(metric, ev, decision, a, b, 1, 1.0, (a + b) * ev.se <= theta1,
                 min_tolerance(metric, ev.se, a, b))

