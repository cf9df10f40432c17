"""Output checks: a test's outputs against a reference, judged per output, as verdicts beside its
perf bounds.

``compare(actual, reference, tolerance_of)`` is pure: one ``OutputCheck`` per reference output
with what Polygraphy's ``CompareFunc.simple`` prints and more: the shapes and dtypes, the largest
absolute and relative errors and where they are, the share of elements out of tolerance, the
cosine similarity and the top-k agreement.

The rules, each a decision:

* an element is within tolerance when ``|actual - reference| <= atol + rtol * |reference|``
  (numpy's ``isclose``; Polygraphy passes an element within either tolerance alone, which is at
  most twice as loose);
* shapes must be equal and dtypes the same (Polygraphy checks shapes only): an engine that
  returns float16 where the model says float32 is a change a test should see;
* NaN matches NaN and an infinity the same infinity at the same place; anywhere else a NaN or
  an infinity is out of tolerance. Errors, cosine and top-k are computed over the places where
  both are finite, and the counts of the others are reported;
* an output the reference has and the test does not is a failed check; outputs the test has
  beyond the reference's are not checked.

``verdicts(records, ...)`` turns the recorder's ``run.outputs.OutputsRecord`` into verdicts
(metric ``outputs:<name>``, kind ``"outputs"``) and writes golden files under
``--jetson-update-baselines``: new ones (every mode), ones that no longer match (``all``), all of
them (``force``).
"""

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..run.outputs import OutputsRecord, Tolerance, write_golden
from .keys import baseline_path
from .verdict import Verdict, outcome_of

KIND = "outputs"


@dataclass
class OutputCheck:
    """One output against its reference. Errors are over the elements finite in both; ``where_*``
    the index of the largest error, ``actual_at``/``reference_at`` the values there;
    ``mismatched``: elements out of the elementwise tolerance (NaN and infinities that do not
    match included) of ``size``; ``topk``: the share of the reference's top-k the output's holds,
    averaged over the rows of the last axis. ``reason``: why it failed, in words ("" when it
    passed or when the numbers say it)."""

    name: str
    passed: bool
    shape: Optional[Tuple[int, ...]] = None
    reference_shape: Optional[Tuple[int, ...]] = None
    dtype: str = ""
    reference_dtype: str = ""
    tolerance: Tolerance = field(default_factory=Tolerance)
    size: int = 0
    mismatched: int = 0
    max_abs: Optional[float] = None
    mean_abs: Optional[float] = None
    where_abs: Optional[Tuple[int, ...]] = None
    max_rel: Optional[float] = None
    where_rel: Optional[Tuple[int, ...]] = None
    actual_at: Optional[float] = None
    reference_at: Optional[float] = None
    cosine: Optional[float] = None
    topk: Optional[float] = None
    nan: Tuple[int, int] = (0, 0)  # NaN in the output, in the reference
    inf: Tuple[int, int] = (0, 0)
    failed: List[str] = field(default_factory=list)  # which tolerances it missed: elementwise, cosine, topk
    reason: str = ""

    @property
    def mismatched_share(self) -> float:
        return self.mismatched / self.size if self.size else 0.0

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["tolerance"] = self.tolerance.to_dict()
        for key in ("shape", "reference_shape", "where_abs", "where_rel", "nan", "inf"):
            if d[key] is not None:
                d[key] = [int(x) for x in d[key]]
        d["mismatched_share"] = self.mismatched_share
        return d


def _cast(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "b":
        return a.astype(np.float64)
    if a.dtype.kind == "c":
        return a.astype(np.complex128)
    return a.astype(np.float64)


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.clip(np.real(np.vdot(a, b)) / (na * nb), -1.0, 1.0))


def topk_agreement(actual: np.ndarray, reference: np.ndarray, k: int) -> float:
    """The share of the reference's top-``k`` entries (last axis) among the output's top-``k``,
    averaged over the rows (every other axis). Ties fall as ``argsort`` (stable) orders them."""
    n = reference.shape[-1] if reference.ndim else 1
    k = min(k, n)
    a = np.nan_to_num(actual.reshape(-1, n), nan=-np.inf)
    r = np.nan_to_num(reference.reshape(-1, n), nan=-np.inf)
    top_a = np.argsort(-a, axis=1, kind="stable")[:, :k]
    top_r = np.argsort(-r, axis=1, kind="stable")[:, :k]
    hits = (top_a[:, :, None] == top_r[:, None, :]).any(axis=2).sum(axis=1)
    return float(np.mean(hits / k))


