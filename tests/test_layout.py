"""The engine reads as its pipeline: packages by stage, every import pointing down, no cycles.

Layers, lowest first: the shared vocabulary (`config`, `errors`, `types`), then `ingest`, `storage`,
`tree`, `query`, then the top (`engine`, `cli`, `llm`, `streaming`, `workers`, `plugins`). A module
may import its own layer or a lower one. Imports inside functions and under TYPE_CHECKING count:
they are arrows a reader follows too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "raptor_engine"
VOCABULARY = {"config", "errors", "types"}
STAGES = ["ingest", "storage", "tree", "query"]


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, root: Path) -> set[str]:
    """Every module of the package that `path` imports, resolved to dotted names."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == root.name:
                found.add(target)
                found.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == root.name)
    return found


def module_graph(root: Path) -> dict[str, set[str]]:
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    return {name: {m for m in imported_modules(path, root) if m in files and m != name} for name, path in files.items()}


def layer(module: str) -> int:
    """0 for the vocabulary, 1-4 for the stages in pipeline order, 5 for the top."""
    parts = module.split(".")[1:]
    if not parts:
        return 5
    if parts[0] in VOCABULARY:
        return 0
    if parts[0] in STAGES:
        return 1 + STAGES.index(parts[0])
    return 5


def upward_imports(root: Path) -> list[str]:
    return [
        f"{source} imports {target}"
        for source, targets in module_graph(root).items()
        if source != root.name  # the package's lazy facade names the public API's homes
        for target in targets
        if layer(target) > layer(source)
    ]


def test_every_engine_import_points_down():
    assert upward_imports(ENGINE) == []


def test_the_layer_check_sees_an_upward_import(tmp_path):
    root = tmp_path / "raptor_engine"
    for folder in ("ingest", "query"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "ingest" / "load.py").write_text("def f():\n    from ..query.answer import x\n")
    (root / "query" / "answer.py").write_text("from ..ingest.load import f\n")
    assert upward_imports(root) == ["raptor_engine.ingest.load imports raptor_engine.query.answer"]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("package", ["raptor_engine", "raptor_tools", "bot"])
def test_no_module_imports_a_module_that_imports_it_back(package):
    graph = module_graph(ROOT / package)
    graph.pop(package, None)  # a package's __init__ may re-export its modules
    assert cycles({k: v - {package} for k, v in graph.items()}) == []


def test_cycle_finder_sees_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("stage", STAGES)
def test_each_stage_package_says_what_it_does(stage):
    doc = ast.get_docstring(ast.parse((ENGINE / stage / "__init__.py").read_text()))
    assert doc and len(doc.split()) >= 10


def test_the_engine_never_imports_discord():
    for path in ENGINE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.split(".")[0] == "discord" for n in names), path
