"""A tree's rows are written with one `executemany` per table: what is stored is what sqlite_utils'
`insert_all` stored (the same values, of the same SQLite types)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from raptor_engine import Engine, Settings
from raptor_engine.storage import store as store_module
from tests.sample_texts import BEEKEEPING, RAILWAY


def _stored(tmp_path: Path, embedder, name: str) -> dict[str, list[tuple]]:
    engine = Engine(Settings.from_env(data_dir=tmp_path / name), embedder=embedder)
    try:
        for filename, text in (("railway.txt", RAILWAY), ("bees.txt", BEEKEEPING)):
            asyncio.run(engine.ingest("kb", filename, text.encode(), added_by="test"))
        db = engine.store.db
        out = {}
        for table in ("nodes", "edges"):
            columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})").fetchall()]
            typed = ", ".join(f"[{c}], typeof([{c}])" for c in columns)
            out[table] = db.execute(f"SELECT {typed} FROM {table} ORDER BY rowid").fetchall()
        return out
    finally:
        engine.close()


def test_rows_written_at_once_are_the_rows_insert_all_wrote(tmp_path, embedder, monkeypatch):
    mine = _stored(tmp_path, embedder, "executemany")

    def insert_all(db, table, rows):
        if rows:
            db[table].insert_all(rows, batch_size=200)

    monkeypatch.setattr(store_module, "_insert_rows", insert_all)
    theirs = _stored(tmp_path, embedder, "insert_all")
    assert len(mine["nodes"]) > 5 and len(mine["edges"]) > 5
    assert mine == theirs
