"""The ``jtop`` source: jetson-stats' Python API (``pip install 'pytest-jetson[jtop]'``).

jtop reads through the ``jtop.service`` daemon; when the daemon is not running this source says
so, with the command that starts it, and ``open_source("auto")`` falls back to the next source.
Read against the jetson-stats 4.x API: ``jetson.power``, ``jetson.memory``, ``jetson.gpu``,
``jetson.temperature``, ``jetson.stats``, ``jetson.nvpmodel``, ``jetson.jetson_clocks``.
"""

import os
from typing import Any, Dict, List, Optional

from .base import Reading, Source, SourceDied

JTOP_MISSING = "jetson-stats not installed: pip install 'pytest-jetson[jtop]'"
JTOP_NOT_RUNNING = "jtop service is not running: sudo systemctl restart jtop.service"
#: The socket the jtop service listens on (jetson-stats 4.x).
JTOP_SOCKET = "/run/jtop.sock"


def _import_jtop() -> Any:
    import jtop  # optional dependency, imported only when used

    return jtop


def _get(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _num(x: Any) -> Optional[float]:
    try:
        return None if x is None else float(x)
    except (TypeError, ValueError):
        return None


class JtopSource(Source):
    """Polls the jtop client's latest figures; a new reading only when jtop has new data."""

    name = "jtop"
    memory_scope = "board RAM"

    def __init__(self) -> None:
        self._jetson: Any = None
        self._last_time: Any = None
        self.power_basis: Optional[str] = None
        self.effective_interval: Optional[float] = None

    @classmethod
    def probe(cls) -> Optional[str]:
        try:
            _import_jtop()
        except ImportError:
            return JTOP_MISSING
        if not os.path.exists(JTOP_SOCKET):
            return JTOP_NOT_RUNNING
        return None

    def start(self, interval: float) -> None:
        from ..errors import TelemetryError

        try:
            mod = _import_jtop()
        except ImportError as exc:
            raise TelemetryError(f"telemetry source jtop: {JTOP_MISSING}") from exc
        try:
            self._jetson = mod.jtop(interval=interval)
            self._jetson.start()
            # The service keeps the interval its first client asked for; jtop reports it.
            actual = _num(getattr(self._jetson, "interval", None))
            self.effective_interval = actual if actual and actual > 0 else interval
        except Exception as exc:
            # jtop raises JtopException("The jtop.service is not active...") when it is down.
            self._jetson = None
            raise TelemetryError(f"telemetry source jtop: {JTOP_NOT_RUNNING} ({exc})") from exc

    # -- hooks -----------------------------------------------------------------------------------
    def power_mode(self) -> Optional[str]:
        mode = getattr(self._jetson, "nvpmodel", None) if self._jetson is not None else None
        if mode is None:
            return None
        return str(getattr(mode, "name", None) or mode)

    def jetson_clocks(self) -> Optional[bool]:
        jc = getattr(self._jetson, "jetson_clocks", None) if self._jetson is not None else None
        if jc is None:
            return None
        status = getattr(jc, "status", None)
        if isinstance(status, str):
            return status.lower() in ("running", "on", "active")
        return bool(jc)

    def max_gpu_clock_mhz(self) -> Optional[float]:
        if self._jetson is None:
            return None
        khz = _num(_get(getattr(self._jetson, "gpu", None) or {}, "gpu", "freq", "max"))
        return None if khz is None else khz / 1000.0

    # -- reading -----------------------------------------------------------------------------------
    def read(self, now: float) -> Reading:
        j = self._jetson
        power = getattr(j, "power", None) or {}
        rails: Dict[str, float] = {}
        for name, r in (_get(power, "rail") or {}).items():
            mw = _num(_get(r, "power"))
            if mw is not None:
                rails[name] = mw / 1000.0
        tot = _num(_get(power, "tot", "power"))
        self.power_basis = str(_get(power, "tot", "name") or "jtop total")
        memory = getattr(j, "memory", None) or {}
        ram_kb = _num(_get(memory, "RAM", "used"))
        emc = _num(_get(memory, "EMC", "val"))
        gpu = _get(getattr(j, "gpu", None) or {}, "gpu") or {}
        load = _num(_get(gpu, "status", "load"))
        khz = _num(_get(gpu, "freq", "cur"))
        temps: Dict[str, float] = {}
        for name, t in (getattr(j, "temperature", None) or {}).items():
            value = _num(_get(t, "temp"))
            if value is not None and value > -100 and _get(t, "online") is not False:
                temps[name] = value
        return Reading(
            t=now,
            board_power_w=None if tot is None else tot / 1000.0,
            rails_w=rails,
            memory_bytes=None if ram_kb is None else ram_kb * 1024.0,
            gpu_util=load,
            gpu_clock_mhz=None if khz is None else khz / 1000.0,
            emc_util=emc,
            temps_c=temps,
        )

    def collect(self, now: float) -> List[Reading]:
        j = self._jetson
        if j is None:
            raise SourceDied("jtop was not started")
        alive = getattr(j, "is_alive", None)
        if callable(alive) and not alive():
            raise SourceDied(f"the jtop client lost the service ({JTOP_NOT_RUNNING})")
        stamp = _get(getattr(j, "stats", None) or {}, "time")
        if stamp is not None and stamp == self._last_time:
            return []
        self._last_time = stamp
        return [self.read(now)]

    def stop(self) -> None:
        if self._jetson is not None:
            try:
                self._jetson.close()
            except Exception:
                pass
            self._jetson = None
