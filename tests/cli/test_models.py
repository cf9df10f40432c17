"""`pytest-jetson models`: the zoo as a table or JSON."""

from __future__ import annotations

import json

import pytest

from pytest_jetson.cli.models import main
from pytest_jetson.models import zoo


def test_table_lists_every_model_with_params_macs_and_input(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["model", "task", "params", "GMACs", "weights"]
    for name in zoo.names():
        assert any(line.startswith(name + " ") for line in lines), name
    resnet50 = next(line for line in lines if line.startswith("resnet50 "))
    assert "25,557,032" in resnet50 and "4.09" in resnet50 and "3x224x224" in resnet50
    yolo = next(line for line in lines if line.startswith("yolov8n "))
    assert "3,157,200" in yolo and "3x640x640" in yolo


def test_json_for_chosen_models(capsys):
    assert main(["--json", "mobilenet_v2", "vgg16"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["mobilenet_v2", "vgg16"]
    assert rows[0]["params"] == 3_504_872 and rows[1]["gmacs"] == 15.47
    assert rows[0]["input"] == [1, 3, 224, 224]


def test_unknown_model_is_an_error_listing_the_zoo(capsys):
    assert main(["resnet51"]) == 2
    err = capsys.readouterr().err
    assert "resnet51" in err and "resnet50" in err


def test_resolution_and_input_shape_size_an_onnx_files_dynamic_height_and_width(tmp_path, capsys):
    from fakes.onnx_models import seg_onnx

    path = str(seg_onnx(tmp_path / "det.onnx"))
    assert main([path]) == 2
    err = capsys.readouterr().err
    assert "input 'x' has dynamic dimension(s) 2, 3 besides the batch" in err
    assert "--input-shape 3xHxW" in err and "--resolution HxW" in err and "Traceback" not in err
    assert main(["--json", path, "--resolution", "320"]) == 0
    square = json.loads(capsys.readouterr().out)[0]
    assert main(["--json", path, "--resolution", "240x320"]) == 0
    wide = json.loads(capsys.readouterr().out)[0]
    assert main(["--json", path, "--input-shape", "3x240x320"]) == 0
    assert json.loads(capsys.readouterr().out)[0] == wide
    assert square["input"] == [1, 3, 320, 320] and wide["input"] == [1, 3, 240, 320]
    assert wide["outputs"] == [[1, 1, 240, 320]]
    # GMACs are printed to three decimals: this small net's 0.011 against 0.015
    assert wide["gmacs"] > 0 and square["gmacs"] / wide["gmacs"] == pytest.approx(320 / 240, rel=0.05)


def test_input_shape_that_contradicts_a_file_or_names_a_zoo_model_is_an_error(tmp_path, capsys):
    from fakes.onnx_models import seg_onnx

    path = str(seg_onnx(tmp_path / "det.onnx"))
    assert main([path, "--input-shape", "4x240x320"]) == 2
    assert "dimension 1 fixed at 3" in capsys.readouterr().err
    assert main(["resnet50", "--input-shape", "3x240x320"]) == 2
    assert "--input-shape sizes an .onnx file's dynamic dimensions" in capsys.readouterr().err
