"""Every attribute pytest_jetson uses from tensorrt, pycuda, cuda-python, jetson-stats and pynvml
exists, with a signature its calls fit, in every release the project supports.

The releases' surfaces come from the real libraries: ``surfaces/`` (``generate_surfaces.py``: the
TensorRT bindings wheels, jetson-stats, nvidia-ml-py and pycuda sources), TensorRT 8.2.1 and 8.5.2
from their tagged sources (``tests/fakes/tensorrt_api``), cuda-python from its wheels
(``tests/fakes/cuda_api``). What the code uses is ``used_api.json``, which ``used_api.py`` reads
from the package's source; a test below fails when the two drift apart.
"""

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from tests.conformance import used_api

HERE = Path(__file__).resolve().parent
FAKES = HERE.parent / "fakes"

#: (library, attribute) -> (the releases lacking it, why the code still works there)
EXPECTED_ABSENT: Dict[Tuple[str, str], Tuple[Tuple[str, ...], str]] = {
    ("tensorrt", "MemoryPoolType.WORKSPACE"): (
        ("8.2.1",), "IBuilderConfig.set_memory_pool_limit arrived in 8.4; tensorrt_build._configure sets "
                    "max_workspace_size where hasattr(config, 'set_memory_pool_limit') is false"),
    ("tensorrt", "TensorIOMode.INPUT"): (
        ("8.2.1",), "the tensor-name API arrived in 8.5; tensorrt._discover uses it only when the engine has "
                    "num_io_tensors and the context execute_async_v3 (self._v3), binding indices otherwise"),
    ("tensorrt", "BuilderFlag.FP16"): (
        ("11.1.0.106", "11.4.0.106"), "TensorRT 11 builds strongly typed networks only; set_precision checks "
                                      "hasattr(trt.BuilderFlag, 'FP16') first and says fp16/int8 need TensorRT 10"),
    ("tensorrt", "BuilderFlag.INT8"): (
        ("11.1.0.106", "11.4.0.106"), "as BuilderFlag.FP16: set_precision raises before it is read"),
    ("tensorrt", "NetworkDefinitionCreationFlag.EXPLICIT_BATCH"): (
        ("11.1.0.106", "11.4.0.106"), "explicit batch is the only mode from 10.0 (deprecated there, removed in "
                                      "11); _parse reads the flag only when version_tuple(trt) < (10, 0)"),
    ("pynvml", "nvmlDeviceGetCurrentClocksEventReasons"): (
        ("11.515.75",), "renamed from ...ThrottleReasons in nvidia-ml-py 12.535; telemetry/nvml.py takes "
                        "whichever getattr finds"),
    ("pynvml", "nvmlDeviceGetCurrentClocksThrottleReasons"): (
        (), "the old name, kept by every release checked; telemetry/nvml.py falls back to it with getattr"),
}


def _tensorrt_from_tags(path: Path) -> Dict[str, Any]:
    """These tables hold only the classes the TensorRT fake models: a name under any other class
    is not checked against them (``covers``)."""
    table = json.loads(path.read_text())
    names: Dict[str, Any] = {m: {"kind": "module"} for m in table["module"]}
    for cls, members in table["classes"].items():
        names[cls] = {"kind": "class"}
        names.update({f"{cls}.{m}": {"kind": "member"} for m in members})
    return {"version": table["version"], "names": names, "covers": sorted(table["classes"])}


def _cuda_python(path: Path) -> Dict[str, Any]:
    table = json.loads(path.read_text())
    names: Dict[str, Any] = {}
    for fn, info in table["functions"].items():
        n = len(info["params"])
        names[fn] = {"kind": "function", "min": n, "max": n}
    for enum, values in table["enums"].items():
        names[enum] = {"kind": "enum"}
        names.update({f"{enum}.{v}": {"kind": "value"} for v in values})
    return {"version": table["version"], "names": names}


