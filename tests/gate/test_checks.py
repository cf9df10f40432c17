"""Verdicts of bound checks: pure functions of (bound, measurement, baseline)."""

import math

import numpy as np
import pytest

from pytest_jetson.gate import bounds, checks
from pytest_jetson.gate.baseline import entry_ref, fingerprint, make_entry
from pytest_jetson.gate.distributions import norm_ppf, t_ppf
from pytest_jetson.gate.stats import compact, metric_stats, quantile_of
from pytest_jetson.report.render import message
from pytest_jetson.run.measurement import Measurement

FP = {"device": "orin-nano-8gb", "power_mode": "15W", "simulated": True, "jetpack": None,
      "tensorrt": None, "jetson_clocks": None}


def measurement(scale=1.0, n=2000, seed=0, sigma=0.1, **kw):
    rng = np.random.default_rng(seed)
    lat = list(0.01 * scale * rng.lognormal(0, sigma, n))
    return Measurement(name="m", batch=8, latencies=lat, duration=float(sum(lat)), items=8 * n,
                       clock="virtual", precision="int8", **kw)


def ref_of(m, fp=FP):
    return entry_ref(make_entry(m, fingerprint(m, fp)), file="baselines/x.json", key="k")


def check(text, m, base_m=None, metric="throughput", **kw):
    b = bounds.parse(metric, text)
    ref = ref_of(base_m) if base_m is not None else None
    return checks.check(b, m, ref, fingerprint=fingerprint(m, FP), device="orin-nano-8gb", **kw)


def test_norm_and_t_quantiles_match_tables():
    assert norm_ppf(0.995) == pytest.approx(2.5758, abs=1e-4)
    assert norm_ppf(0.025) == pytest.approx(-1.95996, abs=1e-4)
    assert t_ppf(0.975, 10) == pytest.approx(2.228, abs=5e-3)
    assert t_ppf(0.995, 29) == pytest.approx(2.756, abs=5e-3)


def test_compact_sample_keeps_quantiles():
    x = np.random.default_rng(3).lognormal(0, 0.5, 50_000)
    c = compact(x)
    assert len(c) == 200
    for q in (0.1, 0.5, 0.9, 0.99):
        assert quantile_of(c, q) == pytest.approx(np.quantile(x, q), rel=0.02)


def test_absolute_bound_pass_and_fail_with_interval():
    m = measurement()
    ok = check(">= 500/s", m)
    bad = check(">= 900/s", m)
    assert (ok.outcome, ok.reason) == ("pass", "bound_met")
    assert (bad.outcome, bad.reason) == ("fail", "bound_violated")
    assert bad.comparator == ">=" and bad.threshold == 900.0
    assert bad.ci[0] < bad.value < bad.ci[1]
    text = message(bad)
    assert text.startswith("throughput ") and "99% CI" in text and "violates the bound >= 900.0/s" in text


def test_a_clear_regression_fails_with_baseline_change_and_significance():
    v = check("5%", measurement(1.12, seed=2), measurement(seed=1))
    assert (v.outcome, v.reason, v.basis) == ("fail", "regression", "statistics")
    assert v.change == pytest.approx(1 / 1.12 - 1, abs=0.02)
    assert v.worse == pytest.approx(1 - 1 / 1.12, abs=0.02) and v.worse_ci[0] > 0.05
    assert v.p_value < 1e-6 and v.tolerance == 0.05
    msg = message(v)
    assert "% worse than the baseline" in msg and "tolerance 5%" in msg and "p=" in msg
    assert "baseline: baselines/x.json recorded" in msg and "orin-nano-8gb, 15W" in msg


def test_same_distribution_passes():
    v = check("5%", measurement(seed=2), measurement(seed=1), metric="latency_p99")
    assert v.outcome == "pass", message(v)


def test_small_change_inside_tolerance_passes_and_run_to_run_noise_is_not_significant():
    # 2% within one pair of runs is inside what runs on one board differ by (the 1% floor per run)
    v = check("5%", measurement(1.02, n=20000, seed=2), measurement(n=20000, seed=1), metric="latency_mean")
    assert v.outcome == "pass"
    assert 0.01 < v.p_value < 0.5
    assert "within the tolerance" in message(v)


def test_too_noisy_to_decide_is_inconclusive():
    v = check("5%", measurement(1.06, n=30, sigma=0.5, seed=2), measurement(n=30, sigma=0.5, seed=1),
              metric="latency_mean")
    assert (v.outcome, v.reason) == ("inconclusive", "inconclusive")
    assert v.worse_ci[0] <= 0 < 0.05 < v.worse_ci[1]
    assert "measure longer" in message(v)


def test_improvement_passes_and_says_better():
    v = check("5%", measurement(0.8, seed=2), measurement(seed=1))
    assert (v.outcome, v.reason) == ("pass", "improvement") and v.worse < 0
    assert "% better than the baseline" in message(v)


def test_missing_baseline_skips_or_fails():
    m = measurement()
    skip = check("5%", m)
    assert (skip.outcome, skip.reason) == ("skip", "no_baseline")
    assert "no baseline for orin-nano-8gb; record with --jetson-update-baselines" in message(skip)
    assert check("5%", m, missing_baseline="fail").outcome == "fail"


