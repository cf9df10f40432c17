"""Preflight: is this board fit to run the perf gate right now? (``pytest-jetson preflight``)

A self-hosted runner's perf gate is only as good as the board's state: the wrong board or power
mode, jetson_clocks off, another job busy on the GPU or CPU, a board near its thermal trip points
or short of memory makes every comparison meaningless. Each check gives one line; a failure says
the command that fixes it. Checks that cannot be made on this board (no GPU load file on Thor, no
trip points) say so instead of passing silently.
"""

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, List, Optional, Set, Tuple

from .devices.catalog import get
from .devices.detect import Detection, read_text
from .devices.resolve import board_power_mode
from .errors import ConfigError
from .telemetry.sysfs import find_board_files, find_zones, read_gpu_load_pct, read_temps
from .units import format_bytes

OK, FAIL, SKIP, NOTE = "ok", "FAIL", "skip", "note"

#: Defaults of the thresholds (the CLI options document them).
MAX_GPU_LOAD_PCT = 10.0
MAX_CPU_LOAD_PER_CORE = 0.5
MIN_THERMAL_HEADROOM_C = 15.0
MIN_FREE_MEMORY = 1024 ** 3


@dataclass(frozen=True)
class Check:
    """One preflight line: what was checked, the verdict, what was found and the fix."""

    name: str
    status: str
    message: str
    fix: str = ""

    @property
    def ok(self) -> bool:
        return self.status != FAIL

    def line(self) -> str:
        text = f"{self.name}: {self.message}"
        return f"{text}: {self.fix}" if self.fix else text


def read_gpu_load(root: Path) -> Optional[float]:
    """GPU load in percent (the file holds per mille), None where the board has no such file."""
    return read_gpu_load_pct(find_board_files(Path(root)))


def online_cpus(root: Path) -> Optional[int]:
    """Online CPUs from /sys/devices/system/cpu/online ('0-3,5'), else /proc/cpuinfo."""
    text = read_text(root, "/sys/devices/system/cpu/online", limit=256)
    if text:
        count = 0
        try:
            for part in text.split(","):
                lo, _, hi = part.partition("-")
                count += (int(hi) - int(lo) + 1) if hi else 1
        except ValueError:
            count = 0
        if 0 < count <= 4096:
            return count
    cpuinfo = read_text(root, "/proc/cpuinfo", limit=256 * 1024) or ""
    count = sum(1 for line in cpuinfo.splitlines() if line.split(":")[0].strip() == "processor")
    return count or None


def read_cpu_load(root: Path) -> Optional[float]:
    """The 1-minute load average per online CPU, from /proc/loadavg."""
    text = read_text(root, "/proc/loadavg", limit=256)
    if not text:
        return None
    try:
        load = float(text.split()[0])
    except (ValueError, IndexError):
        return None
    if not 0 <= load < 1e6:
        return None
    return load / (online_cpus(root) or 1)


