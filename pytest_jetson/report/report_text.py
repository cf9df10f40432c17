"""A JSON report's text read a piece at a time (``Source``) and walked a value at a time
(``Walk``), so that reading a report of ten thousand tests holds a piece of its text and one test,
never the whole.

A report is checked whole first (``Source.check``: every error reading it whole gives, in the
same order: a special file, the size bound, a damaged or inflating gzip, bad UTF-8), then read
again for each walk through it; a file changed since it was checked is an error naming it."""

import codecs
import hashlib
import json
import os
import re
import zlib
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ..errors import BaselineError
from ..gate.safe_read import JSONProblem, decoder, open_regular, read_chunks

#: Reports keep every sample only on request; even then a suite's report stays well under this.
MAX_REPORT_BYTES = 1 << 30
#: Bytes read from the file at a time.
CHUNK = 1 << 18
#: The characters after a number that decide where it ends (``1.5``, ``1e+5``): a value decoded
#: closer than this to the end of the text read so far is decoded again with more of it.
_LOOKAHEAD = 3
#: The bytes of a gzipped report given to the inflater at a time, and the most it inflates to
#: at a time (the inflater's own buffers are a few times that).
_GZIP_FEED = 1 << 14
_GZIP_PIECE = 1 << 16


def _identity(st: os.stat_result) -> Tuple[int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class Source:
    """A report file as text pieces (``pieces``), each read of it checked against the first."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fix = f"re-create it with pytest --jetson-report-json {path}"
        self.identity: Optional[Tuple[int, int, int, int]] = None
        self.digest: Optional[bytes] = None

    def changed(self) -> BaselineError:
        return BaselineError(f"report {self.path} changed while it was being read (it is read more than once, "
                             f"a test at a time); run the command again once nothing writes to it")

    def check(self, keep: bool = False) -> Optional[str]:
        """Read the file through once, raising what reading it whole raises; its text when
        ``keep``. Later reads (``pieces``) must find the same bytes."""
        kept: List[str] = []
        for piece in self._read(first=True):
            if keep:
                kept.append(piece)
        return "".join(kept) if keep else None

    def pieces(self) -> Iterator[str]:
        """The text again, a piece at a time, after ``check``; BaselineError (``changed``) where
        the file is no longer what ``check`` read."""
        return self._read(first=False)

    def same(self) -> None:
        """Raise ``changed`` when the file is no longer the one ``check`` read (for an error met
        while walking it: a file rewritten meanwhile is said to be, not to be damaged)."""
        try:
            now = _identity(os.stat(self.path))
        except OSError:
            raise self.changed() from None
        if now != self.identity:
            raise self.changed()

    def _read(self, first: bool) -> Iterator[str]:
        path, fix = self.path, self.fix
        if path.is_dir():
            raise BaselineError(f"report {path} is a directory; pass the JSON file written by "
                                f"--jetson-report-json (e.g. {path / 'report.json'})")
        opened = open_regular(path, fix, what="report", kind="the JSON file written by --jetson-report-json",
                              max_bytes=MAX_REPORT_BYTES)
        if opened is None:
            if not first:
                raise self.changed()
            raise BaselineError(f"report {path} does not exist; write one with pytest --jetson-report-json {path}")
        fd, st = opened
        try:
            if not first and _identity(st) != self.identity:
                raise self.changed()
            digest = hashlib.blake2b(digest_size=16)
            raw = _hashed(read_chunks(fd, path, fix, what="report", max_bytes=MAX_REPORT_BYTES, size=CHUNK), digest)
            gzipped, raw = _gzipped(raw)
            data = _inflate(raw, self, first) if gzipped else raw
            text = codecs.getincrementaldecoder("utf-8")()
            binary = False
            for chunk in data:
                if binary:
                    continue  # what reading it whole raises first is still to come (the size bound)
                try:
                    piece = text.decode(chunk)
                except UnicodeDecodeError:
                    if not first:
                        raise self.changed() from None
                    binary = True
                    continue
                if piece:
                    yield piece
            try:
                piece = "" if binary else text.decode(b"", final=True)
            except UnicodeDecodeError:
                binary = True
            if binary and first:
                raise BaselineError(f"report {path} is not JSON (binary content); {fix}")
            if binary or (not first and digest.digest() != self.digest):
                raise self.changed()
            if piece:
                yield piece
            if first:
                self.identity, self.digest = _identity(st), digest.digest()
        finally:
            os.close(fd)


def _hashed(chunks: Iterator[bytes], digest: Any) -> Iterator[bytes]:
    for chunk in chunks:
        digest.update(chunk)
        yield chunk


def _gzipped(raw: Iterator[bytes]) -> Tuple[bool, Iterator[bytes]]:
    """Whether the file starts as gzip does, and all of its bytes."""
    head = [b""]
    for chunk in raw:
        head[0] += chunk
        if len(head[0]) >= 2:
            break

    def whole() -> Iterator[bytes]:
        if head[0]:
            yield head.pop()  # not held while the rest is read
        yield from raw

    return head[0][:2] == b"\x1f\x8b", whole()


def _inflate(raw: Iterator[bytes], source: Source, first: bool) -> Iterator[bytes]:
    """A gzipped report's bytes (its first member, as ``zlib`` reads it whole), never more than
    MAX_REPORT_BYTES (a small file can inflate to any size); the rest of the file is read, not
    inflated. After the first read, a file that no longer inflates has changed."""
    path, fix = source.path, source.fix
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    total = 0
    for chunk in raw:
        view = memoryview(chunk)
        # fed a little at a time: what one call leaves uninflated is copied, and a report
        # compresses ten times and more
        for at in range(0, len(view), _GZIP_FEED):
            if inflater.eof:
                break
            data: Any = view[at:at + _GZIP_FEED]
            while True:
                limit = min(_GZIP_PIECE, MAX_REPORT_BYTES + 1 - total)
                try:
                    out = inflater.decompress(data, limit)
                except zlib.error as exc:
                    if not first:
                        raise source.changed() from None
                    raise BaselineError(f"report {path} is not a readable gzip file ({exc}); {fix}") from None
                total += len(out)
                if total > MAX_REPORT_BYTES:
                    if not first:
                        raise source.changed()
                    raise BaselineError(f"report {path} inflates to more than {MAX_REPORT_BYTES} bytes, more "
                                        f"than any report; {fix}")
                if out:
                    yield out
                data = inflater.unconsumed_tail
                if inflater.eof or (not data and len(out) < limit):
                    break  # this piece inflated, none of its output held back


_SPACE = re.compile(r"[ \t\n\r]*")


class Walk:
    """A report's text read a value at a time from its pieces: its header (every key but "tests")
    first, then each test as it is asked for, then what follows the tests. Only one test's dict
    and about a piece of the text exist at a time. Errors (``JSONProblem``) are those of walking
    the whole text: positions count from its start, and a value that runs past the text read so
    far is decoded again with more of it."""

    def __init__(self, pieces: Iterator[str]) -> None:
        self.pieces = pieces
        self.text = ""
        self.i = 0
        #: where ``text`` starts in the whole text: characters and lines before it, and the
        #: position of the last line break before it (-1: none)
        self.base = 0
        self.lines = 0
        self.line_start = -1
        self.ended = False
        self.head: Dict[str, Any] = {}
        self.dec = decoder()
        #: False before "tests", True at its first element, None once every test was read
        self.at_tests: Optional[bool] = False

    def _more(self, wanted: int) -> bool:
        """Read ``wanted`` more characters at least (less at the end), letting go of the text
        before ``i``; False, and nothing changed, when there is no more."""
        parts: List[str] = []
        got = 0
        while got < wanted and not self.ended:
            piece = next(self.pieces, None)
            if piece is None:
                self.ended = True
            else:
                parts.append(piece)
                got += len(piece)
        if not parts:
            return False
        breaks = self.text.count("\n", 0, self.i)
        if breaks:
            self.lines += breaks
            self.line_start = self.base + self.text.rfind("\n", 0, self.i)
        self.base += self.i
        self.text = "".join([self.text[self.i:]] + parts)
        self.i = 0
        return True

    def at(self, i: int) -> int:
        """The position in the whole text of ``i`` in ``text``."""
        return self.base + i

    def _skip(self) -> str:
        while True:
            self.i = _SPACE.match(self.text, self.i).end()  # type: ignore[union-attr]
            if self.i < len(self.text) or not self._more(1):
                return self.text[self.i:self.i + 1]

    def _expect(self, chars: str) -> str:
        found = self._skip()
        if not found or found not in chars:
            raise JSONProblem(f"not valid JSON: expected {' or '.join(repr(c) for c in chars)} at char {self.at(self.i)}")
        self.i += 1
        return found

    def _value(self) -> Any:
        self._skip()
        while True:
            try:
                value, end = self.dec.raw_decode(self.text, self.i)
            except ValueError as exc:  # JSONProblem too: a number cut short reads as fewer digits
                if self._more(max(1, len(self.text) - self.i)):  # as much again: linear however long
                    continue
                if isinstance(exc, json.JSONDecodeError):
                    raise JSONProblem(f"not valid JSON: {self._where(exc)}") from None
                if isinstance(exc, JSONProblem):
                    raise
                raise JSONProblem(f"not valid JSON: {exc}") from None
            if end + _LOOKAHEAD > len(self.text) and self._more(max(1, len(self.text) - self.i)):
                continue
            self.i = end
            return value

    def _where(self, exc: json.JSONDecodeError) -> str:
        """``exc``'s message as decoding the whole text gives it."""
        pos = exc.pos
        lineno = self.lines + self.text.count("\n", 0, pos) + 1
        last = self.text.rfind("\n", 0, pos)
        colno = pos - last if last >= 0 else self.at(pos) - self.line_start
        return f"{exc.msg}: line {lineno} column {colno} (char {self.at(pos)})"

    def members(self, first: bool) -> None:
        """Read members into ``head`` up to "tests" (then ``at_tests``) or the end."""
        if first:
            self._expect("{")
            if self._skip() == "}":
                self.i += 1
                return self._end()
        while True:
            key = self._value()
            if not isinstance(key, str):
                raise JSONProblem(f"not valid JSON: a key must be a string (char {self.at(self.i)})")
            if key in self.head or (key == "tests" and self.at_tests is None):
                raise JSONProblem(f"the key {key!r} appears twice in one object")
            self._expect(":")
            if key == "tests" and self._skip() == "[":
                self.i += 1
                self.at_tests = True
                return None
            self.head[key] = self._value()
            if self._expect(",}") == "}":
                return self._end()

    def _end(self) -> None:
        if self._skip():
            raise JSONProblem(f"not valid JSON: Extra data: char {self.at(self.i)}")

    def tests(self) -> Iterator[Any]:
        if self._skip() == "]":
            self.i += 1
        else:
            while True:
                yield self._value()
                if self._expect(",]") == "]":
                    break
        self.at_tests = None
        if self._expect(",}") == ",":
            self.members(first=False)
        else:
            self._end()
