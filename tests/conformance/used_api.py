"""The attributes pytest_jetson uses from tensorrt, pycuda, cuda-python, jetson-stats and pynvml,
read from its source (``python tests/conformance/used_api.py`` rewrites ``used_api.json``).

A name is a handle on a library where it is bound by an import of that library, by a call to a
package function that returns one (``import_tensorrt()``), or is a parameter or ``self.`` attribute
spelled like such a binding (the package passes ``trt``, ``cuda``, ``cudart``, ``nv`` around).
The list names the files using each attribute, not lines, so that editing them elsewhere does
not make it stale. From a handle, the static attribute chain is recorded up to two levels (``trt.BuilderFlag.FP16``),
with the largest number of positional arguments any call passes (also through a package helper
that calls its first argument with the rest, ``self._try(nv.nvmlDeviceGetName, handle)``). A use is ``guarded`` when the
code survives its absence: ``getattr(x, "name", default)``, ``hasattr``, or inside an ``if`` that
tests ``hasattr``/``getattr``/the TensorRT version, or a flag set from such a test
(``self._v3``). An instance made in the same function
(``builder = trt.Builder(logger)``) is followed (``Builder.create_network``, marked ``instance``);
objects that methods return (an engine's ``get_tensor_name``) are not.
"""

import ast
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_jetson"
LIST = Path(__file__).with_name("used_api.json")

#: import path -> (library, the object inside it the handle is)
MODULES = {
    "tensorrt": ("tensorrt", ""),
    "pycuda.driver": ("pycuda", ""),
    "cuda.bindings.runtime": ("cuda-python", ""),
    "cuda.cudart": ("cuda-python", ""),
    "jtop": ("jetson-stats", ""),
    "jtop.service": ("jetson-stats", "service"),
    "pynvml": ("pynvml", ""),
}
GUARD_CALLS = {"hasattr", "getattr", "version_tuple"}
#: classes whose instances are followed though not capitalised (jetson-stats' client)
LOWERCASE_CLASSES = {"jtop"}


def _bound(node: Any) -> List[Tuple[str, str]]:
    """(name bound, module path) for each module an import statement binds by its full path
    (``import pycuda.driver as cuda``, ``from cuda.bindings import runtime as cudart``)."""
    if isinstance(node, ast.Import):
        return [(a.asname or a.name, a.name) for a in node.names if a.asname or "." not in a.name]
    if isinstance(node, ast.ImportFrom) and node.module:
        return [(a.asname or a.name, f"{node.module}.{a.name}") for a in node.names]
    return []


def _imports(tree: ast.AST) -> Dict[str, str]:
    """Names bound to a library's module anywhere in the tree -> import path."""
    return {name: path for node in ast.walk(tree) for name, path in _bound(node) if path in MODULES}


def _returners(trees: Dict[Path, ast.AST]) -> Dict[str, str]:
    """Package functions that return an imported library (first element of a returned tuple)."""
    out: Dict[str, str] = {}
    for tree in trees.values():
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            bound = _imports(fn)
            for ret in ast.walk(fn):
                value = getattr(ret, "value", None) if isinstance(ret, ast.Return) else None
                if isinstance(value, ast.Tuple) and value.elts:
                    value = value.elts[0]
                if isinstance(value, ast.Name) and value.id in bound:
                    out[fn.name] = bound[value.id]
    return out


def _first_name(target: Any) -> Optional[str]:
    """``x`` of ``x = ...`` or ``x, why = ...``."""
    if isinstance(target, ast.Tuple) and target.elts:
        target = target.elts[0]
    return target.id if isinstance(target, ast.Name) else None


def _is_class(attr: str) -> bool:
    return attr[:1].isupper() or attr in LOWERCASE_CLASSES


def _forwarders(trees: Dict[Path, ast.AST]) -> Set[str]:
    """Package functions that call their first parameter with the rest (``_try(fn, *args)``): a call
    ``_try(nv.nvmlDeviceGetName, handle)`` calls ``nvmlDeviceGetName(handle)``."""
    out: Set[str] = set()
    for tree in trees.values():
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef) or fn.args.vararg is None:
                continue
            params = [a.arg for a in fn.args.args if a.arg != "self"]
            if params and any(_called(c) == params[0] for c in ast.walk(fn)):
                out.add(fn.name)
    return out


def _called(node: Any) -> Optional[str]:
    if isinstance(node, ast.Call):
        f = node.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    return None


