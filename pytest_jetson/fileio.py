"""Files written so that no reader ever sees half of one, and only where a regular file is or can
be: baselines, reports, plots, golden outputs, cached models and plans; and the lock files that
keep two writers of one of them apart.

Where a file goes (``check_target``): a path that does not exist yet, or a regular file, is
written; a directory, a device (``/dev/null`` as root would otherwise be replaced by a file), a
named pipe (a writer would block on it forever) or a socket is refused with an ``UnsafeTarget``
naming the path and the fix. A symbolic link is followed only when its target lies inside the
project (``root``; by default the directory holding the link): a report link such as
``reports/latest.json -> run-42.json`` keeps working and the file it names is updated in place,
while a link planted in a shared checkout to ``~/.bashrc`` or ``/etc/...`` is never written
through. Following rather than refusing every link keeps the layouts teams use (a results
directory with a ``latest`` link); refusing links out of the project keeps a session from writing
anywhere its user did not name. The check is made just before each write; a link swapped in
between the check and the rename is the limit of what a portable, lock-free check can promise.
"""

import errno
import os
import stat
import tempfile
import time
from pathlib import Path
from typing import Any, Optional, Union

from filelock import FileLock, Timeout

from .errors import JetsonError

try:
    import fcntl
except ImportError:  # Windows: filelock's lock
    fcntl = None  # type: ignore[assignment]

PathLike = Union[str, Path]


class UnsafeTarget(JetsonError, OSError):
    """A path pytest-jetson will not write: not a regular file, or a link out of the project. An
    ``OSError`` too, so every writer that reports an unwritable file reports this one."""

    def __init__(self, path: PathLike, why: str, code: int = errno.EINVAL) -> None:
        super().__init__(code, f"{path} {why}", str(path))

    def __str__(self) -> str:
        return str(self.strerror)


