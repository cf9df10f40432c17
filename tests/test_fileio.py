"""Atomic writes keep sensible permissions and never leave a temporary file behind."""

import os
import stat

import pytest

from pytest_jetson.fileio import write_atomic


def test_new_file_follows_the_umask_not_mkstemps_0600(tmp_path):
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "a.json", "{}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644


def test_rewrite_keeps_the_files_mode(tmp_path):
    path = tmp_path / "b.bin"
    path.write_bytes(b"old")
    path.chmod(0o640)
    write_atomic(path, b"new")
    assert path.read_bytes() == b"new" and stat.S_IMODE(path.stat().st_mode) == 0o640


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "c.json"
    path.write_text("old")

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, "new")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]
