"""Stages in every report: a stage's verdicts named 'stage: metric', its figures, and a failing
test's report opening with the stage that moved."""

import json

import numpy as np
import pytest

from pytest_jetson.gate.attribution import StageShift, Where
from pytest_jetson.gate.checks import Verdict
from pytest_jetson.gate.session import TestResult
from pytest_jetson.report import jsonreport, junit, markdown, render, terminal
from pytest_jetson.report.counts import from_results
from pytest_jetson.run.measurement import Measurement
from pytest_jetson.settings import Settings

FP = {"device": "orin-nano-8gb", "power_mode": "15W", "simulated": True}
NODE = "tests/perf/test_pipeline.py::test_ssd300_postprocessing_on_the_cpu"


def pipeline():
    rng = np.random.default_rng(0)
    parts = {"preprocess": 0.002 * rng.lognormal(0, 0.05, 300), "infer": 0.006 * rng.lognormal(0, 0.05, 300),
             "postprocess": 0.006 * rng.lognormal(0, 0.05, 300)}
    lat = [float(x) for x in sum(parts.values())]
    m = Measurement("m", 1, lat, float(sum(lat)), 300)
    m.stages = {s: Measurement(s, 1, [float(x) for x in v], m.duration, 300) for s, v in parts.items()}
    return m


def stage_verdict(outcome="fail", stage="postprocess"):
    return Verdict(metric="latency_mean", outcome=outcome, reason="regression" if outcome == "fail" else "within_tolerance",
                   kind="relative", bound="10%", tolerance=0.1, value=0.006, ci=(0.00598, 0.00602),
                   confidence=0.99, baseline=0.004, change=0.5, worse=0.5, basis="statistics", p_value=1e-9,
                   worse_ci=(0.45, 0.55), measurement=NODE, test=NODE, stage=stage)


def whole_verdict(outcome="pass"):
    return Verdict(metric="latency_p99", outcome=outcome, reason="bound_met" if outcome == "pass" else "bound_violated",
                   kind="absolute", bound="<= 33 ms", comparator="<=", threshold=0.033, value=0.0155,
                   measurement=NODE, test=NODE)


WHERE = Where(NODE, now=0.0145, baseline=0.0125, stages=[
    StageShift("postprocess", 0.0060, 0.0040, share=1.0), StageShift("infer", 0.00601, 0.0060, share=0.005),
    StageShift("preprocess", 0.001999, 0.0020, share=-0.0005)])


def failing(where=True):
    return TestResult(nodeid=NODE, keys=[NODE], measurements=[pipeline()], fingerprint=FP,
                      verdicts=[whole_verdict(), stage_verdict()], where=[WHERE] if where else [])


def test_the_stage_that_moved_is_worded_first_with_its_share():
    assert render.where_text(WHERE) == (
        "postprocess +2.0 ms (+50%) explains 100% of the slowdown of +2.0 ms (+16%); "
        "infer +0.0 ms (+0%); preprocess -0.0 ms (-0%)")


def test_without_shares_the_whole_is_said_last():
    w = Where("k", now=0.01201, baseline=0.012, stages=[StageShift("a", 0.0031, 0.003), StageShift("b", 0.0069, 0.007)])
    assert render.where_text(w) == "a +0.1 ms (+3%); b -0.1 ms (-1%); mean latency +0.0 ms (+0%)"
    faster = Where("k", now=0.010, baseline=0.012, stages=[StageShift("a", 0.001, 0.003, share=1.0)])
    assert "explains 100% of the speed-up of -2.0 ms (-17%)" in render.where_text(faster)


def test_a_failing_test_opens_with_its_stages_within_100_columns():
    text = render.failure_section(failing())
    lines = text.splitlines()
    assert lines[0].startswith("stages: postprocess +2.0 ms (+50%) explains 100% of the slowdown")
    assert lines[1].startswith("  ") and lines[1].endswith("(mean time per call, against the baseline)")
    assert all(len(line) <= 100 for line in lines[:2])
    assert lines[2].startswith("perf bound failed: postprocess: latency_mean 6.00 ms")
    assert "other bounds: latency_p99 '<= 33 ms' pass" in text
    assert render.failure_section(failing(where=False)).startswith("perf bound failed: postprocess: latency_mean")


