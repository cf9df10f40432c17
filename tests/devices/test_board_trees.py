"""The recorded board trees are what build.py writes from its sourced table, and say where every
value came from."""

import os
import sys
from pathlib import Path

from board_trees import ALL, BOARDS

sys.path.insert(0, str(BOARDS))
import build  # noqa: E402


def _snapshot(root: Path):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_file():
                out[rel] = ("file", path.read_bytes())
    return out


def test_committed_trees_are_what_build_writes(tmp_path):
    build.build(tmp_path)
    for name in build.BOARDS:
        assert _snapshot(tmp_path / name) == _snapshot(BOARDS / name), f"{name}: run python {BOARDS}/build.py"
    assert (tmp_path / "README.md").read_text() == (BOARDS / "README.md").read_text()


def test_every_board_of_the_issue_is_recorded():
    assert set(ALL) == set(build.BOARDS)
    wanted = {"nano-jp46", "tx2-jp46", "agx-xavier-jp51", "xavier-nx-jp51", "orin-nano-8gb-jp51",
              "orin-nano-8gb-jp60", "orin-nano-8gb-super-jp62", "orin-nx-16gb-jp51", "orin-nx-16gb-jp62",
              "agx-orin-64gb-jp64", "agx-thor-jp70"}
    assert wanted <= set(ALL)


def test_every_board_names_its_sources_and_unknowns():
    readme = (BOARDS / "README.md").read_text()
    for name, board in build.BOARDS.items():
        assert f"### `{name}`" in readme
        assert board["unknown"], f"{name}: say what no source gives"
        for text in board["sources"].values():
            cited = [k for k in build.SOURCES if k in text]
            assert cited or "the line" in text or "the profile" in text, (name, text)
    for key in build.SOURCES:
        assert f"`{key}`" in readme
