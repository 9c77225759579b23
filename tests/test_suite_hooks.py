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
