"""Where a bound applies, and what the session's backend and device can measure: what lets one
suite serve a board, its simulation and the host.

**Limited bounds.** A perf mark's ``devices=`` and ``backends=`` (``gate.bounds``: profile ids and
backend names on ``Bound.devices`` / ``Bound.backends``) limit its bounds. Elsewhere a bound is
not checked: its verdict's reason is ``not_applicable`` (outcome skip: it neither fails nor
passes), and the session does not count it among the comparisons it makes (``gate.family``).
A bound applies where the measurement's fingerprint names one of its devices (the board's
profile id, simulated or real; a host is none) and one of its backends (the backend of the
engine that ran: ``--jetson-backend``'s choice).

**What cannot be measured here** is skipped with the reason (``not_measured``), never an error:

* a metric that telemetry measures, when the run has no Jetson board (the host backend): the
  host's telemetry source ran and reads no such sensor (power on a laptop or a hosted runner);
* a metric the engine reports (``latency_gpu``, ``build_time``, ``latency_first``), when this
  backend's engine reports none (the metric's own hint says which do);
* GPU activity (``sm_active``, ``tensor_active``, ``issue_active``, ``dram_util``) anywhere but
  on the simulated board: on a board only Nsight Systems' GPU metrics sampling counts it, and the
  timed window does not run under nsys (``GPU_METRICS_HERE``; the reason the session found for
  this machine, ``extra["gpu_metrics"]``, when it looked: nsys missing, or without GPU metrics
  on this board).

What should have been measured and was not stays an error (``cannot_check``): telemetry that did
not run (``--jetson-telemetry none``, or a measurement made without it: the suite asks for the
figure and the session turned off what measures it; limit the bound instead), a source that
recorded no samples, a board whose source lacks a sensor the board has (install jtop or
tegrastats), a latency metric with no samples.
"""

from typing import Any, Dict, Optional

from ..metrics import GPU_METRICS_SOURCE, METRICS

#: how a host's device id starts (``devices.host_cpu.Host.id``): a run without a Jetson board
HOST_PREFIX = "host-"
#: Where GPU activity metrics are measured: backend -> None (measured there), or why not.
GPU_METRICS_HERE: Dict[str, Optional[str]] = {
    "simulated": None,
    "tensorrt": ("the timed window does not run under Nsight Systems, the only reader of a Jetson's SM, "
                 "issue and tensor-core counters; --jetson-trace=all records them in the test's nsys report"),
    "onnxruntime": "the host has no Jetson GPU counters to sample",
}


def applies(bound: Any, device: Optional[str], backend: Optional[str]) -> bool:
    """Whether ``bound`` is checked on ``device`` (a profile id or host id) with ``backend``; an
    unknown device or backend (None) does not rule a bound out."""
    devices, backends = getattr(bound, "devices", ()), getattr(bound, "backends", ())
    if devices and device is not None and device not in devices:
        return False
    if backends and backend is not None and backend not in backends:
        return False
    return True


def limits(bound: Any) -> str:
    """'backends tensorrt, simulated', 'devices orin-nano-8gb; backends tensorrt', or ''."""
    parts = [f"{what} {', '.join(names)}" for what, names in
             (("devices", getattr(bound, "devices", ())), ("backends", getattr(bound, "backends", ())))
             if names]
    return "; ".join(parts)


def not_applicable(bound: Any, fingerprint: Optional[Dict[str, Any]]) -> Optional[str]:
    """Why ``bound`` is not checked on the run of ``fingerprint`` (None: it is)."""
    fp = fingerprint or {}
    device, backend = fp.get("device"), fp.get("backend")
    if applies(bound, device, backend):
        return None
    here = []
    if getattr(bound, "devices", ()) and device not in bound.devices:
        here.append(f"device {device}")
    if getattr(bound, "backends", ()) and backend not in bound.backends:
        here.append(f"backend {backend}")
    return f"limited to {limits(bound)} (this run: {', '.join(here)})"


def on_host(fingerprint: Dict[str, Any]) -> bool:
    """Whether the run had no Jetson board: real engines on the host's CPU."""
    return str(fingerprint.get("device") or "").startswith(HOST_PREFIX)


def _sensor(metric: str) -> str:
    """The reading a telemetry metric rests on, named after the first metric of the table that
    reads it: power_peak and energy rest on power."""
    row = METRICS[metric]
    for part in row.parts:
        if part in METRICS and METRICS[part].source.startswith("telemetry"):
            return _sensor(part)
    if row.series:
        return next(name for name, other in METRICS.items() if other.series == row.series)
    return metric


def unmeasurable(metric: str, measurement: Any, fingerprint: Optional[Dict[str, Any]] = None) -> Optional[str]:
    """Why this run's backend or device cannot measure ``metric`` (None: it could, so a missing
    value is a fault to report). ``fingerprint``: the measurement's (default: its environment)."""
    row = METRICS.get(metric)
    if row is None:
        return None
    fp = dict(getattr(measurement, "environment", None) or {})
    fp.update(fingerprint or {})
    backend = fp.get("backend") or getattr(measurement, "backend", "") or "?"
    if row.source == GPU_METRICS_SOURCE:
        return _gpu_metrics(metric, measurement, fp, backend)
    if row.source.startswith("the engine"):
        return f"{metric} not measured by backend {backend}: {row.hint}"
    if not row.source.startswith("telemetry") or not on_host(fp):
        return None
    tele = getattr(measurement, "telemetry", None)
    if tele is None or not getattr(tele, "samples", 0):
        return None  # telemetry off or silent: not the host's doing
    source = getattr(tele, "source", "?")
    return (f"{metric} not measured on backend {backend}: the host has no {_sensor(metric)} sensor "
            f"(telemetry source {source!r} reads none)")


def _gpu_metrics(metric: str, measurement: Any, fp: Dict[str, Any], backend: str) -> Optional[str]:
    """Why GPU activity is not measurable on this run (None on the simulated board, where
    missing telemetry is a fault)."""
    if backend == "simulated" or (backend == "?" and fp.get("simulated") is True):
        return None
    found = (getattr(measurement, "extra", None) or {}).get("gpu_metrics")
    why = found or GPU_METRICS_HERE.get(backend) or (
        "no Jetson GPU counters on this host" if on_host(fp) else f"backend {backend} samples no GPU metrics")
    return f"{metric} not measurable here: {why}"
