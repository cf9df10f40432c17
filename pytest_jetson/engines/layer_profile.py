"""Per-layer profiles: where one inference's time goes, layer by layer, and the engine's structure.

A ``LayerProfile`` is what a backend says about its layers after the timed window: TensorRT's
``IProfiler`` on a board, onnxruntime's node profile on the host, the simulator's own per-kernel
prediction on the simulated device. Each ``LayerTime`` is one layer after fusion: its name, type,
precision, tactic (where the backend says it), time per inference (one batch, seconds) and share of
the profile's total; the simulator adds the kernel class and what bounds it (compute, memory or
launch). ``size`` (output elements per item, where known) lets two profiles whose names differ (a
re-export renamed the layers) be matched by structure: type and size, in order.

``structure(profile)`` is what a baseline entry keeps of it: a digest of the whole layer list, the
counts (layers per precision, and per tensor format where the backend says it), and the slowest
layers with their times, small enough to review in a diff.
"""

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

#: the columns of a profile's rows in files, in order
COLUMNS = ("name", "type", "precision", "time", "share", "tactic", "kernel", "bound", "size", "format")
#: layers a baseline entry keeps with their times: all of them up to this many, else the slowest
#: (and every reformat); the others are kept as a short hash of their name each
KEEP = 64
#: hex digits of a layer name's hash in a structure's ``names``
NAME_HASH = 6
#: the type a reformat layer has, whatever the backend calls it
REFORMAT = "Reformat"


@dataclass
class LayerTime:
    """One layer after fusion (times in seconds per inference: one batch)."""

    name: str
    type: str
    precision: str
    time: float
    share: float = 0.0
    tactic: Optional[str] = None
    kernel: Optional[str] = None
    bound: Optional[str] = None
    size: Optional[int] = None
    #: the tensor format of its output, where the backend says it (TensorRT's inspector)
    format: Optional[str] = None

    @property
    def is_reformat(self) -> bool:
        return self.type == REFORMAT

    def row(self) -> List[Any]:
        return [self.name, self.type, self.precision, _sig(self.time), round(self.share, 5), self.tactic,
                self.kernel, self.bound, self.size, self.format]


@dataclass
class LayerProfile:
    """The layers of one engine at one batch, in execution order.

    ``source``: "simulator", "onnxruntime" or "tensorrt"; ``runs``: the profiled inferences the
    times are a mean of (0: predicted, not run); ``notes``: what the profile could not say."""

    source: str
    layers: List[LayerTime] = field(default_factory=list)
    runs: int = 0
    notes: List[str] = field(default_factory=list)

    @property
    def total(self) -> float:
        return sum(x.time for x in self.layers)

    @property
    def reformats(self) -> int:
        return sum(1 for x in self.layers if x.is_reformat)

    @property
    def digest(self) -> str:
        return digest(self.layers)

    def with_shares(self) -> "LayerProfile":
        total = self.total
        for x in self.layers:
            x.share = x.time / total if total > 0 else 0.0
        return self

    def top(self, n: int) -> List[LayerTime]:
        return sorted(self.layers, key=lambda x: -x.time)[:n]

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"source": self.source, "runs": self.runs, "total": _sig(self.total),
                             "reformats": self.reformats, "digest": self.digest,
                             "columns": list(COLUMNS), "layers": [x.row() for x in self.layers]}
        if self.notes:
            d["notes"] = list(self.notes)
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "LayerProfile":
        cols = list(d.get("columns") or COLUMNS)
        layers = []
        for row in d.get("layers") or []:
            r = dict(zip(cols, row)) if isinstance(row, list) else dict(row)
            layers.append(LayerTime(
                name=str(r.get("name", "")), type=str(r.get("type", "")), precision=str(r.get("precision", "")),
                time=float(r.get("time") or 0.0), share=float(r.get("share") or 0.0),
                tactic=None if r.get("tactic") is None else str(r["tactic"]),
                kernel=r.get("kernel"), bound=r.get("bound"),
                size=None if r.get("size") is None else int(r["size"]),
                format=None if r.get("format") is None else str(r["format"])))
        return cls(source=str(d.get("source", "")), layers=layers, runs=int(d.get("runs") or 0),
                   notes=list(d.get("notes") or []))


