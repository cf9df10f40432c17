"""Where a measurement's time moved against its baseline, stage by stage (data; ``report.render``
words it).

For a measurement with named stages (``perf.stage``) and a baseline entry that has them too, each
stage's change in mean time per call (now minus the baseline's) is set against the change in the
whole's mean latency: its ``share`` is how much of that change it explains (0.87: 87% of the
slowdown). Stages come ordered by how much they explain, so the stage that moved is named first
whichever bound failed, a stage's own or the whole's (``latency_p99``). When the whole barely
moved (less than ``MIN_MOVE`` of its baseline) a share would divide noise by noise: there is none,
and stages come ordered by how far they moved.

Means are compared because they add up: the stages' means sum to (at most) the whole's, which no
percentile does.

Layer by layer (``layers``): a measurement's per-layer profile against the structure its baseline
entry keeps (``engines.layer_profile.structure``): the layers whose time moved most, reformats
added or removed, layers whose precision or tactic changed (a structure keeps each kept layer's
tactic hashed), and whether the engine's graph changed (its digest). Layers are matched by name; where names differ (a re-export renamed them) and the
baseline keeps every layer, by structure (the order of their types); what matches neither way is
said, not guessed.
"""

import difflib
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..engines.layer_profile import REFORMAT, LayerProfile, LayerTime, from_structure, name_hash, tactic_hash

#: the smallest relative change of the whole's mean latency that shares are given against
MIN_MOVE = 0.005


@dataclass
class StageShift:
    """One stage's mean time per call, now and in the baseline (seconds), and the share of the
    whole's change it explains (None: the whole did not move measurably)."""

    stage: str
    now: float
    baseline: float
    share: Optional[float] = None

    @property
    def change(self) -> float:
        return self.now - self.baseline

    @property
    def relative(self) -> Optional[float]:
        return self.change / self.baseline if self.baseline > 0 else None

    def to_dict(self) -> Dict[str, Any]:
        return {"stage": self.stage, "now": self.now, "baseline": self.baseline, "change": self.change,
                "relative": self.relative, "share": self.share}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "StageShift":
        share = d.get("share")
        return cls(stage=str(d["stage"]), now=float(d["now"]), baseline=float(d["baseline"]),
                   share=None if share is None else float(share))


#: the layers a verdict's "where" names, the one that moved most first
TOP_LAYERS = 10
#: a layer on both sides moved when its time changed by more than this fraction (a baseline keeps
#: layer times to 3 significant digits)
MIN_LAYER_MOVE = 0.01


@dataclass
class LayerShift:
    """One layer's time per inference now and in the baseline (seconds; None: the layer is not on
    that side), its type and precision on each side, and how it was matched ("name", "structure",
    or "" for a layer on one side only)."""

    name: str
    type: str
    now: Optional[float]
    baseline: Optional[float]
    precision: str = ""
    baseline_precision: str = ""
    matched: str = "name"
    baseline_name: str = ""

    @property
    def change(self) -> float:
        return (self.now or 0.0) - (self.baseline or 0.0)

    @property
    def moved(self) -> bool:
        if self.now is None or self.baseline is None or self.precision != self.baseline_precision:
            return True
        return abs(self.change) > MIN_LAYER_MOVE * self.baseline

    @property
    def status(self) -> str:
        """"added", "removed", "precision" (its precision changed) or "moved"."""
        if self.baseline is None:
            return "added"
        if self.now is None:
            return "removed"
        if self.baseline_precision and self.precision != self.baseline_precision:
            return "precision"
        return "moved"

    def to_dict(self) -> Dict[str, Any]:
        d = {"name": self.name, "type": self.type, "now": self.now, "baseline": self.baseline,
             "change": self.change, "status": self.status, "precision": self.precision,
             "baseline_precision": self.baseline_precision, "matched": self.matched}
        if self.baseline_name and self.baseline_name != self.name:
            d["baseline_name"] = self.baseline_name
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "LayerShift":
        def num(x: Any) -> Optional[float]:
            return None if x is None else float(x)

        return cls(name=str(d["name"]), type=str(d.get("type", "")), now=num(d.get("now")),
                   baseline=num(d.get("baseline")), precision=str(d.get("precision", "")),
                   baseline_precision=str(d.get("baseline_precision", "")), matched=str(d.get("matched", "")),
                   baseline_name=str(d.get("baseline_name", "")))


