"""The suite's own hooks (tests/conftest.py)."""

import threading
import time

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
