"""The engines' pytest face: the trt_engine fixture, perf.measure, and pytest-benchmark on the
virtual clock with Jetson machine_info."""

import json

# pytester's in-process runs drop modules first imported inside them: onnx's and onnxruntime's
# native extensions abort when imported a second time, and classes cached from a dropped module
# (sim.OutOfMemory) stop matching, so what the inner runs use is imported here, once.
import onnx  # noqa: F401
import onnxruntime  # noqa: F401
import pytest
from fakes.onnx_models import tiny_onnx

import pytest_jetson.engines.simulated  # noqa: F401
import pytest_jetson.sim.noise  # noqa: F401
from pytest_jetson import sim

sim.predict  # noqa: B018  (resolves the simulator's lazily imported modules now)


@pytest.fixture
def host(pytester, monkeypatch, tmp_path):
    """A plain host (no board files), a private model cache, and a tiny real ONNX file."""
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    monkeypatch.setenv("PYTEST_JETSON_CACHE", str(tmp_path / "cache"))
    # the inner session is no xdist worker, even when this one is (pytest-benchmark reads the
    # variable and turns itself off)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    tiny_onnx(pytester.path / "tiny.onnx", features=16)
    return pytester


def test_trt_engine_is_cached_per_session_and_measured_by_perf(host):
    host.makepyfile(
        """
        ENGINES = []

        def test_first(trt_engine, perf):
            engine = trt_engine("tiny.onnx", precision="fp32", batch=2)
            ENGINES.append(engine)
            m = perf.measure(engine, iterations=20, warmup=0)
            assert perf.measurements == [m]
            print("M", m.backend, m.iterations, m.items, m.environment["backend"],
                  m.environment["device"], m.environment["batch"])

        def test_same_args_same_engine(trt_engine):
            assert trt_engine("tiny.onnx", precision="fp32", batch=2) is ENGINES[0]
            assert trt_engine("tiny.onnx", precision="fp32", batch=4) is not ENGINES[0]
        """
    )
    result = host.runpytest("-s", "--jetson-backend", "onnxruntime", "--jetson-telemetry", "none")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*M onnxruntime 20 40 onnxruntime host-* 2"])  # the host runs it


def test_jetson_duration_overrides_the_tests_duration(host):
    host.makepyfile(
        """
        import pytest

        def test_short(trt_engine, perf):
            m = perf.measure(trt_engine("mobilenet_v2"), duration="30s", warmup=0)
            assert m.duration == pytest.approx(2.0, abs=0.01)  # virtual seconds
            m = perf.measure(trt_engine("mobilenet_v2"), iterations=10, warmup=0)
            assert m.duration == pytest.approx(2.0, abs=0.01) and m.iterations > 10
        """
    )
    result = host.runpytest("--jetson-duration", "2s", "--jetson-telemetry", "none")
    result.assert_outcomes(passed=1)


def test_a_missing_model_fails_the_test_with_the_fix(host):
    host.makepyfile(
        """
        def test_missing(trt_engine):
            trt_engine("models/nope.onnx")
        """
    )
    result = host.runpytest("--jetson-backend", "onnxruntime")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ModelError*nope.onnx*does not exist*"])


BENCH = """
from pytest_jetson.clock import SimClock


class FiveMs:
    '''An engine on a virtual clock: every infer takes exactly 5 ms of simulated time.'''

    backend, name, model, precision, batch = "simulated", "five-ms-b1", "five", "fp16", 1

    def __init__(self):
        self.clock = SimClock()

    def infer(self, batch=None):
        self.clock.advance(0.005)


def test_engine_infer(benchmark):
    benchmark(FiveMs().infer, 1)


def test_plain_function(benchmark):
    benchmark(sum, range(10))
"""


