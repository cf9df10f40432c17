"""An Nsight Systems report exported to SQLite (``nsys export --type sqlite``), holding the
tables ``report.trace.gpu_metrics`` reads, with the columns and types NVIDIA documents for them:

* ``SCHEMAS["3.28.1"]``: the Nsight Systems Post-Collection Analysis Guide, "SQLite Schema
  Reference", schema as of the 2026.4 release, version 3.28.1
  (https://docs.nvidia.com/nsight-systems/AnalysisGuide/index.html): GPU_METRICS has
  ``rawTimestamp`` and a NOT NULL ``timestamp``;
* ``SCHEMAS["userguide"]``: the same reference as the older User Guide gave it
  (https://docs.nvidia.com/nsight-systems/UserGuide/index.html#sqlite-schema-reference): no
  ``rawTimestamp``, ``timestamp`` nullable.

TARGET_INFO_GPU_METRICS (typeId, sourceId, typeName, metricId, metricName) and NVTX_EVENTS (a
range's ``text``, or for a registered string its ``textId`` in StringIds) are the same in both.
Only the columns the reader or the NOT NULL constraints need are created (the exporter creates
tables lazily, so a reader must not count on others). The metric names are nsys's GPU metric
names as published exports show them ("SMs Active [Throughput %]", ...); an Orin's own export has
not been seen here.
"""

import sqlite3
from pathlib import Path
from typing import Dict, Iterable, Optional, Sequence, Tuple

_COMMON = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER NOT NULL, sourceId INTEGER NOT NULL,
    typeName TEXT NOT NULL, metricId INTEGER NOT NULL, metricName TEXT NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
    rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
    endGlobalTid INTEGER, textId INTEGER, domainId INTEGER);
"""
SCHEMAS = {
    "3.28.1": _COMMON + """CREATE TABLE GPU_METRICS (rawTimestamp INTEGER NOT NULL, timestamp INTEGER NOT NULL,
        typeId INTEGER NOT NULL, metricId INTEGER NOT NULL, value INTEGER NOT NULL);""",
    "userguide": _COMMON + """CREATE TABLE GPU_METRICS (timestamp INTEGER, typeId INTEGER NOT NULL,
        metricId INTEGER NOT NULL, value INTEGER NOT NULL);""",
}
#: metricId -> metricName of the metrics the activity figures come from (and one they ignore)
METRICS = {0: "GPC Clock Frequency [MHz]", 1: "SMs Active [Throughput %]", 2: "SM Issue [Throughput %]",
           3: "Tensor Active [Throughput %]", 4: "DRAM Read Bandwidth [Throughput %]",
           5: "DRAM Write Bandwidth [Throughput %]"}
#: ENUM_NSYS_EVENT_TYPE's NvtxPushPopRange
PUSH_POP = 59


def make(path: Path, schema: str, samples: Iterable[Tuple[int, Dict[int, int]]],
         ranges: Sequence[Tuple[int, int, str]] = (), registered: bool = False,
         metrics: Optional[Dict[int, str]] = None, type_id: int = 1) -> Path:
    """A report at ``path``: ``samples`` (timestamp ns, {metricId: value}) of GPU ``type_id``,
    NVTX push/pop ``ranges`` (start, end, text), their text in StringIds when ``registered``."""
    db = sqlite3.connect(str(path))
    db.executescript(SCHEMAS[schema])
    for mid, name in (metrics or METRICS).items():
        db.execute("INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?, ?, ?, ?, ?)",
                   (type_id, 0, "Orin (ga10b) metrics", mid, name))
    raw = schema == "3.28.1"
    for ts, values in samples:
        for mid, value in values.items():
            row = (ts * 31, ts, type_id, mid, value) if raw else (ts, type_id, mid, value)
            db.execute(f"INSERT INTO GPU_METRICS VALUES ({', '.join('?' * len(row))})", row)
    for i, (start, end, text) in enumerate(ranges):
        if registered:
            db.execute("INSERT INTO StringIds VALUES (?, ?)", (100 + i, text))
            db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, textId) VALUES (?, ?, ?, ?)",
                       (start, end, PUSH_POP, 100 + i))
        else:
            db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text) VALUES (?, ?, ?, ?)",
                       (start, end, PUSH_POP, text))
    db.commit()
    db.close()
    return path