def baseline_power_modes(directory: Path) -> Set[str]:
    """The power modes the stored baselines were recorded under (from their fingerprints)."""
    modes: Set[str] = set()
    for path in sorted(Path(directory).rglob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        entries = data.get("entries") if isinstance(data, dict) else None
        for entry in (entries or {}).values():
            mode = (entry.get("fingerprint") or {}).get("power_mode") if isinstance(entry, dict) else None
            if mode:
                modes.add(str(mode))
    return modes


def run_checks(found: Detection, root: Path, device: Optional[str] = None, power_mode: Optional[str] = None,
               require_clocks: bool = False, max_gpu_load: float = MAX_GPU_LOAD_PCT,
               max_cpu_load: float = MAX_CPU_LOAD_PER_CORE, baselines: Optional[Path] = None,
               samples: int = 3, interval: float = 0.5,
               min_thermal_headroom: float = MIN_THERMAL_HEADROOM_C,
               min_free_memory: int = MIN_FREE_MEMORY) -> List[Check]:
    """Every check, in order. The identity checks come first: on a host or an unknown board the
    others are not made (their numbers would describe the wrong machine)."""
    root = Path(root)
    checks: List[Check] = [Check("files", NOTE, note) for note in found.notes]
    if not found.is_jetson:
        checks.append(Check("board", FAIL, "not a Jetson: /proc/device-tree/compatible names no NVIDIA "
                                           "module and /etc/nv_tegra_release is absent",
                            "run the perf gate on a runner labelled for a Jetson board"))
        return checks
    if found.profile is None:
        checks.append(Check("board", FAIL, f"{found.name} matches no known profile",
                            "add one under pytest_jetson/devices/profiles/ (`pytest-jetson devices "
                            "--detect` shows what was read)"))
        return checks
    profile = found.profile
    ident = ", ".join(x for x in (found.part_number, repr(found.model_string) if found.model_string else None) if x)
    checks.append(Check("board", OK, f"{profile.name} ({ident}), JetPack {found.jetpack or '-'}"
                                     f" (L4T {found.l4t or '-'}), TensorRT {found.tensorrt or '-'}"))
    if device:
        want = get(device)
        if want.id == profile.id:
            checks.append(Check("device", OK, f"{want.name} as expected"))
        else:
            checks.append(Check("device", FAIL, f"expected {want.name}, found {profile.name}",
                                f"run this job on a {want.name} runner, or pass --device {profile.id}"))
    checks.append(_power_mode(found, power_mode, baselines))
    checks.append(_clocks(found, require_clocks))
    checks.append(_gpu_idle(root, max_gpu_load, samples, interval))
    checks.append(_cpu_idle(root, max_cpu_load))
    checks.append(_thermal(root, min_thermal_headroom))
    checks.append(_memory(root, found, min_free_memory))
    return checks


#: The checks that time can fix: a board cools down and another job ends (``--wait``).
WAITABLE = ("GPU idle", "CPU idle", "thermal headroom")
#: The shortest pause between two re-checks (a 0 s poll would spin on the sysfs files).
MIN_POLL_S = 0.1


def recheck(root: Path, max_gpu_load: float = MAX_GPU_LOAD_PCT, max_cpu_load: float = MAX_CPU_LOAD_PER_CORE,
            min_thermal_headroom: float = MIN_THERMAL_HEADROOM_C, samples: int = 3,
            interval: float = 0.5) -> List[Check]:
    """The checks in ``WAITABLE`` again, as ``run_checks`` makes them."""
    return [_gpu_idle(Path(root), max_gpu_load, samples, interval), _cpu_idle(Path(root), max_cpu_load),
            _thermal(Path(root), min_thermal_headroom)]


def wait_until_ready(checks: List[Check], again: Callable[[], List[Check]], bound: float, poll: float = 5.0,
                     now: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                     say: Callable[[str], None] = print) -> Tuple[List[Check], float]:
    """Re-make the failing ``WAITABLE`` checks (with ``again``) every ``poll`` seconds until they
    pass or ``bound`` seconds have passed, as NVIDIA's benchmarks wait for a board to settle.
    Returns the checks with the last readings in place and the seconds waited. Only a board whose
    other checks pass is waited for: no wait makes the wrong board or power mode right."""
    pending = _waiting(checks)
    if not pending or bound <= 0:
        return checks, 0.0
    lasting = [c.name for c in checks if not c.ok and c.name not in WAITABLE]
    if lasting:
        say(f"wait  not waiting: {', '.join(lasting)} failed too, and no wait fixes that")
        return checks, 0.0
    say(f"wait  up to {bound:g} s for: {', '.join(c.name for c in pending)}")
    checks, waited = _poll(checks, again, bound, max(poll, MIN_POLL_S), now, sleep)
    pending = _waiting(checks)
    if pending:
        say(f"wait  gave up after {waited:.3g} s: {', '.join(c.name for c in pending)} still failing")
    else:
        say(f"wait  ready after {waited:.3g} s")
    return checks, waited


def _poll(checks: List[Check], again: Callable[[], List[Check]], bound: float, poll: float,
          now: Callable[[], float], sleep: Callable[[float], None]) -> Tuple[List[Check], float]:
    start = now()
    while _waiting(checks) and now() - start < bound:
        sleep(min(poll, max(0.0, bound - (now() - start))))
        fresh = {c.name: c for c in again()}
        checks = [fresh.get(c.name, c) for c in checks]
    return checks, now() - start


def _waiting(checks: List[Check]) -> List[Check]:
    return [c for c in checks if not c.ok and c.name in WAITABLE]


def _power_mode(found: Detection, requested: Optional[str], baselines: Optional[Path]) -> Check:
    profile = found.profile
    assert profile is not None
    current = found.power_mode
    expected, why = requested, "--power-mode asks for"
    if baselines is not None and Path(baselines).is_dir():
        recorded = baseline_power_modes(Path(baselines))
        if requested and recorded:
            try:
                want = board_power_mode(profile, found, requested, option="--power-mode").name
            except ConfigError as exc:
                return Check("power mode", FAIL, str(exc))
            if want not in recorded:
                return Check("power mode", FAIL, f"no baselines in {baselines} were recorded in power mode {want} "
                                                 f"(they were in {', '.join(sorted(recorded))})",
                             "record them with --jetson-update-baselines in that mode")
        elif len(recorded) > 1:
            return Check("power mode", FAIL, f"baselines in {baselines} were recorded in several power modes "
                                             f"({', '.join(sorted(recorded))})",
                         "pass --power-mode to say which one this run checks")
        elif recorded:
            expected, why = recorded.pop(), f"the baselines in {baselines} were recorded in"
    now = f"{current} (id {found.power_mode_id})" if current is not None else "unknown"
    if not expected:
        return Check("power mode", SKIP, f"the board runs {now}; nothing to check it against",
                     "pass --power-mode or --baselines")
    try:
        want = board_power_mode(profile, found, expected, option="--power-mode")
    except ConfigError as exc:
        return Check("power mode", FAIL, str(exc))
    if current is None:
        return Check("power mode", FAIL, f"{why} {want.name}, but the board's mode is unknown "
                                         "(/var/lib/nvpmodel/status unreadable)",
                     f"check with `sudo nvpmodel -q`; set it with `sudo nvpmodel -m {want.id}`")
    if current in (want.name, str(want.id)):
        return Check("power mode", OK, f"{want.name} (id {want.id}); {why} {want.name}")
    return Check("power mode", FAIL, f"the board runs {now}; {why} {want.name}",
                 f"sudo nvpmodel -m {want.id}")


def _clocks(found: Detection, required: bool) -> Check:
    state = {True: "on", False: "off", None: "unknown (no GPU devfreq files)"}[found.jetson_clocks]
    if not required:
        return Check("jetson_clocks", SKIP, f"{state}; not required", "pass --require-jetson-clocks to require it")
    if found.jetson_clocks:
        return Check("jetson_clocks", OK, "on")
    return Check("jetson_clocks", FAIL, state, "sudo jetson_clocks")


def _gpu_idle(root: Path, limit: float, samples: int, interval: float) -> Check:
    loads = [read_gpu_load(root) for _ in _spaced(samples, interval)]
    values = [x for x in loads if x is not None]
    if not values:
        return Check("GPU idle", SKIP, "no GPU load file on this board (Thor reports GPU load through NVML)",
                     "check it by hand with `nvidia-smi` or `tegrastats`")
    busiest = max(values)
    if busiest <= limit:
        return Check("GPU idle", OK, f"load {busiest:.0f}% (limit {limit:.0f}%)")
    return Check("GPU idle", FAIL, f"load {busiest:.0f}% > {limit:.0f}%: another job is using the GPU",
                 "wait for it or stop it (tegrastats shows GR3D_FREQ)")


def _cpu_idle(root: Path, limit: float) -> Check:
    load = read_cpu_load(root)
    if load is None:
        return Check("CPU idle", SKIP, "/proc/loadavg unreadable")
    if load <= limit:
        return Check("CPU idle", OK, f"load {load:.2f} per core (limit {limit:.2f})")
    return Check("CPU idle", FAIL, f"load {load:.2f} per core > {limit:.2f}: another job is running on the board",
                 "wait for it or stop it (`top` shows which)")


def _thermal(root: Path, min_headroom: float) -> Check:
    zones = find_zones(root)
    temps = read_temps(zones)
    margins = [(z.trip_c - temps[z.kind], z.kind, temps[z.kind], z.trip_c)
               for z in zones if z.trip_c is not None and z.kind in temps]
    if not margins:
        return Check("thermal headroom", SKIP, "no thermal zone with a trip point and a reading")
    margin, kind, temp, trip = min(margins)
    text = f"{margin:.1f} C ({kind} at {temp:.1f} C, trip point {trip:.0f} C)"
    if margin >= min_headroom:
        return Check("thermal headroom", OK, f"{text}; at least {min_headroom:.0f} C needed")
    return Check("thermal headroom", FAIL, f"{text} < {min_headroom:.0f} C: the clocks would throttle during the run",
                 "let the board cool down and check its fan (`sudo jetson_clocks --fan` runs it at full speed)")


def _available_memory(root: Path) -> Tuple[Optional[int], str]:
    """MemAvailable in bytes, or None and why it cannot be read. Any amount from 0 up is
    believed (little available is what the check is for); text that is not a number is not."""
    text = read_text(root, "/proc/meminfo", limit=64 * 1024) or ""
    m = re.search(r"^MemAvailable:[ \t]*(\S*)[ \t]*kB[ \t]*$", text, re.MULTILINE)
    if m is None:
        return None, "/proc/meminfo has no MemAvailable line (in kB)"
    value = m.group(1)
    if not (value.isascii() and value.isdigit()) or len(value) > 16:
        shown = repr(value) if len(value) <= 24 else f"{value[:24]}... ({len(value)} characters)"
        return None, f"/proc/meminfo: MemAvailable {shown} kB is not a number of kB"
    return int(value) * 1024, ""


def _memory(root: Path, found: Detection, minimum: int) -> Check:
    available, why = _available_memory(root)
    if available is None:
        return Check("free memory", FAIL, f"{why}: cannot tell whether the run has memory",
                     "check /proc/meminfo (`cat /proc/meminfo`); in a container, mount the host's")
    total = f" of {format_bytes(found.memory_bytes)}" if found.memory_bytes else ""
    text = f"{format_bytes(available)} available{total}"
    if available >= minimum:
        return Check("free memory", OK, f"{text} (at least {format_bytes(minimum)} needed)")
    return Check("free memory", FAIL, f"{text} < {format_bytes(minimum)}: engines and pools would swap or fail",
                 "stop what holds the memory (`free -h`; `ps aux --sort=-rss | head`)")


def _spaced(n: int, interval: float) -> Iterable[int]:
    for i in range(max(1, n)):
        if i:
            time.sleep(interval)
        yield i