def test_several_measurements_tag_their_stages():
    w = Where(NODE + "|detector", 0.0145, 0.0125, WHERE.stages)
    result = TestResult(nodeid=NODE, verdicts=[stage_verdict()], where=[w])
    assert render.where_lines(result)[0].startswith("[detector] stages: postprocess")


def test_verdict_headlines_name_the_stage():
    assert render.headline(stage_verdict()).startswith("postprocess: latency_mean 6.00 ms")
    missing = Verdict(metric="latency_mean", outcome="error", reason="cannot_check", kind="absolute",
                      bound="<= 5 ms", detail="the measurement has no stage 'post' (its stages: a, b)", stage="post")
    assert render.headline(missing) == ("post: latency_mean '<= 5 ms' cannot be checked: the measurement has "
                                        "no stage 'post' (its stages: a, b)")
    skipped = Verdict(metric="latency_mean", outcome="skip", reason="no_baseline", kind="relative", bound="5%",
                      detail="the baseline has no stage 'post'", stage="post")
    assert render.headline(skipped) == ("post: latency_mean 5%: the baseline has no stage 'post'; record with "
                                        "--jetson-update-baselines")


def test_the_terminal_table_lists_stage_bounds_and_stage_figures():
    r = failing()
    lines = terminal.summary([r], from_results([r]), width=100, show="all")
    rows = [line.split() for line in lines]
    assert ["postprocess:", "latency_mean", "6.00", "ms", "4.00", "ms", "50.0%", "worse", "10%", "FAIL"] in rows
    unbounded = TestResult(nodeid="t.py::test_free", keys=["t.py::test_free"], measurements=[pipeline()])
    lines = terminal.summary([unbounded], from_results([unbounded]), width=100, show="all")
    assert any(line.split()[:2] == ["postprocess:", "latency_p99"] and line.split()[-1] == "measured"
               for line in lines)
    assert all(len(line) <= 100 for line in lines)


def test_markdown_names_stage_bounds_and_opens_a_failing_test_with_its_stages():
    r = failing()
    md = markdown.render([r], FP)
    assert "| postprocess: latency_mean `10%` | 6.00 ms | 4.00 ms | 50.0% worse | ❌ FAIL |" in md
    why = md.split("<summary>why</summary>")[1]
    assert why.index("stages: postprocess +2.0 ms") < why.index("postprocess: latency_mean 6.00 ms")


def test_json_report_carries_stage_verdicts_and_where(tmp_path):
    r = failing()

    class Device:
        def fingerprint(self):
            return dict(FP)

    path = jsonreport.write(tmp_path / "r.json", jsonreport.build([r], Settings(), Device()))
    doc = json.loads(path.read_text())
    test = doc["tests"][0]
    assert [v["stage"] for v in test["verdicts"]] == [None, "postprocess"]
    assert test["where"][0]["stages"][0] == {"stage": "postprocess", "now": 0.006, "baseline": 0.004,
                                             "change": pytest.approx(0.002), "relative": pytest.approx(0.5),
                                             "share": 1.0}
    assert sorted(test["measurements"][0]["stages"]) == ["infer", "postprocess", "preprocess"]
    (back,) = jsonreport.results(doc)
    assert back.where == [WHERE]
    assert back.verdicts[1].stage == "postprocess"


def test_junit_properties_hold_stage_figures_and_verdicts():
    props = dict(junit.properties(failing()))
    assert float(props["jetson.stages.postprocess.latency_mean"]) == pytest.approx(0.006, rel=0.02)
    assert props["jetson.stages.postprocess.latency_mean.verdict"] == "fail regression (10%)"
    assert props["jetson.latency_p99.verdict"] == "pass bound_met (<= 33 ms)"
    assert "jetson.stages.postprocess.throughput" not in props
