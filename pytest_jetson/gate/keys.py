"""Where a test's baseline lives and under which key: plain string work, no numpy, so the plugin
can tell whether a run touched any baseline without loading the gate.

``baselines/<device id>/<test module path>.json``, one entry per test node id, or
``<node id>|<measurement name>`` when a test records several measurements.
"""

import os
from pathlib import Path, PurePath
from typing import Any, Container, Dict, List, Sequence, Tuple


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


def split_key(key: str, known: Container[str] = ()) -> Tuple[str, str]:
    """A baseline key's node id and measurement name ('' for a test's only measurement).

    A ``|`` inside a parametrize id (``test_x[a|b]``) is part of the node id, not the separator:
    the test's name ends at its first ``[`` or ``|``, and its parameters at the first ``]`` that
    ends the key or is followed by ``|``. Where the node ids the key may belong to are ``known``
    (a set of those a session collected), the longest that the key starts with decides, whatever its id
    holds. Keys are written as they always were, so every stored file reads the same."""
    if key in known:
        return key, ""
    cut = key.rfind("|")
    while cut > 0 and known:
        if key[:cut] in known:
            return key[:cut], key[cut + 1:]
        cut = key.rfind("|", 0, cut)
    start = key.find("::")
    if start < 0:
        nodeid, _, label = key.partition("|")
        return nodeid, label
    name_end = len(key)
    for i in range(start + 2, len(key)):
        if key[i] in "[|":
            name_end = i
            break
    if name_end == len(key) or key[name_end] == "|":
        return key[:name_end], key[name_end + 1:]
    end = key.find("]", name_end)
    while end >= 0 and end + 1 < len(key) and key[end + 1] != "|":
        end = key.find("]", end + 1)
    if end < 0:  # no parameters' end: not a key this package wrote; read it as it was
        nodeid, _, label = key.partition("|")
        return nodeid, label
    return key[:end + 1], key[end + 2:]


def key_test(key: str, known: Container[str] = ()) -> str:
    """The node id a baseline key belongs to (``split_key``)."""
    return split_key(key, known)[0]


def key_label(key: str) -> str:
    """The measurement part of a key ('' for a test's only measurement)."""
    return split_key(key)[1]


def relative_to(path: str, root: Any) -> str:
    """An absolute path inside ``root`` as a relative POSIX path (as committed files and reports
    show it, the same on every machine); anything else unchanged."""
    if not path or not os.path.isabs(path):
        return path
    try:
        rel = os.path.relpath(path, str(root))
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else PurePath(rel).as_posix()


def relative_models(d: Dict[str, Any], root: Any) -> Dict[str, Any]:
    """A fingerprint, environment or serialised measurement with its model paths relative to the
    project root (nested environments and pool workers too)."""
    out = dict(d)
    if isinstance(out.get("model"), str):
        out["model"] = relative_to(out["model"], root)
    if isinstance(out.get("environment"), dict):
        out["environment"] = relative_models(out["environment"], root)
    if isinstance(out.get("workers"), list):
        out["workers"] = [relative_models(w, root) if isinstance(w, dict) else w for w in out["workers"]]
    return out


PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "pytest.ini", ".git")


def project_root(start: Any) -> Path:
    """The project a path belongs to: the nearest ancestor holding a project marker (pyproject.toml,
    setup.py, setup.cfg, tox.ini, pytest.ini or .git), else the path's own directory."""
    p = Path(start).resolve()
    here = p if p.is_dir() else p.parent
    for d in (here, *here.parents):
        if any((d / m).exists() for m in PROJECT_MARKERS):
            return d
    return here


def baseline_key(rootdir: Any, nodeid: str, project: Any = None) -> str:
    """The baseline key of a pytest node id, independent of how pytest was invoked: the test
    module's path relative to the project (``project``, else ``project_root`` of the module), then
    the rest of the node id. Two invocations whose rootdirs differ (an ini file's directory, or
    the common ancestor of the arguments) name the same test the same way."""
    module, sep, rest = nodeid.partition("::")
    path = (Path(rootdir) / module).resolve() if module else Path(rootdir).resolve()
    base = Path(project).resolve() if project is not None else project_root(path)
    try:
        rel = path.relative_to(base).as_posix()
    except ValueError:
        rel = os.path.relpath(str(path), str(base)).replace(os.sep, "/")
    return rel + sep + rest
