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


# -- only where a regular file is or can be ----------------------------------------------------------
from pytest_jetson import fileio  # noqa: E402
from pytest_jetson.errors import JetsonError  # noqa: E402


def test_a_fifo_is_refused_not_blocked_on(tmp_path):
    fifo = tmp_path / "report.md"
    os.mkfifo(str(fifo))
    with pytest.raises(fileio.UnsafeTarget, match=r"report\.md is a named pipe \(FIFO\), not a regular file"):
        write_atomic(fifo, "x")
    with pytest.raises(fileio.UnsafeTarget, match="named pipe"):
        fileio.append(fifo, "x")  # opened without blocking, then refused
    assert stat.S_ISFIFO(os.lstat(str(fifo)).st_mode)


def test_a_device_is_refused_before_anything_is_written():
    with pytest.raises(fileio.UnsafeTarget, match="/dev/null is a character device, not a regular file"):
        fileio.check_target("/dev/null")
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_a_directory_is_refused_with_a_file_path_to_give_instead(tmp_path):
    with pytest.raises(fileio.UnsafeTarget, match=r"is a directory, not a file; give a file path such as"):
        write_atomic(tmp_path, "x")


def test_the_refusal_is_an_oserror_and_a_jetson_error(tmp_path):
    with pytest.raises(OSError) as info:
        write_atomic(tmp_path, "x")
    assert isinstance(info.value, JetsonError) and str(info.value).startswith(str(tmp_path))


def test_a_link_inside_the_project_is_followed_and_stays_a_link(tmp_path):
    (tmp_path / "runs").mkdir()
    target = tmp_path / "runs" / "run-42.json"
    target.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    write_atomic(link, "new", root=tmp_path)
    assert link.is_symlink() and target.read_text() == "new"


def test_a_link_out_of_the_project_is_refused_and_its_target_untouched(tmp_path):
    outside = tmp_path / "home"
    outside.mkdir()
    secret = outside / ".bashrc"
    secret.write_text("keep me")
    project = tmp_path / "project"
    project.mkdir()
    link = project / "report.json"
    link.symlink_to(secret)
    with pytest.raises(fileio.UnsafeTarget, match=r"is a symbolic link to .*\.bashrc, outside .*project; "
                                                  r"pytest-jetson follows links only inside the project"):
        write_atomic(link, "{}", root=project)
    assert secret.read_text() == "keep me" and link.is_symlink()


def test_a_link_to_a_device_is_refused_even_inside_the_root(tmp_path):
    link = tmp_path / "out.json"
    link.symlink_to("/dev/null")
    with pytest.raises(fileio.UnsafeTarget):
        write_atomic(link, "{}", root="/")


def test_a_linked_lock_file_is_refused_and_its_target_kept(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    lock = tmp_path / ".b.json.lock"
    lock.symlink_to(victim)
    with pytest.raises(fileio.UnsafeTarget, match=r"\.b\.json\.lock is a symbolic link; a lock file is never a link"):
        with fileio.lock(lock, timeout=1):
            pass
    assert victim.read_text() == "precious"


def test_a_directory_where_the_lock_file_belongs_is_named_not_the_file_it_guards(tmp_path):
    lock = tmp_path / ".b.json.lock"
    lock.mkdir()
    with pytest.raises(fileio.UnsafeTarget, match=r"\.b\.json\.lock is a directory, not a lock file; remove it"):
        with fileio.lock(lock, timeout=1):
            pass
    assert lock.is_dir()


def test_the_lock_excludes_a_second_holder_until_released(tmp_path):
    from filelock import Timeout

    path = tmp_path / ".x.lock"
    with fileio.lock(path, timeout=1):
        with pytest.raises(Timeout):
            with fileio.lock(path, timeout=0.1):
                pass
    with fileio.lock(path, timeout=0.1):
        pass


def test_a_baseline_file_behind_a_linked_lock_is_not_written_and_the_target_kept(tmp_path):
    np = pytest.importorskip("numpy")
    from pytest_jetson.errors import BaselineError
    from pytest_jetson.gate import baseline
    from pytest_jetson.run.measurement import Measurement

    lat = list(0.01 * np.ones(50))
    m = Measurement(name="m", batch=1, latencies=lat, duration=float(sum(lat)), items=50, precision="fp16")
    entry = baseline.make_entry(m, baseline.fingerprint(m, {"device": "orin-nano-8gb"}))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    path = tmp_path / "baselines" / "test_x.json"
    path.parent.mkdir()
    (path.parent / ".test_x.json.lock").symlink_to(victim)
    with pytest.raises(BaselineError, match="is a symbolic link; a lock file is never a link"):
        baseline.update_file(path, {"tests/test_x.py::test_a": entry})
    assert victim.read_text() == "precious" and not path.exists()
