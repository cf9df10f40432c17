"""The pytest-jetson command's dispatcher."""

import subprocess
import sys

from pytest_jetson.cli import COMMANDS, main


def test_usage_lists_every_command(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    for name in COMMANDS:
        assert name in out


def test_unknown_command_suggests_the_closest(capsys):
    assert main(["devics"]) == 2
    assert "unknown command 'devics'. Did you mean 'devices'?" in capsys.readouterr().err


def test_console_script_runs():
    out = subprocess.run([sys.executable, "-m", "pytest_jetson.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("pytest-jetson ")