@dataclass
class LayerWhere:
    """A profile against its baseline's structure: the layers ordered by how much their time
    moved, the totals, reformat counts, layers per precision, and the graph's digests."""

    layers: List[LayerShift] = field(default_factory=list)
    now_total: float = 0.0
    baseline_total: float = 0.0
    reformats: Tuple[int, int] = (0, 0)          # (baseline, now)
    counts: Tuple[int, int] = (0, 0)             # layers (baseline, now)
    digests: Tuple[str, str] = ("", "")          # (baseline, now)
    precisions: Dict[str, List[int]] = field(default_factory=dict)  # precision -> [baseline, now]
    fused_differently: int = 0
    #: every compared layer whose precision changed: [name, baseline precision, now]
    precision_changes: List[List[str]] = field(default_factory=list)
    #: every compared layer that runs another tactic now: [name, now's tactic]
    tactic_changes: List[List[str]] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    @property
    def graph_changed(self) -> bool:
        return self.digests[0] != self.digests[1]

    @property
    def change(self) -> float:
        return self.now_total - self.baseline_total

    def to_dict(self) -> Dict[str, Any]:
        return {"now": self.now_total, "baseline": self.baseline_total, "change": self.change,
                "graph_changed": self.graph_changed, "digests": list(self.digests),
                "layer_counts": list(self.counts), "reformats": list(self.reformats),
                "precisions": {k: list(v) for k, v in self.precisions.items()},
                "fused_differently": self.fused_differently,
                "precision_changes": [list(x) for x in self.precision_changes],
                "tactic_changes": [list(x) for x in self.tactic_changes], "notes": list(self.notes),
                "layers": [x.to_dict() for x in self.layers]}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "LayerWhere":
        pair = lambda key, cast: tuple(cast(v) for v in (d.get(key) or [0, 0]))  # noqa: E731
        return cls(layers=[LayerShift.from_dict(x) for x in d.get("layers") or []],
                   now_total=float(d.get("now") or 0.0), baseline_total=float(d.get("baseline") or 0.0),
                   reformats=pair("reformats", int), counts=pair("layer_counts", int),  # type: ignore[arg-type]
                   digests=tuple(str(v) for v in (d.get("digests") or ["", ""])),  # type: ignore[arg-type]
                   precisions={str(k): [int(a) for a in v] for k, v in (d.get("precisions") or {}).items()},
                   fused_differently=int(d.get("fused_differently") or 0),
                   precision_changes=[[str(v) for v in x] for x in d.get("precision_changes") or []],
                   tactic_changes=[[str(v) for v in x] for x in d.get("tactic_changes") or []],
                   notes=list(d.get("notes") or []))


@dataclass
class Where:
    """The stages of one measurement (its baseline ``key``) ordered by what they explain, and the
    whole's mean latency now and in the baseline (None where the baseline has no mean); with a
    per-layer profile and a baseline structure, ``layers``: where the engine's time moved."""

    measurement: str
    now: Optional[float]
    baseline: Optional[float]
    stages: List[StageShift] = field(default_factory=list)
    layers: Optional[LayerWhere] = None

    @property
    def change(self) -> Optional[float]:
        if self.now is None or self.baseline is None:
            return None
        return self.now - self.baseline

    @property
    def relative(self) -> Optional[float]:
        change = self.change
        return change / self.baseline if change is not None and self.baseline else None

    def to_dict(self) -> Dict[str, Any]:
        d = {"measurement": self.measurement, "now": self.now, "baseline": self.baseline,
             "change": self.change, "relative": self.relative,
             "stages": [s.to_dict() for s in self.stages]}
        if self.layers is not None:
            d["layers"] = self.layers.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Where":
        def num(x: Any) -> Optional[float]:
            return None if x is None else float(x)

        return cls(measurement=str(d.get("measurement", "")), now=num(d.get("now")),
                   baseline=num(d.get("baseline")),
                   stages=[StageShift.from_dict(s) for s in d.get("stages") or []],
                   layers=LayerWhere.from_dict(d["layers"]) if isinstance(d.get("layers"), dict) else None)


def _finite(x: Any) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def _mean(ref: Any) -> Optional[float]:
    st = ref.metrics.get("latency_mean") if ref is not None else None
    return _finite(st.value) if st is not None else None


def where(measurement: Any, baseline: Any, key: str = "") -> Optional[Where]:
    """The stages of ``measurement`` against those of its ``baseline`` (a ``BaselineRef``) in the
    order of what they explain, and its layers against the baseline's structure; None when they
    share neither stages nor a profile."""
    stages = getattr(measurement, "stages", None) or {}
    stored = getattr(baseline, "stages", None) or {}
    shifts = []
    for name, stage in stages.items():
        now, base = _finite(stage.latency_mean), _mean(stored.get(name))
        if now is not None and base is not None:
            shifts.append(StageShift(name, now, base))
    profile = getattr(measurement, "profile", None)
    structure = getattr(baseline, "structure", None)
    layers = layer_where(profile, structure) if profile is not None and profile.layers and structure else None
    if not shifts and layers is None:
        return None
    out = Where(key, _finite(measurement.latency_mean), _mean(baseline), layers=layers)
    total = out.change
    if total is not None and out.baseline and abs(total) >= MIN_MOVE * out.baseline:
        for s in shifts:
            s.share = s.change / total
        shifts.sort(key=lambda s: -(s.share or 0.0))
    else:
        shifts.sort(key=lambda s: -abs(s.change))
    out.stages = shifts
    return out


