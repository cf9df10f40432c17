"""The reference an engine's outputs are checked against: the same ONNX file on onnxruntime's
CPU provider (what Polygraphy's ``run --onnxrt`` runs), one session per file per process, opened
on first use. The CPU provider computes in fp32 with no fused reduced-precision kernels, which
makes it the usual yardstick for a TensorRT engine's numbers.
"""

from pathlib import Path
from typing import Any, Dict, List, Mapping, Tuple

import numpy as np

from ..errors import EngineError, ModelError

#: (resolved path, mtime, size) -> session: a file rewritten during the session is opened again
_SESSIONS: Dict[Tuple[str, int, int], Any] = {}


def _import_ort() -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise EngineError(
            "reference='onnxruntime' needs onnxruntime: pip install 'pytest-jetson[onnxruntime]' "
            "(or pip install onnxruntime), or check against reference='golden'"
        ) from None
    return onnxruntime


def session(path: Path) -> Any:
    """The CPU session of ``path``, opened once per process."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError:
        raise ModelError(f"reference model {str(path)!r} does not exist; pass model= an existing "
                         ".onnx file") from None
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    hit = _SESSIONS.get(key)
    if hit is None:
        ort = _import_ort()
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        try:
            hit = ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph/... types
            raise ModelError(f"onnxruntime cannot open the reference model {str(path)!r}: {exc}; "
                             "check it with `python -m onnx.checker`") from None
        _SESSIONS[key] = hit
    return hit


def input_names(path: Path) -> List[str]:
    return [i.name for i in session(path).get_inputs()]


def run(path: Path, feeds: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """The outputs of ``path`` on ``feeds`` (inputs by name), by name."""
    sess = session(path)
    names = [o.name for o in sess.get_outputs()]
    wanted = [i.name for i in sess.get_inputs()]
    missing = [n for n in wanted if n not in feeds]
    if missing:
        raise EngineError(f"the reference model {str(path)!r} takes inputs {', '.join(wanted)}; "
                          f"{missing[0]!r} was not given (given: {', '.join(feeds) or 'none'})")
    try:
        values = sess.run(names, {n: np.ascontiguousarray(feeds[n]) for n in wanted})
    except Exception as exc:  # InvalidArgument (shape, dtype), Fail: onnxruntime's own types
        raise EngineError(f"onnxruntime could not run the reference model {str(path)!r} on these "
                          f"inputs: {exc}") from None
    return dict(zip(names, values))


def clear() -> None:
    """Forget the sessions (tests, or a process that wants its memory back)."""
    _SESSIONS.clear()
