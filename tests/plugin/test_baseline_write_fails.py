"""A recording session that could not write its baselines fails: exit status 1, the file and the
OS's reason named, never "nothing to write"."""

import pytest

SUITE = '''
def test_a(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), duration="0.2s")
'''


@pytest.fixture
def suite(project_of):
    return project_of(SUITE)


def test_baselines_that_cannot_be_written_fail_the_session(suite):
    # a real fault met only when writing (reads take no lock): the baseline file's lock is a directory
    (suite.path / "baselines" / "orin-nano-8gb" / ".test_suite.py.json.lock").mkdir(parents=True)
    r = suite.runpytest("-p", "no:cacheprovider", "--jetson-update-baselines")
    r.assert_outcomes(passed=1)
    assert r.ret == 1
    out = r.stdout.str()
    assert "nothing to write" not in out
    r.stdout.fnmatch_lines([
        "*baselines: could not write baselines/orin-nano-8gb/test_suite.py.json: baseline file *test_suite.py.json "
        "cannot be written*directory*",
        "*pytest-jetson: 1 baseline file could not be written (above); this session fails so that "
        "its results are not taken as recorded*",
    ])


def test_a_recording_that_writes_exits_0(suite):
    r = suite.runpytest("-p", "no:cacheprovider", "--jetson-update-baselines")
    assert r.ret == 0
    r.stdout.fnmatch_lines(["*baselines: wrote 1 entry to*"])


@pytest.mark.parametrize("blocker", ["file", "directory"])
def test_baselines_whose_place_is_taken_fail_the_session(suite, blocker):
    # a file where the device's directory belongs, or a directory where the baseline file does:
    # the test's entry cannot be read, so it cannot be written either
    device = suite.path / "baselines" / "orin-nano-8gb"
    if blocker == "file":
        device.parent.mkdir()
        device.write_text("not a directory")
    else:
        (device / "test_suite.py.json").mkdir(parents=True)
    r = suite.runpytest("-p", "no:cacheprovider", "--jetson-update-baselines")
    assert r.ret == 1
    out = r.stdout.str()
    assert "nothing to write" not in out and "Traceback" not in out
    r.stdout.fnmatch_lines(["*baselines: could not write baselines/orin-nano-8gb/test_suite.py.json: *",
                            "*pytest-jetson: 1 baseline file could not be written (above)*"])
