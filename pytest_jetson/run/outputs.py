"""What ``perf.check_outputs`` records: the outputs a test produced, the reference they must match
and the tolerances, for the gate to judge after the test body (``gate.outputs``).

The recorder does the running here (the engine on the inputs, the reference beside it) and never
judges: a check is data until the gate turns it into verdicts, beside the perf bounds.

Reference sources:

* ``"onnxruntime"``: the ONNX file the engine was built from, on onnxruntime's CPU provider, on
  the same inputs (``engines.reference``);
* ``"golden"``: a ``.npz`` of outputs, and the inputs that made them, recorded beside the
  baselines under ``--jetson-update-baselines`` (``golden_file`` below; the inputs are replayed);
* a mapping ``{name: array}`` given directly.

Golden files hold ``input:<name>`` and ``output:<name>`` arrays and nothing a pickle could run
(they are read with ``allow_pickle=False``).
"""

import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from .. import fileio
from ..engines import reference as onnx_reference
from ..engines.base import Engine, as_engine, make_inputs, resolve_onnx
from ..errors import BaselineError, JetsonError

SIMULATED_REASON = ("the simulated device computes no outputs; run on a board or with "
                    "--jetson-backend onnxruntime")

#: The tolerance a precision gets unless the test says otherwise: ``(atol, rtol, cosine)``.
#: fp32 is Polygraphy's default (CompareFunc.simple: atol = rtol = 1e-5; TF32 is off in an fp32
#: engine, as trtexec --noTF32); tf32 keeps a 10-bit mantissa (~1e-3); fp16 an 11-bit one, and
#: a deep network's outputs drift by a few of its ulps, hence 1e-2; int8 errors scale with each
#: tensor's quantisation step, not with each element, so only the direction of the output is
#: bounded (cosine similarity), as the TensorRT and ONNX quantisation tools report it.
DEFAULT_TOLERANCES: Dict[str, Tuple[Optional[float], Optional[float], Optional[float]]] = {
    "fp32": (1e-5, 1e-5, None),
    "tf32": (1e-3, 1e-3, None),
    "fp16": (1e-2, 1e-2, None),
    "int8": (None, None, 0.99),
}

TOLERANCE_KEYS = ("atol", "rtol", "cosine", "topk")


class OutputsError(JetsonError):
    """A ``perf.check_outputs`` call that cannot be made as written."""


@dataclass(frozen=True)
class Tolerance:
    """What one output must meet. ``atol``/``rtol``: every element within ``atol + rtol *
    |reference|`` (numpy's ``isclose``; None: not bounded elementwise); ``cosine``: the least
    cosine similarity of the whole output with the reference's; ``topk``: ``(k, share)``, the
    least share of the reference's top-k classes (last axis) the output's top-k must hold."""

    atol: Optional[float] = None
    rtol: Optional[float] = None
    cosine: Optional[float] = None
    topk: Optional[Tuple[int, float]] = None

    def to_dict(self) -> Dict[str, Any]:
        return {"atol": self.atol, "rtol": self.rtol, "cosine": self.cosine,
                "topk": list(self.topk) if self.topk is not None else None}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Tolerance":
        topk = d.get("topk")
        return cls(d.get("atol"), d.get("rtol"), d.get("cosine"),
                   (int(topk[0]), float(topk[1])) if topk else None)

    def words(self) -> str:
        """'atol 1e-05 + rtol 1e-05 x |reference|, cosine >= 0.999, top-5 >= 80%'."""
        bits = []
        if self.atol is not None or self.rtol is not None:
            bits.append(f"atol {self.atol or 0:g} + rtol {self.rtol or 0:g} x |reference|")
        if self.cosine is not None:
            bits.append(f"cosine >= {self.cosine:g}")
        if self.topk is not None:
            bits.append(f"top-{self.topk[0]} >= {self.topk[1] * 100:g}%")
        return ", ".join(bits) or "nothing bounded"


