"""Where a test's baseline lives and under which key: plain string work, no numpy, so the plugin
can tell whether a run touched any baseline without loading the gate.

``baselines/<device id>/<test module path>.json``, one entry per test node id, or
``<node id>|<measurement name>`` when a test records several measurements.
"""

import os
from pathlib import Path, PurePath
from typing import Any, Dict, List, Sequence


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
