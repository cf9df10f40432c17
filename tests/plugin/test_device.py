"""The plugin's device options as a user meets them: header, fixture, usage errors."""

import sys

import pytest
from boards import write_board

TEST_DEVICE = """
def test_device(jetson_device):
    print("DEVICE", jetson_device.profile.id, jetson_device.power_mode.name, jetson_device.simulated)
    print("FINGERPRINT", sorted(jetson_device.fingerprint().items()))
"""


@pytest.fixture
def host(pytester, monkeypatch, tmp_path):
    """A plain host: detection finds no board files."""
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    pytester.makepyfile(TEST_DEVICE)
    return pytester


def test_default_is_a_simulated_orin_nano_with_a_header_line(host):
    result = host.runpytest("-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "jetson: Jetson Orin Nano 8GB (simulated) · power mode 15W · JetPack - · TensorRT -",
        "*DEVICE orin-nano-8gb 15W True",
    ])


def test_named_device_and_power_mode_on_a_host_are_simulated(host):
    result = host.runpytest("-s", "--jetson-device", "orin-nano", "--jetson-power-mode", "7W")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*Orin Nano 8GB (simulated) · power mode 7W*", "*DEVICE orin-nano-8gb 7W True"])


def test_ini_selects_the_device(host):
    host.makeini("[pytest]\njetson_device = orin-nano\njetson_power_mode = 7W\n")
    result = host.runpytest("-s")
    result.stdout.fnmatch_lines(["*DEVICE orin-nano-8gb 7W True"])


def test_unknown_device_is_a_usage_error_with_a_suggestion(host):
    result = host.runpytest("--jetson-device", "orin-nnao")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: unknown Jetson device 'orin-nnao'. Did you mean 'orin-nano' (orin-nano-8gb)*? Known devices: "
        "*orin-nano-8gb*"
    ])
    assert "Traceback" not in result.stderr.str()


def test_unknown_power_mode_lists_the_modes(host):
    result = host.runpytest("--jetson-device", "orin-nano", "--jetson-power-mode", "MAXN")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: power mode 'MAXN' does not exist on Jetson Orin Nano 8GB; its modes are: 15W (id 0), 7W (id 1)*"
    ])


@pytest.mark.parametrize("args, message", [
    (["--jetson-seed", "abc"], "ERROR: --jetson-seed / ini jetson_seed: 'abc' is not an integer seed*"),
    (["--jetson-duration", "ten seconds"], "ERROR: --jetson-duration: cannot read 'ten seconds' as a duration*"),
    (["--jetson-telemetry-interval", "1ms"], "ERROR: --jetson-telemetry-interval: 0.001 s is outside 10ms..60s*"),
    (["--jetson-confidence", "3"], "ERROR: --jetson-confidence: 3.0 is not a confidence level*"),
])
def test_malformed_values_are_usage_errors(host, args, message):
    result = host.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_malformed_ini_value_is_a_usage_error(host):
    host.makeini("[pytest]\njetson_seed = twelve\n")
    result = host.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --jetson-seed / ini jetson_seed: 'twelve' is not an integer seed*"])


def test_on_a_real_board_auto_reports_it_real(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(write_board(tmp_path / "root", "orin-nano", clocks=True)))
    pytester.makepyfile(TEST_DEVICE)
    result = pytester.runpytest("-s")
    result.stdout.fnmatch_lines([
        "jetson: Jetson Orin Nano 8GB (real) · power mode 15W · jetson_clocks on · JetPack 6.0 · TensorRT 8.6.2",
        "*DEVICE orin-nano-8gb 15W False",
    ])


def test_another_board_needs_simulate(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(write_board(tmp_path / "root", "orin-nano")))
    pytester.makepyfile(TEST_DEVICE)
    result = pytester.runpytest("--jetson-device", "agx-orin")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --jetson-device agx-orin asks for Jetson AGX Orin*add --jetson-simulate*"])
    result = pytester.runpytest("-s", "--jetson-device", "agx-orin", "--jetson-simulate")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*AGX Orin* (simulated)*"])


HEAVY = ("tensorrt", "pycuda", "onnxruntime", "jtop", "pynvml", "matplotlib")


def test_importing_the_plugin_imports_no_heavy_dependency(pytester):
    pytester.makepyfile(f"""
        import sys
        def test_modules(jetson_device):
            import pytest_jetson, pytest_jetson.plugin
            loaded = sorted(m for m in {HEAVY!r} if m in sys.modules)
            assert loaded == [], loaded
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_import_pytest_jetson_alone_is_light():
    import subprocess

    code = ("import sys, pytest_jetson, pytest_jetson.plugin, pytest_jetson.cli; "
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_jetson_marker_skips_other_devices_and_modes(host):
    host.makepyfile(test_marks="""
        import pytest

        @pytest.mark.jetson("agx-orin")
        def test_agx():
            pass

        @pytest.mark.jetson("orin-nano")
        def test_nano():
            pass

        @pytest.mark.jetson(dla=True)
        def test_dla():
            pass

        @pytest.mark.jetson(power_mode="7W")
        def test_7w():
            pass
    """)
    result = host.runpytest("test_marks.py", "-rs", "--jetson-device", "orin-nano")
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines([
        "*jetson: runs on agx-orin-64gb; this session tests orin-nano-8gb",
        "*jetson: needs a DLA; Jetson Orin Nano 8GB has none",
        "*jetson: runs in power mode 7W; this session tests 15W (--jetson-power-mode)",
    ])


def test_a_test_for_another_board_is_skipped_for_the_board_not_its_mode(host):
    host.makepyfile(test_agx="""
        import pytest

        pytestmark = pytest.mark.jetson("agx-orin")

        @pytest.mark.jetson(power_mode="MAXN")
        def test_maxn():
            pass

        @pytest.mark.jetson(dla=True)
        def test_dla():
            pass
    """)
    result = host.runpytest("test_agx.py", "-rs", "--jetson-device", "orin-nano")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*test_agx.py:5: jetson: runs on agx-orin-64gb; this session tests orin-nano-8gb",
                                 "*test_agx.py:9: jetson: runs on agx-orin-64gb; this session tests orin-nano-8gb"])
    assert "runs in power mode" not in result.stdout.str() and "DLA" not in result.stdout.str()
    # on the right board, the mode is the mismatch
    result = host.runpytest("test_agx.py", "-rs", "--jetson-device", "agx-orin")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*jetson: runs in power mode MAXN; this session tests MODE_30W*"])


def test_jetson_marker_with_an_unknown_device_is_a_usage_error(host):
    host.makepyfile(test_marks="""
        import pytest

        @pytest.mark.jetson("orin-nanoo")
        def test_x():
            pass
    """)
    result = host.runpytest("test_marks.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: @pytest.mark.jetson: unknown Jetson device 'orin-nanoo'*"])
