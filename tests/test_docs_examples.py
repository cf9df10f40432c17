"""The worked example of docs/how-to/pipelines.md: the page shows the file as it is, and the file
gates the PP-OCR pipeline (run where the rapidocr_onnxruntime wheel's models are unpacked, named
by PPOCR_MODELS: they are not part of the repository)."""

import os
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"
PAGE = ROOT / "docs" / "how-to" / "pipelines.md"


def test_the_page_shows_the_example_test_verbatim_and_counts_its_lines():
    code = (EXAMPLES / "test_ppocr_pipeline.py").read_text(encoding="utf-8")
    assert f"```python\n{code}```" in PAGE.read_text(encoding="utf-8")
    lines = [line for line in code.splitlines() if line.strip()]
    said = re.search(r"The whole file is (\d+) lines", PAGE.read_text(encoding="utf-8"))
    assert said and int(said.group(1)) == len(lines)


@pytest.mark.skipif(not os.path.isdir(os.environ.get("PPOCR_MODELS", "")),
                    reason="PPOCR_MODELS does not name the rapidocr_onnxruntime wheel's models folder")
@pytest.mark.parametrize("args", [["--jetson-device", "orin-nano"],
                                  ["--jetson-device", "orin-nano", "--jetson-backend", "onnxruntime"]])
def test_the_example_gates_ppocr(pytester, args):
    for name in ("ppocr.py", "test_ppocr_pipeline.py"):
        shutil.copy(EXAMPLES / name, pytester.path / name)
    result = pytester.runpytest_subprocess(*args, "--jetson-update-baselines", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
