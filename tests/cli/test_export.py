"""`pytest-jetson export`: a real report (made by a pytester run) in the Bencher Metric Format and
as github-action-benchmark custom-tool JSON, each checked against the format's documented schema."""

import json
import re

import pytest

from pytest_jetson.cli import main as cli_main
from pytest_jetson.metrics import METRICS

SUITE = '''
    import pytest

    @pytest.mark.perf(throughput=">= 10/s", latency_p99="<= 1 s")
    def test_resnet(trt_engine, perf):
        perf.measure(trt_engine("resnet18", precision="fp16", batch=4), duration="1s")

    def test_pipeline(trt_engine, perf):
        engine = trt_engine("resnet18", precision="int8", batch=1)
        perf.measure(engine, duration="1s")
'''

#: the BMF JSON schema, as bencher.dev/docs/reference/bencher-metric-format publishes it
BMF_SCHEMA = {
    "type": "object",
    "patternProperties": {".+": {
        "type": "object",
        "patternProperties": {".+": {
            "type": "object",
            "properties": {"value": {"type": "number"}, "lower_value": {"type": "number"},
                           "upper_value": {"type": "number"}},
            "required": ["value"],
        }},
    }},
}


def validate(doc, schema, where="$"):
    """The subset of JSON Schema the BMF schema uses (type, properties, patternProperties, required)."""
    kind = schema.get("type")
    if kind == "object":
        assert isinstance(doc, dict), where
        for name in schema.get("required", []):
            assert name in doc, f"{where}: {name} required"
        for name, value in doc.items():
            if name in schema.get("properties", {}):
                validate(value, schema["properties"][name], f"{where}.{name}")
            for pattern, sub in schema.get("patternProperties", {}).items():
                if re.search(pattern, name):
                    validate(value, sub, f"{where}.{name}")
    elif kind == "number":
        assert isinstance(doc, (int, float)) and not isinstance(doc, bool), where


def validate_gab(entries):
    """github-action-benchmark's custom tools: a list of {name, unit, value[, range, extra]}, the
    first three required, range and extra strings (its BenchmarkResult)."""
    assert isinstance(entries, list)
    for e in entries:
        assert set(e) <= {"name", "unit", "value", "range", "extra"}
        assert isinstance(e["name"], str) and isinstance(e["unit"], str)
        assert isinstance(e["value"], (int, float)) and not isinstance(e["value"], bool)
        assert isinstance(e.get("range", ""), str) and isinstance(e.get("extra", ""), str)


@pytest.fixture
def report(pytester):
    """A report written by the plugin: a run of a small suite on a simulated Orin Nano."""
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider", "--jetson-device", "orin-nano",
                                "--jetson-report-json", "r.json")
    result.assert_outcomes(passed=2)
    return pytester.path / "r.json"


def test_bencher_metric_format(report, tmp_path, capsys):
    assert cli_main(["export", str(report), "--format", "bencher"]) == 0
    bmf = json.loads(capsys.readouterr().out)
    validate(bmf, BMF_SCHEMA)
    doc = json.loads(report.read_text())
    assert sorted(bmf) == sorted(k for t in doc["tests"] for k in t["keys"])
    resnet = bmf["test_suite.py::test_resnet"]
    m = doc["tests"][[t["nodeid"] for t in doc["tests"]].index("test_suite.py::test_resnet")]["measurements"][0]
    # Bencher's built-in measures: throughput in operations/s, latency in ns
    assert resnet["throughput"]["value"] == pytest.approx(m["items"] / m["duration"], rel=1e-6)
    assert resnet["latency"]["value"] == pytest.approx(1e9 * m["summary"]["latency_mean"], rel=1e-6)
    assert resnet["latency"]["lower_value"] < resnet["latency"]["value"] < resnet["latency"]["upper_value"]
    assert "latency-p99" in resnet and "power" in resnet and "memory" in resnet
    verdict = next(v for t in doc["tests"] for v in t["verdicts"] if v["metric"] == "throughput")
    assert [resnet["throughput"]["lower_value"], resnet["throughput"]["upper_value"]] == pytest.approx(verdict["ci"])
    out = tmp_path / "bmf.json"
    assert cli_main(["export", str(report), "--format", "bencher", "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == bmf


def test_github_action_benchmark_splits_by_the_bad_direction(report, tmp_path):
    out = tmp_path / "gab"
    assert cli_main(["export", str(report), "--format", "github-action-benchmark", "--out", str(out)]) == 0
    smaller = json.loads((out / "customSmallerIsBetter.json").read_text())
    bigger = json.loads((out / "customBiggerIsBetter.json").read_text())
    validate_gab(smaller)
    validate_gab(bigger)
    for entries, worse in ((smaller, "higher"), (bigger, "lower")):
        metrics = {e["name"].rsplit(" ", 1)[1] for e in entries}
        assert metrics and all(METRICS[m].worse == worse for m in metrics)
    throughput = next(e for e in bigger if e["name"] == "test_suite.py::test_resnet throughput")
    p99 = next(e for e in smaller if e["name"] == "test_suite.py::test_resnet latency_p99")
    assert throughput["unit"] == "items/s" and p99["unit"] == "ms" and 0 < p99["value"] < 1000
    assert throughput["range"].startswith("± ")
    assert "orin-nano-8gb (simulated)" in throughput["extra"] and "gate: pass" in throughput["extra"]


@pytest.mark.parametrize("content, words", [
    (None, "does not exist"),
    ("{nope", "is not valid JSON"),
    ('{"kind": "other"}', "is not a pytest-jetson report"),
])
def test_a_report_that_cannot_be_read_is_exit_2_naming_it(tmp_path, capsys, content, words):
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    assert cli_main(["export", str(path), "--format", "bencher"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and words in err and "Traceback" not in err
