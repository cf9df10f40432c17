"""The reports rendered from gate results: terminal table, Markdown, JUnit properties, plots."""

import numpy as np
import pytest

from pytest_jetson.gate.compare import Verdict
from pytest_jetson.gate.session import TestResult
from pytest_jetson.report import junit, markdown, plots, terminal
from pytest_jetson.run.measurement import Measurement

FP = {"device": "orin-nano-8gb", "power_mode": "15W", "simulated": True}


def result(nodeid, outcome, change=None, series=False):
    lat = list(np.random.default_rng(0).lognormal(-4.6, 0.05, 300))
    m = Measurement(name="m", batch=8, latencies=lat, duration=float(sum(lat)), items=2400)
    d = dict(m.to_dict(), key=nodeid)
    if series:
        t = [0.1 * i for i in range(30)]
        d["extra"] = {"telemetry_series": {"clock": "virtual", "t": t, "board_power_w": [7.0 + 0.01 * i for i in range(30)],
                                           "gpu_util": [90.0] * 30, "gpu_clock_mhz": [None] * 30,
                                           "temps_c": {"gpu": [50.0 + 0.1 * i for i in range(30)]}}}
    reason = {"pass": "within_tolerance", "fail": "regression", "skip": "no_baseline"}[outcome]
    v = Verdict(metric="throughput", outcome=outcome, reason=reason, bound="5%", kind="relative",
                tolerance=0.05, value=800.0, ci=(790.0, 810.0), confidence=0.99,
                baseline=None if change is None else 800.0 / (1 + change), change=change,
                worse=None if change is None else -change, basis="values",
                detail="no baseline for orin-nano-8gb" if outcome == "skip" else "",
                measurement=nodeid, test=nodeid)
    return TestResult(nodeid=nodeid, keys=[nodeid], measurements=[d], verdicts=[v], fingerprint=FP)


def test_terminal_table_puts_regressions_first():
    results = [result("t.py::test_ok", "pass", 0.01), result("t.py::test_slow", "fail", -0.12),
               result("t.py::test_new", "skip")]
    lines = terminal.summary(results, FP)
    assert lines[0] == "device orin-nano-8gb (simulated), power mode 15W"
    assert lines[1].split() == ["test", "metric", "value", "baseline", "change", "bound", "verdict"]
    body = lines[3:6]
    assert "test_slow" in body[0] and "FAIL" in body[0] and "12.0% worse" in body[0]
    assert "test_new" in body[1] and "skip" in body[1]
    assert "test_ok" in body[2] and "1.0% better" in body[2]
    assert ("skip t.py::test_new: throughput 5%: no baseline for orin-nano-8gb; record with "
            "--jetson-update-baselines") in lines


def test_markdown_regressions_first_with_reasons():
    md = markdown.render([result("t.py::test_ok", "pass", 0.0), result("t.py::test_slow", "fail", -0.2)], FP)
    assert md.startswith("## pytest-jetson perf gate")
    assert "❌ regressions found: 1 fail, 1 pass" in md
    rows = [line for line in md.splitlines() if line.startswith("| `")]
    assert "test_slow" in rows[0] and "20.0% worse" in rows[0]
    assert "<details><summary>why</summary>" in md
    assert "throughput 800.0/s (99% CI 790.0/s..810.0/s) is 20.0% worse than the baseline 1000.0/s" in md


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
