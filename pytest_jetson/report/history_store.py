"""``--jetson-history PATH``: a history that outlives a run, in one SQLite file.

Each session appends one run: its commit and machine (``provenance``), where the numbers come
from (the device fingerprint and target) and, per measurement key and followed metric, the value
with its interval and what the gate compared it with (``run_history.points_of``).
``pytest-jetson history PATH`` reads the runs back as ``run_history.Run`` objects, so a store,
JSON reports and directories of them are analysed alike.

The file: a ``meta`` table (``kind``, ``schema``), ``runs``, ``series`` (one row per key and
metric) and ``points`` (one per run and series). It is opened in WAL mode (readers never wait for
a writer) with a busy timeout (two sessions finishing together take turns). A store that stays
locked, a file that is not a store or is damaged, and a store of a newer schema are a
``HistoryError`` naming the file and the fix; the session's reports are written all the same.
"""

import datetime as _dt
import json
import math
import os
import sqlite3
import stat
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

from .. import fileio
from ..errors import JetsonError
from .run_history import Point, Run, points_of

KIND = "pytest-jetson-history"
SCHEMA = 1
#: seconds a session waits for another one holding the store's write lock
BUSY_TIMEOUT = 30.0
#: the first bytes of every SQLite 3 file
MAGIC = b"SQLite format 3\x00"

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    created TEXT NOT NULL,
    commit_id TEXT, branch TEXT, dirty INTEGER, commit_time TEXT, author_time TEXT,
    hostname TEXT, serial TEXT,
    device TEXT, power_mode TEXT, backend TEXT, simulated INTEGER,
    header TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS series (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL, metric TEXT NOT NULL, UNIQUE (key, metric)
);
CREATE TABLE IF NOT EXISTS points (
    run INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    series INTEGER NOT NULL REFERENCES series (id),
    value REAL NOT NULL, lo REAL, hi REAL,
    baseline REAL, tolerance REAL, threshold REAL, comparator TEXT, outcome TEXT,
    PRIMARY KEY (run, series)
) WITHOUT ROWID;
"""


class HistoryError(JetsonError):
    """A history store that cannot be read or written; the message names the file and the fix."""


def is_store(path: Union[str, Path]) -> bool:
    """Whether ``path`` is an SQLite file (a store, or something else kept in SQLite). Only a
    regular file is opened: a FIFO would block, a device would be read."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as fh:
            return fh.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def _why(path: Path, exc: BaseException) -> HistoryError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return HistoryError(f"history store {path} is locked by another process for longer than "
                            f"{BUSY_TIMEOUT:g} s; let it finish, or give this run another --jetson-history PATH")
    damaged = isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError)
    if damaged or "malformed" in text or "not a database" in text:
        return HistoryError(f"history store {path} is not a pytest-jetson history store or is damaged "
                            f"({text}); move it aside (a new store is created at the path) or give "
                            f"another --jetson-history PATH")
    if "readonly" in text or "unable to open" in text:
        return HistoryError(f"history store {path} cannot be written ({text}); choose a writable path")
    return HistoryError(f"history store {path}: {text}; choose another path")


def _connect(path: Path, create: bool) -> sqlite3.Connection:
    if path.is_dir():
        raise HistoryError(f"history store {path} is a directory; give a file path such as {path / 'history.sqlite'}")
    if not create and not path.is_file():
        raise HistoryError(f"history store {path} does not exist; write one with pytest --jetson-history {path}")
    if path.exists() and path.stat().st_size and not is_store(path):
        raise HistoryError(f"history store {path} is not an SQLite file; give the file written by "
                           f"--jetson-history (or a new path, where one is created)")
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    uri = f"{path.resolve().as_uri()}?mode={'rwc' if create else 'ro'}"
    db = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT, isolation_level=None)
    db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT * 1000)}")
    return db


