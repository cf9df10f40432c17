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
from pytest_jetson.gate import baseline
from pytest_jetson.run.measurement import Measurement

ROOT = Path(__file__).resolve().parents[1]
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
        from tests.test_gate_baseline import _writer
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
    assert baseline.entry_keys(NODE, ms[:1]) == [NODE]
    assert baseline.entry_keys(NODE, ms) == [f"{NODE}|m#0", f"{NODE}|m#1", f"{NODE}|other"]


def test_tests_outside_the_rootdir_stay_inside_the_store(store):
    path = store.path_for("../other/test_y.py::test_a")
    assert path == store.directory / "_up_" / "other" / "test_y.py.json"
