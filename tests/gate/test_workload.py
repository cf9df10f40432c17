"""A change of what runs is a change to gate, not another environment; what a backend or device
cannot measure, and bounds limited to other devices or backends, are skipped with the reason."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pytest_jetson.gate import bounds, checks
from pytest_jetson.gate.baseline import entry_ref, fingerprint, make_entry, needs_write
from pytest_jetson.gate.extend import Extension
from pytest_jetson.gate.family import family_size
from pytest_jetson.gate.scope import applies
from pytest_jetson.gate.sequential import Design
from pytest_jetson.gate.session import TestResult
from pytest_jetson.report import terminal
from pytest_jetson.report.render import message, workload_notes
from pytest_jetson.run.measurement import Measurement
from pytest_jetson.telemetry.summary import TelemetrySummary

REPO = Path(__file__).resolve().parents[2]

BOARD = {"device": "orin-nano-8gb", "power_mode": "15W", "simulated": True, "jetpack": None,
         "tensorrt": None, "jetson_clocks": None}
HOST = {"device": "host-amd-epyc-7763", "power_mode": None, "simulated": False, "cpu": "AMD EPYC 7763",
        "cores": 4, "os": "Linux"}


def measurement(scale=1.0, n=2000, seed=0, precision="fp16", batch=8, backend="simulated", **kw):
    rng = np.random.default_rng(seed)
    lat = list(0.01 * scale * rng.lognormal(0, 0.05, n))
    return Measurement(name="m", batch=batch, latencies=lat, duration=float(sum(lat)), items=batch * n,
                       clock="virtual", precision=precision, backend=backend, model="resnet50", **kw)


def ref_of(m, fp=BOARD, **extra):
    entry = make_entry(m, dict(fingerprint(m, fp), **extra))
    return entry_ref(entry, file="baselines/orin-nano-8gb/test_x.py.json", key="test_x.py::test_a")


def check(text, m, ref, metric="throughput", fp=BOARD, extra=None, **kw):
    b = kw.pop("bound", None) or bounds.parse(metric, text)
    now = dict(fingerprint(m, fp), **(extra or {}))
    return checks.check(b, m, ref, fingerprint=now, device=fp["device"], **kw)


# -- the fingerprint: environment and workload ------------------------------------------------------
def test_the_fingerprint_table_parts_environment_from_workload():
    assert set(checks.ENVIRONMENT_KEYS) >= {"device", "power_mode", "jetson_clocks", "jetpack",
                                             "tensorrt", "simulated", "backend"}
    assert set(checks.WORKLOAD_KEYS) >= {"model", "precision", "batch", "resolution", "accelerator"}
    assert not set(checks.ENVIRONMENT_KEYS) & set(checks.WORKLOAD_KEYS)
    assert set(checks.COMPARED_KEYS) == set(checks.ENVIRONMENT_KEYS) | set(checks.WORKLOAD_KEYS)


def test_a_precision_change_is_compared_and_fails_naming_the_change_first():
    ref = ref_of(measurement(seed=1, precision="fp16"))
    v = check("5%", measurement(1 / 0.47, seed=2, precision="fp32"), ref)
    assert (v.outcome, v.reason) == ("fail", "regression")
    assert v.workload_diffs == [["precision", "fp16", "fp32"]] and v.env_diffs == []
    assert v.worse == pytest.approx(0.53, abs=0.01)
    text = message(v)
    assert text.startswith("precision fp16 -> fp32: throughput ")
    assert "% worse than the baseline 800/s (a regression past the tolerance 5%" in text.splitlines()[0]
    assert "re-record" not in text and "--jetson-allow-env-mismatch" not in text
    assert "what runs changed since the baseline (precision fp16 -> fp32)" in text
    # the comparison measures the change, not the board's noise: the diagnosis leaves it out
    assert v.log_worse is None and v.within_se is None


def test_an_unchanged_workload_says_nothing_of_one():
    ref = ref_of(measurement(seed=1))
    v = check("5%", measurement(seed=2), ref)
    assert (v.outcome, v.workload_diffs) == ("pass", [])
    assert "->" not in message(v) and v.log_worse is not None


def test_batch_and_resolution_changes_are_compared_and_named():
    ref = ref_of(measurement(seed=1, batch=8), resolution="224x224")
    v = check("5%", measurement(seed=2, batch=16), ref, extra={"resolution": "320x320"})
    assert v.reason in ("within_tolerance", "improvement", "regression", "inconclusive")
    assert v.workload_diffs == [["batch", 8, 16], ["resolution", "224x224", "320x320"]]
    assert message(v).startswith("batch 8 -> 16, resolution 224x224 -> 320x320: throughput ")
    slower = check("5%", measurement(1.3, seed=2, batch=8), ref, extra={"resolution": "320x320"})
    assert (slower.outcome, slower.workload_diffs) == ("fail", [["resolution", "224x224", "320x320"]])


def test_another_environment_is_still_refused_and_re_recording_stays_the_advice():
    ref = ref_of(measurement(seed=1, precision="fp16"), dict(BOARD, power_mode="7W"))
    v = check("5%", measurement(1 / 0.47, seed=2, precision="fp32"), ref)
    assert (v.outcome, v.reason) == ("skip", "env_mismatch")
    assert v.env_diffs == [["power_mode", "7W", "15W"]]
    assert v.workload_diffs == [["precision", "fp16", "fp32"]]
    text = message(v)
    assert "recorded under another environment: power_mode: 7W (baseline) vs 15W (now)" in text
    assert "(what runs changed too: precision fp16 -> fp32)" in text
    assert "re-record with --jetson-update-baselines" in text
    assert check("5%", measurement(1 / 0.47, seed=2, precision="fp32"), ref,
                 missing_baseline="fail").outcome == "fail"
    forced = check("5%", measurement(1 / 0.47, seed=2, precision="fp32"), ref, allow_env_mismatch=True)
    assert (forced.reason, forced.env_ignored) == ("regression", True)
    assert forced.workload_diffs == [["precision", "fp16", "fp32"]]


def test_a_workload_field_the_baseline_never_recorded_is_unknown_not_changed():
    ref = ref_of(measurement(seed=1))  # no resolution: recorded before the field existed
    v = check("5%", measurement(seed=2), ref, extra={"resolution": "224x224"})
    assert (v.outcome, v.workload_diffs) == ("pass", [])
    assert checks.env_differences({"resolution": "224x224"}, {}) == []
    assert checks.env_differences({"power_mode": "15W"}, {}) == [["power_mode", None, "15W"]]


def test_the_repositorys_baselines_compare_as_before_with_the_fields_runs_now_add():
    files = sorted((REPO / "baselines").rglob("*.json"))
    assert files
    for path in files:
        for key, entry in json.loads(path.read_text())["entries"].items():
            fp = entry["fingerprint"]
            # what today's runs record beside the old fields (a field an entry lacks is unknown)
            now = dict(fp, resolution=fp.get("resolution", "224x224"), fan_profile="cool")
            assert checks.env_differences(now, fp) == [], (path, key)
            assert checks.workload_differences(now, fp) == [], (path, key)
            assert not needs_write(entry, dict(entry, fingerprint=now)), (path, key)


def test_recording_a_changed_workload_rewrites_its_entry_only_when_asked_to_record():
    old_m, new_m = measurement(seed=1, precision="fp16"), measurement(1 / 0.47, seed=2, precision="fp32")
    old = make_entry(old_m, fingerprint(old_m, BOARD))
    new = make_entry(new_m, fingerprint(new_m, BOARD))
    assert needs_write(old, new, "all") and needs_write(old, new, "force")
    assert not needs_write(old, new, "new")
    same = make_entry(measurement(seed=1, precision="fp32"), fingerprint(new_m, BOARD))
    # a workload change replaces the whole entry, even where no figure moved
    assert needs_write(old, same, "all")


def test_a_workload_change_still_extends_another_environment_does_not():
    b = bounds.parse("throughput", "5%")
    design = Design(alpha=0.005, budget=3.0)
    base = measurement(seed=1, precision="fp16")
    now = measurement(1.04, n=200, seed=2, precision="fp32")
    ext = Extension([b], ref_of(base), design, fingerprint_of=lambda m: fingerprint(m, BOARD),
                    compared_keys=checks.COMPARED_KEYS)
    ext(now, 1.0)
    assert ext.comparable is True and ext.looks == 1 and ext.sequentials
    other = Extension([b], ref_of(base, dict(BOARD, power_mode="7W")), design,
                      fingerprint_of=lambda m: fingerprint(m, BOARD), compared_keys=checks.COMPARED_KEYS)
    assert other(now, 1.0) is None
    assert other.comparable is False and other.looks == 0 and other.step(b) is None
    limited = Extension([replace(b, backends=("tensorrt",))], ref_of(base), design,
                        fingerprint_of=lambda m: fingerprint(m, BOARD), compared_keys=checks.COMPARED_KEYS)
    assert limited(now, 1.0) is None and limited.looks == 0  # a bound not checked here never extends


# -- what cannot be measured here -------------------------------------------------------------------
def host_telemetry(samples=20):
    return TelemetrySummary(source="host", samples=samples, tried=[("jtop", "jetson-stats is not installed")])


def test_power_on_the_host_is_skipped_with_the_reason_not_an_error():
    m = measurement(backend="onnxruntime", telemetry=host_telemetry())
    for text in ("<= 10 W", "10%"):
        v = check(text, m, None, metric="power", fp=HOST)
        assert (v.outcome, v.reason) == ("skip", "not_measured"), text
        assert v.detail == ("power not measured on backend onnxruntime: the host has no power sensor "
                            "(telemetry source 'host' reads none)")
        assert message(v).startswith(f"power {text!r} not checked: power not measured on backend onnxruntime")
    energy = check("<= 1 J", m, None, metric="energy", fp=HOST)
    assert energy.reason == "not_measured" and "has no power sensor" in energy.detail


def test_what_should_have_been_measured_stays_an_error():
    # telemetry turned off (--jetson-telemetry none) or a source that recorded nothing: the figure
    # was asked for and the session did not measure it
    for m in (measurement(backend="onnxruntime"), measurement(backend="onnxruntime", telemetry=host_telemetry(0))):
        v = check("<= 10 W", m, None, metric="power", fp=HOST)
        assert (v.outcome, v.reason) == ("error", "cannot_check")
    # a board has power rails: a source that reads none there is a setup to fix
    v = check("<= 10 W", measurement(telemetry=host_telemetry()), None, metric="power")
    assert (v.outcome, v.reason) == ("error", "cannot_check")
    assert "tried jtop: jetson-stats is not installed" in message(v)
    # a harness metric with nothing behind it is a fault wherever it runs
    empty = Measurement(name="m", batch=1, latencies=[], duration=0.0, items=0, backend="onnxruntime")
    assert check(">= 1/s", empty, None, fp=HOST).reason == "cannot_check"


def test_a_figure_the_backends_engine_does_not_report_is_skipped():
    v = check("<= 5 ms", measurement(), None, metric="latency_gpu")
    assert (v.outcome, v.reason) == ("skip", "not_measured")
    assert v.detail.startswith("latency_gpu not measured by backend simulated: only the tensorrt backend")


# -- bounds limited to devices or backends ----------------------------------------------------------
def test_a_bound_limited_to_other_backends_is_not_checked_here():
    b = replace(bounds.parse("throughput", ">= 1000000/s"), backends=("tensorrt", "simulated"))
    host = check("", measurement(backend="onnxruntime"), None, fp=HOST, bound=b)
    assert (host.outcome, host.reason) == ("skip", "not_applicable")
    assert host.detail == "limited to backends tensorrt, simulated (this run: backend onnxruntime)"
    assert message(host) == ("throughput '>= 1000000/s' not checked: limited to backends tensorrt, "
                             "simulated (this run: backend onnxruntime)")
    board = check("", measurement(), None, bound=b)
    assert (board.outcome, board.reason) == ("fail", "bound_violated")
    rel = replace(bounds.parse("throughput", "5%"), devices=("agx-orin-64gb",))
    v = check("", measurement(1.5, seed=2), ref_of(measurement(seed=1)), bound=rel)
    assert (v.reason, v.detail) == ("not_applicable",
                                    "limited to devices agx-orin-64gb (this run: device orin-nano-8gb)")


def test_which_bounds_apply_where():
    b = replace(bounds.parse("power", "10%"), devices=("orin-nano-8gb",), backends=("simulated", "tensorrt"))
    assert applies(b, "orin-nano-8gb", "simulated") and applies(b, "orin-nano-8gb", "tensorrt")
    assert not applies(b, "orin-nano-8gb", "onnxruntime") and not applies(b, "nano", "tensorrt")
    assert not applies(b, "host-amd-epyc-7763", "onnxruntime")
    assert applies(bounds.parse("power", "10%"), "host-amd-epyc-7763", "onnxruntime")
    assert applies(b, None, None)  # what is not known does not rule a bound out


def test_the_session_counts_only_the_comparisons_it_can_make():
    sim_only = replace(bounds.parse("power", "10%"), backends=("simulated",))
    tests = [[bounds.parse("throughput", "5%"), sim_only], [sim_only, bounds.parse("latency_p99", "<= 1 s")]]
    assert family_size(tests) == 3
    assert family_size(tests, device="orin-nano-8gb", backend="simulated") == 3
    assert family_size(tests, device="host-amd-epyc-7763", backend="onnxruntime") == 1


def test_skipped_bounds_are_said_once_per_metric_in_the_summary():
    results = []
    for i in range(3):
        m = measurement(backend="onnxruntime", telemetry=host_telemetry())
        r = TestResult(nodeid=f"test_x.py::test_{i}")
        r.verdicts = [check("<= 10 W", m, None, metric="power", fp=HOST),
                      check("<= 5 W", m, None, metric="power_peak", fp=HOST),
                      check(">= 1/s", m, None, fp=HOST)]
        results.append(r)
    notes = terminal.skipped_notes(results)
    assert notes == [
        "skipped 3 bounds of 3 tests: power not measured on backend onnxruntime: the host has no power "
        "sensor (telemetry source 'host' reads none)",
        "skipped 3 bounds of 3 tests: power_peak not measured on backend onnxruntime: the host has no "
        "power sensor (telemetry source 'host' reads none)",
    ]


def test_a_workload_change_that_passes_is_said_once_too():
    ref = ref_of(measurement(seed=1, batch=8))
    results = []
    for i in range(2):
        r = TestResult(nodeid=f"test_x.py::test_{i}")
        r.verdicts = [check("5%", measurement(seed=2, batch=16), ref),
                      check("5%", measurement(seed=2, batch=16), ref, metric="latency_p99")]
        results.append(r)
    assert {v.outcome for r in results for v in r.verdicts} == {"pass"}
    assert workload_notes(results) == [
        "what runs changed since the baseline: batch 8 -> 16 in 2 tests (compared across the change; "
        "--jetson-update-baselines stores the new workload's baseline)"]
    assert workload_notes(results[:1])[0].startswith("what runs changed since the baseline: batch 8 -> 16 "
                                                     "in test_x.py::test_0 (")


def test_the_fan_profile_is_environment_but_unknown_where_a_side_lacks_it():
    from pytest_jetson.gate.checks import env_differences

    board = {"device": "orin-nano-8gb", "fan_profile": "cool"}
    assert env_differences(board, {"device": "orin-nano-8gb"}) == []  # recorded before it was read
    assert env_differences(board, dict(board, fan_profile="quiet")) == [["fan_profile", "quiet", "cool"]]
