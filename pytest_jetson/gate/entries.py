"""A baseline entry: made from a measurement, pooled over recordings, read back as the gate's
reference.

An entry holds, per metric, ``value`` in base units rounded to what the measurement resolves (its
digits keep the rounding below a fortieth of ``se_log``), ``se_log`` the within-run standard error
of its log (two significant digits; ``gate.stats``), ``df`` its degrees of freedom and ``n`` the
samples behind it; a baseline pooled from several recordings adds ``runs`` and ``between`` (the
standard deviation of log value between them). ``samples`` holds, per sample kind of
``metrics.METRICS``, ``SAMPLE_POINTS`` quantiles at (i + 0.5) / ``SAMPLE_POINTS``.

A measurement with named stages (``perf.stage``) adds ``stages``: per stage, its own ``metrics``
and ``samples`` in the same form, for the metrics a stage has (``gate.bounds.stage_metrics``). An
entry of a measurement without stages has no ``stages`` field, so older files read and re-record
as they were.
"""

import datetime as _dt
import math
from typing import Any, Dict, List, Optional, Sequence

from ..engines.layer_profile import structure
from ..metrics import METRICS
from .bounds import stage_metrics
from .checks import BaselineRef
from .stats import MetricStats, metric_stats, opt_float, quantile_of, sorted_finite

SAMPLE_POINTS = 20


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")



