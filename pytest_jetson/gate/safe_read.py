"""Reading a baseline file that may be anything: a FIFO, a device, a directory, a huge file, a path
through a file where a directory should be. Each is a ``BaselineError`` naming the file and the
fix; nothing blocks and no device is read. ``loads`` parses what was read as strictly as the plugin
writes it: a key twice, NaN, a number too large for a float or an integer of more digits than any
count are refused rather than resolved last-wins or carried into arithmetic that overflows later."""

import json
import os
import stat
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ..errors import BaselineError
from ..fileio import file_kind

MAX_BYTES = 64 * 1024 * 1024
#: No count or figure the plugin writes has more digits (2**63 has 19).
MAX_INT_DIGITS = 19


class JSONProblem(ValueError):
    """Why a text is not JSON as the plugin writes it (the caller names the file)."""


def _pairs(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise JSONProblem(f"the key {k!r} appears twice in one object")
        out[k] = v
    return out


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise JSONProblem(f"a {len(text.lstrip('-'))}-digit integer ({text[:12]}...) is larger than any "
                          f"count or figure")
    return int(text)


def _float(text: str) -> float:
    x = float(text)
    if x in (float("inf"), float("-inf")):
        raise JSONProblem(f"{text[:24]} is too large for a number")
    return x


def _constant(name: str) -> Any:
    raise JSONProblem(f"{name} is not a number JSON allows")


def decoder() -> json.JSONDecoder:
    """A decoder as strict as ``loads`` (for reading a large document a value at a time with
    ``raw_decode``; the caller checks the keys of the object it walks itself)."""
    return json.JSONDecoder(object_pairs_hook=_pairs, parse_int=_int, parse_float=_float,
                            parse_constant=_constant)


def loads(text: str) -> Any:
    """``text`` as JSON, strictly; JSONProblem (a ValueError) saying what is wrong, RecursionError
    for nesting deeper than Python's stack."""
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_int=_int, parse_float=_float,
                          parse_constant=_constant)
    except JSONProblem:
        raise
    except ValueError as exc:
        raise JSONProblem(f"not valid JSON: {exc}") from None


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


def read_text(path: Path, fix: str, what: str = "baseline file",
              kind: str = "a JSON file written by --jetson-update-baselines",
              max_bytes: int = MAX_BYTES) -> Optional[str]:
    """The file's text; None when it does not exist. Never blocks on a FIFO, never reads a device.
    ``what`` names the file in messages; ``kind`` says what the file should have been."""
    data = read_bytes(path, fix, what, kind, max_bytes)
    return None if data is None else decode(data, path, fix, what)


def decode(data: bytes, path: Path, fix: str, what: str = "baseline file") -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BaselineError(f"{what} {path} is not JSON (binary content); {fix}") from None


def read_bytes(path: Path, fix: str, what: str = "baseline file",
               kind: str = "a JSON file written by --jetson-update-baselines",
               max_bytes: int = MAX_BYTES) -> Optional[bytes]:
    """``read_text``'s bytes, undecoded."""
    opened = open_regular(path, fix, what, kind, max_bytes)
    if opened is None:
        return None
    fd, _ = opened
    try:
        return b"".join(read_chunks(fd, path, fix, what, max_bytes))
    finally:
        os.close(fd)


def open_regular(path: Path, fix: str, what: str = "baseline file",
                 kind: str = "a JSON file written by --jetson-update-baselines",
                 max_bytes: int = MAX_BYTES) -> Optional[Tuple[int, os.stat_result]]:
    """The file opened for reading and its status (the caller closes it); None when it does not
    exist. A FIFO is opened without blocking and, like a device or a file over ``max_bytes``,
    refused unread."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(str(path), flags)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        block = blocking_component(path)
        layout = " (baselines are <root>/<device>/<module>.json)" if what == "baseline file" else ""
        raise BaselineError(
            f"{what} {path} cannot be read: {block or 'a parent'} is a file where a directory "
            f"should be; move that file away{layout}") from None
    except IsADirectoryError:
        raise BaselineError(f"{what} {path} is a directory where a file should be; remove or "
                            f"rename the directory") from None
    except OSError as exc:
        raise BaselineError(f"{what} {path} cannot be read ({exc.strerror or exc}); {fix}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            ftype = file_kind(st.st_mode) or "not a regular file"
            where = "a directory where a file should be" if ftype == "a directory" else ftype
            link = f" (a link to {os.path.realpath(path)})" if os.path.islink(path) else ""
            raise BaselineError(
                f"{what} {path} is {where}{link}, not a {what}; remove it or pass "
                f"{kind}")
        if st.st_size > max_bytes:
            raise BaselineError(f"{what} {path} is {st.st_size} bytes, more than any {what} "
                                f"({max_bytes} bytes at most); {fix}")
    except OSError as exc:
        os.close(fd)
        raise BaselineError(f"{what} {path} cannot be read ({exc.strerror or exc}); {fix}") from None
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_chunks(fd: int, path: Path, fix: str, what: str = "baseline file", max_bytes: int = MAX_BYTES,
                size: int = 1 << 20) -> Iterator[bytes]:
    """The bytes of a file ``open_regular`` opened, ``size`` at most at a time, to its end; a file
    that grows past ``max_bytes`` while it is read is refused."""
    total = 0
    while True:
        try:
            chunk = os.read(fd, size)
        except OSError as exc:
            raise BaselineError(f"{what} {path} cannot be read ({exc.strerror or exc}); {fix}") from None
        if not chunk:
            return
        total += len(chunk)
        if total > max_bytes:
            raise BaselineError(f"{what} {path} is larger than any {what}; {fix}")
        yield chunk
