"""The device a session tests: a profile, its power mode, real or simulated, and its software."""

from dataclasses import dataclass
from typing import Any, Dict, Optional, Union

from .. import __version__
from .catalog import get
from .profile import PowerMode, Profile


@dataclass(frozen=True)
class Device:
    """The board under test. ``simulated`` is True when numbers come from ``pytest_jetson.sim``."""

    profile: Profile
    power_mode: PowerMode
    simulated: bool
    jetpack: Optional[str] = None
    l4t: Optional[str] = None
    tensorrt: Optional[str] = None
    jetson_clocks: Optional[bool] = None
    model_string: Optional[str] = None
    fan_profile: Optional[str] = None

    @property
    def name(self) -> str:
        return self.profile.name

    @property
    def id(self) -> str:
        return self.profile.id

    def fingerprint(self) -> Dict[str, Any]:
        """What a baseline must share with a run to be compared with it."""
        return {
            "device": self.profile.id,
            "power_mode": self.power_mode.name,
            "jetson_clocks": self.jetson_clocks,
            "jetpack": self.jetpack,
            "l4t": self.l4t,
            "tensorrt": self.tensorrt,
            "simulated": self.simulated,
            "plugin": __version__,
            # only where there is one: baselines recorded before it was read stay comparable
            **({"fan_profile": self.fan_profile} if self.fan_profile else {}),
        }

    def __str__(self) -> str:
        kind = "simulated" if self.simulated else "real"
        return f"{self.profile.name} ({kind}, power mode {self.power_mode.name})"

    def __repr__(self) -> str:
        return f"<Device {self.profile.id} mode={self.power_mode.name} simulated={self.simulated}>"

    def header_line(self) -> str:
        kind = "simulated" if self.simulated else "real"
        clocks = ""
        if self.jetson_clocks is not None and not self.simulated:
            clocks = " · jetson_clocks " + ("on" if self.jetson_clocks else "off")
        if self.fan_profile and not self.simulated:
            clocks += f" · fan {self.fan_profile}"
        return (
            f"jetson: {self.profile.name} ({kind}) · power mode {self.power_mode.name}{clocks}"
            f" · JetPack {self.jetpack or '-'} · TensorRT {self.tensorrt or '-'}"
        )


def simulated(name: Union[str, Profile] = "orin-nano", power_mode: Any = None) -> Device:
    """A simulated device by name (or profile) and power mode (default: the profile's default)."""
    profile = name if isinstance(name, Profile) else get(name)
    return Device(profile=profile, power_mode=profile.power_mode(power_mode), simulated=True)


def as_device(device: Union[str, Profile, Device], power_mode: Any = None) -> Device:
    """Accept what library callers pass (a name, a Profile or a Device) and return a Device."""
    if isinstance(device, Device):
        if power_mode is None:
            return device
        return Device(
            profile=device.profile, power_mode=device.profile.power_mode(power_mode),
            simulated=device.simulated, jetpack=device.jetpack, l4t=device.l4t,
            tensorrt=device.tensorrt, jetson_clocks=device.jetson_clocks,
            model_string=device.model_string, fan_profile=device.fan_profile,
        )
    return simulated(device, power_mode)
