"""`pytest-jetson history`: a suite's trends over past runs' JSON reports, and the statistics
behind it (change points, Mann-Kendall, Theil-Sen)."""

import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_jetson.cli import main as cli_main
from pytest_jetson.report import run_history, trend
from pytest_jetson.run.measurement import Measurement

# Loaded at collection, before any in-process pytester run unloads what a test imported.
pytest.importorskip("matplotlib").use("Agg")
import matplotlib.pyplot  # noqa: E402,F401


# -- the statistics ------------------------------------------------------------------------------
@pytest.mark.parametrize("t, df, p", [
    # two-sided critical values from any t table
    (12.7062, 1, 0.05), (4.3027, 2, 0.05), (2.2281, 10, 0.05), (4.0321, 5, 0.01), (2.0423, 30, 0.05),
    (1.9600, 1e7, 0.05), (0.0, 4, 1.0),
])
def test_student_t_matches_the_tables(t, df, p):
    assert trend.t_sf2(t, df) == pytest.approx(p, rel=2e-4, abs=1e-9)


def test_student_pools_the_variance():
    a, b = [19.1, 20.0, 21.3, 20.5, 19.8], [22.0, 23.1, 21.9, 22.6, 23.4]
    t, p = trend.student(a, b)
    # pooled variance (2.692 + 1.740) / 8 = 0.554; equal sizes: the same t as Welch's, df = 8
    assert t == pytest.approx(5.226, abs=0.001) and p == pytest.approx(trend.t_sf2(t, 8))
    assert trend.student([1.0, 1.0, 1.0], [1.0, 1.0, 1.0]) == (0.0, 1.0)
    assert trend.student([1.0, 1.0, 1.0], [2.0, 2.0, 2.0])[1] == 0.0


def test_benjamini_hochberg():
    assert trend.benjamini_hochberg([0.01, 0.04, 0.03, 0.005], 0.05) == [True] * 4
    assert trend.benjamini_hochberg([0.01, 0.02, 0.03, 0.5], 0.05) == [True, True, True, False]
    assert trend.benjamini_hochberg([0.01, 0.02, 0.03], 0.05, tests=10) == [False, False, False]
    assert trend.benjamini_hochberg([], 0.05) == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), max_size=30), st.integers(0, 20), st.sampled_from([0.01, 0.05, 0.2]))
def test_benjamini_hochberg_discoveries_are_the_step_up_procedures(pvalues, extra, q):
    # the textbook step-up: reject the r smallest, r the largest rank with p_(r) <= q r / m
    m = len(pvalues) + extra
    ranked = sorted(pvalues)
    r = max([k for k in range(1, len(ranked) + 1) if ranked[k - 1] <= q * k / m], default=0)
    expected = [p <= ranked[r - 1] if r else False for p in pvalues]
    assert trend.benjamini_hochberg(pvalues, q, tests=m) == expected


def test_mann_kendall_counts_pairs_and_ties():
    s, var, tau, p = trend.mann_kendall([1, 2, 3, 4, 5, 6])
    assert s == 15 and tau == 1.0 and var == pytest.approx(6 * 5 * 17 / 18)
    s, var, _, _ = trend.mann_kendall([1, 1, 2, 3])  # one tie of two
    assert s == 5 and var == pytest.approx((4 * 3 * 13 - 2 * 1 * 9) / 18)
    assert trend.mann_kendall([3, 1, 2, 3, 1, 2])[3] > 0.5


@given(st.floats(-0.05, 0.05), st.floats(-1, 1), st.integers(5, 30))
@settings(max_examples=50)
def test_theil_sen_recovers_an_exact_line(slope, intercept, n):
    s, (lo, hi), b = trend.theil_sen([intercept + slope * i for i in range(n)])
    assert s == pytest.approx(slope, abs=1e-12) and lo - 1e-12 <= s <= hi + 1e-12
    assert b == pytest.approx(intercept, abs=1e-9)


def noisy(n, seed, sigma=0.01, level=100.0):
    rng = random.Random(seed)
    return [level * math.exp(rng.gauss(0, sigma)) for _ in range(n)]


def test_a_step_is_found_where_it_is():
    values = noisy(8, 1) + [v * 1.06 for v in noisy(8, 2)]
    found = trend.analyse(values)
    assert [s.at for s in found.steps] == [8] and found.steps[0].change == pytest.approx(0.06, abs=0.02)
    assert found.drift is None


def test_a_slow_drift_is_a_drift_not_a_step():
    values = [v * (1 + 0.004 * i) for i, v in enumerate(noisy(15, 3, sigma=0.002))]
    found = trend.analyse(values)
    assert found.steps == [] and found.drift is not None
    assert found.drift.slope == pytest.approx(0.004, abs=0.001)
    assert found.drift.ci[0] <= found.drift.slope <= found.drift.ci[1]
    assert found.drift.total == pytest.approx(0.057, abs=0.015)


