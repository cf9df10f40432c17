"""How the simulated board responds to a change: ratios against published ones, and smoothness.

A gate on a simulated board compares ratios (this commit against its baseline), so what matters is
that a change a user makes reads as a board would show it:

* ratio error: for each pair of published results that differ in one thing (depth or size within
  a model family, precision, batch; ``sensitivity_pairs.json``, each pair citing its source), the
  predicted ratio of the two times over the published one. Reported twice: with the shipped
  constants (in-sample: the rows are calibration rows) and with the leave-one-source-out
  predictions stored in ``calibration.json`` (the constants fitted without that source). Goal:
  mean error at most 5%;
* smoothness: over small input-size steps, the share whose predicted time changes by less than a
  quarter or more than twice the change in the network's MACs (a plateau or a cliff). Goal: at
  most 10%.

``JETSON_BENCH_SIZES``: input sizes per model for the smoothness figure (smoke size 6; the figure
in the docs uses 24).

Run: ``python3 -m pytest benchmarks/test_bench_sensitivity.py -q -s``
"""

import json
import os
from collections import defaultdict
from pathlib import Path

import numpy as np

from pytest_jetson.sim import calibration, constants, predict
from pytest_jetson.sim.published import cases
from pytest_jetson.sim.workload import load

PAIRS = Path(__file__).with_name("sensitivity_pairs.json")
SIZES = int(os.environ.get("JETSON_BENCH_SIZES", "6"))
#: (model, first input size, step): a step small against the size, on the multiple the model needs
SMOOTH = (("resnet50", 192, 8), ("mobilenet_v2", 192, 8), ("yolov8n", 320, 32), ("resnet18", 192, 8))
DEVICES = ("orin-nano-8gb", "agx-orin-64gb", "nano")


def _seconds(case, value):
    return value if case.metric == "latency" else case.batch / value


def _ratio_errors():
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]
    by_id = {c.id: c for c in cases()[0]}
    used = sorted({p[k] for p in pairs for k in ("a", "b")})
    fit = calibration.stored_fit()
    now = dict(zip(used, calibration.predict_cases(fit, [by_id[i] for i in used])))
    loso = constants.validation().get("cross_validated", {})
    out = defaultdict(lambda: {"in_sample": [], "cross_validated": []})
    for p in pairs:
        a, b = by_id[p["a"]], by_id[p["b"]]
        for key, values in (("in_sample", now), ("cross_validated", loso)):
            if p["a"] in values and p["b"] in values:
                pred = _seconds(b, values[p["b"]]) / _seconds(a, values[p["a"]])
                out[p["change"]][key].append(abs(pred / p["published_ratio"] - 1.0))
    return out, len(pairs)


def test_ratio_error_against_published_pairs(benchmark):
    (errors, n) = benchmark.pedantic(_ratio_errors, rounds=1, iterations=1)
    assert n > 0
    lines = []
    for key in ("in_sample", "cross_validated"):
        every = [e for d in errors.values() for e in d[key]]
        assert every and all(np.isfinite(every))
        benchmark.extra_info[f"ratio_error_{key}_pct"] = round(100 * float(np.mean(every)), 2)
        for change, d in sorted(errors.items()):
            if d[key]:
                benchmark.extra_info[f"ratio_error_{key}_{change.replace(' ', '_')}_pct"] = round(
                    100 * float(np.mean(d[key])), 2)
        lines.append(f"{key}: {100 * np.mean(every):.1f}% over {len(every)} pairs (" + ", ".join(
            f"{c} {100 * np.mean(d[key]):.1f}% [{len(d[key])}]" for c, d in sorted(errors.items()) if d[key]) + ")")
    benchmark.extra_info["goal_pct"] = 5.0
    print("\nsensitivity ratio error, mean |predicted/published - 1|:\n  " + "\n  ".join(lines))


def _steps():
    outside, total, worst = 0, 0, []
    for device in DEVICES:
        for model, first, step in SMOOTH:
            sizes = [first + i * step for i in range(SIZES + 1)]
            t = [predict(device, model, resolution=s).latency for s in sizes]
            macs = [load(model, s, None).macs for s in sizes]
            for i in range(1, len(sizes)):
                dm, dt = macs[i] / macs[i - 1] - 1.0, t[i] / t[i - 1] - 1.0
                total += 1
                if not (0.25 * dm <= dt <= 2.0 * dm):
                    outside += 1
                    worst.append(f"{device} {model} {sizes[i - 1]}->{sizes[i]}: time {dt:+.1%}, MACs {dm:+.1%}")
    return outside, total, worst


def test_smoothness_of_input_size_steps(benchmark):
    outside, total, worst = benchmark.pedantic(_steps, rounds=1, iterations=1)
    assert total > 0
    share = outside / total
    benchmark.extra_info["steps"] = total
    benchmark.extra_info["outside_band_pct"] = round(100 * share, 1)
    benchmark.extra_info["goal_pct"] = 10.0
    print(f"\ninput-size steps outside [0.25, 2] x the MAC change: {outside} of {total} ({100 * share:.1f}%)")
    for line in worst:
        print("  " + line)
