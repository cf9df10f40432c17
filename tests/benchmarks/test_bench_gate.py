"""The gate's statistics on the simulated device's seeded noise: how often it cries wolf, how often
it catches a real regression, and how long a measurement that takes.

For each simulated measurement duration, ``TRIALS`` independent pairs of runs of ResNet50 int8
batch 8 on the simulated Orin Nano (latencies from ``pytest_jetson.sim.noise.LatencyNoise``: lognormal
jitter, rare 1.5-4x outliers, slow thermal drift; each run starts at a random point of the drift
curve, as runs in a real suite do) go through the gate exactly as in a test session: the first run
becomes a baseline entry (``make_entry``: compact sample, rounding), the second is checked against it
with a relative bound of ``TOLERANCE``.

* A/A: both runs of the same engine. A ``fail`` is a false alarm.
* A/B: the second run regressed by twice the tolerance (throughput 10% lower, latencies 10%
  higher). A ``fail`` is a catch.

The property (issue 8): false alarms <= 1% and catches >= 95%, at the duration the example suite
uses (``PROPERTY_DURATION``); ``benchmark.extra_info`` reports every rate and the shortest duration
(and iteration count) at which each metric meets the property.

Run: ``python3 -m pytest tests/benchmarks/test_bench_gate.py -q -s`` (``JETSON_BENCH_TRIALS=1000``
for tighter figures).
"""

import os

import numpy as np
import pytest

from pytest_jetson.gate.baseline import entry_ref, fingerprint, make_entry
from pytest_jetson.gate.bounds import parse
from pytest_jetson.gate.compare import check
from pytest_jetson.run.measurement import Measurement

TOLERANCE = 0.05
REGRESSION = 2 * TOLERANCE
CONFIDENCE = 0.99
TRIALS = int(os.environ.get("JETSON_BENCH_TRIALS", "300"))
DURATIONS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
PROPERTY_DURATION = 10.0  # the duration the DESIGN example measures for
METRIC_NAMES = ("throughput", "latency_mean", "latency_p50", "latency_p99")
BATCH = 8
WINDOWS = 10  # the harness splits a fixed-duration run into this many throughput windows
FP = {"device": "orin-nano-8gb", "power_mode": "15W", "simulated": True}


def base_latency() -> float:
    try:
        from pytest_jetson import sim

        return float(sim.predict("orin-nano", "resnet50", "int8", BATCH).latency)
    except Exception:  # the simulator is another package's; the statistics do not depend on it
        return 0.008


