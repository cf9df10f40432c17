"""The time series a sampler recorded, column by column, for summaries and plots."""

from typing import Any, Dict, Iterable, List, Optional

import numpy as np

from .base import Reading

#: Scalar columns of a ``Series``, in the order reports show them.
SCALARS = ("board_power_w", "memory_bytes", "gpu_util", "gpu_clock_mhz", "emc_util", "cpu_util",
           "sm_active", "tensor_active", "issue_active", "dram_util")
#: The GPU activity columns (percent), which only Nsight Systems or the simulated board fill.
ACTIVITY = ("sm_active", "tensor_active", "issue_active", "dram_util")


def _col(values: List[Optional[float]]) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in values], dtype=float)


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
        self.throttle: List[List[str]] = []
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
        s.throttle = [list(r.throttle) for r in readings]
        return s

    def __len__(self) -> int:
        return int(self.t.size)

    @property
    def elapsed(self) -> np.ndarray:
        """Seconds since the first sample (what a plot's x axis wants)."""
        return self.t - self.t[0] if self.t.size else self.t

    def to_dict(self) -> Dict[str, Any]:
        def lst(a: np.ndarray) -> List[Optional[float]]:
            return [None if np.isnan(x) else float(x) for x in a]

        d: Dict[str, Any] = {"clock": self.clock, "t": [float(x) for x in self.t]}
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
        s.throttle = [[] for _ in range(n)]
        return s

    def __repr__(self) -> str:
        return f"<Series {len(self)} samples, clock={self.clock}>"