def _sig(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


def digest(layers: Sequence[LayerTime]) -> str:
    """sha256 (first 16 hex digits) of the canonical layer list: name, type and precision of every
    layer in order. Times and tactics stay out: a rebuild that only picks other kernels keeps it."""
    import hashlib  # here: a pool worker imports this module for its profile and never hashes

    canon = json.dumps([[x.name, x.type, x.precision] for x in layers], separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()[:16]


def name_hash(name: str) -> str:
    import hashlib

    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:NAME_HASH]


def tactic_hash(tactic: Optional[str]) -> str:
    """A kept layer's tactic in a structure's ``tactics``: its name hashed, zeros for none."""
    return name_hash(tactic) if tactic else "0" * NAME_HASH


def structure(profile: LayerProfile, keep: int = KEEP) -> Dict[str, Any]:
    """What a baseline entry keeps of ``profile``: its digest, layer and reformat counts, the layers
    per precision, and [name, type, precision, time] of every layer, in execution order; of more
    than ``keep`` layers, only the ``keep`` slowest and the reformats, with ``names``: every
    layer's name hashed (``NAME_HASH`` hex digits each, in order), so that a layer that is not
    kept is still known to have been there. Where the backend names tactics (TensorRT),
    ``tactics``: each kept row's tactic hashed (``tactic_hash``), so a rebuild that picked other
    kernels is seen without keeping their long names."""
    layers = profile.layers
    partial = len(layers) > keep
    if partial:
        chosen = {id(x) for x in profile.top(keep)}
        kept = [x for x in layers if id(x) in chosen or x.is_reformat]
    else:
        kept = list(layers)
    precisions: Dict[str, int] = {}
    formats: Dict[str, int] = {}
    for x in layers:
        precisions[x.precision] = precisions.get(x.precision, 0) + 1
        if x.format:
            formats[x.format] = formats.get(x.format, 0) + 1
    out = {"digest": profile.digest, "source": profile.source, "layers": len(layers),
           "reformats": profile.reformats, "precisions": dict(sorted(precisions.items())),
           "total": _sig(profile.total, 3),
           "rows": [[x.name, x.type, x.precision, _sig(x.time, 3)] for x in kept]}
    if formats:
        out["formats"] = dict(sorted(formats.items()))
    if any(x.tactic for x in kept):
        out["tactics"] = "".join(tactic_hash(x.tactic) for x in kept)
    if partial:
        out["names"] = "".join(name_hash(x.name) for x in layers)
    return out


def from_structure(d: Dict[str, Any]) -> Tuple[LayerProfile, int, Optional[List[str]]]:
    """A baseline's kept layers as a (partial) profile, how many layers the engine had, and the
    hashes of all their names where not every layer is kept (else None). A row's ``tactic`` is
    its ``tactic_hash`` where the structure keeps tactics."""
    rows = [LayerTime(name=str(r[0]), type=str(r[1]), precision=str(r[2]), time=float(r[3]))
            for r in d.get("rows") or []]
    tactics = d.get("tactics")
    if isinstance(tactics, str) and len(tactics) == NAME_HASH * len(rows):
        for i, x in enumerate(rows):  # hashed: compared with tactic_hash of a profile's tactics
            x.tactic = tactics[i * NAME_HASH:(i + 1) * NAME_HASH]
    names = d.get("names")
    hashes = [names[i:i + NAME_HASH] for i in range(0, len(names), NAME_HASH)] if isinstance(names, str) else None
    return LayerProfile(source=str(d.get("source", "")), layers=rows), int(d.get("layers") or len(rows)), hashes
