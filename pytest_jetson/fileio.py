"""Files written so that no reader ever sees half of one: baselines, cached models and plans."""

import os
import tempfile
from pathlib import Path
from typing import Union


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Union[str, Path], data: Union[bytes, str]) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory, fsync, then
    ``os.replace``: a crash or Ctrl-C leaves the old file or the new one. The new file keeps the
    old one's permissions (or the umask's, for a new file), not mkstemp's private 0600, since
    baselines are shared through version control and caches between users of a board."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, str(path))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