def surfaces() -> Dict[str, List[Dict[str, Any]]]:
    """library -> each supported release's surface (``version``, ``names``)."""
    out: Dict[str, List[Dict[str, Any]]] = {}
    for path in sorted((HERE / "surfaces").glob("*.json")):
        table = json.loads(path.read_text())
        out.setdefault(table["library"], []).append(table)
    for version in ("8.2.1", "8.5.2"):  # no bindings wheel: read from NVIDIA/TensorRT's tagged sources
        out["tensorrt"].append(_tensorrt_from_tags(FAKES / "tensorrt_api" / f"tensorrt-{version}.json"))
    out["cuda-python"] = [_cuda_python(p) for p in sorted((FAKES / "cuda_api").glob("cuda-*.json"))]
    return out


SURFACES = surfaces()
USED = json.loads(used_api.LIST.read_text())
CASES = [(lib, table["version"]) for lib in sorted(USED) for table in SURFACES[lib]]


def _counts(entry: Dict[str, Any], name: str, use: Dict[str, Any], names: Dict[str, Any]) -> Tuple[List[Any], int]:
    """The parameter counts a call of ``name`` meets, and how many of them are ``self``."""
    constructor = entry.get("kind") == "class" and f"{name}.__init__" in names
    if constructor:
        entry = names[f"{name}.__init__"]
    # pybind signatures count self; the counts read from Python sources do not
    shift = 1 if "signatures" in entry and (use.get("instance") or constructor) else 0
    return entry.get("signatures") or ([entry] if "min" in entry else []), shift


def _fits(entry: Dict[str, Any], name: str, use: Dict[str, Any], names: Dict[str, Any]) -> Optional[str]:
    """Why a call with ``args`` positional arguments does not fit (None: it fits or cannot be told)."""
    args = use["args"]
    if args is None:
        return None
    counts, shift = _counts(entry, name, use, names)
    if not counts or any(c["min"] <= args + shift and (c["max"] is None or args + shift <= c["max"])
                         for c in counts):
        return None
    return f"called with {args} positional argument(s), takes " + " or ".join(
        f"{c['min'] - shift}..{'any' if c['max'] is None else c['max'] - shift}" for c in counts)


def check(library: str, version: str) -> Tuple[int, List[str]]:
    """How many used attributes were checked against this release, and what does not conform."""
    table = next(t for t in SURFACES[library] if t["version"] == version)
    names, covers = table["names"], table.get("covers")
    problems = []
    checked = 0
    for name, use in USED[library].items():
        if name.startswith("__") and name.endswith("__"):
            continue  # module dunders (__version__) every release has
        if covers is not None and name.split(".")[0] not in covers:
            continue
        checked += 1
        problem = _problem(library, version, name, use, names)
        if problem:
            problems.append(problem)
    return checked, problems


def _problem(library: str, version: str, name: str, use: Dict[str, Any], names: Dict[str, Any]) -> Optional[str]:
    where = ", ".join(use["where"])
    entry = names.get(name)
    if entry is None:
        if version in EXPECTED_ABSENT.get((library, name), ((), ""))[0]:
            return None
        guard = "guarded in the code but not listed in EXPECTED_ABSENT" if use["guarded"] else "unguarded"
        return f"{library} {version} has no {name} ({guard}; used in {where})"
    misfit = _fits(entry, name, use, names)
    return f"{library} {version}: {name} {misfit} ({where})" if misfit else None


@pytest.mark.parametrize("library, version", CASES, ids=[f"{lib}-{v}" for lib, v in CASES])
def test_every_used_attribute_exists_in_every_supported_release(library: str, version: str) -> None:
    checked, problems = check(library, version)
    assert checked > 0
    assert not problems, "\n".join(problems)


def test_the_list_is_what_the_code_uses() -> None:
    assert used_api.collect() == USED, "the package's use of these libraries changed: run python tests/conformance/used_api.py"


def test_the_list_covers_each_library_the_package_uses() -> None:
    assert sorted(USED) == ["cuda-python", "jetson-stats", "pycuda", "pynvml", "tensorrt"]
    assert {"Builder", "OnnxParser", "Runtime", "BuilderFlag.FP16"} <= set(USED["tensorrt"])
    assert "cudaGraphInstantiateWithFlags" in USED["cuda-python"]


