"""Jetson devices: profiles (spec data), detection of a real board, and the session's Device."""

from .catalog import get, names, normalise, profiles
from .profile import PowerMode, Profile

__all__ = ["PowerMode", "Profile", "get", "names", "normalise", "profiles"]
