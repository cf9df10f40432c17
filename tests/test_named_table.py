"""A table of pluggable rows: a session extends the built-in one without changing it, and a bad
row is refused naming the plugin that added it."""

import pytest

from pytest_jetson.engines import BACKENDS, Backend
from pytest_jetson.errors import ConfigError
from pytest_jetson.telemetry import SOURCES, SourceSpec


def opener(*args, **kwargs):
    return None


def test_a_sessions_table_is_the_built_ins_then_the_plugins_rows():
    before = BACKENDS.names()
    session = BACKENDS.extended([Backend("tvm", open=opener, plugin="conftest.py")])
    assert session.names() == before + ["tvm"]
    assert session.get("tvm").plugin == "conftest.py"
    assert BACKENDS.names() == before and "tvm" not in BACKENDS


def test_two_plugins_under_one_name_are_refused_naming_both():
    rows = [SourceSpec("labpsu", open=opener, plugin="plugins/a.py"),
            SourceSpec("labpsu", open=opener, plugin="plugins/b.py")]
    with pytest.raises(ConfigError, match=r"plugins/b.py registered the telemetry source 'labpsu', "
                                          r"but plugins/a.py already registers one"):
        SOURCES.extended(rows)
    assert "labpsu" not in SOURCES


@pytest.mark.parametrize("row, words", [
    (Backend("", open=opener, plugin="conftest.py"), "conftest.py registered .* without a name"),
    (Backend("x", open=None, plugin="conftest.py"), "conftest.py registered the engine backend 'x' without an opener"),
    (Backend("none", open=opener, plugin="conftest.py"), "conftest.py registered the engine backend 'none'"),
])
def test_a_row_without_what_the_table_needs_is_refused(row, words):
    with pytest.raises(ConfigError, match=words):
        BACKENDS.extended([row])
