"""A data directory's bytes, to prove that a refused upload changed nothing (the robustness and
hostile-file reports both compare one before and after), and the harmless text both start from."""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SAFE_TEXT = (
    "The harbour wall was rebuilt in 1898 after the winter storms. "
    "Fishermen paid for the new stones with a tax on every barrel of herring."
)



def checkpoint(store_db: sqlite3.Connection) -> None:
    """Fold the WAL into the main file, so the main file's bytes are the whole database."""
    busy, _, _ = store_db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy:
        raise RuntimeError("the WAL checkpoint was blocked by a reader")


@dataclass(frozen=True)
class StoreFingerprint:
    """The database file's bytes (after a checkpoint) and every derived file under the data directory."""

    db_sha256: str
    files: tuple[tuple[str, str], ...]


def fingerprint(engine: Any) -> StoreFingerprint:
    checkpoint(engine.store.db.conn)
    data_dir = Path(engine.settings.data_dir)
    db_sha = hashlib.sha256(engine.settings.db_path.read_bytes()).hexdigest()
    files = []
    for path in sorted(data_dir.rglob("*")):
        if path.is_file() and path.name not in {"raptor.db", "raptor.db-wal", "raptor.db-shm"}:
            files.append((str(path.relative_to(data_dir)), hashlib.sha256(path.read_bytes()).hexdigest()))
    return StoreFingerprint(db_sha, tuple(files))
