"""Preflight: is this board fit to run the perf gate right now? (``pytest-jetson preflight``)

A self-hosted runner's perf gate is only as good as the board's state: the wrong power mode,
jetson_clocks off, or another job busy on the GPU makes every comparison meaningless. Each check
prints one line; any failure exits 1 with the command that fixes it.
"""

import json
import time
from pathlib import Path
from typing import Iterable, List, Optional, Set, Tuple

from ..errors import ConfigError
from .detect import Detection, _read
from .registry import get

GPU_LOAD_FILES = ("/sys/devices/gpu.0/load", "/sys/devices/platform/gpu.0/load",
                  "/sys/devices/17000000.ga10b/load", "/sys/devices/17000000.gv11b/load",
                  "/sys/devices/platform/17000000.gpu/load")


def read_gpu_load(root: Path) -> Optional[float]:
    """GPU load in percent (the file holds per-mille), None where the board has no such file."""
    for path in GPU_LOAD_FILES:
        text = _read(root, path)
        if text and text.strip().isdigit():
            return int(text) / 10.0
    return None


def read_cpu_load(root: Path) -> Optional[float]:
    """The 1-minute load average per online CPU, from /proc/loadavg and /proc/cpuinfo."""
    text = _read(root, "/proc/loadavg")
    if not text:
        return None
    try:
        load = float(text.split()[0])
    except (ValueError, IndexError):
        return None
    cpuinfo = _read(root, "/proc/cpuinfo") or ""
    cpus = max(1, cpuinfo.count("processor\t:") or cpuinfo.count("processor :") or 1)
    return load / cpus


def baseline_power_modes(directory: Path) -> Set[str]:
    """The power modes the stored baselines were recorded under (from their fingerprints)."""
    modes: Set[str] = set()
    for path in sorted(Path(directory).rglob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for entry in (data.get("entries") or {}).values():
            mode = (entry.get("fingerprint") or {}).get("power_mode")
            if mode:
                modes.add(str(mode))
    return modes


def run_checks(found: Detection, root: Path, device: Optional[str], power_mode: Optional[str],
               require_clocks: bool, max_gpu_load: float, max_cpu_load: float,
               baselines: Optional[Path], samples: int = 3,
               interval: float = 0.5) -> List[Tuple[bool, str]]:
    results: List[Tuple[bool, str]] = []
    if not found.is_jetson:
        results.append((False, "not a Jetson: /proc/device-tree/model and /etc/nv_tegra_release are "
                               "absent. Run the perf gate on a runner labelled for a Jetson board."))
        return results
    if found.profile is None:
        results.append((False, f"board {found.model_string!r} matches no known profile: add one to "
                               "pytest_jetson/devices/profiles/"))
        return results
    results.append((True, f"board: {found.profile.name} ({found.model_string}), "
                          f"JetPack {found.jetpack or '-'}, TensorRT {found.tensorrt or '-'}"))
    if device:
        want = get(device)
        ok = want.id == found.profile.id
        results.append((ok, f"device: expected {want.name}, found {found.profile.name}" if not ok
                        else f"device: {want.name} as expected"))
    expected_mode = power_mode
    if baselines is not None and Path(baselines).is_dir():
        recorded = baseline_power_modes(Path(baselines))
        if expected_mode and recorded:
            want = found.profile.power_mode(expected_mode).name
            if want not in recorded:
                results.append((False, f"no baselines in {baselines} were recorded in power mode {want} "
                                       f"(they were in {', '.join(sorted(recorded))}); record them "
                                       "with --jetson-update-baselines in that mode"))
        elif len(recorded) > 1:
            results.append((False, f"baselines in {baselines} were recorded in several power modes "
                                   f"({', '.join(sorted(recorded))}); pass --power-mode to say which "
                                   "one this run checks"))
        elif recorded:
            expected_mode = recorded.pop()
    if expected_mode:
        current = found.power_mode
        want_mode = found.profile.power_mode(expected_mode)
        try:
            ok = current is not None and found.profile.power_mode(current).name == want_mode.name
        except ConfigError:
            ok = False
        if ok:
            results.append((True, f"power mode: {want_mode.name}"))
        else:
            results.append((False, f"power mode: the board runs {current or 'an unknown mode'}, the "
                                   f"baselines need {want_mode.name}: sudo nvpmodel -m {want_mode.id}"))
    if require_clocks:
        if found.jetson_clocks:
            results.append((True, "jetson_clocks: on"))
        else:
            state = "off" if found.jetson_clocks is False else "unknown (no GPU devfreq files)"
            results.append((False, f"jetson_clocks: {state}: sudo jetson_clocks"))
    gpu = [read_gpu_load(root) for _ in _spaced(samples, interval)]
    gpu_values = [g for g in gpu if g is not None]
    if gpu_values:
        busiest = max(gpu_values)
        results.append((busiest <= max_gpu_load,
                        f"GPU idle: load {busiest:.0f}% (limit {max_gpu_load:.0f}%)" if busiest <= max_gpu_load
                        else f"GPU busy: load {busiest:.0f}% > {max_gpu_load:.0f}%: another job is using the "
                             "GPU; wait for it or stop it (tegrastats shows GR3D_FREQ)"))
    cpu = read_cpu_load(root)
    if cpu is not None:
        results.append((cpu <= max_cpu_load,
                        f"CPU idle: load {cpu:.2f} per core (limit {max_cpu_load:.2f})" if cpu <= max_cpu_load
                        else f"CPU busy: load {cpu:.2f} per core > {max_cpu_load:.2f}: another job is "
                             "running on the board; wait for it or stop it"))
    return results


def _spaced(n: int, interval: float) -> Iterable[int]:
    for i in range(max(1, n)):
        if i:
            time.sleep(interval)
        yield i