def run(noise_cls, base: float, duration: float, seed: int, slowdown: float) -> Measurement:
    """One simulated fixed-duration run, shaped as the harness shapes it."""
    rng = np.random.default_rng(seed + 7_777_777)
    t_start = float(rng.uniform(0.0, 120.0))
    n = max(2, int(duration / base))
    lat = noise_cls(seed).sample(base * slowdown, n, t_start=t_start)
    ends = np.cumsum(lat)
    edges = [(n * k) // WINDOWS for k in range(WINDOWS + 1)]
    windows = []
    prev = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        if hi > lo:
            windows.append((hi - lo) * BATCH / (ends[hi - 1] - prev))
            prev = float(ends[hi - 1])
    return Measurement(name="resnet50", batch=BATCH, latencies=lat.tolist(), duration=float(ends[-1]),
                       items=BATCH * n, clock="virtual", precision="int8", windows=windows)


def trial_rates(noise_cls, base: float, duration: float, slowdown: float, trials: int):
    bounds = {m: parse(m, f"{TOLERANCE * 100:g}%") for m in METRIC_NAMES}
    counts = {m: {"pass": 0, "fail": 0, "inconclusive": 0, "skip": 0, "error": 0} for m in METRIC_NAMES}
    for i in range(trials):
        a = run(noise_cls, base, duration, seed=2 * i + 1, slowdown=1.0)
        b = run(noise_cls, base, duration, seed=2 * i + 2, slowdown=slowdown)
        ref = entry_ref(make_entry(a, fingerprint(a, FP), CONFIDENCE))
        fp = fingerprint(b, FP)
        for m in METRIC_NAMES:
            v = check(bounds[m], b, ref, confidence=CONFIDENCE, fingerprint=fp)
            counts[m][v.outcome] += 1
    return {m: {k: c / trials for k, c in counts[m].items()} for m in METRIC_NAMES}


def gate_figures(trials: int = TRIALS):
    from pytest_jetson.sim.noise import LatencyNoise

    base = base_latency()
    out = {"base_latency_s": base, "tolerance": TOLERANCE, "regression": REGRESSION,
           "confidence": CONFIDENCE, "trials": trials, "by_duration": {}}
    for d in DURATIONS:
        aa = trial_rates(LatencyNoise, base, d, 1.0, trials)
        ab = trial_rates(LatencyNoise, base, d, 1.0 + REGRESSION, trials)
        out["by_duration"][d] = {
            "iterations": max(2, int(d / base)),
            **{m: {"false_alarm": aa[m]["fail"], "aa_inconclusive": aa[m]["inconclusive"],
                   "caught": ab[m]["fail"], "ab_inconclusive": ab[m]["inconclusive"]}
               for m in METRIC_NAMES},
        }
    needed = {}
    for m in METRIC_NAMES:
        ok = [d for d in DURATIONS
              if out["by_duration"][d][m]["false_alarm"] <= 0.01 and out["by_duration"][d][m]["caught"] >= 0.95]
        needed[m] = None if not ok else {"simulated_s": ok[0], "iterations": out["by_duration"][ok[0]]["iterations"]}
    out["shortest_duration_meeting_property"] = needed
    return out


def _print(fig):
    print(f"\ngate on simulated ResNet50 int8 b{BATCH} (base latency {fig['base_latency_s'] * 1e3:.2f} ms), "
          f"tolerance {TOLERANCE:.0%}, regression {REGRESSION:.0%}, confidence {CONFIDENCE}, "
          f"{fig['trials']} trials per cell")
    print(f"{'duration':>8} {'iters':>6}  " + "  ".join(f"{m:>24}" for m in METRIC_NAMES))
    print(f"{'':>8} {'':>6}  " + "  ".join(f"{'FA% / inc% | catch% / inc%':>24}" for _ in METRIC_NAMES))
    for d, row in fig["by_duration"].items():
        cells = [f"{row[m]['false_alarm'] * 100:4.1f}/{row[m]['aa_inconclusive'] * 100:4.1f} | "
                 f"{row[m]['caught'] * 100:5.1f}/{row[m]['ab_inconclusive'] * 100:4.1f}" for m in METRIC_NAMES]
        print(f"{d:>7}s {row['iterations']:>6}  " + "  ".join(f"{c:>24}" for c in cells))
    print("shortest duration meeting FA<=1% and catch>=95%:", fig["shortest_duration_meeting_property"])


def test_gate_false_alarms_and_power(benchmark):
    pytest.importorskip("pytest_jetson.sim.noise")
    fig = benchmark.pedantic(gate_figures, rounds=1, iterations=1)
    _print(fig)
    benchmark.extra_info.update({
        "trials": fig["trials"], "tolerance": TOLERANCE, "regression": REGRESSION,
        "confidence": CONFIDENCE, "base_latency_s": fig["base_latency_s"],
        "by_duration": {str(k): v for k, v in fig["by_duration"].items()},
        "shortest_duration_meeting_property": fig["shortest_duration_meeting_property"],
    })
    at = fig["by_duration"][PROPERTY_DURATION]
    for m in METRIC_NAMES:
        assert at[m]["false_alarm"] <= 0.01, (m, at[m])
        assert at[m]["caught"] >= 0.95, (m, at[m])
    for d, row in fig["by_duration"].items():
        for m in METRIC_NAMES:
            assert row[m]["false_alarm"] <= 0.01, (d, m, row[m])


def calibration(trials: int = TRIALS):
    """One-sided false-positive rate of the significance test alone (tolerance 0, no drift):
    nominal (1 - confidence) / 2 = 0.5% when the error estimates are honest."""
    from pytest_jetson.gate.bounds import Bound
    from pytest_jetson.sim.noise import LatencyNoise

    base = base_latency()
    out = {}
    for n in (256, 1280):
        for metric in METRIC_NAMES:
            b = Bound(metric=metric, text="0%", kind="relative", tolerance=0.0, unit="%")
            fails = 0
            for i in range(trials):
                runs = []
                for seed in (2 * i + 1, 2 * i + 2):
                    lat = LatencyNoise(seed, drift=0.0).sample(base, n)
                    runs.append(Measurement(name="m", batch=BATCH, latencies=lat.tolist(),
                                            duration=float(lat.sum()), items=BATCH * n))
                v = check(b, runs[1], entry_ref(make_entry(runs[0], {}, CONFIDENCE)), confidence=CONFIDENCE)
                fails += v.outcome == "fail"
            out[f"{metric}@{n}"] = fails / trials
    return out


def test_significance_is_calibrated(benchmark):
    pytest.importorskip("pytest_jetson.sim.noise")
    rates = benchmark.pedantic(calibration, rounds=1, iterations=1)
    print("\none-sided false positives at tolerance 0 (nominal 0.5%):",
          {k: f"{v * 100:.2f}%" for k, v in rates.items()})
    benchmark.extra_info.update({"nominal": (1 - CONFIDENCE) / 2, "false_positive": rates})
    for key, rate in rates.items():
        # 4x the nominal rate leaves room for the binomial noise of a few hundred trials
        assert rate <= 4 * (1 - CONFIDENCE) / 2 + 0.005, (key, rate)
