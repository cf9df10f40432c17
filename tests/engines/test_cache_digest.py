"""A model file replaced under its name (a shared cache, another job's checkout) is a workload
change the gate names, never a silent "better: pass"; old baselines without the digest compare
as before."""

import json

import pytest

from pytest_jetson.engines import cache
from pytest_jetson.models import zoo

SUITE = '''
import pytest

@pytest.mark.perf(throughput="5%")
def test_net(trt_engine, perf):
    perf.measure(trt_engine("models/net.onnx", precision="fp32"), duration="0.3s", warmup=0)
'''


@pytest.fixture
def suite(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    pytester.makepyfile(test_suite=SUITE)
    (pytester.path / "models").mkdir()
    return pytester


def run(pytester, *args):
    return pytester.runpytest("-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning",
                              "--jetson-device", "orin-nano", *args)


def write_model(pytester, name):
    (pytester.path / "models/net.onnx").write_bytes(zoo.build(name, 64).SerializeToString())


def test_a_model_replaced_under_its_name_is_named_as_a_workload_change(suite):
    write_model(suite, "resnet50")
    run(suite, "--jetson-update-baselines").assert_outcomes(passed=1)
    path = suite.path / "baselines/orin-nano-8gb/test_suite.py.json"
    entry = json.loads(path.read_text())["entries"]["test_suite.py::test_net"]
    recorded = entry["fingerprint"]["model_sha256"]
    assert recorded == cache.onnx_digest(suite.path / "models/net.onnx")

    write_model(suite, "squeezenet1_1")  # far faster: must not read as an improvement of the same model
    r = run(suite, "--jetson-report-json", "r.json")
    verdicts = json.loads((suite.path / "r.json").read_text())["tests"][0]["verdicts"]
    now = cache.onnx_digest(suite.path / "models/net.onnx")
    assert verdicts and all(v["workload_diffs"] == [["model_sha256", recorded, now]] for v in verdicts)
    out = " ".join(r.stdout.str().split())
    # the message shows 12 hex characters of each digest; the report and baseline keep all 64
    assert f"what runs changed since the baseline: model_sha256 {recorded[:12]} -> {now[:12]}" in out
    assert recorded not in out and now not in out


def test_a_baseline_recorded_before_the_digest_compares_without_a_change(suite):
    write_model(suite, "resnet18")
    run(suite, "--jetson-update-baselines").assert_outcomes(passed=1)
    path = suite.path / "baselines/orin-nano-8gb/test_suite.py.json"
    data = json.loads(path.read_text())
    for entry in data["entries"].values():
        del entry["fingerprint"]["model_sha256"]
    path.write_text(json.dumps(data))
    r = run(suite, "--jetson-report-json", "r.json")
    r.assert_outcomes(passed=1)
    verdicts = json.loads((suite.path / "r.json").read_text())["tests"][0]["verdicts"]
    assert verdicts and all(not v["workload_diffs"] and not v["env_diffs"] for v in verdicts)


def test_external_data_named_outside_the_models_folder_is_not_read(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    outside = tmp_path / "secret.bin"
    outside.write_bytes(b"x" * 16)
    folder = tmp_path / "model"
    folder.mkdir()
    init = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    init.data_location = TensorProto.EXTERNAL
    init.external_data.add(key="location", value="../secret.bin")
    graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [init])
    path = folder / "m.onnx"
    onnx.save(helper.make_model(graph), str(path))
    before = cache.onnx_digest(path)
    outside.write_bytes(b"y" * 16)
    assert cache.onnx_digest(path) == before


def _model_with_weights_at(folder, location):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    init = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    init.data_location = TensorProto.EXTERNAL
    init.external_data.add(key="location", value=location)
    graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [init])
    path = folder / "m.onnx"
    onnx.save(helper.make_model(graph), str(path))
    return path


@pytest.mark.parametrize("how", ["../secret.bin", "absolute", "a link out"])
def test_a_model_whose_weights_lie_outside_its_folder_is_refused(tmp_path, how):
    from pytest_jetson.engines.base import check_onnx_path
    from pytest_jetson.errors import ModelError

    (tmp_path / "secret.bin").write_bytes(b"x" * 16)
    folder = tmp_path / "model"
    folder.mkdir()
    location = {"../secret.bin": "../secret.bin", "absolute": str(tmp_path / "secret.bin"),
                "a link out": "w.bin"}[how]
    if how == "a link out":
        (folder / "w.bin").symlink_to(tmp_path / "secret.bin")
    path = _model_with_weights_at(folder, location)
    with pytest.raises(ModelError, match="keeps weights outside its folder"):
        check_onnx_path(path, "test_x")


def test_a_model_whose_weights_lie_beside_it_is_accepted(tmp_path):
    from pytest_jetson.engines.base import check_onnx_path

    (tmp_path / "w.bin").write_bytes(b"x" * 16)
    path = _model_with_weights_at(tmp_path, "w.bin")
    assert check_onnx_path(path, "test_x") == path
