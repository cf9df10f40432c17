"""Reports go only where a regular file is or can be, and replace only reports of ours: a device,
a pipe, a directory, a link out of the project or another file is a usage error at start-up (no
test runs in vain), naming the path and the fix."""

import json
import os
import stat

import pytest

SUITE = '''
def test_fast(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), duration="0.2s")
'''


@pytest.fixture
def suite(project_of):
    return project_of(SUITE)


def run(pytester, *args):
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def test_a_device_is_a_usage_error_and_left_a_device(suite):
    r = run(suite, "--jetson-report-json", "/dev/null")
    assert r.ret == 4
    r.stderr.fnmatch_lines(["*--jetson-report-json /dev/null is a character device, not a regular file; "
                            "pytest-jetson writes only regular files*"])
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_a_fifo_is_a_usage_error_not_a_hang(suite):
    fifo = suite.path / "summary.md"
    os.mkfifo(str(fifo))
    r = run(suite, "--jetson-report-md", str(fifo))
    assert r.ret == 4
    r.stderr.fnmatch_lines(["*summary.md is a named pipe (FIFO), not a regular file*"])


def test_a_directory_for_a_report_and_a_file_for_plots_are_usage_errors(suite):
    (suite.path / "out").mkdir()
    r = run(suite, "--jetson-report-json", "out", "--jetson-plots", "pyproject.toml")
    assert r.ret == 4
    r.stderr.fnmatch_lines(["*--jetson-report-json out is a directory, not a file; give a file path such as out*report*",
                            "*--jetson-plots pyproject.toml: is not a directory; plots are written into a directory*"])


def test_another_file_is_not_clobbered(suite):
    before = (suite.path / "pyproject.toml").read_text()
    r = run(suite, "--jetson-report-json", "pyproject.toml")
    assert r.ret == 4
    r.stderr.fnmatch_lines(["*--jetson-report-json pyproject.toml: exists and is not a pytest-jetson JSON "
                            "report; pytest-jetson replaces only its own reports*"])
    assert (suite.path / "pyproject.toml").read_text() == before
    (suite.path / "notes.md").write_text("# my notes\n")
    r = run(suite, "--jetson-report-md", "notes.md")
    assert r.ret == 4 and (suite.path / "notes.md").read_text() == "# my notes\n"


def test_a_previous_report_of_ours_is_replaced(suite):
    assert run(suite, "--jetson-report-json", "r.json", "--jetson-report-md", "r.md").ret == 0
    first = json.loads((suite.path / "r.json").read_text())
    assert first["kind"] == "pytest-jetson-report"
    r = run(suite, "--jetson-report-json", "r.json", "--jetson-report-md", "r.md")
    assert r.ret == 0
    r.stdout.fnmatch_lines(["*wrote r.json*", "*wrote r.md*"])


def test_a_link_inside_the_project_is_followed_one_outside_refused(suite, tmp_path_factory):
    (suite.path / "runs").mkdir()
    (suite.path / "latest.json").symlink_to(suite.path / "runs" / "run-1.json")
    assert run(suite, "--jetson-report-json", "latest.json").ret == 0
    assert (suite.path / "latest.json").is_symlink()
    assert json.loads((suite.path / "runs" / "run-1.json").read_text())["kind"] == "pytest-jetson-report"

    outside = tmp_path_factory.mktemp("home") / "bashrc"
    outside.write_text("keep me")
    (suite.path / "evil.md").symlink_to(outside)
    r = run(suite, "--jetson-report-md", "evil.md")
    assert r.ret == 4
    r.stderr.fnmatch_lines(["*evil.md is a symbolic link to *bashrc, outside *; pytest-jetson follows links "
                            "only inside the project*"])
    assert outside.read_text() == "keep me"


def test_a_step_summary_is_appended_to_but_never_a_pipe(suite, monkeypatch):
    summary = suite.path / "step.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert run(suite).ret == 0
    assert summary.read_text().startswith("earlier step\n## pytest-jetson perf gate")
    fifo = suite.path / "pipe"
    os.mkfifo(str(fifo))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(fifo))
    assert run(suite).ret == 4


def test_a_path_through_a_file_is_a_usage_error(suite):
    r = run(suite, "--jetson-report-json", "pyproject.toml/r.json")
    assert r.ret == 4
    r.stderr.fnmatch_lines(["*--jetson-report-json pyproject.toml/r.json cannot be created: pyproject.toml is a "
                            "file, not a directory; choose another path*"])


def test_plots_into_a_link_out_of_the_project_are_refused(suite, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere")
    (suite.path / "plots").symlink_to(outside, target_is_directory=True)
    r = run(suite, "--jetson-plots", "plots")
    assert r.ret == 4
    r.stderr.fnmatch_lines([f"*--jetson-plots plots is a symbolic link to {outside}, outside *"])
    assert list(outside.iterdir()) == []


@pytest.mark.skipif(not stat.S_ISCHR(os.stat("/dev/null").st_mode), reason="no /dev/null here")
def test_the_history_store_goes_only_where_a_report_may(suite, tmp_path_factory):
    r = run(suite, "--jetson-history", "/dev/null")
    assert r.ret == 4
    r.stderr.fnmatch_lines(["*--jetson-history /dev/null is a character device, not a regular file*"])
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode) and not os.path.exists("/dev/null-journal")
    fifo = suite.path / "history.sqlite"
    os.mkfifo(str(fifo))
    r = run(suite, "--jetson-history", str(fifo))
    assert r.ret == 4
    r.stderr.fnmatch_lines(["*history.sqlite is a named pipe (FIFO), not a regular file*"])
    fifo.unlink()
    outside = tmp_path_factory.mktemp("elsewhere") / "history.sqlite"
    (suite.path / "history.sqlite").symlink_to(outside)
    r = run(suite, "--jetson-history", "history.sqlite")
    assert r.ret == 4 and not outside.exists()
    r.stderr.fnmatch_lines(["*--jetson-history history.sqlite is a symbolic link to *, outside *"])
    before = (suite.path / "pyproject.toml").read_bytes()
    r = run(suite, "--jetson-history", "pyproject.toml")
    assert r.ret == 4 and (suite.path / "pyproject.toml").read_bytes() == before
    r.stderr.fnmatch_lines(["*--jetson-history *pyproject.toml: exists and is not a history store (an SQLite file)*"])
    r = run(suite, "--jetson-history", "runs/history.sqlite")
    assert r.ret == 0 and (suite.path / "runs" / "history.sqlite").read_bytes()[:16] == b"SQLite format 3\x00"
    assert run(suite, "--jetson-history", "runs/history.sqlite").ret == 0


def test_traces_are_not_written_through_a_link_out_of_the_project(suite, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere")
    (suite.path / ".jetson-traces").symlink_to(outside, target_is_directory=True)
    r = run(suite, "--jetson-trace", "all", "--jetson-device", "orin-nano")
    assert r.ret == 0
    r.stdout.fnmatch_lines(["*trace of test_suite.py::test_fast not written: *.jetson-traces is a symbolic link to "
                            f"{outside}, outside *"])
    assert list(outside.iterdir()) == []
