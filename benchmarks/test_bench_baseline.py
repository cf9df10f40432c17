"""What recording baselines costs against comparing with them: linear, and within 3x.

400 tests in one module, each with one measurement shaped as the harness makes them (5 s of a
7.7 ms engine: ~650 latencies, a 10 Hz telemetry series) and the example suite's five relative
bounds. *Comparing* is what a gate session does per test: look the entry up (the file read once)
and check the five bounds. *Recording* is what a recording session does: make every test's entry,
stage it, and write the file once at the end (``BaselineStore.stage`` / ``flush``), both into an
empty directory and over the same file (re-recording unchanged code: nothing written). The
ratio is measured in one run, on one machine, as the median of ``ROUNDS`` rounds.

Run: ``pytest benchmarks/test_bench_baseline.py --benchmark-enable -s``.
"""

import os
import statistics
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gate_noise import SUITE, make_run, measurement  # noqa: E402

from pytest_jetson.gate import baseline  # noqa: E402
from pytest_jetson.gate.bounds import parse  # noqa: E402
from pytest_jetson.gate.checks import check  # noqa: E402

TESTS = int(os.environ.get("JETSON_BENCH_BASELINE_TESTS", "400"))
ROUNDS = 3
FP = {"device": "orin-nano-8gb", "power_mode": "15W", "simulated": True}
BOUNDS = [parse(m, t) for m, t in (("throughput", "5%"), ("latency_mean", "5%"), ("memory", "5%"),
                                  ("power", "10%"), ("energy", "10%"))]


def measurements(n, seed):
    spec = SUITE[10]  # 7.7 ms per iteration, 5 s
    out = []
    for i in range(n):
        m = measurement(make_run(spec, "sim", seed * 100_000 + i, 1.0), 1.0)
        m.name = f"resnet50-{i}"
        out.append(m)
    return out


def nodeids(n):
    return [f"tests/perf/test_many.py::test_model[{i}]" for i in range(n)]


def record(store, ms, ids):
    for nodeid, m in zip(ids, ms):
        store.stage(nodeid, nodeid, baseline.make_entry(m, baseline.fingerprint(m, FP)))
    return store.flush()


def compare(store, ms, ids):
    verdicts = []
    for nodeid, m in zip(ids, ms):
        ref = store.lookup(nodeid)
        fp = baseline.fingerprint(m, FP)
        verdicts += [check(b, m, ref, fingerprint=fp) for b in BOUNDS]
    return verdicts


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def figures(tmp_path):
    ids = nodeids(TESTS)
    first, again = measurements(TESTS, 1), measurements(TESTS, 2)
    rec, rerec, cmp = [], [], []
    for r in range(ROUNDS):
        root = tmp_path / f"round{r}"
        t, flushed = _timed(lambda root=root: record(baseline.BaselineStore(root, "orin-nano-8gb"), first, ids))
        assert flushed.count == TESTS and not flushed.errors
        rec.append(t)
        path = baseline.BaselineStore(root, "orin-nano-8gb").path_for(ids[0])
        before = path.read_bytes()
        t, flushed = _timed(lambda root=root: record(baseline.BaselineStore(root, "orin-nano-8gb"), again, ids))
        assert flushed.count == 0 and path.read_bytes() == before  # unchanged code: zero bytes
        rerec.append(t)
        t, verdicts = _timed(lambda root=root: compare(baseline.BaselineStore(root, "orin-nano-8gb"), again, ids))
        assert len(verdicts) == 5 * TESTS and all(v.outcome == "pass" for v in verdicts), \
            [v.message for v in verdicts if v.outcome != "pass"][:3]
        cmp.append(t)
    med = statistics.median
    return {"tests": TESTS, "record_s": med(rec), "rerecord_s": med(rerec), "compare_s": med(cmp),
            "record_over_compare": med(rec) / med(cmp), "rerecord_over_compare": med(rerec) / med(cmp),
            "file_bytes": path.stat().st_size, "file_lines": len(path.read_text().splitlines())}


def test_recording_costs_at_most_three_times_comparing(benchmark, tmp_path):
    fig = benchmark.pedantic(lambda: figures(tmp_path), rounds=1, iterations=1)
    print(f"\n{fig['tests']} tests in one module: record {fig['record_s']:.2f} s, re-record unchanged "
          f"{fig['rerecord_s']:.2f} s, compare {fig['compare_s']:.2f} s: record / compare = "
          f"{fig['record_over_compare']:.2f}, re-record / compare = {fig['rerecord_over_compare']:.2f}; "
          f"the file: {fig['file_bytes']} bytes, {fig['file_lines']} lines")
    benchmark.extra_info.update(fig)
    assert fig["record_over_compare"] <= 3.0, fig
    assert fig["rerecord_over_compare"] <= 3.0, fig


@pytest.mark.parametrize("n", [100, 400])
def test_recording_is_linear_in_the_tests_of_a_module(benchmark, tmp_path, n):
    """Per-test recording cost does not grow with the module (one write per file)."""
    ids, ms = nodeids(n), measurements(n, 3)

    def run():
        return record(baseline.BaselineStore(tmp_path / f"n{n}-{time.perf_counter_ns()}", "orin-nano-8gb"), ms, ids)

    flushed = benchmark.pedantic(run, rounds=3, iterations=1)
    assert flushed.count == n
    benchmark.extra_info["per_test_s"] = benchmark.stats.stats.median / n
