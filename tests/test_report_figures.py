"""`pytest-jetson plot`: the studies' figures from JSON reports of a simulated suite."""

import json

import pytest

from pytest_jetson.cli import plot as plot_cli
from pytest_jetson.errors import ConfigError
from pytest_jetson.report import figures

SUITE = """
import pytest

@pytest.mark.parametrize("batch", [1, 4])
def test_batch(trt_engine, perf, batch):
    perf.measure(trt_engine("resnet18", precision="int8", batch=batch), duration="1s", warmup="0.1s")

@pytest.mark.parametrize("n", [1, 2, 4])
def test_pool(process_pool, perf, n):
    perf.record(process_pool("resnet18", processes=n, precision="int8", batch=1, duration="1s", warmup="0.1s"))

def test_mixed(process_pool, perf):
    perf.record(process_pool([("resnet18", {"precision": "int8"}), ("squeezenet1_1", {"precision": "fp16"})],
                             duration="1s", warmup="0.1s"))
"""


@pytest.fixture
def reports(pytester):
    pytester.makepyfile(test_suite=SUITE)
    paths = []
    for mode in ("15W", "7W"):
        path = pytester.path / f"report-{mode}.json"
        result = pytester.runpytest("--jetson-device", "orin-nano", "--jetson-power-mode", mode,
                                    "--jetson-report-json", str(path))
        result.assert_outcomes(passed=6)
        paths.append(path)
    return paths


def test_plot_draws_every_figure_from_reports(reports, tmp_path, capsys):
    assert plot_cli.main([*map(str, reports), "--out", str(tmp_path / "plots")]) == 0
    out = capsys.readouterr().out
    for name in ("throughput_vs_processes.png", "batch_scaling.png", "pareto_power_modes.png"):
        path = tmp_path / "plots" / name
        assert f"wrote {path}" in out
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_mixed_pools_stay_out_of_the_scaling_figure(reports):
    points = figures.load_points(reports[0])
    mixed = [p for p in points if p.kind == "pool" and not p.homogeneous]
    assert len(mixed) == 1 and mixed[0].precision == "mixed"
    pools = [p for p in points if p.kind == "pool" and p.homogeneous]
    assert sorted(p.processes for p in pools) == [1, 2, 4]


def test_one_report_says_which_figures_it_cannot_draw(reports, tmp_path, capsys):
    assert plot_cli.main([str(reports[0]), "--out", str(tmp_path)]) == 0
    assert "skipped Pareto front: no model measured with energy in 2+ power modes" in capsys.readouterr().out


def test_pareto_front():
    pts = [(1.0, 5.0), (2.0, 3.0), (3.0, 4.0), (4.0, 1.0), (2.5, 3.0)]
    assert figures.pareto_front(pts) == [0, 1, 3]


def test_not_a_report(tmp_path):
    bad = tmp_path / "r.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match=r"report .*r.json is not JSON.*--jetson-report-json"):
        figures.load_points(bad)
    with pytest.raises(ConfigError, match="cannot read report"):
        figures.load_points(tmp_path / "missing.json")


def test_empty_report_is_an_error_exit(tmp_path, capsys):
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"kind": "pytest-jetson-report", "tests": []}))
    assert plot_cli.main([str(path), "--out", str(tmp_path / "p")]) == 1
    assert "no measurements" in capsys.readouterr().out
