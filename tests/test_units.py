"""Durations and sizes as users write them in options and keyword arguments."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_jetson.errors import ConfigError
from pytest_jetson.units import format_bytes, format_duration, parse_duration, parse_size


@pytest.mark.parametrize("text, seconds", [
    ("10s", 10.0), ("50ms", 0.05), ("250 us", 250e-6), ("2min", 120.0), ("1.5", 1.5), (" 3 s ", 3.0),
    (4, 4.0), (0.25, 0.25), ("1e-3s", 1e-3),
])
def test_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["ten seconds", "5 parsecs", "-1s", "", "nan", True, float("inf")])
def test_bad_durations_name_the_option_and_the_fix(bad):
    with pytest.raises(ConfigError, match=r"^--jetson-duration: .*"):
        parse_duration(bad, "--jetson-duration")


def test_none_duration_stays_none():
    assert parse_duration(None) is None


@pytest.mark.parametrize("text, n", [("1.5 GiB", int(1.5 * 2 ** 30)), ("512MB", 512_000_000), ("1024", 1024), (2048, 2048)])
def test_sizes(text, n):
    assert parse_size(text) == n


def test_bad_size():
    with pytest.raises(ConfigError, match="cannot read '1.5 GiBs' as a size"):
        parse_size("1.5 GiBs")


@given(st.floats(min_value=1e-9, max_value=1e4, allow_nan=False))
def test_formatted_durations_read_back_close(seconds):
    text = format_duration(seconds)
    assert math.isclose(parse_duration(text.replace(" ", "")), seconds, rel_tol=5e-3)


def test_format_bytes():
    assert format_bytes(1.5 * 2 ** 30) == "1.5 GiB"
    assert format_bytes(None) == "-"
