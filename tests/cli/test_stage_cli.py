"""Stages on the command line: `show` lists each entry's stages under it, `compare` and `diff`
compare them as 'stage: metric'."""

import numpy as np

from pytest_jetson.cli import main as cli_main
from pytest_jetson.gate import baseline
from pytest_jetson.gate.session import TestResult
from pytest_jetson.report import jsonreport
from pytest_jetson.run.measurement import Measurement
from pytest_jetson.settings import Settings

FP = {"device": "orin-nano-8gb", "power_mode": "15W", "simulated": True}
NODE = "tests/perf/test_x.py::test_pipeline"


class Device:
    def fingerprint(self):
        return dict(FP)


def pipeline(post=1.0, seed=0, n=1500):
    rng = np.random.default_rng(seed)
    parts = {"preprocess": 0.002 * rng.lognormal(0, 0.05, n), "infer": 0.006 * rng.lognormal(0, 0.05, n),
             "postprocess": 0.004 * post * rng.lognormal(0, 0.05, n)}
    lat = [float(x) for x in sum(parts.values())]
    m = Measurement("m", 1, lat, float(sum(lat)), n, precision="fp16")
    m.stages = {s: Measurement(s, 1, [float(x) for x in v], m.duration, n, precision="fp16")
                for s, v in parts.items()}
    return m


def report(path, post, seed):
    m = pipeline(post, seed)
    bounds = [{"metric": "latency_mean", "kind": "relative", "tolerance": 0.2, "stage": "postprocess"}]
    r = TestResult(nodeid=NODE, keys=[NODE], measurements=[m], fingerprint=baseline.fingerprint(m, FP),
                   bounds=bounds)
    return jsonreport.write(path, jsonreport.build([r], Settings(), Device()))


def record(root, post, seed):
    store = baseline.BaselineStore(root, "orin-nano-8gb")
    m = pipeline(post, seed)
    store.stage(NODE, NODE, baseline.make_entry(m, baseline.fingerprint(m, FP)))
    assert not store.flush(mode="force").errors


def test_show_lists_each_stage_under_its_entry(tmp_path, capsys):
    record(tmp_path, 1.0, 0)
    assert cli_main(["show", str(tmp_path), "--metric", "latency_mean", "--metric", "throughput"]) == 0
    lines = capsys.readouterr().out.splitlines()
    i = next(i for i, line in enumerate(lines) if line.strip().startswith("test_pipeline"))
    stages = [line.split() for line in lines[i + 1:i + 4]]
    assert [row[0] for row in stages] == ["infer:", "postprocess:", "preprocess:"]
    assert stages[1][1] in ("3.99", "4.00", "4.01") and stages[1][2:] == ["ms"]  # a stage has no throughput: blank
    assert lines[-1] == "1 entry in 1 file"


def test_compare_decides_each_stage_with_the_tests_stage_tolerance(tmp_path, capsys):
    old = report(tmp_path / "old.json", 1.0, 0)
    same = report(tmp_path / "same.json", 1.0, 10)
    assert cli_main(["compare", str(old), str(same), "-v"]) == 0
    out = capsys.readouterr().out
    assert "postprocess: latency_mean" in out and "infer: latency_p99" in out
    slower = report(tmp_path / "new.json", 1.3, 10)
    assert cli_main(["compare", str(old), str(slower)]) == 1
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    post = next(r for r in rows if r[:2] == ["postprocess:", "latency_mean"])
    assert post[-2:] == ["20%", "FAIL"]  # the test's own tolerance on that stage
    assert not any(r[:1] == ["infer:"] for r in rows)  # unchanged stages need no look


def test_diff_lists_stage_metrics_that_moved(tmp_path, capsys):
    record(tmp_path / "old", 1.0, 0)
    record(tmp_path / "new", 1.5, 0)
    assert cli_main(["diff", str(tmp_path / "old"), str(tmp_path / "new"), "--exit-code"]) == 1
    lines = capsys.readouterr().out.splitlines()
    row = next(line for line in lines if "postprocess: latency_mean" in line)
    assert "50.0% worse" in row and row.rstrip().endswith("yes")
    assert not any("infer: latency_mean" in line for line in lines)  # the same seed: unchanged
