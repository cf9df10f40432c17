"""The perf bound grammar: what users write, what it means, and what a typo says."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_jetson.errors import BoundError
from pytest_jetson.gate import bounds
from pytest_jetson.metrics import METRICS, UNITS


@pytest.mark.parametrize(
    "metric, text, comparator, value",
    [
        ("throughput", ">= 900/s", ">=", 900.0),
        ("throughput", ">=900 items/s", ">=", 900.0),
        ("latency_p99", "<= 15 ms", "<=", 0.015),
        ("latency_mean", "< 250us", "<", 250e-6),
        ("memory", "< 1.5 GiB", "<", 1.5 * 1024 ** 3),
        ("memory", "<= 512 MB", "<=", 512e6),
        ("power", "<= 10 W", "<=", 10.0),
        ("power_peak", "<= 9500 mW", "<=", 9.5),
        ("energy", "<= 12 mJ", "<=", 0.012),
        ("temperature", "<= 70 C", "<=", 70.0),
        ("gpu_util", ">= 80 %", ">=", 80.0),
        ("per_process_throughput", "> 1e2/s", ">", 100.0),
    ],
)
def test_absolute_bounds_convert_to_base_units(metric, text, comparator, value):
    b = bounds.parse(metric, text)
    assert b.kind == "absolute"
    assert b.comparator == comparator
    assert b.value == pytest.approx(value)


def test_bare_percentage_is_a_tolerance_against_the_baseline():
    b = bounds.parse("throughput", "5%")
    assert b.relative and b.tolerance == pytest.approx(0.05)
    assert bounds.parse("power", " 12.5 % ").tolerance == pytest.approx(0.125)


@pytest.mark.parametrize(
    "metric, text, fragment, caret_under",
    [
        ("throughput", ">= 900 ms", "measures time", "ms"),
        ("latency_p99", "<= 15", "missing unit", None),
        ("memory", "=< 1 GiB", "write '<='", "=<"),
        ("throughput", ">= 5%", "written without a comparator", "%"),
        ("throughput", "900/s", "missing comparator", None),
        ("latency_p99", "<= 1x5 ms", "does not fit latency_p99", "x"),
        ("power", "<= 10 W extra", "unexpected text", "extra"),
        ("power", "<= ten W", "expected a number", "ten"),
        ("power", "<= 10 W;", "unexpected", ";"),
    ],
)
def test_malformed_bound_points_at_the_bad_token(metric, text, fragment, caret_under):
    with pytest.raises(BoundError) as info:
        bounds.parse(metric, text, where="test_x")
    msg = str(info.value)
    assert fragment in msg
    assert "test_x" in msg and metric in msg
    if caret_under is not None:
        shown, carets = msg.splitlines()[-2:]
        col = carets.index("^")
        assert shown[col:].startswith(caret_under)


def test_unknown_metric_suggests_the_closest_and_lists_all():
    with pytest.raises(BoundError) as info:
        bounds.parse("latncy_p99", "<= 1 ms", where="test_x")
    msg = str(info.value)
    assert "Did you mean 'latency_p99'" in msg
    for name in METRICS:
        assert name in msg


def test_non_string_bound_says_how_to_write_it():
    with pytest.raises(BoundError, match="must be a string such as '>= 900/s'"):
        bounds.parse("throughput", 900)


def test_merge_keeps_ranges_and_drops_duplicates():
    merged = bounds.parse_marks([
        ("test_a", {"latency_p99": "<= 15 ms", "throughput": "5%"}),
        ("class TestA", {"latency_p99": "<=15ms", "throughput": ">= 100/s"}),
        ("module", {"throughput": "<= 2000/s"}),
    ])
    assert sorted((b.metric, b.kind, b.comparator) for b in merged) == [
        ("latency_p99", "absolute", "<="),
        ("throughput", "absolute", "<="),
        ("throughput", "absolute", ">="),
        ("throughput", "relative", None),
    ]


@pytest.mark.parametrize("a, b", [("<= 15 ms", "<= 20 ms"), ("5%", "10%")])
def test_conflicting_marks_name_both_bounds(a, b):
    with pytest.raises(BoundError) as info:
        bounds.parse_marks([("test_a", {"latency_p99": a}), ("module test_m.py", {"latency_p99": b})])
    msg = str(info.value)
    assert a in msg and b in msg and "test_a" in msg and "module test_m.py" in msg


@given(
    st.sampled_from(sorted(METRICS)),
    st.sampled_from(bounds.COMPARATORS),
    st.floats(min_value=0, max_value=1e9, allow_nan=False),
    st.data(),
)
def test_every_well_formed_bound_parses_to_its_value(metric, comparator, number, data):
    unit = data.draw(st.sampled_from(METRICS[metric].units))
    sep = data.draw(st.sampled_from(["", " "]))
    b = bounds.parse(metric, f"{comparator}{sep}{number!r}{sep}{unit}")
    assert b.comparator == comparator
    assert b.value == pytest.approx(number * UNITS[METRICS[metric].dimension][unit])


@given(st.text(max_size=12))
def test_arbitrary_text_parses_or_raises_bound_error(text):
    try:
        bounds.parse("latency_p99", text)
    except BoundError:
        pass


@pytest.mark.parametrize("low, high", [(">= 900000/s", "<= 1/s"), ("> 5/s", "< 5/s"), ("> 5/s", "<= 5/s")])
def test_a_range_no_value_can_meet_is_an_error_naming_both(low, high):
    for marks in ([("test_a", {"throughput": low}), ("module test_m.py", {"throughput": high})],
                  [("test_a", {"throughput": high}), ("module test_m.py", {"throughput": low})]):
        with pytest.raises(BoundError, match="contradict on throughput") as info:
            bounds.parse_marks(marks)
        assert low in str(info.value) and high in str(info.value) and "leave no value that passes" in str(info.value)


@pytest.mark.parametrize("low, high, limits", [
    (">= 5/s", "<= 5/s", ({}, {})),  # one value passes
    (">= 900/s", "<= 1/s", ({"devices": "orin-nano"}, {"devices": "agx-orin"})),  # never together
    (">= 900/s", "<= 1/s", ({"backends": "simulated"}, {"backends": "onnxruntime"})),
])
def test_a_range_with_room_or_bounds_that_never_meet_are_kept(low, high, limits):
    merged = bounds.parse_marks([("test_a", dict(limits[0], throughput=low)),
                                 ("module", dict(limits[1], throughput=high))])
    assert len(merged) == 2


@given(st.floats(0.001, 1e6), st.floats(0.001, 1e6), st.sampled_from([">=", ">"]), st.sampled_from(["<=", "<"]))
def test_a_range_is_refused_exactly_when_no_value_meets_both(low, high, c_low, c_high):
    marks = [("test_a", {"latency_mean": f"{c_low} {low!r} ms"}), ("module", {"latency_mean": f"{c_high} {high!r} ms"})]
    same = math.isclose(low, high, rel_tol=1e-9)  # one value, as far as unit conversions tell
    room = (low < high and not same) or (same and c_low == ">=" and c_high == "<=")
    try:
        bounds.parse_marks(marks)
        assert room
    except BoundError:
        assert not room
