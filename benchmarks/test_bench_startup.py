"""What the plugin adds to pytest's start-up on a one-test file (goal: under 50 ms).

Each round runs ``pytest --collect-only`` in a fresh interpreter twice, with the plugin and with
``-p no:jetson``, interleaved so a busy neighbour hurts both alike, and times ``pytest.main``
inside the process (interpreter start-up is the same for both and only adds noise), as CPU time
of the process (``time.process_time``: what a loaded neighbour's time slices do not inflate) and as
wall time. Also lists
the project's modules a plain run imports: none of them may pull numpy or the gate.

    JETSON_BENCH_ROUNDS=25 python3 -m pytest benchmarks/test_bench_startup.py -s
"""

import os
import statistics
import subprocess
import sys

import pytest

ROUNDS = int(os.environ.get("JETSON_BENCH_ROUNDS", "8"))

TIMER = """
import sys, time, io, contextlib
t, c = time.perf_counter(), time.process_time()
import pytest
with contextlib.redirect_stdout(io.StringIO()):
    pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider"] + sys.argv[1:])
print(time.process_time() - c, time.perf_counter() - t)
print(sorted(m for m in sys.modules if m.startswith("pytest_jetson") or m == "numpy"))
"""


def _run(cwd, *args):
    out = subprocess.run([sys.executable, "-c", TIMER, *args], capture_output=True, text=True,
                         cwd=str(cwd), env=dict(os.environ, PYTEST_JETSON_SYSROOT=str(cwd / "root")))
    seconds, modules = out.stdout.strip().splitlines()[-2:]
    cpu, wall = map(float, seconds.split())
    return (cpu, wall), modules


def startup(tmp_path):
    (tmp_path / "test_one.py").write_text("def test_a():\n    assert True\n")
    with_plugin, without = [], []
    modules = ""
    for _ in range(ROUNDS):
        seconds, modules = _run(tmp_path)
        with_plugin.append(seconds)
        without.append(_run(tmp_path, "-p", "no:jetson")[0])
    return with_plugin, without, modules


def test_bench_plugin_startup_over_bare_pytest(benchmark, tmp_path):
    with_plugin, without, modules = benchmark.pedantic(startup, args=(tmp_path,), rounds=1, iterations=1)
    print(f"\nplugin start-up over bare pytest ({ROUNDS} rounds, median / min):")
    for i, kind in enumerate(("cpu", "wall")):
        a, b = [x[i] for x in with_plugin], [x[i] for x in without]
        med = (statistics.median(a) - statistics.median(b)) * 1e3
        low = (min(a) - min(b)) * 1e3
        benchmark.extra_info.update({f"added_{kind}_ms_median": med, f"added_{kind}_ms_min": low})
        print(f"  {kind:4} time: +{med:.1f} ms / +{low:.1f} ms (pytest.main {statistics.median(b) * 1e3:.0f} ms "
              f"without the plugin)")
    benchmark.extra_info.update(rounds=ROUNDS, imported=modules)
    print(f"imported: {modules}")
    assert "numpy" not in modules and "pytest_jetson.gate.stats" not in modules


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__, "-s"])
