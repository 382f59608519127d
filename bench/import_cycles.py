"""Check the import graph of ``bench/`` for cycles (no imports are executed: the files are parsed).

    python bench/import_cycles.py [--all] [DIR]

Counts the imports that run when a module is imported (module level, including those under ``if``
or ``try`` and in class bodies), but not those under ``if TYPE_CHECKING:``; ``--all`` also counts
the imports inside functions (which run when the function is called). Only edges between modules
of DIR (default: this folder) are kept; importing ``a.b.c`` also imports the packages ``a`` and
``a.b``. Prints the edges and every cycle; exits 1 if there is one.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported(tree: ast.Module, module: str, is_package: bool, all_levels: bool) -> set[str]:
    """Every module name an import of ``tree`` may load (``from a import b``: ``a`` and ``a.b``)."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and not all_levels:
            return
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return names


def graph(root: Path, all_levels: bool) -> dict[str, set[str]]:
    files = {module_name(f, root): f for f in sorted(root.rglob("*.py"))}
    edges: dict[str, set[str]] = {}
    for name, path in files.items():
        targets = set()
        for target in imported(ast.parse(path.read_text(), str(path)), name, path.name == "__init__.py", all_levels):
            parts = target.split(".")
            # ``import a.b.c`` loads a, a.b and a.b.c
            targets.update(".".join(parts[: i + 1]) for i in range(len(parts)))
        edges[name] = {t for t in targets if t in files and t != name}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return found


def main(argv: list[str]) -> int:
    all_levels = "--all" in argv
    args = [a for a in argv if a != "--all"]
    root = Path(args[0]).resolve() if args else Path(__file__).resolve().parent
    edges = graph(root, all_levels)
    print(f"import graph of {root} ({'all imports' if all_levels else 'module-level imports'}, TYPE_CHECKING ignored):")
    for name in sorted(edges):
        print(f"  {name} -> {', '.join(sorted(edges[name])) or '-'}")
    found = cycles(edges)
    for component in found:
        print(f"CYCLE: {' <-> '.join(component)}")
    print(f"{len(found)} cycle(s) among {len(edges)} modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
