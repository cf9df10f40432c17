"""Over-current throttle event counters, read before and after every measured window.

On Orin (tegra234) and Thor, NVIDIA's ``tegra23x-oc-event`` kernel driver registers a hwmon device
named ``soctherm_oc`` (``/sys/class/hwmon/hwmon<N>``, a link into
``/sys/devices/platform/soctherm-oc-event/hwmon/``) with, per over-current alarm, ``oc<k>_event_cnt``
(events since boot, an unsigned decimal) and ``oc<k>_throt_en``. On Orin OC1 is under-voltage,
OC2 average and OC3 instantaneous over-current (NVIDIA's "Platform Power and Performance" guide,
Jetson Linux r35/r36). The BPMP throttles the clocks in hardware on each event, for milliseconds:
a 10 Hz clock sample rarely catches it, the counter always does. jetson-stats 7.2 finds the device
the same way (``jtop/gui/psysfs.py``: the hwmon whose ``name`` is ``soctherm_oc``, then
``oc*_event_cnt``). The hwmon index differs between boards and boots, so it is found by name.

Boards without the driver (Xavier, TX2, Nano) have no such counters: that is said once per
session, and measurements go on. A simulated device reads nothing.
"""

import re
import weakref
from pathlib import Path
from typing import Any, Dict, Optional

from ..devices.detect import system_root
from .sysfs import parse_number, read_small

HWMON = "sys/class/hwmon"
OC_HWMON_NAME = "soctherm_oc"
_COUNTER = re.compile(r"^(oc[0-9]+)_event_cnt$")


def find_oc_counters(root: Path) -> Dict[str, str]:
    """``{"oc1": path of oc1_event_cnt, ...}`` of the ``soctherm_oc`` hwmon device, {} without one."""
    base = Path(root) / HWMON
    try:
        devices = sorted(base.iterdir())
    except OSError:
        return {}
    for dev in devices:
        if (read_small(str(dev / "name")) or "").strip() != OC_HWMON_NAME:
            continue
        try:
            names = sorted(p.name for p in dev.iterdir())
        except OSError:
            return {}
        return {m.group(1): str(dev / n) for n in names for m in [_COUNTER.match(n)] if m}
    return {}


class ThrottleCounters:
    """The board's over-current event counters: ``read()`` gives their values (None when none can
    be read), ``increments`` what changed between two reads, ``note()`` why they cannot be read,
    once."""

    def __init__(self, root: Optional[str] = None) -> None:
        # "/" is what callers pass when they mean "this machine": the sysroot set for it wins.
        self.root = Path(root) if root not in (None, "", "/") else system_root()
        self.paths = find_oc_counters(self.root)
        self._said = False
        self.unreadable: Optional[str] = None if self.paths else (
            f"no hwmon device named {OC_HWMON_NAME} under /{HWMON} (NVIDIA's over-current event driver of "
            "Orin and Thor)")

    def read(self) -> Optional[Dict[str, int]]:
        values: Dict[str, int] = {}
        for name, path in self.paths.items():
            value = parse_number(read_small(path), lo=0, hi=2 ** 64)
            if value is not None:
                values[name] = value
        if self.paths and not values:
            self.unreadable = f"{', '.join(sorted(self.paths.values()))} could not be read"
        return values or None

    @staticmethod
    def increments(before: Optional[Dict[str, int]], after: Optional[Dict[str, int]]) -> Dict[str, int]:
        """Events during the window, counters that rose only (a counter that fell was reset: its
        count is unknown, not negative)."""
        if not before or not after:
            return {}
        return {k: after[k] - before[k] for k in sorted(after) if k in before and after[k] > before[k]}

    def note(self) -> Optional[str]:
        """The one line saying the counters cannot be read: the first time only."""
        if self.unreadable is None or self._said:
            return None
        self._said = True
        return (f"over-current throttle counters cannot be read on this board ({self.unreadable}): "
                "throttling during measurements is judged from clocks and temperatures only")


#: One reader per session's telemetry factory, so the note is said once per session.
_SESSION: "weakref.WeakKeyDictionary[Any, Optional[ThrottleCounters]]" = weakref.WeakKeyDictionary()


def counters_for(telemetry: Any) -> Optional[ThrottleCounters]:
    """The counters of the board ``telemetry`` (the session's ``TelemetryFactory``) samples; None
    for a simulated device (also one measured by real engines on a host), no device, or anything
    else."""
    device = getattr(telemetry, "device", None)
    if (not hasattr(telemetry, "sample") or getattr(telemetry, "simulated", True) or device is None
            or getattr(device, "simulated", True)):
        return None
    try:
        return _SESSION[telemetry]
    except KeyError:
        pass
    except TypeError:
        return None
    counters = ThrottleCounters(getattr(telemetry, "root", None))
    _SESSION[telemetry] = counters
    return counters


def describe(events: Dict[str, int]) -> str:
    """The one-line warning of a window during which the board throttled."""
    counts = ", ".join(f"{k} +{v}" for k, v in sorted(events.items()))
    return (f"the board throttled during the measurement: {sum(events.values())} over-current event(s) "
            f"({counts}); its figures are not the board's unthrottled speed (check the power supply)")
