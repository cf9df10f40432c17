"""Ctrl-C while the session writes its baselines and reports: a line saying what happened, exit
status 2 (interrupted), no traceback through the plugin."""

import pytest

SUITE = '''
def test_a(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), duration="0.2s")
'''

# a real SIGINT, delivered while the session's first file is being written
CONFTEST = '''
import os
import signal

from pytest_jetson import fileio

_write = fileio.write_atomic


def _interrupted(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGINT)
    return _write(*args, **kwargs)


def pytest_sessionstart(session):
    fileio.write_atomic = _interrupted
'''


@pytest.fixture
def suite(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".toml", pyproject="[project]\nname = 'x'\n")
    return pytester


def test_ctrl_c_while_writing_is_a_clear_interruption(suite):
    r = suite.runpytest_subprocess("-p", "no:cacheprovider", "--jetson-update-baselines",
                                   "--jetson-report-json", "r.json")
    out = r.stdout.str() + r.stderr.str()
    assert r.ret == pytest.ExitCode.INTERRUPTED
    assert "Traceback" not in out and "KeyboardInterrupt" not in out
    assert "pytest-jetson: interrupted while writing the session's baselines and reports" in out
