"""A simulated suite at scale: CPU time per test, peak RSS and JSON report size, serial and with
``-n 2``.

Each row is one real ``pytest --jetson-report-json report.json [-n 2]`` in a subprocess, on a
generated module of N parametrized tests (``perf.measure(trt_engine("resnet18"), duration="0.2s")``
on the simulated Orin Nano), run by a fresh wrapper process so that its children's resource usage
is that run's alone. Figures per row: wall time, CPU time per test (the session and every xdist
worker: user + system), peak RSS (the largest single process), report bytes per test.

Run: ``JETSON_BENCH_SUITE_SIZES=10,100,1000,3000 pytest benchmarks/test_bench_suite_memory.py -s``
(10,000 too with ``JETSON_BENCH_SUITE_SIZES=...,10000``); the default, 10 and 100, is the smoke
size CI runs.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SIZES = [int(n) for n in os.environ.get("JETSON_BENCH_SUITE_SIZES", "10,100").split(",") if n.strip()]
ROOT = Path(__file__).resolve().parents[1]

SUITE = '''
import pytest

@pytest.mark.parametrize("i", range({n}))
def test_suite(trt_engine, perf, i):
    perf.measure(trt_engine("resnet18"), duration="0.2s")
'''

#: runs the command given and prints the wall time and its children's CPU time and peak RSS
WRAPPER = '''
import json, resource, subprocess, sys, time
t = time.perf_counter()
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": rc, "wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_kb": ru.ru_maxrss}))
'''


def _run(project: Path, n: int, xdist: bool) -> dict:
    report = project / f"report-{n}-{int(xdist)}.json"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--jetson-device", "orin-nano",
           "--jetson-report-json", str(report),
           # a private temporary root: pytest's shared one makes a session delete what other
           # sessions on the machine left there (seconds of a run, none of it the suite's)
           "--basetemp", str(project / f"tmp-{n}-{int(xdist)}")] + (["-n", "2"] if xdist else ["-p", "no:xdist"])
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTEST_JETSON_SYSROOT=str(project / "empty-root"))
    env.pop("GITHUB_STEP_SUMMARY", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules compiled once, not per process
    out = subprocess.run([sys.executable, "-c", WRAPPER] + cmd, cwd=str(project), env=env,
                         capture_output=True, text=True, check=True)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row.update(n=n, xdist=xdist, report=report.stat().st_size if report.exists() else 0)
    return row


@pytest.mark.parametrize("n", SIZES)
def test_suite_scale(tmp_path, n, capsys):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "test_suite.py").write_text(SUITE.format(n=n))
    rows = [_run(tmp_path, n, xdist) for xdist in (False, True)]
    with capsys.disabled():
        for r in rows:
            print(f"\n{r['n']:>6} tests {'-n 2  ' if r['xdist'] else 'serial'}: wall {r['wall']:7.1f} s, "
                  f"CPU {1000 * r['cpu'] / n:6.1f} ms/test, peak RSS {r['rss_kb'] / 1024:7.1f} MiB "
                  f"({r['rss_kb'] / n:7.1f} KB/test), report {r['report'] / n / 1024:5.2f} KB/test, rc {r['rc']}")
    for r in rows:
        assert r["rc"] == 0
        assert r["report"] <= 5 * 1024 * n + 4096
