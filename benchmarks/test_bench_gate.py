"""The gate's error rates at the level of a whole run, on the library (no pytest session).

A *run* is the synthetic suite of ``gate_noise.SUITE``: 80 tests shaped like the example suite's
single-engine tests, each with its five relative bounds (throughput 5%, latency_mean 5%, memory
5%, power 10%, energy 10%): 400 relative comparisons. Per seed, every test records a baseline
(one run, measured to the budget) and is then compared with a second run, extended look by look
by ``gate.sequential`` with the family's design (``gate.family.design_for(400)``: each comparison's
alpha is 1% / (2 x 400)), as the plugin does once wired. Two noise models (``gate_noise``): the
simulator's own jitter (``sim``) and noise shaped like a real board's (``board``: replayed Orin
Nano latencies, DVFS steps, thermal drift, bimodal tests, fitted power wander, run-to-run
factors).

* **family false alarms**: the share of seeds whose unchanged run has any failing comparison, with
  the shipped workflow's flags (``--jetson-inconclusive=fail``: an inconclusive comparison fails
  the run) and with the default ones (only regressions fail). Goal: <= 1%.
* **detection**: per seed, one test and one of its bounds chosen at random, regressed by twice the
  tolerance; caught when that comparison fails (shipped flags). Goal: >= 95%.
* **per comparison**, per metric: unchanged (regression / inconclusive), twice the tolerance (caught
  / inconclusive), and the mean measured duration in requested durations.

Run: ``pytest benchmarks/test_bench_gate.py --benchmark-enable -s`` (100 seeds per model,
about a minute on two cores); ``JETSON_BENCH_TRIALS=1000`` for tighter figures.
"""

import os
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Dict

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gate_noise import BOUNDS, REGRESSION, SUITE, fails, gate_test, mlperf_spread  # noqa: E402

from pytest_jetson.gate.family import design_for, excess_spread, noisier_than_assumed  # noqa: E402

TRIALS = int(os.environ.get("JETSON_BENCH_TRIALS", "100"))
COMPARISONS = len(SUITE) * len(BOUNDS)
DESIGN = design_for(COMPARISONS)


def family_figures(model: str, seeds: int, between: float = 0.5) -> Dict[str, object]:
    fa_shipped = fa_default = 0
    per: Dict[str, Counter] = {m: Counter() for m in BOUNDS}
    looks: Dict[str, list] = {m: [] for m in BOUNDS}
    spread_in = []
    for seed in range(seeds):
        bad_shipped = bad_default = False
        for spec in SUITE:
            for metric, dec in gate_test(spec, model, seed, DESIGN, between=between).items():
                per[metric][dec.decision] += 1
                looks[metric].append(DESIGN.looks()[dec.look - 1])
                bad_shipped |= fails(dec.decision, True)
                bad_default |= fails(dec.decision, False)
                if seed == 0:
                    spread_in.append((metric, dec.d, dec.within))
        fa_shipped += bad_shipped
        fa_default += bad_default
    return {"seeds": seeds, "false_alarm_shipped": fa_shipped / seeds,
            "false_alarm_default": fa_default / seeds,
            "per_comparison": {m: dict(c) for m, c in per.items()},
            "measured": {m: sum(v) / len(v) for m, v in looks.items()},
            "spread_seed0": excess_spread(spread_in)}


def detection_figures(model: str, seeds: int, between: float = 0.5) -> Dict[str, object]:
    rng = random.Random(1234)
    caught = caught_default = 0
    for seed in range(seeds):
        spec = rng.choice(SUITE)
        metric = rng.choice(sorted(BOUNDS))
        tol = BOUNDS[metric]
        dec = gate_test(spec, model, 10_000 + seed, DESIGN, between=between, bounds={metric: tol},
                        **REGRESSION[metric](tol))[metric]
        caught += fails(dec.decision, True)
        caught_default += fails(dec.decision, False)
    return {"seeds": seeds, "caught_shipped": caught / seeds, "caught_default": caught_default / seeds}


