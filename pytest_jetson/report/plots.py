"""PNG plots (``--jetson-plots DIR``, needs the ``plots`` extra: matplotlib, imported lazily).

* ``<test>.png`` per test: what happened inside the measured window, on one time axis shared by
  every panel (seconds from the window's start): latency of each iteration (one line per pool
  worker, each at its own start in the window) and, where the measurement carries a telemetry
  series, board power, GPU utilisation and clock, CPU, memory and temperatures. Samples at or
  after the window's end (the idle reading taken as the sampler stops) are not drawn;
* ``comparison.png``: every relative bound as the change against its baseline in the one sign
  convention (right is worse), with its confidence interval, and each bound's own tolerance band
  (green up to the tolerance, red beyond), worst first.
"""

import io
import math
import re
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple, Union

from .. import fileio
from ..errors import ConfigError
from ..gate.keys import key_label

#: the most bounds one comparison figure shows (the worst first); the title says how many more
MAX_ROWS = 60


def pyplot(who: str = "--jetson-plots needs") -> Any:
    """matplotlib's pyplot on the file-only backend; a ConfigError naming the extra without it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError(f"{who} matplotlib: pip install 'pytest-jetson[plots]'") from None
    return plt


def slug(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:150]


def telemetry_series(m: Any) -> Any:
    """The telemetry series a measurement kept for its timeline (``telemetry.series.Series``), or
    None. The one place the figures learn where a measurement keeps it."""
    s = getattr(m, "telemetry_series", None)
    return s if s is not None and len(s.t) else None


def window_of(m: Any) -> float:
    """The measured window's length: a pool's shared window, else the measurement's duration."""
    window = (m.extra or {}).get("window")
    return float(window if isinstance(window, (int, float)) and window > 0 else m.duration or 0.0)


