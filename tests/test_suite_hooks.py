"""The suite's own hooks (tests/conftest.py)."""

import threading
import time
from pathlib import Path

import pytest

from tests.conftest import wait_for_background_imports


def test_a_background_import_is_finished_before_the_next_test_phase():
    started = threading.Event()

    def import_slowly() -> None:
        started.set()
        time.sleep(0.3)

    thread = threading.Thread(target=import_slowly, name="umap-preload", daemon=True)
    thread.start()
    started.wait()
    wait_for_background_imports()
    assert not thread.is_alive()


def test_other_threads_are_not_waited_for():
    release = threading.Event()
    other = threading.Thread(target=release.wait, name="some-worker", daemon=True)
    other.start()
    waiter = threading.Thread(target=wait_for_background_imports, daemon=True)
    waiter.start()
    waiter.join(60)  # waiting for `other` would take until it is released, after this join
    finished = not waiter.is_alive()
    release.set()
    assert finished


class _MarkConfig:
    """A pytest config whose only option is the `-m` expression."""

    def __init__(self, markexpr: str) -> None:
        self.markexpr = markexpr

    def getoption(self, name: str) -> str:
        assert name == "markexpr"
        return self.markexpr


@pytest.mark.parametrize(
    ("markexpr", "name", "ignored"),
    [
        ("not slow and not e2e and not wheel", "test_crash.py", True),  # make test-fast: not even imported
        ("not slow", "test_workers.py", True),
        ("not slow and not e2e and not wheel", "test_engine.py", False),  # a quick file is collected
        ("not e2e", "test_crash.py", False),  # make test: the slow files run
        ("slow", "test_crash.py", False),
        ("", "test_crash.py", False),
    ],
)
def test_slow_files_are_not_collected_when_slow_tests_are_deselected(markexpr, name, ignored):
    from tests import conftest

    assert bool(conftest.pytest_ignore_collect(Path("tests") / name, _MarkConfig(markexpr))) is ignored


def _engines_built_on_bare_settings(source: str) -> list[int]:
    """Lines where a test builds an Engine from `Settings(...)` (the 60 s build deadline live): given
    in the call, or held in a name that the same function assigned from such a call."""
    import ast

    def bare(value: ast.AST | None) -> bool:
        return (
            isinstance(value, ast.Call)
            and getattr(value.func, "id", None) == "Settings"
            and not any(keyword.arg in ("build_timeout", None) for keyword in value.keywords)  # None: **given
        )

    def own_nodes(scope: ast.AST) -> list[ast.AST]:
        """The nodes of `scope`, less those of the functions defined inside it (scopes of their own)."""
        found, pending = [], list(ast.iter_child_nodes(scope))
        while pending:
            node = pending.pop()
            found.append(node)
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                pending.extend(ast.iter_child_nodes(node))
        return found

    lines = []
    functions = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)
    for scope in (n for n in ast.walk(ast.parse(source)) if isinstance(n, functions)):
        nodes = own_nodes(scope)
        held = {
            target.id
            for node in nodes
            if isinstance(node, ast.Assign) and bare(node.value)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in nodes:
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Engine" and node.args):
                continue
            first = node.args[0]
            if bare(first) or (isinstance(first, ast.Name) and first.id in held):
                lines.append(node.lineno)
    return sorted(set(lines))


def test_engines_in_tests_get_the_unhurried_settings():
    """An engine built on bare Settings keeps the 60 s build deadline, which a busy machine can pass
    (tests/unhurried.py): such a test must use `unhurried_settings` or set its own deadline."""
    from pathlib import Path

    offenders = {
        str(path.relative_to(Path(__file__).parent)): found
        for path in sorted(Path(__file__).parent.rglob("*.py"))
        if (found := _engines_built_on_bare_settings(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_the_bare_settings_check_finds_what_it_looks_for():
    source = (
        "Engine(Settings(data_dir=d), embedder=e)\n"
        "Engine(Settings(data_dir=d, build_timeout=5))\n"
        "Engine(Settings(data_dir=d, **bounds))\n"
        "Engine(unhurried_settings(data_dir=d))\n"
        "def f():\n"
        "    settings = Settings(data_dir=d, llm_api_key=k)\n"
        "    Engine(settings, embedder=e)\n"
        "def g():\n"
        "    settings = Settings(data_dir=d, build_timeout=None)\n"
        "    Engine(settings)\n"
    )
    assert _engines_built_on_bare_settings(source) == [1, 7]