def _check(db: sqlite3.Connection, path: Path, create: bool) -> None:
    """The store's kind and schema; creates the tables of a new (empty) store."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables and create:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("BEGIN IMMEDIATE")
        try:
            for statement in _TABLES.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.executemany("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
                           [("kind", KIND), ("schema", str(SCHEMA))])
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall()) if "meta" in tables else {}
    if meta.get("kind") != KIND:
        raise HistoryError(f"{path} is an SQLite file but not a pytest-jetson history store; give the file "
                           f"written by --jetson-history, or a new path")
    try:
        schema = int(meta.get("schema", ""))
    except ValueError:
        schema = -1
    if schema > SCHEMA:
        raise HistoryError(f"history store {path} has schema {schema}; this pytest-jetson reads and writes "
                           f"schema {SCHEMA}: upgrade pytest-jetson")
    if schema < 1:
        raise HistoryError(f"history store {path} has no valid schema version ({meta.get('schema')!r}); "
                           f"move it aside and a new store is created")


def _opt(x: Any) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def header(fingerprint: Dict[str, Any], target: Optional[Dict[str, Any]], provenance: Optional[Dict[str, Any]],
           created: str, summary: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """A run's header as a JSON report's top holds it (what ``run_history.Run`` reads)."""
    return {"created": created, "device": dict(fingerprint), "target": dict(target or {}),
            "summary": dict(summary or {}), **dict(provenance or {})}


def append(path: Union[str, Path], head: Dict[str, Any], points: Dict[Tuple[str, str], Point]) -> int:
    """Append one run (its ``header`` and points); returns its id in the store."""
    path = Path(path)
    try:
        db = _connect(path, create=True)
        try:
            _check(db, path, create=True)
            return _insert(db, head, points)
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise _why(path, exc) from None
    except OSError as exc:
        raise HistoryError(f"history store {path} cannot be written ({exc.strerror or exc}); choose a "
                           f"writable path") from None


def _insert(db: sqlite3.Connection, head: Dict[str, Any], points: Dict[Tuple[str, str], Point]) -> int:
    commit = head.get("commit") or {}
    machine = head.get("machine") or {}
    device = head.get("device") or {}
    target = head.get("target") or {}
    db.execute("BEGIN IMMEDIATE")  # take the write lock now: the busy timeout covers the wait
    try:
        cur = db.execute(
            "INSERT INTO runs (created, commit_id, branch, dirty, commit_time, author_time, hostname, serial, "
            "device, power_mode, backend, simulated, header) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (head.get("created") or "", commit.get("id"), commit.get("branch"),
             None if commit.get("dirty") is None else int(bool(commit.get("dirty"))),
             commit.get("time"), commit.get("author_time"), machine.get("hostname"), machine.get("serial"),
             device.get("device"), device.get("power_mode"), target.get("backend"),
             int(bool(device.get("simulated"))), json.dumps(head, sort_keys=True, default=str)))
        run = int(cur.lastrowid)
        ids = _series_ids(db, points)
        db.executemany(
            "INSERT INTO points (run, series, value, lo, hi, baseline, tolerance, threshold, comparator, outcome) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(run, ids[cell], p.value, p.ci[0] if p.ci else None, p.ci[1] if p.ci else None, _opt(p.baseline),
              _opt(p.tolerance), _opt(p.threshold), p.comparator, p.outcome or None)
             for cell, p in points.items()])
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return run


def _series_ids(db: sqlite3.Connection, cells: Iterable[Tuple[str, str]]) -> Dict[Tuple[str, str], int]:
    cells = list(cells)
    db.executemany("INSERT OR IGNORE INTO series (key, metric) VALUES (?, ?)", cells)
    ids = {(k, m): i for i, k, m in db.execute("SELECT id, key, metric FROM series")}
    return {c: ids[c] for c in cells}


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def append_session(path: Union[str, Path], results: Any, fingerprint: Dict[str, Any],
                   target: Optional[Dict[str, Any]], provenance: Optional[Dict[str, Any]],
                   summary: Optional[Dict[str, Any]] = None, created: Optional[str] = None,
                   root: Optional[Union[str, Path]] = None) -> int:
    """Append a session's gate results (``gate.session.TestResult``) as one run; only to a path
    a report may be written to (``fileio.check_target``; ``root``: the project links may point
    into): never a device, a FIFO or a link out of the project, where SQLite would also create
    its journal beside it."""
    try:
        path = fileio.check_target(path, root)
    except fileio.UnsafeTarget as exc:
        raise HistoryError(f"history store {exc}") from None
    head = header(fingerprint, target, provenance, created or now_iso(), summary)
    return append(path, head, points_of(results))


def load(path: Union[str, Path]) -> List[Run]:
    """The store's runs, oldest first, each with its points; a HistoryError naming the file when it
    cannot be read."""
    path = Path(path)
    try:
        db = _connect(path, create=False)
        try:
            _check(db, path, create=False)
            return _read(db, path)
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise _why(path, exc) from None
    except OSError as exc:
        raise HistoryError(f"history store {path} cannot be read ({exc.strerror or exc})") from None


def _read(db: sqlite3.Connection, path: Path) -> List[Run]:
    runs: Dict[int, Run] = {}
    for order, (rid, created, head) in enumerate(db.execute("SELECT id, created, header FROM runs ORDER BY id")):
        try:
            doc = json.loads(head)
        except ValueError:
            raise HistoryError(f"history store {path}: run {rid} has a damaged header; move the store aside") from None
        runs[rid] = Run(path=path, name=f"run {rid}", created=created, doc=doc, order=order, points={})
    machines = {rid: ((r.doc.get("machine") or {}).get("hostname") or (r.doc.get("machine") or {}).get("serial"))
                for rid, r in runs.items()}
    if len({m for m in machines.values() if m}) > 1:  # several boards of one kind: say which ran
        for rid, r in runs.items():
            if machines[rid]:
                r.name = f"{r.name} on {machines[rid]}"
    series = {sid: (key, metric) for sid, key, metric in db.execute("SELECT id, key, metric FROM series")}
    rows = db.execute("SELECT run, series, value, lo, hi, baseline, tolerance, threshold, comparator, outcome "
                      "FROM points")
    for rid, sid, value, lo, hi, baseline, tolerance, threshold, comparator, outcome in rows:
        runs[rid].points[series[sid]] = Point(  # type: ignore[index]
            value=value, ci=None if lo is None or hi is None else (lo, hi), baseline=baseline,
            tolerance=tolerance, threshold=threshold, comparator=comparator, outcome=outcome or "")
    return list(runs.values())


def count(path: Union[str, Path]) -> int:
    """How many runs the store holds."""
    path = Path(path)
    try:
        db = _connect(path, create=False)
        try:
            _check(db, path, create=False)
            return int(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise _why(path, exc) from None
