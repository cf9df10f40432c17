"""Preflight's memory check reads /proc/meminfo strictly: garbage there fails the check with
what was read and the fix, never a silent skip; little memory available is a failure, not a
value too small to believe."""

import pytest
from board_trees import copy, write

from pytest_jetson import preflight_checks as pf
from pytest_jetson.devices.detect import detect


def memory_check(root):
    found = {c.name: c for c in pf.run_checks(detect(root), root, samples=1)}
    return found["free memory"]


@pytest.mark.parametrize("line, shown", [
    ("MemAvailable:   lots kB", "'lots'"),
    ("MemAvailable:   " + "9" * 400 + " kB", "999999999999999999999999... (400 characters)"),
    ("MemAvailable:   -5 kB", "'-5'"),
])
def test_garbage_fails_the_check_and_says_what_was_read(tmp_path, line, shown):
    root = copy("xavier-nx-jp51", tmp_path / "t")
    write(root, "proc/meminfo", "MemTotal:       7018056 kB\n" + line + "\n")
    check = memory_check(root)
    assert check.status == pf.FAIL
    assert f"/proc/meminfo: MemAvailable {shown} kB is not a number of kB" in check.message


def test_a_missing_line_fails_the_check(tmp_path):
    root = copy("xavier-nx-jp51", tmp_path / "t")
    write(root, "proc/meminfo", "MemTotal:       7018056 kB\n")
    check = memory_check(root)
    assert check.status == pf.FAIL and "/proc/meminfo has no MemAvailable line" in check.message


def test_little_memory_available_is_a_failure_not_ignored(tmp_path):
    root = copy("xavier-nx-jp51", tmp_path / "t")
    write(root, "proc/meminfo", "MemTotal:       7018056 kB\nMemAvailable:   100 kB\n")
    check = memory_check(root)
    assert check.status == pf.FAIL and check.message.startswith("100 KiB available")
