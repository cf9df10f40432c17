"""PNG plots (``--jetson-plots DIR``, needs the ``plots`` extra: matplotlib, imported lazily).

* ``<test>.png`` per test: latency per iteration over the run and, where the measurement carries a
  telemetry series (``extra["telemetry_series"]`` or ``telemetry["series"]``, a
  ``Series.to_dict()``), board power, GPU utilisation and clock, and temperatures over time;
* ``comparison.png``: every relative verdict as current / baseline, coloured by outcome, with
  the tolerance marked.
"""

import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from ..errors import ConfigError

_COLOUR = {"pass": "#2e7d32", "fail": "#c62828", "error": "#c62828", "inconclusive": "#f9a825",
           "skip": "#9e9e9e"}


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError(
            "--jetson-plots needs matplotlib: pip install 'pytest-jetson[plots]'"
        ) from None
    return plt


def _slug(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:150]


def _series(m: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    s = (m.get("extra") or {}).get("telemetry_series")
    if s is None:
        s = (m.get("telemetry") or {}).get("series") if isinstance(m.get("telemetry"), dict) else None
    return s if isinstance(s, dict) and s.get("t") else None


def timeline(plt, result: Any, path: Path) -> Path:
    ms = result.measurements
    series = [s for s in (_series(m) for m in ms) if s]
    panels = ["latency"]
    if series:
        s0 = series[0]
        for name in ("board_power_w", "gpu_util", "gpu_clock_mhz"):
            if any(v is not None for v in s0.get(name) or []):
                panels.append(name)
        if s0.get("temps_c"):
            panels.append("temps_c")
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 2.4 * len(panels)), sharex=False, squeeze=False)
    axes = axes[:, 0]
    for m in ms:
        lat = m.get("latencies") or []
        t, acc = [], 0.0
        for x in lat:
            acc += x
            t.append(acc)
        axes[0].plot(t, [x * 1e3 for x in lat], lw=0.6, label=m.get("key", "").split("|")[-1] or m.get("name"))
    axes[0].set_ylabel("latency (ms)")
    axes[0].set_xlabel("time in run (s)")
    if len(ms) > 1:
        axes[0].legend(fontsize="small")
    labels = {"board_power_w": "board power (W)", "gpu_util": "GPU util (%)", "gpu_clock_mhz": "GPU clock (MHz)",
              "temps_c": "temperature (C)"}
    for ax, name in zip(axes[1:], panels[1:]):
        for s in series:
            t0 = s["t"][0]
            t = [x - t0 for x in s["t"]]
            if name == "temps_c":
                for sensor, col in s["temps_c"].items():
                    ax.plot(t, [float("nan") if v is None else v for v in col], lw=0.8, label=sensor)
                ax.legend(fontsize="x-small", ncol=4)
            else:
                ax.plot(t, [float("nan") if v is None else v for v in s[name]], lw=0.8)
        ax.set_ylabel(labels[name])
        ax.set_xlabel("time (s)")
    fig.suptitle(result.nodeid, fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def comparison(plt, results: Sequence[Any], path: Path) -> Optional[Path]:
    rows = [(r, v) for r in results for v in r.verdicts if v.change is not None and v.baseline]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(rows) + 1.5))
    labels = [f"{r.nodeid.split('::')[-1]} {v.metric}" for r, v in rows]
    ratios = [1 + v.change for _, v in rows]
    ax.barh(range(len(rows)), ratios, color=[_COLOUR.get(v.outcome, "#607d8b") for _, v in rows])
    for i, (_, v) in enumerate(rows):
        if v.ci and v.value and v.baseline:
            ax.plot([v.ci[0] / v.baseline, v.ci[1] / v.baseline], [i, i], color="black", lw=1)
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize="small")
    ax.set_xlabel("current / baseline (bars coloured by verdict; line: confidence interval)")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_plots(results: Sequence[Any], directory: Union[str, Path]) -> List[Path]:
    results = [r for r in results if r.measurements]
    if not results:
        return []
    plt = _pyplot()
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = [timeline(plt, r, out / f"{_slug(r.nodeid)}.png") for r in results]
    comp = comparison(plt, results, out / "comparison.png")
    if comp is not None:
        written.append(comp)
    return written
