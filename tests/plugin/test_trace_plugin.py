"""--jetson-trace as a user sees it: a trace per failing (or every) perf test on the simulated
board, listed in the terminal, linked from the JSON report and the JUnit properties; a trace that
cannot be written is a note, never a failed test."""

import json

import pytest

SUITE = '''
import pytest

@pytest.mark.perf(throughput=">= 1/s")
def test_passes(trt_engine, perf):
    engine = trt_engine("resnet50", precision="int8", batch=1)

    def pipeline():
        with perf.stage("pre"):
            sum(range(100))
        engine.infer()

    perf.measure(pipeline, duration="200ms", warmup="0s")

@pytest.mark.perf(throughput=">= 1e9/s")
def test_fails(process_pool, perf):
    perf.record(process_pool("resnet50", processes=2, precision="int8", batch=1, duration="200ms",
                             warmup="0s"))

def test_no_perf():
    pass
'''


@pytest.fixture
def suite(pytester, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def run(pytester, *args):
    return pytester.runpytest("--jetson-device", "orin-nano", "-p", "no:cacheprovider", *args)


def rows(doc):
    return {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}


def test_fail_traces_the_failing_test_only_and_links_it(suite):
    result = run(suite, "--jetson-trace=fail", "--jetson-report-json=out/report.json", "--junitxml=out/junit.xml")
    result.assert_outcomes(passed=2, failed=1)
    traces = suite.path / "out" / "jetson-traces"
    files = sorted(p.name for p in traces.iterdir())
    assert files == ["test_suite.py_test_fails.trace.json"]
    result.stdout.fnmatch_lines(["*pytest-jetson traces*", f"1 trace(s) in {traces}*",
                                 f"  test_suite.py::test_fails: {traces / files[0]}"])
    doc = json.loads((traces / files[0]).read_text())
    assert {"process 0: resnet50 int8 b1", "process 1: resnet50 int8 b1"} <= rows(doc)
    report = json.loads((suite.path / "out" / "report.json").read_text())
    linked = {t["nodeid"]: [m["extra"].get("trace") for m in t["measurements"]] for t in report["tests"]}
    assert linked["test_suite.py::test_fails"] == [str(traces / files[0])]
    assert linked["test_suite.py::test_passes"] == [None]
    assert f'name="jetson_trace" value="{traces / files[0]}"' in (suite.path / "out" / "junit.xml").read_text()


def test_all_traces_every_perf_test_with_its_stages_and_host_code(suite):
    result = run(suite, "--jetson-trace=all")
    result.assert_outcomes(passed=2, failed=1)
    traces = suite.path / ".jetson-traces"
    assert sorted(p.name for p in traces.iterdir()) == ["test_suite.py_test_fails.trace.json",
                                                        "test_suite.py_test_passes.trace.json"]
    doc = json.loads((traces / "test_suite.py_test_passes.trace.json").read_text())
    assert {"engine resnet50 int8 b1", "measured function (host)", "perf.stage", "measurements"} <= rows(doc)
    stages = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["name"] == "pre"]
    assert stages and all(e["dur"] >= 0 for e in stages)
    counters = [e for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] == "GPU %"]
    assert counters and "tensor_active" in counters[-1]["args"]


def test_without_the_option_no_trace_is_written(suite):
    run(suite).assert_outcomes(passed=2, failed=1)
    assert not (suite.path / ".jetson-traces").exists()


def test_an_unwritable_trace_directory_is_a_note_not_a_failure(suite):
    (suite.path / ".jetson-traces").write_text("a file in the way")
    result = run(suite, "--jetson-trace=all")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*trace of test_suite.py::test_passes not written: *.jetson-traces is not a "
                                 "directory; give a directory*"])


def test_a_bad_value_is_a_usage_error(suite):
    result = run(suite, "--jetson-trace=sometimes")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--jetson-trace*invalid choice*sometimes*"])


FAKE_NVTX = '''
import json, os
def push_range(message=None, **kw):
    with open(os.environ["NVTX_LOG"], "a") as f:
        f.write(json.dumps(["push", message]) + "\\n")
def pop_range():
    with open(os.environ["NVTX_LOG"], "a") as f:
        f.write(json.dumps(["pop"]) + "\\n")
'''


def test_a_rerun_under_nsys_marks_the_test_with_an_nvtx_range_and_traces_nothing_itself(suite, monkeypatch):
    suite.makepyfile(nvtx=FAKE_NVTX)
    suite.syspathinsert()
    log = suite.path / "nvtx.log"
    monkeypatch.setenv("NVTX_LOG", str(log))
    monkeypatch.setenv("PYTEST_JETSON_NSYS_CHILD", "1")
    result = run(suite, "--jetson-trace=all", "test_suite.py::test_no_perf")
    result.assert_outcomes(passed=1)
    assert [json.loads(line) for line in log.read_text().splitlines()] == [
        ["push", "test_suite.py::test_no_perf"], ["pop"]]
    assert not (suite.path / ".jetson-traces").exists()