def _number(value: Any, what: str, low: float = 0.0, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not low <= float(value) <= high:
        span = f"between {low:g} and {high:g}" if math.isfinite(high) else f">= {low:g}"
        raise OutputsError(f"perf.check_outputs: {what} must be a number {span}, not {value!r}")
    return float(value)


def _topk(value: Any, where: str) -> Optional[Tuple[int, float]]:
    if value is None:
        return None
    k, share = (value, 1.0) if not isinstance(value, (tuple, list)) else (tuple(value) + (1.0,))[:2]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 or \
            (isinstance(value, (tuple, list)) and len(value) not in (1, 2)):
        raise OutputsError(f"perf.check_outputs: {where}topk must be k or (k, least share), e.g. "
                           f"topk=5 or topk=(5, 0.8), not {value!r}")
    return int(k), _number(share, f"{where}topk's share", 0.0, 1.0)


def tolerance(precision: str, where: str = "", **given: Any) -> Tolerance:
    """The tolerance of one output: what was ``given`` (``atol``, ``rtol``, ``cosine``,
    ``topk``; what is not named is not checked, and ``atol`` alone is ``rtol`` 0), or, when
    nothing was, the precision's defaults (``DEFAULT_TOLERANCES``)."""
    unknown = sorted(set(given) - set(TOLERANCE_KEYS))
    if unknown:
        raise OutputsError(f"perf.check_outputs: {where}unknown tolerance {unknown[0]!r}; "
                           f"one of {', '.join(TOLERANCE_KEYS)}")
    if all(v is None for v in given.values()):
        atol, rtol, cosine = DEFAULT_TOLERANCES.get(precision, DEFAULT_TOLERANCES["fp32"])
        return Tolerance(atol, rtol, cosine)
    atol, rtol = given.get("atol"), given.get("rtol")
    if atol is not None or rtol is not None:
        atol = _number(0.0 if atol is None else atol, f"{where}atol")
        rtol = _number(0.0 if rtol is None else rtol, f"{where}rtol")
    cosine = given.get("cosine")
    if cosine is not None:
        cosine = _number(cosine, f"{where}cosine", -1.0, 1.0)
    return Tolerance(atol, rtol, cosine, _topk(given.get("topk"), where))


@dataclass
class OutputsRecord:
    """One ``perf.check_outputs`` call. ``actual``/``reference``: outputs by name (``reference``
    None: none to compare with: ``skipped`` says why, or a golden file still to record);
    ``tolerances``: per output name, ``default`` for the others; ``source``: the reference in
    words; ``golden``: the golden file (reference "golden"), ``inputs`` what it records."""

    name: str
    source: str
    actual: Dict[str, np.ndarray] = field(default_factory=dict)
    reference: Optional[Dict[str, np.ndarray]] = None
    default: Tolerance = field(default_factory=Tolerance)
    tolerances: Dict[str, Tolerance] = field(default_factory=dict)
    skipped: str = ""
    golden: Optional[Path] = None
    inputs: Dict[str, np.ndarray] = field(default_factory=dict)

    def tolerance_of(self, output: str) -> Tolerance:
        return self.tolerances.get(output, self.default)


# -- golden files ------------------------------------------------------------------------------------
def read_golden(path: Path) -> Tuple[Dict[str, np.ndarray], Dict[str, np.ndarray]]:
    """(outputs, inputs) of a golden file."""
    try:
        with np.load(str(path), allow_pickle=False) as data:
            arrays = {k: np.array(data[k]) for k in data.files}
    except Exception as exc:  # zipfile, ValueError (pickled objects), OSError: all say the same
        raise BaselineError(
            f"golden outputs {str(path)!r} cannot be read ({type(exc).__name__}: {exc}); delete it "
            "and record it again with --jetson-update-baselines") from None
    outputs = {k[len("output:"):]: v for k, v in arrays.items() if k.startswith("output:")}
    inputs = {k[len("input:"):]: v for k, v in arrays.items() if k.startswith("input:")}
    if not outputs:
        raise BaselineError(f"golden outputs {str(path)!r} hold no output: arrays; delete it and "
                            "record it again with --jetson-update-baselines")
    return outputs, inputs


def write_golden(path: Path, outputs: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray]) -> None:
    """Write a golden file at once (``fileio.write_atomic``): never half of one."""
    buf = io.BytesIO()
    arrays = {f"output:{k}": np.asarray(v) for k, v in outputs.items()}
    arrays.update({f"input:{k}": np.asarray(v) for k, v in inputs.items()})
    np.savez_compressed(buf, **arrays)
    fileio.write_atomic(path, buf.getvalue())


# -- a check, as the recorder makes it -------------------------------------------------------------
def _arrays(outputs: Any, what: str) -> Dict[str, np.ndarray]:
    if not isinstance(outputs, Mapping) or not outputs:
        raise OutputsError(f"perf.check_outputs: {what} must be outputs by name ({{name: array}}), "
                           f"not {type(outputs).__name__}")
    return {str(k): np.asarray(v) for k, v in outputs.items()}


def _named(inputs: Any, names: Any) -> Dict[str, np.ndarray]:
    """Inputs by name: a mapping as it is, an array for the first name, a sequence in order."""
    if isinstance(inputs, Mapping):
        return _arrays(inputs, "inputs=")
    if isinstance(inputs, (list, tuple)):
        if len(inputs) != len(names):
            raise OutputsError(f"perf.check_outputs: {len(inputs)} inputs given for the model's "
                               f"{len(names)} ({', '.join(names)}); pass them by name")
        return {n: np.asarray(v) for n, v in zip(names, inputs)}
    return {names[0]: np.asarray(inputs)}


