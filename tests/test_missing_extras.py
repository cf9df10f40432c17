"""A missing optional dependency fails clearly, naming the extra (or JetPack package) to install."""

import sys

import pytest

from pytest_jetson.cli import main as cli_main

BLOCK = """
import sys
for name in {names!r}:
    sys.modules[name] = None  # `import name` now raises ImportError, as when it is not installed
"""

SUITE = """
def test_engine(trt_engine, perf):
    perf.measure(trt_engine("squeezenet1_1", precision="fp16", batch=1), iterations=5, warmup=0)
"""


def run_without(pytester, names, *args):
    pytester.makeconftest(BLOCK.format(names=list(names)))
    pytester.makepyfile(test_suite=SUITE)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def test_onnxruntime_backend_without_onnxruntime(pytester):
    result = run_without(pytester, ["onnxruntime"], "--jetson-backend", "onnxruntime")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # at start-up, not once per test
    assert ("--jetson-backend onnxruntime: the onnxruntime backend needs onnxruntime: pip install "
            "'pytest-jetson[onnxruntime]'") in result.stderr.str()


def test_tensorrt_backend_without_tensorrt_says_how_to_install_on_jetpack(pytester):
    result = run_without(pytester, ["tensorrt", "pycuda"], "--jetson-backend", "tensorrt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the tensorrt backend needs TensorRT's Python bindings*sudo apt install python3-libnvinfer*"])


def test_plots_option_without_matplotlib(pytester, tmp_path):
    result = run_without(pytester, ["matplotlib"], "--jetson-plots", str(tmp_path / "plots"))
    assert "pip install 'pytest-jetson[plots]'" in result.stdout.str() + result.stderr.str()


def test_plot_command_without_matplotlib(monkeypatch, tmp_path, capsys):
    import json

    from pytest_jetson.run.measurement import Measurement

    m = Measurement(name="m", batch=1, latencies=[0.01] * 4, duration=0.04, items=4)
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"tests": [{"measurements": [m.to_dict()]}]}))
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    assert cli_main(["plot", str(report), "--out", str(tmp_path / "p")]) == 2
    assert "plots need matplotlib: pip install 'pytest-jetson[plots]'" in capsys.readouterr().err


@pytest.mark.parametrize("source, extra", [("jtop", "jtop"), ("nvml", "nvml")])
def test_named_telemetry_source_without_its_package(pytester, source, extra):
    pytester.makeconftest(BLOCK.format(names=["jtop", "pynvml"]))
    pytester.makepyfile(test_t="""
        def test_t(telemetry):
            with telemetry.sample():
                pass
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--jetson-telemetry", source,
                                           "--jetson-backend", "onnxruntime")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"telemetry source {source} is not available here" in result.stderr.str()
    assert f"pip install 'pytest-jetson[{extra}]'" in result.stderr.str()
