"""Statistics of one metric of one measurement, as the gate compares them and baselines store them.

The gate works on the log of a metric (ratios are what tolerances speak of) and needs, per side,
the metric's value and the standard error of its log *within the run*. How that error is
estimated, by the metric's ``estimator`` in ``pytest_jetson.metrics``:

* ``batch_means`` (``latency_mean``, ``latency_gpu``), ``throughput`` (through the mean latency;
  a pool's through each worker's), ``slowest_worker`` (``per_process_throughput``): the standard
  error of the mean by *batch means*: the ordered samples cut into up to 30 contiguous batches,
  fewer while neighbouring batch means still correlate (DVFS steps, thermal drift, a noisy
  neighbour), where the textbook sd/sqrt(n) is too small;
* ``order_statistics`` (``latency_p50`` .. ``latency_p99``): the distribution-free order-statistic
  interval (the binomial spread of the rank of a quantile), widened by the same autocorrelation
  factor the batch means found for the mean; the spacing above a tail quantile is capped at
  ``OUTLIER_CAP`` times the spacing below, and its degrees of freedom are the order statistics it
  rests on;
* ``series_mean`` (``power``, ``gpu_util``): batch means over the samples of the row's telemetry
  series column in the window (``Measurement.telemetry_series``); ``ratio`` (``energy``,
  per item: mean power over throughput) adds its two parts' errors;
* ``block_peaks`` (``latency_max``) and ``series_peak`` (``memory``, ``power_peak``,
  ``temperature``): the spread of the peaks of ``PEAK_BLOCKS`` contiguous blocks of the samples or
  the series, a conservative error for a maximum (the peak of the whole run varies less from run
  to run than the peak of one block does).

Each is a function of ``ESTIMATORS``, looked up by the row's name for it: a metric added with a
row that names its samples or its series column gets the same statistics as the built-in ones.

What no within-run estimator can see is the spread *between* runs (another boot, another thermal
state): ``pytest_jetson.gate.sequential`` adds it from the baseline or from the metric's
``run_to_run`` floor.

A baseline keeps, per metric, the value, ``se_log``, ``df`` and ``n``, plus a compact quantile
sample per sample kind. numpy only (scipy is not a dependency; the tests check these functions
against it).
"""

import math
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..metrics import METRICS, Metric
from .distributions import (
    t_ppf,
    t_sf,  # noqa: F401  (report.trend imports it from here)
)

COMPACT_POINTS = 200
BATCHES = 30
MIN_BATCHES = 5
MIN_SAMPLES_FOR_ERROR = 8
OUTLIER_CAP = 3.0
PEAK_BLOCKS = 8


# -- compact samples ----------------------------------------------------------------------------
def compact(samples: Sequence[float], points: int = COMPACT_POINTS) -> List[float]:
    """At most ``points`` values that keep the sample's quantiles: the sorted sample itself when
    small, else its quantiles at (i + 0.5) / points (midpoints, so both tails are represented)."""
    x = sorted_finite(samples)
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
    """One metric of one measurement (or of a baseline entry).

    ``se_log``: standard error of log(value) within the run (None when not estimable); ``df``: its
    degrees of freedom; ``ci``: the value's interval at ``confidence``. A baseline pooled from
    several recordings also has ``runs`` (how many) and ``between`` (the standard deviation of
    log(value) between them)."""

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
    runs: int = 1
    between: Optional[float] = None

    def interval(self, confidence: float) -> Optional[Tuple[float, float]]:
        if self.se_log is None or self.value <= 0:
            return None
        k = t_ppf((1 + confidence) / 2, self.df) * self.se_log
        return (self.value * math.exp(-k), self.value * math.exp(k))

    def to_dict(self) -> Dict[str, Any]:
        d = {
            "value": self.value, "n": self.n, "mean": self.mean, "median": self.median,
            "stdev": self.stdev, "se_log": self.se_log, "df": self.df,
            "ci": None if self.ci is None else [self.ci[0], self.ci[1]],
            "confidence": self.confidence, "sample": list(self.sample),
        }
        if self.runs > 1:
            d.update(runs=self.runs, between=self.between)
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "MetricStats":
        ci = d.get("ci")
        return cls(
            value=float(d["value"]), n=int(d.get("n", 1) or 1), mean=opt_float(d.get("mean")),
            median=opt_float(d.get("median")), stdev=opt_float(d.get("stdev")), se_log=opt_float(d.get("se_log")),
            df=opt_float(d.get("df")), ci=None if ci is None else (float(ci[0]), float(ci[1])),
            confidence=opt_float(d.get("confidence")),
            sample=[float(v) for v in d.get("sample", []) or []],
            runs=int(d.get("runs", 1) or 1), between=opt_float(d.get("between")),
        )


