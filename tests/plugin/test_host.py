"""The host backend as a user meets it: ONNX Runtime on the CPU of a laptop or a CI runner,
named as such, sampled by the host source, with baselines of its own beside the simulated ones."""

import json

import pytest

from pytest_jetson.devices.host_cpu import Host, cpu_model, slug

pytest.importorskip("onnxruntime")

SUITE = '''
import pytest

@pytest.mark.perf(throughput="90%", latency_p50="<= 10 s")
def test_squeezenet(trt_engine, perf):
    m = perf.measure(trt_engine("squeezenet1_1", precision="fp32"), duration="0.3s", warmup="0.05s")
    print("SOURCE", m.telemetry.source if m.telemetry is not None else None, m.environment["device"])
'''


@pytest.fixture
def host(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def run(pytester, *args):
    return pytester.runpytest("-p", "no:cacheprovider", "-s", "-W", "ignore::pytest.PytestAssertRewriteWarning", *args)


def test_the_host_backend_names_the_cpu_and_samples_the_host(host):
    r = run(host, "--jetson-backend", "onnxruntime")
    r.assert_outcomes(passed=1)
    me = Host.detect()
    r.stdout.fnmatch_lines([
        f"jetson: ONNX Runtime * on the host CPU ({me.cpu}*), no Jetson board",
        f"jetson: baselines in baselines/{me.id}-onnxruntime/; jetson marks as on Jetson Orin Nano 8GB",
        f"*SOURCE host {me.id}",
    ])
    assert "simulated" not in r.stdout.str().split("perf gate")[0].split("jetson:")[1]


def test_host_and_simulated_baselines_live_apart_and_both_gate(host):
    run(host, "--jetson-update-baselines").assert_outcomes(passed=1)
    run(host, "--jetson-update-baselines", "--jetson-backend", "onnxruntime").assert_outcomes(passed=1)
    me = Host.detect()
    simulated = json.loads((host.path / "baselines/orin-nano-8gb/test_suite.py.json").read_text())
    real = json.loads((host.path / f"baselines/{me.id}-onnxruntime/test_suite.py.json").read_text())
    fp = real["entries"]["test_suite.py::test_squeezenet"]["fingerprint"]
    assert fp["device"] == me.id and fp["cpu"] == me.cpu and fp["simulated"] is False
    assert fp["backend"] == "onnxruntime" and fp["backend_version"]
    assert simulated["entries"]["test_suite.py::test_squeezenet"]["fingerprint"]["simulated"] is True
    for args in ([], ["--jetson-backend", "onnxruntime"]):
        r = run(host, "--jetson-report-json", "r.json", *args)
        r.assert_outcomes(passed=1)
        verdicts = json.loads((host.path / "r.json").read_text())["tests"][0]["verdicts"]
        relative = [v for v in verdicts if v["kind"] == "relative"]
        assert relative and all(v["reason"] not in ("no_baseline", "env_mismatch") for v in relative), args


def test_telemetry_can_be_turned_off_on_the_host(host):
    r = run(host, "--jetson-backend", "onnxruntime", "--jetson-telemetry", "none")
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines(["*SOURCE None host-*"])


CPUINFO_X86 = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 106
model name\t: Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz
stepping\t: 6
"""

CPUINFO_EPYC = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7763 64-Core Processor
"""


@pytest.mark.parametrize("text, model, ident", [
    (CPUINFO_X86, "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz", "intel-xeon-platinum-8370c"),
    (CPUINFO_EPYC, "AMD EPYC 7763 64-Core Processor", "amd-epyc-7763"),
])
def test_the_cpu_model_names_the_hosts_baselines(tmp_path, text, model, ident):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "cpuinfo").write_text(text)
    assert cpu_model(str(tmp_path)) == model
    assert slug(model) == ident
    assert Host.detect(str(tmp_path)).id == f"host-{ident}"


def test_without_cpuinfo_the_platform_names_the_cpu(tmp_path):
    assert cpu_model(str(tmp_path))  # never empty
    assert slug("Apple M2 Pro") == "apple-m2-pro"
