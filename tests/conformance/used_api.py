"""The attributes pytest_jetson uses from tensorrt, pycuda, cuda-python, jetson-stats and pynvml,
read from its source (``python tests/conformance/used_api.py`` rewrites ``used_api.json``).

A name is a handle on a library where it is bound by an import of that library, by a call to a
package function that returns one (``import_tensorrt()``), or is a parameter or ``self.`` attribute
spelled like such a binding (the package passes ``trt``, ``cuda``, ``cudart``, ``nv`` around).
The list names the files using each attribute, not lines, so that editing them elsewhere does
not make it stale. From a handle, the static attribute chain is recorded up to two levels (``trt.BuilderFlag.FP16``),
with the largest number of positional arguments any call passes. A use is ``guarded`` when the
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
from typing import Any, Dict, Optional

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


def _imports(tree: ast.AST) -> Dict[str, str]:
    """Names bound to a library's module anywhere in the tree -> import path."""
    found: Dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    found[alias.asname or alias.name.split(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                path = f"{node.module}.{alias.name}"
                if path in MODULES:
                    found[alias.asname or alias.name] = path
    return found


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


def _is_class(attr: str) -> bool:
    return attr[:1].isupper() or attr in LOWERCASE_CLASSES


def _called(node: Any) -> Optional[str]:
    if isinstance(node, ast.Call):
        f = node.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    return None


class _Collector(ast.NodeVisitor):
    def __init__(self, names: Dict[str, str], returners: Dict[str, str], where: str, out: Dict[str, Any]) -> None:
        self.names = names  # handle spelling -> import path
        self.returners = returners
        self.where = where
        self.out = out
        self.aliases: Dict[str, str] = {}  # local name -> dotted use it stands for
        self.guard_depth = 0
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
        library, inside = MODULES.get(path, (None, ""))
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
        target = node.targets[0]
        first = target.elts[0] if isinstance(target, ast.Tuple) and target.elts else target
        if isinstance(first, ast.Name):
            called = _called(node.value)
            chain = self._chain(node.value)
            if called in self.returners:
                self.names[first.id] = self.returners[called]
            elif chain and "." not in chain.partition(":")[2]:
                self._alias(first.id, chain)
            elif called and isinstance(node.value, ast.Call):
                made = self._chain(node.value.func)
                if made and "." not in made.partition(":")[2] and _is_class(made.partition(":")[2]):
                    self._alias(first.id, made, instance=True)
        self.generic_visit(node)

    def _alias(self, name: str, chain: str, instance: bool = False) -> None:
        """``creation = trt.NetworkDefinitionCreationFlag``: ``creation.X`` is that class's X;
        ``builder = trt.Builder(logger)``: ``builder.X`` is the instance's (``()`` marks these)."""
        path, _, attr = chain.partition(":")
        library, inside = MODULES[path]
        alias = f"{path}.{attr}" + ("()" if instance else "")
        MODULES.setdefault(alias, (library, ".".join(filter(None, [inside, attr]))))
        self.aliases[name] = alias

    def visit_If(self, node: ast.If) -> None:
        guard = any(_called(n) in GUARD_CALLS or getattr(n, "id", getattr(n, "attr", None)) in self.flags
                    for n in ast.walk(node.test))
        self.visit(node.test)
        self.guard_depth += guard
        for child in node.body + node.orelse:
            self.visit(child)
        self.guard_depth -= guard

    def visit_Call(self, node: ast.Call) -> None:
        name = _called(node)
        if name in ("getattr", "hasattr") and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            base = self._chain(node.args[0])
            root = self._root(node.args[0])
            if base or root:
                dotted = (base + "." if base else root + ":") + str(node.args[1].value)
                self._record(dotted, node, guarded=name == "hasattr" or len(node.args) == 3)
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


def collect() -> Dict[str, Any]:
    """library -> attribute -> {"guarded", "args", "where"}, from the package's source."""
    trees = {p: ast.parse(p.read_text(), str(p)) for p in sorted(PACKAGE.rglob("*.py"))}
    returners = _returners(trees)
    spellings: Dict[str, str] = {}
    for tree in trees.values():
        spellings.update(_imports(tree))
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and _called(node.value) in returners:
                target = node.targets[-1]
                if isinstance(target, ast.Tuple) and target.elts:
                    target = target.elts[0]
                if isinstance(target, ast.Name):
                    spellings.setdefault(target.id, returners[_called(node.value)])  # type: ignore[index]
    out: Dict[str, Any] = {}
    for path, tree in trees.items():
        _Collector(dict(spellings), returners, str(path.relative_to(ROOT)), out).visit(tree)
    return {lib: dict(sorted(names.items())) for lib, names in sorted(out.items())}


if __name__ == "__main__":
    LIST.write_text(json.dumps(collect(), indent=1, sort_keys=True) + "\n")
    sys.stdout.write(f"wrote {LIST}\n")
