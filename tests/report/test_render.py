"""The reports rendered from gate results: terminal table, Markdown, JUnit properties, plots."""

import numpy as np
import pytest

from pytest_jetson.gate.checks import Verdict
from pytest_jetson.gate.session import TestResult
from pytest_jetson.report import junit, markdown, plots, terminal
from pytest_jetson.run.measurement import Measurement
from pytest_jetson.telemetry.series import Series

FP = {"device": "orin-nano-8gb", "power_mode": "15W", "simulated": True}


def result(nodeid, outcome, change=None, series=False):
    lat = list(np.random.default_rng(0).lognormal(-4.6, 0.05, 300))
    m = Measurement(name="m", batch=8, latencies=lat, duration=float(sum(lat)), items=2400)
    if series:
        t = [0.1 * i for i in range(30)]
        m.telemetry_series = Series.from_dict({
            "clock": "virtual", "t": t, "board_power_w": [7.0 + 0.01 * i for i in range(30)],
            "gpu_util": [90.0] * 30, "gpu_clock_mhz": [None] * 30,
            "temps_c": {"gpu": [50.0 + 0.1 * i for i in range(30)]}})
    reason = {"pass": "within_tolerance", "fail": "regression", "skip": "no_baseline"}[outcome]
    v = Verdict(metric="throughput", outcome=outcome, reason=reason, bound="5%", kind="relative",
                tolerance=0.05, value=800.0, ci=(790.0, 810.0), confidence=0.99,
                baseline=None if change is None else 800.0 / (1 + change), change=change,
                worse=None if change is None else -change, basis="values",
                detail="no baseline for orin-nano-8gb" if outcome == "skip" else "",
                measurement=nodeid, test=nodeid)
    return TestResult(nodeid=nodeid, keys=[nodeid], measurements=[m], verdicts=[v], fingerprint=FP)


def counts(results):
    from pytest_jetson.report.counts import from_results

    return from_results(results)


def test_terminal_table_groups_by_test_and_lists_only_what_needs_a_look():
    results = [result("t.py::test_ok", "pass", 0.01), result("t.py::test_slow", "fail", -0.12),
               result("t.py::test_new", "skip")]
    lines = terminal.summary(results, counts(results), title="Jetson Orin Nano 8GB (simulated)", width=100)
    assert lines[0] == "Jetson Orin Nano 8GB (simulated)"
    assert lines[1].split() == ["test", "/", "bound", "value", "baseline", "change", "bound", "verdict"]
    assert lines[3] == "t.py::test_slow"  # the test id once, its bounds under it
    assert lines[4].split() == ["throughput", "800/s", "909/s", "12.0%", "worse", "5%", "FAIL"]
    assert not any("test_ok" in line for line in lines)  # passing bounds are counted, not listed
    text = " ".join(" ".join(lines).split())  # notes wrap at the width
    assert ("skipped throughput 5% of t.py::test_new: no baseline for orin-nano-8gb; record with "
            "--jetson-update-baselines") in text
    assert lines[-1] == "perf tests: 1 failed, 2 passed · bounds: 1 fail, 1 skip, 1 pass · -v lists every bound"
    assert max(map(len, lines)) <= 100


def test_terminal_table_shows_every_bound_with_all():
    results = [result("t.py::test_ok", "pass", 0.01), result("t.py::test_slow", "fail", -0.12)]
    lines = terminal.summary(results, counts(results), width=100, show="all")
    tests = [line for line in lines if line.startswith("t.py")]
    assert tests == ["t.py::test_slow", "t.py::test_ok"]  # worst first
    assert any("1.0% better" in line for line in lines)
    assert "-v lists every bound" not in lines[-1]


@pytest.mark.parametrize("name, reason, label, icon, listed", [
    ("error", "cannot_check", "ERROR", "❌", True),
    ("fail", "regression", "FAIL", "❌", True),
    ("inconclusive", "inconclusive", "inconclusive", "⚠️", True),
    ("skip", "no_baseline", "skip", "⏭️", False),
    ("recorded", "recorded", "recorded", "📝", False),
    ("pass", "within_tolerance", "pass", "✅", False),
])
def test_every_report_words_an_outcome_by_its_row(name, reason, label, icon, listed):
    """The terminal and Markdown print an outcome's label (and icon) and list by default only
    the outcomes that need a look."""
    r = result("t.py::test_x", "pass", 0.01)
    v = r.verdicts[0]
    v.outcome, v.reason = name, reason
    default = terminal.rows([r])
    everything = terminal.rows([r], show="all")
    assert everything[1][-1] == label
    assert (len(default) > 0) is listed
    md = markdown.render([r], FP)
    problems = md.split("<details>")[0]
    assert (f"| {icon} {label} |" in problems) is listed
    assert f"| {icon} {label} |" in md


