"""Stage bounds as a user sees them: a pipeline's stages are recorded in its baseline, bounded like
any metric, and a failing test names the stage that moved first."""

import json
import re

import pytest

HELPER = '''
import os
import numpy as np
from pytest_jetson.run.measurement import Measurement

MEANS = {"preprocess": 0.002, "infer": 0.006, "postprocess": 0.004}


def pipeline(n=2000, seed=0, stages=None, name="pipeline"):
    """A measurement of a three-stage function; SLOW_<STAGE>=1.5 slows that stage by half."""
    rng = np.random.default_rng(seed)
    parts = {}
    for stage, mean in MEANS.items():
        if stages is not None and stage not in stages:
            continue
        scale = float(os.environ.get("SLOW_" + stage.upper(), "1"))
        parts[stage] = mean * scale * rng.lognormal(0, 0.05, n)
    total = sum(parts.values()) + 0.0005
    lat = [float(x) for x in total]
    m = Measurement(name=name, batch=1, latencies=lat, duration=float(sum(lat)), items=n,
                    precision="fp16")
    m.stages = {s: Measurement(name=s, batch=1, latencies=[float(x) for x in v], duration=m.duration,
                               items=n, precision="fp16") for s, v in parts.items()}
    return m
'''


@pytest.fixture
def suite(pytester, monkeypatch):
    pytester.syspathinsert()
    pytester.makepyfile(pipehelp=HELPER)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    for stage in ("PREPROCESS", "INFER", "POSTPROCESS"):
        monkeypatch.delenv("SLOW_" + stage, raising=False)
    return pytester


def run(pytester, *args):
    return pytester.runpytest("--jetson-device", "orin-nano", "-p", "no:cacheprovider",
                              "-W", "ignore::pytest.PytestAssertRewriteWarning", *args)


def words(result):
    return " ".join(result.stdout.str().split())


def failure(result, test="test_pipeline"):
    """The lines of ``test``'s failure section (its report instead of a traceback)."""
    lines = result.stdout.str().splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(rf"^_+ {test} _+$", line)) + 1
    end = next(i for i, line in enumerate(lines[start:], start) if line.startswith(("____", "----")))
    return lines[start:end]


def baseline_doc(pytester):
    return json.loads((pytester.path / "baselines" / "orin-nano-8gb" / "test_pipe.py.json").read_text())


RELATIVE = '''
import pytest
from pipehelp import pipeline

@pytest.mark.perf(latency_p99="10%", stages={"postprocess": {"latency_mean": "10%"}})
def test_pipeline(perf):
    perf.record(pipeline())
'''


def test_a_slower_stage_fails_the_test_and_is_named_first(suite, monkeypatch):
    suite.makepyfile(test_pipe=RELATIVE)
    run(suite, "--jetson-update-baselines").assert_outcomes(passed=1)
    entry = baseline_doc(suite)["entries"]["test_pipe.py::test_pipeline"]
    assert sorted(entry["stages"]) == ["infer", "postprocess", "preprocess"]
    assert entry["stages"]["postprocess"]["metrics"]["latency_mean"]["value"] == pytest.approx(0.004, rel=0.01)
    assert "throughput" not in entry["stages"]["infer"]["metrics"]

    run(suite).assert_outcomes(passed=1)  # unchanged: the stage bound passes

    monkeypatch.setenv("SLOW_POSTPROCESS", "1.5")
    r = run(suite, "--jetson-report-json", "report.json", "--jetson-report-md", "report.md")
    r.assert_outcomes(failed=1)
    lines = failure(r)
    # the stage that moved comes first, with how much of the slowdown it explains
    assert lines[0].startswith("stages: postprocess +2.0 ms (+50%) explains 100% of the slowdown of +2.0 ms")
    opening = " ".join(lines[:2])
    assert re.search(r"infer [+-]0.0 ms", opening) and re.search(r"preprocess [+-]0.0 ms", opening)
    assert all(len(line) <= 100 for line in lines[:2])
    assert lines[2].startswith("perf bound failed: latency_p99")
    assert "perf bound failed: postprocess: latency_mean" in words(r)
    r.stdout.fnmatch_lines(["*postprocess: latency_mean*FAIL*"])

    doc = json.loads((suite.path / "report.json").read_text())
    test = doc["tests"][0]
    stage_verdicts = [v for v in test["verdicts"] if v["stage"] == "postprocess"]
    assert [v["outcome"] for v in stage_verdicts] == ["fail"]
    where = test["where"][0]
    assert where["stages"][0]["stage"] == "postprocess"
    assert where["stages"][0]["share"] == pytest.approx(1.0, abs=0.05)
    md = (suite.path / "report.md").read_text()
    assert "postprocess: latency_mean" in md and "postprocess +2.0 ms (+50%) explains" in md


