"""What a session holds of a judged perf test until its end: its summary (the report's test), not
every sample, telemetry reading and layer time; the reports read the same either way."""

import json

import pytest

pytest_plugins = ["pytester"]

CONFTEST = """
import gc

from pytest_jetson.run.measurement import Samples


def pytest_sessionfinish(session):
    gc.collect()
    held = [o for o in gc.get_objects() if type(o).__name__ == "Measurement"]
    samples = sum(len(s) for m in held for s in vars(m).values() if isinstance(s, Samples))
    print(f"measurements held whole: {len(held)}, samples: {samples}")
"""

SUITE = """
import pytest


@pytest.mark.parametrize("i", range(4))
@pytest.mark.perf(throughput=">= 1/s")
def test_model(trt_engine, perf, i):
    perf.measure(trt_engine("resnet18"), duration="0.2s")
"""


@pytest.fixture
def suite(pytester):
    pytester.makepyprojecttoml("[project]\nname = 'x'\n")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def _run(pytester, *args):
    return pytester.runpytest_subprocess("--jetson-device", "orin-nano", "-s", "-p", "no:cacheprovider", *args)


def test_measurements_are_not_held_after_their_test(suite):
    result = _run(suite, "-p", "no:xdist", "--jetson-report-json", "r.json")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*measurements held whole: 0, samples: 0*"])
    tests = json.loads((suite.path / "r.json").read_text())["tests"]
    assert [t["measurements"][0]["samples_kept"] for t in tests] == ["summary"] * 4


def test_plots_keep_every_sample_to_the_end(suite):
    pytest.importorskip("matplotlib")
    result = _run(suite, "-p", "no:xdist", "--jetson-plots", "plots")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*measurements held whole: 4, samples: *"])
    assert "samples: 0" not in result.stdout.str()


def test_serial_and_xdist_reports_hold_the_same_tests(suite):
    pytest.importorskip("xdist")
    _run(suite, "-p", "no:xdist", "--jetson-report-json", "serial.json").assert_outcomes(passed=4)
    _run(suite, "-n", "2", "--jetson-report-json", "xdist.json").assert_outcomes(passed=4)

    def shape(name):
        tests = json.loads((suite.path / name).read_text())["tests"]
        return sorted((t["nodeid"], t["outcome"], sorted(t["measurements"][0]), sorted(t["measurements"][0]["metrics"]))
                      for t in tests)

    assert shape("serial.json") == shape("xdist.json")


def test_an_xdist_worker_holds_no_measurement_after_its_test(suite):
    # a worker sends each result to the controller: one it also kept would grow with its share
    pytest.importorskip("xdist")
    suite.makeconftest(CONFTEST.replace(
        'print(f"measurements held whole: {len(held)}, samples: {samples}")',
        'name = getattr(session.config, "workerinput", {}).get("workerid", "controller")\n'
        '    open(f"held-{name}.txt", "w").write(f"{len(held)} {samples}")'))
    _run(suite, "-n", "2", "--jetson-report-json", "r.json").assert_outcomes(passed=4)
    held = {p.name: p.read_text() for p in suite.path.glob("held-*.txt")}
    assert held == {"held-controller.txt": "0 0", "held-gw0.txt": "0 0", "held-gw1.txt": "0 0"}
