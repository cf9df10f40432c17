"""The zoo's cached ONNX files are verified on use: a file another job replaced (a shared cache
on a self-hosted runner) is rebuilt with a warning, never measured as the zoo's model."""

import hashlib
import warnings

import pytest

from pytest_jetson.models import zoo

pytest.importorskip("onnx")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_JETSON_CACHE", str(tmp_path / "cache"))
    zoo._VERIFIED.clear()
    return tmp_path / "cache"


def built(name, res):
    return zoo.build(name, res).SerializeToString()


def test_a_replaced_cached_model_is_rebuilt_with_a_warning(cache):
    target = zoo.path("squeezenet1_1", resolution=64)
    good = target.read_bytes()
    assert good == built("squeezenet1_1", 64)
    assert zoo._sidecar(target).read_text().strip() == hashlib.sha256(good).hexdigest()

    target.write_bytes(built("alexnet", 64 * 2))  # another job's model under this one's name
    with pytest.warns(zoo.ZooCacheWarning, match="squeezenet1_1-64x64-dynamic.*content is not what the zoo wrote.*rebuilding"):
        again = zoo.path("squeezenet1_1", resolution=64)
    assert again == target and target.read_bytes() == good


def test_a_cached_model_without_a_recorded_digest_is_rebuilt(cache):
    target = zoo.path("squeezenet1_1", resolution=64)
    good = target.read_bytes()
    zoo._sidecar(target).unlink()
    target.write_bytes(b"not the zoo's")
    zoo._VERIFIED.clear()
    with pytest.warns(zoo.ZooCacheWarning, match="no sha256 was recorded"):
        zoo.path("squeezenet1_1", resolution=64)
    assert target.read_bytes() == good


def test_an_intact_cache_is_used_as_is(cache):
    target = zoo.path("squeezenet1_1", resolution=64)
    stamp = target.stat().st_mtime_ns
    zoo._VERIFIED.clear()  # a new process verifies from the recorded digest
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert zoo.path("squeezenet1_1", resolution=64) == target
    assert target.stat().st_mtime_ns == stamp