def test_the_stage_that_moved_is_named_when_the_whole_fails(suite, monkeypatch):
    suite.makepyfile(test_pipe='''
        import pytest
        from pipehelp import pipeline

        @pytest.mark.perf(latency_mean="5%")
        def test_pipeline(perf):
            perf.record(pipeline())
    ''')
    run(suite, "--jetson-update-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("SLOW_PREPROCESS", "1.5")
    r = run(suite)
    r.assert_outcomes(failed=1)
    lines = failure(r)
    assert lines[0].startswith("stages: preprocess +1.0 ms (+50%) explains 100% of the slowdown")
    assert "perf bound failed: latency_mean" in " ".join(lines)


def test_an_absolute_stage_bound(suite):
    suite.makepyfile(test_pipe='''
        import pytest
        from pipehelp import pipeline

        @pytest.mark.perf(stages={"infer": {"latency_p99": "<= 5 ms"}, "preprocess": {"latency_max": "<= 10 ms"}})
        def test_pipeline(perf):
            perf.record(pipeline())
    ''')
    r = run(suite, "--jetson-report-json", "report.json")
    r.assert_outcomes(failed=1)
    assert "perf bound failed: infer: latency_p99" in words(r)
    assert "violates the bound <= 5 ms" in words(r)
    assert "other bounds: preprocess: latency_max '<= 10 ms' pass" in words(r)
    verdicts = json.loads((suite.path / "report.json").read_text())["tests"][0]["verdicts"]
    assert {(v["stage"], v["metric"], v["outcome"]) for v in verdicts} == {
        ("infer", "latency_p99", "fail"), ("preprocess", "latency_max", "pass")}


def test_a_bound_on_a_stage_the_measurement_lacks_is_an_error_naming_its_stages(suite):
    suite.makepyfile(test_pipe='''
        import pytest
        from pipehelp import pipeline

        @pytest.mark.perf(stages={"postproces": {"latency_mean": "<= 10 ms"}})
        def test_typo(perf):
            perf.record(pipeline())

        @pytest.mark.perf(stages={"infer": {"latency_mean": "<= 10 ms"}})
        def test_no_stages(perf):
            m = pipeline()
            m.stages = {}
            perf.record(m)
    ''')
    r = run(suite)
    r.assert_outcomes(failed=2)
    text = words(r)
    assert ("postprocess: latency_mean" not in text
            and "postproces: latency_mean '<= 10 ms' cannot be checked: the measurement has no stage "
                "'postproces' (its stages: preprocess, infer, postprocess)" in text)
    assert ("infer: latency_mean '<= 10 ms' cannot be checked: the measurement has no stage 'infer' "
            "(it has no stages: time that part of the function with perf.stage(...))") in text


def test_a_stage_the_baseline_lacks_is_not_compared(suite, monkeypatch):
    suite.makepyfile(test_pipe='''
        import os
        import pytest
        from pipehelp import pipeline

        @pytest.mark.perf(stages={"postprocess": {"latency_mean": "10%"}})
        def test_pipeline(perf):
            first = os.environ.get("FIRST") == "1"
            perf.record(pipeline(stages=["preprocess", "infer"] if first else None))
    ''')
    monkeypatch.setenv("FIRST", "1")
    run(suite, "--jetson-update-baselines").assert_outcomes(failed=1)  # no such stage yet
    assert sorted(baseline_doc(suite)["entries"]["test_pipe.py::test_pipeline"]["stages"]) == ["infer", "preprocess"]
    monkeypatch.setenv("FIRST", "0")
    r = run(suite)
    r.assert_outcomes(passed=1)
    assert "skipped postprocess: latency_mean 10% of test_pipe.py::test_pipeline: the baseline has no stage 'postprocess'" in words(r)
    r = run(suite, "--jetson-missing-baseline", "fail")
    r.assert_outcomes(failed=1)


def test_re_recording_an_unchanged_pipeline_writes_nothing(suite):
    suite.makepyfile(test_pipe=RELATIVE)
    run(suite, "--jetson-update-baselines").assert_outcomes(passed=1)
    path = suite.path / "baselines" / "orin-nano-8gb" / "test_pipe.py.json"
    before = path.read_bytes()
    text = before.decode()
    # one line per stage metric and sample, as for the whole
    assert '\n            "latency_mean": {' in text and '\n            "latency": [' in text
    r = run(suite, "--jetson-update-baselines")
    r.assert_outcomes(passed=1)
    assert "nothing to write" in words(r)
    assert path.read_bytes() == before


def test_a_mark_limited_to_other_devices_or_unknown_names(suite):
    suite.makepyfile(test_pipe='''
        import pytest
        from pipehelp import pipeline

        @pytest.mark.perf(latency_mean="<= 1 s", devices="agx-thor", backends=["simulated"])
        def test_ok(perf):
            perf.record(pipeline())

        @pytest.mark.perf(latency_mean="<= 1 s", devices="orin-nanoo")
        def test_bad_device(perf):
            perf.record(pipeline())

        @pytest.mark.perf(latency_mean="<= 1 s", backends="tensor-rt")
        def test_bad_backend(perf):
            perf.record(pipeline())

        @pytest.mark.perf(stages={"infer": {"throughput": ">= 1/s"}})
        def test_stage_throughput(perf):
            perf.record(pipeline())
    ''')
    r = run(suite, "--co")
    text = words(r)
    assert "devices='orin-nanoo': unknown Jetson device 'orin-nanoo'" in text
    assert "backends='tensor-rt': 'tensor-rt' is not a known engine backend; known: tensorrt, onnxruntime, simulated" in text
    assert "stage 'infer' cannot have throughput" in text
    assert "INTERNALERROR" not in r.stdout.str() + r.stderr.str()
