"""The baseline store: schema, stable files, atomic locked writes, clear errors on bad files."""

import json
import multiprocessing
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pytest_jetson.errors import BaselineError
from pytest_jetson.gate import baseline, keys
from pytest_jetson.run.measurement import Measurement

ROOT = Path(__file__).resolve().parents[2]
FP = {"device": "orin-nano-8gb", "power_mode": "15W", "simulated": True}
NODE = "tests/perf/test_x.py::test_a"


def measurement(scale=1.0, n=500, seed=0):
    rng = np.random.default_rng(seed)
    lat = list(0.01 * scale * rng.lognormal(0, 0.1, n))
    return Measurement(name="m", batch=4, latencies=lat, duration=float(sum(lat)), items=4 * n,
                       precision="fp16", engine_memory=2 ** 26)


def entry(scale=1.0, seed=0):
    m = measurement(scale, seed=seed)
    return baseline.make_entry(m, baseline.fingerprint(m, FP))


@pytest.fixture
def store(tmp_path):
    return baseline.BaselineStore(tmp_path / "baselines", "orin-nano-8gb")


def test_file_layout_schema_and_stable_text(store):
    store.update(NODE, {NODE: entry()})
    path = store.path_for(NODE)
    assert path == store.root / "orin-nano-8gb" / "tests" / "perf" / "test_x.py.json"
    text = path.read_text()
    assert text.endswith("}\n") and text == baseline.dump_baseline(json.loads(text))
    doc = json.loads(text)
    assert doc["schema"] == 2 and doc["device"] == "orin-nano-8gb"
    e = doc["entries"][NODE]
    assert e["fingerprint"]["precision"] == "fp16" and e["fingerprint"]["batch"] == 4
    p99 = e["metrics"]["latency_p99"]
    assert set(p99) == {"value", "n", "se_log", "df"}
    assert len(e["samples"]["latency"]) == baseline.SAMPLE_POINTS
    assert e["metrics"]["memory"]["value"] == 2 ** 26  # a byte count read once stays exact
    # one line per metric, per sample and for the fingerprint
    lines = text.splitlines()
    assert any(line.strip().startswith('"latency_p99": {') and line.rstrip().endswith("},") for line in lines)
    assert sum(1 for line in lines if '"fingerprint"' in line) == 1
    ref = store.lookup(NODE)
    assert ref.metrics["latency_p99"].value == pytest.approx(p99["value"])
    assert len(ref.metrics["latency_p99"].sample) == baseline.SAMPLE_POINTS


def test_rerecording_unchanged_numbers_leaves_the_file_alone(store):
    store.update(NODE, {NODE: entry(seed=1)})
    before = store.path_for(NODE).read_text()
    assert store.update(NODE, {NODE: entry(seed=2)}) == []
    assert store.path_for(NODE).read_text() == before
    assert store.update(NODE, {NODE: entry(1.3, seed=3)}) == [NODE]


def test_new_mode_writes_only_new_entries(store):
    store.update(NODE, {NODE: entry()})
    other = NODE + "2"
    assert store.update(NODE, {NODE: entry(2.0), other: entry()}, mode="new") == [other]


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("{not json", "not valid JSON"),
        ('{"schema": 1, "entries": {"a": {"metrics": {"throughput": {"value": 1', "not valid JSON"),
        ("", "is empty"),
        ('{"schema": 99, "entries": {}}', "newer pytest-jetson"),
        ('{"schema": 1, "entries": {"a": {"metrics": {"throughput": {"value": NaN}}}}}', "NaN"),
        ('{"schema": 1, "entries": {"a": {"metrics": {"throughput": {"value": "fast"}}}}}', "must be a finite number"),
        ("[1, 2]", "not a pytest-jetson baseline"),
    ],
)
def test_unreadable_file_is_named_with_the_fix_and_never_overwritten(store, content, fragment):
    path = store.path_for(NODE)
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(BaselineError) as info:
        store.lookup(NODE)
    msg = str(info.value)
    assert fragment in msg and str(path.name) in msg
    assert "upgrade" in msg or "git checkout" in msg
    with pytest.raises(BaselineError):
        store.update(NODE, {NODE: entry()})
    with pytest.raises(BaselineError):
        baseline.update_file(path, {NODE: entry()})
    assert path.read_text() == content


