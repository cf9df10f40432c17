"""The baseline store, one name for what the gate, the plugin and the command line use of it.

``<root>/<device id>/<test module path>.json``, one file per test module. Its parts, by job:

* ``gate.entries``: an entry's statistics (``make_entry``, ``pool_entries``, ``entry_ref``);
* ``gate.merge``: what recording over a stored entry changes (``merge_entry``, ``needs_write``);
* ``gate.file_format``: the file's layout and its reading (``read_file``, ``dump_baseline``),
  ``gate.entry_schema`` what an entry must hold, ``gate.safe_read`` reading a path that may be
  anything;
* ``gate.file_update``: one file's read-merge-write under its lock (``update_file``);
* ``gate.store``: ``BaselineStore``, staging during a session and flushing at its end;
* ``gate.listing``: what ``pytest-jetson show`` and ``diff`` read.

**Recording** is staged: ``BaselineStore.stage`` keeps entries in memory during the session and
``flush`` writes each file once at its end (one read-merge-write per file, under a lock beside the
file). ``mode``: ``all`` (new entries, and metrics that changed), ``new`` (only entries not stored
yet), ``force`` (every recorded entry rewritten as measured: after an intended change the noise
test would keep, or to reset a baseline).

**Files** are written atomically (a temporary file beside it, fsync, ``os.replace``). Anything that
is not a readable baseline (not JSON, nested too deep, wrong field types, a FIFO, a device, a
directory where a file should be, a file where a directory should be, a read-only directory when
recording) raises ``BaselineError`` naming the file, the field and the fix, and is never written
over.
"""

from .. import fileio  # noqa: F401  (tests watch the writes through it)
from .entries import SAMPLE_POINTS, entry_ref, fingerprint, make_entry, now_iso, pool_entries
from .entry_schema import FIX_UNREADABLE
from .file_format import READS, SCHEMA, dump_baseline, dumps, read_file
from .file_update import (
    GITIGNORE,
    LOCK_TIMEOUT,
    ensure_gitignore,
    lock,
    lock_path,
    update_file,
    write_atomic,
    write_baseline,
)
from .keys import PROJECT_MARKERS, baseline_key, baseline_path, key_test, project_root
from .listing import describe_file, entries_of_text
from .merge import REWRITE_ALPHA, merge_entry, metric_changed, needs_write
from .safe_read import MAX_BYTES
from .store import BaselineStore, Flushed, outside_project

#: The name ``pytest-jetson diff`` imports (``merge.metric_changed``).
_metric_changed = metric_changed

__all__ = [
    "BaselineStore", "FIX_UNREADABLE", "Flushed", "GITIGNORE", "LOCK_TIMEOUT", "MAX_BYTES",
    "PROJECT_MARKERS", "READS", "REWRITE_ALPHA", "SAMPLE_POINTS", "SCHEMA", "baseline_key",
    "baseline_path", "describe_file", "dump_baseline", "dumps", "ensure_gitignore", "entries_of_text",
    "entry_ref", "fingerprint", "key_test", "lock", "lock_path", "make_entry", "merge_entry",
    "metric_changed", "needs_write", "now_iso", "outside_project", "pool_entries", "project_root",
    "read_file", "update_file", "write_atomic", "write_baseline",
]
