"""Where a measurement's time moved against its baseline, stage by stage (data; ``report.render``
words it).

For a measurement with named stages (``perf.stage``) and a baseline entry that has them too, each
stage's change in mean time per call (now minus the baseline's) is set against the change in the
whole's mean latency: its ``share`` is how much of that change it explains (0.87: 87% of the
slowdown). Stages come ordered by how much they explain, so the stage that moved is named first
whichever bound failed, a stage's own or the whole's (``latency_p99``). When the whole barely
moved (less than ``MIN_MOVE`` of its baseline) a share would divide noise by noise: there is none,
and stages come ordered by how far they moved.

Means are compared because they add up: the stages' means sum to (at most) the whole's, which no
percentile does.
"""

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

#: the smallest relative change of the whole's mean latency that shares are given against
MIN_MOVE = 0.005


@dataclass
class StageShift:
    """One stage's mean time per call, now and in the baseline (seconds), and the share of the
    whole's change it explains (None: the whole did not move measurably)."""

    stage: str
    now: float
    baseline: float
    share: Optional[float] = None

    @property
    def change(self) -> float:
        return self.now - self.baseline

    @property
    def relative(self) -> Optional[float]:
        return self.change / self.baseline if self.baseline > 0 else None

    def to_dict(self) -> Dict[str, Any]:
        return {"stage": self.stage, "now": self.now, "baseline": self.baseline, "change": self.change,
                "relative": self.relative, "share": self.share}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "StageShift":
        share = d.get("share")
        return cls(stage=str(d["stage"]), now=float(d["now"]), baseline=float(d["baseline"]),
                   share=None if share is None else float(share))


@dataclass
class Where:
    """The stages of one measurement (its baseline ``key``) ordered by what they explain, and the
    whole's mean latency now and in the baseline (None where the baseline has no mean)."""

    measurement: str
    now: Optional[float]
    baseline: Optional[float]
    stages: List[StageShift] = field(default_factory=list)

    @property
    def change(self) -> Optional[float]:
        if self.now is None or self.baseline is None:
            return None
        return self.now - self.baseline

    @property
    def relative(self) -> Optional[float]:
        change = self.change
        return change / self.baseline if change is not None and self.baseline else None

    def to_dict(self) -> Dict[str, Any]:
        return {"measurement": self.measurement, "now": self.now, "baseline": self.baseline,
                "change": self.change, "relative": self.relative,
                "stages": [s.to_dict() for s in self.stages]}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Where":
        def num(x: Any) -> Optional[float]:
            return None if x is None else float(x)

        return cls(measurement=str(d.get("measurement", "")), now=num(d.get("now")),
                   baseline=num(d.get("baseline")),
                   stages=[StageShift.from_dict(s) for s in d.get("stages") or []])


def _finite(x: Any) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def _mean(ref: Any) -> Optional[float]:
    st = ref.metrics.get("latency_mean") if ref is not None else None
    return _finite(st.value) if st is not None else None


def where(measurement: Any, baseline: Any, key: str = "") -> Optional[Where]:
    """The stages of ``measurement`` against those of its ``baseline`` (a ``BaselineRef``) in the
    order of what they explain; None when either has no stages in common."""
    stages = getattr(measurement, "stages", None) or {}
    stored = getattr(baseline, "stages", None) or {}
    shifts = []
    for name, stage in stages.items():
        now, base = _finite(stage.latency_mean), _mean(stored.get(name))
        if now is not None and base is not None:
            shifts.append(StageShift(name, now, base))
    if not shifts:
        return None
    out = Where(key, _finite(measurement.latency_mean), _mean(baseline))
    total = out.change
    if total is not None and out.baseline and abs(total) >= MIN_MOVE * out.baseline:
        for s in shifts:
            s.share = s.change / total
        shifts.sort(key=lambda s: -(s.share or 0.0))
    else:
        shifts.sort(key=lambda s: -abs(s.change))
    out.stages = shifts
    return out
