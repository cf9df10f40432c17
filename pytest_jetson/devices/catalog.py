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


def _natural(text: str) -> List[object]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def names() -> List[str]:
    """Every device id in natural order (orin-nano-4gb before orin-nano-8gb before ...-16gb)."""
    return sorted(profiles(), key=_natural)


def get(name: str) -> Profile:
    """A profile by id or alias; an unknown name lists the known ones and suggests the closest."""
    key = normalise(name)
    table = _alias_table()
    if key in table:
        return profiles()[table[key]]
    # aliases are what people type: suggest the closest names, aliases included, with what they name
    shown: Dict[str, str] = {}
    for c in difflib.get_close_matches(key, list(table), n=6, cutoff=0.5):
        if table[c] not in shown and len(shown) < 3:
            shown[table[c]] = repr(c) if c == table[c] else f"{c!r} ({table[c]})"
    hint = f" Did you mean {' or '.join(shown.values())}?" if shown else ""
    raise ConfigError(
        f"unknown Jetson device {name!r}.{hint} Known devices: {', '.join(names())} "
        "(run `pytest-jetson devices` for the table, with aliases and power modes)."
    )
