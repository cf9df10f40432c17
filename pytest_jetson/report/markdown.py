"""``--jetson-report-md PATH`` (default ``$GITHUB_STEP_SUMMARY``): the perf gate in Markdown.

The tests counted as pytest counts them, a table of the bounds that need a look (failed,
errored, inconclusive), grouped by test, each one's full message once under "why", the skipped
bounds once per reason, and every bound in a folded table. ``pytest-jetson history --md`` adds
the trends of past runs to the same step summary (``report.run_history.markdown``)."""

from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from .. import fileio
from ..gate.keys import key_label
from ..gate.verdict import outcome
from ..provenance import commit_text
from .counts import TestCounts, from_results
from .render import change_text, message, subject, value_text, where_lines
from .terminal import ordered, shown, skipped_notes


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _verdict_line(test: str, v: Any) -> str:
    tag = f" [{key_label(v.measurement)}]" if key_label(v.measurement) else ""
    row = v.outcome_row
    return (f"| {test} | {_cell(subject(v))}{_cell(tag)} `{_cell(v.bound)}` | "
            f"{value_text(v.metric, v.value, v.ci)} | "
            f"{value_text(v.metric, v.baseline, v.ci)} | {change_text(v.worse)} | {row.icon} {row.label} |")


def _table(results: Sequence[Any], show_all: bool) -> List[str]:
    lines = ["| test | bound | value | baseline | change | verdict |", "|---|---|---|---|---|---|"]
    error = outcome("error")
    for r in ordered(results):
        test = f"`{_cell(r.nodeid)}`"
        if r.error:
            lines.append(f"| {test} | (nothing recorded) | - | - | - | {error.icon} {error.label} |")
            test = ""
        for v in shown(r.verdicts, "all" if show_all else "problems"):
            lines.append(_verdict_line(test, v))
            test = ""
    return lines if len(lines) > 2 else []


def _heading(fp: Dict[str, Any], counts: TestCounts, title: str) -> List[str]:
    """The title line (where the numbers come from) and the counts."""
    if not title:
        kind = "simulated" if fp.get("simulated") else "real"
        title = f"{fp.get('device')} ({kind}) · power mode {fp.get('power_mode')}"
    status = "❌ regressions found" if counts.failed else "✅ no regressions"
    line = f"{status}: perf tests: {counts.words()}"
    if counts.bounds:
        line += f" · bounds: {counts.bound_words()}"
    return [f"**{_cell(title)}** · JetPack {fp.get('jetpack') or '-'} · TensorRT {fp.get('tensorrt') or '-'}",
            "", line, ""]


def _why(results: Sequence[Any]) -> List[str]:
    """Each error and each bound that needs a look in full, then the skipped bounds, folded."""
    details = [(r.nodeid, r.error) for r in results if r.error]
    for r in ordered(results):
        # where a failing test's time went, stage by stage, opens its details, as in its own report
        where = where_lines(r) if any(v.failed for v in r.verdicts) else []
        if where:  # a layer profile that moved nothing says nothing
            details.append((r.nodeid, "\n".join(where)))
        details += [(r.nodeid, message(v)) for v in shown(r.verdicts)]
    skipped = skipped_notes(results)
    if not details and not skipped:
        return []
    lines = ["<details><summary>why</summary>", ""]
    for nodeid, msg in details:
        lines += [f"- `{nodeid}`:", "  ```"] + ["  " + m for m in str(msg).splitlines()] + ["  ```"]
    lines += [f"- {_cell(s)}" for s in skipped]
    return lines + ["", "</details>", ""]


def render(results: Sequence[Any], device_fingerprint: Dict[str, Any], counts: Optional[TestCounts] = None,
           title: str = "", commit: Optional[Dict[str, Any]] = None) -> str:
    """``commit``: the code under test (``provenance.commit_info``), said under the title."""
    counts = counts if counts is not None else from_results(results)
    lines: List[str] = ["## pytest-jetson perf gate", ""] + _heading(device_fingerprint, counts, title)
    if commit is not None:
        lines[4:4] = [commit_text(commit), ""]
    problems = _table(results, show_all=False)
    if problems:
        lines += problems + [""]
    lines += _why(results)
    everything = _table(results, show_all=True)
    if everything and len(everything) != len(problems):
        n = sum(len(r.verdicts) for r in results)
        lines += [f"<details><summary>all {n} bounds</summary>", ""] + everything + ["", "</details>", ""]
    return "\n".join(lines) + "\n"


def write(path: Union[str, Path], text: str, append: bool = False, root: Optional[Union[str, Path]] = None) -> Path:
    """Write (or, for the GitHub step summary, append) the report, only to a regular file
    (``fileio.check_target``: ``root`` is the project links may point into)."""
    path = Path(path)
    if append:
        return fileio.append(path, text, root=root)
    fileio.write_atomic(path, text, root=root)
    return path
