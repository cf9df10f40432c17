"""The package's import graph, read from the source (every import statement, those inside
functions too), for tests/test_layering.py and for a look by hand::

    python tests/layering.py            # edges, cycles, function-level imports
"""

import ast
import sys
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Optional, Set

ROOT = Path(__file__).resolve().parents[1] / "pytest_jetson"


class Import(NamedTuple):
    path: str  # relative to the repository, e.g. pytest_jetson/devices/resolve.py
    line: int
    module: str  # the absolute module imported, e.g. pytest_jetson.settings or numpy
    in_function: bool


def _module_name(path: Path) -> List[str]:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return parts


def _absolute(node: ast.ImportFrom, here: List[str], is_package: bool) -> List[str]:
    """The modules an ``ImportFrom`` names, absolute (``from . import a, b`` names two)."""
    if not node.level:
        return [node.module or ""]
    package = here if is_package else here[:-1]
    base = package[:len(package) - (node.level - 1)]
    if node.module:
        return [".".join(base + node.module.split("."))]
    # `from . import x`: x is a module of the package, or a name the package defines
    return [".".join(base + [a.name]) if _exists(base + [a.name]) else ".".join(base) for a in node.names]


def _exists(module: List[str]) -> bool:
    path = ROOT.parent.joinpath(*module)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports(root: Path = ROOT) -> Iterator[Import]:
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        here = _module_name(path)
        is_package = path.name == "__init__.py"
        rel = str(path.relative_to(root.parent))
        yield from _walk(tree, here, is_package, rel, False)


def _walk(node: ast.AST, here: List[str], is_package: bool, rel: str, in_function: bool) -> Iterator[Import]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import):
            for alias in child.names:
                yield Import(rel, child.lineno, alias.name, in_function)
        elif isinstance(child, ast.ImportFrom):
            for name in _absolute(child, here, is_package):
                yield Import(rel, child.lineno, name, in_function)
        inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield from _walk(child, here, is_package, rel, inner)


def unit(path_or_module: str) -> Optional[str]:
    """The layer a module belongs to: the sub-package (``devices``) or top-level module
    (``settings``) of pytest_jetson; None outside the package."""
    if path_or_module.endswith(".py"):
        parts = Path(path_or_module).with_suffix("").parts
    else:
        parts = tuple(path_or_module.split("."))
    if not parts or parts[0] != "pytest_jetson" or len(parts) < 2:
        return None
    return parts[1]


def graph(found: Optional[List[Import]] = None) -> Dict[str, Set[str]]:
    """Edges between layers: ``devices -> settings`` when a module of devices imports settings."""
    edges: Dict[str, Set[str]] = {}
    for imp in found if found is not None else imports():
        a, b = unit(imp.path), unit(imp.module)
        if a and b and a != b and a != "__init__":
            edges.setdefault(a, set()).add(b)
    return edges


def cycles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one layer (Tarjan), each sorted."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    found: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return sorted(found)


def main() -> int:
    found = list(imports())
    edges = graph(found)
    for a in sorted(edges):
        print(f"{a} -> {', '.join(sorted(edges[a]))}")
    print("cycles:", cycles(edges) or "none")
    inner = [i for i in found if i.in_function]
    print(f"function-level imports: {len(inner)} "
          f"({len({(i.path, i.line) for i in inner})} statements)")
    for i in inner:
        print(f"  {i.path}:{i.line} {i.module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
