"""Reading a baseline file that may be anything: a FIFO, a device, a directory, a huge file, a path
through a file where a directory should be. Each is a ``BaselineError`` naming the file and the
fix; nothing blocks and no device is read."""

import os
import stat
from pathlib import Path
from typing import Optional

from ..errors import BaselineError
from ..fileio import file_kind

MAX_BYTES = 64 * 1024 * 1024


def blocking_component(path: Path) -> Optional[Path]:
    """The first ancestor of ``path`` that exists and is not a directory (a file where a directory
    should be), or None."""
    for parent in reversed(path.parents):
        try:
            st = os.stat(parent)
        except OSError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            return parent
    return None


def read_text(path: Path, fix: str) -> Optional[str]:
    """The file's text; None when it does not exist. Never blocks on a FIFO, never reads a device."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(str(path), flags)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        block = blocking_component(path)
        raise BaselineError(
            f"baseline file {path} cannot be read: {block or 'a parent'} is a file where a directory "
            f"should be; move that file away (baselines are <root>/<device>/<module>.json)") from None
    except IsADirectoryError:
        raise BaselineError(f"baseline file {path} is a directory where a file should be; remove or "
                            f"rename the directory") from None
    except OSError as exc:
        raise BaselineError(f"baseline file {path} cannot be read ({exc.strerror or exc}); {fix}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = file_kind(st.st_mode) or "not a regular file"
            where = "a directory where a file should be" if what == "a directory" else what
            link = f" (a link to {os.path.realpath(path)})" if os.path.islink(path) else ""
            raise BaselineError(
                f"baseline file {path} is {where}{link}, not a baseline file; remove it (a baseline "
                f"is a JSON file written by --jetson-update-baselines)")
        if st.st_size > MAX_BYTES:
            raise BaselineError(f"baseline file {path} is {st.st_size} bytes, more than any baseline "
                                f"({MAX_BYTES} at most); {fix}")
        chunks = []
        total = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_BYTES:
                raise BaselineError(f"baseline file {path} is larger than any baseline; {fix}")
            chunks.append(chunk)
    except OSError as exc:
        raise BaselineError(f"baseline file {path} cannot be read ({exc.strerror or exc}); {fix}") from None
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BaselineError(f"baseline file {path} is not UTF-8 text ({exc}); {fix}") from None