def test_environment_mismatch_is_not_compared_unless_allowed():
    m = measurement(1.5, seed=2)
    ref = ref_of(measurement(seed=1), dict(FP, power_mode="7W"))
    b = bounds.parse("throughput", "5%")
    v = checks.check(b, m, ref, fingerprint=fingerprint(m, FP))
    assert (v.outcome, v.reason) == ("skip", "env_mismatch")
    assert v.env_diffs == [["power_mode", "7W", "15W"]]
    assert "power_mode: 7W (baseline) vs 15W (now)" in message(v)
    assert "--jetson-allow-env-mismatch" in message(v)
    forced = checks.check(b, m, ref, fingerprint=fingerprint(m, FP), allow_env_mismatch=True)
    assert (forced.outcome, forced.reason, forced.env_ignored) == ("fail", "regression", True)
    assert "despite environment differences" in message(forced)


def test_precision_is_part_of_the_workload_and_simulated_of_the_environment():
    fp_now = fingerprint(measurement(), FP)
    base = dict(fp_now, precision="fp16", simulated=False)
    diffs = checks.env_differences(fp_now, base)
    assert ["precision", "fp16", "int8"] in diffs and ["simulated", False, True] in diffs
    assert checks.env_differences(fp_now, base, checks.ENVIRONMENT_KEYS) == [["simulated", False, True]]
    assert checks.workload_differences(fp_now, base) == [["precision", "fp16", "int8"]]


def test_metric_nothing_measured_errors_naming_sources_tried():
    class Tele:
        source = "host"
        tried = [("jtop", "jetson-stats is not installed"), ("tegrastats", "not found on PATH")]
        power_mean_w = None

        def explain_missing(self, metric):
            return f"no {metric}: " + "; ".join(f"tried {a}: {b}" for a, b in self.tried)

    v = check("<= 10 W", measurement(telemetry=Tele()), metric="power")
    assert (v.outcome, v.reason) == ("error", "cannot_check")
    assert "tried jtop: jetson-stats is not installed" in message(v)
    none = check("<= 10 W", measurement(), metric="power")
    assert none.outcome == "error" and "no telemetry ran" in message(none)


def test_metrics_without_samples_are_decided_with_the_run_to_run_floor():
    m_old, m_new = measurement(engine_memory=100 * 2 ** 20), measurement(engine_memory=120 * 2 ** 20)
    v = check("10%", m_new, m_old, metric="memory")
    assert (v.outcome, v.reason, v.basis) == ("fail", "regression", "spread")
    assert "run-to-run spread" in message(v)
    same = check("10%", measurement(engine_memory=101 * 2 ** 20), m_old, metric="memory")
    assert same.outcome == "pass"


def test_verdict_round_trips_through_dict():
    v = check("5%", measurement(1.12, seed=2), measurement(seed=1))
    assert checks.Verdict.from_dict(v.to_dict()) == v


def test_stats_se_grows_with_autocorrelation():
    rng = np.random.default_rng(5)
    iid = rng.normal(10, 1, 3000)
    walk = 10 + np.repeat(rng.normal(0, 1, 30), 100) * 0.5 + rng.normal(0, 1, 3000)

    class M:
        def __init__(self, x):
            self.x = x

        def metric(self, name):
            return float(np.mean(self.x))

        def metric_samples(self, name):
            return list(self.x)

    a = metric_stats(M(iid), "latency_mean")
    b = metric_stats(M(walk), "latency_mean")
    assert a.se_log == pytest.approx(1 / math.sqrt(3000) / 10, rel=0.4)
    assert b.se_log > 2 * a.se_log


# -- properties -----------------------------------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_RANK = {"pass": 0, "skip": 0, "inconclusive": 1, "fail": 2}


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), tol=st.sampled_from([0.02, 0.05, 0.1]),
       metric=st.sampled_from(["throughput", "latency_mean", "latency_p50", "latency_p99"]),
       slow=st.floats(1.0, 1.5))
def test_a_larger_slowdown_never_gets_a_milder_verdict(seed, tol, metric, slow):
    base = measurement(seed=seed, n=400)
    ref = ref_of(base)
    rng_seed = seed + 1
    b = bounds.parse(metric, f"{tol * 100:g}%")
    milder = checks.check(b, measurement(slow, seed=rng_seed, n=400), ref, fingerprint=fingerprint(base, FP))
    worse = checks.check(b, measurement(slow * 1.2, seed=rng_seed, n=400), ref, fingerprint=fingerprint(base, FP))
    assert _RANK[worse.outcome] >= _RANK[milder.outcome] or milder.outcome == "inconclusive"


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), metric=st.sampled_from(["throughput", "latency_mean", "latency_p99"]))
def test_a_run_compared_with_itself_never_fails_and_shows_no_change(seed, metric):
    m = measurement(seed=seed, n=3000)
    v = checks.check(bounds.parse(metric, "5%"), m, ref_of(m), fingerprint=fingerprint(m, FP))
    # a tail percentile of a heavy-tailed run can be too noisy to rule out a 5% change even
    # against itself: that is inconclusive by the rule, never a failure
    assert v.outcome in ("pass", "inconclusive")
    if metric != "latency_p99":
        assert v.outcome == "pass"
    # the stored value is rounded to what the measurement resolves: far below its own error
    assert abs(v.change) < 0.05 * (ref_of(m).metrics[metric].se_log or 1e-3) + 1e-6
    assert v.p_value > 0.95  # the rounding moves it by at most a fortieth of its error
