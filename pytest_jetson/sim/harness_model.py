"""What measures the engine: the harness around TensorRT, separated from the board.

The same engine on the same board reads differently under trtexec's "GPU Compute Time", trtexec's
host latency (with input/output copies), a CUDA-graph replay, a zero-copy application or this
plugin's own timed loop. Published figures come from all of these; a harness says which parts of
an inference it pays for:

* ``copies``: inputs and outputs cross between host and device buffers on every inference (on a
  Jetson both live in the same DRAM, so a copy costs DRAM traffic, not a PCIe transfer);
* ``graphs``: the engine is replayed as a CUDA graph: one launch per inference instead of one
  enqueue per kernel;
* ``sync``: every call waits for the GPU before the next is enqueued (host work and GPU work of
  one inference do not overlap with the next);
* ``gpu_only``: the figure is the GPU's time alone (trtexec's "GPU Compute Time").
* ``framework_us``: host time per inference the harness adds itself (a Python call, a framework's
  bookkeeping), microseconds on a Cortex-A78AE core at 1.5 GHz; the calibration fits each
  published source's own value of it.
* ``tf32``: whether "fp32" engines the harness builds run TF32 on Ampere and later (TensorRT's
  default, which trtexec and most applications keep; this plugin's TensorRT backend clears it).
"""

import difflib
import textwrap
from dataclasses import dataclass
from typing import Dict, Optional

from ..errors import ConfigError


@dataclass(frozen=True)
class Harness:
    name: str
    description: str
    copies: bool
    graphs: bool
    sync: bool
    gpu_only: bool = False
    framework_us: float = 0.0
    tf32: bool = True


HARNESSES: Dict[str, Harness] = {h.name: h for h in (
    Harness("plugin", "this plugin's timed loop on a board, as the tensorrt backend runs by default: "
                      "device buffers filled once (no copies), a CUDA-graph replay, two inferences in "
                      "flight, from Python", copies=False, graphs=True, sync=False,
            framework_us=60.0, tf32=False),
    Harness("trtexec", "trtexec's host latency and throughput: copies in and out on their own streams, "
                       "two inferences in flight, no CUDA graph", copies=True, graphs=False, sync=False),
    Harness("trtexec-gpu", "trtexec's GPU Compute Time: the engine's kernels alone", copies=False,
            graphs=False, sync=False, gpu_only=True),
    Harness("graphs", "a CUDA-graph replay on device-resident buffers (trtexec --useCudaGraph "
                      "--noDataTransfers, MLPerf's harness)", copies=False, graphs=True, sync=False),
    Harness("zero-copy", "an application on mapped or device-resident buffers: no copies, one enqueue and "
                         "one synchronize per inference (jetson-inference)", copies=False, graphs=False,
            sync=True),
    Harness("deepstream", "a DeepStream pipeline (nvinfer): zero-copy buffers, each batch's inference "
                          "awaited before it moves on", copies=False, graphs=False, sync=True,
            framework_us=150.0),
    Harness("python", "a Python loop enqueuing the engine on GPU tensors without waiting (torch2trt's "
                      "throughput benchmark)", copies=False, graphs=False, sync=False, framework_us=120.0),
    Harness("python-sync", "a Python application on GPU tensors, waiting for every inference (Ultralytics' "
                           "execute_v2, torch2trt's latency benchmark)", copies=False, graphs=False, sync=True,
            framework_us=120.0),
)}

DEFAULT = "plugin"

_ALIASES = {"trtexec-host": "trtexec", "host": "trtexec", "gpu": "trtexec-gpu", "gpu-compute": "trtexec-gpu",
            "cuda-graphs": "graphs", "cudagraph": "graphs", "cuda-graph": "graphs", "zerocopy": "zero-copy",
            "application": "zero-copy", "app": "zero-copy", "board": "plugin", "torch2trt": "python",
            "ultralytics": "python-sync", "nvinfer": "deepstream"}


def get(name: Optional[str]) -> Harness:
    """A harness by name (None: the plugin's own loop); an unknown name lists the known ones."""
    if name is None:
        return HARNESSES[DEFAULT]
    if isinstance(name, Harness):
        return name
    key = str(name).strip().lower().replace("_", "-").replace(" ", "-")
    key = _ALIASES.get(key, key)
    if key not in HARNESSES:
        close = difflib.get_close_matches(key, list(HARNESSES) + list(_ALIASES), n=1, cutoff=0.6)
        hint = f" (did you mean {_ALIASES.get(close[0], close[0])!r}?)" if close else ""
        listing = "\n".join(textwrap.fill(h.description, 100, initial_indent=f"  {h.name:<12} ",
                                           subsequent_indent=" " * 15, break_on_hyphens=False)
                             for h in HARNESSES.values())
        raise ConfigError(f"harness {name!r} is unknown{hint}; choose one of:\n{listing}")
    return HARNESSES[key]


def names():
    return list(HARNESSES)
