"""Statistics of one metric of one measurement, as the gate compares them and baselines store them.

The gate works on the log of a metric (ratios are what tolerances speak of) and needs, per side,
the metric's value and the standard error of its log. How that error is estimated:

* mean-like metrics (``latency_mean``, ``throughput`` (through the mean latency: throughput is
  batch / mean latency), ``per_process_throughput``): the standard error of the mean by *batch means* (the ordered samples cut into up to 30 contiguous batches),
  which stays honest when consecutive iterations are correlated (DVFS, thermal drift, a noisy
  neighbour), where the textbook sd/sqrt(n) is too small;
* quantiles (``latency_p50`` .. ``latency_p99``): the distribution-free order-statistic interval
  (the binomial spread of the rank of a quantile), widened by the same autocorrelation factor the
  batch means found for the mean; the spacing above a tail quantile is capped at ``OUTLIER_CAP``
  times the spacing below (one interrupt beyond the p99 of a short run must not make every p99
  undecidable), and its degrees of freedom are the order statistics it rests on, n * (1 - q);
* everything else (``memory``, ``power``, ``latency_max``, ...): no error estimate; the gate
  decides those on the values alone and says so.

A baseline keeps, per metric, these numbers plus a compact sample (at most ``COMPACT_POINTS``
quantile-preserving points) so later runs, reports and rank tests can use the distribution
without storing every iteration. numpy only (scipy is not a dependency).
"""

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..metrics import METRICS

COMPACT_POINTS = 200
BATCHES = 30
MIN_SAMPLES_FOR_ERROR = 8
OUTLIER_CAP = 3.0



# -- normal and t quantiles without scipy ----------------------------------------------------------
def norm_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def norm_ppf(p: float) -> float:
    """Inverse of the standard normal CDF (Acklam's rational approximation, refined by Newton)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"probability {p} outside (0, 1)")
    a = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02,
         1.383577518672690e02, -3.066479806614716e01, 2.506628277459239e00)
    b = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02,
         6.680131188771972e01, -1.328068155288572e01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00,
         -2.549732539343734e00, 4.374664141464968e00, 2.938163982698783e00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    lo = 0.02425
    if p < lo:
        q = math.sqrt(-2 * math.log(p))
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    elif p > 1 - lo:
        q = math.sqrt(-2 * math.log(1 - p))
        x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    else:
        q = p - 0.5
        r = q * q
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / \
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    e = norm_cdf(x) - p
    u = e * math.sqrt(2 * math.pi) * math.exp(x * x / 2)
    return x - u / (1 + x * u / 2)


def t_ppf(p: float, df: Optional[float]) -> float:
    """Student-t quantile by the Cornish-Fisher expansion (good to ~1e-3 for df >= 5)."""
    z = norm_ppf(p)
    if df is None or df <= 0 or math.isinf(df):
        return z
    df = max(df, 3.0)
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
    return z + g1 / df + g2 / df ** 2 + g3 / df ** 3


# -- compact samples ----------------------------------------------------------------------------
def compact(samples: Sequence[float], points: int = COMPACT_POINTS) -> List[float]:
    """At most ``points`` values that keep the sample's quantiles: the sorted sample itself when
    small, else its quantiles at (i + 0.5) / points (midpoints, so both tails are represented)."""
    x = np.sort(np.asarray(samples, dtype=float))
    x = x[np.isfinite(x)]
    if x.size <= points:
        return [float(v) for v in x]
    probs = (np.arange(points) + 0.5) / points
    return [float(v) for v in np.quantile(x, probs)]


def quantile_of(sample: Sequence[float], q: float) -> float:
    """Quantile of a (possibly compact) sample, by linear interpolation on its midpoint grid."""
    x = np.sort(np.asarray(sample, dtype=float))
    if x.size == 1:
        return float(x[0])
    probs = (np.arange(x.size) + 0.5) / x.size
    return float(np.interp(q, probs, x))


@dataclass
class MetricStats:
    """One metric of one measurement. ``se_log``: standard error of log(value) (None when not
    estimable); ``df``: its degrees of freedom; ``ci``: the value's interval at ``confidence``."""

    value: float
    n: int = 1
    mean: Optional[float] = None
    median: Optional[float] = None
    stdev: Optional[float] = None
    se_log: Optional[float] = None
    df: Optional[float] = None
    ci: Optional[Tuple[float, float]] = None
    confidence: Optional[float] = None
    sample: List[float] = field(default_factory=list)

    def interval(self, confidence: float) -> Optional[Tuple[float, float]]:
        if self.se_log is None or self.value <= 0:
            return None
        k = t_ppf((1 + confidence) / 2, self.df) * self.se_log
        return (self.value * math.exp(-k), self.value * math.exp(k))

    def to_dict(self) -> Dict[str, Any]:
        return {
            "value": self.value, "n": self.n, "mean": self.mean, "median": self.median,
            "stdev": self.stdev, "se_log": self.se_log, "df": self.df,
            "ci": None if self.ci is None else [self.ci[0], self.ci[1]],
            "confidence": self.confidence, "sample": list(self.sample),
        }

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "MetricStats":
        ci = d.get("ci")
        return cls(
            value=float(d["value"]), n=int(d.get("n", 1)), mean=_opt(d.get("mean")),
            median=_opt(d.get("median")), stdev=_opt(d.get("stdev")), se_log=_opt(d.get("se_log")),
            df=_opt(d.get("df")), ci=None if ci is None else (float(ci[0]), float(ci[1])),
            confidence=_opt(d.get("confidence")),
            sample=[float(v) for v in d.get("sample", [])],
        )


