"""A per-layer profile as the two files NVIDIA's engine explorer (TREx, trt-engine-explorer) reads:

* the engine graph, in the TensorRT inspector's JSON (``trtexec --exportLayerInfo``):
  ``{"Layers": [{"Name", "LayerType", "Inputs", "Outputs", "TacticName"...}], "Bindings": [...]}``,
  each activation ``{"Name", "Dimensions", "Format/Datatype"}`` with a format string TREx knows;
* the profile, in ``trtexec --exportProfile``'s JSON: ``[{"count": N}, {"name", "timeMs",
  "averageMs", "medianMs", "percentage"}, ...]``, one row per graph layer, in the same order
  (TREx joins the two by position when their lengths agree).

A TensorRT profile's layers carry the inspector's own type, format and tactic into the graph. A
profile (from any backend) knows its layers' order, sizes and precisions but not
the tensors between them: the graph it writes is a chain (each layer reads the one before it),
which TREx draws and tabulates, but is not the engine's true topology.
"""

import json
from pathlib import Path
from typing import Any, Dict, List

from .. import fileio
from ..engines.layer_profile import LayerProfile

#: our precisions as the inspector writes a linear tensor's format (TREx's region format table)
FORMATS = {"fp32": "Row major linear FP32", "tf32": "Row major linear FP32",
           "fp16": "Row major linear FP16 format", "bf16": "Row major linear BFloat16 format",
           "int8": "Row major Int8 format", "fp8": "Row major linear FP8 format"}
INPUT = "input"


def _tensor(name: str, batch: int, size: Any, precision: str, fmt: Any = None) -> Dict[str, Any]:
    """``fmt``: the format TensorRT's inspector gave the layer's output, where it did."""
    return {"Name": name, "Dimensions": [int(batch), int(size or 1)],
            "Format/Datatype": fmt or FORMATS.get(precision, "Row major linear FP32")}


def graph(profile: LayerProfile, batch: int = 1) -> Dict[str, Any]:
    """The inspector-format graph of ``profile``'s layers (a chain, see the module's note)."""
    layers: List[Dict[str, Any]] = []
    prev = _tensor(INPUT, batch, profile.layers[0].size if profile.layers else 1, "fp32")
    for x in profile.layers:
        out = _tensor(f"{x.name} output", batch, x.size, x.precision, x.format)
        layer = {"Name": x.name, "LayerType": x.type, "Inputs": [prev], "Outputs": [out],
                 "TacticName": x.tactic or (x.kernel or ""), "Metadata": f"bound: {x.bound}" if x.bound else ""}
        layers.append(layer)
        prev = out
    return {"Layers": layers, "Bindings": [INPUT, prev["Name"]]}


def profile_rows(profile: LayerProfile) -> List[Dict[str, Any]]:
    """``trtexec --exportProfile``'s rows: a count, then per layer its total, mean and median time
    (ms; a mean stands in for the median) and its percentage of the whole."""
    count = max(1, profile.runs)
    total = profile.total or 1.0
    rows: List[Dict[str, Any]] = [{"count": count}]
    for x in profile.layers:
        ms = x.time * 1e3
        rows.append({"name": x.name, "timeMs": ms * count, "averageMs": ms, "medianMs": ms,
                     "percentage": 100.0 * x.time / total})
    return rows


def write(directory: Path, stem: str, profile: LayerProfile, batch: int = 1) -> List[Path]:
    """``<stem>.graph.json`` and ``<stem>.profile.json`` in ``directory``; the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for suffix, data in (("graph", graph(profile, batch)), ("profile", profile_rows(profile))):
        path = directory / f"{stem}.{suffix}.json"
        fileio.write_atomic(path, json.dumps(data, indent=1) + "\n")
        paths.append(path)
    return paths