def per_metric_detection(model: str, seeds: int) -> Dict[str, Dict[str, float]]:
    out = {}
    for metric, tol in BOUNDS.items():
        c: Counter = Counter()
        measured = []
        for seed in range(seeds):
            for spec in SUITE[seed % 4::4]:  # a quarter of the suite per seed: every speed
                dec = gate_test(spec, model, 20_000 + seed, DESIGN, bounds={metric: tol},
                                **REGRESSION[metric](tol))[metric]
                c[dec.decision] += 1
                measured.append(DESIGN.looks()[dec.look - 1])
        n = sum(c.values())
        out[metric] = {"n": n, "caught": c["regression"] / n, "inconclusive": c["inconclusive"] / n,
                       "measured": sum(measured) / n}
    return out


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%" if x else "0%"


def _print(model: str, fam, det, per) -> None:
    print(f"\n== {model} noise: {COMPARISONS} relative comparisons per run, alpha per comparison "
          f"{DESIGN.alpha:.3g}, beta {DESIGN.beta}, budget {DESIGN.budget:g}x")
    print(f"family false alarms: {_pct(fam['false_alarm_shipped'])} of {fam['seeds']} unchanged runs "
          f"(shipped flags), {_pct(fam['false_alarm_default'])} (default flags)")
    print(f"detection of one 2x-tolerance regression: {_pct(det['caught_shipped'])} of {det['seeds']} "
          f"runs (shipped flags), {_pct(det['caught_default'])} (default flags)")
    print("| metric | tolerance | unchanged: regression / inconclusive | measured | 2x tolerance: caught / "
          "inconclusive | measured |")
    print("|---|---|---|---|---|---|")
    for metric, tol in BOUNDS.items():
        c = fam["per_comparison"][metric]
        n = sum(c.values())
        d = per[metric]
        print(f"| {metric} | {tol:.0%} | {_pct(c.get('regression', 0) / n)} / "
              f"{_pct(c.get('inconclusive', 0) / n)} ({n}) | {fam['measured'][metric]:.2f}x | "
              f"{_pct(d['caught'])} / {_pct(d['inconclusive'])} ({d['n']}) | {d['measured']:.2f}x |")


@pytest.mark.parametrize("model", ["sim", "board"])
def test_a_whole_run_is_quiet_and_still_catches_one_regression(benchmark, model):
    pytest.importorskip("pytest_jetson.sim.noise")

    def figures():
        fam = family_figures(model, TRIALS)
        det = detection_figures(model, TRIALS)
        per = per_metric_detection(model, max(4, TRIALS // 10))
        return fam, det, per

    fam, det, per = benchmark.pedantic(figures, rounds=1, iterations=1)
    _print(model, fam, det, per)
    benchmark.extra_info.update({"model": model, "comparisons": COMPARISONS, "alpha": DESIGN.alpha,
                                 "family": {k: v for k, v in fam.items() if k != "spread_seed0"},
                                 "detection": det, "per_metric_detection": per})
    assert fam["false_alarm_shipped"] <= 0.01, fam
    assert det["caught_shipped"] >= 0.95, det


def test_a_board_noisier_than_the_floor_is_flagged(benchmark):
    """What happens when a board's run-to-run spread is twice the floor the gate assumes: false
    alarms climb (the floor is a promise the board must keep), and the session's own comparisons
    show it (``family.excess_spread``), so the summary can say so."""
    def figures():
        return family_figures("board", max(10, TRIALS // 5), between=2.0)

    fam = benchmark.pedantic(figures, rounds=1, iterations=1)
    lines = noisier_than_assumed(fam["spread_seed0"])
    print(f"\nboard noise at twice the floor: family false alarms {_pct(fam['false_alarm_shipped'])} "
          f"of {fam['seeds']} runs; the session's diagnosis:")
    for line in lines:
        print("  " + line)
    print("MLPerf run-to-run spread of the mean latency, for scale:",
          {k: f"{v:.2%}" for k, v in mlperf_spread().items()})
    benchmark.extra_info.update({"false_alarm_shipped": fam["false_alarm_shipped"], "diagnosis": lines})
    assert any(line.startswith(("latency_mean", "throughput")) for line in lines), fam["spread_seed0"]
