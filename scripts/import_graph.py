"""Measure the import graph of the engine and the adapter: package cycles, module cycles, and the
modules and lines of every package.

The graph is grimp's, the one ``lint-imports`` checks, with every import counted: those under
``if TYPE_CHECKING:`` and those inside functions too. A package is ``engine.<name>`` (a
subpackage, or a top-level module such as ``engine.table``) or ``dbt.adapters.hudi``.

    PYTHONPATH=. .venv/bin/python scripts/import_graph.py
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("engine",)


def build() -> grimp.ImportGraph:
    """The project's import graph, TYPE_CHECKING imports included."""
    return grimp.build_graph(*ROOTS, cache_dir=None, exclude_type_checking_imports=False)


def package_of(module: str) -> str:
    """``engine.write.commit`` -> ``engine.write``; the adapter is one package."""
    if module.startswith("dbt.adapters.hudi"):
        return "dbt.adapters.hudi"
    parts = module.split(".")
    return ".".join(parts[:2])


def module_graph(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    """module -> the project modules it imports directly."""
    return {
        m: {t for t in graph.find_modules_directly_imported_by(m) if t in graph.modules}
        for m in graph.modules
    }


def package_graph(modules: dict[str, set[str]]) -> dict[str, set[str]]:
    """package -> the other packages its modules import (``engine`` itself left out)."""
    out: dict[str, set[str]] = defaultdict(set)
    for module, targets in modules.items():
        if module == "engine":
            continue
        source = package_of(module)
        out[source] |= {package_of(t) for t in targets if t != "engine"} - {source}
    return dict(out)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def sizes(graph: grimp.ImportGraph) -> dict[str, tuple[int, int]]:
    """package -> (modules, lines of source)."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for module in graph.modules:
        path = REPO / Path(*module.split("."))
        file = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        if not file.exists():
            continue
        entry = out[package_of(module) if module != "engine" else "engine"]
        entry[0] += 1
        entry[1] += len(file.read_text().splitlines())
    return {k: (v[0], v[1]) for k, v in out.items()}


def main() -> int:
    graph = build()
    modules = module_graph(graph)
    packages = package_graph(modules)
    package_cycles = cycles(packages)
    module_cycles = cycles(modules)
    print(f"package cycles: {len(package_cycles)}")
    for component in package_cycles:
        print("  " + " <-> ".join(component))
    print(f"module cycles: {len(module_cycles)}")
    for component in module_cycles:
        print(f"  ({len(component)}) " + " ".join(component))
    print("package           modules  lines  imports")
    for package, (count, lines) in sorted(sizes(graph).items()):
        below = ", ".join(p.removeprefix("engine.") for p in sorted(packages.get(package, ())))
        print(f"  {package:<20} {count:>4} {lines:>6}  {below}")
    return 1 if package_cycles or module_cycles else 0


if __name__ == "__main__":
    sys.exit(main())
