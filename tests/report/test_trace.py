"""Traces: the simulated timeline as Trace Event Format JSON, its file, and nsys on a board."""

import json
import os
import subprocess
import types

import pytest

from pytest_jetson import sim
from pytest_jetson.report.trace import (
    Window,
    chrome_trace,
    file_name,
    nsys_command,
    nsys_support,
    trace_dir,
    write,
)
from pytest_jetson.run.host_time import HostLoad


def events(doc, ph="X"):
    return [e for e in doc["traceEvents"] if e["ph"] == ph]


def threads(doc):
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}


def test_an_engine_stretch_its_inferences_host_code_and_stages_land_on_their_rows():
    pred = sim.predict("orin-nano", "resnet50", "int8", 1)
    host = HostLoad(pred, cores=6, core_w=1.0, idle_w=3.5)
    lat = pred.latency
    loads = [[0.0, 0.001, host], [0.001, 0.001 + 3 * lat, pred], [5.0, 6.0, pred]]  # the last: after the test
    doc = chrome_trace(Window(0.0, 1.0, [("pre", 0.0, 0.001)], loads), "t.py::test", device="Orin Nano")
    json.dumps(doc)  # plain JSON
    names = threads(doc)
    by_row = {}
    for e in events(doc):
        by_row.setdefault(names[(e["pid"], e["tid"])], []).append(e)
    engine = by_row["engine resnet50 int8 b1"]
    stretch = [e for e in engine if e["name"] == "resnet50 int8 b1"]
    assert len(stretch) == 1 and stretch[0]["ts"] == pytest.approx(1000.0)
    assert stretch[0]["args"]["tensor_active_pct"] == pytest.approx(100 * pred.tensor_active, abs=0.01)
    assert len([e for e in engine if e["name"] == "inference"]) == 3
    assert [e["name"] for e in by_row["measured function (host)"]] == ["host code"]
    assert [(e["name"], e["dur"]) for e in by_row["perf.stage"]] == [("pre", 1000.0)]
    assert doc["otherData"]["test"] == "t.py::test"


def test_a_pool_takes_turns_on_the_gpu_one_row_per_process():
    pred = sim.predict("orin-nano", "resnet50", "int8", 1, processes=4)
    doc = chrome_trace(Window(0.0, 0.5, [], [[0.0, 0.5, pred]]), "t")
    rows = {v for v in threads(doc).values() if v.startswith("process ")}
    assert len(rows) == 4
    slices = sorted((e["ts"], e["tid"]) for e in events(doc) if e["name"] == "time slice")
    first_round = [tid for _, tid in slices[:4]]
    assert len(set(first_round)) == 4  # each process once per round
    # slices never overlap: the GPU runs one process at a time
    ends = sorted((e["ts"], e["ts"] + e["dur"]) for e in events(doc) if e["name"] == "time slice")
    assert all(b[0] >= a[1] - 0.01 for a, b in zip(ends, ends[1:]))  # (to the 1 ns printed)


def test_a_long_window_is_cut_and_says_so():
    pred = sim.predict("orin-nano", "resnet50", "int8", 1)
    doc = chrome_trace(Window(0.0, 10.0, [], [[0.0, 10.0, pred]]), "t", limit=200)
    assert len(doc["traceEvents"]) <= 200
    assert "left out" in doc["otherData"]["truncated"]


