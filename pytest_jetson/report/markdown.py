"""``--jetson-report-md PATH`` (default ``$GITHUB_STEP_SUMMARY``): a Markdown table, regressions
first, then what was skipped or could not be decided and why."""

from pathlib import Path
from typing import Any, Dict, List, Sequence, Union

from ..gate.verdict import rank
from ..metrics import format_value
from .render import change_text, message

_ICON = {"fail": "❌ fail", "error": "❌ error", "inconclusive": "⚠️ inconclusive", "skip": "⏭️ skip",
         "recorded": "📝 recorded", "pass": "✅ pass"}


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(results: Sequence[Any], device_fingerprint: Dict[str, Any]) -> str:
    fp = device_fingerprint
    verdicts = [(r, v) for r in results for v in r.verdicts]
    counts: Dict[str, int] = {}
    for _, v in verdicts:
        counts[v.outcome] = counts.get(v.outcome, 0) + 1
    errors = [r for r in results if r.error]
    lines: List[str] = ["## pytest-jetson perf gate", ""]
    kind = "simulated" if fp.get("simulated") else "real"
    lines.append(f"**{fp.get('device')}** ({kind}), power mode {fp.get('power_mode')}, "
                 f"JetPack {fp.get('jetpack') or '-'}, TensorRT {fp.get('tensorrt') or '-'}")
    lines.append("")
    bad = counts.get("fail", 0) + counts.get("error", 0) + len(errors)
    status = "❌ regressions found" if bad else "✅ no regressions"
    lines.append(f"{status}: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: rank(kv[0])))
                 if counts else status)
    lines.append("")
    if verdicts or errors:
        lines.append("| test | metric | value | baseline | change | bound | verdict |")
        lines.append("|---|---|---|---|---|---|---|")
        for r in errors:
            lines.append(f"| `{_cell(r.nodeid)}` | - | - | - | - | - | ❌ error |")
        for r, v in sorted(verdicts, key=lambda rv: rank(rv[1].outcome)):
            test = r.nodeid + (f" [{v.measurement.split('|', 1)[1]}]" if "|" in v.measurement else "")
            lines.append(
                f"| `{_cell(test)}` | {v.metric} | {format_value(v.metric, v.value)} | "
                f"{format_value(v.metric, v.baseline)} | {change_text(v.worse)} | `{_cell(v.bound)}` | "
                f"{_ICON.get(v.outcome, v.outcome)} |"
            )
        lines.append("")
    details = [(r.nodeid, r.error) for r in errors]
    details += [(r.nodeid, message(v)) for r, v in verdicts if v.outcome not in ("pass", "recorded")]
    if details:
        lines.append("<details><summary>why</summary>")
        lines.append("")
        for nodeid, msg in details:
            lines.append(f"- `{nodeid}`:")
            lines.append("  ```")
            lines += ["  " + m for m in str(msg).splitlines()]
            lines.append("  ```")
        lines.append("")
        lines.append("</details>")
        lines.append("")
    return "\n".join(lines) + "\n"


def write(path: Union[str, Path], text: str, append: bool = False) -> Path:
    """Write (or, for the GitHub step summary, append) the report."""
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a" if append else "w", encoding="utf-8") as fh:
        fh.write(text)
    return path