def test_each_expected_absence_is_real() -> None:
    for (library, name), (lacking, why) in EXPECTED_ABSENT.items():
        assert name in USED[library] and why, f"{library} {name} is no longer used: drop it from EXPECTED_ABSENT"
        for version in lacking:
            names = next(t for t in SURFACES[library] if t["version"] == version)["names"]
            assert name not in names, f"{library} {version} has {name}: drop it from EXPECTED_ABSENT"


def test_a_missing_attribute_or_a_call_that_does_not_fit_is_reported(monkeypatch: Any) -> None:
    used = json.loads(json.dumps(USED))
    used["cuda-python"]["cudaGraphInstantiate"] = {"guarded": False, "args": 2, "where": ["x.py"]}
    used["tensorrt"]["Builder"]["args"] = 2
    used["tensorrt"]["NoSuchThing"] = {"guarded": False, "args": None, "where": ["y.py"]}
    monkeypatch.setitem(globals(), "USED", used)
    _, cuda = check("cuda-python", "11.8.7")
    assert any("cudaGraphInstantiate called with 2" in p for p in cuda)
    _, trt = check("tensorrt", "10.3.0")
    assert any("Builder called with 2" in p for p in trt)
    assert any("has no NoSuchThing (unguarded" in p for p in trt)


def test_a_new_use_in_the_code_makes_the_list_stale(tmp_path: Path, monkeypatch: Any) -> None:
    import shutil

    shutil.copytree(used_api.PACKAGE, tmp_path / "pytest_jetson")
    build = tmp_path / "pytest_jetson" / "engines" / "tensorrt_build.py"
    build.write_text(build.read_text() + "\n\ndef _new(trt):\n    return trt.Refitter(None, None)\n")
    monkeypatch.setattr(used_api, "ROOT", tmp_path)
    monkeypatch.setattr(used_api, "PACKAGE", tmp_path / "pytest_jetson")
    found = used_api.collect()
    assert found != USED
    assert found["tensorrt"]["Refitter"] == {"args": 2, "guarded": False,
                                             "where": ["pytest_jetson/engines/tensorrt_build.py"]}


#: Members of objects TensorRT returns that the per-layer profile uses (``tensorrt_run.Runner.
#: profile_layers``, ``tensorrt_build.inspect_layers`` and ``_configure``): ``used_api.py`` follows
#: no object a method returns, so they are listed here, with the releases that run the code.
#: The profiling pass runs on the name-based API only (8.5 and later); the inspector everywhere.
PROFILE_MEMBERS = {
    "ICudaEngine.create_execution_context": "all", "ICudaEngine.create_engine_inspector": "all",
    "IBuilderConfig.profiling_verbosity": "all", "EngineInspector.execution_context": "all",
    "EngineInspector.get_engine_information": "all", "LayerInformationFormat.JSON": "all",
    "IProfiler.report_layer_time": "all",
    "IExecutionContext.profiler": "v3", "IExecutionContext.enqueue_emits_profile": "v3",
    "IExecutionContext.report_to_profiler": "v3", "IExecutionContext.set_input_shape": "v3",
    "IExecutionContext.set_tensor_address": "v3", "IExecutionContext.execute_async_v3": "v3",
}


@pytest.mark.parametrize("version", [t["version"] for t in SURFACES["tensorrt"]])
def test_the_profiling_pass_uses_only_members_every_release_it_runs_on_has(version: str) -> None:
    names = next(t for t in SURFACES["tensorrt"] if t["version"] == version)["names"]
    v3 = "IExecutionContext.execute_async_v3" in names  # 8.2.1 has the binding-index API only
    missing = [m for m, where in PROFILE_MEMBERS.items() if (where == "all" or v3) and m not in names]
    assert not missing, f"tensorrt {version} lacks {missing}"
    assert v3 or version == "8.2.1"
