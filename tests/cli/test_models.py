"""`pytest-jetson models`: the zoo as a table or JSON."""

from __future__ import annotations

import json

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
