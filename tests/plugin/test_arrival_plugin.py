"""Load as a camera gives it, as a user gates it: ``perf.measure(engine, rate="30/s")`` and
``perf.max_rate(...)`` on the simulated board, bounds on ``deadline_miss``, ``jitter`` and
``max_rate``, and the user's mistakes as short failures under their own frames."""

import json

import pytest

GATED = '''
import pytest

@pytest.mark.perf(deadline_miss="<= 1 %", jitter="<= 5 ms", latency_p99="<= 33 ms")
def test_camera(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), rate="30/s", duration="5s", warmup=0)

@pytest.mark.perf(deadline_miss="<= 1 %")
def test_poisson_camera(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), rate="poisson:30/s", deadline="20ms", duration="5s", warmup=0)

@pytest.mark.perf(max_rate=">= 30/s")
def test_fast_enough(trt_engine, perf):
    perf.max_rate(trt_engine("resnet50", batch=8), latency_p99="<= 33 ms", duration="2s")

@pytest.mark.perf(max_rate=">= 1000/s")
def test_not_fast_enough(trt_engine, perf):
    perf.max_rate(trt_engine("resnet50", batch=8), latency_p99="<= 33 ms", duration="2s")
'''

MISTAKES = '''
import pytest

@pytest.mark.perf(deadline_miss="<= 1 %")
def test_back_to_back(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), duration="1s", warmup=0)

def test_rate_without_unit(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), rate="30", duration="1s")

def test_overloaded(trt_engine, perf):
    perf.measure(trt_engine("resnet50", batch=8), rate="300/s", duration="2s", warmup=0)

def test_always_late(trt_engine, perf):
    perf.measure(trt_engine("resnet50", batch=8), rate="30/s", deadline="1ms", duration="2s", warmup=0)

def test_never_met(trt_engine, perf):
    perf.max_rate(trt_engine("resnet18"), latency_p99="<= 10 us", duration="1s")
'''

ARGS = ("--jetson-device", "orin-nano", "-p", "no:cacheprovider")


@pytest.fixture
def board(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    return pytester


def failure(result, test):
    out = result.stdout.str()
    head = f"_ {test} _"
    assert head in out, out
    return out.split(head)[1].split("\n_")[0].split("pytest-jetson perf gate")[0]


def test_a_camera_rate_is_gated_on_deadline_miss_jitter_and_max_rate(board):
    board.makepyfile(test_camera=GATED)
    r = board.runpytest(*ARGS, "-v", "--jetson-report-json", "report.json")
    r.assert_outcomes(passed=3, failed=1)
    out = r.stdout.str()
    assert "INTERNALERROR" not in out
    r.stdout.fnmatch_lines(["test_camera.py::test_not_fast_enough", "  max_rate *>= 1000/s*FAIL"])
    report = json.loads((board.path / "report.json").read_text())
    tests = {t["nodeid"].split("::")[1]: t for t in report["tests"]}
    camera = tests["test_camera"]["measurements"][0]
    assert camera["extra"]["rate"] == 30.0 and camera["extra"]["arrivals"] == "fixed"
    assert camera["summary"]["deadline_miss"] == 0.0 and camera["summary"]["jitter"] > 0
    assert camera["summary"]["throughput"] == pytest.approx(30.0)
    poisson = tests["test_poisson_camera"]["measurements"][0]
    assert poisson["extra"]["arrivals"] == "poisson" and poisson["extra"]["deadline"] == 0.020
    found = tests["test_fast_enough"]["measurements"]
    assert len(found) == 1  # the search's probes are not recorded
    assert 30 <= found[0]["summary"]["max_rate"] < 1000
    assert found[0]["extra"]["max_rate_probes"][0]["rate"] >= found[0]["summary"]["max_rate"]


def test_the_users_mistakes_fail_their_test_with_the_fix(board):
    board.makepyfile(test_mistakes=MISTAKES)
    r = board.runpytest(*ARGS)
    r.assert_outcomes(failed=5)
    out = r.stdout.str()
    assert "INTERNALERROR" not in out
    assert "deadline_miss needs rate=" in failure(r, "test_back_to_back")
    text = failure(r, "test_rate_without_unit")
    assert "rate='30' has no unit; write rate='30/s'" in text and "pytest_jetson/" not in text
    text = failure(r, "test_overloaded")
    assert "rate='300/s' but it served only" in text and "perf.max_rate" in text
    assert "pytest_jetson/" not in text
    text = failure(r, "test_always_late")
    assert "deadline=1 ms" in text and "the fastest took" in text and "pytest_jetson/" not in text
    text = failure(r, "test_never_met")
    assert "no arrival rate met latency_p99='<= 10 us'" in text and "(the best seen)" in text
    assert "pytest_jetson/" not in text