def fingerprint(measurement: Any, device_fingerprint: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """What a baseline must share with a run: the device's fingerprint, then the measurement's
    environment, then its own backend / precision / batch / model."""
    fp: Dict[str, Any] = dict(device_fingerprint or {})
    fp.update({k: v for k, v in dict(getattr(measurement, "environment", {}) or {}).items()
               if v is not None or k not in fp})
    for key in ("backend", "precision", "model"):
        value = getattr(measurement, key, "")
        if value:
            fp[key] = value
    batch = getattr(measurement, "batch", None)
    if batch is not None:
        fp["batch"] = int(batch)
    return fp



def _digits(se_log: Optional[float]) -> int:
    """Significant digits that resolve a value with relative error ``se_log``: rounding stays
    below a fortieth of it (4 digits without an error, 7 at most)."""
    if se_log is None or not se_log > 0 or not math.isfinite(se_log):
        return 4
    return int(min(7, max(3, math.ceil(-math.log10(se_log)) + 2)))


def _sig(x: float, digits: int) -> Any:
    if x == 0 or not math.isfinite(x):
        return x
    y = float(f"{x:.{digits}g}")
    return int(y) if y.is_integer() and abs(y) < 2 ** 53 else y


def _metric_record(st: MetricStats) -> Dict[str, Any]:
    # a byte count with no spread (read once, or constant over the run): keep it exact
    exact = not st.se_log and float(st.value).is_integer()
    d: Dict[str, Any] = {"value": int(st.value) if exact else _sig(st.value, _digits(st.se_log)),
                         "n": int(st.n)}
    if st.se_log is not None:
        d["se_log"] = _sig(st.se_log, 2)
    if st.df is not None:
        d["df"] = int(round(st.df))
    if st.runs > 1:
        d["runs"] = int(st.runs)
        if st.between is not None:
            d["between"] = _sig(st.between, 2)
    return d


def _compact_sample(values: Sequence[float], resolution: Optional[float]) -> List[Any]:
    import numpy as np

    x = sorted_finite(values)
    if not x.size:
        return []
    probs = (np.arange(SAMPLE_POINTS) + 0.5) / SAMPLE_POINTS
    q = np.quantile(x, probs) if x.size > SAMPLE_POINTS else x
    digits = _digits(resolution)
    return [_sig(float(v), digits) for v in q]


def _records(measurement: Any, names: Sequence[str], confidence: float) -> Dict[str, Any]:
    """The ``metrics`` and ``samples`` of ``measurement`` for each of ``names`` it has."""
    metrics: Dict[str, Any] = {}
    samples: Dict[str, List[Any]] = {}
    memo: Dict[Any, Any] = {}
    for name in names:
        row = METRICS[name]
        st = metric_stats(measurement, name, confidence, keep_sample=False, memo=memo)
        if st is None:
            continue
        metrics[name] = _metric_record(st)
        if row.sample and row.sample not in samples:
            # the finite samples the statistics read (sorted once for both), else read now
            raw = memo.get(row.samples)
            raw = measurement.metric_samples(name) if raw is None else raw
            if raw is not None and len(raw):
                samples[row.sample] = _compact_sample(raw, st.se_log)
    return {"metrics": metrics, "samples": samples}


def make_entry(measurement: Any, fp: Dict[str, Any], confidence: float = 0.99,
               recorded: Optional[str] = None) -> Dict[str, Any]:
    """The baseline entry of one measurement (every metric it has, not only the bounded ones;
    every stage it has, with the metrics of a stage)."""
    entry = {
        "fingerprint": dict(fp),
        "measurement": getattr(measurement, "name", ""),
        "recorded": recorded or now_iso(),
        **_records(measurement, list(METRICS), confidence),
    }
    stages = getattr(measurement, "stages", None) or {}
    if stages:
        entry["stages"] = {name: _records(stage, stage_metrics(), confidence)
                           for name, stage in stages.items()}
    profile = getattr(measurement, "profile", None)
    if profile is not None and profile.layers:
        entry["structure"] = structure(profile)
    return entry


def pool_entries(entries: Sequence[Dict[str, Any]], recorded: Optional[str] = None) -> Dict[str, Any]:
    """One entry from several recordings of one test (another boot, another day): each metric's
    value is the geometric mean, ``se_log`` the mean's within-run error, ``runs`` how many and
    ``between`` their spread (the run-to-run part the gate then uses instead of the floor alone).
    The fingerprint, measurement and samples are the last recording's."""
    if not entries:
        raise ValueError("pool_entries needs at least one entry")
    last = entries[-1]
    out = {k: v for k, v in last.items() if k != "metrics"}
    out["recorded"] = recorded or now_iso()
    out["metrics"] = _pooled_metrics([e.get("metrics") or {} for e in entries])
    if last.get("stages"):
        out["stages"] = {}
        for stage, part in last["stages"].items():
            recordings = [(e.get("stages") or {}).get(stage) or {} for e in entries]
            pooled = _pooled_metrics([r.get("metrics") or {} for r in recordings])
            out["stages"][stage] = dict(part, metrics=pooled)
    return out


def _pooled_metrics(recordings: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Each metric of the last recording pooled over the recordings that have it."""
    metrics: Dict[str, Any] = {}
    for name in recordings[-1]:
        rows = [r[name] for r in recordings if name in r]
        metrics[name] = _pooled(rows) or dict(recordings[-1][name])
    return metrics


def _pooled(rows: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """One metric's records pooled (None when a value is not positive: nothing to pool in logs)."""
    logs = [math.log(r["value"]) for r in rows if r.get("value", 0) > 0]
    if len(logs) != len(rows) or not rows:
        return None
    k = len(logs)
    mean = sum(logs) / k
    st = MetricStats(value=math.exp(mean), n=sum(int(r.get("n", 1)) for r in rows), runs=k)
    ses = [r.get("se_log") for r in rows]
    if all(s is not None for s in ses):
        st.se_log = math.sqrt(sum(s * s for s in ses)) / k
        dfs = [r.get("df") for r in rows]
        st.df = float(sum(dfs)) if all(d is not None for d in dfs) else None
    if k > 1:
        st.between = math.sqrt(sum((x - mean) ** 2 for x in logs) / (k - 1))
    return _metric_record(st)


def _metric_refs(records: Dict[str, Any], samples: Dict[str, Any]) -> Dict[str, MetricStats]:
    metrics = {}
    for name, d in records.items():
        kind = METRICS[name].sample if name in METRICS else None
        st = MetricStats(value=float(d["value"]), n=int(d.get("n", 1) or 1), se_log=opt_float(d.get("se_log")),
                         df=opt_float(d.get("df")), runs=int(d.get("runs", 1) or 1), between=opt_float(d.get("between")))
        st.sample = [float(v) for v in samples.get(kind, [])] if kind else []
        if st.sample and METRICS[name].dimension == "time":
            st.median = quantile_of(st.sample, 0.5)
        metrics[name] = st
    return metrics


def entry_ref(entry: Dict[str, Any], file: str = "", key: str = "") -> BaselineRef:
    common = dict(fingerprint=dict(entry.get("fingerprint") or {}), recorded=str(entry.get("recorded") or ""),
                  file=file, key=key)
    stages = {name: BaselineRef(metrics=_metric_refs(part.get("metrics") or {}, part.get("samples") or {}),
                                **common)  # type: ignore[arg-type]
              for name, part in (entry.get("stages") or {}).items()}
    return BaselineRef(metrics=_metric_refs(entry.get("metrics") or {}, entry.get("samples") or {}),
                       stages=stages, structure=entry.get("structure"), **common)  # type: ignore[arg-type]
