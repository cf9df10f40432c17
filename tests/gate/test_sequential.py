"""The sequential decision: exact group-sequential boundaries, the three-way rule, and its error
rates under optional stopping (looks at a growing measurement, as the recorder extends it)."""

import math

import numpy as np
import pytest

from pytest_jetson.gate import sequential as sq
from pytest_jetson.gate.distributions import norm_sf
from pytest_jetson.gate.stats import MetricStats


def test_boundaries_reproduce_obrien_fleming_and_a_monte_carlo_of_brownian_motion():
    first = norm_sf(2.797)  # O'Brien-Fleming, two looks, one-sided 2.5%: 2.797 then 1.977
    assert sq.upper_boundaries((0.5, 1.0), (first, 0.025 - first))[1] == pytest.approx(1.977, abs=2e-3)
    t, inc = (0.3, 0.6, 1.0), (0.002, 0.008, 0.015)
    c = sq.upper_boundaries(t, inc)
    rng = np.random.default_rng(1)
    b = np.cumsum(rng.standard_normal((400_000, 3)) * np.sqrt(np.diff((0.0,) + t)), axis=1)
    z = b / np.sqrt(t)
    alive = np.ones(len(z), bool)
    for j in range(3):
        crossed = alive & (z[:, j] >= c[j])
        assert crossed.mean() == pytest.approx(inc[j], rel=0.12)
        alive &= ~crossed


def test_spending_is_monotone_and_complete():
    xs = [sq.spent(0.01, t, -4) for t in np.linspace(0, 1, 11)]
    assert xs[0] == 0 and xs[-1] == pytest.approx(0.01) and all(a <= b for a, b in zip(xs, xs[1:]))


def stats(value, se, df=200.0):
    return MetricStats(value=value, se_log=se, df=df, n=1000)


@pytest.mark.parametrize("value, decision", [
    (1.00, "within_tolerance"), (1.03, "within_tolerance"), (1.10, "regression"), (0.80, "improvement"),
])
def test_the_rule_on_clear_cases(value, decision):
    step = sq.decide_once("latency_mean", stats(value, 0.002), stats(1.0, 0.002), 0.05, alpha=1e-5)
    assert step.decision == decision
    assert step.resolvable


def test_throughput_worsens_downwards():
    step = sq.decide_once("throughput", stats(0.88, 0.002), stats(1.0, 0.002), 0.05, alpha=1e-5)
    assert step.decision == "regression" and step.worse == pytest.approx(0.12)


def test_too_noisy_is_inconclusive_and_says_which_tolerance_it_could_decide():
    step = sq.decide_once("latency_mean", stats(1.06, 0.03), stats(1.0, 0.03), 0.05, alpha=1e-5)
    assert step.decision == "inconclusive" and not step.resolvable
    assert step.min_tolerance > 0.10


def test_the_run_to_run_floor_is_part_of_the_error():
    # no within-run noise at all: a 4% change is still not significant against 1% between runs
    step = sq.decide_once("latency_mean", stats(1.04, 0.0), stats(1.0, 0.0), 0.05, alpha=1e-5)
    assert step.se == pytest.approx(0.01 * math.sqrt(2))
    assert step.decision == "within_tolerance"
    tight = sq.decide_once("latency_mean", stats(1.04, 0.0), stats(1.0, 0.0), 0.05, alpha=1e-5, floor=0.001)
    assert tight.decision == "within_tolerance" and tight.p_value < 1e-6


def test_a_baseline_pooled_from_several_runs_uses_their_spread_shrunk_to_the_floor():
    pooled = MetricStats(value=1.0, se_log=0.0, df=100, runs=5, between=0.002)
    sigma, m = sq.run_to_run("latency_mean", pooled)
    assert m == 5 and 0.002 < sigma < 0.01
    assert sigma == pytest.approx(math.sqrt((4 * 0.01 ** 2 + 4 * 0.002 ** 2) / 8))
    noisy = MetricStats(value=1.0, runs=5, between=0.05)
    assert sq.run_to_run("latency_mean", noisy)[0] > 0.03


def test_a_decided_comparison_keeps_its_decision():
    seq = sq.Sequential("latency_mean", 0.05, sq.Design(alpha=1e-5))
    first = seq.look(stats(1.0, 0.001), stats(1.0, 0.001), 1.0)
    assert first.decision == "within_tolerance"
    assert seq.look(stats(1.5, 0.001), stats(1.0, 0.001), 1.5) is first


def test_looks_run_to_the_budget():
    assert sq.Design(budget=3.0, step=0.5).looks() == [1.0, 1.5, 2.0, 2.5, 3.0]
    assert sq.Design(budget=1.0).looks() == [1.0]
    with pytest.raises(ValueError):
        sq.Design(alpha=0.7)


def _simulate(true_d, within_per_look, floor_se, design, rng, trials):
    """The canonical process of one comparison: a nested within-run mean and a fixed baseline and
    run-to-run part; returns the decisions."""
    looks = design.looks()
    out = []
    for _ in range(trials):
        fixed = rng.standard_normal() * floor_se
        seq = sq.Sequential("latency_mean", 0.05, design, floor=0.0)
        # within-run increments: the mean after look k averages the increments so far
        incs = rng.standard_normal(len(looks))
        widths = np.diff([0.0] + looks)
        total = 0.0
        for k, (measured, w) in enumerate(zip(looks, widths)):
            total += incs[k] * math.sqrt(w) * within_per_look
            mean_noise = total / measured
            within = within_per_look / math.sqrt(measured)
            cur = MetricStats(value=math.exp(true_d + fixed + mean_noise), se_log=within, df=1e6)
            base = MetricStats(value=1.0, se_log=floor_se, df=1e6)
            step = seq.look(cur, base, measured)
            if step.decided:
                out.append((step.decision, step.look))
                break
    return out


def test_error_rates_hold_under_optional_stopping():
    """alpha (regression when unchanged) and beta (within the tolerance when twice the tolerance
    worse) hold over all looks, for a comparison the budget resolves but the first look does not."""
    rng = np.random.default_rng(7)
    design = sq.Design(alpha=0.01, beta=0.05)
    theta1 = math.log(1.10)
    unchanged = _simulate(0.0, 0.03, 0.012, design, rng, 4000)
    regressed = _simulate(theta1, 0.03, 0.012, design, rng, 4000)
    decisions = [d for d, _ in unchanged]
    fa = decisions.count("regression") / len(unchanged)
    miss = [d for d, _ in regressed].count("within_tolerance") / len(regressed)
    assert fa <= 0.01 + 3 * math.sqrt(0.01 / 4000), fa
    assert miss <= 0.05 + 3 * math.sqrt(0.05 / 4000), miss
    # the budget resolves this noise: an unchanged metric is rarely left inconclusive ...
    assert decisions.count("inconclusive") / len(unchanged) <= 0.01 + 3 * math.sqrt(0.01 / 4000)
    # ... and extending is what decided many of them
    assert sum(1 for _, look in unchanged if look > 1) > 0.2 * len(unchanged)


def test_a_step_carries_what_the_session_diagnosis_needs():
    step = sq.decide_once("throughput", stats(0.97, 0.003), stats(1.0, 0.004), 0.05)
    assert step.d == pytest.approx(-math.log(0.97))
    assert step.within_se == pytest.approx(0.005)
    assert step.reason == step.decision == "within_tolerance"
