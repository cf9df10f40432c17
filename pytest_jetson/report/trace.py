"""Traces on demand (``--jetson-trace=fail|all``): what a test ran, on a timeline.

**On the simulated board** the timeline is the virtual clock's own record (``SimClock.loads``:
each stretch an engine, a pool or the measured function's host code ran) between the test's
start and end, written as a Chrome/Perfetto trace (the Trace Event Format: open it in
ui.perfetto.dev or chrome://tracing):

* the GPU: one row per engine, each stretch of inferences a slice with the prediction's figures
  (model, precision, batch, what bounds it, GPU time, SM/tensor/issue/DRAM activity) and one
  slice per inference inside it; a pool of N processes one row per process, its time slices
  taking turns (Jetson GPUs have no MPS: processes are time-sliced);
* the CPU: the measured function's own host code, and its ``perf.stage`` spans (kept only while
  a trace is recorded: ``run.stages.SPANS``);
* pytest-jetson: each measurement's telemetry window, and its telemetry as counters (GPU load
  and activity, board power).

Times are microseconds from the test's start on the virtual clock. A trace holds at most
``MAX_EVENTS`` events (a long window of short inferences is cut, and the trace says so).

**On a board** a trace is an Nsight Systems report of the test: the test re-run alone under
``nsys profile`` (CUDA, NVTX and OS runtime traces; GPU metrics sampling where nsys supports the
board), ``perf.stage`` ranges already NVTX ranges there, and each ``perf.measure`` one too
(``run.stages.MEASURE_RANGE``). ``nsys_support`` finds nsys and asks it which GPUs it samples;
``nsys_command`` builds the command line; ``read_gpu_metrics`` exports the report to SQLite
(``nsys export --type sqlite``) and reads the GPU metrics sampled inside each measurement's range
back as ``sm_active``, ``tensor_active``, ``issue_active`` and ``dram_util`` (``gpu_metrics``).

A trace that cannot be written (a read-only directory, nsys missing) is a note, never a failed test.
"""

import json
import os
import re
import shutil
import sqlite3
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .. import fileio

#: Events a trace holds at most (about 100 bytes each).
MAX_EVENTS = 100_000
#: Where traces go without a JSON report to sit beside (relative to the invocation directory).
DEFAULT_DIR = ".jetson-traces"
#: Set in the environment of a test re-run under nsys: the child records no trace of its own.
CHILD_ENV = "PYTEST_JETSON_NSYS_CHILD"

_GPU, _CPU, _PLUGIN = 1, 2, 3
_ACTIVITY = ("sm_active", "tensor_active", "issue_active", "dram_util")


@dataclass
class Window:
    """What a traced test ran: ``[start, end]`` on the virtual clock, the stage spans recorded
    meanwhile, the clock's load records and the test's measurements."""

    start: float
    end: float
    spans: List[Tuple[str, float, float]]
    loads: Sequence[Sequence[Any]]
    measurements: Sequence[Any] = ()


def trace_dir(report_json: Optional[str], invocation_dir: Path) -> Path:
    """Beside the JSON report when there is one (``<its directory>/jetson-traces``), else
    ``DEFAULT_DIR`` in the invocation directory."""
    if report_json:
        return (invocation_dir / report_json).parent / "jetson-traces"
    return invocation_dir / DEFAULT_DIR


