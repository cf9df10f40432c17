"""The ``jtop`` source: jetson-stats' Python client (``pip install 'pytest-jetson[jtop]'``).

The client talks to the ``jtop.service`` daemon, which reads the board's files on its own timer.
One client serves the whole session (opening one costs a handshake and a thread that runs
``nvcc``, ``dpkg`` and friends), shared by every measured window. Read against jetson-stats 4.x
(the line JetPack 5 and 6 boards run) and 7.x:

* ``jetson.gpu`` and ``jetson.memory`` are mapping-like ``GenericInterface`` objects, not dicts;
  the GPU is keyed by its device-tree name (``gp10b``, ``gv11b``, ``ga10b``, ``gpu``; ``Thor`` when
  7.x reads it through NVML, with clocks in MHz instead of kHz: see ``_gpu_mhz``).
* ``jetson.stats['time']`` is ``datetime.now()`` at every call, so it says nothing about the data's
  age. A reading is new when the service's own stamp moved: ``jetson.uptime`` is the board's
  uptime the service read with the data.
* ``jetson.power['tot']`` is the input rail when the board has one (``name``: VDD_IN, POM_5V_IN;
  VIN on Thor with jetson-stats 7.2) and the sum of the rails otherwise.

The service reads on its own timer, and under full load it stalls (its thread starved, its socket
slow): a window would then hold a gap where the load was highest. When no new data has come for
``STALL_INTERVALS`` intervals, the source reads the board's files itself (``sysfs.SysfsSource``,
the same INA3221/INA238 rails, devfreq and thermal files the service reads) until the service
answers again, and the window's summary says how many samples came that way.

When the service is missing, stopped, unreachable or of another jetson-stats version than this
client, ``probe()`` says so with the command that fixes it, and ``open_source("auto")`` moves on
to the next source with that reason.
"""

import atexit
import os
import re
import threading
from typing import Any, Dict, List, Optional, Tuple

from ..devices.detect import system_root
from ..errors import TelemetryError
from .base import Reading, Source, SourceDied
from .sysfs import SysfsSource

JTOP_MISSING = "jetson-stats is not installed: pip install 'pytest-jetson[jtop]'"
RESTART = "sudo systemctl restart jtop.service"
#: The interval the session's client asks the service for (the service keeps its first client's).
CLIENT_INTERVAL = 0.1
#: Connection attempts while a just-woken service has no data yet.
START_ATTEMPTS = 3
#: Intervals without new data from the service after which the board's files are read directly.
STALL_INTERVALS = 5
_VERSIONS = re.compile(r"service:\s*\[([^\]]*)\]\s*and client:\s*\[([^\]]*)\]")


def _import_jtop() -> Any:
    import jtop  # optional dependency, imported only when used

    return jtop


def client_version(mod: Any = None) -> Optional[str]:
    mod = mod or _import_jtop()
    return str(getattr(mod, "__version__", "") or "") or None


def _major(version: Optional[str]) -> int:
    m = re.match(r"(\d+)", version or "")
    return int(m.group(1)) if m else 0


def not_running(mod: Any = None) -> str:
    """The service is absent or stopped: how to start it, for the client's jetson-stats line."""
    try:
        version = client_version(mod)
    except ImportError:
        version = None
    install = " (jetson-stats 7 installs it with `sudo jtop --install-service`)" if _major(version) >= 7 else ""
    return f"the jtop service is not running: {RESTART}{install}"


