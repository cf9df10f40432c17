"""Write cuda-<version>.json, the API table tests/fakes/fake_cudart.py serves, from cuda-python's
real wheels.

    python tests/fakes/cuda_api/generate.py [--wheels DIR]

Downloads (``pip download --no-deps``) the wheel of each line in ``WHEELS`` unless ``--wheels``
already holds it, and reads, without importing anything (importing needs libcuda):

* the Python signature of each function in ``FUNCTIONS`` from the Cython source the wheel ships
  (``cuda/bindings/runtime.pyx``, or ``cuda/cudart.pyx`` before cuda-bindings existed): its
  parameters, and how many values its last ``return (...)`` gives back (cuda-python returns
  ``(err,)`` or ``(err, value)``);
* the values of the enum members in ``ENUMS`` from the C declarations (``.pxd``/``.pxi``);
* which import paths the wheel provides (``cuda.cudart``, ``cuda.bindings.runtime``).

cuda-python 11.8.7 is an empty package depending on cuda-bindings 11.8.7; from 12.6 on cuda-python
is such a meta package too, and the runtime lives in cuda-bindings.
"""

import argparse
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent
#: (version, the PyPI project that holds the runtime bindings for it)
WHEELS = [("11.8.7", "cuda-bindings"), ("12.4.0", "cuda-python"), ("12.9.0", "cuda-bindings"),
          ("13.0.0", "cuda-bindings")]
#: Every cudart function pytest_jetson calls (engines/cuda_graphs.py).
FUNCTIONS = ["cudaStreamBeginCapture", "cudaStreamEndCapture", "cudaGraphInstantiate",
             "cudaGraphInstantiateWithFlags", "cudaGraphLaunch", "cudaGraphDestroy",
             "cudaGraphExecDestroy", "cudaGetLastError", "cudaDriverGetVersion", "cudaRuntimeGetVersion"]
ENUMS = {
    "cudaError_t": ["cudaSuccess", "cudaErrorInvalidValue", "cudaErrorInsufficientDriver",
                    "cudaErrorStreamCaptureUnsupported", "cudaErrorStreamCaptureInvalidated"],
    "cudaStreamCaptureMode": ["cudaStreamCaptureModeGlobal", "cudaStreamCaptureModeThreadLocal",
                              "cudaStreamCaptureModeRelaxed"],
}
MODULES = {"cuda/bindings/runtime.pyx": "cuda.bindings.runtime", "cuda/cudart.pyx": "cuda.cudart"}


def download(project: str, version: str, dest: Path) -> Path:
    found = sorted(dest.glob(f"{project.replace('-', '_')}-{version}-*.whl"))
    if found:
        return found[0]
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.11", "--platform", "manylinux_2_17_x86_64",
                    "--platform", "manylinux_2_28_x86_64", "-d", str(dest), f"{project}=={version}"],
                   check=True)
    return sorted(dest.glob(f"{project.replace('-', '_')}-{version}-*.whl"))[0]


def _split_top(text: str) -> List[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts]


def _param_name(param: str) -> str:
    # "char* pLogBuffer", "mode not None : cudaStreamCaptureMode", "unsigned long long flags"
    head = param.split(":")[0].split("=")[0].replace(" not None", "")
    return re.findall(r"[A-Za-z_]\w*", head)[-1]


def function(source: str, name: str) -> Optional[Dict[str, object]]:
    m = re.search(rf"^def {name}\((.*?)\):\s*$", source, re.M | re.S)
    if m is None:
        return None
    end = re.search(r"^(def |@|class |cdef )", source[m.end():], re.M)
    body = source[m.end(): m.end() + (end.start() if end else len(source))]
    returns = re.findall(r"^\s+return \((.*)\)\s*$", body, re.M)
    params = [_param_name(p) for p in _split_top(m.group(1))]
    return {"params": params, "returns": len(_split_top(returns[-1])) if returns else None,
            "line": source[: m.start()].count("\n") + 1}


def read_wheel(path: Path) -> Dict[str, object]:
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        modules = [mod for pyx, mod in MODULES.items() if pyx in names]
        # cuda/cudart.pyx is a shim re-exporting cuda.bindings.runtime where both exist
        pyx = "cuda/bindings/runtime.pyx" if "cuda/bindings/runtime.pyx" in names else "cuda/cudart.pyx"
        source = z.read(pyx).decode()
        declarations = "\n".join(z.read(n).decode() for n in sorted(names) if n.endswith((".pxd", ".pxi")))
    functions = {}
    for name in FUNCTIONS:
        sig = function(source, name)
        if sig is not None:
            sig["source"] = f"{pyx}:{sig.pop('line')}"
            functions[name] = sig
    enums = {}
    for enum, members in ENUMS.items():
        values = {}
        for member in members:
            m = re.search(rf"^\s+{member} = (\d+)\s*$", declarations, re.M)
            if m:
                values[member] = int(m.group(1))
        enums[enum] = values
    return {"wheel": path.name, "modules": modules, "functions": functions, "enums": enums}


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheels", type=Path, help="a folder holding (or to receive) the wheels")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.wheels or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for version, project in WHEELS:
            table = {"version": version, "project": project, **read_wheel(download(project, version, folder))}
            out = HERE / f"cuda-{version}.json"
            out.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
            print(f"{out.name}: {len(table['functions'])} functions from {table['wheel']}")


if __name__ == "__main__":
    main()
