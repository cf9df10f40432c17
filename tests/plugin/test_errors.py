"""The plugin's own errors as a user meets them: a short message under the user's own frames,
never a walk through pytest-jetson's internals; usage errors stop the run at start-up."""

import pytest

SUITE = '''
def test_unknown_model(trt_engine, perf):
    perf.measure(trt_engine("tinynet"), duration="0.5s")

def test_broken_file(trt_engine, perf):
    perf.measure(trt_engine("broken.onnx"), duration="0.5s")
'''


@pytest.fixture
def host(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    (pytester.path / "broken.onnx").write_text("not an onnx file")
    return pytester


def failures(result):
    out = result.stdout.str()
    return out.split("= FAILURES =")[1].split("pytest-jetson perf gate")[0].split("warnings summary")[0]


@pytest.mark.parametrize("backend", ["simulated", "onnxruntime"])
def test_an_engine_error_shows_the_users_frame_and_the_message(host, backend):
    host.makepyfile(test_suite=SUITE)
    r = host.runpytest("--jetson-backend", backend, "-p", "no:cacheprovider")
    r.assert_outcomes(failed=2)
    text = failures(r)
    assert "pytest_jetson/" not in text  # none of the plugin's frames
    r.stdout.fnmatch_lines([
        ">       perf.measure(trt_engine(\"tinynet\"), duration=\"0.5s\")",
        "E       pytest_jetson.errors.ModelError: unknown zoo model 'tinynet'.*",
        "test_suite.py:*: ModelError",
        "E       pytest_jetson.errors.ModelError: *'broken.onnx' is not a readable ONNX file*",
    ])
    assert text.count("\n") < 30  # two short reports


def test_fulltrace_shows_everything(host):
    host.makepyfile(test_suite=SUITE)
    r = host.runpytest("--fulltrace", "-p", "no:cacheprovider", "-k", "unknown")
    assert "pytest_jetson/models/zoo.py" in r.stdout.str()


def test_a_user_error_keeps_its_traceback(host):
    host.makepyfile(test_suite='''
        def helper():
            raise ValueError("the user's own bug")

        def test_own(trt_engine, perf):
            helper()
    ''')
    r = host.runpytest("-p", "no:cacheprovider")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*def helper():*", "E       ValueError: the user's own bug"])


@pytest.mark.slow
def test_a_broken_model_in_a_pool_fails_with_the_workers_message_only(host):
    host.makepyfile(test_suite='''
        def test_pool(process_pool, perf):
            perf.record(process_pool("broken.onnx", processes=2, duration="1s", warmup="0.1s"))
    ''')
    r = host.runpytest_subprocess("--jetson-backend", "onnxruntime", "-p", "no:cacheprovider")
    r.assert_outcomes(failed=1)
    text = failures(r)
    assert "pool_procs.py" not in text and "pytest_jetson/" not in text
    r.stdout.fnmatch_lines([
        "E       pytest_jetson.errors.WorkerError: pool worker ? of 2 (model 'broken.onnx'*could not open its "
        "engine*not a readable ONNX file*",
        "test_suite.py:*: WorkerError",
    ])


def test_an_error_in_a_users_fixture_keeps_the_fixture_frame(host):
    host.makeconftest('''
        import pytest

        @pytest.fixture
        def engine(trt_engine):
            return trt_engine("resnet5")
    ''')
    host.makepyfile(test_suite='''
        def test_x(engine, perf):
            pass
    ''')
    r = host.runpytest("-p", "no:cacheprovider")
    r.assert_outcomes(errors=1)
    out = r.stdout.str()
    assert "pytest_jetson/" not in out.split("= ERRORS =")[1].split("short test summary")[0]
    r.stdout.fnmatch_lines(["*return trt_engine(\"resnet5\")", "E       *unknown zoo model 'resnet5'. Did you mean *"])


@pytest.mark.parametrize("args, message", [
    (["--jetson-telemetry", "jtop"], "ERROR: --jetson-telemetry jtop: telemetry source jtop is not available here*"),
    (["--jetson-telemetry", "simulated", "--jetson-backend", "onnxruntime"],
     "ERROR: --jetson-telemetry simulated: *the simulated source runs on the simulated device's virtual clock*"),
    (["--jetson-backend", "tensorrt"], "ERROR: --jetson-backend tensorrt: the tensorrt backend needs*"),
])
def test_unavailable_sources_and_backends_named_on_the_command_line_stop_the_run(host, args, message):
    host.makepyfile(test_suite=SUITE)
    r = host.runpytest(*args)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines([message])
    assert "Traceback" not in r.stderr.str() + r.stdout.str()
