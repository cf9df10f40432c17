"""Hostile inputs for the command line's report readers (``compare``, ``plot``, ``history``,
``export``): each bad file is given to each command in a real process with a timeout, and the
outcome is sorted into clear error, traceback, hang or harmed file.

``tests/cli/test_hostile_reports.py`` asserts each case is a clear error; this counts them for any
checkout, before and after a change (``cd /tmp && PYTHONPATH=<checkout> python
<checkout>/benchmarks/count_hostile_reports.py``)."""

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Dict, List, Tuple

SUITE = '''
import pytest

@pytest.mark.perf(latency_mean="10%")
def test_fast(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), duration="0.2s")
'''

TIMEOUT = 60


def make_report(where: Path) -> Path:
    """A real report of a one-test simulated suite."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (where / "test_suite.py").write_text(SUITE)
    env = dict(os.environ, PYTEST_JETSON_SYSROOT=str(where / "empty-root"))
    env.pop("GITHUB_STEP_SUMMARY", None)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--jetson-device",
                    "orin-nano", "--jetson-report-json", "report.json", "test_suite.py"],
                   cwd=str(where), env=env, capture_output=True, check=True, timeout=300)
    return where / "report.json"


def _edit(change: Callable[[dict], None]) -> Callable[[Path, str], None]:
    def make(path: Path, good: str) -> None:
        doc = json.loads(good)
        change(doc)
        path.write_text(json.dumps(doc))
    return make


def _text(edit: Callable[[str], str]) -> Callable[[Path, str], None]:
    def make(path: Path, good: str) -> None:
        new = edit(good)
        assert new != good
        path.write_text(new)
    return make


def _first_latency(literal: str) -> Callable[[str], str]:
    """The first latency figure the report keeps (a sample, or the summary of a summarised one)."""
    return lambda good: re.sub(r'("latency_mean":\s*[^0-9\-\]}]*?)-?[0-9][-0-9.e+]*', lambda m: m.group(1) + literal,
                              good, count=1)


def _summary(doc: dict, **fields) -> None:
    doc["tests"][0]["measurements"][0]["summary"].update(fields)


def _fifo(path: Path, good: str) -> None:
    os.mkfifo(str(path))


def _dev_zero(path: Path, good: str) -> None:
    path.symlink_to("/dev/zero")


BAD: Dict[str, Callable[[Path, str], None]] = {
    "fifo": _fifo,
    "link to /dev/zero": _dev_zero,
    "directory": lambda path, good: path.mkdir(),
    "not JSON": lambda path, good: path.write_text(good[: len(good) // 2]),
    "binary": lambda path, good: path.write_bytes(bytes(range(256)) * 4),
    "nested 100000 deep": lambda path, good: path.write_text("[" * 100000 + "]" * 100000),
    "400-digit latency": _text(_first_latency("9" * 400)),
    "1e308 latency": _text(_first_latency("1e308")),
    "NaN latency": _text(_first_latency("NaN")),
    "duplicate key": _text(lambda good: re.sub(r'"kind":\s*', '"kind": "x", "kind": ', good, count=1)),
    "throughput \"fast\"": _edit(lambda doc: _summary(doc, throughput="fast")),
    "tests an object": _edit(lambda doc: doc.update(tests={"a": 1})),
    "test a string": _edit(lambda doc: doc.update(tests=["test_suite.py::test_fast"])),
    "measurement a string": _edit(lambda doc: doc["tests"][0].update(measurements=["fast"])),
    "latencies a string": _edit(lambda doc: doc["tests"][0]["measurements"][0].update(latencies="fast")),
    "duration a list": _edit(lambda doc: doc["tests"][0]["measurements"][0].update(duration=[1])),
    "schema a string": _edit(lambda doc: doc.update(schema="2")),
}


def commands(good: Path, bad: Path, out: Path) -> Dict[str, List[str]]:
    return {
        "compare": ["compare", str(good), str(bad)],
        "plot": ["plot", str(bad), "--out", str(out / "plots")],
        "history": ["history", str(good), str(bad), "--no-plots"],
        "export": ["export", str(bad), "--format", "bencher"],
    }


def _state(path: Path) -> Tuple:
    """What the bad input is, to tell it was not harmed."""
    st = os.lstat(str(path))
    body = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
    return (st.st_mode, os.readlink(str(path)) if path.is_symlink() else "", body)


def run_case(tmp: Path, good: Path, command: str, bad_name: str) -> Tuple[str, str]:
    """(outcome, output): outcome one of 'clear', 'traceback', 'hang', 'harmed', 'passed'."""
    bad = tmp / "bad.json"
    BAD[bad_name](bad, good.read_text())
    before = _state(bad)
    argv = commands(good, bad, tmp)[command]
    try:
        run = subprocess.run([sys.executable, "-m", "pytest_jetson.cli", *argv], capture_output=True,
                             text=True, timeout=TIMEOUT, cwd=str(tmp))
    except subprocess.TimeoutExpired:
        return "hang", ""
    output = run.stdout + run.stderr
    if _state(bad) != before:
        return "harmed", output
    if "Traceback" in output or "INTERNALERROR" in output:
        return "traceback", output
    errors = [line for line in run.stderr.splitlines() if line.strip()]
    if run.returncode == 2 and len(errors) == 1 and str(bad) in errors[0]:
        return "clear", output
    return "passed" if run.returncode == 0 else "unclear", output


def main() -> int:
    counts: Dict[str, int] = {}
    with tempfile.TemporaryDirectory() as d:
        good = make_report(Path(d) / "project")
        for command in ("compare", "plot", "history", "export"):
            for name in BAD:
                with tempfile.TemporaryDirectory() as case:
                    outcome, output = run_case(Path(case), good, command, name)
                counts[outcome] = counts.get(outcome, 0) + 1
                if outcome != "clear":
                    last = output.strip().splitlines()[-1:] if output.strip() else [""]
                    print(f"{command:8} {name:22} {outcome:9} {last[0][:120]}")
    total = sum(counts.values())
    print(f"inputs tried: {total}; " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