def test_steps_smaller_than_the_minimum_change_are_not_reported():
    values = noisy(8, 4, sigma=0.0005) + [v * 1.004 for v in noisy(8, 5, sigma=0.0005)]
    assert trend.analyse(values, min_change=0.01).steps == []
    assert [s.at for s in trend.analyse(values, min_change=0.001).steps] == [8]


def test_noise_alone_rarely_raises_anything():
    # the false alarm rate over many seeds is a benchmark figure (benchmarks/); here: a few
    flagged = sum(bool(trend.analyse(noisy(12, seed)).steps or trend.analyse(noisy(12, seed)).drift)
                  for seed in range(20))
    assert flagged <= 3


# -- reports -------------------------------------------------------------------------------------
def make_report(path, created, tests, device="orin-nano-8gb", mode="15W", schema=1):
    """A report as --jetson-report-json writes it, with ``tests``: {nodeid: (throughput, baseline)}."""
    doc = {
        "kind": "pytest-jetson-report", "schema": schema, "created": created, "plugin": "0.1.0",
        "device": {"device": device, "power_mode": mode, "simulated": True},
        "target": {"id": device, "title": "", "backend": "simulated"},
        "settings": {}, "summary": {},
        "tests": [{
            "nodeid": nodeid, "outcome": "pass", "keys": [nodeid],
            "bounds": [{"metric": "throughput", "kind": "relative", "tolerance": 0.05}],
            "measurements": [dict(Measurement(name="m", batch=1, latencies=[], duration=1e6 / value,
                                              items=10 ** 6).to_dict(), key=nodeid)],
            "verdicts": [{"metric": "throughput", "kind": "relative", "outcome": "pass", "reason": "within_tolerance",
                          "measurement": nodeid, "baseline": base, "tolerance": 0.05, "value": value,
                          "ci": [value * 0.995, value * 1.005]}],
        } for nodeid, (value, base) in tests.items()],
    }
    path.write_text(json.dumps(doc))
    return path


def history_of(tmp_path, n=14, device="orin-nano-8gb"):
    paths = []
    steady, drift, step = noisy(n, 10, 0.003, 500), noisy(n, 11, 0.002, 800), noisy(n, 12, 0.003, 300)
    for i in range(n):
        created = f"2026-11-{i + 1:02d}T10:00:00Z"
        paths.append(make_report(tmp_path / f"run-{i}.json", created, {
            "tests/perf/test_x.py::test_steady": (steady[i], 500.0),
            "tests/perf/test_x.py::test_drifting": (drift[i] * (1 - 0.004 * i), 800.0),
            "tests/perf/test_x.py::test_step": (step[i] * (0.93 if i >= 9 else 1.0), 300.0),
        }, device=device))
    return paths


