"""Parsing and formatting of the quantities users write: durations, sizes, rates.

Bounds (``">= 900/s"``) have their own grammar in ``gate.bounds``; this module holds the plain
quantities that options and keyword arguments take (``duration="10s"``, ``interval="50ms"``).
"""

import math
import re
from typing import Optional, Union

from .errors import ConfigError

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|µs|ms|s|sec|min|m|h)?\s*$")
_DURATION_SCALE = {
    "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, None: 1.0,
    "min": 60.0, "m": 60.0, "h": 3600.0,
}

_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(B|KiB|MiB|GiB|TiB|KB|MB|GB|TB|kB)?\s*$")
_SIZE_SCALE = {
    None: 1, "B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "TiB": 1024 ** 4,
    "KB": 1000, "kB": 1000, "MB": 1000 ** 2, "GB": 1000 ** 3, "TB": 1000 ** 4,
}

Duration = Union[str, int, float, None]

#: The longest measurement pytest-jetson runs (a duration, a warm-up, an adaptive run's limit, a
#: pool's window): a day. A perf test longer than that is a typo or an exponent gone wrong, and on
#: the simulated device's virtual clock every simulated second costs real time and memory.
LONGEST_MEASUREMENT_S = 24 * 3600.0
#: The most iterations one measurement may ask for: every iteration keeps a latency and an end
#: time (and a device time on TensorRT), 8 bytes each at the least, so 10 million iterations hold
#: 160-240 MB of samples, which every supported board has to spare beside a model; 10**12 would
#: need terabytes. A real engine at 3,000 inferences/s reaches it in about an hour.
MAX_ITERATIONS = 10_000_000


def _span(seconds: float) -> str:
    return "a day (24 h)" if seconds == LONGEST_MEASUREMENT_S else f"{seconds:g} s"


def parse_duration(value: Duration, what: str = "duration", at_most: Optional[float] = None) -> Optional[float]:
    """``"10s"``, ``"50ms"``, ``"2min"``, ``1.5`` (seconds) -> seconds as float; None stays None.
    ``at_most``: the longest duration accepted (``LONGEST_MEASUREMENT_S`` for a measurement)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConfigError(f"{what}: expected a duration such as '10s' or '50ms', got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        m = _DURATION.match(str(value))
        if not m:
            raise ConfigError(
                f"{what}: cannot read {value!r} as a duration; write a number with a unit, "
                "such as '10s', '500ms', '2min'"
            )
        seconds = float(m.group(1)) * _DURATION_SCALE[m.group(2)]
    if not math.isfinite(seconds) or seconds < 0:
        raise ConfigError(f"{what}: {value!r} is not a non-negative finite duration")
    if at_most is not None and seconds > at_most:
        shown = f"{value:g} s" if isinstance(value, (int, float)) else repr(value)
        raise ConfigError(f"{what}: {shown} is longer than {_span(at_most)}, the longest measurement "
                          f"pytest-jetson runs; measure for at most '{at_most:g}s'")
    return seconds


def parse_size(value: Union[str, int, float], what: str = "size") -> int:
    """``"1.5 GiB"``, ``"512MB"``, ``1024`` (bytes) -> bytes as int."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    m = _SIZE.match(str(value))
    if not m:
        raise ConfigError(f"{what}: cannot read {value!r} as a size; write e.g. '1.5 GiB' or '512 MB'")
    return int(float(m.group(1)) * _SIZE_SCALE[m.group(2)])


def format_duration(seconds: Optional[float]) -> str:
    """Seconds -> the shortest readable unit, e.g. 0.0123 -> '12.3 ms'."""
    if seconds is None:
        return "-"
    a = abs(seconds)
    if a >= 1:
        return f"{seconds:.3g} s"
    if a >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    if a >= 1e-6:
        return f"{seconds * 1e6:.3g} us"
    if a == 0:
        return "0 s"
    return f"{seconds * 1e9:.3g} ns"


def format_bytes(n: Optional[float]) -> str:
    """Bytes -> binary units, e.g. 1610612736 -> '1.5 GiB'."""
    if n is None:
        return "-"
    for unit, scale in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"