def in_window(t: Sequence[float], window: float) -> Tuple[List[float], List[int]]:
    """The sample times ``t`` from the window's start (the first sample) and the indices of the
    samples inside the window. The sample taken as the sampler stops, at the window's end, reads
    a board that has already gone idle: samples within half an interval of the end or after it
    are left out."""
    t = [float(x) for x in t]
    t0 = t[0]
    steps = sorted(b - a for a, b in zip(t, t[1:]) if b > a)
    half = steps[len(steps) // 2] / 2 if steps else 0.0
    end = window - half if window and window > 0 else math.inf
    keep = [i for i, x in enumerate(t) if x - t0 < end]
    return [t[i] - t0 for i in keep], keep


def latency_lines(m: Any) -> List[Tuple[str, List[float], List[float]]]:
    """(label, end time of each iteration from the window's start, latency in ms) for a single
    measurement, or one per worker of a pool."""
    workers = getattr(m, "workers", None) or []
    out = []
    for w in workers or [m]:
        lat = [float(x) for x in w.latencies or []]
        start = float((w.extra or {}).get("window_start") or 0.0)
        t, acc = [], start
        for x in lat:
            acc += x
            t.append(acc)
        label = (w.name or f"worker {len(out)}") if workers else ""
        out.append((label, t, [x * 1e3 for x in lat]))
    return out


def _read(col: Any) -> bool:
    return any(v is not None and v == v for v in col)  # NaN: not read


#: (series column, axis label, scale) of each telemetry panel, top to bottom
_PANELS = (("board_power_w", "board power (W)", 1.0), ("gpu_util", "GPU util (%)", 1.0),
           ("gpu_clock_mhz", "GPU clock (MHz)", 1.0), ("cpu_util", "CPU util (%)", 1.0),
           ("memory_bytes", "memory (GiB)", 1 / 2 ** 30))
_TEMPS = ("temps_c", "temperature (C)", 1.0)


def _panels(series: Sequence[Any]) -> List[Tuple[str, str, float]]:
    """The panels some series has readings for; temperatures last, one line per sensor."""
    out = [p for p in _PANELS if any(_read(getattr(s, p[0])) for s in series)]
    return out + ([_TEMPS] if any(s.temps_c for s in series) else [])


def _tag(key: str) -> str:
    """A measurement's name within its test ('' for a test's only measurement)."""
    return key_label(key)


def _latency_panel(ax: Any, result: Any) -> None:
    for key, m in result.keyed():
        tag = _tag(key) + " " if _tag(key) else ""
        for label, t, lat in latency_lines(m):
            ax.plot(t, lat, lw=0.5, alpha=0.8, label=(tag + label).strip() or None)
    ax.set_ylabel("latency (ms)")
    labels = ax.get_legend_handles_labels()[1]
    if labels and len(labels) <= 16:
        ax.legend(fontsize="x-small", ncol=min(4, len(labels)), loc="upper right")


def _telemetry_panel(ax: Any, panel: Tuple[str, str, float], lines: Sequence[Tuple[str, Any, Any]]) -> None:
    """``lines``: (prefix, measurement, series) of each measurement with a series."""
    name, label, scale = panel
    for prefix, m, s in lines:
        t, keep = in_window(s.t, window_of(m))
        if name == "temps_c":
            for sensor, col in sorted(s.temps_c.items()):
                ax.plot(t, [_nan(col[i]) for i in keep], lw=0.8, label=prefix + sensor)
        else:
            col = getattr(s, name)
            ax.plot(t, [_nan(col[i]) * scale for i in keep], lw=0.8, label=prefix or None)
    if name == "temps_c":
        ax.legend(fontsize="x-small", ncol=4, loc="lower right")
    ax.set_ylabel(label)


def _save(fig: Any, path: Path) -> None:
    """A plot goes through ``fileio.write_atomic``: only to a regular file, never half of one."""
    buf = io.BytesIO()
    fig.savefig(buf, dpi=100, format="png")
    fileio.write_atomic(path, buf.getvalue())


def timeline(plt: Any, result: Any, path: Path) -> Path:
    several = len(result.measurements) > 1
    lines = [((_tag(key) + ": ") if several and _tag(key) else "", m, telemetry_series(m))
             for key, m in result.keyed()]
    lines = [line for line in lines if line[2] is not None]
    panels = _panels([s for _, _, s in lines])
    fig, axes = plt.subplots(1 + len(panels), 1, figsize=(9, 1.9 + 1.7 * len(panels)), sharex=True,
                             squeeze=False)
    axes = axes[:, 0]
    _latency_panel(axes[0], result)
    for ax, panel in zip(axes[1:], panels):
        _telemetry_panel(ax, panel, lines)
    for ax in axes:
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("time in the measured window (s)")
    axes[0].set_xlim(left=0)
    fig.suptitle(result.nodeid, fontsize="small")
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return path


def _nan(v: Any) -> float:
    return float("nan") if v is None else float(v)


def comparison(plt: Any, rows: Sequence[Tuple[str, Any]], path: Path, title: str = "") -> Optional[Path]:
    """``rows``: (label, Verdict) of relative bounds; draws the change of each in percent worse
    with its interval and its tolerance band."""
    rows = [(label, v) for label, v in rows if v.worse is not None and v.tolerance is not None]
    if not rows:
        return None
    rows.sort(key=lambda lv: -(lv[1].worse - lv[1].tolerance))
    hidden = len(rows) - MAX_ROWS
    rows = rows[:MAX_ROWS]
    n = len(rows)
    fig, ax = plt.subplots(figsize=(10, 0.32 * n + 1.8))
    # the axis spans the changes and twice the tolerances; an interval wider than that is cut at
    # the edge (its end is beyond what any decision here needs)
    lo = min([-(v.tolerance or 0) * 100 for _, v in rows] + [v.worse * 100 for _, v in rows])
    hi = max([(v.tolerance or 0) * 200 for _, v in rows] + [v.worse * 100 for _, v in rows])
    left, right = min(lo * 1.15, -1.0), max(hi * 1.1, 1.0)
    for i, (_, v) in enumerate(rows):
        tol = (v.tolerance or 0) * 100
        ax.barh(i, tol - left, left=left, height=0.8, color="#e8f5e9", zorder=0)
        ax.barh(i, right - tol, left=tol, height=0.8, color="#ffebee", zorder=0)
        ax.plot([tol, tol], [i - 0.4, i + 0.4], color="#c62828", lw=0.8, zorder=1)
        colour = v.outcome_row.colour
        if v.worse_ci:
            a, b = (max(left, min(right, x * 100)) for x in v.worse_ci)
            ax.plot([a, b], [i, i], color=colour, lw=2, zorder=2)
        ax.plot([v.worse * 100], [i], "o", color=colour, ms=5, zorder=3)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xlim(left, right)
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_yticks(range(n))
    ax.set_yticklabels([label for label, _ in rows], fontsize="small")
    ax.set_xlabel("change against the baseline, % worse (left of 0: better)\n"
                  "green: within the bound's tolerance, red: past it; line: confidence interval",
                  fontsize="small")
    more = f" (the {n} worst; {hidden} more within their tolerance)" if hidden > 0 else ""
    ax.set_title((title or "current vs baseline") + more, fontsize="small")
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return path


def verdict_label(nodeid: str, v: Any) -> str:
    test = nodeid.split("::", 1)[-1]
    tag = f" [{key_label(v.measurement)}]" if key_label(v.measurement or "") else ""
    stage = f"{v.stage}: " if getattr(v, "stage", None) is not None else ""
    return f"{test}{tag} {stage}{v.metric} ({v.bound})"


def write_plots(results: Sequence[Any], directory: Union[str, Path]) -> List[Path]:
    results = [r for r in results if r.measurements]
    if not results:
        return []
    plt = pyplot()
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = [timeline(plt, r, out / f"{slug(r.nodeid)}.png") for r in results]
    rows = [(verdict_label(r.nodeid, v), v) for r in results for v in r.verdicts
            if v.kind == "relative" and v.baseline is not None]
    comp = comparison(plt, rows, out / "comparison.png")
    if comp is not None:
        written.append(comp)
    return written

