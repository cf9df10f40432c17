"""Every report file a session writes, at its end: JSON, Markdown (or the GitHub step summary)
and plots. Each is written on its own: one that cannot be written (a directory in its place, a
read-only folder, matplotlib missing) is reported by path with the fix, and the others are still
written.

Where a report may go is checked twice: when the session starts (``check_paths``: a usage error,
so no test runs in vain) and again just before writing. A report goes only where a regular file is
or can be (``fileio.check_target``: no device, pipe, socket or directory; a link only into the
project). An existing regular file is replaced only when it is a report of ours: a JSON report
whose ``kind`` is ``pytest-jetson-report``, a Markdown report that starts with this plugin's
heading, or an empty file. ``--jetson-report-json pyproject.toml`` is a slip of the keyboard, not
a wish to lose the file, and a suffix says nothing about what a file holds (``results.json`` may
be another tool's), so content decides, not the name; the GitHub step summary is appended to, as
GitHub asks, and never judged.
"""

import gzip
import os
import zlib
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from .. import fileio
from ..errors import JetsonError
from . import markdown, plots

#: what a previous report of ours holds (the JSON report's ``kind``; the Markdown report's first line)
JSON_MARK = (b'"kind": "pytest-jetson-report"', b'"kind":"pytest-jetson-report"')
MD_MARK = b"## pytest-jetson perf gate"
_SCAN = 1 << 20


def _holds(path: Path, marks: Sequence[bytes], first_line: bool) -> bool:
    """Whether the file is empty or holds one of ``marks`` (on its first line only, for
    ``first_line``; anywhere, read in chunks, otherwise)."""
    with open(path, "rb") as fh:
        head = fh.read(_SCAN)
    if head[:2] == b"\x1f\x8b":  # a gzip-compressed JSON report: its text decides
        return _holds_gzip(path, marks)
    with open(path, "rb") as fh:
        head = fh.read(_SCAN)
        if not head.strip() or (first_line and head.lstrip().startswith(tuple(marks))):
            return True
        if first_line:
            return False
        tail = b""
        while head:
            chunk = tail + head
            if any(m in chunk for m in marks):
                return True
            tail = chunk[-64:]
            head = fh.read(_SCAN)
    return False


def _holds_gzip(path: Path, marks: Sequence[bytes]) -> bool:
    try:
        with gzip.open(path, "rb") as fh:
            head = fh.read(_SCAN)
    except (OSError, EOFError, zlib.error):
        return False
    return any(m in head for m in marks)


def _refusal(option: str, path: Any, root: Optional[Union[str, Path]], kind: str) -> Optional[str]:
    """Why ``path`` must not receive this report (None: it may). ``kind``: json, md, append or dir."""
    if kind == "dir":
        p = Path(path)
        if p.exists() and not p.is_dir():
            return (f"{option} {path}: is not a directory; plots are written into a directory, "
                    f"give one such as {p.with_suffix('')}-plots")
        try:
            fileio.check_directory(p, root)
        except fileio.UnsafeTarget as exc:
            return f"{option} {exc}"
        return None
    try:
        target = fileio.check_target(path, root)
    except fileio.UnsafeTarget as exc:
        return f"{option} {exc}"
    if kind == "store":
        return _not_a_store(option, target)
    if kind == "append" or not target.is_file():
        return None
    try:
        ours = _holds(target, JSON_MARK if kind == "json" else (MD_MARK,), first_line=kind == "md")
    except OSError as exc:
        return f"{option} {path}: cannot be read to check what it is ({exc.strerror or exc}); choose another path"
    if ours:
        return None
    what = "JSON report" if kind == "json" else "Markdown report"
    return (f"{option} {path}: exists and is not a pytest-jetson {what}; pytest-jetson replaces only "
            f"its own reports: choose another path, or remove the file first")


def _not_a_store(option: str, target: Path) -> Optional[str]:
    if not target.is_file() or not target.stat().st_size:
        return None
    try:
        with open(target, "rb") as f:
            head = f.read(16)
    except OSError as exc:
        return f"{option} {target}: cannot be read to check what it is ({exc.strerror or exc}); choose another path"
    if head == b"SQLite format 3\x00":
        return None
    return (f"{option} {target}: exists and is not a history store (an SQLite file); pytest-jetson "
            f"appends only to its own store: choose another path, or remove the file first")


def _requests(settings: Any) -> List[Tuple[str, Any, str]]:
    step_summary = settings.report_md is not None and settings.report_md == os.environ.get("GITHUB_STEP_SUMMARY")
    wanted = []
    if settings.report_json:
        wanted.append(("--jetson-report-json", settings.report_json, "json"))
    if settings.report_md:
        wanted.append(("--jetson-report-md", settings.report_md, "append" if step_summary else "md"))
    if settings.plots:
        wanted.append(("--jetson-plots", settings.plots, "dir"))
    if getattr(settings, "history", None):
        wanted.append(("--jetson-history", settings.history, "store"))
    return wanted


def check_paths(settings: Any, root: Optional[Union[str, Path]] = None) -> List[str]:
    """Why each report ``settings`` asks for could not be written where it is asked, one message
    per refused path (empty: all may be written). ``root``: the project links may point into."""
    found = (_refusal(option, path, root, kind) for option, path, kind in _requests(settings))
    return [why for why in found if why]


def _why(option: str, path: Any, exc: BaseException) -> str:
    if isinstance(exc, fileio.UnsafeTarget):
        return f"{option} {exc}"
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
                  provenance: Optional[Dict[str, Any]] = None,
                  root: Optional[Union[str, Path]] = None) -> Tuple[List[str], List[str]]:
    """Write the reports ``settings`` asks for; returns (paths written, errors). ``counts``: the
    perf tests as pytest counted them (``report.counts.TestCounts``); ``target``: the baseline
    directory, the words for where the numbers come from and the backend; ``provenance``: the
    commit and the machine (``provenance.commit_info``, ``machine_info``); ``root``: the project
    a report path's link may point into."""
    title = (target or {}).get("title", "")
    written: List[str] = []
    errors: List[str] = []
    kinds = {option: kind for option, _, kind in _requests(settings)}

    def attempt(option: str, path: Any, write: Callable[[], Any]) -> None:
        refused = _refusal(option, path, root, kinds[option])
        if refused:
            errors.append(refused)
            return
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

            jsonreport.write(fileio.check_target(settings.report_json, root),
                             jsonreport.build(results, settings, fingerprint, counts, target, provenance))
            return settings.report_json

        attempt("--jetson-report-json", settings.report_json, write_json)
    step_summary = settings.report_md is not None and settings.report_md == os.environ.get("GITHUB_STEP_SUMMARY")
    if settings.report_md and (results or not step_summary):
        def write_md() -> Any:
            markdown.write(settings.report_md, markdown.render(results, fingerprint, counts, title,
                                                              commit=(provenance or {}).get("commit")),
                           append=step_summary, root=root)
            return settings.report_md

        attempt("--jetson-report-md", settings.report_md, write_md)
    if settings.plots:
        def write_plots() -> Any:
            return [str(p) for p in plots.write_plots(results, settings.plots)]

        attempt("--jetson-plots", settings.plots, write_plots)
    return written, errors
