"""The merge: what recording an entry over a stored one changes.

A stored metric is kept unless the new one differs *significantly* (the gate's own error,
run-to-run floor included, at a family-wise level over everything recorded), so re-recording
unchanged code writes zero bytes and a real change rewrites the lines of the metrics it moved.
"""

import json
from typing import Any, Dict, List, Optional

from ..metrics import METRICS
from .checks import env_differences
from .distributions import t_isf
from .sequential import Evidence
from .stats import MetricStats, opt_float

#: The chance that re-recording unchanged code rewrites anything, over all the metrics recorded.
REWRITE_ALPHA = 0.01


def metric_changed(name: str, old: Dict[str, Any], new: Dict[str, Any], alpha: float) -> bool:
    """Whether a recorded metric differs from the stored one by more than the gate's own error
    (within both runs and between runs), two-sided at ``alpha``."""
    a, b = float(old["value"]), float(new["value"])
    if a <= 0 or b <= 0:
        return a != b
    if name not in METRICS:
        return a != b
    sa, sb = opt_float(old.get("se_log")), opt_float(new.get("se_log"))
    if sa is None and sb is not None:
        # stored without an error (a version 1 peak): noise cannot be told from change, so it is
        # kept until a forced re-recording
        return False
    sb = sa if sb is None else sb
    ea = MetricStats(value=a, se_log=sa, df=opt_float(old.get("df")) or opt_float(new.get("df")),
                     runs=int(old.get("runs", 1) or 1), between=opt_float(old.get("between")))
    eb = MetricStats(value=b, se_log=sb, df=opt_float(new.get("df")) or opt_float(old.get("df")))
    ev = Evidence.of(name, eb, ea)
    return abs(ev.d) > t_isf(alpha / 2, ev.df) * ev.se


def merge_entry(old: Optional[Dict[str, Any]], new: Dict[str, Any], mode: str = "all",
                alpha: float = REWRITE_ALPHA) -> Optional[Dict[str, Any]]:
    """The entry to store when ``new`` is recorded over ``old`` (None: leave the stored one as is).

    ``new`` mode: only when nothing is stored. ``force``: the new entry as measured. ``all``: a new
    entry; or, over a stored one with the same environment, the stored entry with each metric
    that changed significantly (``metric_changed`` at ``alpha``) replaced, metrics measured for
    the first time added, metrics not measured this time kept, and the samples of the metrics
    that moved; the same per stage (a stage not recorded this time is kept); a changed
    environment replaces the whole entry."""
    if mode not in ("all", "new", "force"):
        raise ValueError(f"mode {mode!r}: one of all, new, force")
    if old is None:
        return new
    if mode == "new":
        return None
    if mode == "force":
        return None if _same(old, new) else new
    if env_differences(new.get("fingerprint", {}), old.get("fingerprint", {})):
        return new
    changed = _changed(old, new, alpha)
    stages_old = old.get("stages") or {}
    moved = {name: _changed(stages_old.get(name) or {}, part, alpha)
             for name, part in (new.get("stages") or {}).items()}
    moved = {name: names for name, names in moved.items() if names}
    # the engine's structure: rewritten when its graph changed, or with the times that moved
    restructured = bool(new.get("structure")) and (old.get("structure") or {}).get("digest") != \
        new["structure"].get("digest")
    if not changed and not moved and not restructured:
        return None
    out = _with_changes(old, new, changed)
    if new.get("structure") and (restructured or changed):
        out["structure"] = new["structure"]
    for f in ("fingerprint", "measurement", "recorded"):
        out[f] = new.get(f, out.get(f))
    if moved:
        stages = dict(out.get("stages") or {})
        for name, names in moved.items():
            stages[name] = _with_changes(stages_old.get(name) or {"metrics": {}}, new["stages"][name], names)
        out["stages"] = stages
    return out


def _changed(old: Dict[str, Any], new: Dict[str, Any], alpha: float) -> List[str]:
    """The metrics of ``new`` that ``old`` lacks or that changed significantly."""
    om, nm = old.get("metrics") or {}, new.get("metrics") or {}
    return [k for k in nm if k not in om or metric_changed(k, om[k], nm[k], alpha)]


def _with_changes(old: Dict[str, Any], new: Dict[str, Any], changed: List[str]) -> Dict[str, Any]:
    """The stored entry (or stage) with the ``changed`` metrics, and the samples they share,
    taken from the new one."""
    out = json.loads(json.dumps(old))
    out["metrics"] = dict(old.get("metrics") or {})
    for k in changed:
        out["metrics"][k] = new["metrics"][k]
    kinds = {METRICS[k].sample for k in changed if k in METRICS and METRICS[k].sample}
    new_samples = new.get("samples") or {}
    samples = dict(out.get("samples") or {})
    samples.update({kind: new_samples[kind] for kind in kinds if kind in new_samples})
    out["samples"] = samples
    return out


def _same(a: Dict[str, Any], b: Dict[str, Any]) -> bool:
    strip = lambda e: {k: v for k, v in e.items() if k != "recorded"}  # noqa: E731
    return strip(a) == strip(b)


def _rewrite_alpha(n_metrics: int, confidence: float) -> float:
    return min((1.0 - confidence) / 2.0, REWRITE_ALPHA / max(int(n_metrics), 1))


def needs_write(old: Optional[Dict[str, Any]], new: Dict[str, Any], mode: str = "all",
                confidence: float = 0.99, n_metrics: Optional[int] = None) -> bool:
    """Whether recording ``new`` over the stored ``old`` (None: no entry yet) changes anything.
    ``n_metrics``: how many metrics the session records in all (for the family-wise level; default
    this entry's)."""
    n = n_metrics if n_metrics is not None else metric_count(new)
    return merge_entry(old, new, mode, _rewrite_alpha(n, confidence)) is not None


def metric_count(entry: Dict[str, Any]) -> int:
    """How many metrics an entry records, its stages' included (each may move on its own)."""
    stages = (entry.get("stages") or {}).values()
    return len(entry.get("metrics") or {}) + sum(len(p.get("metrics") or {}) for p in stages)

