"""`pytest-jetson diff`: two baseline directories or git revisions, per test and metric."""

import shutil
import subprocess
import sys

import numpy as np
import pytest

from pytest_jetson.cli import main as cli_main
from pytest_jetson.gate import baseline
from pytest_jetson.run.measurement import Measurement

FP = {"device": "orin-nano-8gb", "power_mode": "15W", "simulated": True}


def measurement(scale=1.0, seed=0, n=800):
    rng = np.random.default_rng(seed)
    lat = list(0.01 * scale * rng.lognormal(0, 0.05, n))
    return Measurement(name="m", batch=8, latencies=lat, duration=float(sum(lat)), items=8 * n,
                       precision="int8", engine_memory=2 ** 27)


def record(root, scales, seed=0, mode="all"):
    store = baseline.BaselineStore(root, "orin-nano-8gb")
    for i, (name, scale) in enumerate(scales.items()):
        node = f"tests/perf/test_x.py::{name}"
        m = measurement(scale, seed=seed + i)
        store.stage(node, node, baseline.make_entry(m, baseline.fingerprint(m, FP)))
    assert not store.flush(mode=mode).errors


def run(capsys, *args):
    code = cli_main(["diff", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_two_directories_per_test_and_metric(tmp_path, capsys):
    record(tmp_path / "old", {"test_a": 1.0, "test_b": 1.0, "test_c": 1.0})
    record(tmp_path / "new", {"test_a": 1.0, "test_b": 1.25, "test_d": 1.0}, seed=10)
    code, out, _ = run(capsys, str(tmp_path / "old"), str(tmp_path / "new"))
    assert code == 0
    lines = out.splitlines()
    row = next(line for line in lines if "test_b" in line and "latency_mean" in line)
    assert "25." in row and "worse" in row and row.rstrip().endswith("yes")
    thr = next(line for line in lines if "test_b" in line and " throughput " in line)
    assert "% worse" in thr and thr.rstrip().endswith("yes")  # 1/1.25: throughput lost a fifth
    assert not any("test_a" in line and line.rstrip().endswith("yes") for line in lines)
    assert any(line.startswith("only in") and "test_c" in line for line in lines)
    assert any(line.startswith("only in") and "test_d" in line for line in lines)
    assert "within noise (--all lists them)" in lines[-1]
    assert max(len(line) for line in lines[1:-1] if not line.startswith("only in")) <= 100  # 100 columns
    code, _, _ = run(capsys, str(tmp_path / "old"), str(tmp_path / "new"), "--exit-code")
    assert code == 1


def test_noise_alone_is_never_significant(tmp_path, capsys):
    record(tmp_path / "old", {f"test_{i}": 1.0 for i in range(20)})
    record(tmp_path / "new", {f"test_{i}": 1.0 for i in range(20)}, seed=100, mode="force")
    code, out, _ = run(capsys, str(tmp_path / "old"), str(tmp_path / "new"), "--all", "--exit-code")
    assert code == 0 and "0 significant changes" in out
    assert " no\n" in out  # the --all rows say "no"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_revisions_read_with_git_show(tmp_path, capsys, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    record(repo / "baselines", {"test_a": 1.0, "test_b": 1.0})
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "one"], check=True)
    subprocess.run(git + ["branch", "-M", "main"], check=True)
    record(repo / "baselines", {"test_a": 1.0, "test_b": 0.8}, seed=50)  # test_b 20% faster
    monkeypatch.chdir(repo)
    code, out, _ = run(capsys)  # HEAD against the working tree
    assert code == 0
    assert "main" not in out.splitlines()[0] and "HEAD:baselines" in out.splitlines()[0]
    row = next(line for line in out.splitlines() if "test_b" in line and "latency_mean" in line)
    assert "better" in row and row.rstrip().endswith("yes")
    subprocess.run(git + ["commit", "-qam", "two"], check=True)
    code, out, _ = run(capsys, "main~0", "HEAD")
    assert "0 significant changes" in out  # the same commit
    code, out, _ = run(capsys, "HEAD~1", "HEAD")
    assert any("test_b" in line and line.rstrip().endswith("yes") for line in out.splitlines())
    code, out, err = run(capsys, "no-such-branch")
    assert code == 2 and "neither a baselines directory nor a git revision" in err


def test_an_unreadable_file_exits_two_naming_it(tmp_path, capsys):
    record(tmp_path / "old", {"test_a": 1.0})
    bad = tmp_path / "bad" / "orin-nano-8gb" / "tests"
    bad.mkdir(parents=True)
    (bad / "test_x.py.json").write_text("{not json")
    code, _, err = run(capsys, str(tmp_path / "old"), str(tmp_path / "bad"))
    assert code == 2 and "test_x.py.json" in err and "not valid JSON" in err


def test_the_command_is_listed(capsys):
    assert cli_main([]) == 0
    assert "diff" in capsys.readouterr().out
    out = subprocess.run([sys.executable, "-m", "pytest_jetson.cli", "diff", "--help"], capture_output=True,
                         text=True)
    assert out.returncode == 0 and "git revision" in out.stdout
