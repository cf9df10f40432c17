"""The ``process_pool`` fixture as users meet it: in a pytest run, with perf.record, with xdist."""

import pytest


@pytest.fixture(scope="module", autouse=True)
def _import_before_pytester():
    """In-process pytester runs drop the modules first imported inside them; onnx's C extension
    cannot be imported a second time in one process (nanobind types register once), so every
    later test touching onnx would break. Import what the inner runs use out here first."""
    import onnx  # noqa: F401
    import onnx.checker  # noqa: F401
    import onnx.shape_inference  # noqa: F401
    import onnx.version_converter  # noqa: F401

    from pytest_jetson.run.pool import run_pool

    run_pool([("resnet50", {"precision": "int8"}), ("yolov8n", {})], duration="0.1s", warmup="0s")


def test_fixture_on_the_simulated_device(pytester):
    pytester.makepyfile(
        """
        from pytest_jetson.run.measurement import PoolMeasurement

        def test_four_tenants(process_pool, perf):
            m = process_pool("resnet50", precision="int8", batch=1, duration="5s")
            assert isinstance(m, PoolMeasurement)
            assert m.processes == 4                      # a single model defaults to 4 processes
            assert m.backend == "simulated" and m.clock == "virtual"
            assert perf.measurements == []               # the fixture does not record by itself
            perf.record(m)
            assert perf.last is m

        def test_mixed(process_pool):
            m = process_pool([("resnet50", {"precision": "int8"}), ("yolov8n", {"processes": 2})],
                             duration="2s")
            assert [w.model for w in m.workers] == ["resnet50", "yolov8n", "yolov8n"]

        def test_two(process_pool):
            assert process_pool("resnet50", processes=2).processes == 2
        """
    )
    result = pytester.runpytest("--jetson-device", "orin-nano", "-q")
    result.assert_outcomes(passed=3)


def test_perf_bounds_on_a_recorded_pool(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.perf(per_process_throughput=">= 10/s", throughput=">= 40/s")
        def test_ok(process_pool, perf):
            perf.record(process_pool("resnet50", precision="int8", processes=4, duration="2s"))

        @pytest.mark.perf(per_process_throughput=">= 100000/s")
        def test_too_slow(process_pool, perf):
            perf.record(process_pool("resnet50", precision="int8", processes=4, duration="2s"))
        """
    )
    result = pytester.runpytest("--jetson-device", "orin-nano", "-q")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*per_process_throughput*violates the bound*>= 100000/s*"])


def test_duration_option_overrides_the_pools_window(pytester):
    pytester.makepyfile(
        """
        def test_short(process_pool):
            m = process_pool("resnet50", processes=2, duration="30s", warmup="0.1s")
            assert abs(m.workers[0].duration - 0.5) < 0.01
        """
    )
    result = pytester.runpytest("--jetson-device", "orin-nano", "--jetson-duration", "0.5s", "-q")
    result.assert_outcomes(passed=1)


def test_bad_input_fails_the_test_with_the_message(pytester):
    pytester.makepyfile(
        """
        def test_zero(process_pool):
            process_pool("resnet50", processes=0)

        def test_oom(process_pool):
            process_pool("resnet50", processes=64, precision="fp32", batch=16)
        """
    )
    result = pytester.runpytest("--jetson-device", "orin-nano", "-q")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*ConfigError: processes=0: a pool needs at least 1 process*",
                                 "*SimulationError: process_pool of 64 process(es): out of memory*"])


@pytest.mark.slow
def test_real_pools_under_xdist(pytester):
    """Two xdist workers each run a real onnxruntime pool (spawned grandchildren) at once."""
    pytest.importorskip("xdist")
    pytest.importorskip("onnxruntime")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("n", [1, 2])
        def test_pool(process_pool, perf, n):
            m = process_pool("squeezenet1_1", processes=n, resolution=64, precision="fp32",
                             duration="0.5s", warmup="0.1s")
            perf.record(m)
            assert m.processes == n and m.backend == "onnxruntime"
            assert all(w.iterations > 0 for w in m.workers)
        """
    )
    result = pytester.runpytest_subprocess(
        "-n", "2", "--jetson-device", "orin-nano", "--jetson-backend", "onnxruntime", "-q",
        "-p", "no:cacheprovider", timeout=240,
    )
    result.assert_outcomes(passed=2)
