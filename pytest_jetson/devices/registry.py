"""The known devices: every profile in ``profiles/``, found by id or friendly alias."""

import difflib
import re
from functools import lru_cache
from typing import Dict, List

from ..errors import ConfigError
from .profile import PROFILE_DIR, Profile, load_profile


def normalise(name: str) -> str:
    """'Orin_Nano 8GB' -> 'orin-nano-8gb': users type names many ways."""
    return re.sub(r"[^a-z0-9]+", "-", str(name).strip().lower()).strip("-")


@lru_cache(maxsize=None)
def profiles() -> Dict[str, Profile]:
    """Every profile by id, in file-name order."""
    found = {}
    for path in sorted(PROFILE_DIR.glob("*.json")):
        profile = load_profile(path)
        found[profile.id] = profile
    return found


@lru_cache(maxsize=None)
def _alias_table() -> Dict[str, str]:
    table: Dict[str, str] = {}
    for profile in profiles().values():
        for key in (profile.id, profile.name, *profile.aliases):
            k = normalise(key)
            owner = table.get(k)
            if owner is not None and owner != profile.id:
                raise ConfigError(
                    f"device alias {key!r} names both {owner} and {profile.id}; fix {profile.path}"
                )
            table[k] = profile.id
    return table


def names() -> List[str]:
    return list(profiles())


def get(name: str) -> Profile:
    """A profile by id or alias; an unknown name lists the known ones and suggests the closest."""
    key = normalise(name)
    table = _alias_table()
    if key in table:
        return profiles()[table[key]]
    close = difflib.get_close_matches(key, list(table), n=1, cutoff=0.5)
    hint = f" Did you mean {table[close[0]]!r}?" if close else ""
    raise ConfigError(
        f"unknown Jetson device {name!r}.{hint} Known devices: {', '.join(names())} "
        "(run `pytest-jetson devices` for the table, with aliases and power modes)."
    )
