"""``pytest-jetson history`` and ``compare`` on large reports: peak RSS and wall time.

One real session (``perf.measure(trt_engine("resnet18"), duration="0.2s")`` on the simulated Orin
Nano, 4 tests) writes a report; its tests are repeated under new node ids, each with its figures
scaled a little, into reports of ``TESTS`` tests, ``RUNS`` of them a day apart. Each command runs
in its own process under a wrapper that prints its peak RSS. ``history`` reads the reports one at a
time and keeps each run's followed points only; ``compare`` reads the old report once into an
index by key (each measurement's kept figures) and walks the new one twice (the comparisons
counted, then decided), so neither report's tests are held. Each report's text is read a piece at
a time (``report.report_text``), so not even its text is held whole.

Run: ``JETSON_BENCH_HISTORY_RUNS=50 JETSON_BENCH_HISTORY_TESTS=1000 pytest
benchmarks/test_bench_report_readers.py -s``; the default (5 reports of 200 tests) is the smoke size.
``compare`` compares the first report with the last: ``JETSON_BENCH_HISTORY_RUNS=2`` for two
reports of ``TESTS`` tests each.
"""

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

RUNS = int(os.environ.get("JETSON_BENCH_HISTORY_RUNS", "5"))
TESTS = int(os.environ.get("JETSON_BENCH_HISTORY_TESTS", "200"))
ROOT = Path(__file__).resolve().parents[1]

SUITE = '''
import pytest

@pytest.mark.parametrize("i", range(4))
def test_suite(trt_engine, perf, i):
    perf.measure(trt_engine("resnet18"), duration="0.2s")
'''

WRAPPER = '''
import json, resource, subprocess, sys, time
t = time.perf_counter()
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode
wall = time.perf_counter() - t
print(json.dumps({"rc": rc, "wall": wall, "rss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
'''


def _env(project: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTEST_JETSON_SYSROOT=str(project / "empty-root"))
    env.pop("GITHUB_STEP_SUMMARY", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _scaled(x, factor):
    if isinstance(x, float):
        return x * factor
    if isinstance(x, dict):
        return {k: _scaled(v, factor) for k, v in x.items()}
    if isinstance(x, list):
        return [_scaled(v, factor) for v in x]
    return x


def _reports(project: Path) -> list:
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (project / "test_suite.py").write_text(SUITE)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                    "--jetson-device", "orin-nano", "--jetson-report-json", "seed.json"],
                   cwd=str(project), env=_env(project), check=True, capture_output=True)
    seed = json.loads((project / "seed.json").read_text())
    paths = []
    for run in range(RUNS):
        doc = copy.deepcopy(seed)
        doc["created"] = f"2026-{1 + run // 28:02d}-{1 + run % 28:02d}T12:00:00Z"
        tests = []
        for i in range(TESTS):
            t = _scaled(seed["tests"][i % len(seed["tests"])], 1 + 0.001 * ((i * 7 + run) % 11))
            t["nodeid"] = f"test_suite.py::test_suite[{i}]"
            t["keys"] = [t["nodeid"]]
            for m in t["measurements"]:
                m["key"] = t["nodeid"]
            tests.append(t)
        doc["tests"] = tests
        path = project / "runs" / f"run{run:03d}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(doc, separators=(",", ":")))
        paths.append(path)
    return paths


def _measure(project: Path, *args: str) -> dict:
    cmd = [sys.executable, "-m", "pytest_jetson.cli"] + list(args)
    out = subprocess.run([sys.executable, "-c", WRAPPER] + cmd, cwd=str(project), env=_env(project),
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_history_and_compare_memory(tmp_path, capsys):
    paths = _reports(tmp_path)
    size = sum(p.stat().st_size for p in paths)
    rows = {"history": _measure(tmp_path, "history", "runs"),
            "compare": _measure(tmp_path, "compare", str(paths[0]), str(paths[-1]))}
    with capsys.disabled():
        print(f"\n{RUNS} reports x {TESTS} tests ({size / 2 ** 20:.1f} MiB of JSON):")
        for name, r in rows.items():
            print(f"  {name:8s} wall {r['wall']:6.1f} s, peak RSS {r['rss_kb'] / 1024:7.1f} MiB, rc {r['rc']}")
    assert rows["history"]["rc"] == 0
    assert rows["compare"]["rc"] in (0, 1)  # 1: a change the scaling made worse than its tolerance