def file_kind(mode: int) -> Optional[str]:
    """What a non-regular file is, in words (None for a regular file): the one wording every
    reader and writer of the package uses."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def check_target(path: PathLike, root: Optional[PathLike] = None) -> Path:
    """Where a write to ``path`` goes: ``path`` itself, or the target of a link inside ``root``
    (the project; by default the directory holding the link). Raises ``UnsafeTarget`` for a
    directory, a device, a FIFO, a socket or a link out of ``root``."""
    path = Path(path)
    try:
        st = os.lstat(str(path))
    except OSError as exc:
        _through_a_file(path, exc)
        return path  # nothing there yet (or a parent missing: the write itself creates it)
    target = path
    if stat.S_ISLNK(st.st_mode):
        target = _link_inside(path, root, "write to {real} by name, or give another path")
        real = str(target)
        try:
            st = os.stat(real)
        except OSError:
            return target  # a dangling link inside the project: its target is created
    what = file_kind(st.st_mode)
    if what == "a directory":
        raise UnsafeTarget(path, f"is a directory, not a file; give a file path such as "
                                 f"{path / 'report'}", errno.EISDIR)
    if what is not None:
        raise UnsafeTarget(path, f"is {what}, not a regular file; pytest-jetson writes only regular "
                                 f"files: give the path of a file", errno.EINVAL)
    return target


def _link_inside(path: Path, root: Optional[PathLike], fix: str) -> Path:
    """The target of the link ``path`` when it lies inside ``root`` (by default the directory
    holding the link); else UnsafeTarget saying so, and ``fix`` (``{real}``: the target)."""
    real = os.path.realpath(str(path))
    base = os.path.realpath(str(root) if root is not None else str(path.parent))
    if not _inside(real, base):
        raise UnsafeTarget(path, f"is a symbolic link to {real}, outside {base}; pytest-jetson "
                                 f"follows links only inside the project: {fix.format(real=real)}", errno.ELOOP)
    return Path(real)


def _through_a_file(path: Path, exc: OSError) -> None:
    """A path that cannot be created since one of its parents is a file: UnsafeTarget naming it."""
    if exc.errno != errno.ENOTDIR:
        return
    for parent in reversed(path.parents):
        if parent.exists() and not parent.is_dir():
            raise UnsafeTarget(path, f"cannot be created: {parent} is a file, not a directory; choose "
                                     f"another path", errno.ENOTDIR)


def check_directory(path: PathLike, root: Optional[PathLike] = None) -> Path:
    """Where files written into the directory ``path`` go: ``path``, or the target of a link inside
    ``root`` (as ``check_target``). Raises ``UnsafeTarget`` for something there that is not a
    directory, a link out of ``root`` or a path through a file."""
    path = Path(path)
    try:
        st = os.lstat(str(path))
    except OSError as exc:
        _through_a_file(path, exc)
        return path
    target = path
    if stat.S_ISLNK(st.st_mode):
        target = _link_inside(path, root, "give {real} by name, or another directory")
    if target.exists() and not target.is_dir():
        raise UnsafeTarget(path, "is not a directory; give a directory (created when absent)", errno.ENOTDIR)
    return target


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: PathLike, data: Union[bytes, str], root: Optional[PathLike] = None) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory, fsync, then
    ``os.replace``: a crash or Ctrl-C leaves the old file or the new one. The new file keeps the
    old one's permissions (or the umask's, for a new file), not mkstemp's private 0600, since
    baselines are shared through version control and caches between users of a board. Only
    where ``check_target`` allows (``root``: the project links may point into)."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    path = check_target(path, root)
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


def append(path: PathLike, text: str, root: Optional[PathLike] = None) -> Path:
    """Append ``text`` to a regular file (the GitHub step summary), never to a device, pipe or
    directory: opened without following a last link and without blocking, then checked."""
    path = check_target(Path(path), root)
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(str(path), flags, 0o666)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):
            raise UnsafeTarget(path, "changed into a link or a pipe while it was being opened; give the "
                                     "path of a regular file", exc.errno) from None
        raise
    try:
        what = file_kind(os.fstat(fd).st_mode)
        if what is not None:
            raise UnsafeTarget(path, f"is {what}, not a regular file; give the path of a file")
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fd = -1
            fh.write(text)
    finally:
        if fd >= 0:
            os.close(fd)
    return path


class _Lock:
    """An exclusive lock on a lock file (``flock``), opened without following a link: a lock
    file planted as a link to another file never truncates or even opens that file (the filelock
    versions Python 3.8 gets open the link's target with ``O_TRUNC``)."""

    def __init__(self, path: PathLike, timeout: float) -> None:
        self.path, self.timeout, self.fd = Path(path), timeout, -1

    def __enter__(self) -> "_Lock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(str(self.path), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise UnsafeTarget(self.path, "is a symbolic link; a lock file is never a link (it would "
                                              "overwrite what it points to): remove the link", exc.errno) from None
            if exc.errno == errno.EISDIR:  # named here: the caller would blame the file the lock guards
                raise UnsafeTarget(self.path, "is a directory, not a lock file; remove it", exc.errno) from None
            raise
        try:
            what = file_kind(os.fstat(fd).st_mode)
            if what is not None:
                raise UnsafeTarget(self.path, f"is {what}, not a lock file; remove it")
            deadline = None if self.timeout < 0 else time.monotonic() + self.timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise Timeout(str(self.path)) from None
                    time.sleep(0.05)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return self

    def __exit__(self, *exc: Any) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)


def lock(path: PathLike, timeout: float = -1) -> Any:
    """A context manager holding an exclusive lock on ``path`` (created if missing) for up to
    ``timeout`` seconds of waiting (negative: forever); ``filelock.Timeout`` when it expires. On
    POSIX a link at ``path`` is refused (``UnsafeTarget``); elsewhere filelock's lock."""
    if fcntl is not None and hasattr(os, "O_NOFOLLOW"):
        return _Lock(path, timeout)
    return FileLock(str(path), timeout=timeout)


__all__ = ["UnsafeTarget", "append", "check_target", "lock", "write_atomic"]
