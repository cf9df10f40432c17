"""The metric table drives the gate: a row added with the code that measures it gets a value,
samples, an error, a baseline entry with that error and a verdict decided from it."""

import numpy as np
import pytest

from pytest_jetson import metrics
from pytest_jetson.errors import ConfigError
from pytest_jetson.gate import bounds, checks
from pytest_jetson.gate.baseline import entry_ref, fingerprint, make_entry
from pytest_jetson.gate.stats import ESTIMATORS, metric_stats
from pytest_jetson.run import measurement as measurement_module
from pytest_jetson.run.measurement import Measurement

FP = {"device": "orin-nano-8gb", "power_mode": "15W", "simulated": True}

# A per-iteration figure the measuring code keeps in Measurement.extra: the time spent decoding
# each batch's input.
DECODE = metrics.Metric("decode_time", "time", "higher", "the test", "mean decode time of one batch",
                        "the test kept no decode times", samples="extra.decode_s", reduction="mean",
                        estimator="batch_means", plugin="tests")


@pytest.fixture
def decode_metric():
    metrics.register(DECODE)
    yield DECODE
    metrics.unregister(DECODE.name)


def measured(level, seed=0, n=400):
    rng = np.random.default_rng(seed)
    lat = list(0.01 * rng.lognormal(0, 0.05, n))
    decode = list(level * rng.lognormal(0, 0.1, n))
    return Measurement(name="m", batch=8, latencies=lat, duration=float(sum(lat)), items=8 * n,
                       clock="virtual", precision="int8", extra={"decode_s": decode})


def test_a_toy_metric_from_per_iteration_samples_gets_real_statistics(decode_metric):
    base = measured(0.002)
    assert base.metric("decode_time") == pytest.approx(0.002, rel=0.02)
    assert len(base.metric_samples("decode_time")) == 400
    st = metric_stats(base, "decode_time")
    assert 0 < st.se_log < 0.02 and st.df >= 4

    entry = make_entry(base, fingerprint(base, FP))
    record = entry["metrics"]["decode_time"]
    assert record["se_log"] > 0 and record["df"] >= 4 and record["n"] == 400

    ref = entry_ref(entry, file="baselines/x.json", key="k")
    bound = bounds.parse("decode_time", "5%")
    same = checks.check(bound, measured(0.002, seed=1), ref, fingerprint=fingerprint(base, FP))
    assert (same.outcome, same.basis) == ("pass", "statistics")
    slower = checks.check(bound, measured(0.0024, seed=2), ref, fingerprint=fingerprint(base, FP))
    assert (slower.outcome, slower.basis) == ("fail", "statistics")
    assert slower.change == pytest.approx(0.2, abs=0.03)
    assert slower.within_se == pytest.approx(np.hypot(record["se_log"], metric_stats(
        measured(0.0024, seed=2), "decode_time").se_log), rel=0.05)


def test_a_metric_the_measurement_did_not_keep_has_no_value(decode_metric):
    m = measured(0.002)
    m.extra.clear()
    assert m.metric("decode_time") is None
    assert metric_stats(m, "decode_time") is None
    assert "decode_time" not in make_entry(m, fingerprint(m, FP))["metrics"]


def test_the_default_lists_are_the_tables():
    assert metrics.defaults("compare") == ("throughput", "latency_mean", "latency_p50", "latency_p99",
                                           "per_process_throughput", "memory", "power", "energy")
    assert metrics.defaults("history") == ("throughput", "latency_mean")
    assert metrics.defaults("show") == ("throughput", "latency_p99", "memory", "power")
    assert metrics.defaults("measured") == ("throughput", "latency_p99")
    with pytest.raises(ValueError, match="unknown default metric list 'trends'"):
        metrics.defaults("trends")


def test_every_name_a_row_may_use_has_code_behind_it():
    assert set(ESTIMATORS) == set(metrics.ESTIMATORS)
    assert set(measurement_module.SAMPLERS) == set(metrics.SAMPLES)
    for row in metrics.METRICS.values():
        assert metrics.problem(row) is None, row.name


def test_a_refused_row_leaves_the_table_as_it_was():
    before = dict(metrics.METRICS)
    ok = metrics.Metric("ok_metric", "time", "higher", "t", "d", "h", samples="latencies", reduction="peak")
    bad = metrics.Metric("bad_metric", "time", "sideways", "t", "d", "h", samples="latencies", reduction="peak")
    with pytest.raises(ConfigError, match="myplugin registered the metric 'bad_metric': worse 'sideways'"):
        metrics.register_plugins([("myplugin", [ok, bad])])
    assert metrics.METRICS == before
    metrics.unregister("throughput")  # a built-in row is never removed
    assert metrics.METRICS == before
