"""The model against published Jetson results, and the sweep/calibrate commands."""

import json

import pytest

from pytest_jetson.cli.calibrate import main as calibrate_main
from pytest_jetson.cli.sweep import main as sweep_main
from pytest_jetson.sim import calibrate, constants


@pytest.fixture(scope="module")
def report():
    return calibrate.report()


def test_calibration_meets_the_mape_goals(report):
    mape = report["mape"]
    assert report["counts"]["time (all)"] >= 30
    assert report["counts"]["power (all)"] >= 7
    assert mape["time (all)"] <= 15.0
    assert mape["power (all)"] <= 10.0
    assert mape["seeds"] <= 15.0


def test_every_expressible_row_is_predicted_and_the_rest_are_explained(report):
    published = calibrate.published_rows()
    seen = {r["case"].id for r in report["rows"]}
    for row in published:
        assert str(row["id"]) in seen or any(s[0]["id"] == row["id"] for s in report["skipped"])
    for r in report["rows"]:
        assert r["predicted"] > 0 and abs(r["error"]) < 1.0, (r["case"].id, r["error"])


def test_constants_are_per_architecture_family_or_device_with_their_source():
    data = json.loads(constants.CALIBRATION_PATH.read_text())
    assert set(data) >= {"arch", "families", "devices"}
    from pytest_jetson.models import zoo

    models = set(zoo.names())
    for section in ("arch", "families", "devices"):
        for owner, params in data[section].items():
            assert owner not in models  # never a per-model constant
            for name, entry in params.items():
                assert entry["fitted_to"].strip(), (section, owner, name)
                assert name in constants.ARCH_DEFAULTS, name


def test_calibrate_command_prints_rows_and_mape(capsys):
    assert calibrate_main(["--report"]) == 0
    out = capsys.readouterr().out
    assert "MAPE per metric" in out and "time (all)" in out and "power (all)" in out
    assert "resnet50" in out and "S1-p8" in out


def test_sweep_command_prints_table_pareto_and_best_mode(capsys):
    rc = sweep_main(["--device", "agx-orin", "--model", "resnet50", "--precision", "int8", "--batch", "1,8,32",
                     "--processes", "1,2", "--power-modes", "all", "--max-latency", "5ms"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "24 configurations" in out
    assert "Pareto front, latency vs energy per item" in out
    assert "lowest energy per item with latency <= 5ms: power mode" in out


def test_sweep_command_errors_are_messages_not_tracebacks(capsys, tmp_path):
    assert sweep_main(["--device", "orin-nanoo", "--model", "resnet50"]) == 2
    assert "unknown Jetson device" in capsys.readouterr().err
    assert sweep_main(["--device", "orin-nano", "--model", "resnet50", "--batch", "one"]) == 2
    assert sweep_main(["--device", "orin-nano", "--model", "resnet50", "--max-latency", "1us"]) == 1
    path = tmp_path / "rows.json"
    assert sweep_main(["--device", "orin-nano", "--model", "resnet50", "--json", str(path)]) == 0
    assert json.loads(path.read_text())["rows"][0]["device"] == "orin-nano-8gb"


def test_a_missing_calibration_file_is_said_not_hidden(monkeypatch, tmp_path):
    from pytest_jetson.sim import predict

    monkeypatch.setattr(constants, "CALIBRATION_PATH", tmp_path / "absent.json")
    constants.reload()
    try:
        p = predict("orin-nano", "resnet50", "int8", 1)
        assert any("uncalibrated" in n for n in p.notes)
    finally:
        monkeypatch.undo()
        constants.reload()
    assert not any("uncalibrated" in n for n in predict("orin-nano", "resnet50", "int8", 1).notes)


def test_the_fitting_routine_finds_a_known_minimum():
    import numpy as np

    target = np.array([0.3, -1.2, 2.0])
    x = calibrate.nelder_mead(lambda z: float(np.sum((z - target) ** 2)), np.zeros(3), iterations=2000, tol=1e-14)
    assert np.allclose(x, target, atol=1e-4)


def test_the_gemm_microbenchmarks_set_the_efficiencies_directly():
    cs, _ = calibrate.cases()
    eff = calibrate._gemm_efficiencies([c for c in cs if c.metric == "roof_gemm"])
    data = json.loads(constants.CALIBRATION_PATH.read_text())["arch"]["ampere"]
    for name in ("tc_eff", "tf32_factor", "cuda_eff"):
        assert data[name]["value"] == pytest.approx(eff[name][0], rel=1e-3)
        assert 0 < eff[name][0] < 1
