"""Writes the API surfaces of jetson-stats, nvidia-ml-py (pynvml) and pycuda that the conformance
test reads, from each release's own source (nothing is imported or built):

    python tests/conformance/generate_surfaces.py --jetson-stats 4.3.2=DIR ... \
        --pynvml 12.535.161=pynvml.py ... --pycuda 2022.1=CHECKOUT ...

jetson-stats: ``DIR`` is the unpacked sdist or installed package's parent (``DIR/jtop/``);
``jtop/__init__.py``'s names, ``jtop.jtop``'s methods and properties, ``jtop/service.py``'s
top-level names. pynvml: ``pynvml.py`` of the nvidia-ml-py wheel; its top-level functions and
constants. pycuda: a checkout at the release tag; the names ``src/wrapper/wrap_cudadrv.cpp``
registers on ``pycuda._driver`` (``py::def``, ``DEF_SIMPLE_FUNCTION``, classes, enums and their
values) plus ``pycuda/driver.py``'s own functions. tensorrt: ``--tensorrt 10.3.0=trt-10.3.0.json``,
a dump made by ``dump_surface.py`` from the real bindings wheel, compacted to names and parameter
counts. Each output file records where it came from.
"""

import argparse
import ast
import json
import re
from pathlib import Path
from typing import Any, Dict

HERE = Path(__file__).resolve().parent / "surfaces"


def _params(fn: Any, drop_self: bool) -> Dict[str, Any]:
    args = fn.args
    positional = list(args.posonlyargs) + list(args.args)
    if drop_self and positional:
        positional = positional[1:]
    required = len(positional) - len(args.defaults)
    return {"kind": "function", "min": required, "max": None if args.vararg else len(positional)}


def _top_level(tree: ast.Module) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = _params(node, drop_self=False)
        elif isinstance(node, ast.ClassDef):
            out[node.name] = {"kind": "class"}
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = {"kind": "value"}
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                out[alias.asname or alias.name] = {"kind": "imported", "from": node.module}
    return out


def _class_members(tree: ast.Module, name: str) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    prop = any(getattr(d, "id", getattr(d, "attr", "")) in ("property", "setter")
                               for d in item.decorator_list)
                    out[item.name] = {"kind": "property"} if prop else _params(item, drop_self=True)
    return out


def jetson_stats(version: str, root: Path) -> Dict[str, Any]:
    pkg = root / "jtop"
    names = _top_level(ast.parse((pkg / "__init__.py").read_text()))
    client = _class_members(ast.parse((pkg / "jtop.py").read_text()), "jtop")
    if "__init__" in client:
        names["jtop"] = dict(client["__init__"], kind="class")
    names.update({f"jtop.{k}": v for k, v in client.items()})
    names.update({f"service.{k}": v for k, v in _top_level(ast.parse((pkg / "service.py").read_text())).items()})
    return {"library": "jetson-stats", "version": version, "names": names,
            "source": f"jetson-stats {version}: jtop/__init__.py, jtop/jtop.py (class jtop), jtop/service.py"}


def pynvml(version: str, path: Path) -> Dict[str, Any]:
    names = _top_level(ast.parse(path.read_text()))
    return {"library": "pynvml", "version": version, "names": names,
            "source": f"nvidia-ml-py {version} wheel (PyPI): pynvml.py, top-level functions and constants"}


_CPP = re.compile(r'py::def\("(\w+)"|DEF_SIMPLE_FUNCTION(?:_WITH_ARGS)?\((\w+)'
                  r'|py::(class_|enum_)<[^;{]*?>\s*(?:\w+\s*)?\(\s*"(\w+)"'
                  r'|\.(?:value|attr|def|add_property|def_readonly|def_readwrite)\("(\w+)"'
                  r'|DEF_SIMPLE_METHOD(?:_WITH_ARGS)?\((\w+)|DEF_SIMPLE_RO_MEMBER\((\w+)', re.S)


def _driver_module(source: str) -> Dict[str, Any]:
    """What wrap_cudadrv.cpp registers: functions, classes and enums, and each one's members."""
    names: Dict[str, Any] = {}
    current = None
    for m in _CPP.finditer(source):
        func, simple, what, cls, member, method, ro = m.groups()
        if func or simple:
            names[func or simple] = {"kind": "function"}
            current = None
        elif cls:
            current = cls
            names[cls] = {"kind": "enum" if what == "enum_" else "class"}
        elif current and (member or method or ro):
            names[f"{current}.{member or method or ro}"] = {"kind": "member"}
    return names


def pycuda(version: str, checkout: Path) -> Dict[str, Any]:
    names = _driver_module((checkout / "src/wrapper/wrap_cudadrv.cpp").read_text())
    for name, entry in _top_level(ast.parse((checkout / "pycuda/driver.py").read_text())).items():
        if entry["kind"] != "imported":
            names.setdefault(name, entry)
    return {"library": "pycuda", "version": version, "names": names,
            "source": f"inducer/pycuda tag v{version}: src/wrapper/wrap_cudadrv.cpp (the _driver module's "
                      "py::def/DEF_SIMPLE_FUNCTION, classes, enums and members) and pycuda/driver.py"}


def _sig_params(sig: str) -> Dict[str, Any]:
    """Parameter counts of one pybind signature, ``self`` included (as ``X.__init__(self)`` passes it)."""
    inner = sig[sig.index("(") + 1:sig.rindex(")")] if "(" in sig else ""
    depth, parts, cur = 0, [], ""
    for ch in inner:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts = [p.strip() for p in parts + [cur] if p.strip()]
    if any(p.startswith("*") for p in parts):
        return {"min": 0, "max": None}
    return {"min": sum("=" not in p for p in parts), "max": len(parts)}


def tensorrt(version: str, path: Path) -> Dict[str, Any]:
    """Compacts a dump of ../shared/tensorrt_surface (every class, member and pybind signature)."""
    dump = json.loads(path.read_text())
    names: Dict[str, Any] = {m: {"kind": "module"} for m in dump["module"]}
    for cls, members in dump["classes"].items():
        names[cls] = {"kind": "class"}
        for member, info in members.items():
            entry: Dict[str, Any] = {"kind": info.get("kind", "value")}
            sigs = [_sig_params(sig) for sig in info.get("sig") or []]
            if sigs:
                entry["signatures"] = sigs
            names[f"{cls}.{member}"] = entry
    return {"library": "tensorrt", "version": version, "names": names,
            "source": f"{path.name}: the tensorrt bindings wheel {dump.get('version', version)} read by "
                      "dump_surface.py against stub libraries (issue 27's tensorrt_surface)"}


def dumps(table: Dict[str, Any]) -> str:
    """One name a line: small diffs when a release is added or regenerated."""
    head = {k: v for k, v in table.items() if k != "names"}
    lines = [f" {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(table["names"].items())]
    return json.dumps(head, sort_keys=True)[:-1] + ', "names": {\n' + ",\n".join(lines) + "\n}}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for lib in ("jetson-stats", "pynvml", "pycuda", "tensorrt"):
        parser.add_argument(f"--{lib}", action="append", default=[], metavar="VERSION=PATH")
    args = parser.parse_args()
    HERE.mkdir(exist_ok=True)
    for lib, make in (("jetson_stats", jetson_stats), ("pynvml", pynvml), ("pycuda", pycuda),
                      ("tensorrt", tensorrt)):
        for spec in getattr(args, lib):
            version, _, path = spec.partition("=")
            table = make(version, Path(path))
            out = HERE / f"{table['library']}-{version}.json"
            out.write_text(dumps(table))
            print(f"{out.name}: {len(table['names'])} names")


if __name__ == "__main__":
    main()
