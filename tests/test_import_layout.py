"""The package's import graph: no circles between modules, lazy imports included.

A circle means two rooms each need the other, so one of them holds an idea
that belongs elsewhere (hooks and the worker once shared the lock plumbing
that way). Lazy imports inside functions count too: they only hide the
circle from the interpreter, not from the design. Imports for type
annotations only (under ``if TYPE_CHECKING:``) do not: naming a type is not
needing its room.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in (SRC / "lossless").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:``."""
    found: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        found.append(node)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return found


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the lossless modules it imports at run time, anywhere in its text."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module in modules:
                    graph[name].add(node.module)
                for alias in node.names:
                    if f"{node.module}.{alias.name}" in modules:
                        graph[name].add(f"{node.module}.{alias.name}")
            elif isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names if a.name in modules)
    return graph


def _circles(graph: dict[str, set[str]], depth: int) -> list[list[str]]:
    """Strongly connected groups of the graph folded to ``depth`` name parts.

    A package and its own modules are one room (``lossless.hooks`` re-exporting
    ``lossless.hooks.dispatch`` is not a circle).
    """

    def unit(name: str) -> str:
        return ".".join(name.split(".")[:depth])

    edges: dict[str, set[str]] = {}
    for source, targets in graph.items():
        for target in targets:
            a, b = unit(source), unit(target)
            if a != b and not b.startswith(a + ".") and not a.startswith(b + "."):
                edges.setdefault(a, set()).add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in edges.get(node, ()):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_circle_finder_sees_a_circle() -> None:
    graph = {"lossless.a": {"lossless.b.x"}, "lossless.b.x": {"lossless.a"}, "lossless.c": set()}
    assert _circles(graph, 2) == [["lossless.a", "lossless.b"]]
    assert _circles({"lossless.b": {"lossless.b.x"}, "lossless.b.x": {"lossless.b"}}, 2) == []


# depth 2: top-level modules and packages (lossless.hooks, lossless.worker);
# depth 3: the modules inside a package (lossless.cli.history, lossless.cli.portable).
@pytest.mark.parametrize("depth", [2, 3])
def test_no_import_circles(depth: int) -> None:
    assert _circles(_imports(_modules()), depth) == []