def test_history_finds_the_step_and_the_drift_and_draws_each_test(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    paths = history_of(tmp_path)
    random.Random(0).shuffle(paths)  # the order of the files does not matter: their dates do
    out_dir = tmp_path / "h"
    assert cli_main(["history", *map(str, paths), "--out", str(out_dir), "--md", str(tmp_path / "h.md")]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("history of 14 runs (2026-11-01 .. 2026-11-14) on orin-nano-8gb, power mode 15W")
    step = lines.index("steps (a change point between two runs):")
    assert lines[step + 1] == "  tests/perf/test_x.py::test_step"
    assert lines[step + 2].startswith("    throughput: 7.") and "worse from run 10 (run-9, 2026-11-10)" in lines[step + 2]
    drift = lines.index("drifting slowly in one direction:")
    assert lines[drift + 1] == "  tests/perf/test_x.py::test_drifting"
    assert "worse per run" in lines[drift + 2]
    assert "test_steady" not in out.split("steps (")[1]
    assert max(len(line) for line in lines if not line.startswith("wrote")) <= 100
    names = sorted(p.name for p in out_dir.iterdir())  # the overview, and the tests with findings
    assert names == ["overview.png", "tests_perf_test_x.py_test_drifting.png", "tests_perf_test_x.py_test_step.png"]
    assert lines[-2] == f"wrote {out_dir / 'overview.png'} and 2 of 3 tests' trends to {out_dir} (--all draws every test)"
    md = (tmp_path / "h.md").read_text()
    assert "### Trends over 14 runs" in md and "| `tests/perf/test_x.py::test_step` | throughput |" in md
    assert cli_main(["history", *map(str, paths), "--no-plots", "--fail"]) == 1  # worse: a gate can fail on it
    assert cli_main(["history", *map(str, paths), "--all", "--out", str(out_dir)]) == 0
    assert (out_dir / "tests_perf_test_x.py_test_steady.png").is_file()


def test_reports_of_different_devices_are_analysed_apart(tmp_path, capsys):
    (tmp_path / "nano").mkdir()
    (tmp_path / "agx").mkdir()
    nano = history_of(tmp_path / "nano", n=6)
    agx = history_of(tmp_path / "agx", n=6, device="agx-orin-64gb")
    assert cli_main(["history", str(tmp_path / "nano"), str(tmp_path / "agx"), "--out", str(tmp_path / "h")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("12 reports from 2 environments, analysed apart:")
    assert f"orin-nano-8gb, power mode 15W (simulated): {', '.join(map(str, nano))}" in out
    assert f"agx-orin-64gb, power mode 15W (simulated): {', '.join(map(str, agx))}" in out
    assert out.count("history of 6 runs") == 2
    assert sorted(p.name for p in (tmp_path / "h").iterdir()) == ["agx-orin-64gb_15W_simulated_simulated",
                                                                  "orin-nano-8gb_15W_simulated_simulated"]


@pytest.mark.parametrize("bad, words", [
    ("directory", "is a directory with no .json report in it"),
    ("not json", "is not valid JSON"),
    ("binary", "is not JSON (binary content)"),
    ("other json", "is not a pytest-jetson report"),
    ("newer schema", "has schema 2; this pytest-jetson reads schema 1"),
    ("broken test", "test t::a cannot be read (KeyError: 'duration')"),
])
def test_bad_input_is_an_error_naming_the_file(tmp_path, capsys, bad, words):
    good = history_of(tmp_path, n=3)
    path = tmp_path / "bad.json"
    if bad == "directory":
        path = tmp_path / "empty"
        path.mkdir()
    elif bad == "binary":
        path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    elif bad == "newer schema":
        make_report(path, "2026-11-20T10:00:00Z", {}, schema=2)
    elif bad == "broken test":
        make_report(path, "2026-11-20T10:00:00Z", {"t::a": (1.0, 1.0)})
        doc = json.loads(path.read_text())
        del doc["tests"][0]["measurements"][0]["duration"]
        path.write_text(json.dumps(doc))
    else:
        path.write_text("{nope" if bad == "not json" else '{"kind": "something else"}')
    assert cli_main(["history", *map(str, good), str(path), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and words in err and "Traceback" not in err


def test_reports_of_different_schema_versions_are_an_error_naming_them(tmp_path):
    old = make_report(tmp_path / "old.json", "2026-11-01T10:00:00Z", {"t::a": (1.0, 1.0)}, schema=0)
    new = make_report(tmp_path / "new.json", "2026-11-02T10:00:00Z", {"t::a": (1.0, 1.0)})
    with pytest.raises(Exception, match=r"one schema version.*schema 0: .*old.json; schema 1: .*new.json"):
        run_history.load([old, new])


def test_history_of_real_runs_of_a_suite(pytester, tmp_path, capsys):
    """End to end: reports written by the plugin itself, one a run, read back as a run_history."""
    pytester.syspathinsert()
    pytester.makepyfile(test_suite='''
        import os
        import numpy as np
        import pytest
        from pytest_jetson.run.measurement import Measurement

        RUN = int(os.environ["RUN"])

        @pytest.mark.perf(throughput="5%")
        def test_slowing(perf):
            rng = np.random.default_rng(RUN)
            lat = list(0.01 * (1 + 0.005 * RUN) * rng.lognormal(0, 0.05, 1000))
            perf.record(Measurement(name="m", batch=8, latencies=lat, duration=float(sum(lat)), items=8000))
    ''')
    import os

    paths = []
    for i in range(8):
        os.environ["RUN"] = str(i)
        try:
            args = ["--jetson-update-baselines"] if i == 0 else []
            path = tmp_path / f"r{i}.json"
            pytester.runpytest("-p", "no:cacheprovider", "--jetson-report-json", str(path), *args)
            paths.append(path)
        finally:
            del os.environ["RUN"]
    assert cli_main(["history", *map(str, paths), "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert "test_suite.py::test_slowing" in out.split("drifting slowly in one direction:")[1]


def test_a_run_keeps_its_points_not_its_reports_tests(tmp_path):
    """Fifty reports of a thousand tests must not be held at once: each is read into its points."""
    runs = run_history.load(history_of(tmp_path, n=3))
    assert all("tests" not in r.doc for r in runs) and not hasattr(runs[0], "results")
    assert sorted(runs[0].points) == [("tests/perf/test_x.py::test_drifting", "throughput"),
                                      ("tests/perf/test_x.py::test_steady", "throughput"),
                                      ("tests/perf/test_x.py::test_step", "throughput")]
