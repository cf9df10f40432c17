"""Which device a session tests, from the options and what detection found."""

import os
from pathlib import Path
from typing import Optional

from ..errors import ConfigError
from ..settings import Settings
from .detect import Detection, detect
from .device import Device
from .registry import get, normalise

DEFAULT_SIMULATED = "orin-nano-8gb"

#: Where detection reads the board's files: "/" on a board; tests and containers that mount a
#: board's files elsewhere point it at that directory.
ROOT_ENV = "PYTEST_JETSON_SYSROOT"


def system_root() -> Path:
    return Path(os.environ.get(ROOT_ENV) or "/")


def resolve_device(settings: Settings, detection: Optional[Detection] = None,
                   root: Optional[Path] = None) -> Device:
    """``auto``: the detected board, else a simulated Orin Nano 8GB. A name: that board if it is
    the one detected, its simulation on a host, and a usage error on a different real board unless
    ``simulate`` is set (a test suite for one board silently measured on another is worse than
    useless)."""
    if detection is None:
        detection = detect(root if root is not None else system_root())
    requested = (settings.device or "auto").strip()
    board = detection.profile
    if normalise(requested) == "auto":
        if board is not None and not settings.simulate:
            return _real(board, detection, settings.power_mode)
        profile = board if board is not None else get(DEFAULT_SIMULATED)
        return _simulated(profile, settings.power_mode)
    profile = get(requested)
    if board is None or settings.simulate:
        if board is None and detection.is_jetson and not settings.simulate:
            raise ConfigError(
                f"this machine looks like a Jetson ({detection.model_string or 'L4T ' + str(detection.l4t)}) "
                f"but matches no known profile; pass --jetson-simulate to simulate {profile.name} "
                "here, or add a profile for this board"
            )
        return _simulated(profile, settings.power_mode)
    if profile.id != board.id:
        raise ConfigError(
            f"--jetson-device {requested} asks for {profile.name}, but this board is "
            f"{board.name} ({detection.model_string}). Run on a {profile.name}, use "
            f"--jetson-device {board.id} (or auto), or add --jetson-simulate to simulate "
            f"{profile.name} here."
        )
    return _real(board, detection, settings.power_mode)


def _simulated(profile, power_mode: Optional[str]) -> Device:
    return Device(profile=profile, power_mode=profile.power_mode(power_mode), simulated=True)


def _real(profile, detection: Detection, power_mode: Optional[str]) -> Device:
    current = detection.power_mode
    if power_mode:
        expected = profile.power_mode(power_mode)
        if current is not None and profile.power_mode(current).name != expected.name:
            raise ConfigError(
                f"--jetson-power-mode {power_mode}: the board runs power mode {current}, not "
                f"{expected.name}. Set it with `sudo nvpmodel -m {expected.id}` (then "
                "`sudo jetson_clocks`), or drop the option to test the current mode."
            )
        mode = expected
    elif current is not None:
        try:
            mode = profile.power_mode(current)
        except ConfigError:
            raise ConfigError(
                f"the board's current power mode {current!r} is not in the {profile.name} profile "
                f"({', '.join(profile.mode_names())}); set a known mode with `sudo nvpmodel -m ID` "
                "or pass --jetson-simulate"
            ) from None
    else:
        mode = profile.default_mode
    return Device(
        profile=profile, power_mode=mode, simulated=False, jetpack=detection.jetpack,
        l4t=detection.l4t, tensorrt=detection.tensorrt, jetson_clocks=detection.jetson_clocks,
        model_string=detection.model_string,
    )