def file_name(nodeid: str, suffix: str = ".trace.json") -> str:
    """A file name for a test: its node id with anything but letters, digits, '.', '-' and '_'
    as '_', shortened with a checksum when long (node ids with parameters can be)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid).strip("_") or "test"
    if len(safe) > 120:
        safe = f"{safe[:100]}-{zlib.crc32(nodeid.encode()):08x}"
    return safe + suffix


# -- the simulated timeline ------------------------------------------------------------------------
class _Events:
    def __init__(self, t0: float, limit: int) -> None:
        self.t0 = t0
        self.limit = limit
        self.events: List[Dict[str, Any]] = []
        self.dropped = 0
        self._threads: Dict[Tuple[int, str], int] = {}

    def us(self, t: float) -> float:
        return round((t - self.t0) * 1e6, 3)

    def thread(self, pid: int, name: str) -> int:
        key = (pid, name)
        tid = self._threads.get(key)
        if tid is None:
            tid = self._threads[key] = len([k for k in self._threads if k[0] == pid]) + 1
            self.events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
            self.events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                                "args": {"sort_index": tid}})
        return tid

    def full(self) -> bool:
        return len(self.events) >= self.limit

    def add(self, event: Dict[str, Any]) -> None:
        if self.full():
            self.dropped += 1
            return
        self.events.append(event)

    def slice(self, name: str, pid: int, tid: int, a: float, b: float, args: Optional[Dict[str, Any]] = None) -> None:
        ev: Dict[str, Any] = {"name": name, "ph": "X", "ts": self.us(a), "dur": round((b - a) * 1e6, 3),
                              "pid": pid, "tid": tid}
        if args:
            ev["args"] = args
        self.add(ev)


def _num(x: Any) -> Optional[float]:
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def _describe(load: Any) -> str:
    model, precision, batch = (getattr(load, k, None) for k in ("model", "precision", "batch"))
    if model is None:
        return type(load).__name__
    return f"{model} {precision} b{batch}"


def _load_args(load: Any) -> Dict[str, Any]:
    args: Dict[str, Any] = {}
    for key in ("model", "precision", "batch", "processes", "bound", "harness"):
        value = getattr(load, key, None)
        if value is not None:
            args[key] = value
    for key, scale, name in (("latency", 1e3, "latency_ms"), ("gpu_time", 1e3, "gpu_time_ms"),
                             ("gpu_clock_mhz", 1.0, "gpu_clock_mhz"), ("power", 1.0, "board_power_w")):
        value = _num(getattr(load, key, None))
        if value is not None:
            args[name] = round(value * scale, 4)
    for key in ("gpu_util",) + _ACTIVITY:
        value = _num(getattr(load, key, None))
        if value is not None:
            args[f"{key}_pct"] = round(100.0 * value if value <= 1.0 else value, 2)
    return args


def _is_host(load: Any) -> bool:
    return _num(getattr(load, "gpu_util", None)) == 0.0 and getattr(load, "cpu_util", None) is not None


def _engine(ev: _Events, a: float, b: float, load: Any) -> None:
    """A stretch of one engine's inferences: the stretch, and each inference inside it."""
    name = _describe(load)
    tid = ev.thread(_GPU, f"engine {name}")
    ev.slice(name, _GPU, tid, a, b, _load_args(load))
    step = _num(getattr(load, "latency", None)) or 0.0
    t = a
    while step > 0 and t + step <= b + 1e-12:
        if ev.full():
            ev.dropped += int((b - t) / step)
            break
        ev.slice("inference", _GPU, tid, t, t + step)
        t += step


def _pool(ev: _Events, a: float, b: float, load: Any, processes: int) -> None:
    """A pool's window: each process's time slices in turn, one per round of ``latency``."""
    name = _describe(load)
    ev.slice(f"pool: {processes} x {name}", _GPU, ev.thread(_GPU, "pool"), a, b, _load_args(load))
    tids = [ev.thread(_GPU, f"process {i}: {name}") for i in range(processes)]
    round_s = _num(getattr(load, "latency", None)) or 0.0
    slot = round_s / processes
    t = a
    while slot > 0 and t < b:
        if ev.full():
            ev.dropped += int((b - t) / slot)
            break
        for i, tid in enumerate(tids):
            s = t + i * slot
            if s >= b:
                break
            ev.slice("time slice", _GPU, tid, s, min(b, s + slot))
        t += round_s


def _load(ev: _Events, a: float, b: float, load: Any) -> None:
    if _is_host(load):
        ev.slice("host code", _CPU, ev.thread(_CPU, "measured function (host)"), a, b,
                 {"cpu_util_pct": round(float(load.cpu_util), 2)})
        return
    processes = getattr(load, "processes", None)
    if isinstance(processes, int) and processes > 1:
        _pool(ev, a, b, load, processes)
    elif getattr(load, "model", None) is not None:
        _engine(ev, a, b, load)
    else:  # a mixed pool's combined load, or a workload handed to a sampler
        ev.slice(_describe(load), _GPU, ev.thread(_GPU, "load"), a, b, _load_args(load))


