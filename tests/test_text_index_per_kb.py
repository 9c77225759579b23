"""One full-text index per knowledge base: a knowledge base's BM25 ranking, and so its answers, are the
same whatever other knowledge bases share its store file; an old store's shared index is split on open
(all or nothing); doctor finds and rebuilds a missing or damaged index of one knowledge base."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from raptor_engine import Engine
from raptor_engine.storage.schema import schema_problems
from raptor_engine.storage.store import NewNode, Store
from tests.unhurried import unhurried_settings

BUILD = {"action": "add"}
ROOT = Path(__file__).resolve().parent.parent

# A knowledge base about a plant's pumps: "valve" is rare in it (one note), "pressure" common (five).
ALPHA = [
    "The intake valve of pump 3 sticks after a cold start and must be freed by hand.",
    *(f"Pump {n} holds its pressure through the night shift without help." for n in range(1, 6)),
    "The belt of the feeder was replaced in March.",
    "Oil for the gearbox is ordered from the usual supplier.",
    "The night crew logs every stop in the blue binder.",
    "Spare fuses are kept in the cabinet by the door.",
]
# Another knowledge base of the same file, about valves: on main it made "valve" common in the shared
# index, so the pressure notes outranked alpha's one valve note for "valve pressure".
BETA = [f"Valve {n} of the cooling loop was greased and tagged on inspection day." for n in range(30)]
CJK_ALPHA = ["灯塔的看守人救出了渔民。", "灯塔改用电力照明。", "港口的渔船很多。"]
CJK_BETA = [f"第{n}号灯塔的渔民" for n in range(20)]


def _document(name: str) -> dict:
    return {"name": name, "sha256": name * 8, "size": 1, "format": "txt", "chunks": 1, "layers": 1, "tokens": 5}


def _leaf(text: str) -> NewNode:
    return NewNode(
        key=1, layer=0, kind="leaf", text=text, tokens=len(text.split()), embedding=np.ones(4, dtype=np.float32),
        start=0, end=len(text),
    )


def _add(store: Store, kb: str, texts: list[str]) -> int:
    kb_id = 0
    for number, text in enumerate(texts):
        kb_id, _ = store.commit_document(kb, _document(f"{kb}{number}"), [_leaf(text)], lambda ids: [], BUILD)
    return kb_id


def _ranking(store: Store, kb_id: int, phrases: list[str], *, inside_words: bool = False) -> list[tuple[str, float]]:
    """The knowledge base's full-text hits as (text, score): node ids differ between files."""
    hits = store.text_search(kb_id, phrases, 20, inside_words=inside_words)
    texts = {node.id: node.text for node in store.nodes_by_ids([node_id for node_id, _ in hits]).values()}
    return [(texts[node_id], score) for node_id, score in hits]


def test_a_knowledge_base_ranks_the_same_beside_another_with_the_same_words(tmp_path):
    alone = Store(tmp_path / "alone.db")
    shared = Store(tmp_path / "shared.db")
    try:
        alone_id = _add(alone, "alpha", ALPHA + CJK_ALPHA)
        _add(shared, "beta", BETA + CJK_BETA)  # first, so alpha's node ids differ too
        shared_id = _add(shared, "alpha", ALPHA + CJK_ALPHA)
        for phrases in (["valve", "pressure"], ["pump", "night"], ["E-4012"], ["valve"]):
            assert _ranking(shared, shared_id, phrases) == _ranking(alone, alone_id, phrases), phrases
        assert _ranking(shared, shared_id, ["valve", "pressure"])[0][0] == ALPHA[0]  # the rare term first
        for phrases in (["灯塔", "渔民"], ["电力"]):  # bigrams matched inside the text: BM25 of alpha's own
            assert _ranking(shared, shared_id, phrases, inside_words=True) == _ranking(
                alone, alone_id, phrases, inside_words=True
            )
    finally:
        alone.close()
        shared.close()


