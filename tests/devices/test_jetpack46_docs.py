"""The board page tells a JetPack 4.6 (Nano, TX2) user what runs: its TensorRT bindings are for
Python 3.6 only, below the plugin's requires-python."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _section() -> str:
    text = (ROOT / "docs" / "how-to" / "board.md").read_text(encoding="utf-8")
    m = re.search(r"^## JetPack 4\.6\b.*?(?=^## )", text, re.MULTILINE | re.DOTALL)
    assert m, "docs/how-to/board.md has no JetPack 4.6 section"
    return m.group(0)


def test_jetpack46_section_states_the_python_floor_the_package_declares():
    floor = re.search(r'requires-python\s*=\s*">=(\d+\.\d+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    section = _section()
    assert f"Python {floor} or newer" in section
    assert "3.6" in section and "NVIDIA/TensorRT#1811" in section


def test_jetpack46_section_says_the_tensorrt_backend_needs_self_built_bindings():
    section = " ".join(_section().split())
    assert "needs self-built bindings: the `tensorrt` backend" in section
    assert "release/8.2" in section and "numpy below 1.24" in section
