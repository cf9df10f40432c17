"""Where a run's numbers come from beyond the board's model: the commit of the code under test and
the machine that measured it.

* ``commit_info(where)``: the commit, as pytest-benchmark's ``commit_info`` names it: ``id`` (the
  full hash), ``branch``, ``dirty`` (tracked files changed since the commit), ``time`` (commit
  time) and ``author_time`` (ISO 8601), ``project`` (the repository's directory name) and
  ``source`` (``git``, ``github`` when only GitHub Actions' variables said it, or None). Read with
  ``git`` run directly (no shell) under a timeout; a directory that is no repository, a missing
  ``git`` or a ``git`` that refuses (an unsafe owner) is "no commit", never an error. In GitHub
  Actions a detached or shallow checkout names its branch from ``GITHUB_HEAD_REF`` (a pull
  request's branch) or ``GITHUB_REF_NAME``, and ``GITHUB_SHA`` stands in when git cannot say.
* ``machine_info()``: the hostname and the board's serial number where the device tree has one
  (``devices.detect.read_serial``). Real runs carry both in their fingerprint (``identity``) so
  several boards of one model can be told apart and pooled; the gate never compares them
  (``gate.checks.FINGERPRINT`` does not list them), or two boards could never share a baseline.
"""

import os
import socket
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Union

from .devices.detect import read_serial

#: seconds one git command may take (a repository on a slow network disk, a hung credential helper)
GIT_TIMEOUT = 10.0
#: digits of a commit id shown to people
SHORT = 7

COMMIT_FIELDS = ("id", "branch", "dirty", "time", "author_time", "project", "source")


def _git_env() -> Dict[str, str]:
    env = dict(os.environ)
    # never wait for a password or an editor; messages in one language
    env.update(GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="", LC_ALL="C", LANG="C", GIT_OPTIONAL_LOCKS="0")
    return env


def _git(args: List[str], cwd: Path, timeout: float) -> Optional[str]:
    """git's output, stripped; None when git is missing, fails or takes longer than ``timeout``."""
    try:
        proc = subprocess.run(["git", *args], cwd=str(cwd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, timeout=timeout, env=_git_env())
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", errors="replace").strip()


def no_commit() -> Dict[str, Any]:
    return dict.fromkeys(COMMIT_FIELDS)


def _from_git(where: Path, timeout: float) -> Optional[Dict[str, Any]]:
    head = _git(["rev-parse", "--verify", "--quiet", "HEAD"], where, timeout)
    if not head:  # no repository, no commit yet, or no git
        return None
    top = _git(["rev-parse", "--show-toplevel"], where, timeout) or ""
    branch = _git(["rev-parse", "--abbrev-ref", "HEAD"], where, timeout)
    times = (_git(["show", "-s", "--format=%cI%n%aI", "HEAD"], where, timeout) or "").splitlines()
    status = _git(["status", "--porcelain", "--untracked-files=no"], where, timeout)
    return {
        "id": head,
        "branch": None if branch in (None, "", "HEAD") else branch,  # HEAD: detached
        "dirty": None if status is None else bool(status),
        "time": times[0] if len(times) > 0 else None,
        "author_time": times[1] if len(times) > 1 else None,
        "project": Path(top).name if top else None,
        "source": "git",
    }


def commit_info(where: Union[str, Path, None] = None, environ: Optional[Mapping[str, str]] = None,
                timeout: float = GIT_TIMEOUT) -> Dict[str, Any]:
    """The commit checked out at ``where`` (default: the working directory); every field None
    (``no_commit``) when nothing says."""
    env = os.environ if environ is None else environ
    info = _from_git(Path(where or "."), timeout)
    in_actions = env.get("GITHUB_ACTIONS") == "true"
    if info is None:
        if not (in_actions and env.get("GITHUB_SHA")):
            return no_commit()
        info = dict(no_commit(), id=env["GITHUB_SHA"], source="github",
                    project=(env.get("GITHUB_REPOSITORY") or "").rsplit("/", 1)[-1] or None)
    if info["branch"] is None and in_actions:
        # a pull request's checkout is its merge commit, detached: name the pull request's branch
        info["branch"] = env.get("GITHUB_HEAD_REF") or env.get("GITHUB_REF_NAME") or None
    return info


def short(commit: Optional[Mapping[str, Any]]) -> Optional[str]:
    """The commit's id as people read it (7 digits), or None."""
    cid = (commit or {}).get("id")
    return str(cid)[:SHORT] if cid else None


def commit_text(commit: Optional[Mapping[str, Any]]) -> str:
    """``commit abc1234 (main, dirty)``, or ``no commit``."""
    cid = short(commit)
    if not cid:
        return "no commit"
    commit = commit or {}
    words = [str(commit["branch"])] if commit.get("branch") else []
    if commit.get("dirty"):
        words.append("dirty")
    return f"commit {cid}" + (f" ({', '.join(words)})" if words else "")


def machine_info(root: Optional[Path] = None) -> Dict[str, Any]:
    """The machine that ran: its hostname and the board's serial number (None where not readable)."""
    try:
        hostname: Optional[str] = socket.gethostname() or None
    except OSError:
        hostname = None
    return {"hostname": hostname, "serial": read_serial(root)}


def identity(machine: Mapping[str, Any]) -> Dict[str, Any]:
    """The machine's fields a real run's fingerprint carries (the ones known); informational:
    the gate does not compare them."""
    return {k: machine[k] for k in ("hostname", "serial") if machine.get(k)}
