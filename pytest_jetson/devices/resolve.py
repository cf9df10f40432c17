"""Which device a session tests, from the options and what detection found."""

from pathlib import Path
from typing import Any, Optional

from ..errors import ConfigError
from .catalog import get, normalise
from .detect import ROOT_ENV, Detection, detect, system_root
from .device import Device
from .profile import PowerMode, Profile

__all__ = ["DEFAULT_SIMULATED", "ROOT_ENV", "board_power_mode", "resolve_device", "system_root"]

DEFAULT_SIMULATED = "orin-nano-8gb"


def board_power_mode(profile: Profile, detection: Detection, requested: Any,
                     option: str = "--jetson-power-mode") -> PowerMode:
    """The power mode ``requested`` (name or nvpmodel id) as this board defines it: one of the
    profile's modes and, when the board's /etc/nvpmodel.conf is readable, a mode of that table
    under the same id. The plugin and ``pytest-jetson preflight`` both ask here, so they agree on
    what is valid. A ConfigError names the board's modes and the option to fix otherwise."""
    table = detection.mode_table
    on_board = [m for m in profile.power_modes if not table or table.get(m.id) == m.name]  # type: ignore[arg-type]
    listing = ", ".join(f"{m.name} (id {m.id})" for m in on_board) or "none of the profile's"
    try:
        mode = profile.power_mode(requested)
    except ConfigError:
        raise ConfigError(
            f"power mode {requested!r} does not exist on {profile.name}; this board's modes are: "
            f"{listing}. Pass one of them to {option} (by name or nvpmodel id)."
        ) from None
    if mode not in on_board:
        board = ", ".join(f"{name} (id {i})" for i, name in sorted(table.items()))
        raise ConfigError(
            f"power mode {mode.name} is not in this board's nvpmodel table (/etc/nvpmodel.conf: {board}); "
            f"pass one of those to {option}, or flash the firmware whose table has {mode.name}"
        )
    return mode


def resolve_device(requested: str = "auto", *, simulate: bool = False, power_mode: Optional[str] = None,
                   detection: Optional[Detection] = None, root: Optional[Path] = None) -> Device:
    """The device ``requested`` (``--jetson-device``), in ``power_mode`` (``--jetson-power-mode``).

    ``auto``: the detected board, else a simulated Orin Nano 8GB. A name: that board if it is
    the one detected, its simulation on a host, and a usage error on a different real board unless
    ``simulate`` is set (a test suite for one board silently measured on another is worse than
    useless)."""
    if detection is None:
        detection = detect(root if root is not None else system_root())
    requested = (requested or "auto").strip()
    board = detection.profile
    if normalise(requested) == "auto":
        if board is not None and not simulate:
            return _real(board, detection, power_mode)
        profile = board if board is not None else get(DEFAULT_SIMULATED)
        return _simulated(profile, power_mode)
    profile = get(requested)
    if board is None or simulate:
        if board is None and detection.is_jetson and not simulate:
            raise ConfigError(
                f"this machine looks like a Jetson ({detection.name}) but matches no known profile"
                f"{_why(detection)}; pass --jetson-simulate to simulate {profile.name} here, or add a "
                "profile for this board (`pytest-jetson devices --detect` shows what was read)"
            )
        return _simulated(profile, power_mode)
    if profile.id != board.id:
        raise ConfigError(
            f"--jetson-device {requested} asks for {profile.name}, but this board is "
            f"{board.name} ({detection.model_string or detection.part_number}). Run on a {profile.name}, use "
            f"--jetson-device {board.id} (or auto), or add --jetson-simulate to simulate "
            f"{profile.name} here."
        )
    return _real(board, detection, power_mode)


def _why(detection: Detection) -> str:
    return f" ({'; '.join(detection.notes)})" if detection.notes else ""


def _simulated(profile, power_mode: Optional[str]) -> Device:
    return Device(profile=profile, power_mode=profile.power_mode(power_mode), simulated=True)


def _real(profile, detection: Detection, power_mode: Optional[str]) -> Device:
    current = detection.power_mode
    if power_mode:
        expected = board_power_mode(profile, detection, power_mode)
        if current is not None and current not in (expected.name, str(expected.id)):
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
        fan_profile=detection.fan_profile,
        model_string=detection.model_string,
    )
