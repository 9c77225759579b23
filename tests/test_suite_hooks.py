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
    """Lines where a test builds an Engine straight from `Settings(...)` (the 60 s build deadline live)."""
    import ast

    lines = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Engine" and node.args):
            continue
        first = node.args[0]
        if isinstance(first, ast.Call) and getattr(first.func, "id", None) == "Settings":
            if not any(keyword.arg in ("build_timeout", None) for keyword in first.keywords):  # None: **given
                lines.append(node.lineno)
    return lines


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
    )
    assert _engines_built_on_bare_settings(source) == [1]
