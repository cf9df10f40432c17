"""Every command in the README's ``sh`` blocks runs and succeeds, so the README stays true.

The first block (set-up in a fresh virtual environment) is what ``.ci/run`` executes verbatim;
here it is checked for shape. The other blocks' ``pytest`` and ``pytest-jetson`` commands run in a
scratch copy of the example suite and its baselines, in the order the README gives them.
"""

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def sh_blocks():
    return re.findall(r"^```sh\n(.*?)^```", README.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)


def commands():
    out = []
    for block in sh_blocks()[1:]:
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line:
                out.append(line)
    return out


def test_readme_starts_with_the_two_setup_commands():
    first = sh_blocks()[0].strip().splitlines()
    assert len(first) == 2
    main_job, tests = first
    assert main_job.endswith("pytest tests/perf --jetson-device orin-nano")
    assert tests.endswith("pytest tests")
    for line in first:
        assert line.startswith("python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && ")
    # .ci/run executes README lines 4 and 5 verbatim
    lines = README.read_text(encoding="utf-8").splitlines()
    assert lines[3:5] == first
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'bash -c "$(sed -n 4p README.md)"' in ci and 'bash -c "$(sed -n 5p README.md)"' in ci


def test_every_readme_command_runs(tmp_path):
    shutil.copytree(ROOT / "tests" / "perf", tmp_path / "tests" / "perf")
    # a project's unit tests beside its perf tests, for the README's `-m "not perf"`
    shutil.copy(ROOT / "tests" / "test_units.py", tmp_path / "tests" / "test_units.py")
    if (ROOT / "baselines").is_dir():
        shutil.copytree(ROOT / "baselines", tmp_path / "baselines")
    bindir = Path(sys.executable).parent
    ran = []
    for line in commands():
        argv = shlex.split(line)
        if argv[0] == "pytest":
            argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *argv[1:]]
        elif argv[0] == "pytest-jetson":
            exe = bindir / "pytest-jetson"
            argv = [str(exe), *argv[1:]] if exe.exists() else [sys.executable, "-m", "pytest_jetson.cli", *argv[1:]]
        else:
            pytest.fail(f"README command not covered by this test: {line}")
        proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{line}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        ran.append(line)
        words = shlex.split(line)
        if "-m" in words and words[words.index("-m") + 1] == "not perf":
            assert "passed" in proc.stdout and "perf tests" not in proc.stdout, line
    assert any(c.startswith("pytest tests/perf") for c in ran)
    assert any(c.startswith("pytest-jetson plot") for c in ran)
    assert any(c.startswith("pytest-jetson history") for c in ran)
    assert any("-m \"not perf\"" in c for c in ran) and any("-m perf" in c for c in ran)
    assert sorted(p.name for p in (tmp_path / "perf-plots").iterdir())  # the quick start draws something
    assert (tmp_path / "perf-history" / "overview.png").is_file()