async def test_a_knowledge_base_answers_the_same_beside_another_with_the_same_words(tmp_path, embedder):
    """The whole path, no LLM: ingest, hybrid retrieval and the quoted answer of a knowledge base are the
    same in a data directory of its own and in one that holds another knowledge base about valves."""
    alpha, beta = "\n\n".join(ALPHA).encode(), "\n\n".join(BETA).encode()
    question = "Which valve loses pressure?"
    found = []
    for name, others in (("alone", []), ("shared", [("beta", beta)])):
        engine = Engine(unhurried_settings(data_dir=tmp_path / name, budget=60, chunk_tokens=20), embedder=embedder)
        try:
            for kb, text in [*others, ("alpha", alpha)]:
                await engine.ingest(kb, "notes.txt", text, added_by="t")
            context = engine.retrieve("alpha", question)
            answer = await engine.ask("alpha", question)
            kb_id = engine.store.kb_id("alpha")
            found.append(
                (
                    [(node.text, node.score) for node in context.nodes],
                    answer.text,
                    _ranking(engine.store, kb_id, ["valve", "pressure"]),
                )
            )
        finally:
            engine.close()
    (alone_context, alone_answer, alone_ranking), (shared_context, shared_answer, shared_ranking) = found
    assert shared_answer == alone_answer
    assert shared_context == alone_context
    assert shared_ranking == alone_ranking


