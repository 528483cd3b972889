"""The architecture holds: layers without import cycles, pyspark only at the Spark boundary and in
the adapter, no Spark internals, short functions, and docs/architecture.md listing every module.

Imports are read from the source: every ``import`` statement of a module, function-level ones
and those under ``if TYPE_CHECKING:`` included (a type one module names from another ties them
as surely as a call: a cycle through annotations is still a cycle). ``make check`` also runs
``lint-imports``, whose contracts in pyproject.toml declare the engine's layers.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "dbt/adapters/hudi")
# where pyspark may be imported
SPARK_BOUNDARY = ("engine.spark", "dbt.adapters.hudi")
# a function longer than this needs a reason in a "# size: ..." comment right above its def
MAX_FUNCTION_LINES = 60


def _modules(root: Path = REPO, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """module name -> its source file, for every module of ``packages`` under ``root``."""
    out: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """Fully qualified names every import statement of ``module`` names, wherever it stands
    (module level, in a function, under ``if TYPE_CHECKING:``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)
        else:
            yield from _imports(node, module, is_package)


def _graph(modules: dict[str, Path] = MODULES) -> dict[str, set[str]]:
    """module -> the project modules it imports (a submodule import runs its packages too)."""
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        targets: set[str] = set()
        for name in _imports(tree, module, path.name == "__init__.py"):
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                candidate = ".".join(parts[:i])
                if candidate in modules and candidate != module:
                    targets.add(candidate)
        graph[module] = {t for t in targets if not module.startswith(f"{t}.")}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_import_graph_has_no_cycle() -> None:
    assert _cycles(_graph()) == []


def test_import_cycle_detection_finds_a_cycle() -> None:
    """The check itself: a two-module loop through a function-level import is found."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    tree = ast.parse("def f():\n    from engine.table import HudiTable\n")
    assert "engine.table" in set(_imports(tree, "engine.x", False))


def test_import_cycle_through_type_checking_is_found(tmp_path: Path) -> None:
    """A package whose planner imports its filter, and whose filter names the planner's type
    under ``if TYPE_CHECKING:``, has a cycle; without that import it has none."""
    package = tmp_path / "shop"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "plan.py").write_text("from shop.filter import prune\n\nclass Info: ...\n")
    (package / "filter.py").write_text(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from shop.plan import Info\n"
        "def prune(info: Info) -> None: ...\n"
    )
    (package / "read.py").write_text("from . import plan\n")
    modules = _modules(tmp_path, ("shop",))
    assert _cycles(_graph(modules)) == [["shop.filter", "shop.plan"]]

    (package / "filter.py").write_text("def prune(info: object) -> None: ...\n")
    assert _cycles(_graph(modules)) == []


def test_pyspark_imported_only_at_the_spark_boundary() -> None:
    offenders = []
    for module, path in MODULES.items():
        if module.startswith(SPARK_BOUNDARY):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            offenders += [f"{module}: {n}" for n in names if n.split(".")[0] == "pyspark"]
    assert offenders == []


def test_no_spark_internals() -> None:
    """Only the public DataFrame/SQL API: the engine runs on Spark Connect as on a local JVM."""
    internals = re.compile(r"\b(_jdf|_jvm|_jsc|sparkContext|_sc)\b")
    offenders = [
        f"{module}:{n}: {line.strip()}"
        for module, path in MODULES.items()
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if internals.search(line)
    ]
    assert offenders == []


def test_adapter_and_cli_use_the_public_api_only() -> None:
    """The adapter and the dbt-hudi command see the engine as ``engine`` (the facade and the
    entry points), ``engine.config`` (option keys), ``engine.errors`` and ``engine.inspect``
    (what a table holds and its health); the command's own modules are its own, and the adapter
    never reaches into them."""
    public = {"engine", "engine.config", "engine.errors", "engine.inspect"}
    offenders = []
    for module, path in MODULES.items():
        if not module.startswith(("dbt.adapters.hudi", "engine.cli")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine"):
                own = module.startswith("engine.cli") and node.module.startswith("engine.cli")
                if node.module not in public and not own:
                    offenders.append(f"{module}: from {node.module} import ...")
            elif isinstance(node, ast.Import):
                offenders += [
                    f"{module}: import {a.name}"
                    for a in node.names
                    if a.name.startswith("engine") and a.name not in public
                ]
    assert offenders == []


def _function_sizes() -> Iterator[tuple[str, int, str | None]]:
    """(qualified function, lines, reason) of every function in the packages."""
    for module, path in MODULES.items():
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            above = lines[first - 2].strip() if first >= 2 else ""
            reason = above.removeprefix("# size:").strip() if above.startswith("# size:") else None
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            yield f"{module}.{node.name}", size, reason


def test_functions_are_short_or_say_why() -> None:
    long = [
        f"{name} ({size} lines)"
        for name, size, reason in _function_sizes()
        if size > MAX_FUNCTION_LINES and not reason
    ]
    assert long == []


def test_architecture_doc_lists_every_module() -> None:
    """docs/architecture.md names every module of the engine and the adapter, and no other."""
    doc = (REPO / "docs" / "architecture.md").read_text()
    listed = set(re.findall(r"`((?:engine|dbt/adapters/hudi)/[\w/]+\.py)`", doc))
    on_disk = {str(p.relative_to(REPO)) for p in MODULES.values()}
    assert sorted(on_disk - listed) == [], "modules missing from docs/architecture.md"
    assert sorted(listed - on_disk) == [], "docs/architecture.md names modules that do not exist"