class _Collector(ast.NodeVisitor):
    forwarders: Set[str] = set()

    def __init__(self, names: Dict[str, str], returners: Dict[str, str], where: str, out: Dict[str, Any]) -> None:
        self.names = names  # handle spelling -> import path
        self.returners = returners
        self.where = where
        self.out = out
        self.aliases: Dict[str, str] = {}  # local name -> dotted use it stands for
        self.guard_depth = 0
        self.modules = dict(MODULES)  # with the aliases met so far
        self.flags = set()  # names and self attributes that hold a feature test's answer

    def visit_Module(self, node: ast.Module) -> None:
        for assign in ast.walk(node):
            if isinstance(assign, ast.Assign) and any(_called(n) in GUARD_CALLS for n in ast.walk(assign.value)):
                for target in assign.targets:
                    self.flags.add(getattr(target, "id", None) or getattr(target, "attr", None))
        self.generic_visit(node)

    def _root(self, node: Any) -> Optional[str]:
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            return self.names.get(node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return self.names.get(node.attr) or self.names.get(node.attr.lstrip("_"))
        return None

    def _chain(self, node: Any) -> Optional[str]:
        """``import.path:attr.attr`` for an attribute chain on a handle."""
        parts = []
        while isinstance(node, ast.Attribute):
            root = self._root(node)
            if root is not None:
                break
            parts.append(node.attr)
            node = node.value
        root = self._root(node)
        if root is None or not parts:
            return None
        return root + ":" + ".".join(reversed(parts))

    def _record(self, dotted: str, node: Any, guarded: bool, nargs: Optional[int] = None) -> None:
        path, _, attrs = dotted.partition(":")
        library, inside = self.modules.get(path, (None, ""))
        if library is None:  # an alias of a chain: "tensorrt:NetworkDefinitionCreationFlag"
            return
        parts = ([inside] if inside else []) + attrs.split(".")
        name = ".".join(parts[:3])
        entry = self.out.setdefault(library, {}).setdefault(name, {"guarded": True, "where": [], "args": None})
        entry["guarded"] = entry["guarded"] and guarded
        if path.endswith("()") and name != parts[0]:
            entry["instance"] = True  # its calls pass self implicitly
        if self.where not in entry["where"]:
            entry["where"].append(self.where)
        if nargs is not None:
            entry["args"] = max(entry["args"] or 0, nargs)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        saved = dict(self.aliases)
        self.generic_visit(node)
        self.aliases = saved

    def visit_Assign(self, node: ast.Assign) -> None:
        first = _first_name(node.targets[0])
        if first is not None:
            self._bind(first, node.value)
        self.generic_visit(node)

    def _bind(self, name: str, value: Any) -> None:
        called = _called(value)
        chain = self._chain(value)
        if called in self.returners:
            self.names[name] = self.returners[called]
        elif chain and "." not in chain.partition(":")[2]:
            self._alias(name, chain)
        elif called:
            made = self._chain(value.func)
            if made and "." not in made.partition(":")[2] and _is_class(made.partition(":")[2]):
                self._alias(name, made, instance=True)

    def _alias(self, name: str, chain: str, instance: bool = False) -> None:
        """``creation = trt.NetworkDefinitionCreationFlag``: ``creation.X`` is that class's X;
        ``builder = trt.Builder(logger)``: ``builder.X`` is the instance's (``()`` marks these)."""
        path, _, attr = chain.partition(":")
        library, inside = self.modules[path]
        alias = f"{path}.{attr}" + ("()" if instance else "")
        self.modules.setdefault(alias, (library, ".".join(filter(None, [inside, attr]))))
        self.aliases[name] = alias

    def visit_If(self, node: ast.If) -> None:
        guard = any(_called(n) in GUARD_CALLS or getattr(n, "id", getattr(n, "attr", None)) in self.flags
                    for n in ast.walk(node.test))
        self.visit(node.test)
        self.guard_depth += guard
        for child in node.body + node.orelse:
            self.visit(child)
        self.guard_depth -= guard

    def _feature_test(self, node: ast.Call) -> None:
        """``getattr(trt, "X", None)`` and ``hasattr(trt, "X")`` use X, guarded."""
        name = _called(node)
        if name in ("getattr", "hasattr") and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            base = self._chain(node.args[0])
            root = self._root(node.args[0])
            if base or root:
                dotted = (base + "." if base else root + ":") + str(node.args[1].value)
                self._record(dotted, node, guarded=name == "hasattr" or len(node.args) == 3)

    def visit_Call(self, node: ast.Call) -> None:
        self._feature_test(node)
        target = self._chain(node.args[0]) if _called(node) in self.forwarders and node.args else None
        if target:
            self._record(target, node, self.guard_depth > 0, nargs=len(node.args) - 1)
        chain = self._chain(node.func)
        if chain:
            self._record(chain, node, self.guard_depth > 0, nargs=len(node.args))
            for arg in node.args + [k.value for k in node.keywords]:
                self.visit(arg)
            return
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain = self._chain(node)
        if chain:
            self._record(chain, node, self.guard_depth > 0)
            return
        self.generic_visit(node)


def _spellings(trees: Dict[Path, ast.AST], returners: Dict[str, str]) -> Dict[str, str]:
    """The names the package gives these libraries' modules anywhere (``trt``, ``cudart``, ``nv``)."""
    spellings: Dict[str, str] = {}
    for tree in trees.values():
        spellings.update(_imports(tree))
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and _called(node.value) in returners:
                first = _first_name(node.targets[-1])
                if first is not None:
                    spellings.setdefault(first, returners[_called(node.value)])  # type: ignore[index]
    return spellings


def collect() -> Dict[str, Any]:
    """library -> attribute -> {"guarded", "args", "where"}, from the package's source."""
    trees = {p: ast.parse(p.read_text(), str(p)) for p in sorted(PACKAGE.rglob("*.py"))}
    returners = _returners(trees)
    spellings = _spellings(trees, returners)
    _Collector.forwarders = _forwarders(trees)
    out: Dict[str, Any] = {}
    for path, tree in trees.items():
        _Collector(dict(spellings), returners, str(path.relative_to(ROOT)), out).visit(tree)
    return {lib: dict(sorted(names.items())) for lib, names in sorted(out.items())}


if __name__ == "__main__":
    LIST.write_text(json.dumps(collect(), indent=1, sort_keys=True) + "\n")
    sys.stdout.write(f"wrote {LIST}\n")