def _as_single_table_store(path: Path) -> None:
    """Turn a store into one written before each knowledge base had its own index: every node in one
    table `nodes_fts`, migration m007 not run."""
    conn = sqlite3.connect(path)
    kb_ids = [row[0] for row in conn.execute("SELECT id FROM kbs")]
    for kb_id in kb_ids:
        conn.execute(f"DROP TABLE nodes_fts_{kb_id}")
        conn.execute(f"DROP VIEW nodes_of_kb_{kb_id}")
    conn.execute(
        "CREATE VIRTUAL TABLE nodes_fts USING fts5(text, content='nodes', content_rowid='id', "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('rebuild')")
    conn.execute("DELETE FROM _migrations WHERE name = 'm007_text_index_per_kb'")
    conn.commit()
    conn.close()


def _shared_table_ranking(path: Path, kb_id: int, phrases: list[str]) -> list[tuple[int, float]]:
    """What the old store answered: BM25 over the shared table, hits of the knowledge base."""
    conn = sqlite3.connect(path)
    try:
        match = " OR ".join(f'"{p}"' for p in phrases)
        rows = conn.execute(
            "SELECT n.id, -bm25(nodes_fts) FROM nodes_fts JOIN nodes n ON n.id = nodes_fts.rowid "
            "WHERE nodes_fts MATCH ? AND n.kb_id = ? ORDER BY bm25(nodes_fts)",
            [match, kb_id],
        ).fetchall()
        return [(int(node_id), float(score)) for node_id, score in rows]
    finally:
        conn.close()


def _old_store(path: Path, kbs: dict[str, list[str]]) -> list[int]:
    """A store of the previous version holding these knowledge bases (name -> leaves); their ids."""
    store = Store(path)
    ids = [_add(store, kb, texts) for kb, texts in kbs.items()]
    store.close()
    _as_single_table_store(path)
    return ids


def test_an_old_single_table_store_is_split_on_open_and_answers_the_same(tmp_path):
    path = tmp_path / "raptor.db"
    [kb_id] = _old_store(path, {"alpha": ALPHA})
    assert schema_problems(sqlite3.connect(path)) == []  # a valid store of the previous version
    before = _shared_table_ranking(path, kb_id, ["valve", "pressure"])
    reopened = Store(path)
    try:
        assert reopened.text_search(kb_id, ["valve", "pressure"], 20) == before  # one knowledge base: the same
        names = {row[0] for row in reopened.db.execute("SELECT name FROM sqlite_master")}
        assert "nodes_fts" not in names and f"nodes_fts_{kb_id}" in names
        assert reopened.text_index_problems() == [] and reopened.integrity_problems() == []
    finally:
        reopened.close()


def test_a_crash_while_splitting_the_index_leaves_the_old_store_usable(tmp_path):
    path = tmp_path / "raptor.db"
    alpha, beta = _old_store(path, {"alpha": ALPHA, "beta": BETA})
    before = _shared_table_ranking(path, alpha, ["valve"])
    crash = textwrap.dedent(
        f"""
        import os
        from raptor_engine.storage import text_index
        from raptor_engine.storage.store import Store
        filled = text_index.fill_kb_index
        def fill_then_die(db, kb_id):
            filled(db, kb_id)
            if kb_id == {beta}:  # the second knowledge base's index is written: the process dies
                os._exit(9)
        text_index.fill_kb_index = fill_then_die
        Store({str(path)!r})
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    assert subprocess.run([sys.executable, "-c", crash], env=env, timeout=120).returncode == 9
    conn = sqlite3.connect(path)
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert "nodes_fts" in names and not {f"nodes_fts_{alpha}", f"nodes_fts_{beta}"} & names  # nothing of it
    assert _shared_table_ranking(path, alpha, ["valve"]) == before
    reopened = Store(path)  # the next open splits it
    try:
        assert [node for node, _ in reopened.text_search(alpha, ["valve"], 5)] == [node for node, _ in before]
        assert reopened.text_index_problems() == []
    finally:
        reopened.close()


def test_a_deleted_knowledge_base_takes_its_index_and_its_words_with_it(tmp_path):
    path = tmp_path / "raptor.db"
    store = Store(path)
    try:
        keep = _add(store, "keep", ["The lamp is trimmed at dusk."])
        gone = _add(store, "gone", ["Quixotryzm was the keeper's password."])
        store.delete_kb(gone)
        assert store.scrub()
        names = {row[0] for row in store.db.execute("SELECT name FROM sqlite_master")}
        assert not any(name.endswith(f"_{gone}") or f"_{gone}_" in name for name in names)
        assert store.text_search(gone, ["Quixotryzm"], 5) == []
        assert store.text_search(keep, ["lamp"], 5)
        assert store.text_index_problems() == []
    finally:
        store.close()
    assert b"uixotryzm" not in path.read_bytes()  # secure_delete zeroed the dropped index's pages


async def test_doctor_finds_and_rebuilds_a_missing_or_damaged_index_of_one_knowledge_base(tmp_path, embedder):
    settings = unhurried_settings(data_dir=tmp_path / "data")
    engine = Engine(settings, embedder=embedder)
    try:
        await engine.ingest("kb", "notes.txt", b"The valve E-4012 failed twice in March.", added_by="t")
        await engine.ingest("other", "notes.txt", b"The pump P-77 was oiled in May.", added_by="t")
        kb_id, other = engine.store.kb_id("kb"), engine.store.kb_id("other")
    finally:
        engine.close()
    damages = {
        "missing": [f"DROP TABLE nodes_fts_{kb_id}"],
        "emptied": [f"DELETE FROM nodes_fts_{kb_id}"],
        "missing view": [f"DROP VIEW nodes_of_kb_{kb_id}"],
        "shadow table gone": [f"DROP TABLE nodes_fts_{kb_id}_config"],  # FTS5 can open it no more
        "version garbled": [f"UPDATE nodes_fts_{kb_id}_config SET v = 99"],
        "segments gone": [f"DELETE FROM nodes_fts_{kb_id}_data"],
        "left behind": [  # the index of a knowledge base that is gone
            "CREATE VIEW nodes_of_kb_999 AS SELECT id, text FROM nodes WHERE kb_id = 999",
            "CREATE VIRTUAL TABLE nodes_fts_999 USING fts5(text, content='nodes_of_kb_999', "
            "content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')",
        ],
    }
    for damage, statements in damages.items():
        conn = sqlite3.connect(settings.db_path)  # another connection: the engine's has nothing cached
        for statement in statements:
            conn.execute(statement)
        conn.commit()
        conn.close()
        engine = Engine(settings, embedder=embedder)
        try:
            found = engine.doctor(repair=False).problems
            named = "knowledge base id 999" if damage == "left behind" else "knowledge base 'kb'"
            assert any("full-text index" in problem and named in problem for problem in found), (damage, found)
            assert not any("'other'" in problem for problem in found), (damage, found)
            report = engine.doctor()
            assert any("full-text index" in problem for problem in report.repaired), (damage, report)
            assert engine.doctor(repair=False).problems == [], damage
            assert engine.store.text_search(kb_id, ["E-4012"], 5), damage
            assert engine.store.text_search(other, ["P-77"], 5), damage
        finally:
            engine.close()


def test_a_foreign_object_in_a_knowledge_base_index_s_name_is_a_schema_problem(tmp_path):
    """An imported file is checked object by object: an FTS5 table named as a knowledge base's index
    but over another table's text, or a view of it that reads other rows, is not the project's."""
    path = tmp_path / "raptor.db"
    store = Store(path)
    kb_id = _add(store, "alpha", ALPHA[:2])
    store.close()
    conn = sqlite3.connect(path)
    assert schema_problems(conn) == []
    conn.execute(f"DROP VIEW nodes_of_kb_{kb_id}")
    conn.execute(f"CREATE VIEW nodes_of_kb_{kb_id} AS SELECT rowid AS id, text FROM messages")
    conn.execute("CREATE TABLE nodes_fts_5_data (id INTEGER PRIMARY KEY, block BLOB, extra)")
    conn.commit()
    problems = schema_problems(conn)
    conn.close()
    assert f"a view 'nodes_of_kb_{kb_id}' that differs from the project's" in problems
    assert "a table 'nodes_fts_5_data' that differs from the project's" in problems


# Damage a knowledge base's full-text index can take outside the project (a tool, a bad disk, a hand):
# FTS5 then cannot open the index, or reads garbage from it.
INDEX_DAMAGES = {
    "segments table gone": "DROP TABLE nodes_fts_{id}_data",
    "lookup table gone": "DROP TABLE nodes_fts_{id}_idx",
    "sizes table gone": "DROP TABLE nodes_fts_{id}_docsize",
    "config table gone": "DROP TABLE nodes_fts_{id}_config",
    "segments emptied": "DELETE FROM nodes_fts_{id}_data",
    "config emptied": "DELETE FROM nodes_fts_{id}_config",
    "segments garbled": "UPDATE nodes_fts_{id}_data SET block = x'00' WHERE id > 10",
    "index table gone": "DROP TABLE nodes_fts_{id}",
    "content view gone": "DROP VIEW nodes_of_kb_{id}",
}


def _damaged(path: Path, statement: str) -> Store:
    """The store at `path`, opened after another connection ran `statement` on it."""
    conn = sqlite3.connect(path)
    conn.execute(statement)
    conn.commit()
    conn.close()
    return Store(path)


def test_a_damaged_index_never_blocks_a_question_a_removal_or_an_addition(tmp_path):
    """The index is derived: a question over a damaged one gets no full-text hits (not an error), and
    the next write of its knowledge base rebuilds it from the nodes in the same transaction, so a
    forgotten document is removed (and its words with it) and a new one is added."""
    for damage, statement in INDEX_DAMAGES.items():
        path = tmp_path / f"{damage.replace(' ', '_')}.db"
        store = Store(path)
        kb_id = _add(store, "alpha", ALPHA)
        other = _add(store, "beta", BETA)
        store.close()
        store = _damaged(path, statement.format(id=kb_id))
        try:
            store.text_search(kb_id, ["valve"], 5)  # no error, whatever it finds
            doc_id = store.db.execute("SELECT id FROM documents WHERE kb_id = ? AND name = 'alpha0'", [kb_id])
            store.commit_forget(kb_id, doc_id.fetchone()[0], [], BUILD)
            renewed = [_leaf("The drain cock was renewed.")]
            store.commit_document("alpha", _document("alpha-new"), renewed, lambda ids: [], BUILD)
            assert store.scrub(), damage
            assert store.text_index_problems() == [], damage
            assert store.text_search(kb_id, ["intake"], 5) == [], damage  # the forgotten document's word
            assert len(store.text_search(kb_id, ["pressure"], 10)) == 5, damage
            assert store.text_search(kb_id, ["drain"], 5), damage
            assert len(store.text_search(other, ["valve"], 50)) == len(BETA), damage
        finally:
            store.close()


def test_the_check_finds_an_index_whose_term_lookup_rows_are_gone(tmp_path):
    """FTS5's integrity-check passes an index that lost its term lookup rows, while a question's terms past
    the first page are then found nowhere: the check looks words of the nodes up, and a rebuild mends it."""
    path = tmp_path / "raptor.db"
    store = Store(path)
    kb_id = _add(store, "alpha", [f"Record {n} names the part Widget{n}x{n * 7919} of crate C{n}." for n in range(400)])
    other = _add(store, "beta", BETA)
    store.close()
    for damage in ("DELETE FROM nodes_fts_{id}_idx", "DELETE FROM nodes_fts_{id}_idx WHERE pgno % 4 = 2"):
        store = _damaged(path, damage.format(id=kb_id))
        try:
            problems = store.text_index_problems()
            assert len(problems) == 1 and "knowledge base 'alpha' is out of step" in problems[0], (damage, problems)
            store.rebuild_text_index()
            assert store.text_index_problems() == [], damage
            assert store.text_search(kb_id, ["Widget399x3159681"], 5), damage
            assert store.text_search(other, ["valve"], 1), damage
        finally:
            store.close()
