# The tests mirror the package (tests/gate/ for pytest_jetson/gate/, ...) and share the helpers
# at this level (fakes/, boards.py, board_trees.py, orphans.py, layering.py, jtop_service.py):
# pytest puts this conftest's directory on sys.path, so ``from fakes import ...`` works from any
# of them, and in the spawned processes that inherit sys.path.

import pytest


@pytest.fixture
def project_of(pytester, monkeypatch, tmp_path):
    """``project_of(source)``: a pytester project holding one test module (``test_suite.py``) and a
    ``pyproject.toml``, on a machine with no board files and no GitHub step summary."""
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    pytester.makefile(".toml", pyproject="[project]\nname = 'x'\n")

    def make(source):
        pytester.makepyfile(test_suite=source)
        return pytester

    return make
