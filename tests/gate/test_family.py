"""Session-level error control: the family's per-comparison level, adjusted p-values for reports,
and the diagnosis of a board noisier than the gate assumed."""

import numpy as np
import pytest

from pytest_jetson.gate import family
from pytest_jetson.gate.bounds import parse
from pytest_jetson.gate.checks import check_relative
from pytest_jetson.gate.sequential import decide_once
from pytest_jetson.gate.stats import MetricStats


def test_per_comparison_level_shares_the_family_budget():
    assert family.per_comparison_alpha(400) == pytest.approx(0.01 / 800)
    assert family.per_comparison_alpha(400, inconclusive_fails=False) == pytest.approx(0.01 / 400)
    assert family.per_comparison_alpha(0) == pytest.approx(0.005)
    d = family.design_for(400, budget=2.0)
    assert d.alpha == pytest.approx(1.25e-5) and d.budget == 2.0
    with pytest.raises(ValueError):
        family.per_comparison_alpha(10, family_alpha=1.5)


def test_the_confidence_for_check_relative_gives_the_same_decision_as_the_design():
    conf = family.confidence_for(400)
    assert (1 - conf) / 2 == pytest.approx(family.per_comparison_alpha(400))
    cur, base = MetricStats(value=1.058, se_log=0.001, df=500), MetricStats(value=1.0, se_log=0.001, df=500)
    # 5.8% worse, 4 standard errors of the floor: a regression at 0.5%, not at the family's level
    assert decide_once("latency_mean", cur, base, 0.05, alpha=0.005).decision == "regression"
    assert decide_once("latency_mean", cur, base, 0.05, alpha=(1 - conf) / 2).decision != "regression"


def test_family_size_counts_relative_bounds_and_overrun_says_what_it_costs():
    tests = [[parse("throughput", "5%"), parse("latency_p99", "<= 15 ms")], [parse("power", "10%")], []]
    assert family.family_size(tests) == 2
    f = family.Family(planned=2)
    f.count(2)
    assert f.overrun is None
    f.count(2)
    assert "4 relative comparisons" in f.overrun and "2.00%" in f.overrun
    assert f.design().alpha == pytest.approx(0.0025)


def test_holm_and_benjamini_hochberg_adjust_like_the_textbook():
    p = [0.01, 0.04, 0.03, 0.005]
    assert family.holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert family.benjamini_hochberg(p) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    statsmodels = pytest.importorskip("scipy.stats")
    if hasattr(statsmodels, "false_discovery_control"):
        assert family.benjamini_hochberg(p) == pytest.approx(list(statsmodels.false_discovery_control(p)))


@pytest.mark.parametrize("sigma", [0.0, 0.01, 0.03])
def test_excess_spread_recovers_the_run_to_run_spread_of_a_session(sigma):
    rng = np.random.default_rng(5)
    within = rng.uniform(0.001, 0.01, 400)
    d = rng.standard_normal(400) * np.sqrt(within ** 2 + 2 * sigma ** 2)
    d[:5] += 0.3  # a few real regressions do not inflate it
    est, n = family.excess_spread([("latency_mean", float(x), float(w)) for x, w in zip(d, within)])["latency_mean"]
    assert n == 400
    assert est == pytest.approx(sigma, abs=0.003)
    lines = family.noisier_than_assumed({"latency_mean": (est, n)})
    assert bool(lines) == (sigma > 0.015)


def test_check_relative_decides_with_the_floor_at_the_family_level(tmp_path):
    from pytest_jetson.gate.checks import BaselineRef
    from pytest_jetson.run.measurement import Measurement

    lat = [0.01] * 400
    m = Measurement(name="m", batch=1, latencies=[x * 1.06 for x in lat], duration=4.24, items=400,
                    engine_memory=100)
    ref = BaselineRef(metrics={"latency_mean": MetricStats(value=0.01, se_log=0.0, df=399)})
    b = parse("latency_mean", "5%")
    assert check_relative(b, m, ref, confidence=0.99).outcome == "fail"
    # at the level of one comparison among 400, 6% against a single-run baseline is not enough
    assert check_relative(b, m, ref, confidence=family.confidence_for(400)).outcome == "pass"
