"""GPU activity bounds: checked on the simulated board, "not measurable here" elsewhere, with why."""

import pytest

from pytest_jetson.gate.bounds import parse
from pytest_jetson.gate.checks import check_absolute
from pytest_jetson.gate.scope import unmeasurable
from pytest_jetson.metrics import METRICS, defaults
from pytest_jetson.run.measurement import Measurement

ACTIVITY = ("sm_active", "tensor_active", "issue_active", "dram_util")


def measurement(backend, device="orin-nano-8gb", **extra):
    return Measurement("m", 1, [0.01] * 10, 1.0, 10, backend=backend,
                       environment={"backend": backend, "device": device, "simulated": backend == "simulated"},
                       extra=extra)


@pytest.mark.parametrize("name", ACTIVITY)
def test_the_activity_metrics_are_percent_rows_in_no_default_list(name):
    row = METRICS[name]
    assert row.dimension == "percent" and row.summary == f"{name}_mean" and row.series == name
    assert all(name not in defaults(kind) for kind in ("compare", "history", "show", "measured"))


def test_dram_utilisation_is_worse_higher_and_the_unit_activities_worse_lower():
    assert [METRICS[n].worse for n in ACTIVITY] == ["lower", "lower", "lower", "higher"]


def test_a_board_run_says_not_measurable_here_and_why():
    why = unmeasurable("tensor_active", measurement("tensorrt"))
    assert why.startswith("tensor_active not measurable here:") and "Nsight Systems" in why
    found = unmeasurable("sm_active", measurement("tensorrt", gpu_metrics="nsys is not on PATH"))
    assert found == "sm_active not measurable here: nsys is not on PATH"


def test_a_host_run_says_not_measurable_here():
    why = unmeasurable("issue_active", measurement("onnxruntime", device="host-x86_64"))
    assert "not measurable here" in why


def test_on_the_simulated_board_a_missing_figure_is_a_fault_not_a_skip():
    assert unmeasurable("sm_active", measurement("simulated")) is None
    bound = parse("sm_active", ">= 50 %")
    v = check_absolute(bound, measurement("simulated"))
    assert v.reason == "cannot_check"


def test_a_board_bound_is_skipped_with_the_reason():
    v = check_absolute(parse("tensor_active", ">= 10 %"), measurement("tensorrt"))
    assert v.reason == "not_measured" and v.outcome == "skip"
    assert "not measurable here" in v.detail
