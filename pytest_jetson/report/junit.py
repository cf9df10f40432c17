"""Each test's metrics and verdicts as JUnit XML properties (pytest's ``user_properties``).

Names: ``jetson.<metric>`` (base units: items/s, s, bytes, W, J per item, C, %), and
``jetson.<metric>.verdict`` per bound (``<outcome> <reason> (<bound>)``); with several
measurements the measurement's name comes first: ``jetson.<name>.<metric>``.
"""

from typing import Any, List, Tuple

from ..gate.keys import key_label


def properties(result: Any) -> List[Tuple[str, str]]:
    out: List[Tuple[str, str]] = []
    several = len(result.measurements) > 1
    for key, m in result.keyed():
        prefix = "jetson." + (key_label(key) + "." if several else "")
        for metric, value in sorted(m.summary().items()):
            if value is not None:
                out.append((prefix + metric, f"{value:.6g}"))
    for v in result.verdicts:
        prefix = "jetson." + (key_label(v.measurement) + "." if several and v.measurement else "")
        out.append((f"{prefix}{v.metric}.verdict", f"{v.outcome} {v.reason} ({v.bound})"))
    if result.error:
        out.append(("jetson.error", result.error))
    return out