def _opt(v: Any) -> Optional[float]:
    return None if v is None else float(v)


def _batch_means_se(x: np.ndarray) -> Tuple[float, float, float]:
    """(se of the mean by batch means, its degrees of freedom, inflation over the iid se)."""
    n = x.size
    sd = float(x.std(ddof=1))
    se_iid = sd / math.sqrt(n)
    k = min(BATCHES, n // 4)
    if k < 5:
        return se_iid, float(n - 1), 1.0
    size = n // k
    means = x[: k * size].reshape(k, size).mean(axis=1)
    se_bm = float(means.std(ddof=1)) / math.sqrt(k)
    # Never report less uncertainty than the iid formula: batch means of iid data scatter around it.
    se = max(se_bm, se_iid)
    inflation = se / se_iid if se_iid > 0 else 1.0
    return se, float(k - 1), inflation


def metric_stats(measurement: Any, metric: str, confidence: float = 0.99) -> Optional[MetricStats]:
    """The statistics of ``metric`` in ``measurement`` (None when it has no value)."""
    value = measurement.metric(metric)
    if value is None or not math.isfinite(value):
        return None
    samples = measurement.metric_samples(metric)
    x = np.asarray(samples if samples else [], dtype=float)
    x = x[np.isfinite(x)]
    st = MetricStats(value=float(value), n=int(x.size) if x.size else 1)
    if x.size:
        st.mean = float(x.mean())
        st.median = float(np.median(x))
        st.stdev = float(x.std(ddof=1)) if x.size > 1 else 0.0
        st.sample = compact(x)
    workers = getattr(measurement, "workers", None)
    if metric == "throughput" and value > 0 and workers:
        # A pool's throughput is the sum of its workers'; their latencies are pooled worker after
        # worker, so batch means over the pooled list would mistake two tenants' different speeds
        # for noise. Each worker's error comes from its own latencies; the errors add in quadrature.
        var, dfs = 0.0, []
        for w in workers:
            lat = np.asarray(w.latencies or [], dtype=float)
            lat = lat[np.isfinite(lat)]
            thr = w.throughput
            if thr is None or lat.size < MIN_SAMPLES_FOR_ERROR or lat.mean() <= 0:
                var, dfs = float("nan"), []
                break
            se_mean, df, _ = _batch_means_se(lat)
            var += (thr * se_mean / float(lat.mean())) ** 2
            dfs.append(df)
        if dfs and math.isfinite(var):
            st.se_log = math.sqrt(var) / value
            st.df = float(min(dfs))
            st.ci = st.interval(confidence)
            st.confidence = confidence
            return st
    if metric == "throughput" and value > 0:
        # Throughput is items over the window, i.e. batch / mean latency: its relative error is the
        # mean latency's, estimated from every iteration (a handful of windows gives few degrees of
        # freedom, and an adaptive run may stop after three).
        lat = np.asarray(getattr(measurement, "latencies", None) or [], dtype=float)
        lat = lat[np.isfinite(lat)]
        if lat.size >= MIN_SAMPLES_FOR_ERROR and lat.mean() > 0:
            se_mean, df, _ = _batch_means_se(lat)
            st.se_log = se_mean / float(lat.mean())
            st.df = df
            st.ci = st.interval(confidence)
            st.confidence = confidence
            return st
    if x.size >= MIN_SAMPLES_FOR_ERROR and value > 0:
        se_mean, df, inflation = _batch_means_se(x)
        row = METRICS[metric]
        if row.estimator == "mean" and st.mean:
            st.se_log = se_mean / abs(st.mean)
            st.df = df
        elif row.estimator == "quantile" and row.quantile is not None:
            q = row.quantile
            s = math.sqrt(q * (1 - q) / x.size)
            lo = float(np.quantile(x, max(0.0, q - s)))
            hi = float(np.quantile(x, min(1.0, q + s)))
            below, above = max(0.0, value - lo), max(0.0, hi - value)
            # Beyond a tail quantile of a short run sit the rare outliers (an interrupt, a page
            # fault): the spacing above may be one of them, and would call every p99 undecidable.
            # Capped at OUTLIER_CAP times the spacing below; a p99 that is itself an outlier still
            # has a wide spacing below it.
            above = min(above, OUTLIER_CAP * below) if below > 0 else above
            st.se_log = inflation * (below + above) / 2 / value
            # The spacing rests on the few order statistics near the quantile (about n(1-q) for a
            # tail quantile): that, not n, is how far the error estimate itself can be trusted.
            st.df = max(4.0, min(df, x.size * min(q, 1 - q)))
    if st.se_log is not None:
        st.ci = st.interval(confidence)
        st.confidence = confidence
    return st