def opt_float(v: Any) -> Optional[float]:
    return None if v is None else float(v)


# -- within-run errors ------------------------------------------------------------------------------
def batch_means_se(x: np.ndarray) -> Tuple[float, float, float]:
    """(se of the mean by batch means, its degrees of freedom, inflation over the iid se).
    The quantile metrics of a measurement ask it of the same samples one after the other: the
    last answer is kept while its array lives.

    Up to ``BATCHES`` contiguous batches; while the means of neighbouring batches still correlate
    (lag-1 autocorrelation above 2/sqrt(k)), batches are merged pairwise, so the batches grow past
    the correlation time of the series (a slow drift or a DVFS step spans several of them)."""
    if not isinstance(x, np.ndarray):
        return _batch_means_se(np.asarray(x, dtype=float))
    return _of_last(_LAST_BATCH_MEANS, x, lambda: _batch_means_se(np.asarray(x, dtype=float)))


def _of_last(slot: List[Any], x: np.ndarray, compute: Callable[[], Any]) -> Any:
    """``compute()``, or what it gave for the array ``x`` last time while that array lives
    (``slot``: [a weak reference to it, the answer]): a measurement's metrics read one latency
    array one after another."""
    last, answer = slot
    if last is None or last() is not x:
        answer = compute()
        slot[:] = [weakref.ref(x, lambda ref: _forget(slot, ref)), answer]
    return answer


def _forget(slot: List[Any], ref: Any) -> None:
    """Let go of an answer when its array goes (a sorted copy of a long run is as big as it)."""
    if slot[0] is ref:
        slot[:] = [None, None]


def finite(values: Any) -> np.ndarray:
    """The finite ``values`` as a float array: the values themselves where all are finite (a C
    double array is read in place, not copied: ten million latencies are 80 MB)."""
    x = np.asarray(values if values is not None and len(values) else [], dtype=float)
    ok = np.isfinite(x)
    return x if ok.all() else x[ok]


#: ``_of_last`` slots: batch means, the sorted array, mean/median/stdev
_LAST_BATCH_MEANS: List[Any] = [None, None]
_LAST_SORTED: List[Any] = [None, None]
_LAST_DESCRIBED: List[Any] = [None, None]


