"""The JSON report keeps each measurement's samples as the baselines summarise them (bounded per
test whatever it ran for, compact JSON); --jetson-report-samples=all keeps every sample, and a
report path ending in .gz is written compressed and read back by the readers."""

import gzip
import json

import pytest

from pytest_jetson.report import jsonreport

SUITE = '''
import pytest

@pytest.mark.parametrize("i", range(5))
def test_fast(trt_engine, perf, i):
    perf.measure(trt_engine("resnet18"), duration="2s")
'''


@pytest.fixture
def suite(project_of):
    return project_of(SUITE)


def run(pytester, *args):
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def test_the_default_report_is_a_summary_of_a_few_kb_per_test(suite):
    r = run(suite, "--jetson-report-json", "report.json")
    assert r.ret == 0
    path = suite.path / "report.json"
    assert path.stat().st_size <= 5 * 1024 * 5
    doc = jsonreport.load(path)
    m = doc["tests"][0]["measurements"][0]
    assert m["samples_kept"] == "summary"
    assert m["latencies"] == [] and m["iterations"] > 20
    assert len(m["samples"]["latency"]) == 20
    assert m["metrics"]["latency_mean"]["value"] == pytest.approx(m["summary"]["latency_mean"], rel=1e-3)
    assert m["metrics"]["latency_mean"]["se_log"] > 0


def test_all_keeps_every_sample_and_gz_is_compressed_and_read_back(suite):
    r = run(suite, "--jetson-report-json", "report.json.gz", "--jetson-report-samples=all")
    assert r.ret == 0
    path = suite.path / "report.json.gz"
    doc = json.loads(gzip.decompress(path.read_bytes()))
    m = doc["tests"][0]["measurements"][0]
    assert m["samples_kept"] == "all"
    assert len(m["latencies"]) == len([x for x in m["latencies"] if x > 0]) > 20
    assert jsonreport.load(path)["tests"][0]["nodeid"] == doc["tests"][0]["nodeid"]
    results = jsonreport.results(jsonreport.load(path), path)
    assert results[0].measurements[0].iterations == len(m["latencies"])
    # a second run replaces its own compressed report
    assert run(suite, "--jetson-report-json", "report.json.gz", "--jetson-report-samples=all").ret == 0


def test_an_unknown_samples_choice_is_a_usage_error(suite):
    r = run(suite, "--jetson-report-samples=some")
    assert r.ret == 4


def test_results_cross_from_xdist_workers_summarised_with_their_full_statistics(suite):
    assert run(suite, "-n", "2", "--jetson-report-json", "xdist.json").ret == 0
    doc = jsonreport.load(suite.path / "xdist.json")
    assert len(doc["tests"]) == 5
    for t in doc["tests"]:
        m = t["measurements"][0]
        assert m["samples_kept"] == "summary"
        # the statistics of every sample the worker had, not re-estimated from 20 quantiles
        assert m["metrics"]["latency_p99"]["n"] == m["iterations"] > 20
        assert m["metrics"]["gpu_util"].get("se_log") is not None
