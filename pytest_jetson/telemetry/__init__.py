"""Telemetry: what the board did while a test ran (power, memory, utilisation, clocks, heat).

A ``Sampler`` reads one source (``jtop``, ``tegrastats``, ``sysfs``, ``nvml``, ``host`` or
``simulated``, or one a plugin registers; see ``sources.SOURCES`` and ``select.open_source``)
beside a measurement and summarises it as a ``TelemetrySummary``. ``TelemetryFactory`` is the
session-wide entry point; the session context owns one.

Names are imported lazily so that importing the plugin stays cheap.
"""

import importlib
from typing import Any

__all__ = [
    "Reading",
    "Sampler",
    "Series",
    "SourceDied",
    "TelemetryFactory",
    "TelemetrySummary",
    "TelemetryWarning",
    "SourceContext",
    "SourceSpec",
    "SOURCES",
    "open_source",
]

_WHERE = {
    "Reading": "base",
    "SourceDied": "base",
    "TelemetryWarning": "base",
    "Sampler": "sampler",
    "Series": "series",
    "TelemetrySummary": "summary",
    "TelemetryFactory": "factory",
    "open_source": "select",
    "SourceContext": "sources",
    "SourceSpec": "sources",
    "SOURCES": "sources",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        module = importlib.import_module(f".{_WHERE[name]}", __name__)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
