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


def test_help_texts_have_no_markup(capsys):
    import pytest

    for name in ["", *COMMANDS]:
        with pytest.raises(SystemExit):
            main([name, "--help"] if name else ["--help"]) or sys.exit(0)
        out = capsys.readouterr().out
        assert out and "`" not in out and "**" not in out and "%%" not in out, name


def test_pytest_help_has_no_markup():
    out = subprocess.run([sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
                         capture_output=True, text=True).stdout
    section = out.split("performance regression testing on NVIDIA Jetson")[1].split("\n\n")[0]
    assert "--jetson-device" in section and "--jetson-table" in section
    assert "`" not in section


def test_models_accepts_zoo_names_and_onnx_paths_alike(tmp_path, capsys):
    import shutil

    from pytest_jetson.models import zoo

    path = tmp_path / "models" / "tinynet.onnx"
    path.parent.mkdir()
    shutil.copy(zoo.path("squeezenet1_1"), path)
    assert main(["models", str(path), "squeezenet1_1"]) == 0
    rows = capsys.readouterr().out.splitlines()[2:]
    assert rows[0].split()[:2] == [str(path), "(onnx"] and rows[1].startswith("squeezenet1_1")
    assert rows[0].split()[3:5] == rows[1].split()[2:4]  # same graph, same parameters and MACs
    assert main(["models", str(tmp_path / "missing.onnx")]) == 2
    assert "missing.onnx: no such ONNX file" in capsys.readouterr().err
    assert main(["models", "resnet"]) == 2
    assert "Did you mean 'resnet50' or 'resnet34' or 'resnet18'?" in capsys.readouterr().err


def test_a_closed_pipe_is_not_an_error():
    code = ("import sys; from pytest_jetson.cli import main; sys.stdout = open(sys.stdout.fileno(), 'w', 1); "
            "sys.exit(main(['devices']))")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    assert proc.wait(timeout=60) == 0
    assert "Traceback" not in proc.stderr.read().decode()
