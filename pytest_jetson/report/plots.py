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

import math
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ..errors import ConfigError

COLOUR = {"pass": "#2e7d32", "fail": "#c62828", "error": "#c62828", "inconclusive": "#f9a825",
          "skip": "#9e9e9e", "recorded": "#1565c0"}
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


def _series(m: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    s = (m.get("extra") or {}).get("telemetry_series")
    if s is None:
        s = (m.get("telemetry") or {}).get("series") if isinstance(m.get("telemetry"), dict) else None
    return s if isinstance(s, dict) and s.get("t") else None


def window_of(m: Dict[str, Any]) -> float:
    """The measured window's length: a pool's shared window, else the measurement's duration."""
    window = (m.get("extra") or {}).get("window")
    return float(window if isinstance(window, (int, float)) and window > 0 else m.get("duration") or 0.0)


def in_window(series: Dict[str, Any], window: float) -> Tuple[List[float], List[int]]:
    """The sample times from the window's start (the series' first sample) and the indices of the
    samples inside the window. The sample taken as the sampler stops, at the window's end, reads
    a board that has already gone idle: samples within half an interval of the end or after it
    are left out."""
    t = [float(x) for x in series["t"]]
    t0 = t[0]
    steps = sorted(b - a for a, b in zip(t, t[1:]) if b > a)
    half = steps[len(steps) // 2] / 2 if steps else 0.0
    end = window - half if window and window > 0 else math.inf
    keep = [i for i, x in enumerate(t) if x - t0 < end]
    return [t[i] - t0 for i in keep], keep


def latency_lines(m: Dict[str, Any]) -> List[Tuple[str, List[float], List[float]]]:
    """(label, end time of each iteration from the window's start, latency in ms) for a single
    measurement, or one per worker of a pool."""
    workers = m.get("workers") or []
    out = []
    for w in workers or [m]:
        lat = [float(x) for x in w.get("latencies") or []]
        start = float((w.get("extra") or {}).get("window_start") or 0.0)
        t, acc = [], start
        for x in lat:
            acc += x
            t.append(acc)
        label = (w.get("name") or f"worker {len(out)}") if workers else ""
        out.append((label, t, [x * 1e3 for x in lat]))
    return out


_PANELS = (("board_power_w", "board power (W)"), ("gpu_util", "GPU util (%)"),
           ("gpu_clock_mhz", "GPU clock (MHz)"), ("cpu_util", "CPU util (%)"),
           ("memory_bytes", "memory (GiB)"), ("temps_c", "temperature (C)"))


def timeline(plt: Any, result: Any, path: Path) -> Path:
    ms = result.measurements
    series = [(m, s) for m, s in ((m, _series(m)) for m in ms) if s]
    panels = []
    for name, label in _PANELS:
        if name == "temps_c":
            if any(s.get("temps_c") for _, s in series):
                panels.append((name, label))
        elif any(any(v is not None for v in s.get(name) or []) for _, s in series):
            panels.append((name, label))
    fig, axes = plt.subplots(1 + len(panels), 1, figsize=(9, 1.9 + 1.7 * len(panels)), sharex=True,
                             squeeze=False)
    axes = axes[:, 0]
    several = len(ms) > 1
    for m in ms:
        tag = (m.get("key", "").split("|", 1)[1] + " ") if "|" in m.get("key", "") else ""
        for label, t, lat in latency_lines(m):
            text = (tag + label).strip() or None
            axes[0].plot(t, lat, lw=0.5, alpha=0.8, label=text)
    axes[0].set_ylabel("latency (ms)")
    handles, labels = axes[0].get_legend_handles_labels()
    if labels and len(labels) <= 16:
        axes[0].legend(fontsize="x-small", ncol=min(4, len(labels)), loc="upper right")
    for ax, (name, label) in zip(axes[1:], panels):
        for m, s in series:
            t, keep = in_window(s, window_of(m))
            prefix = (m.get("key", "").split("|", 1)[1] + ": ") if several and "|" in m.get("key", "") else ""
            if name == "temps_c":
                for sensor, col in sorted(s["temps_c"].items()):
                    ax.plot(t, [_nan(col[i]) for i in keep], lw=0.8, label=prefix + sensor)
                ax.legend(fontsize="x-small", ncol=4, loc="lower right")
            else:
                scale = 1 / 2 ** 30 if name == "memory_bytes" else 1.0
                ax.plot(t, [_nan(s[name][i]) * scale for i in keep], lw=0.8, label=prefix or None)
        ax.set_ylabel(label)
    for ax in axes:
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("time in the measured window (s)")
    axes[0].set_xlim(left=0)
    fig.suptitle(result.nodeid, fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
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
        colour = COLOUR.get(v.outcome, "#607d8b")
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
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def verdict_label(nodeid: str, v: Any) -> str:
    test = nodeid.split("::", 1)[-1]
    tag = f" [{v.measurement.split('|', 1)[1]}]" if "|" in (v.measurement or "") else ""
    return f"{test}{tag} {v.metric} ({v.bound})"


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

