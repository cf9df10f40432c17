"""The time series a sampler recorded, column by column, for summaries and plots."""

from array import array
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

import numpy as np

from .base import Reading

#: Scalar columns of a ``Series``, in the order reports show them.
SCALARS = ("board_power_w", "memory_bytes", "gpu_util", "gpu_clock_mhz", "emc_util", "cpu_util",
           "sm_active", "tensor_active", "issue_active", "dram_util")
#: The GPU activity columns (percent), which only Nsight Systems or the simulated board fill.
ACTIVITY = ("sm_active", "tensor_active", "issue_active", "dram_util")


#: The throttle reasons of a sample that reports none: one shared empty row (a fresh list per
#: sample would cost 64 bytes each, more than all of its figures).
NO_THROTTLE: Sequence[str] = ()


def _col(values: List[Optional[float]]) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in values], dtype=float)


def _typed(values: Any, n: int) -> np.ndarray:
    """A column of ``n`` floats (NaN for "not read"): a copy of a typed array's, a float numpy
    array as it is (taken over, not copied)."""
    if isinstance(values, array):
        col = np.frombuffer(values, dtype=float).copy() if len(values) else np.zeros(0)
    else:
        col = np.asarray(values, dtype=float)
    if col.shape != (n,):
        raise ValueError(f"a column of {col.size} values beside {n} times")
    return col


class Series:
    """Columns of equal length: ``t`` (seconds on the sampler's clock), one array per scalar in
    ``SCALARS``, and dicts of arrays for ``rails_w`` and ``temps_c``. NaN marks "not read"."""

    def __init__(self) -> None:
        self.t = np.zeros(0)
        self.board_power_w = np.zeros(0)
        self.memory_bytes = np.zeros(0)
        self.gpu_util = np.zeros(0)
        self.gpu_clock_mhz = np.zeros(0)
        self.emc_util = np.zeros(0)
        self.cpu_util = np.zeros(0)
        self.sm_active = np.zeros(0)
        self.tensor_active = np.zeros(0)
        self.issue_active = np.zeros(0)
        self.dram_util = np.zeros(0)
        self.rails_w: Dict[str, np.ndarray] = {}
        self.temps_c: Dict[str, np.ndarray] = {}
        self.throttle: List[Sequence[str]] = []
        self.clock = "wall"

    @classmethod
    def from_readings(cls, readings: Iterable[Reading], clock: str = "wall") -> "Series":
        readings = sorted(readings, key=lambda r: r.t)
        s = cls()
        s.clock = clock
        s.t = np.array([r.t for r in readings], dtype=float)
        for name in SCALARS:
            setattr(s, name, _col([getattr(r, name, None) for r in readings]))
        rails: List[str] = []
        temps: List[str] = []
        for r in readings:
            rails.extend(k for k in r.rails_w if k not in rails)
            temps.extend(k for k in r.temps_c if k not in temps)
        s.rails_w = {k: _col([r.rails_w.get(k) for r in readings]) for k in rails}
        s.temps_c = {k: _col([r.temps_c.get(k) for r in readings]) for k in temps}
        s.throttle = [list(r.throttle) if r.throttle else NO_THROTTLE for r in readings]
        return s

    @classmethod
    def from_columns(cls, t: Any, columns: Mapping[str, Any], rails_w: Optional[Mapping[str, Any]] = None,
                     temps_c: Optional[Mapping[str, Any]] = None, clock: str = "wall") -> "Series":
        """Samples made in bulk, one typed array per field (``array('d')``, copied, or numpy,
        taken over): 8 bytes a value where a ``Reading`` takes about 1.2 KB. ``t`` in order,
        ``columns`` some of the ``SCALARS`` (the others not read), ``rails_w`` and ``temps_c``
        by name; NaN marks "not read"; no sample reports throttle reasons. The same Series
        ``from_readings`` gives for readings of those figures."""
        s = cls()
        s.clock = clock
        s.t = _typed(t, len(t))
        n = s.t.size
        unknown = set(columns) - set(SCALARS)
        if unknown:
            raise ValueError(f"not a column of a Series: {sorted(unknown)}")
        for name in SCALARS:
            setattr(s, name, _typed(columns[name], n) if name in columns else np.full(n, np.nan))
        s.rails_w = {k: _typed(v, n) for k, v in (rails_w or {}).items()}
        s.temps_c = {k: _typed(v, n) for k, v in (temps_c or {}).items()}
        s.throttle = [NO_THROTTLE] * n
        return s

    @classmethod
    def concat(cls, parts: Sequence["Series"], clock: Optional[str] = None) -> "Series":
        """One Series of ``parts`` (windows sampled one after another), in time order as
        ``from_readings`` sorts (stably) the readings of all of them; a rail or sensor missing
        from a part is not read there."""
        s = cls()
        s.clock = clock if clock is not None else (parts[0].clock if parts else "wall")
        if not parts:
            return s
        if len(parts) == 1:
            only = parts[0]
            s.__dict__.update({k: v for k, v in only.__dict__.items() if k != "clock"})
            return s
        t = np.concatenate([p.t for p in parts])
        order = None if t.size < 2 or bool(np.all(t[1:] >= t[:-1])) else np.argsort(t, kind="stable")

        def join(cols: List[np.ndarray]) -> np.ndarray:
            col = np.concatenate(cols)
            return col if order is None else col[order]

        s.t = t if order is None else t[order]
        for name in SCALARS:
            setattr(s, name, join([getattr(p, name) for p in parts]))
        for attr in ("rails_w", "temps_c"):
            names: List[str] = []
            for p in parts:
                names.extend(k for k in getattr(p, attr) if k not in names)
            setattr(s, attr, {k: join([getattr(p, attr).get(k, np.full(len(p), np.nan)) for p in parts])
                              for k in names})
        rows = [row for p in parts for row in p.throttle]
        s.throttle = rows if order is None else [rows[i] for i in order.tolist()]
        return s

    def __len__(self) -> int:
        return int(self.t.size)

    @property
    def elapsed(self) -> np.ndarray:
        """Seconds since the first sample (what a plot's x axis wants)."""
        return self.t - self.t[0] if self.t.size else self.t

    def to_dict(self) -> Dict[str, Any]:
        def lst(a: np.ndarray) -> List[Optional[float]]:
            # one C pass to floats, then NaN (not equal to itself) to None: a numpy scalar per
            # value would cost a microsecond each, over a million samples per column
            return [None if x != x else x for x in a.tolist()]

        d: Dict[str, Any] = {"clock": self.clock, "t": [float(x) for x in self.t.tolist()]}
        for name in SCALARS:
            col = getattr(self, name)
            if name in ACTIVITY and not np.isfinite(col).any():
                continue  # most sources never sample them: no column of nulls in every file
            d[name] = lst(col)
        d["rails_w"] = {k: lst(v) for k, v in self.rails_w.items()}
        d["temps_c"] = {k: lst(v) for k, v in self.temps_c.items()}
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Series":
        s = cls()
        s.clock = d.get("clock", "wall")
        s.t = np.array(d.get("t", []), dtype=float)
        n = s.t.size
        for name in SCALARS:
            setattr(s, name, _col(d.get(name) or [None] * n))
        s.rails_w = {k: _col(v) for k, v in d.get("rails_w", {}).items()}
        s.temps_c = {k: _col(v) for k, v in d.get("temps_c", {}).items()}
        s.throttle = [NO_THROTTLE] * n
        return s

    def __repr__(self) -> str:
        return f"<Series {len(self)} samples, clock={self.clock}>"
