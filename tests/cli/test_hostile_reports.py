"""Every command that reads a report, given something that is not one: a clear one-line error and
exit 2, never a traceback, never a hang, and the file left as it was."""

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SUITE = '''
import pytest

@pytest.mark.perf(throughput="5%")
def test_one(trt_engine, perf):
    perf.measure(trt_engine("mobilenet_v2"), duration="0.2s")
'''

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), MPLBACKEND="Agg")


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pytest_jetson.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=60, env=ENV)


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    (root / "test_a.py").write_text(SUITE)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--jetson-device",
                    "orin-nano", "--jetson-report-json", "good.json", "test_a.py"], cwd=root, check=True,
                   capture_output=True, env=ENV, timeout=300)
    return json.loads((root / "good.json").read_text())


def _changed(doc, change):
    doc = copy.deepcopy(doc)
    change(doc)
    return json.dumps(doc)


def _first(doc):
    return doc["tests"][0]["measurements"][0]


BAD = {
    "a FIFO": None,
    "a link to /dev/zero": None,
    "a directory": None,
    "empty": "",
    "not JSON": "{nope",
    "nested 100,000 deep": "[" * 100_000 + "]" * 100_000,
    "a 400-digit integer": lambda d: d.__setitem__("x", 10 ** 400),
    "NaN": lambda d: d.__setitem__("x", float("nan")),
    "a key twice": "dup",
    "tests is an object": lambda d: d.__setitem__("tests", {"a": 1}),
    "a test is a string": lambda d: d.__setitem__("tests", ["x"]),
    "throughput 'fast'": lambda d: _first(d)["summary"].__setitem__("throughput", "fast"),
    "items 'many'": lambda d: _first(d).__setitem__("items", "many"),
    "latencies an object": lambda d: _first(d).__setitem__("latencies", {"a": 1}),
    "duration 1e308": lambda d: _first(d).__setitem__("duration", 1e308),
    "a kept latency 1e308": lambda d: _first(d)["metrics"]["latency_mean"].__setitem__("value", 1e308),
    "another JSON document": '{"name": "package", "version": "1.0"}',
}


def _make(path: Path, bad: str, good_doc) -> None:
    spec = BAD[bad]
    if bad == "a FIFO":
        os.mkfifo(path)
    elif bad == "a link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif bad == "a directory":
        path.mkdir()
    elif bad == "a key twice":
        text = json.dumps(good_doc)
        path.write_text(text.replace('"tests": [', '"tests": [], "tests": [', 1))
    elif bad in ("NaN", "a 400-digit integer"):
        doc = copy.deepcopy(good_doc)
        spec(doc)
        path.write_text(json.dumps(doc))
    elif callable(spec):
        path.write_text(_changed(good_doc, spec))
    else:
        path.write_text(spec)


COMMANDS = {
    "compare (head)": lambda bad, good: ["compare", good, bad],
    "compare (base)": lambda bad, good: ["compare", bad, good],
    "show": lambda bad, good: ["show", bad],
    "history": lambda bad, good: ["history", "--no-plots", bad],
    "export": lambda bad, good: ["export", "--format", "bencher", bad],
    "explain": lambda bad, good: ["explain", bad],
}
# explain reads a report's layer profiles and nothing else: figures it does not read cannot mislead it
EXPLAIN_IGNORES = {"throughput 'fast'", "items 'many'", "latencies an object", "duration 1e308",
                   "a kept latency 1e308"}
# show lists baseline files: an empty directory holds none, which is not an error
SHOW_ACCEPTS = {"a directory"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("bad", sorted(BAD))
def test_a_bad_report_is_one_clear_line(tmp_path, good, command, bad):
    if command == "explain" and bad in EXPLAIN_IGNORES or command == "show" and bad in SHOW_ACCEPTS:
        pytest.skip("not read by this command")
    (tmp_path / "good.json").write_text(json.dumps(good))
    path = tmp_path / "bad.json"
    _make(path, bad, good)
    before = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    proc = _cli(*COMMANDS[command](path.name, "good.json"), cwd=tmp_path)
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.returncode != 0, proc.stdout
    assert "bad.json" in proc.stderr + proc.stdout
    if before is not None:
        assert path.read_bytes() == before


@pytest.mark.parametrize("bad", ["a FIFO", "a link to /dev/zero", "a directory"])
def test_sweep_json_is_never_written_to_a_special_file(tmp_path, bad):
    path = tmp_path / "rows.json"
    _make(path, bad, {})
    proc = _cli("sweep", "--device", "orin-nano", "--model", "mobilenet_v2", "--json", path.name, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "rows.json" in proc.stderr
    assert path.is_symlink() or path.is_dir() or path.is_fifo()


def test_plot_out_that_is_a_file_is_refused(tmp_path, good):
    pytest.importorskip("matplotlib")
    (tmp_path / "good.json").write_text(json.dumps(good))
    (tmp_path / "figures").write_text("keep")
    proc = _cli("plot", "good.json", "--out", "figures", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "figures is not a directory" in proc.stderr
    assert (tmp_path / "figures").read_text() == "keep"


def test_history_of_a_directory_leaves_out_json_that_is_no_report(tmp_path, good):
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("1.json", "2.json"):
        (runs / name).write_text(json.dumps(good))
    (runs / "package.json").write_text('{"name": "x"}')
    proc = _cli("history", "--no-plots", "runs", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "left out 1 JSON file(s) that are not pytest-jetson reports: package.json" in proc.stderr
    assert "history of 2 runs" in proc.stdout
