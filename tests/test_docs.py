"""Every command in the ``sh`` blocks of the README and of the documentation site runs and
succeeds, so neither goes stale.

The README's first block (set-up in a fresh virtual environment) is what ``.ci/run`` executes
verbatim; here it is checked for shape. The other blocks' ``pytest`` and ``pytest-jetson``
commands run in a scratch copy of the example suite and its baselines, in the order a reader
meets them: the README, then the site's pages in the order of ``mkdocs.yml``'s navigation.
Blocks meant to be read, not run, are ``text`` blocks.
"""

import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def sh_blocks(path=README):
    return re.findall(r"^```sh\n(.*?)^```", path.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)


def site_pages():
    """The site's pages in the order of its navigation."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[1]
    return [DOCS / p for p in re.findall(r"^\s*-\s*(?:[^:\n]+:\s*)?(\S+\.md)\s*$", nav, re.MULTILINE)]


def commands():
    out = []
    blocks = sh_blocks()[1:] + [b for page in site_pages() for b in sh_blocks(page)]
    for block in blocks:
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


def test_every_page_of_the_site_is_in_its_navigation_and_every_readme_link_resolves():
    pages = site_pages()
    assert len(pages) == len(set(pages)) and all(p.is_file() for p in pages)
    assert sorted(pages) == sorted(DOCS.rglob("*.md"))  # a page outside the nav would not be run
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert any(link.startswith("docs/") for link in links)
    for link in links:
        if "://" not in link:
            assert (ROOT / link).is_file(), f"README links to {link}, which does not exist"


def _reference():
    spec = importlib.util.spec_from_file_location("docs_reference", DOCS / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reference_pages_list_every_metric_option_hook_and_subcommand():
    from pytest_jetson.cli import COMMANDS
    from pytest_jetson.metrics import METRICS

    ref = _reference()
    metrics, options, hooks, cli = ref.metrics(), ref.options(), ref.hooks(), ref.cli()
    for name, m in METRICS.items():
        row = next(line for line in metrics.splitlines() if line.startswith(f"| `{name}` |"))
        assert f"| {m.worse} |" in row and m.description in row
    for flag in ("--jetson-device", "--jetson-update-baselines", "--jetson-table", "--jetson-budget"):
        assert f"`{flag}" in options
    assert "| `--jetson-missing-baseline skip|fail` |" in options  # a code span shows no backslash
    assert "`jetson_baselines` | `baselines` |" in options
    for hook in ("pytest_jetson_backends", "pytest_jetson_telemetry_sources", "pytest_jetson_fingerprint"):
        assert f"### `{hook}(config" in hooks
    for name in COMMANDS:
        assert f"usage: pytest-jetson {name}" in cli
    assert '"kind": "pytest-jetson-report"' in ref.json_report()
    # a page asking for a table that does not exist fails the build, not silently
    page = type("Page", (), {"file": type("File", (), {"src_path": "x.md"})()})()
    with pytest.raises(KeyError, match="no reference table called 'metric'"):
        ref.on_page_markdown("<!-- reference: metric -->", page, None, None)
    assert "| `throughput` |" in ref.on_page_markdown("a\n<!-- reference: metrics -->\nb", page, None, None)


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
    assert any(c.startswith("pytest-jetson sweep") for c in ran)  # from the site's pages
