"""`pytest-jetson plot`: the figures from JSON reports of a simulated suite."""

import json
import shutil

import pytest

from pytest_jetson.cli import plot as plot_cli
from pytest_jetson.errors import JetsonError
from pytest_jetson.report import figures

# Loaded at collection, before any in-process pytester run: pytester unloads the modules first
# imported inside a test, and a second import of matplotlib mixes two copies of its classes.
pytest.importorskip("matplotlib").use("Agg")
import matplotlib.pyplot  # noqa: E402,F401

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
    for name in ("throughput_vs_processes.png", "batch_scaling.png", "pareto_power_modes.png",
                 "measurements.png"):
        path = tmp_path / "plots" / name
        assert f"wrote {path}" in out
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_two_reports_of_one_configuration_are_kept_apart_and_labelled(reports, tmp_path, capsys):
    """base.json and pr.json measured the same points: one series each, named after the report,
    never one line zig-zagging between them."""
    base, pr = tmp_path / "base.json", tmp_path / "pr.json"
    shutil.copy(reports[0], base)
    shutil.copy(reports[0], pr)
    points = figures.load_points(base, "base") + figures.load_points(pr, "pr")
    singles = [p for p in points if p.kind != "pool"]
    series = figures.split_runs({"resnet18 int8": singles}, lambda p: p.batch)
    assert sorted(series) == ["resnet18 int8 · base", "resnet18 int8 · pr"]
    assert all(len({p.run for p in pts}) == 1 for pts in series.values())
    # reports of different power modes join: a Pareto series needs a point per mode
    modes = figures.load_points(reports[0], "15W") + figures.load_points(reports[1], "7W")
    joined = figures.split_runs({"s": [p for p in modes if p.kind != "pool" and p.batch == 1]},
                                lambda p: p.power_mode)
    assert list(joined) == ["s"]
    assert plot_cli.main([str(base), str(pr), "--out", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / 'p' / 'comparison.png'}" in out  # pr against base


def test_the_quick_start_report_always_gives_a_figure(pytester, tmp_path, capsys):
    pytester.makepyfile(test_one="""
        def test_one(trt_engine, perf):
            perf.measure(trt_engine("resnet18", precision="int8"), duration="1s", warmup="0.1s")
    """)
    report = pytester.path / "report.json"
    pytester.runpytest("--jetson-device", "orin-nano", "--jetson-report-json", str(report)).assert_outcomes(passed=1)
    assert plot_cli.main([str(report), "--out", str(tmp_path / "plots")]) == 0
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / 'plots' / 'measurements.png'}" in out
    assert "skipped throughput/power vs batch" in out


def test_log_axes_read_as_plain_numbers():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [30, 300, 3000])
    figures.readable_scale(ax, [30, 300, 3000])
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert ax.get_yscale() == "log" and {"50", "100", "200", "500", "1000"} <= set(labels)
    ax2 = fig.add_subplot(2, 1, 2)
    figures.readable_scale(ax2, [700, 800, 1000])  # less than a decade: stays linear
    assert ax2.get_yscale() == "linear"
    plt.close(fig)


def test_model_paths_in_legends_are_relative(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert figures.model_label(str(tmp_path / "models" / "tiny.onnx")) == "models/tiny.onnx"
    assert figures.model_label("/elsewhere/home/me/tiny.onnx") == "tiny.onnx"
    assert figures.model_label("resnet50") == "resnet50"


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
    with pytest.raises(JetsonError, match=r"report .*r.json is not valid JSON.*--jetson-report-json"):
        figures.load_points(bad)
    with pytest.raises(JetsonError, match="missing.json does not exist"):
        figures.load_points(tmp_path / "missing.json")
    with pytest.raises(JetsonError, match="is a directory; pass the JSON file"):
        figures.load_points(tmp_path)
    (tmp_path / "bin.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    with pytest.raises(JetsonError, match="bin.json is not JSON"):
        figures.load_points(tmp_path / "bin.json")


@pytest.mark.parametrize("make", ["directory", "not json", "other json"])
def test_bad_report_paths_are_errors_naming_the_file(tmp_path, capsys, make):
    path = tmp_path / "r.json"
    if make == "directory":
        path.mkdir()
    else:
        path.write_text("nope" if make == "not json" else '{"kind": "other"}')
    from pytest_jetson.cli import main as cli_main

    assert cli_main(["plot", str(path), "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err


def test_empty_report_is_an_error_exit(tmp_path, capsys):
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"kind": "pytest-jetson-report", "schema": 1, "tests": []}))
    assert plot_cli.main([str(path), "--out", str(tmp_path / "p")]) == 1
    assert "no measurements" in capsys.readouterr().out