def test_the_file_is_named_after_the_test_and_lands_beside_the_json_report(tmp_path):
    assert file_name("tests/perf/test_x.py::test_a[int8-p4]") == "tests_perf_test_x.py_test_a_int8-p4.trace.json"
    long = file_name("t.py::test[" + "x" * 300 + "]")
    assert len(long) < 140 and long != file_name("t.py::test[" + "y" * 300 + "]")
    assert trace_dir("out/report.json", tmp_path) == tmp_path / "out" / "jetson-traces"
    assert trace_dir(None, tmp_path) == tmp_path / ".jetson-traces"
    path, note = write({"traceEvents": []}, tmp_path / "traces", "t.py::test")
    assert note is None and json.loads(path.read_text()) == {"traceEvents": []}


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs a non-root POSIX user")
def test_an_unwritable_directory_is_a_note(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        path, note = write({"traceEvents": []}, locked / "traces", "t.py::test")
    finally:
        locked.chmod(0o700)
    assert path is None and "cannot write" in note and "t.py::test" in note


def test_a_file_in_the_way_of_the_directory_is_a_note(tmp_path):
    blocker = tmp_path / "traces"
    blocker.write_text("a file, not a directory")
    path, note = write({"traceEvents": []}, blocker, "t.py::test")
    assert path is None and "not written" in note and str(blocker) in note


# -- Nsight Systems on a board ----------------------------------------------------------------------
def fake_run(stdout_by_option):
    calls = []

    def run(cmd, **kw):
        calls.append(cmd)
        option = cmd[-1].split("=")[0]
        return types.SimpleNamespace(returncode=0, stdout=stdout_by_option.get(option, ""), stderr="")

    return run, calls


def test_no_nsys_says_so():
    s = nsys_support(which=lambda name: None)
    assert s.path is None and "not on PATH" in s.why


def test_nsys_that_samples_the_orin_gpu():
    run, calls = fake_run({"--gpu-metrics-devices": "Possible --gpu-metrics-devices values are:\n"
                                                    "\t0: Orin (nvgpu) ga10b\n\tall: Select all\n\tnone: Disable"})
    s = nsys_support(which=lambda name: "/usr/bin/nsys", run=run)
    assert s.gpu_metrics == ("0",) and s.option == "--gpu-metrics-devices" and not s.why
    assert calls == [["/usr/bin/nsys", "profile", "--gpu-metrics-devices=help"]]


def test_an_older_nsys_spells_the_option_in_the_singular():
    run, calls = fake_run({"--gpu-metrics-devices": "unrecognised option '--gpu-metrics-devices=help'",
                           "--gpu-metrics-device": "Possible values:\n 0: Orin\n all"})
    s = nsys_support(which=lambda name: "/opt/nsys", run=run)
    assert s.option == "--gpu-metrics-device" and s.gpu_metrics == ("0",) and len(calls) == 2


def test_nsys_without_gpu_metrics_on_this_board_says_why():
    run, _ = fake_run({"--gpu-metrics-devices": "GPU Metrics are not supported on this platform"})
    s = nsys_support(which=lambda name: "/usr/bin/nsys", run=run)
    assert s.gpu_metrics == () and "not supported on this platform" in s.why


def test_nsys_that_cannot_run_says_why():
    def run(cmd, **kw):
        raise subprocess.TimeoutExpired(cmd, 60)

    assert "could not be run" in nsys_support(which=lambda name: "/usr/bin/nsys", run=run).why


def test_the_rerun_command_traces_cuda_nvtx_and_gpu_metrics_of_one_test(tmp_path):
    run, _ = fake_run({"--gpu-metrics-devices": "0: Orin"})
    s = nsys_support(which=lambda name: "/usr/bin/nsys", run=run)
    cmd = nsys_command(s, "tests/perf/test_x.py::test_a", tmp_path / "t", ["--jetson-device=orin-nano"],
                       python="/usr/bin/python3")
    assert cmd[:2] == ["/usr/bin/nsys", "profile"]
    assert "--trace=cuda,nvtx,osrt" in cmd and "--gpu-metrics-devices=0" in cmd
    assert f"--output={tmp_path / 't'}" in cmd
    i = cmd.index("/usr/bin/python3")
    assert cmd[i:i + 4] == ["/usr/bin/python3", "-m", "pytest", "tests/perf/test_x.py::test_a"]
    assert cmd[-1] == "--jetson-device=orin-nano"
    without = nsys_command(nsys_support(which=lambda name: None), "t.py::t", tmp_path / "t")
    assert not any("gpu-metrics" in part for part in without)