def test_pytest_benchmark_times_simulated_engines_on_the_virtual_clock(host):
    host.makepyfile(BENCH)
    result = host.runpytest("--benchmark-json", "bench.json", "--benchmark-max-time", "0.02")
    result.assert_outcomes(passed=2)
    data = json.loads((host.path / "bench.json").read_text())
    jetson = data["machine_info"]["jetson"]
    assert jetson["device"] == "orin-nano-8gb" and jetson["simulated"] is True
    assert jetson["backend"] == "simulated" and jetson["seed"] == 0
    by_name = {b["name"]: b for b in data["benchmarks"]}
    engine = by_name["test_engine_infer"]
    # exactly the simulated latency, whatever the host's real speed; max-time is virtual too
    assert engine["stats"]["mean"] == pytest.approx(0.005)
    assert engine["stats"]["rounds"] == 5
    assert engine["stats"]["stddev"] == pytest.approx(0.0, abs=1e-12)
    assert engine["extra_info"]["jetson"]["clock"] == "virtual"
    assert engine["options"]["timer"] == "pytest_jetson.virtual_clock"
    plain = by_name["test_plain_function"]
    assert plain["options"]["timer"] != "pytest_jetson.virtual_clock"
    assert plain["stats"]["mean"] < 0.005


def test_benchmark_disabled_plugin_is_harmless(host):
    host.makepyfile(
        """
        def test_nothing():
            pass
        """
    )
    host.runpytest("-p", "no:benchmark").assert_outcomes(passed=1)


def test_on_a_host_the_engine_is_simulated_on_the_sessions_clock(host):
    host.makepyfile(
        """
        import pytest

        def test_measure(trt_engine, perf, benchmark, pytestconfig):
            from pytest_jetson.plugin import jetson_context

            ctx = jetson_context(pytestconfig)
            engine = trt_engine("resnet50", precision="int8", batch=8)
            assert engine.backend == "simulated" and engine.clock is ctx.clock
            m = perf.measure(engine, duration="10s")
            assert m.clock == "virtual" and m.duration == pytest.approx(10, abs=0.1)
            assert m.throughput == pytest.approx(engine.prediction.throughput, rel=0.05)
            assert m.telemetry.source == "simulated" and m.power > 0
            assert m.environment["precision"] == "int8" and m.environment["simulated"] is True
            benchmark(engine.infer, 8)
            # the median: one of the simulated board's rare 1.5-4x outliers among ~50 rounds moves
            # the mean by several percent
            assert benchmark.stats.stats.median == pytest.approx(engine.prediction.latency, rel=0.05)
        """
    )
    host.runpytest("--benchmark-max-time", "0.5").assert_outcomes(passed=1)


def test_seed_option_reaches_simulated_engines(host):
    host.makepyfile(
        """
        def test_seed(trt_engine, perf):
            m = perf.measure(trt_engine("mobilenet_v2"), iterations=5, warmup=0)
            print("LAT", m.latencies)
        """
    )
    runs = [host.runpytest("-s", "--jetson-seed", seed, "--jetson-telemetry", "none") for seed in ("1", "1", "2")]
    lines = [[ln.split("LAT", 1)[1] for ln in r.outlines if "LAT [" in ln] for r in runs]
    assert lines[0]
    assert lines[0] == lines[1] != lines[2]


def test_a_plugin_backend_whose_row_says_device_time_gets_its_device_times_measured(host):
    """The harness learns that an engine reports the device's own time from the backend's row,
    the session's table included, not from the built-in table alone."""
    host.makeconftest(
        """
        from pytest_jetson.clock import SimClock
        from pytest_jetson.engines import Backend
        from pytest_jetson.engines.base import Engine


        class Timed(Engine):
            backend = "timed"

            def __init__(self, clock):
                super().__init__()
                self.name = self.model = "timed"
                self.precision, self.clock = "fp16", clock

            def _infer(self, batch):
                self.clock.advance(0.004)
                self.last_device_time = 0.003


        def pytest_jetson_backends(config):
            return [Backend("timed", open=lambda model, clock=None, **kw: Timed(clock or SimClock()),
                            clock="virtual", device_time=True, pools="none")]
        """
    )
    host.makepyfile(
        """
        def test_timed(trt_engine, perf):
            m = perf.measure(trt_engine("anything"), iterations=50, warmup=0)
            print("GPU", m.latency_gpu)
        """
    )
    result = host.runpytest("-s", "--jetson-backend", "timed", "--jetson-telemetry", "none")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*GPU 0.003*"])