def _per_output(tolerances: Any, precision: str) -> Dict[str, Tolerance]:
    if tolerances is None:
        return {}
    if not isinstance(tolerances, Mapping):
        raise OutputsError("perf.check_outputs: tolerances= maps output names to their tolerances, "
                           "e.g. tolerances={'boxes': {'atol': 0.5}, 'scores': {'cosine': 0.99}}")
    out = {}
    for name, spec in tolerances.items():
        if not isinstance(spec, Mapping):
            raise OutputsError(f"perf.check_outputs: tolerances[{name!r}] must be a dict of "
                               f"{', '.join(TOLERANCE_KEYS)}, not {spec!r}")
        out[str(name)] = tolerance(precision, f"tolerances[{name!r}]: ", **spec)
    return out


def _onnx_of(engine: Engine, model: Any) -> Path:
    if model is not None:
        return resolve_onnx(model, "perf.check_outputs")
    path = getattr(engine, "path", None)
    if path is not None and str(path).endswith(".onnx"):
        return Path(path)
    if not engine.model or str(engine.model).lower().endswith((".engine", ".plan", ".trt")):
        raise OutputsError(
            f"perf.check_outputs: {engine.name} was not built from an ONNX file this run can find; "
            "pass model='path/to/model.onnx' for reference='onnxruntime'")
    return resolve_onnx(engine.model, f"perf.check_outputs ({engine.name})")


def check_unique(records: Any, name: str) -> None:
    """Two checks of one test under one name would share their golden file and their rows."""
    if any(r.name == name for r in records):
        raise OutputsError(f"perf.check_outputs: this test already checked outputs under the name "
                           f"{name!r}; give each check its own name= (name='head', ...)")


def _set_source(record: OutputsRecord, reference: Any, golden: Any) -> None:
    if isinstance(reference, Mapping):
        record.source = "the given reference"
        record.reference = _arrays(reference, "reference=")
    elif reference == "golden":
        if golden is None:
            raise OutputsError("perf.check_outputs: reference='golden' needs the perf fixture of the "
                               "pytest-jetson plugin (it says where the golden files live)")
        record.golden = Path(golden(record.name))
        record.source = f"golden outputs {record.golden.as_posix()}"
    elif reference == "onnxruntime":
        record.source = "onnxruntime (CPUExecutionProvider)"
    else:
        raise OutputsError(f"perf.check_outputs: reference must be 'onnxruntime', 'golden' or outputs "
                           f"by name ({{name: array}}), not {reference!r}")


def prepare(context: Any, engine_or_outputs: Any, inputs: Any = None, reference: Any = "onnxruntime",
            name: str = "", golden: Any = None, model: Any = None, precision: Optional[str] = None,
            **tolerance_args: Any) -> OutputsRecord:
    """Run what ``perf.check_outputs`` asks for and return the record the gate will judge.

    ``golden``: ``golden(name) -> Path``, where this test's golden files live (the plugin gives
    it); ``tolerance_args``: ``atol``, ``rtol``, ``cosine``, ``topk`` for every output and
    ``tolerances`` per output."""
    per_output = tolerance_args.pop("tolerances", None)
    engine = None if isinstance(engine_or_outputs, Mapping) else as_engine(engine_or_outputs)
    precision = precision or (engine.precision if engine is not None else "") or "fp32"
    record = OutputsRecord(name=str(name or ""), source="",
                           default=tolerance(precision, "", **tolerance_args),
                           tolerances=_per_output(per_output, precision))
    _set_source(record, reference, golden)
    if (engine.backend == "simulated") if engine is not None else bool(getattr(context, "simulated", False)):
        record.skipped = SIMULATED_REASON
        return record
    if record.golden is not None and record.golden.is_file():
        record.reference, golden_inputs = read_golden(record.golden)
        if inputs is None and engine is not None and golden_inputs:
            inputs = golden_inputs  # the inputs the golden outputs were made from, replayed
    if engine is not None:
        if inputs is None:
            inputs = make_inputs(engine.input_specs, engine.batch, getattr(context, "seed", 0) or 0)
        record.inputs, _ = engine._feeds(inputs)
        record.actual = _arrays(engine(record.inputs), f"{engine.name}'s outputs")
    else:
        record.actual = _arrays(engine_or_outputs, "the outputs")
    if reference == "onnxruntime":
        if engine is None and (model is None or inputs is None):
            raise OutputsError("perf.check_outputs: outputs checked against reference='onnxruntime' "
                               "need model= (the ONNX file) and inputs= (what made them)")
        path = _onnx_of(engine, model) if engine is not None else resolve_onnx(model, "perf.check_outputs")
        record.source = f"onnxruntime (CPUExecutionProvider) on {path.as_posix()}"
        if engine is None:
            record.inputs = _named(inputs, onnx_reference.input_names(path))
        record.reference = onnx_reference.run(path, record.inputs)
    elif engine is None and inputs is not None:
        count = len(inputs) if isinstance(inputs, (list, tuple)) else 1
        record.inputs = _named(inputs, [f"input{i}" for i in range(count)])
    return record
