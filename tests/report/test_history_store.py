"""`--jetson-history PATH`: each run appended to an SQLite store that `pytest-jetson history`
reads like reports; steps named by the commit range they fall in; a store that is locked,
damaged or newer is a clear error and the run's own reports are still written."""

import json
import math
import shutil
import sqlite3
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_jetson.cli import main as cli_main
from pytest_jetson.report import history_store, trend

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

SUITE = '''
    import os
    import numpy as np
    import pytest
    from pytest_jetson.run.measurement import Measurement

    SLOWER = float(open("speed.txt").read())
    RUN = int(os.environ.get("RUN", "0"))

    @pytest.mark.perf(throughput="5%")
    def test_detector(perf):
        rng = np.random.default_rng(RUN)
        lat = list(0.01 * SLOWER * rng.lognormal(0, 0.02, 500))
        perf.record(Measurement(name="m", batch=8, latencies=lat, duration=float(sum(lat)), items=4000))
'''


def git(repo, *args):
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "c",
           "GIT_COMMITTER_EMAIL": "c@example.com", "PATH": "/usr/bin:/bin", "HOME": str(repo)}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def run_suite(pytester, monkeypatch, run, *args):
    monkeypatch.setenv("RUN", str(run))
    return pytester.runpytest("-p", "no:cacheprovider", "--jetson-history", "perf.sqlite", *args)


@pytest.fixture
def suite(pytester, monkeypatch):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(pytester.path.parent))
    pytester.makepyfile(test_suite=SUITE)
    (pytester.path / "speed.txt").write_text("1.0")
    return pytester


@needs_git
def test_a_store_keeps_every_run_and_history_names_the_commits_of_a_step(suite, monkeypatch, capsys):
    git(suite.path, "init", "-q", "-b", "main")
    commits = []
    for run in range(12):
        if run == 7:
            (suite.path / "speed.txt").write_text("1.04")  # the commit that slows the detector, within 5%
        git(suite.path, "add", "-A", ".")
        git(suite.path, "commit", "-q", "--allow-empty", "-m", f"change {run}")
        commits.append(git(suite.path, "rev-parse", "HEAD"))
        result = run_suite(suite, monkeypatch, run, *(["--jetson-update-baselines"] if run == 0 else []))
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines([f"pytest-jetson: appended run {run + 1} to the history store perf.sqlite"])
    store = suite.path / "perf.sqlite"
    assert history_store.count(store) == 12
    runs = history_store.load(store)
    assert [r.commit["id"] for r in runs] == commits and all(r.commit["branch"] == "main" for r in runs)
    point = runs[3].points[("test_suite.py::test_detector", "throughput")]
    assert point.value > 0 and point.ci[0] < point.value < point.ci[1]
    assert point.baseline and point.tolerance == pytest.approx(0.05) and point.outcome == "pass"
    capsys.readouterr()
    assert cli_main(["history", str(store), "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("history of 12 runs")
    step = out.split("steps (a change point between two runs):")[1]
    assert f"in {commits[6][:7]}..{commits[7][:7]} (run 8, " in step, out


def test_history_reads_stores_reports_and_directories_together(suite, monkeypatch, capsys):
    for run in range(3):
        run_suite(suite, monkeypatch, run, "--jetson-report-json", f"reports/r{run}.json").assert_outcomes(passed=1)
    (suite.path / "stores").mkdir()
    shutil.copy(suite.path / "perf.sqlite", suite.path / "stores" / "perf.sqlite")
    capsys.readouterr()
    assert cli_main(["history", str(suite.path / "perf.sqlite"), str(suite.path / "reports"), "--no-plots"]) == 0
    assert capsys.readouterr().out.startswith("history of 6 runs")
    assert cli_main(["history", str(suite.path / "stores"), "--no-plots"]) == 0
    assert capsys.readouterr().out.startswith("history of 3 runs")
    doc = json.loads((suite.path / "reports" / "r0.json").read_text())
    assert doc["commit"] == history_store.load(suite.path / "perf.sqlite")[0].commit  # no commit: nulls


def newer(path):
    history_store.append(path, history_store.header({}, {}, {}, "2026-11-01T00:00:00Z"), {})
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")


def other_sqlite(path):
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (text TEXT)")


def damaged(path):
    history_store.append(path, history_store.header({}, {}, {}, "2026-11-01T00:00:00Z"), {})
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the first page's b-tree, past the header
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("make, words", [
    (newer, "has schema 2; this pytest-jetson reads and writes schema 1: upgrade pytest-jetson"),
    (other_sqlite, "is an SQLite file but not a pytest-jetson history store"),
    (damaged, "is not a pytest-jetson history store or is damaged"),
])
def test_a_bad_store_is_a_clear_error_and_the_report_is_still_written(suite, monkeypatch, capsys, make, words):
    store = suite.path / "perf.sqlite"
    make(store)
    result = run_suite(suite, monkeypatch, 0, "--jetson-report-json", "r.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*pytest-jetson: --jetson-history: *{store.name}*"])
    assert words in result.stdout.str() and "Traceback" not in result.stdout.str()
    assert json.loads((suite.path / "r.json").read_text())["kind"] == "pytest-jetson-report"
    if not store.is_dir():
        capsys.readouterr()
        assert cli_main(["history", str(store), "--no-plots"]) == 2
        err = capsys.readouterr().err
        assert str(store) in err and "Traceback" not in err


@pytest.mark.parametrize("make, words", [
    (lambda p: p.write_text("run,value\n1,2\n"), "exists and is not a history store (an SQLite file)"),
    (lambda p: p.mkdir(), "is a directory, not a file"),
])
def test_a_store_that_is_no_store_at_all_is_a_usage_error_before_any_test(suite, monkeypatch, make, words):
    store = suite.path / "perf.sqlite"
    make(store)
    result = run_suite(suite, monkeypatch, 0, "--jetson-report-json", "r.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--jetson-history *perf.sqlite*{words}*"])
    assert not (suite.path / "r.json").exists()


