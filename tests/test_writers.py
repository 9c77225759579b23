"""Issue 22: several processes writing one data directory all land (raptor_engine/storage/writers.py)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import threading

import pytest

from raptor_engine import Engine
from raptor_engine.errors import RaptorError
from raptor_engine.storage.db import connect
from raptor_engine.storage.writers import WriterGate
from tests.unhurried import unhurried_settings

TOPICS = [
    ("lighthouse", "The keeper trimmed the wick of the lamp every evening before the fog came in."),
    ("bakery", "The baker folded the dough at dawn and let it rise in linen baskets."),
    ("railway", "The viaduct carried the branch line across the valley on twelve stone arches."),
    ("orchard", "The growers grafted old apple varieties onto hardy rootstock each spring."),
    ("observatory", "The astronomers logged the transit of the comet from the brass refractor."),
    ("harbour", "The harbour master recorded every schooner that unloaded salt and timber."),
    ("mill", "The miller adjusted the millstones whenever the river ran low in summer."),
    ("library", "The librarian catalogued the donated maps in oak drawers by region."),
    ("vineyard", "The vintners pressed the grapes by foot before the autumn rains."),
    ("foundry", "The founders poured bronze bells in sand moulds behind the chapel."),
]


def _document(topic: str, sentence: str) -> str:
    lines = [f"# The {topic}", ""]
    lines += [
        f"{sentence} Entry {i} of the {topic} records adds detail {i * 7} to this account." for i in range(6)
    ]
    return "\n".join(lines) + "\n"


def test_ten_ingest_processes_into_one_data_directory_all_land(tmp_path):
    data = tmp_path / "data"
    files = []
    for topic, sentence in TOPICS:
        path = tmp_path / f"{topic}.md"
        path.write_text(_document(topic, sentence))
        files.append(path)
    env = {
        **os.environ,
        "RAPTOR_DATA_DIR": str(data),
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    raptor = [sys.executable, "-m", "raptor_engine.cli"]
    runs = [
        subprocess.Popen(
            [*raptor, "ingest", "--kb", "shared", "--quiet", str(f)],
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for f in files
    ]
    outputs = [run.communicate(timeout=600)[0] for run in runs]
    failed = [(f.name, out) for f, run, out in zip(files, runs, outputs, strict=True) if run.returncode]
    assert not failed, failed
    doctor = subprocess.run([*raptor, "doctor"], env=env, text=True, capture_output=True, timeout=300)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr

    engine = Engine(unhurried_settings(data_dir=data))
    try:
        stored = sorted(d.name for d in engine.documents("shared"))
        assert stored == sorted(f.name for f in files)
        kb_id = engine.store.kb_id("shared")
        reachable = {
            name for root in engine.store.root_ids(kb_id) for name, _ in engine.store.documents_under(root)
        }
        assert reachable == set(stored)  # the cross-document layer was made over every document
        assert not engine.doctor(repair=False).problems
    finally:
        engine.close()


async def test_a_writer_waits_for_the_gate_and_gives_up_with_one_sentence(tmp_path):
    holder = WriterGate(tmp_path, "kb", wait_s=5)
    await holder.enter()
    waiter = WriterGate(tmp_path, "kb", wait_s=0.2)
    other_kb = WriterGate(tmp_path, "another kb", wait_s=0.2)
    await other_kb.enter()  # each knowledge base has its own turn
    other_kb.leave()
    try:
        await waiter.enter()
    except RaptorError as error:
        message = str(error)
    else:
        raise AssertionError("the second writer entered while the first held the gate")
    assert (
        message
        == "Nothing was stored: other uploads kept this knowledge base busy for 0.2 seconds; try again."
    )
    async with holder:
        pass  # leaving the scope gives the gate back
    async with waiter:
        await asyncio.wait_for(waiter.enter(), 5)



def test_opening_waits_for_a_process_that_holds_a_write_lock_on_a_file_still_in_rollback_mode(tmp_path):
    """Several processes creating one data directory at once: while one holds a write lock on the new
    file, SQLite refuses another's switch to WAL at once ("database is locked", without its busy
    handler), which made one of ten concurrent `raptor ingest` runs fail; opening now waits its turn."""
    path = tmp_path / "raptor.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    threading.Timer(0.3, lambda: holder.execute("COMMIT")).start()
    opened = connect(path)
    try:
        assert opened.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        opened.conn.close()
        holder.close()


def test_opening_still_gives_up_after_the_busy_timeout(tmp_path):
    path = tmp_path / "raptor.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            connect(path, busy_timeout_ms=200)
    finally:
        holder.close()