#: What the client's connection to the service raises when the service goes away: jtop turns an
#: EOFError inside its reading loop into "Lost connection with jtop server", but the same loss met
#: while it sends its keep-alive reaches the client's thread as the socket's own error.
_CONNECTION_LOST = (EOFError, BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


def explain(exc: BaseException, mod: Any = None, running: bool = False) -> str:
    """A jtop client's failure in words, with the fix: at start-up, or (``running``) once it had
    been reading, when any failure to reach the service means the service went away."""
    text = " ".join(str(exc).split())
    m = _VERSIONS.search(text)
    if m:
        service, client = m.group(1), m.group(2)
        return (f"the jtop service runs jetson-stats {service} but this Python has {client}: restart the "
                f"service on {client} ({RESTART}), or install the service's version here "
                f"(pip install jetson-stats=={service})")
    low = text.lower()
    lost = isinstance(exc, _CONNECTION_LOST) or (running and isinstance(exc, ConnectionError))
    if lost or "lost connection" in low or "error connection" in low:
        return f"the jtop service stopped answering: {RESTART}"
    if "not active" in low or "connection refused" in low or "no such file" in low:
        return not_running(mod)
    if "can't access" in low or "permission" in low:
        return ("this user may not talk to the jtop service: add it to the jtop group "
                "(sudo usermod -aG jtop $USER) and log in again")
    if "python versions" in low:
        return ("the jtop service runs under another Python than this one: install jetson-stats for the "
                f"service's Python and restart it ({RESTART})")
    if "authentication" in low:
        return ("the jtop service was installed from another jetson-stats than this Python's: "
                f"reinstall one version for both and {RESTART}")
    return f"the jtop client could not start ({type(exc).__name__}: {text}); {RESTART}"


class _Shared:
    """The session's one jtop client, opened on first use and closed at exit."""

    lock = threading.Lock()
    client: Any = None
    error: Optional[str] = None

    @classmethod
    def get(cls, interval: float = CLIENT_INTERVAL) -> Tuple[Any, Optional[str]]:
        with cls.lock:
            if cls.client is not None and cls._alive(cls.client):
                return cls.client, None
            cls.client, cls.error = None, None
            try:
                mod = _import_jtop()
            except ImportError:
                return None, JTOP_MISSING
            pipe = _service_pipe()
            if pipe and not os.path.exists(pipe):
                return None, not_running(mod)
            for attempt in range(START_ATTEMPTS):
                try:
                    client = mod.jtop(interval=interval)
                    client.start()
                    break
                except Exception as exc:  # JtopException and the OSErrors it wraps
                    # A service whose timer was idle answers the first client only after its
                    # first read of the board; the client gives up after three intervals.
                    if "error connection" in str(exc).lower() and attempt + 1 < START_ATTEMPTS:
                        continue
                    cls.error = explain(exc, mod)
                    return None, cls.error
            cls.client = client
            return client, None

    @staticmethod
    def _alive(client: Any) -> bool:
        alive = getattr(client, "is_alive", None)
        return bool(alive()) if callable(alive) else True

    @classmethod
    def close(cls) -> None:
        with cls.lock:
            client, cls.client = cls.client, None
        if client is not None:
            try:
                client.close()
            except Exception:
                pass


atexit.register(_Shared.close)


def _service_pipe() -> Optional[str]:
    """Where this jetson-stats' service listens (its JTOP_PIPE, /run/jtop.sock on a board)."""
    try:
        import jtop.service as service  # type: ignore[import-not-found]

        return getattr(service, "JTOP_PIPE", None)
    except Exception:
        return None


def close_client() -> None:
    """Close the session's jtop client (the next use opens a new one)."""
    _Shared.close()


def _num(x: Any) -> Optional[float]:
    try:
        value = None if x is None or isinstance(x, bool) else float(x)
    except (TypeError, ValueError):
        return None
    return value if value is not None and value == value else None


def _items(mapping: Any) -> List[Tuple[str, Any]]:
    """(key, value) pairs of a dict or a jtop GenericInterface (both have ``items``)."""
    items = getattr(mapping, "items", None)
    try:
        return list(items()) if callable(items) else []
    except Exception:
        return []


def _get(mapping: Any, key: str) -> Any:
    get = getattr(mapping, "get", None)
    try:
        return get(key) if callable(get) else None
    except Exception:
        return None


def _gpu(jetson: Any) -> Tuple[Optional[str], Dict[str, Any]]:
    """The integrated GPU's entry: (name, data). jtop keys it by device-tree name."""
    entries = _items(getattr(jetson, "gpu", None))
    for name, data in entries:
        if _get(data, "type") == "integrated":
            return name, data
    return (entries[0][0], entries[0][1]) if entries else (None, {})


#: Above this a clock jtop gives is in kHz, below in MHz: no GPU runs at 10 GHz, and no Jetson GPU's
#: devfreq range reaches down to 10 MHz (the lowest, a Nano's, is 76.8 MHz).
_KHZ_ABOVE = 10_000.0


def _gpu_mhz(gpu: Any, key: str) -> Optional[float]:
    """The GPU's ``key`` clock (cur, max) in MHz from its jtop entry.

    jtop's devfreq path (every board before Thor) gives kHz (``int(cur_freq) // 1000``). Its NVML
    path (Thor) marks the entry ``power_control: "nvml"`` and gives NVML's MHz, but jetson-stats 7.2
    then sets ``governor`` to devfreq's (``nvhost_podgov``) and fills each clock NVML did not give
    (0) from devfreq, in kHz (jtop/core/gpu.py, nvml_read_gpu_status and _thor_gpc_freq): on that
    path the unit is the value's own.
    """
    freq = _get(gpu, "freq")
    value = _num(_get(freq, key))
    if value is None:
        return None
    nvml = _get(gpu, "power_control") == "nvml" or _get(freq, "governor") == "nvml"
    return value / 1000.0 if not nvml or value > _KHZ_ABOVE else value


class JtopSource(Source):
    """Polls the session's jtop client; a new reading only when the service has new data."""

    name = "jtop"
    memory_scope = "board RAM"

    def __init__(self) -> None:
        self._jetson: Any = None
        self._stamp: Any = None
        self.power_basis: Optional[str] = None
        self.effective_interval: Optional[float] = None
        self.gpu_name: Optional[str] = None
        #: reads the board's files while the service stalls (None: this machine has none)
        self._fallback: Optional[SysfsSource] = None
        self._fresh_at: Optional[float] = None
        self.stalled_reads = 0
        self._stalled_since: Optional[float] = None
        self._stalled_for = 0.0

    @classmethod
    def probe(cls) -> Optional[str]:
        """None when the service answers this client; else why not and the fix. Opens the
        session's client (the connection is the only test that the service is there and of
        this client's version)."""
        _, why = _Shared.get()
        return why

    def start(self, interval: float) -> None:
        client, why = _Shared.get()
        if client is None:
            raise TelemetryError(f"telemetry source jtop: {why}")
        self._jetson = client
        actual = _num(getattr(client, "interval", None))
        self.effective_interval = actual if actual and actual > 0 else interval
        # Data the service read before the window opened is not the window's.
        self._stamp = self._service_stamp()
        self._fresh_at, self._stalled_since = None, None
        self.stalled_reads, self._stalled_for = 0, 0.0
        direct = SysfsSource(str(system_root()))
        self._fallback = direct if direct.probe_instance() is None else None

    def _service_stamp(self) -> Any:
        try:
            return self._jetson.uptime
        except Exception:
            return None

    # -- hooks -----------------------------------------------------------------------------------
    def power_mode(self) -> Optional[str]:
        mode = getattr(self._jetson, "nvpmodel", None) if self._jetson is not None else None
        if mode is None:
            return None
        try:
            return str(mode.name)
        except Exception:
            return None

    def jetson_clocks(self) -> Optional[bool]:
        jc = getattr(self._jetson, "jetson_clocks", None) if self._jetson is not None else None
        return None if jc is None else bool(jc)

    def max_gpu_clock_mhz(self) -> Optional[float]:
        if self._jetson is None:
            return None
        _, gpu = _gpu(self._jetson)
        return _gpu_mhz(gpu, "max")

    # -- reading -----------------------------------------------------------------------------------
    def read(self, now: float) -> Reading:
        j = self._jetson
        rails, board_mw, board_name = _rails(getattr(j, "power", None) or {})
        self.power_basis = str(board_name or ("sum of rails" if rails else "")) or None
        memory = getattr(j, "memory", None)
        ram_kb = _num(_get(_get(memory, "RAM"), "used"))
        self.gpu_name, gpu = _gpu(j)
        return Reading(
            t=now,
            board_power_w=None if board_mw is None else board_mw / 1000.0,
            rails_w=rails,
            memory_bytes=None if ram_kb is None else ram_kb * 1024.0,
            gpu_util=_num(_get(_get(gpu, "status"), "load")),
            gpu_clock_mhz=_gpu_mhz(gpu, "cur"),
            emc_util=_num(_get(_get(memory, "EMC"), "val")),
            cpu_util=_cpu_busy(j),
            temps_c=_temperatures(j),
        )

    def collect(self, now: float) -> List[Reading]:
        j = self._jetson
        if j is None:
            raise SourceDied("jtop was not started")
        try:
            running = j.ok(spin=True)  # re-raises what the client's thread met (the service went away)
        except Exception as exc:
            raise SourceDied(f"the jtop client lost the service ({explain(exc, running=True)})") from exc
        if not running or not _Shared._alive(j):
            raise SourceDied(f"the jtop client lost the service ({not_running()})")
        stamp = self._service_stamp()
        if stamp is None or stamp == self._stamp:
            return self._while_stalled(now)
        self._stamp = stamp
        self._fresh_at = now
        if self._stalled_since is not None:
            self._stalled_for += now - self._stalled_since
            self._stalled_since = None
        return [self.read(now)]

    def _while_stalled(self, now: float) -> List[Reading]:
        """No new data from the service: nothing yet, or, once it has kept quiet for
        ``STALL_INTERVALS`` intervals, a reading of the board's files themselves."""
        if self._fresh_at is None:
            self._fresh_at = now  # the window's first poll: the service's timer starts here
        quiet = now - self._fresh_at
        if self._fallback is None or quiet < STALL_INTERVALS * (self.effective_interval or CLIENT_INTERVAL):
            return []
        if self._stalled_since is None:
            self._stalled_since = self._fresh_at
        self.stalled_reads += 1
        return [self._fallback.read(now)]

    def window_notes(self, now: float) -> List[str]:
        """What the window's summary says of the service: how long it stalled and how many
        samples were read from the board's files instead."""
        if not self.stalled_reads:
            return []
        stalled = self._stalled_for + (now - self._stalled_since if self._stalled_since is not None else 0.0)
        return [f"telemetry source jtop: the jtop service gave no new data for {stalled:.3g} s in all; "
                f"{self.stalled_reads} sample(s) were read from the board's files (sysfs) meanwhile"]

    def stop(self) -> None:
        # The client serves the session: it stays open for the next window.
        self._jetson = None
        if self._fallback is not None:
            self._fallback.stop()


def _rails(power: Any) -> Tuple[Dict[str, float], Optional[float], Any]:
    """Each rail's power (W), the board input's (mW) and that rail's name, from ``jetson.power``."""
    rails: Dict[str, float] = {}
    for name, rail in _items(_get(power, "rail")):
        mw = _num(_get(rail, "power"))
        if mw is not None:
            rails[name] = mw / 1000.0
    total = _get(power, "tot") or {}
    board_mw = _num(_get(total, "power"))
    board_name = _get(total, "name")
    if board_name and board_mw is not None:
        rails[str(board_name)] = board_mw / 1000.0  # jtop moves the input rail out of 'rail'
    return rails, board_mw, board_name


def _temperatures(j: Any) -> Dict[str, float]:
    """Online sensors with a real reading (jtop reports an absent one as -256 C)."""
    temps: Dict[str, float] = {}
    for name, sensor in _items(getattr(j, "temperature", None)):
        value = _num(_get(sensor, "temp"))
        if value is not None and value > -100 and _get(sensor, "online") is not False:
            temps[name] = value
    return temps


def _cpu_busy(j: Any) -> Optional[float]:
    cpu_total = _get(_safe(lambda: j.cpu), "total")
    busy = [_num(_get(cpu_total, k)) for k in ("user", "nice", "system")]
    return sum(b for b in busy if b is not None) if any(b is not None for b in busy) else None


def _safe(fn: Any) -> Any:
    try:
        return fn()
    except Exception:
        return None
