"""Each test's metrics and verdicts as JUnit XML properties (pytest's ``user_properties``).

Names: ``jetson.<metric>`` (base units: items/s, s, bytes, W, J per item, C, %), and
``jetson.<metric>.verdict`` per bound (``<outcome> <reason> (<bound>)``); a stage's metrics and
bounds as ``jetson.stages.<stage>.<metric>`` and ``jetson.stages.<stage>.<metric>.verdict``; with
several measurements the measurement's name comes first: ``jetson.<name>.<metric>``.
"""

from typing import Any, List, Tuple

from ..gate.bounds import stage_metrics
from ..gate.keys import key_label


def properties(result: Any) -> List[Tuple[str, str]]:
    out: List[Tuple[str, str]] = []
    several = len(result.measurements) > 1
    for key, m in result.keyed():
        prefix = "jetson." + (key_label(key) + "." if several else "")
        for metric, value in sorted(m.summary().items()):
            if value is not None:
                out.append((prefix + metric, f"{value:.6g}"))
        for stage, part in (getattr(m, "stages", None) or {}).items():
            for metric in stage_metrics():
                value = part.metric(metric)
                if value is not None:
                    out.append((f"{prefix}stages.{stage}.{metric}", f"{value:.6g}"))
    for v in result.verdicts:
        prefix = "jetson." + (key_label(v.measurement) + "." if several and v.measurement else "")
        stage = f"stages.{v.stage}." if getattr(v, "stage", None) is not None else ""
        out.append((f"{prefix}{stage}{v.metric}.verdict", f"{v.outcome} {v.reason} ({v.bound})"))
    if result.error:
        out.append(("jetson.error", result.error))
    return out
