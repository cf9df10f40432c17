"""The dependency floors keep out releases with a known way to read files outside a model's
folder: each Python gets the first onnx release that fixed what its wheels can fix."""

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib" if __import__("sys").version_info >= (3, 11) else "tomli")
requirements = pytest.importorskip("packaging.requirements")

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"

#: python version -> the first onnx release fixing external data outside the model's folder that
#: has wheels for it: '..' paths 1.16.0 (CVE-2024-27318), symlinks 1.21.0 (CVE-2026-27489)
FIXED = {"3.8": "1.16.0", "3.9": "1.16.0", "3.10": "1.21.0", "3.12": "1.21.0", "3.13": "1.21.0"}


def onnx_floor(python):
    deps = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    env = {"python_version": python, "python_full_version": python + ".0"}
    floors = []
    for text in deps:
        req = requirements.Requirement(text)
        if req.name != "onnx" or (req.marker is not None and not req.marker.evaluate(env)):
            continue
        floors += [spec.version for spec in req.specifier if spec.operator == ">="]
    return floors


@pytest.mark.parametrize("python", sorted(FIXED))
def test_onnx_floor_is_the_first_fixed_release_for_each_python(python):
    from packaging.version import Version

    floors = onnx_floor(python)
    assert len(floors) == 1, floors
    assert Version(floors[0]) >= Version(FIXED[python])
