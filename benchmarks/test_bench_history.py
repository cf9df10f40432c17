"""``pytest-jetson history``'s statistics on synthetic histories: how often it reports a step or a
drift in noise alone (false alarms), and how often it finds a real step or a slow drift.

A history is ``RUNS`` runs of one metric with run-to-run scatter ``SIGMA`` (lognormal; 1% is what
a pinned-clock board shows between CI runs, 2% a noisier one). For each cell, ``TRIALS`` seeded
histories go through ``report.trend.analyse`` with its defaults (steps: Welch at 0.01 after
Bonferroni, at least 3 runs a side, at least 1%; drifts: Mann-Kendall at 0.05, at least 1% over the
history, a line beating the steps on BIC):

* A/A: noise only. A step or a drift is a false alarm.
* step: the metric worsens by ``STEP`` from the middle run on. Found: a step within one run of it.
* drift: the metric worsens by ``DRIFT`` per run, less than a 5% tolerance over 10 runs. Found: a
  drift in the right direction (a step instead counts as found by a step, reported apart).

Run: ``python3 -m pytest benchmarks/test_bench_history.py -q -s`` (``JETSON_BENCH_TRIALS=1000``
for tighter figures).
"""

import math
import os
import random

import pytest

from pytest_jetson.report.trend import analyse

TRIALS = int(os.environ.get("JETSON_BENCH_TRIALS", "300"))
RUNS = (10, 20, 30)
SIGMAS = (0.01, 0.02)
STEP = 0.05
DRIFT = 0.004


def make_history(n: int, sigma: float, seed: int, step: float = 0.0, drift: float = 0.0):
    rng = random.Random(seed)
    return [100.0 * math.exp(rng.gauss(0, sigma)) * (1 + step * (i >= n // 2)) * (1 + drift) ** i
            for i in range(n)]


def rates(n: int, sigma: float):
    out = {"aa_step": 0, "aa_drift": 0, "step_found": 0, "step_as_drift": 0, "drift_found": 0,
           "drift_as_step": 0}
    for seed in range(TRIALS):
        aa = analyse(make_history(n, sigma, seed))
        out["aa_step"] += bool(aa.steps)
        out["aa_drift"] += aa.drift is not None
        st = analyse(make_history(n, sigma, seed + 10 ** 6, step=STEP))
        out["step_found"] += any(abs(s.at - n // 2) <= 1 and s.change > 0 for s in st.steps)
        out["step_as_drift"] += st.drift is not None
        dr = analyse(make_history(n, sigma, seed + 2 * 10 ** 6, drift=DRIFT))
        out["drift_found"] += dr.drift is not None and dr.drift.slope > 0
        out["drift_as_step"] += bool(dr.steps)
    return {k: v / TRIALS for k, v in out.items()}


@pytest.mark.parametrize("sigma", SIGMAS, ids=lambda s: f"sigma{s:.0%}")
def test_history_error_rates(benchmark, sigma):
    table = {n: rates(n, sigma) for n in RUNS}
    benchmark.extra_info.update({f"{n} runs": r for n, r in table.items()})
    print(f"\nsigma {sigma:.0%}, {TRIALS} histories per cell: "
          "A/A false step / false drift · 5% step found (as drift) · 0.4%/run drift found (as steps)")
    for n, r in table.items():
        print(f"  {n:>2} runs: {r['aa_step']:.1%} / {r['aa_drift']:.1%} · {r['step_found']:.1%} "
              f"({r['step_as_drift']:.1%}) · {r['drift_found']:.1%} ({r['drift_as_step']:.1%})")
    benchmark(analyse, make_history(30, sigma, 0))
    assert table[30]["aa_step"] <= 0.02  # Bonferroni keeps a false step rare


def test_a_suite_of_noise_reports_nothing_most_of_the_time(benchmark):
    """A suite of 300 metrics, none of which changed, over 20 runs: how often the history
    reports any step or drift at all (Benjamini-Hochberg across the metrics)."""
    from pytest_jetson.report import run_history

    metrics, runs, suites = 300, 20, max(20, TRIALS // 10)

    def suite(seed: int) -> int:
        found = []
        for k in range(metrics):
            values = make_history(runs, 0.01, seed * 10 ** 4 + k)
            s = run_history.Series(key=f"t::m{k}", metric="throughput",
                               points=[run_history.Point(value=v) for v in values])
            s.trend = analyse(values)
            found.append(s)
        run_history._across_the_suite(found, 0.01, 0.05)
        return sum(bool(s.trend.steps) + (s.trend.drift is not None) for s in found)

    counts = [suite(seed) for seed in range(suites)]
    rate = sum(c > 0 for c in counts) / suites
    benchmark.extra_info.update(suites=suites, metrics=metrics, runs=runs, any_finding=rate,
                                findings_per_suite=sum(counts) / suites)
    print(f"\n{suites} suites of {metrics} unchanged metrics over {runs} runs: {rate:.1%} report anything, "
          f"{sum(counts) / suites:.2f} findings per suite")
    benchmark.pedantic(suite, args=(0,), rounds=1, iterations=1)
    assert rate <= 0.1