def _writer(root, worker, count):
    store = baseline.BaselineStore(root, "orin-nano-8gb")
    for i in range(count):
        key = f"{NODE}[w{worker}-{i}]"
        store.update(NODE, {key: entry(seed=worker * 100 + i)})


@pytest.mark.slow
def test_concurrent_processes_lose_no_entry(tmp_path):
    root = tmp_path / "baselines"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(root), w, 8)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    doc = json.loads((root / "orin-nano-8gb" / "tests" / "perf" / "test_x.py.json").read_text())
    assert len(doc["entries"]) == 32


@pytest.mark.slow
def test_interrupted_writer_leaves_old_or_new_file(tmp_path):
    """Kill writers at random moments: every file left is a complete, readable baseline."""
    root = tmp_path / "baselines"
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from tests.gate.test_baseline import _writer
        _writer({str(root)!r}, int(sys.argv[1]), 10_000)
    """)
    for i in range(4):
        p = subprocess.Popen([sys.executable, "-c", script, str(i)])
        try:
            p.wait(timeout=1.0 + 0.37 * i)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT if i % 2 else signal.SIGKILL)
            p.wait(30)
        path = root / "orin-nano-8gb" / "tests" / "perf" / "test_x.py.json"
        if path.exists():
            baseline.read_file(path)
    leftovers = [f for f in (root / "orin-nano-8gb" / "tests" / "perf").iterdir() if f.suffix == ".tmp"]
    # SIGKILL may leave a temp file behind, never a partial baseline.
    assert all(f.name.startswith(".test_x.py.json.") for f in leftovers)


def test_unused_entries_and_prune(store):
    store.update(NODE, {NODE: entry(), NODE + "_old": entry()})
    stale = store.unused([NODE], ["tests/perf/test_x.py"])
    assert stale == {store.path_for(NODE): [NODE + "_old"]}
    assert store.prune(stale) == 1
    assert list(json.loads(store.path_for(NODE).read_text())["entries"]) == [NODE]


def test_entry_keys_for_several_measurements():
    ms = [measurement(), measurement(), measurement()]
    ms[2].name = "other"
    names = [m.name for m in ms]
    assert keys.entry_keys(NODE, names[:1]) == [NODE]
    assert keys.entry_keys(NODE, names) == [f"{NODE}|m#0", f"{NODE}|m#1", f"{NODE}|other"]


def test_tests_outside_the_rootdir_stay_inside_the_store(store):
    path = store.path_for("../other/test_y.py::test_a")
    assert path == store.directory / "_up_" / "other" / "test_y.py.json"


# -- recording: staged, one write per file, no churn ------------------------------------------------
def _nodes(n, module="tests/perf/test_x.py"):
    return [f"{module}::test_{i}" for i in range(n)]


def test_a_session_writes_each_file_once_at_the_end(store, monkeypatch):
    writes = []
    real = baseline.fileio.write_atomic
    monkeypatch.setattr(baseline.fileio, "write_atomic", lambda p, d: (writes.append(Path(p).name), real(p, d)))
    for i, node in enumerate(_nodes(30) + _nodes(5, "tests/perf/test_y.py")):
        store.stage(node, node, entry(seed=i))
    assert not store.directory.exists()  # nothing before the end of the session
    flushed = store.flush()
    assert flushed.count == 35 and not flushed.errors
    assert sorted(w for w in writes if w.endswith(".json")) == ["test_x.py.json", "test_y.py.json"]
    assert (store.root / ".gitignore").read_text() == baseline.GITIGNORE


def test_rerecording_with_another_seed_writes_zero_bytes_and_takes_no_lock(store):
    for i, node in enumerate(_nodes(20)):
        store.stage(node, node, entry(seed=i))
    store.flush()
    path = store.path_for(NODE)
    baseline.lock_path(path).unlink()
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    for i, node in enumerate(_nodes(20)):
        store.stage(node, node, entry(seed=1000 + i))
    assert store.flush().count == 0
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    assert not baseline.lock_path(path).exists()


def test_a_real_change_rewrites_a_handful_of_lines(store):
    import difflib

    for i, node in enumerate(_nodes(10)):
        store.stage(node, node, entry(seed=i))
    store.flush()
    path = store.path_for(NODE)
    before = path.read_text().splitlines()
    node = _nodes(10)[3]
    store.stage(node, node, entry(1.3, seed=77))
    assert store.flush().written == {path: [node]}
    diff = [line for line in difflib.unified_diff(before, path.read_text().splitlines(), n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    # the moved metrics (latency and throughput ones), their samples and the date: no more
    assert 4 <= len(diff) // 2 <= 12, diff
    assert all("memory" not in line for line in diff)


def test_force_rewrites_and_new_adds_only_missing(store):
    node = _nodes(1)[0]
    store.stage(node, node, entry(seed=1))
    store.flush()
    store.stage(node, node, entry(seed=2))
    assert store.flush(mode="all").count == 0
    store.stage(node, node, entry(seed=2, scale=1.5))
    assert store.flush(mode="new").count == 0
    store.stage(node, node, entry(seed=2))
    assert store.flush(mode="force").count == 1
    with pytest.raises(ValueError):
        baseline.merge_entry({}, {}, mode="sometimes")


def test_peaks_without_a_noise_estimate_do_not_churn():
    old, new = entry(seed=1), entry(seed=2)
    # a version 1 peak: no error stored; a latency_max that moved with the outliers of one run
    old["metrics"]["latency_max"] = {"value": old["metrics"]["latency_max"]["value"] * 2.5, "n": 500}
    assert baseline.merge_entry(old, new, "all") is None


def test_pool_entries_gives_the_mean_and_the_spread_between_runs():
    es = [entry(scale=s, seed=i) for i, s in enumerate((1.0, 1.02, 0.98))]
    pooled = baseline.pool_entries(es)
    m = pooled["metrics"]["latency_mean"]
    assert m["runs"] == 3 and 0.01 < m["between"] < 0.03
    ref = baseline.entry_ref(pooled)
    assert ref.metrics["latency_mean"].runs == 3


def test_version_1_files_are_read_and_kept_until_something_changes(tmp_path):
    v1 = ROOT / "baselines" / "orin-nano-8gb" / "tests" / "perf" / "test_orin_nano_concurrency.py.json"
    doc = json.loads(v1.read_text())
    if doc["schema"] != 1:
        pytest.skip("the example baselines were re-recorded as version 2")
    read = baseline.read_file(v1)
    key = sorted(read["entries"])[0]
    e = read["entries"][key]
    assert set(e["metrics"]["latency_mean"]) <= {"value", "n", "se_log", "df"}
    assert e["metrics"]["throughput"]["value"] == doc["entries"][key]["metrics"]["throughput"]["value"]
    ref = baseline.entry_ref(e)
    assert ref.metrics["latency_p50"].sample


# -- bad input: a clear error naming the file, the field and the fix; nothing rewritten --------------
GOOD = {"value": 1.0, "n": 10, "se_log": 0.01, "df": 9}


@pytest.mark.parametrize("field, value, fragment", [
    ("n", "ten", "'n' must be a whole number"),
    ("n", 2.5, "'n' must be a whole number"),
    ("se_log", "small", "'se_log' must be a number from 0 to 10, or null"),
    ("se_log", [0.1], "'se_log' must be a number from 0 to 10, or null"),
    ("ci", [1, "x"], "'ci' must be null or a list of two numbers"),
    ("ci", 3, "'ci' must be null or a list of two numbers"),
    ("sample", 5, "'sample' must be null or the name of a sample"),
])
def test_a_field_of_the_wrong_type_is_named(store, field, value, fragment):
    metric = dict(GOOD, **{field: value})
    text = json.dumps({"schema": 1, "entries": {NODE: {"metrics": {"throughput": metric}}}})
    path = store.path_for(NODE)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(BaselineError) as info:
        store.lookup(NODE)
    msg = str(info.value)
    assert fragment in msg and str(path) in msg and repr(NODE) in msg and "'throughput'" in msg
    assert "re-record" in msg
    store.stage(NODE, NODE, entry())
    flushed = store.flush()
    assert path in flushed.errors and path.read_text() == text


@pytest.mark.parametrize("bad, fragment", [
    ({"fingerprint": "orin", "metrics": {}}, "'fingerprint' must be an object"),
    ({"metrics": {}, "samples": {"latency": [1, "x"]}}, "sample 'latency' must be a list of finite numbers"),
    ({"metrics": []}, "'metrics' must be an object"),
])
def test_entry_level_fields_of_the_wrong_type_are_named(store, bad, fragment):
    path = store.path_for(NODE)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"schema": 2, "entries": {NODE: bad}}))
    with pytest.raises(BaselineError, match=fragment):
        store.lookup(NODE)


def test_json_nested_100000_deep_is_an_error_not_a_crash(store):
    path = store.path_for(NODE)
    path.parent.mkdir(parents=True)
    text = "[" * 100_000 + "]" * 100_000
    path.write_text(text)
    with pytest.raises(BaselineError, match="nested too deeply"):
        store.lookup(NODE)
    assert path.read_text() == text


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_reported_without_blocking(store):
    import os

    path = store.path_for(NODE)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    with pytest.raises(BaselineError, match="FIFO"):
        store.lookup(NODE)
    store.stage(NODE, NODE, entry())
    assert path in store.flush().errors


def test_a_link_to_dev_zero_is_reported(store):
    path = store.path_for(NODE)
    path.parent.mkdir(parents=True)
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    path.symlink_to("/dev/zero")
    with pytest.raises(BaselineError, match="character device.*link to /dev/zero"):
        store.lookup(NODE)


def test_a_directory_where_a_file_should_be(store):
    path = store.path_for(NODE)
    path.mkdir(parents=True)
    with pytest.raises(BaselineError, match="a directory where a file should be"):
        store.lookup(NODE)
    store.stage(NODE, NODE, entry())
    assert "directory where a file should be" in store.flush().errors[path]
    assert path.is_dir()


def test_a_file_where_a_directory_should_be(store):
    store.root.mkdir(parents=True)
    (store.root / "orin-nano-8gb").write_text("not a directory")
    with pytest.raises(BaselineError, match="is a file where a directory should be"):
        store.lookup(NODE)
    store.stage(NODE, NODE, entry())
    msg = store.flush().errors[store.path_for(NODE)]
    assert "orin-nano-8gb is a file where a directory should be" in msg
    assert (store.root / "orin-nano-8gb").read_text() == "not a directory"


@pytest.mark.skipif(__import__("os").geteuid() == 0 if hasattr(__import__("os"), "geteuid") else True,
                    reason="root writes into read-only directories")
def test_a_read_only_directory_during_recording(store):
    import os

    node = _nodes(1)[0]
    store.stage(node, node, entry(seed=1))
    store.flush()
    path = store.path_for(node)
    before = path.read_bytes()
    os.chmod(path.parent, 0o555)
    try:
        store.stage(node, node, entry(seed=2, scale=1.5))
        msg = store.flush().errors[path]
    finally:
        os.chmod(path.parent, 0o755)
    assert "read-only" in msg and "--jetson-baselines" in msg
    assert path.read_bytes() == before


def test_a_read_only_directory_as_root_is_reported_through_the_write_error(store, monkeypatch):
    """Where the test runs as root (who may write anyway), the same path is taken by a write that
    fails with EACCES, as it does for any other user."""
    node = _nodes(1)[0]

    def denied(path, data):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(baseline.fileio, "write_atomic", denied)
    store.stage(node, node, entry())
    msg = store.flush().errors[store.path_for(node)]
    assert "read-only" in msg and "--jetson-baselines" in msg and not store.path_for(node).exists()


# -- locks, temporary files ------------------------------------------------------------------------
def test_the_lock_lives_beside_the_file_and_is_ignored_by_git(store, tmp_path):
    node = _nodes(1)[0]
    store.stage(node, node, entry())
    store.flush()
    path = store.path_for(node)
    assert baseline.lock_path(path) == path.parent / ".test_x.py.json.lock"
    assert baseline.lock_path(path).exists()
    if subprocess.run(["git", "--version"], capture_output=True).returncode != 0:
        pytest.skip("no git")
    subprocess.run(["git", "init", "-q", str(store.root)], check=True)
    leftover = path.parent / ".test_x.py.json.abc123.tmp"
    leftover.write_text("half")
    out = subprocess.run(["git", "-C", str(store.root), "status", "--porcelain", "--untracked-files=all"],
                         capture_output=True, text=True, check=True).stdout
    assert ".lock" not in out and ".tmp" not in out and "test_x.py.json" in out
    store.stage(node, node, entry(scale=2.0))
    store.flush()
    assert not leftover.exists()  # the next writer clears what a killed one left


def _record_in_process(root, tmpdir, worker, n):
    import os
    import tempfile

    os.environ["TMPDIR"] = tmpdir
    tempfile.tempdir = None
    store = baseline.BaselineStore(root, "orin-nano-8gb")
    for i in range(n):
        node = f"{NODE}[w{worker}-{i}]"
        store.stage(node, node, entry(seed=worker * 1000 + i))
        store.flush()


@pytest.mark.slow
def test_two_runs_with_different_tmpdirs_on_one_checkout_lose_nothing(tmp_path):
    root = str(tmp_path / "baselines")
    ctx = multiprocessing.get_context("spawn")
    procs = []
    for w in range(2):
        tmp = tmp_path / f"tmp{w}"
        tmp.mkdir()
        procs.append(ctx.Process(target=_record_in_process, args=(root, str(tmp), w, 25)))
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    doc = baseline.read_file(Path(root) / "orin-nano-8gb" / "tests" / "perf" / "test_x.py.json")
    assert len(doc["entries"]) == 50


# -- keys, places, pruning -------------------------------------------------------------------------
def test_keys_do_not_depend_on_the_rootdir_pytest_chose(tmp_path):
    project = tmp_path / "proj"
    (project / "tests" / "perf").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (project / "tests" / "perf" / "test_m.py").write_text("")
    from_ini = baseline.baseline_key(project, "tests/perf/test_m.py::test_a[b8]")
    from_args = baseline.baseline_key(project / "tests", "perf/test_m.py::test_a[b8]")
    from_deeper = baseline.baseline_key(project / "tests" / "perf", "test_m.py::test_a[b8]")
    assert from_ini == from_args == from_deeper == "tests/perf/test_m.py::test_a[b8]"
    assert baseline.project_root(project / "tests" / "perf" / "test_m.py") == project.resolve()


def test_a_baselines_directory_outside_the_project_warns(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    assert baseline.outside_project(project / "baselines", project) is None
    msg = baseline.outside_project(tmp_path / "elsewhere", project)
    assert "outside the project" in msg and "--jetson-baselines" in msg


def test_pruning_never_deletes_what_it_cannot_attribute(store):
    mine, gone = "tests/perf/test_x.py::test_a", "tests/perf/test_x.py::test_removed"
    foreign = "perf/test_x.py::test_a"  # keyed under another rootdir: its own file, not this one
    store.update(mine, {mine: entry(), gone: entry()})
    stale = {store.path_for(mine): [gone, foreign], store.directory / "tests" / "old" / "test_z.py.json":
             ["tests/old/test_z.py::test_q"]}
    allowed = store.prunable(stale, collected=[mine])
    assert allowed == {store.path_for(mine): [gone]}
