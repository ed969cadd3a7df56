"""The import graph of ``telcoenv/``, read from the source with ``ast``: the core names no
domain, and no modules import each other in a cycle.

An edge is an ``import`` or ``from ... import`` of a telcoenv module (``from package import
module`` is an edge to the module). The implicit import of a module's parent packages is not
an edge: every submodule of a package whose ``__init__`` imports it would be a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "telcoenv"
DOMAINS = "telcoenv.domains"


@dataclass(frozen=True)
class Edge:
    target: str
    line: int
    module_level: bool  # runs when the module is imported (not in a function, not typing-only)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(nodes: Iterable[ast.AST], module_level: bool = True) -> list[tuple[ast.AST, bool]]:
    """Every import statement in or under ``nodes``, with whether it runs at import time."""
    found: list[tuple[ast.AST, bool]] = []
    for node in nodes:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append((node, module_level))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            found += _imports(ast.iter_child_nodes(node), module_level=False)
        elif isinstance(node, ast.If) and _is_type_checking(node):
            found += _imports(node.body, False) + _imports(node.orelse, module_level)
        else:  # class bodies, try/if blocks at module level run at import time
            found += _imports(ast.iter_child_nodes(node), module_level)
    return found


def _base(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    anchor = parts if is_package else parts[:-1]
    anchor = anchor[: len(anchor) - (node.level - 1)]
    return ".".join([*anchor, *([node.module] if node.module else [])])


def _edges(module: str, path: Path, modules: dict[str, Path]) -> list[Edge]:
    edges = []
    is_package = path.name == "__init__.py"
    for node, module_level in _imports(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            assert isinstance(node, ast.ImportFrom)
            base = _base(node, module, is_package)
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        edges += [
            Edge(target, node.lineno, module_level)
            for target in dict.fromkeys(targets)
            if target.split(".")[0] == "telcoenv" and target != module
        ]
    return edges


def _graph() -> dict[str, list[Edge]]:
    modules = _modules()
    return {name: _edges(name, path, modules) for name, path in modules.items()}


def _in_a_domain(module: str) -> bool:
    return module.startswith(DOMAINS + ".")


def test_the_core_imports_no_domain():
    """Outside telcoenv/domains/<name>/ nothing imports a domain, not even inside a function:
    the core reaches domains through the registry (``telcoenv.domains.get_domain``)."""
    upward = [
        f"{module}:{edge.line} imports {edge.target}"
        for module, edges in _graph().items()
        if not _in_a_domain(module)
        for edge in edges
        if _in_a_domain(edge.target)
    ]
    assert not upward, "\n".join(upward)


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_no_modules_import_each_other_in_a_cycle():
    """Counting the imports that run when a module is imported (function-level imports and
    typing-only ones do not)."""
    graph = {
        module: [edge.target for edge in edges if edge.module_level]
        for module, edges in _graph().items()
    }
    cycles = _cycles(graph)
    assert not cycles, "\n".join(" <-> ".join(cycle) for cycle in cycles)


def test_the_graph_reader_sees_what_it_checks():
    """The reader resolves ``from package import module`` and tells runtime imports apart."""
    graph = _graph()
    network = {edge.target: edge for edge in graph["telcoenv.domains.network"]}
    assert network["telcoenv.domains.network.engineer"].module_level
    assert not network["telcoenv.domains.network.dataset"].module_level  # inside a method
    assert not network["telcoenv.domains.network.release"].module_level  # typing only
    assert _cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]
