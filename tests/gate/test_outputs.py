"""Output checks as the gate judges them: each output against its reference, per tolerance, with
the numbers a user needs to see why (gate/outputs.py), and the verdicts they become."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pytest_jetson.gate.outputs import compare, compare_one, golden_path, topk_agreement, verdicts
from pytest_jetson.gate.verdict import OUTCOMES, REASONS, Verdict
from pytest_jetson.report import render
from pytest_jetson.run.outputs import (
    DEFAULT_TOLERANCES,
    OutputsError,
    OutputsRecord,
    Tolerance,
    read_golden,
    tolerance,
)

FINITE = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, width=32)
ARRAYS = hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6), elements=FINITE)
TIGHT = Tolerance(atol=1e-5, rtol=1e-5)


@given(ARRAYS)
def test_identical_outputs_pass_every_tolerance(a):
    tol = Tolerance(atol=0.0, rtol=0.0, cosine=1.0 - 1e-12, topk=(1, 1.0))
    c = compare_one("y", a, a.copy(), tol)
    assert c.passed and c.mismatched == 0 and c.max_abs == 0.0 and c.failed == []


@settings(max_examples=60)
@given(ARRAYS, st.data(), st.floats(1.01, 100.0), st.floats(1e-4, 1e-1), st.floats(1e-4, 1e-1))
def test_an_element_moved_past_atol_plus_rtol_times_the_reference_fails_naming_it(a, data, factor, atol, rtol):
    a = a.astype(np.float64)
    i = data.draw(st.integers(0, a.size - 1))
    moved = a.copy()
    bound = atol + rtol * abs(a.flat[i])
    moved.flat[i] += factor * bound
    c = compare_one("logits", moved, a, Tolerance(atol=atol, rtol=rtol))
    assert not c.passed and c.failed == ["elementwise"]
    assert c.mismatched == 1 and c.where_abs == tuple(int(x) for x in np.unravel_index(i, a.shape))
    assert c.max_abs == pytest.approx(factor * bound)
    # and within the bound it passes
    inside = a.copy()
    inside.flat[i] += 0.5 * bound
    assert compare_one("logits", inside, a, Tolerance(atol=atol, rtol=rtol)).passed


def test_the_numbers_say_where_the_largest_errors_are():
    ref = np.array([[1.0, 2.0, 0.0, 4.0]], np.float32)
    out = np.array([[1.0, 2.5, 0.001, 4.0]], np.float32)
    c = compare_one("y", out, ref, TIGHT)
    assert c.max_abs == pytest.approx(0.5) and c.where_abs == (0, 1)
    assert c.mean_abs == pytest.approx(0.501 / 4, rel=1e-4)
    assert c.actual_at == 2.5 and c.reference_at == 2.0
    assert math.isinf(c.max_rel) and c.where_rel == (0, 2)  # an error where the reference is 0
    assert c.mismatched == 2 and c.mismatched_share == 0.5
    assert 0.98 < c.cosine < 1.0


def test_cosine_similarity_is_a_bound_of_its_own():
    ref = np.linspace(-1, 1, 100).astype(np.float32)
    scaled = ref * 1.5  # same direction, every element off
    assert compare_one("y", scaled, ref, Tolerance(cosine=0.999)).passed
    assert not compare_one("y", scaled, ref, Tolerance(atol=1e-3, rtol=1e-3, cosine=0.999)).passed
    noisy = ref + np.random.default_rng(0).normal(0, 0.5, 100).astype(np.float32)
    c = compare_one("y", noisy, ref, Tolerance(cosine=0.999))
    assert c.failed == ["cosine"] and c.cosine < 0.999


def test_top_k_agreement_counts_the_reference_classes_the_output_keeps():
    ref = np.array([[0.1, 0.9, 0.5, 0.7, 0.0], [5, 4, 3, 2, 1]], np.float32)
    out = np.array([[0.1, 0.9, 0.5, 0.0, 0.7], [5, 4, 3, 2, 1]], np.float32)
    # row 0: top-2 {1, 3} vs {1, 4}: one of two; row 1: both
    assert topk_agreement(out, ref, 2) == pytest.approx(0.75)
    assert topk_agreement(out, ref, 1) == 1.0
    assert compare_one("logits", out, ref, Tolerance(topk=(2, 0.75))).passed
    c = compare_one("logits", out, ref, Tolerance(topk=(2, 1.0)))
    assert c.failed == ["topk"] and c.topk == pytest.approx(0.75)


@given(hnp.arrays(np.float32, st.tuples(st.integers(1, 4), st.integers(2, 20)),
                  elements=st.floats(-10, 10, width=32), unique=True), st.integers(1, 20))
def test_top_k_of_an_output_against_itself_is_full_agreement(a, k):
    assert topk_agreement(a, a.copy(), k) == 1.0


def test_a_wrong_shape_fails_naming_the_output_and_both_shapes():
    c = compare_one("boxes", np.zeros((1, 100, 4), np.float32), np.zeros((1, 4, 100), np.float32), TIGHT)
    assert not c.passed and c.failed == ["shape"]
    assert c.reason == "output 'boxes' has shape (1, 100, 4) and the reference (1, 4, 100): not compared"


def test_a_wrong_dtype_fails_naming_the_output_and_both_dtypes():
    c = compare_one("scores", np.zeros((1, 10), np.float16), np.zeros((1, 10), np.float32), TIGHT)
    assert not c.passed and c.failed == ["dtype"]
    assert "output 'scores' is float16 and the reference float32 (shape (1, 10))" in c.reason


def test_an_output_the_reference_has_and_the_test_lacks_fails():
    checks = compare({"a": np.zeros(3)}, {"a": np.zeros(3), "b": np.ones(2)}, lambda n: TIGHT)
    assert [c.passed for c in checks] == [True, False]
    assert checks[1].reason == "output 'b' of the reference (shape (2,)) is missing; the outputs are 'a'"


def test_nan_matches_nan_and_an_infinity_only_the_same_infinity():
    ref = np.array([np.nan, np.inf, -np.inf, 1.0])
    assert compare_one("y", ref.copy(), ref, TIGHT).passed
    c = compare_one("y", np.array([np.nan, -np.inf, -np.inf, np.nan]), ref, TIGHT)
    assert not c.passed and c.mismatched == 2 and c.nan == (2, 1) and c.inf == (2, 2)
    # with no elementwise tolerance a NaN where the reference is finite still fails
    c = compare_one("y", np.array([1.0, np.nan]), np.array([1.0, 2.0]), Tolerance(cosine=0.9))
    assert c.failed == ["non-finite"]


def test_top_k_on_an_output_without_classes_is_said():
    c = compare_one("y", np.zeros((2, 3)), np.zeros((2, 3)), Tolerance(topk=(5, 1.0)))
    assert not c.passed and "has no top-5 on its last axis" in c.reason


def test_default_tolerances_follow_the_precision_and_anything_given_replaces_them():
    assert tolerance("fp32") == Tolerance(1e-5, 1e-5)  # Polygraphy's defaults
    assert tolerance("fp16") == Tolerance(1e-2, 1e-2)
    assert tolerance("int8") == Tolerance(None, None, 0.99)
    assert set(DEFAULT_TOLERANCES) == {"fp32", "tf32", "fp16", "int8"}
    assert tolerance("fp16", cosine=0.999) == Tolerance(None, None, 0.999)
    assert tolerance("fp32", atol=0.1) == Tolerance(0.1, 0.0)
    assert tolerance("fp32", topk=5).topk == (5, 1.0)
    with pytest.raises(OutputsError, match="atol must be a number >= 0, not -1"):
        tolerance("fp32", atol=-1)
    with pytest.raises(OutputsError, match=r"topk must be k or \(k, least share\)"):
        tolerance("fp32", topk=(0, 0.5))
    with pytest.raises(OutputsError, match="unknown tolerance 'rtl'"):
        tolerance("fp32", rtl=0.1)


def test_the_outcome_rows_of_output_checks():
    assert REASONS["outputs_match"] == "pass" and REASONS["outputs_differ"] == "fail"
    assert REASONS["outputs_unchecked"] == "skip" and REASONS["outputs_no_reference"] is None
    assert all(o in OUTCOMES for o in ("pass", "fail", "skip", "recorded"))


def _record(actual, reference, **kw):
    return OutputsRecord(name="", source="the given reference", actual=actual, reference=reference,
                         default=TIGHT, **kw)


def test_a_differing_output_becomes_a_failing_verdict_with_its_numbers():
    ref = {"logits": np.arange(10, dtype=np.float32)[None], "aux": np.zeros(2, np.float32)}
    out = {"logits": ref["logits"].copy(), "aux": ref["aux"].copy()}
    out["logits"][0, 7] += 3
    vs = verdicts([_record(out, ref)], "t.py::test_x")
    assert [(v.metric, v.outcome, v.reason) for v in vs] == [
        ("outputs:logits", "fail", "outputs_differ"), ("outputs:aux", "pass", "outputs_match")]
    v = vs[0]
    assert v.kind == "outputs" and v.value == 3.0 and v.test == "t.py::test_x"
    assert v.outputs["where_abs"] == [0, 7] and v.outputs["mismatched"] == 1
    text = render.message(v)
    assert text.splitlines()[0] == ("output 'logits' differs from the given reference "
                                    "(atol 1e-05 + rtol 1e-05 x |reference|)")
    assert "1 of 10 elements (10%) out of tolerance; max abs error 3 at [0, 7] (10 vs 7)" in text
    assert "cosine similarity" in text
    # the verdict crosses the xdist boundary and the JSON report as data
    assert Verdict.from_dict(v.to_dict()).outputs == v.outputs


def test_a_simulated_check_is_a_skip_with_its_reason():
    rec = OutputsRecord(name="", source="onnxruntime (CPUExecutionProvider)",
                        skipped="the simulated device computes no outputs")
    (v,) = verdicts([rec], "t.py::test_x")
    assert (v.outcome, v.reason, v.metric) == ("skip", "outputs_unchecked", "outputs")
    assert render.why_not_compared(v) == "outputs not checked: the simulated device computes no outputs"


def test_golden_files_are_written_when_asked_and_read_back(tmp_path):
    path = golden_path(tmp_path / "orin-nano", "tests/test_a.py::test_b[x/1]", "head")
    assert path == tmp_path / "orin-nano/tests/test_a.py/test_b_x_1_.head.outputs.npz"
    out = {"y": np.arange(4, dtype=np.float32)}
    rec = OutputsRecord(name="head", source="", actual=out, golden=path, inputs={"x": np.ones(2, np.float32)})
    (v,) = verdicts([rec], "k", update=None)
    assert (v.outcome, v.reason) == ("skip", "outputs_no_reference") and not path.exists()
    (v,) = verdicts([rec], "k", update=None, missing_baseline="fail")
    assert v.outcome == "fail"
    (v,) = verdicts([rec], "k", update="new")
    assert (v.outcome, v.reason) == ("recorded", "outputs_recorded")
    outputs, inputs = read_golden(path)
    assert np.array_equal(outputs["y"], out["y"]) and np.array_equal(inputs["x"], np.ones(2))
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


def test_a_golden_file_that_is_not_one_is_said(tmp_path):
    bad = tmp_path / "t.outputs.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(Exception, match="golden outputs .* cannot be read .* delete it and record it again"):
        read_golden(bad)