def _counters(ev: _Events, m: Any) -> None:
    series = getattr(m, "telemetry_series", None)
    if series is None or not len(series) or getattr(series, "clock", "") != "virtual":
        return
    t = series.t
    ev.slice(getattr(m, "name", "measurement") or "measurement", _PLUGIN, ev.thread(_PLUGIN, "measurements"),
             float(t[0]), float(t[-1]))
    cols = {name: getattr(series, name, None) for name in ("gpu_util",) + _ACTIVITY}
    power = series.board_power_w
    for i, ti in enumerate(t):
        if ev.full():
            ev.dropped += 1
            continue
        act = {k: round(float(c[i]), 2) for k, c in cols.items() if c is not None and c[i] == c[i]}
        if act:
            ev.add({"name": "GPU %", "ph": "C", "ts": ev.us(float(ti)), "pid": _PLUGIN, "args": act})
        if power[i] == power[i]:
            ev.add({"name": "board power W", "ph": "C", "ts": ev.us(float(ti)), "pid": _PLUGIN,
                    "args": {"W": round(float(power[i]), 3)}})


def chrome_trace(window: Window, test: str, device: str = "", limit: int = MAX_EVENTS) -> Dict[str, Any]:
    """The Trace Event Format document of ``window`` (see the module's documentation)."""
    ev = _Events(window.start, limit)
    for pid, name in ((_GPU, f"GPU ({device or 'simulated'})"), (_CPU, "CPU"), (_PLUGIN, "pytest-jetson")):
        ev.events.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})
        ev.events.append({"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}})
    for rec in window.loads:
        a, b = max(float(rec[0]), window.start), min(float(rec[1]), window.end)
        if b > a:
            _load(ev, a, b, rec[2])
    if window.spans:
        tid = ev.thread(_CPU, "perf.stage")
        for name, a, b in sorted(window.spans, key=lambda s: (s[1], -s[2])):
            ev.slice(name, _CPU, tid, a, b)
    for m in window.measurements:
        _counters(ev, m)
    other: Dict[str, Any] = {"test": test, "device": device, "clock": "virtual (simulated board)",
                             "start_s": window.start, "end_s": window.end}
    if ev.dropped:
        other["truncated"] = f"{ev.dropped} events left out: a trace holds at most {limit}"
    return {"traceEvents": ev.events, "displayTimeUnit": "ms", "otherData": other}


def write(doc: Dict[str, Any], directory: Path, nodeid: str,
          root: Optional[Path] = None) -> Tuple[Optional[Path], Optional[str]]:
    """Write ``doc`` for test ``nodeid`` into ``directory``: (its path, None), or (None, why not).
    Only where ``fileio`` lets a report go (``root``: the project links may point into)."""
    path = Path(directory) / file_name(nodeid)
    try:
        fileio.check_directory(directory, root)
        fileio.check_target(path, root)
    except fileio.UnsafeTarget as exc:
        return None, f"trace of {nodeid} not written: {exc}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, separators=(",", ":"))
        os.replace(tmp, path)
    except OSError as exc:
        return None, (f"trace of {nodeid} not written: cannot write to {directory} ({exc.strerror or exc}); "
                      "make it writable, or give --jetson-report-json a writable directory (traces go beside it)")
    return path, None


# -- on a board: Nsight Systems ---------------------------------------------------------------------
@dataclass
class NsysSupport:
    """What Nsight Systems can do here: ``path`` (None: not found), ``gpu_metrics`` (the GPU
    indices it samples GPU metrics on), ``option`` (its spelling of the GPU-metrics option:
    ``--gpu-metrics-devices`` since 2024, ``--gpu-metrics-device`` before), ``why`` (why GPU
    metrics cannot be sampled, empty when they can)."""

    path: Optional[str]
    gpu_metrics: Tuple[str, ...] = ()
    option: str = "--gpu-metrics-devices"
    why: str = ""


_DEVICE_LINE = re.compile(r"^\s*(\d+)\s*[:\-]", re.M)


def nsys_support(which: Callable[[str], Optional[str]] = shutil.which,
                 run: Callable[..., Any] = subprocess.run, timeout: float = 60.0) -> NsysSupport:
    """Find ``nsys`` on PATH and ask it which GPUs it samples metrics on (``nsys profile
    --gpu-metrics-devices=help``; older releases spell it ``--gpu-metrics-device``). Jetson Orin
    (ga10b) and newer are supported by recent releases; Xavier and Nano are not."""
    path = which("nsys")
    if path is None:
        return NsysSupport(None, why="nsys is not on PATH (install Nsight Systems: JetPack's "
                                     "nsight-systems package, then put its bin directory on PATH)")
    said = ""
    for option in ("--gpu-metrics-devices", "--gpu-metrics-device"):
        try:
            done = run([path, "profile", f"{option}=help"], capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.SubprocessError) as exc:
            return NsysSupport(path, why=f"{path} could not be run ({exc})")
        said = f"{done.stdout or ''}\n{done.stderr or ''}"
        if "unrecognised option" in said.lower() or "unrecognized option" in said.lower():
            continue
        found = tuple(_DEVICE_LINE.findall(said))
        if found:
            return NsysSupport(path, found, option)
        break
    first = next((line.strip() for line in said.splitlines() if line.strip()), "no answer")
    return NsysSupport(path, why=f"{path} samples GPU metrics on no GPU of this board (it said: {first[:160]})")


def nsys_command(support: NsysSupport, nodeid: str, output: Path, pytest_args: Sequence[str] = (),
                 python: str = "python3") -> List[str]:
    """The command that re-runs test ``nodeid`` alone under Nsight Systems into ``output``
    (``.nsys-rep`` is added by nsys): CUDA (graph nodes too), NVTX (``perf.stage`` ranges) and OS
    runtime, GPU metrics sampling on every GPU nsys supports here. ``pytest_args``: the session's
    own options that shape the run (device, power mode, backend, seed, duration)."""
    cmd = [support.path or "nsys", "profile", "--trace=cuda,nvtx,osrt", "--cuda-graph-trace=node",
           "--sample=none", "--force-overwrite=true", f"--output={output}"]
    if support.gpu_metrics:
        cmd.append(f"{support.option}={','.join(support.gpu_metrics)}")
    return cmd + [python, "-m", "pytest", nodeid, "-p", "no:cacheprovider", "-q", *pytest_args]


# -- GPU metrics read back from the nsys report ------------------------------------------------------
#: nsys's GPU metric names (TARGET_INFO_GPU_METRICS.metricName, up to the unit in brackets) each
#: activity metric sums: DRAM utilisation is read plus write, shares of one peak bandwidth
GPU_METRIC_NAMES = {
    "sm_active": ("SMs Active",),
    "tensor_active": ("Tensor Active",),
    "issue_active": ("SM Issue",),
    "dram_util": ("DRAM Read Bandwidth", "DRAM Write Bandwidth"),
}
_UNIT = "[Throughput %]"
_RANGE = re.compile(r"^perf\.measure (\d+): ")


@dataclass
class GpuMetrics:
    """Means of the GPU metrics nsys sampled: over the whole report (``whole``), and inside each
    ``perf.measure`` range by its index in the test (``by_measurement``); ``note``: why there are
    none, or what is missing."""

    whole: Dict[str, float]
    by_measurement: Dict[int, Dict[str, float]]
    note: str = ""


def _tables(db: Any) -> set:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _ranges(db: Any, tables: set) -> Dict[int, Tuple[int, int]]:
    """index -> (start, end) ns of each ``perf.measure`` NVTX range; a range's text is in ``text``
    or, for a registered string, in StringIds through ``textId``."""
    if "NVTX_EVENTS" not in tables:
        return {}
    cols = {r[1] for r in db.execute("PRAGMA table_info(NVTX_EVENTS)")}
    if "textId" in cols and "StringIds" in tables:
        rows = db.execute("SELECT e.start, e.end, COALESCE(e.text, s.value) FROM NVTX_EVENTS e "
                          "LEFT JOIN StringIds s ON s.id = e.textId")
    else:
        rows = db.execute("SELECT start, end, text FROM NVTX_EVENTS")
    out: Dict[int, Tuple[int, int]] = {}
    for start, end, text in rows:
        found = _RANGE.match(str(text or ""))
        if found and end is not None and end > start:
            out.setdefault(int(found.group(1)), (int(start), int(end)))
    return out


def _activity(samples: Dict[str, List[float]]) -> Dict[str, float]:
    out: Dict[str, float] = {}
    for metric, names in GPU_METRIC_NAMES.items():
        parts = [samples[n] for n in names if samples.get(n)]
        if len(parts) == len(names):
            out[metric] = round(sum(sum(p) / len(p) for p in parts), 2)
    return out


def gpu_metrics(path: Path) -> GpuMetrics:
    """The activity metrics in an nsys report exported to SQLite: the mean of every sample of
    each metric (of the GPU with the most samples), over the whole report and inside each
    ``perf.measure`` range. Tables and columns as the Nsight Systems SQLite Schema Reference gives
    them: TARGET_INFO_GPU_METRICS (typeId, metricId, metricName), GPU_METRICS (timestamp, typeId,
    metricId, value), NVTX_EVENTS (start, end, text, textId)."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return GpuMetrics({}, {}, f"{path} could not be read ({exc})")
    try:
        tables = _tables(db)
        if not {"GPU_METRICS", "TARGET_INFO_GPU_METRICS"} <= tables:
            return GpuMetrics({}, {}, f"{path.name} holds no GPU metrics (nsys sampled none on this board)")
        names = {(t, m): str(n).split(" [")[0] for t, m, n in db.execute(
            "SELECT typeId, metricId, metricName FROM TARGET_INFO_GPU_METRICS") if _UNIT in str(n)}
        counts = db.execute("SELECT typeId, COUNT(*) FROM GPU_METRICS GROUP BY typeId ORDER BY 2 DESC").fetchall()
        if not counts:
            return GpuMetrics({}, {}, f"{path.name} holds no GPU metric samples")
        gpu = counts[0][0]
        ranges = _ranges(db, tables)
        whole: Dict[str, List[float]] = {}
        inside: Dict[int, Dict[str, List[float]]] = {i: {} for i in ranges}
        for ts, metric_id, value in db.execute(
                "SELECT timestamp, metricId, value FROM GPU_METRICS WHERE typeId = ? ORDER BY timestamp", (gpu,)):
            name = names.get((gpu, metric_id))
            if name is None or value is None:
                continue
            whole.setdefault(name, []).append(float(value))
            for i, (a, b) in ranges.items():
                if ts is not None and a <= ts <= b:
                    inside[i].setdefault(name, []).append(float(value))
    except sqlite3.Error as exc:
        return GpuMetrics({}, {}, f"{path.name}: its GPU metrics could not be read ({exc})")
    finally:
        db.close()
    out = GpuMetrics(_activity(whole), {i: _activity(s) for i, s in inside.items() if _activity(s)})
    missing = [m for m in GPU_METRIC_NAMES if m not in out.whole]
    if missing:
        out.note = f"{path.name}: nsys sampled no {', '.join(missing)} on this board"
    return out


def export_command(support: NsysSupport, report: Path, sqlite_path: Path) -> List[str]:
    return [support.path or "nsys", "export", "--type", "sqlite", "--force-overwrite=true",
            f"--output={sqlite_path}", str(report)]


def read_gpu_metrics(support: NsysSupport, report: Path, run: Callable[..., Any] = subprocess.run,
                     timeout: float = 600.0) -> GpuMetrics:
    """``report`` (an .nsys-rep) exported beside it to SQLite, and its GPU metrics read back; a
    note, never an exception, where nsys cannot export or the report holds none."""
    if not support.gpu_metrics:
        return GpuMetrics({}, {}, f"{report.name}: no GPU metrics ({support.why})")
    sqlite_path = report.with_name(report.name[:-len(".nsys-rep")] + ".sqlite") \
        if report.name.endswith(".nsys-rep") else report.with_suffix(".sqlite")
    try:
        done = run(export_command(support, report, sqlite_path), capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as exc:
        return GpuMetrics({}, {}, f"{report.name}: nsys export could not run ({exc})")
    if getattr(done, "returncode", 1) != 0 or not sqlite_path.exists():
        said = (getattr(done, "stderr", "") or getattr(done, "stdout", "") or "").strip().splitlines()[-1:] or ["no output"]
        return GpuMetrics({}, {}, f"{report.name}: nsys export to SQLite failed ({said[0][:200]})")
    return gpu_metrics(sqlite_path)