def test_a_locked_store_is_a_clear_error_after_the_busy_timeout(suite, monkeypatch):
    store = suite.path / "perf.sqlite"
    history_store.append(store, history_store.header({}, {}, {}, "2026-11-01T00:00:00Z"), {})
    monkeypatch.setattr(history_store, "BUSY_TIMEOUT", 0.2)
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        result = run_suite(suite, monkeypatch, 0, "--jetson-report-json", "r.json")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*--jetson-history: history store *perf.sqlite is locked by another process*",
                                 "*1 report file could not be written (above); this session fails*"])
    assert result.ret == 1  # the run is not in the store: a job that trends it must not go on
    assert (suite.path / "r.json").is_file()
    assert history_store.count(store) == 1  # nothing half-written
    run_suite(suite, monkeypatch, 1).assert_outcomes(passed=1)  # free again: appended
    assert history_store.count(store) == 2


def test_an_empty_store_and_a_missing_one_say_so(tmp_path, capsys):
    store = tmp_path / "h.sqlite"
    assert cli_main(["history", str(store), "--no-plots"]) == 2
    assert "does not exist" in capsys.readouterr().err
    history_store.append(store, history_store.header({}, {}, {}, "2026-11-01T00:00:00Z"), {})
    with sqlite3.connect(store) as db:
        db.execute("DELETE FROM runs")
    assert cli_main(["history", str(store), "--no-plots"]) == 2
    assert "no run stored yet" in capsys.readouterr().err


def test_history_publishes_one_static_page_with_a_sparkline_per_metric(suite, monkeypatch, capsys):
    for run in range(4):
        run_suite(suite, monkeypatch, run, *(["--jetson-update-baselines"] if run == 0 else [])).assert_outcomes(passed=1)
    out = suite.path / "site"
    capsys.readouterr()
    assert cli_main(["history", str(suite.path / "perf.sqlite"), "--no-plots", "--html", str(out)]) == 0
    assert f"wrote {out / 'index.html'}" in capsys.readouterr().out
    page = (out / "index.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    row = page.split("<code>test_suite.py::test_detector</code>")[1].split("</tr>")[0]
    assert "<td>throughput</td>" in row and row.count("<svg") == 1 and "<polyline" in row
    assert "<polygon" in row  # the tolerance band of the baseline the gate compared with
    assert "orin-nano-8gb, power mode 15W" in page
    (suite.path / "file").write_text("")
    assert cli_main(["history", str(suite.path / "perf.sqlite"), "--no-plots", "--html",
                     str(suite.path / "file")]) == 2
    assert "--html" in capsys.readouterr().err


# -- the trend analysis stays exact at a store's sizes ---------------------------------------------


def naive_steps(values, alpha=0.01, min_size=3, min_change=0.01):
    """Binary segmentation as the textbook writes it: every split tested with `trend.student`."""
    y = [math.log(v) for v in values]
    found = []

    def search(lo, hi):
        splits = range(lo + min_size, hi - min_size + 1)
        if hi - lo < 2 * min_size or not splits:
            return
        best = None
        for k in splits:
            _, p = trend.student(y[lo:k], y[k:hi])
            diff = sum(y[k:hi]) / (hi - k) - sum(y[lo:k]) / (k - lo)
            if abs(math.expm1(diff)) < min_change:
                continue
            if best is None or p < best[0] or (p == best[0] and abs(diff) > abs(best[2])):
                best = (p, k, diff)
        if best is None or min(1.0, best[0] * len(splits)) >= alpha:
            return
        found.append(best[1])
        search(lo, best[1])
        search(best[1], hi)

    search(0, len(y))
    return sorted(found)


# distinct levels: two splits of a mirror-image history tie exactly, and either is a right answer
levels = st.lists(st.sampled_from([100.0, 100.5, 103.0, 108.0]), min_size=1, max_size=4, unique=True)


@settings(max_examples=200, deadline=None)
@given(levels, st.integers(3, 12), st.lists(st.floats(-0.02, 0.02), min_size=48, max_size=48))
def test_the_running_sums_find_the_steps_the_textbook_finds(level_list, run, noise):
    values = [level * (1 + noise[i % len(noise)] * (i % 3 != 0)) for level in level_list for i in range(run)]
    assert [s.at for s in trend.change_points(values)] == naive_steps(values)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=40))
def test_the_concordance_count_is_the_pairs_sign_sum(values):
    naive = sum((values[j] > values[i]) - (values[j] < values[i])
                for i in range(len(values)) for j in range(i + 1, len(values)))
    assert trend._concordance(values) == naive


def test_a_store_of_several_boards_is_analysed_per_board(tmp_path, capsys):
    store = tmp_path / "lab.sqlite"
    for run in range(4):
        for serial, device in (("1424321012345", "orin-nano-8gb"), ("1424321099999", "agx-orin-64gb")):
            fp = {"device": device, "power_mode": "15W", "simulated": False}
            head = history_store.header(fp, {"backend": "tensorrt"}, {"machine": {"serial": serial}},
                                        f"2026-11-0{run + 1}T10:00:00Z")
            history_store.append(store, head, {("t::a", "throughput"): history_store.Point(value=100.0 + run)})
    assert cli_main(["history", str(store), "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("8 reports from 2 environments, analysed apart:")
    assert f"orin-nano-8gb, power mode 15W (tensorrt, real): {store} (4 runs)" in out
    assert out.count("history of 4 runs") == 2
    assert [r.name for r in history_store.load(store)][:2] == ["run 1 on 1424321012345", "run 2 on 1424321099999"]