def _batch_means_se(x: np.ndarray) -> Tuple[float, float, float]:
    n = x.size
    sd = float(x.std(ddof=1)) if n > 1 else 0.0
    se_iid = sd / math.sqrt(n) if n > 0 else 0.0
    k = min(BATCHES, n // 4)
    if k < MIN_BATCHES:
        return se_iid, float(max(n - 1, 1)), 1.0
    while True:
        size = n // k
        means = x[: k * size].reshape(k, size).mean(axis=1)
        if k < 2 * MIN_BATCHES:
            break
        c = means - means.mean()
        den = float(np.dot(c, c))
        r1 = float(np.dot(c[:-1], c[1:])) / den if den > 0 else 0.0
        if r1 <= 2.0 / math.sqrt(k):
            break
        k //= 2
    se_bm = float(means.std(ddof=1)) / math.sqrt(k)
    # Never report less uncertainty than the iid formula: batch means of iid data scatter around it.
    se = max(se_bm, se_iid)
    inflation = se / se_iid if se_iid > 0 else 1.0
    return se, float(k - 1), inflation



def peak_se(x: np.ndarray, blocks: int = PEAK_BLOCKS) -> Tuple[float, float]:
    """(an error of the peak of ``x``, its degrees of freedom), cautious on purpose: the larger of
    the standard deviation of the peaks of ``blocks`` contiguous blocks and the gap between the
    highest block peak and the next. A peak set by one rare outlier (an interrupt, a page fault)
    is as uncertain as that gap: another run may or may not have one. A constant series has none."""
    x = finite(x)
    k = min(blocks, x.size // 2)
    if k < 3:
        return 0.0 if x.size and float(np.ptp(x)) == 0 else float("nan"), float(max(k - 1, 1))
    size = x.size // k
    peaks = np.sort(x[: k * size].reshape(k, size).max(axis=1))
    gap = float(max(x.max(), peaks[-1]) - peaks[-2])
    return max(float(peaks.std(ddof=1)), gap), float(k - 1)


def _sorted(x: np.ndarray) -> np.ndarray:
    """``x`` sorted; the last answer is kept while ``x`` lives (four quantile metrics read one
    latency array)."""
    return _of_last(_LAST_SORTED, x, lambda: np.sort(x))


def sorted_finite(values: Any) -> np.ndarray:
    """The finite ``values`` sorted: the kept answer when ``values`` is the array just sorted."""
    if isinstance(values, np.ndarray) and values.dtype == float and _LAST_SORTED[0] is not None \
            and _LAST_SORTED[0]() is values:
        return _LAST_SORTED[1]
    return np.sort(finite(values))


def _quantile(ordered: np.ndarray, q: float) -> float:
    """``np.quantile(x, q)`` (its default, linear method) of ``x`` already sorted."""
    h = (ordered.size - 1) * q
    i = min(int(h), ordered.size - 1)
    j = min(i + 1, ordered.size - 1)
    return float(ordered[i] + (h - i) * (ordered[j] - ordered[i]))


def _quantile_se(x: np.ndarray, value: float, q: float, inflation: float, df_mean: float) -> Tuple[float, float]:
    n = x.size
    s = math.sqrt(q * (1 - q) / n)
    ordered = _sorted(x)
    lo = _quantile(ordered, max(0.0, q - s))
    hi = _quantile(ordered, min(1.0, q + s))
    below, above = max(0.0, value - lo), max(0.0, hi - value)
    # Beyond a tail quantile of a short run sit the rare outliers (an interrupt, a page fault):
    # the spacing above may be one of them, and would call every p99 undecidable. Capped at
    # OUTLIER_CAP times the spacing below; a p99 that is itself an outlier still has a wide
    # spacing below it.
    above = min(above, OUTLIER_CAP * below) if below > 0 else above
    se_log = inflation * (below + above) / 2 / value
    # The spacing rests on the few order statistics near the quantile (about n(1-q) for a tail
    # quantile): that, not n, is how far the error estimate itself can be trusted.
    return se_log, max(4.0, min(df_mean, n * min(q, 1 - q)))


# -- telemetry series ---------------------------------------------------------------------------
def _series(measurement: Any) -> Any:
    """The measurement's telemetry series (``telemetry.series.Series``), None without samples."""
    series = getattr(measurement, "telemetry_series", None)
    return series if series is not None and len(series) else None


def _window_column(measurement: Any, series: Any, values: np.ndarray) -> np.ndarray:
    """The samples of a column that lie inside the measured window: a sampler closes with one
    idle reading after the last iteration, which is not part of what the run did."""
    t = np.asarray(series.t, dtype=float)
    y = np.asarray(values, dtype=float)
    if y.size != t.size or not t.size:
        return y[np.isfinite(y)]
    duration = float(getattr(measurement, "duration", 0.0) or 0.0)
    tele = getattr(measurement, "telemetry", None)
    interval = float(getattr(tele, "interval", None) or 0.0)
    if duration > 0:
        inside = (t - t[0]) <= duration + 0.5 * interval + 1e-9
        # keep at least all but the closing sample
        if inside.sum() < t.size - 1:
            inside[: t.size - 1] = True
        y = y[inside]
    return y[np.isfinite(y)]


def _hottest_column(series: Any, group: str) -> Optional[np.ndarray]:
    """The hottest of a group of columns (``temps_c``: one per sensor) at each time."""
    cols = [np.asarray(col, dtype=float) for col in (getattr(series, group, None) or {}).values() if len(col)]
    if not cols:
        return None
    n = min(c.size for c in cols)
    stacked = np.vstack([c[:n] for c in cols])
    with np.errstate(all="ignore"):
        return np.where(np.isfinite(stacked).any(axis=0),
                        np.nanmax(np.where(np.isfinite(stacked), stacked, -np.inf), axis=0), np.nan)


#: ``Metric.reduction`` -> the column of the series it reduces, where that is not one column.
_COLUMNS = {"hottest": _hottest_column}


def _series_samples(measurement: Any, row: Metric) -> Optional[np.ndarray]:
    """The window's samples of the row's telemetry series column, or None without them. None too
    when the value is not the telemetry summary's own figure (memory falls back to a worker's RSS
    or the engine's estimate): the series' error would not be its error."""
    series = _series(measurement)
    if series is None or not row.series:
        return None
    if row.summary and getattr(getattr(measurement, "telemetry", None), row.summary, None) is None:
        return None
    reader = _COLUMNS.get(row.reduction or "")
    col = reader(series, row.series) if reader else getattr(series, row.series, None)
    if col is None:
        return None
    y = _window_column(measurement, series, col)
    return y if y.size >= MIN_SAMPLES_FOR_ERROR else None


# -- the estimators: Metric.estimator -> (se_log, df, samples behind it or None) -------------------
Estimate = Optional[Tuple[float, float, Optional[int]]]


def _series_mean(measurement: Any, row: Metric, value: float, x: np.ndarray) -> Estimate:
    y = _series_samples(measurement, row)
    if y is None:
        return None
    se, df, _ = batch_means_se(y)
    return se / value, df, int(y.size)


def _series_peak(measurement: Any, row: Metric, value: float, x: np.ndarray) -> Estimate:
    y = _series_samples(measurement, row)
    if y is None:
        return None
    se, df = peak_se(y)
    return (se / value, df, int(y.size)) if math.isfinite(se) else None


def _throughput_error(measurement: Any, value: float) -> Optional[Tuple[float, float]]:
    """(se_log, df) of throughput: batch / mean latency, so the mean latency's relative error; a
    pool's is its workers' (each from its own iterations) added in quadrature."""
    workers = getattr(measurement, "workers", None)
    if workers:
        return _pool_throughput_error(workers, value)
    return _latency_mean_error(getattr(measurement, "latencies", None))


def _latency_mean_error(latencies: Any) -> Optional[Tuple[float, float]]:
    """(se_log, df) of the mean of a latency list, by batch means; None when too short."""
    lat = finite(latencies)
    if lat.size < MIN_SAMPLES_FOR_ERROR or lat.mean() <= 0:
        return None
    se_mean, df, _ = batch_means_se(lat)
    return se_mean / float(lat.mean()), df


def _pool_throughput_error(workers: Sequence[Any], value: float) -> Optional[Tuple[float, float]]:
    # A pool's throughput is the sum of its workers'; their latencies are pooled worker after
    # worker, so batch means over the pooled list would mistake two tenants' different speeds
    # for noise.
    var, dfs = 0.0, []
    for w in workers:
        err = _latency_mean_error(w.latencies) if w.throughput is not None else None
        if err is None:
            return None
        var += (w.throughput * err[0]) ** 2
        dfs.append(err[1])
    return math.sqrt(var) / value, float(min(dfs))


def _throughput(measurement: Any, row: Metric, value: float, x: np.ndarray) -> Estimate:
    err = _throughput_error(measurement, value)
    return None if err is None else (err[0], err[1], None)


def _slowest_worker(measurement: Any, row: Metric, value: float, x: np.ndarray) -> Estimate:
    """A pool's per-process throughput (its slowest worker): that worker's own error."""
    workers = [w for w in getattr(measurement, "workers", None) or [] if w.throughput]
    if not workers:
        return None
    err = _latency_mean_error(min(workers, key=lambda w: w.throughput).latencies)
    return None if err is None else (err[0], err[1], None)


def _batch_means(measurement: Any, row: Metric, value: float, x: np.ndarray) -> Estimate:
    if x.size < MIN_SAMPLES_FOR_ERROR or not float(x.mean()):
        return None
    se_mean, df, _ = batch_means_se(x)
    return se_mean / abs(float(x.mean())), df, None


def _order_statistics(measurement: Any, row: Metric, value: float, x: np.ndarray) -> Estimate:
    if x.size < MIN_SAMPLES_FOR_ERROR or row.quantile is None:
        return None
    _, df, inflation = batch_means_se(x)
    se_log, df_q = _quantile_se(x, value, row.quantile, inflation, df)
    return se_log, df_q, None


def _block_peaks(measurement: Any, row: Metric, value: float, x: np.ndarray) -> Estimate:
    if x.size < MIN_SAMPLES_FOR_ERROR:
        return None
    se, df = peak_se(x)
    return (se / value, df, None) if math.isfinite(se) else None


def _ratio(measurement: Any, row: Metric, value: float, x: np.ndarray) -> Estimate:
    """A quotient (energy per item = mean power / throughput): the two relative errors add in
    quadrature (they move together under DVFS, so this errs on the cautious side); the samples
    behind it are the numerator's."""
    found = [_estimate(measurement, METRICS[part]) for part in row.parts]
    if any(f is None for f in found):
        return None
    num, den = found
    return math.hypot(num[0], den[0]), min(num[1], den[1]), num[2]


def _no_error(measurement: Any, row: Metric, value: float, x: np.ndarray) -> Estimate:
    return None


#: ``Metric.estimator`` -> how the error of a value is estimated (``metrics.ESTIMATORS``).
ESTIMATORS: Dict[str, Callable[[Any, Metric, float, np.ndarray], Estimate]] = {
    "batch_means": _batch_means,
    "order_statistics": _order_statistics,
    "block_peaks": _block_peaks,
    "series_mean": _series_mean,
    "series_peak": _series_peak,
    "throughput": _throughput,
    "slowest_worker": _slowest_worker,
    "ratio": _ratio,
    "none": _no_error,
}


def _finite_samples(measurement: Any, metric: str, memo: Optional[Dict[Any, np.ndarray]] = None) -> np.ndarray:
    """The finite samples behind ``metric``; ``memo``: those already read from this measurement,
    by source (its latency metrics share one array)."""
    source = METRICS[metric].samples
    if memo is not None and source in memo:
        return memo[source]
    x = finite(measurement.metric_samples(metric))
    if memo is not None:
        memo[source] = x
    return x


def _estimate(measurement: Any, row: Metric) -> Estimate:
    """The error of one metric of a measurement by its row's estimator (None: no value, or none)."""
    value = measurement.metric(row.name)
    if value is None or not math.isfinite(value) or value <= 0:
        return None
    return ESTIMATORS[row.estimator](measurement, row, float(value), _finite_samples(measurement, row.name))


# -- one metric -------------------------------------------------------------------------------------
def _describe(st: MetricStats, x: np.ndarray, keep_sample: bool) -> None:
    st.mean, st.median, st.stdev = _of_last(_LAST_DESCRIBED, x, lambda: (
        float(x.mean()), float(np.median(x)), float(x.std(ddof=1)) if x.size > 1 else 0.0))
    if keep_sample:
        st.sample = compact(x)


def metric_stats(measurement: Any, metric: str, confidence: float = 0.99,
                 keep_sample: bool = True, memo: Optional[Dict[Any, np.ndarray]] = None) -> Optional[MetricStats]:
    """The statistics of ``metric`` in ``measurement`` (None when it has no value).
    ``keep_sample=False`` skips the compact sample (a comparison does not need it); ``memo``:
    one dict for the metrics of one measurement (``_finite_samples``)."""
    value = measurement.metric(metric)
    if value is None or not math.isfinite(value):
        return None
    x = _finite_samples(measurement, metric, memo)
    st = MetricStats(value=float(value), n=int(x.size) if x.size else 1)
    if x.size:
        _describe(st, x, keep_sample)
    row = METRICS[metric]
    err = ESTIMATORS[row.estimator](measurement, row, float(value), x) if value > 0 else None
    if err is not None:
        st.se_log, st.df = float(err[0]), float(err[1])
        if err[2] is not None:
            st.n = err[2]
        st.ci = st.interval(confidence)
        st.confidence = confidence
    return st