def _index(flat: int, shape: Tuple[int, ...]) -> Tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def _numbers(check: OutputCheck, a: np.ndarray, r: np.ndarray, tol: Tolerance) -> None:
    """Fill ``check``'s statistics and decide it (shapes and dtypes already equal)."""
    a64, r64 = _cast(a), _cast(r)
    fa, fr = np.isfinite(a64), np.isfinite(r64)
    both = fa & fr
    na, nr = np.isnan(a64), np.isnan(r64)
    check.nan = (int(na.sum()), int(nr.sum()))
    check.inf = (int(np.isinf(a64).sum()), int(np.isinf(r64).sum()))
    # special values match only themselves at the same place
    special_ok = (na & nr) | (~fa & ~fr & ~na & ~nr & (a64 == r64))
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: those places are not in `both`
        diff = np.where(both, np.abs(a64 - r64), 0.0)
    scale = np.abs(np.where(both, r64, 0.0))
    if both.any():
        i = int(np.argmax(diff))
        check.max_abs, check.where_abs = float(diff.flat[i]), _index(i, a.shape)
        check.mean_abs = float(diff[both].mean())
        check.actual_at, check.reference_at = float(np.real(a64.flat[i])), float(np.real(r64.flat[i]))
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(diff > 0, diff / scale, 0.0)  # x/0 is inf: an error where the reference is 0
        j = int(np.argmax(rel))
        check.max_rel, check.where_rel = float(rel.flat[j]), _index(j, a.shape)
        check.cosine = _cosine(a64[both], r64[both])
    if tol.atol is not None or tol.rtol is not None:
        within = both & (diff <= (tol.atol or 0.0) + (tol.rtol or 0.0) * scale)
        check.mismatched = int((~(within | special_ok)).sum())
        if check.mismatched:
            check.failed.append("elementwise")
    else:
        check.mismatched = int((~(both | special_ok)).sum())
        if check.mismatched:
            check.failed.append("non-finite")
    if tol.cosine is not None and (check.cosine is None or check.cosine < tol.cosine):
        check.failed.append("cosine")
    if tol.topk is not None:
        check.topk = topk_agreement(a64.real if a64.dtype.kind == "c" else a64,
                                    r64.real if r64.dtype.kind == "c" else r64, tol.topk[0])
        if check.topk < tol.topk[1] - 1e-12:
            check.failed.append("topk")
    check.passed = not check.failed


def compare_one(name: str, actual: Any, reference: Any, tol: Tolerance) -> OutputCheck:
    a, r = np.asarray(actual), np.asarray(reference)
    check = OutputCheck(name=name, passed=False, shape=tuple(a.shape), reference_shape=tuple(r.shape),
                        dtype=str(a.dtype), reference_dtype=str(r.dtype), tolerance=tol, size=int(r.size))
    if a.shape != r.shape:
        check.failed.append("shape")
        check.reason = (f"output {name!r} has shape {tuple(a.shape)} and the reference "
                        f"{tuple(r.shape)}: not compared")
        return check
    if a.dtype != r.dtype:
        check.failed.append("dtype")
        check.reason = (f"output {name!r} is {a.dtype} and the reference {r.dtype} (shape "
                        f"{tuple(a.shape)}): not compared; cast one (.astype) if the change is meant")
        return check
    if tol.topk is not None and (a.ndim == 0 or tol.topk[0] > a.shape[-1]):
        check.failed.append("topk")
        check.reason = (f"output {name!r} of shape {tuple(a.shape)} has no top-{tol.topk[0]} on its "
                        "last axis; give topk= to classifier outputs only, with k at most the classes")
        return check
    _numbers(check, a, r, tol)
    return check