def _match_by_name(now: List[LayerTime], base: List[LayerTime]) -> Tuple[Dict[int, int], List[int], List[int]]:
    """now index -> baseline index for layers of the same name; the unmatched on each side."""
    by_name: Dict[str, int] = {}
    for j, x in enumerate(base):
        by_name.setdefault(x.name, j)
    pairs = {i: by_name[x.name] for i, x in enumerate(now) if x.name in by_name}
    taken = set(pairs.values())
    return pairs, [i for i in range(len(now)) if i not in pairs], [j for j in range(len(base)) if j not in taken]


def _match_by_structure(now: List[LayerTime], base: List[LayerTime], left: List[int],
                        right: List[int]) -> Dict[int, int]:
    """Unmatched layers paired where their types run in the same order on both sides."""
    a = [now[i].type for i in left]
    b = [base[j].type for j in right]
    pairs = {}
    for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            pairs[left[block.a + k]] = right[block.b + k]
    return pairs


def layer_where(profile: LayerProfile, structure: Dict[str, Any], top: int = TOP_LAYERS) -> LayerWhere:
    """``profile`` (now) against a baseline entry's ``structure``: each layer's change in time per
    inference, the layers that moved most first (``top`` of them).

    Where the baseline keeps every layer, layers match by name, then the rest by structure (the
    order of their types). Where it keeps only its slowest, a layer of neither kept nor hashed
    name is new, a kept one missing now is gone, and one known only by its hash is not compared."""
    base, n_base, hashes = from_structure(structure)
    now = profile.layers
    pairs, left, right = _match_by_name(now, base.layers)
    notes: List[str] = []
    by_structure: Dict[int, int] = {}
    known = set(hashes or ())
    was_there = [hashes is not None and name_hash(x.name) in known for x in now]
    new_now = [i for i in left if not was_there[i]]
    renamed = len(now) > 1 and len(new_now) > len(now) // 2
    if hashes is None and left and right:
        by_structure = _match_by_structure(now, base.layers, left, right)
        if by_structure:
            notes.append(f"{len(by_structure)} layer(s) matched the baseline's by structure (the order of "
                         "their types), not by name: the engine's layers were renamed")
    elif renamed:
        notes.append(f"{len(new_now)} of {len(now)} layers have names the baseline does not know (renamed "
                     f"by a re-export?) and it keeps only {len(base.layers)} of its {n_base} layers, too few "
                     "to match them by structure: they are not compared; re-record the baseline")
    shifts = []
    tactics: List[List[str]] = []
    for i, x in enumerate(now):
        j = pairs.get(i, by_structure.get(i))
        if j is not None:
            b = base.layers[j]
            if b.tactic and x.tactic and tactic_hash(x.tactic) != b.tactic:
                tactics.append([x.name, x.tactic])
            shifts.append(LayerShift(x.name, x.type, x.time, b.time, x.precision, b.precision,
                                     "name" if i in pairs else "structure", b.name))
        elif not was_there[i] and not renamed:
            shifts.append(LayerShift(x.name, x.type, x.time, None, x.precision, "", ""))
    matched_base = set(pairs.values()) | set(by_structure.values())
    if not renamed:
        for j, b in enumerate(base.layers):
            if j not in matched_base:
                shifts.append(LayerShift(b.name, b.type, None, b.time, "", b.precision, ""))
    retyped = [[s.name, s.baseline_precision, s.precision] for s in shifts if s.status == "precision"]
    shifts.sort(key=lambda s: -abs(s.change))
    precisions: Dict[str, List[int]] = {k: [int(v), 0] for k, v in (structure.get("precisions") or {}).items()}
    for x in now:
        precisions.setdefault(x.precision, [0, 0])[1] += 1
    digest_now = profile.digest
    fused = sum(1 for s in shifts if not s.matched and s.type != REFORMAT)
    if hashes is not None:  # layers gone that the baseline knew only by name
        now_hashes = {name_hash(x.name) for x in now}
        kept = {name_hash(b.name) for b in base.layers}
        fused += sum(1 for h in hashes if h not in now_hashes and h not in kept)
    if tactics:
        shown = ", ".join(n for n, _t in tactics[:3]) + (f" and {len(tactics) - 3} more" if len(tactics) > 3 else "")
        notes.append(f"{len(tactics)} layer(s) run another tactic than in the baseline (TensorRT picked other "
                     f"kernels): {shown}")
    if digest_now != structure.get("digest") and not fused:
        fused = abs(len(now) - n_base - (profile.reformats - int(structure.get("reformats") or 0)))
    return LayerWhere(
        layers=shifts[:top], now_total=profile.total, baseline_total=float(structure.get("total") or base.total),
        reformats=(int(structure.get("reformats") or 0), profile.reformats), counts=(n_base, len(now)),
        digests=(str(structure.get("digest") or ""), digest_now),
        precisions={k: v for k, v in sorted(precisions.items())}, fused_differently=fused,
        precision_changes=retyped, tactic_changes=tactics, notes=notes)
