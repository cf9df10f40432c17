"""`pytest-jetson ab BASE [HEAD]`: the base revision checked out in a worktree, measured
interleaved with the head on the (simulated) board and compared with the gate's statistics; a
base that does not exist or does not run is an error, never a comparison against nothing."""

import shutil
import subprocess

import pytest

from pytest_jetson.cli import main as cli_main

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

SUITE = '''
import numpy as np
import pytest

from detector import SLOWER
from pytest_jetson.run.measurement import Measurement


@pytest.mark.perf(throughput="5%")
def test_detector(perf, request):
    rng = np.random.default_rng(int(request.config.getoption("jetson_seed") or 0))
    lat = list(0.01 * SLOWER * rng.lognormal(0, 0.02, 400))
    perf.record(Measurement(name="m", batch=8, latencies=lat, duration=float(sum(lat)), items=3200))
'''


def git(repo, *args):
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "c",
           "GIT_COMMITTER_EMAIL": "c@example.com", "PATH": "/usr/bin:/bin", "HOME": str(repo)}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def project(tmp_path, monkeypatch):
    repo = tmp_path / "vision"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_perf.py").write_text(SUITE)
    (repo / "detector.py").write_text("SLOWER = 1.0\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    monkeypatch.chdir(repo)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    return repo


def test_a_slower_head_is_a_regression_against_the_base_measured_beside_it(project, capsys):
    (project / "detector.py").write_text("SLOWER = 1.10\n")  # the working tree: 10% slower
    assert cli_main(["ab", "main", "--rounds", "2", "--", "tests"]) == 1
    out = capsys.readouterr().out
    assert "round 1/2: base (" in out and "round 2/2: head (working tree)" in out
    line = next(x for x in out.splitlines() if "tests/test_perf.py::test_detector throughput" in x)
    assert "worse" in line and "FAIL" in line.upper()
    assert sorted(p.name for p in (project / "perf-ab").iterdir()) == ["base-1.json", "base-2.json",
                                                                       "head-1.json", "head-2.json"]
    assert git(project, "worktree", "list").count("\n") == 0  # the base's worktree is gone


def test_an_unchanged_head_passes(project, capsys):
    git(project, "commit", "-q", "--allow-empty", "-m", "docs only")
    assert cli_main(["ab", "HEAD~1", "HEAD", "--rounds", "2", "--", "tests"]) == 0
    assert "no regression in" in capsys.readouterr().out


def test_a_base_that_does_not_exist_or_does_not_run_is_an_error(project, capsys):
    assert cli_main(["ab", "no-such-branch", "--", "tests"]) == 2
    err = capsys.readouterr().err
    assert "the base revision 'no-such-branch' does not exist" in err and "Traceback" not in err
    (project / "detector.py").write_text("SLOWER = (\n")  # a base that no longer imports
    git(project, "commit", "-qam", "broken")
    (project / "detector.py").write_text("SLOWER = 1.0\n")
    assert cli_main(["ab", "HEAD", "--rounds", "1", "--", "tests"]) == 2
    err = capsys.readouterr().err
    assert "the base (" in err and "suite did not run" in err
    assert cli_main(["ab", "HEAD", "--build", "false", "--", "tests"]) == 2
    assert "does not build: false exited 1" in capsys.readouterr().err