def compare(actual: Mapping[str, Any], reference: Mapping[str, Any],
            tolerance_of: Callable[[str], Tolerance]) -> List[OutputCheck]:
    """One check per output of ``reference``, in its order."""
    out = []
    for name, ref in reference.items():
        tol = tolerance_of(name)
        if name not in actual:
            ref = np.asarray(ref)
            out.append(OutputCheck(name=name, passed=False, reference_shape=tuple(ref.shape),
                                   reference_dtype=str(ref.dtype), tolerance=tol, failed=["missing"],
                                   reason=(f"output {name!r} of the reference (shape {tuple(ref.shape)}) "
                                           f"is missing; the outputs are {', '.join(map(repr, actual)) or 'none'}")))
            continue
        out.append(compare_one(name, actual[name], ref, tol))
    return out


# -- golden files ------------------------------------------------------------------------------------
def golden_path(directory: Path, key: str, name: str = "") -> Path:
    """Where the golden outputs of test ``key`` live: beside its module's baseline file, in a
    folder named after the module, one ``.npz`` per test (and per ``name=``)."""
    module_file = baseline_path(Path(directory), key)
    test = key.split("::", 1)[1] if "::" in key else "test"
    stem = re.sub(r"[^A-Za-z0-9._=-]+", "_", test + (f".{name}" if name else "")).strip("_.") or "test"
    return module_file.with_suffix("") / f"{stem}.outputs.npz"


# -- verdicts ---------------------------------------------------------------------------------------
def _verdict(metric: str, reason: str, missing_baseline: str, bound: str, **kw: Any) -> Verdict:
    return Verdict(metric=metric, outcome=outcome_of(reason, missing_baseline), reason=reason,
                   kind=KIND, bound=bound, **kw)


def _metric(record: OutputsRecord, output: str = "") -> str:
    parts = [KIND] + [p for p in (record.name, output) if p]
    return ":".join(parts)


def _against(record: OutputsRecord) -> str:
    """The bound of a check that compared nothing: what it was to be compared with."""
    if record.golden is not None:
        return "vs golden"
    return "vs onnxruntime" if record.source.startswith("onnxruntime") else "vs the given reference"


def _record_verdicts(record: OutputsRecord, update: Optional[str], missing_baseline: str,
                     display: Callable[[Path], str]) -> List[Verdict]:
    source = record.source
    if record.golden is not None:
        source = f"golden outputs {display(record.golden)}"
    if record.skipped:
        return [_verdict(_metric(record), "outputs_unchecked", missing_baseline, _against(record),
                         detail=f"outputs not checked: {record.skipped}", baseline_file=source)]
    checks = compare(record.actual, record.reference, record.tolerance_of) if record.reference is not None else []
    golden = record.golden
    write = golden is not None and bool(update) and (
        record.reference is None or update == "force" or (update == "all" and not all(c.passed for c in checks)))
    if write:
        write_golden(golden, record.actual, record.inputs)
    if record.reference is None:  # a golden file not recorded yet
        if write:
            return [_verdict(_metric(record, n), "outputs_recorded", missing_baseline,
                             record.tolerance_of(n).words(), baseline_file=source,
                             detail=f"golden outputs recorded by this run: {source}")
                    for n in record.actual]
        return [_verdict(_metric(record), "outputs_no_reference", missing_baseline, _against(record),
                         baseline_file=source,
                         detail=f"no golden outputs {display(golden) if golden else ''}; record them with "
                                "--jetson-update-baselines")]
    out = []
    for c in checks:
        reason = "outputs_match" if c.passed else "outputs_differ"
        v = _verdict(_metric(record, c.name), reason, missing_baseline, c.tolerance.words(),
                     value=c.max_abs, baseline_file=source, outputs=c.to_dict(), detail=c.reason)
        if write:
            v.previous, v.reason, v.outcome = reason, "outputs_recorded", outcome_of("outputs_recorded")
        out.append(v)
    return out


def verdicts(records: Sequence[OutputsRecord], key: str, update: Optional[str] = None,
             missing_baseline: str = "skip", display: Callable[[Path], str] = str) -> List[Verdict]:
    """The verdicts of a test's output checks (``key``: its baseline key), writing the golden
    files ``update`` (``--jetson-update-baselines``: None, "new", "all", "force") asks for.
    ``display``: a path as reports show it."""
    out: List[Verdict] = []
    for record in records:
        for v in _record_verdicts(record, update, missing_baseline, display):
            v.measurement, v.test = key, key
            out.append(v)
    return out
