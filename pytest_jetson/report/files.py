"""Every report file a session writes, at its end: JSON, Markdown (or the GitHub step summary)
and plots. Each is written on its own: one that cannot be written (a directory in its place, a
read-only folder, matplotlib missing) is reported by path with the fix, and the others are still
written."""

import os
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import JetsonError
from . import markdown, plots


def _why(option: str, path: Any, exc: BaseException) -> str:
    if isinstance(exc, JetsonError):
        return f"{option} {path}: {exc}"
    if isinstance(exc, IsADirectoryError) or Path(path).is_dir():
        return f"{option} {path}: is a directory; give a file path such as {Path(path) / 'report'}"
    if isinstance(exc, PermissionError):
        return f"{option} {path}: permission denied; choose a writable path"
    if isinstance(exc, NotADirectoryError):
        return f"{option} {path}: a parent of it is a file, not a directory; choose another path"
    return f"{option} {path}: cannot be written ({exc.strerror or exc}); choose another path"


def write_reports(results: Sequence[Any], settings: Any, fingerprint: dict, counts: Any = None,
                  target: Optional[Dict[str, Any]] = None,
                  provenance: Optional[Dict[str, Any]] = None) -> Tuple[List[str], List[str]]:
    """Write the reports ``settings`` asks for; returns (paths written, errors). ``counts``: the
    perf tests as pytest counted them (``report.counts.TestCounts``); ``target``: the baseline
    directory, the words for where the numbers come from and the backend; ``provenance``: the
    commit and the machine (``provenance.commit_info``, ``machine_info``)."""
    title = (target or {}).get("title", "")
    written: List[str] = []
    errors: List[str] = []

    def attempt(option: str, path: Any, write: Callable[[], Any]) -> None:
        try:
            out = write()
        except (OSError, JetsonError) as exc:
            errors.append(_why(option, path, exc))
            return
        if isinstance(out, list):
            written.extend(str(p) for p in out)
        else:
            written.append(str(path))

    if settings.report_json:
        def write_json() -> Any:
            from . import jsonreport

            return jsonreport.write(settings.report_json,
                                    jsonreport.build(results, settings, fingerprint, counts, target, provenance))

        attempt("--jetson-report-json", settings.report_json, write_json)
    step_summary = settings.report_md is not None and settings.report_md == os.environ.get("GITHUB_STEP_SUMMARY")
    if settings.report_md and (results or not step_summary):
        def write_md() -> Any:
            return markdown.write(settings.report_md, markdown.render(results, fingerprint, counts, title,
                                                          commit=(provenance or {}).get("commit")),
                                  append=step_summary)

        attempt("--jetson-report-md", settings.report_md, write_md)
    if settings.plots:
        def write_plots() -> Any:
            return [str(p) for p in plots.write_plots(results, settings.plots)]

        attempt("--jetson-plots", settings.plots, write_plots)
    return written, errors
