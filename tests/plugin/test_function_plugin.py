"""perf.measure(fn) and perf.stage as a user meets them in a pytest run: measured on the
simulated board, recorded in reports and baselines, a raising function failing with its own
traceback, and a slower post-processing step showing up as that stage's change."""

import json

import pytest

PIPELINE = '''
import numpy as np
import pytest

FRAMES = [np.full((120, 160, 3), i, dtype=np.uint8) for i in range(4)]
SLOWDOWN = {slowdown}


def top(scores):
    return np.sort(scores, axis=None)[-10:]


def postprocess(scores):
    out = None
    for _ in range(SLOWDOWN):  # the step a pull request makes slower
        out = top(scores)
    return out


postprocess.__wrapped__ = top  # pre-processing does the same work once


@pytest.mark.perf(latency_p99="<= 10 s")
def test_pipeline(trt_engine, perf):
    engine = trt_engine("resnet50", precision="int8")

    def pipeline(frame):
        with perf.stage("preprocess"):
            postprocess.__wrapped__(np.random.default_rng(1).random(20000))
        with perf.stage("infer"):
            engine.infer()
        with perf.stage("postprocess"):
            postprocess(np.random.default_rng(0).random(20000))

    m = perf.measure(pipeline, inputs=FRAMES, items=1, iterations=300, warmup="0.01s")
    print("STAGES", ",".join(sorted(m.stages)), m.extra["timing"]["host_scale"] > 0)
'''


@pytest.fixture
def suite(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    return pytester


def run(pytester, *args):
    return pytester.runpytest("-p", "no:cacheprovider", "-s", "-W", "ignore::pytest.PytestAssertRewriteWarning", *args)


def _stages(path, metric="latency_mean"):
    test = json.loads(path.read_text())["tests"][0]
    m = test["measurements"][0]
    return m, {name: s["summary"][metric] for name, s in m["stages"].items()}


def test_a_pipeline_is_measured_with_its_stages_and_its_timing_reported(suite):
    suite.makepyfile(test_suite=PIPELINE.format(slowdown=1))
    r = run(suite, "--jetson-report-json", "r.json", "--jetson-table", "all")
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines([
        "*STAGES infer,postprocess,preprocess True",
        "  per call: * ms engines, simulated + * ms host, measured x*",
    ])
    m, stages = _stages(suite.path / "r.json")
    assert m["name"] == "test_pipeline.<locals>.pipeline" and m["clock"] == "virtual"
    assert set(m["extra"]["timing"]) >= {"simulated_s", "host_measured_s", "host_scale", "host_scaled_s"}
    assert all(v > 0 for v in stages.values())
    assert sum(stages.values()) <= m["summary"]["latency_mean"] * (1 + 1e-9)


def test_a_slower_postprocessing_step_reads_as_that_stages_change(suite):
    suite.makepyfile(test_suite=PIPELINE.format(slowdown=1))
    run(suite, "--jetson-update-baselines", "--jetson-report-json", "before.json").assert_outcomes(passed=1)
    suite.makepyfile(test_suite=PIPELINE.format(slowdown=3))
    run(suite, "--jetson-report-json", "after.json").assert_outcomes(passed=1)
    _, before = _stages(suite.path / "before.json", "latency_p50")
    _, after = _stages(suite.path / "after.json", "latency_p50")
    # the simulated engine stays exactly where it was; the slowed step about triples against
    # the unchanged pre-processing measured beside it (a ratio within one run: the shared
    # host's load moves both alike)
    assert after["infer"] == pytest.approx(before["infer"], rel=0.05)
    moved = (after["postprocess"] / after["preprocess"]) / (before["postprocess"] / before["preprocess"])
    assert 1.5 < moved < 10.0, (before, after)


def test_a_raising_function_fails_with_the_users_traceback_and_records_nothing(suite):
    suite.makepyfile(test_suite='''
        def decode(boxes):
            return boxes["missing"]

        def test_raises(perf):
            def pipeline():
                with perf.stage("postprocess"):
                    decode({})
            perf.measure(pipeline, iterations=5)
    ''')
    r = run(suite, "--jetson-report-json", "r.json")
    r.assert_outcomes(failed=1)
    out = r.stdout.str()
    failure = out.split("= FAILURES =")[1].split("short test summary")[0]
    assert "pytest_jetson/" not in failure  # the harness's frames are not shown
    r.stdout.fnmatch_lines([
        "*perf.measure(pipeline, iterations=5)*",
        "*decode({})*",
        '*return boxes?"missing"?*',
        "E       KeyError: 'missing'",
    ])
    assert "perf.stage('postprocess')" in failure  # the note naming the stage
    report = json.loads((suite.path / "r.json").read_text())
    assert all(not t.get("measurements") for t in report["tests"])


def test_bad_items_is_a_clear_error(suite):
    suite.makepyfile(test_suite='''
        def test_items(perf):
            perf.measure(lambda: None, items=0, iterations=5)
    ''')
    r = run(suite)
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*ConfigError: perf.measure(*): items=0 is not a positive whole number*"])
    assert "INTERNALERROR" not in r.stdout.str()


def test_a_stage_nested_under_its_own_name_is_a_clear_error(suite):
    suite.makepyfile(test_suite='''
        def test_nested(perf):
            def pipeline():
                with perf.stage("post"):
                    with perf.stage("post"):
                        pass
            perf.measure(pipeline, iterations=5)
    ''')
    r = run(suite)
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*ConfigError: perf.stage('post') entered while it is already open*"])


def test_on_the_host_backend_a_stage_is_wall_clock_time_not_scaled(suite):
    pytest.importorskip("onnxruntime")
    suite.makepyfile(test_suite='''
        import time

        def test_host(trt_engine, perf):
            engine = trt_engine("squeezenet1_1", precision="fp32")

            def pipeline():
                with perf.stage("infer"):
                    engine.infer()
                with perf.stage("wait"):
                    time.sleep(0.002)

            m = perf.measure(pipeline, iterations=20, warmup=0)
            t = m.extra["timing"]
            print("HOST", m.clock, m.backend, t["host_scale"], t["simulated_s"],
                  m.stages["wait"].latency_p50 >= 0.002)
    ''')
    r = run(suite, "--jetson-backend", "onnxruntime", "--jetson-table", "all")
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines(["*HOST wall onnxruntime 1.0 0.0 True"])
    assert "test_suite.py::test_host" in r.stdout.str()  # the table is shown ...
    assert "per call:" not in r.stdout.str()  # ... without a timing line: nothing simulated, nothing scaled: no timing line
