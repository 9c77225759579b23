"""Shared fixtures (one real embedder per test process: loading it costs seconds) and the suite's order.

`make test` runs the suite on several pytest-xdist workers, a file per worker at a time (module fixtures
build their knowledge bases once). The end-to-end files below (real processes, real builds, kills and
restarts) are marked `slow`: `make test-fast` leaves them out, and `make test` starts them first, so the
longest files do not begin last and hold the whole run up.
"""

from __future__ import annotations

import os
import re
import resource
import threading
import time
from pathlib import Path

import pytest

from tests.unhurried import UNHURRIED_ENV

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# the bots, CLI runs and workers the tests start (and Settings.from_env here) have no deadline a test does
# not set itself, whatever the developer's own environment says: tests/unhurried.py says why
os.environ.update(UNHURRIED_ENV)


@pytest.fixture(scope="session")
def embedder():
    from raptor_engine.tree.embed import Embedder

    return Embedder()


@pytest.fixture(scope="module")
def samples(tmp_path_factory, embedder):
    """An engine holding the three sample documents (raptor_tools/samples), each in its own knowledge base
    named by its file's stem ('lighthouse_keepers', 'railway', 'bees'); for tests that only ask."""
    import asyncio

    from raptor_engine.engine import Engine
    from tests.unhurried import unhurried_settings

    engine = Engine(unhurried_settings(data_dir=tmp_path_factory.mktemp("samples") / "data"), embedder=embedder)
    for path in sorted((Path(__file__).resolve().parents[1] / "raptor_tools" / "samples").glob("*.md")):
        asyncio.run(engine.ingest(path.stem, path.name, path.read_bytes()))
    try:
        yield engine
    finally:
        engine.close()


def pytest_configure(config):
    """An environment installed before raptor_tools declared its `raptor.commands` entry point (an
    editable install not yet redone) lacks `raptor bench/eval/robustness`: register them directly so
    the CLI tests run. The entry point itself is checked by tests/test_wheel.py."""
    from raptor_engine.cli import cli

    cli.load_plugins()  # otherwise loaded when a command needs them
    if "bench" not in cli.commands:
        from raptor_tools.commands import register_commands

        register_commands(cli)


# Files whose tests drive real processes end to end (builds, kills, restarts, clusters, wheels).
SLOW_FILES = {
    "test_crash.py",
    "test_bench.py",
    "test_wheel.py",
    "test_workers.py",
    "test_message_workers.py",
    "test_writers.py",
    "test_load_concurrency.py",
    "test_embed_runtime.py",
    "test_bad_input.py",
    "test_hostile.py",
    "test_upload_bounds.py",
    "test_llm_faults.py",
    "test_isolation.py",
    "test_bot_restart.py",
    "test_bot_real_process.py",
    "test_bot_workers.py",
    "test_bot_shards.py",
    "test_bot_messages.py",
    "test_bot_cluster_waits.py",
    "test_bot_storage_faults.py",
    "test_bot_stop_streaming.py",
    "test_cluster_security.py",
    "test_cluster_waits.py",
    "test_cli_failures.py",
    "test_import_hostile.py",
}
# Single slow tests in otherwise quick files.
SLOW_TESTS = {
    "test_readme_runnable_blocks_run",
    "test_readme_shows_what_make_demo_prints",
    "test_large_layers_get_their_neighbour_graph_from_hnswlib",
    "test_a_second_process_loads_umaps_compiled_code_instead_of_compiling",
    "test_an_ingest_can_start_importing_umap_in_the_background",
    "test_twenty_thousand_leaves_are_binned_and_stay_small",
    "test_bench_many_kbs_prints_both_runs",
    "test_bench_prints_cache_and_parse_cost_per_guild",
    "test_the_packaged_scorer_scores_each_text_in_place",  # loads a 94 MB reranker where it is installed
}


# Threads an ingest starts that import modules in the background (umap, numba) and so add loggers.
BACKGROUND_IMPORTS = ("umap-preload",)


def wait_for_background_imports(timeout: float = 600.0) -> None:
    """Let an import an ingest started in the background finish before pytest's next test phase.

    pytest's log capture walks `logging`'s logger dictionary at the start of every phase without the
    logging lock; a thread importing umap/numba meanwhile adds loggers to it, and the next test then
    fails before it runs ("dictionary changed size during iteration") on a loaded machine."""
    for thread in threading.enumerate():
        if thread.name in BACKGROUND_IMPORTS and thread is not threading.current_thread():
            thread.join(timeout)


def _phase_then_wait():
    """The body of a test phase's hook wrapper: the phase, then `wait_for_background_imports`."""
    try:
        return (yield)
    finally:
        wait_for_background_imports()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    return (yield from _phase_then_wait())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from _phase_then_wait())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    return (yield from _phase_then_wait())


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With RAPTOR_TEST_CPU_LOG=FILE, append each test's wall and CPU seconds (its process and the child
    processes it waited for) to FILE as tab-separated lines: what to cut to keep `make test` short."""
    log_file = os.environ.get("RAPTOR_TEST_CPU_LOG")
    if not log_file:
        return (yield)
    wall, cpu = time.perf_counter(), _cpu_seconds()
    try:
        return (yield)
    finally:
        line = f"{_cpu_seconds() - cpu:.2f}\t{time.perf_counter() - wall:.2f}\t{item.nodeid}\n"
        with open(log_file, "a") as out:
            out.write(line)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With the slow tests deselected (`-m "not slow ..."`: `make test-fast`), the slow files are not
    imported at all: every worker would otherwise import them (and build their parameters) only to
    drop each of their tests."""
    if collection_path.name in SLOW_FILES and re.search(r"\bnot\s+slow\b", config.getoption("markexpr") or ""):
        return True
    return None


def is_slow(item: pytest.Item) -> bool:
    return Path(str(item.fspath)).name in SLOW_FILES or item.originalname in SLOW_TESTS


def pytest_collection_modifyitems(config, items):
    """Mark the end-to-end tests `slow`, and order slow files first (a stable sort keeps each file's
    own order), so the workers start the long files while the quick ones fill the gaps."""
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)
    slow_files = {str(item.fspath) for item in items if is_slow(item)}
    items.sort(key=lambda item: str(item.fspath) not in slow_files)