@pytest.mark.parametrize("width", [60, 80, 100, 152])
def test_terminal_table_fits_the_width(width):
    long_id = "tests/perf/test_orin_nano_concurrency.py::test_concurrent_processes[fcn_resnet50-int8-p4]"
    results = [result(long_id, "fail", -0.224), result("t.py::test_ok", "pass", 0.0)]
    lines = terminal.summary(results, counts(results), title="x", width=width, show="all")
    assert max(map(len, lines)) <= width
    assert any(line.endswith("fcn_resnet50-int8-p4]") for line in lines)  # the parameters stay readable
    assert any("22.4% worse" in line for line in lines)


def test_numbers_print_at_the_precision_their_interval_resolves():
    from pytest_jetson.report import render

    # down to the first significant digit of the interval's half-width (0.00075 ms)
    assert render.value_text("latency_p50", 1.44127e-3, (1.4405e-3, 1.4420e-3)) == "1.4413 ms"
    assert render.interval("latency_p50", (1.4405e-3, 1.4420e-3), 0.99) == " (99% CI 1.4405..1.4420 ms)"
    assert render.value_text("latency_p50", 7.6812e-3, (7.60e-3, 7.76e-3)) == "7.68 ms"
    assert render.value_text("throughput", 1042.33, (1040.1, 1044.6)) == "1042/s"
    assert render.value_text("throughput", 0.8) == "0.800/s"  # three digits without an interval


def test_one_sign_convention_everywhere():
    from pytest_jetson.report import render

    assert render.change_text(0.224) == "22.4% worse" and render.change_text(-0.031) == "3.1% better"
    assert render.worse_interval((0.22, 0.227)) == "22.0%..22.7% worse"
    assert render.worse_interval((-0.02, -0.01)) == "1.0%..2.0% better"
    assert render.worse_interval((-0.005, 0.002)) == "0.5% better..0.2% worse"
    v = result("t.py::test_slow", "fail", -0.2).verdicts[0]
    v.worse_ci, v.p_value, v.basis = (0.18, 0.22), 1e-9, "statistics"
    text = render.headline(v)
    assert "20.0% worse than the baseline" in text and "18.0%..22.0% worse" in text
    assert "+" not in text and "positive" not in text


def test_markdown_counts_tests_and_lists_problems_first_with_reasons():
    results = [result("t.py::test_ok", "pass", 0.0), result("t.py::test_slow", "fail", -0.2)]
    md = markdown.render(results, FP, counts(results), title="Jetson Orin Nano 8GB (simulated)")
    assert md.startswith("## pytest-jetson perf gate")
    assert "❌ regressions found: perf tests: 1 failed, 1 passed · bounds: 1 fail, 1 pass" in md
    rows = [line for line in md.splitlines() if line.startswith("| `")]
    assert "test_slow" in rows[0] and "20.0% worse" in rows[0]
    assert "<details><summary>why</summary>" in md
    assert "throughput 800/s (99% CI 790..810/s) is 20.0% worse than the baseline 1000/s" in md
    assert md.count("is 20.0% worse than the baseline") == 1  # said once
    assert "<details><summary>all 2 bounds</summary>" in md


def test_markdown_write_appends_for_step_summary(tmp_path):
    path = tmp_path / "summary.md"
    path.write_text("before\n")
    markdown.write(path, "x\n", append=True)
    assert path.read_text() == "before\nx\n"
    markdown.write(path, "y\n")
    assert path.read_text() == "y\n"


def test_junit_properties_hold_metrics_and_verdicts():
    props = dict(junit.properties(result("t.py::test_a", "fail", -0.1)))
    assert float(props["jetson.throughput"]) == pytest.approx(2400 / sum(
        np.random.default_rng(0).lognormal(-4.6, 0.05, 300)), rel=1e-5)
    assert props["jetson.throughput.verdict"] == "fail regression (5%)"
    assert "jetson.power" not in props


def test_plots_draw_latency_and_telemetry(tmp_path):
    pytest.importorskip("matplotlib")
    paths = plots.write_plots([result("t.py::test_a", "fail", -0.1, series=True),
                               result("t.py::test_b", "pass", 0.0)], tmp_path)
    names = sorted(p.name for p in paths)
    assert names == ["comparison.png", "t.py_test_a.png", "t.py_test_b.png"]
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the test with telemetry has more panels, so a taller image
    from PIL import Image  # matplotlib depends on pillow

    assert Image.open(tmp_path / "t.py_test_a.png").size[1] > Image.open(tmp_path / "t.py_test_b.png").size[1]
