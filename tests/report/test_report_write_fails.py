"""A report that cannot be written at the session's end fails the session (exit status 1), as lost
baselines do: the file and the fix named, no traceback, the previous report whole and no
temporary file left beside it."""

import errno
import json
import os

import pytest

SUITE = '''
import shutil
from pathlib import Path

def test_a(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), duration="0.2s")

def test_the_report_directory_goes_away():
    # after start-up checked it: the directory the report goes into becomes a file
    if Path("out").is_dir():
        shutil.rmtree("out")
        Path("out").write_text("not a directory any more")
'''


@pytest.fixture
def suite(project_of):
    return project_of(SUITE)


def run(pytester, *args):
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def test_a_report_whose_directory_became_a_file_fails_the_session(suite):
    (suite.path / "out").mkdir()
    r = run(suite, "--jetson-report-json", "out/r.json", "--jetson-report-md", "r.md")
    r.assert_outcomes(passed=2)
    assert r.ret == 1
    out = r.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    r.stdout.fnmatch_lines([
        "*pytest-jetson: wrote r.md*",
        "*pytest-jetson: --jetson-report-json out/r.json*out*choose another path*",
        "*pytest-jetson: 1 report file could not be written (above); this session fails so that a missing "
        "report is not taken as written: free space or choose a writable path, and run again*",
    ])
    assert (suite.path / "out").is_file()


def test_a_full_disk_fails_the_session_and_keeps_the_previous_report(suite, monkeypatch):
    assert run(suite, "--jetson-report-json", "r.json").ret == 0
    before = (suite.path / "r.json").read_bytes()

    def full(fd):  # what a full disk answers where the data reaches it
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    r = run(suite, "--jetson-report-json", "r.json", "--jetson-report-md", "r.md")
    assert r.ret == 1
    out = r.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    r.stdout.fnmatch_lines([
        "*pytest-jetson: --jetson-report-json r.json: cannot be written (No space left on device); "
        "choose another path*",
        "*pytest-jetson: --jetson-report-md r.md: cannot be written (No space left on device)*",
        "*pytest-jetson: 2 report files could not be written (above); this session fails*",
    ])
    assert (suite.path / "r.json").read_bytes() == before  # whole: the previous report
    assert json.loads(before)["kind"] == "pytest-jetson-report"
    assert not (suite.path / "r.md").exists()
    assert sorted(p.name for p in suite.path.iterdir() if p.name.endswith(".tmp")) == []


def test_reports_that_are_written_leave_the_exit_status_alone(suite):
    r = run(suite, "--jetson-report-json", "r.json", "--jetson-report-md", "r.md")
    assert r.ret == 0
    assert "could not be written" not in r.stdout.str()
