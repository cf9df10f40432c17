"""Where a test's baseline lives and under which key: plain string work, no numpy, so the plugin
can tell whether a run touched any baseline without loading the gate.

``baselines/<device id>/<test module path>.json``, one entry per test node id, or
``<node id>|<measurement name>`` when a test records several measurements.
"""

from pathlib import Path
from typing import List, Sequence


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def baseline_path(directory: Path, nodeid: str) -> Path:
    """The file of ``nodeid``'s module under one device's ``directory``."""
    # a test outside the rootdir ("../x/test_y.py") must not write outside the baselines
    parts = ["_up_" if p == ".." else p for p in module_of(nodeid).split("/") if p not in ("", ".")]
    return Path(directory).joinpath(*parts[:-1], parts[-1] + ".json") if parts else Path(directory) / "_.json"


def entry_keys(nodeid: str, names: Sequence[str]) -> List[str]:
    """The baseline key of each measurement of one test (``names``: the measurements' names):
    the node id when the test recorded one, else ``<node id>|<name>`` (``<name>#<i>`` where names
    repeat)."""
    if len(names) == 1:
        return [nodeid]
    names = [name or f"m{i}" for i, name in enumerate(names)]
    keys = []
    for i, name in enumerate(names):
        sub = name if names.count(name) == 1 else f"{name}#{i}"
        keys.append(f"{nodeid}|{sub}")
    return keys


def key_test(key: str) -> str:
    """The node id a baseline key belongs to."""
    return key.split("|", 1)[0]


def key_label(key: str) -> str:
    """The measurement part of a key ('' for a test's only measurement)."""
    return key.split("|", 1)[1] if "|" in key else ""
