"""Jetson devices: profiles (spec data), detection of a real board, and the session's Device."""

from .profile import PowerMode, Profile
from .registry import get, names, normalise, profiles

__all__ = ["PowerMode", "Profile", "get", "names", "normalise", "profiles"]
