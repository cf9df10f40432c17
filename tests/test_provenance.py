"""Every report knows its commit and its machine: git read without a shell, GitHub Actions'
variables where the checkout cannot say, "no commit" where there is none; the board's serial from
the device tree, in the fingerprint of real runs but never compared by the gate."""

import json
import shutil
import subprocess

import pytest

from pytest_jetson import provenance
from pytest_jetson.context import Context
from pytest_jetson.devices.detect import Notes, read_serial
from pytest_jetson.devices.device import simulated
from pytest_jetson.gate.checks import COMPARED_KEYS, env_differences, environment_keys
from pytest_jetson.settings import Settings

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
NO_ACTIONS = {"PATH": "/usr/bin:/bin"}


def git(repo, *args):
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "c",
           "GIT_COMMITTER_EMAIL": "c@example.com", "GIT_AUTHOR_DATE": "2026-11-01T10:00:00+01:00",
           "GIT_COMMITTER_DATE": "2026-11-02T12:00:00+00:00", "PATH": "/usr/bin:/bin", "HOME": str(repo)}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / "project"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "model.py").write_text("x = 1\n")
    git(path, "add", "model.py")
    git(path, "commit", "-q", "-m", "first")
    return path


@needs_git
def test_a_commit_is_read_as_pytest_benchmark_names_it(repo):
    info = provenance.commit_info(repo, environ=NO_ACTIONS)
    assert info == {"id": git(repo, "rev-parse", "HEAD"), "branch": "main", "dirty": False,
                    "time": "2026-11-02T12:00:00+00:00", "author_time": "2026-11-01T10:00:00+01:00",
                    "project": "project", "source": "git"}
    assert provenance.commit_text(info) == f"commit {info['id'][:7]} (main)"
    (repo / "notes.txt").write_text("untracked files do not make a checkout dirty\n")
    assert provenance.commit_info(repo, environ=NO_ACTIONS)["dirty"] is False
    (repo / "model.py").write_text("x = 2\n")
    info = provenance.commit_info(repo / ".", environ=NO_ACTIONS)
    assert info["dirty"] is True and provenance.commit_text(info).endswith("(main, dirty)")


@needs_git
def test_a_detached_checkout_in_actions_names_the_pull_requests_branch(repo):
    git(repo, "checkout", "-q", "--detach")
    assert provenance.commit_info(repo, environ=NO_ACTIONS)["branch"] is None
    actions = {"GITHUB_ACTIONS": "true", "GITHUB_REF_NAME": "17/merge", "GITHUB_HEAD_REF": "faster-nms"}
    assert provenance.commit_info(repo, environ=actions)["branch"] == "faster-nms"
    push = {"GITHUB_ACTIONS": "true", "GITHUB_REF_NAME": "main", "GITHUB_HEAD_REF": ""}
    assert provenance.commit_info(repo, environ=push)["branch"] == "main"


def test_no_repository_or_no_git_is_no_commit(tmp_path, monkeypatch):
    assert provenance.commit_info(tmp_path, environ=NO_ACTIONS) == provenance.no_commit()
    assert provenance.commit_text(provenance.no_commit()) == "no commit"
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))  # git missing
    actions = {"GITHUB_ACTIONS": "true", "GITHUB_SHA": "0123456789abcdef" * 2 + "01234567",
               "GITHUB_REF_NAME": "main", "GITHUB_REPOSITORY": "team/vision"}
    info = provenance.commit_info(tmp_path, environ=actions)
    assert info["id"] == actions["GITHUB_SHA"] and info["source"] == "github"
    assert info["branch"] == "main" and info["dirty"] is None and info["project"] == "vision"
    assert provenance.commit_text(info) == "commit 0123456 (main)"


@needs_git
def test_a_hung_git_is_given_up_on(repo, tmp_path, monkeypatch):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text("#!/bin/sh\nsleep 30\n")
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:/usr/bin:/bin")
    assert provenance.commit_info(repo, environ=NO_ACTIONS, timeout=0.2) == provenance.no_commit()


@pytest.mark.parametrize("content, expected", [
    (b"1424321012345\x00", "1424321012345"),
    (b"TX2-0325018064732\n", "TX2-0325018064732"),
    (b"\x00", None),
    (b"not; a serial $(reboot)\x00", None),
])
def test_the_board_serial_is_read_from_the_device_tree(tmp_path, content, expected):
    node = tmp_path / "proc" / "device-tree"
    node.mkdir(parents=True)
    (node / "serial-number").write_bytes(content)
    notes = Notes()
    assert read_serial(tmp_path, notes) == expected
    assert bool(notes) == (expected is None and content.strip(b"\x00\n") != b"")
    assert read_serial(tmp_path / "absent") is None


def test_the_machine_enters_the_fingerprint_of_real_runs_and_is_never_compared(tmp_path, monkeypatch):
    node = tmp_path / "proc" / "device-tree"
    node.mkdir(parents=True)
    (node / "serial-number").write_bytes(b"1424321012345\x00")
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path))
    machine = provenance.machine_info()
    assert machine["serial"] == "1424321012345" and machine["hostname"]
    real = Context.create(Settings(), simulated("orin-nano"), backend="onnxruntime")
    fp = real.fingerprint()
    assert fp["serial"] == "1424321012345" and fp["hostname"] == machine["hostname"]
    sim = Context.create(Settings(), simulated("orin-nano"))
    assert "serial" not in sim.fingerprint() and "hostname" not in sim.fingerprint()
    # a second board of the same model: the same environment, so its baseline is compared
    other = dict(fp, serial="1424321099999", hostname="orin-nano-2")
    keys = environment_keys(COMPARED_KEYS + real.compared_keys())
    assert env_differences(fp, other, keys) == []
    assert env_differences(fp, dict(fp, power_mode="7W"), keys) != []  # the check does compare


PERF_TEST = '''
    import pytest
    from pytest_jetson.run.measurement import Measurement

    @pytest.mark.perf(throughput=">= 1/s")
    def test_fast(perf):
        perf.record(Measurement(name="m", batch=1, latencies=[0.01] * 50, duration=0.5, items=50))
'''


@needs_git
def test_reports_say_the_commit_of_the_code_under_test(pytester, monkeypatch):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    pytester.makepyfile(test_suite=PERF_TEST)
    git(pytester.path, "init", "-q", "-b", "feature")
    git(pytester.path, "add", "test_suite.py")
    git(pytester.path, "commit", "-q", "-m", "suite")
    result = pytester.runpytest("-p", "no:cacheprovider", "--jetson-report-json", "r.json",
                                "--jetson-report-md", "r.md")
    result.assert_outcomes(passed=1)
    doc = json.loads((pytester.path / "r.json").read_text())
    head = git(pytester.path, "rev-parse", "HEAD")
    assert doc["commit"]["id"] == head and doc["commit"]["branch"] == "feature"
    assert doc["commit"]["dirty"] is False and doc["machine"]["hostname"]
    assert f"\ncommit {head[:7]} (feature)\n" in (pytester.path / "r.md").read_text()


def test_reports_without_a_repository_say_no_commit(pytester, monkeypatch):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(pytester.path.parent))
    pytester.makepyfile(test_suite=PERF_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "--jetson-report-json", "r.json",
                                "--jetson-report-md", "r.md")
    result.assert_outcomes(passed=1)
    doc = json.loads((pytester.path / "r.json").read_text())
    assert doc["commit"] == provenance.no_commit()
    assert "\nno commit\n" in (pytester.path / "r.md").read_text()
