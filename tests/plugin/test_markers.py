"""Keeping perf tests out of a plain unit-test run, and running only them: every test that
measures carries the ``perf`` mark, so ``-m perf`` and ``-m "not perf"`` split a suite."""

import pytest

SUITE = '''
import pytest

def test_unit():
    assert 1 + 1 == 2

@pytest.mark.perf(throughput=">= 1/s")
def test_bounded(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), duration="0.2s", warmup=0)

def test_measures_without_bounds(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), duration="0.2s", warmup=0)

def test_pool(process_pool, perf):
    perf.record(process_pool("resnet18", processes=2, duration="0.2s", warmup=0))

def test_engine_only(trt_engine):
    assert trt_engine("resnet18").batch == 1
'''


@pytest.fixture
def suite(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def test_not_perf_runs_only_the_unit_tests(suite):
    r = suite.runpytest("-m", "not perf", "-v", "-p", "no:cacheprovider")
    r.assert_outcomes(passed=1, deselected=4)
    r.stdout.fnmatch_lines(["*test_suite.py::test_unit PASSED*"])
    assert "pytest-jetson perf gate" not in r.stdout.str()


def test_perf_runs_only_what_measures(suite):
    r = suite.runpytest("-m", "perf", "-p", "no:cacheprovider")
    r.assert_outcomes(passed=4, deselected=1)
    r.stdout.fnmatch_lines(["perf tests: 4 passed · bounds: 1 pass*"])


def test_the_mark_is_documented_in_pytest_markers(suite):
    r = suite.runpytest("--markers")
    r.stdout.fnmatch_lines(["@pytest.mark.perf(**bounds):*-m perf runs only them*"])


def test_an_addopts_default_is_overridden_on_the_command_line(suite):
    suite.makeini('[pytest]\naddopts = -m "not perf"\n')
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1, deselected=4)
    suite.runpytest("-p", "no:cacheprovider", "-m", "perf").assert_outcomes(passed=4, deselected=1)
