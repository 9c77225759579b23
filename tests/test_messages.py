"""Chat messages as documents: grouping, leaves that keep their message, deletion and edits that rebuild
only their small document and the cross-document layer (real SQLite, hnswlib, model and UMAP)."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from raptor_engine import Engine
from raptor_engine.errors import LimitError
from raptor_engine.ingest.messages import MessagePlace, pack_parts, part_name
from tests.message_samples import START, history, message
from tests.unhurried import unhurried_settings

CHANNEL = MessagePlace(400, "general")
GATE = "The gate code for the boathouse is 4417"


def make_engine(tmp_path: Path, embedder, **overrides) -> Engine:
    return Engine(unhurried_settings(data_dir=tmp_path / "data", **overrides), embedder=embedder)


def every_text(engine: Engine, kb: str) -> str:
    """All text the store holds for a knowledge base: nodes of every layer and the messages table."""
    with engine.in_space(kb):
        kb_id = engine.store.kb_id(kb)
        nodes = " ".join(n.text for n in engine.store.nodes_of_kb(kb_id))
        rows = engine.store.db.execute("SELECT text FROM messages WHERE kb_id = ?", [kb_id]).fetchall()
    return nodes + " " + " ".join(r[0] for r in rows)


@pytest.fixture
async def channel(tmp_path, embedder):
    engine = make_engine(tmp_path, embedder, message_group_tokens=300)
    result = await engine.add_messages("kb", CHANNEL, history(60), added_by="alice")
    yield engine, result
    engine.close()


async def test_messages_become_small_documents_whose_leaves_keep_their_message(channel):
    engine, result = channel
    assert result.added == 60 and result.edited == 0
    docs = engine.documents("kb")
    # 60 messages of ~20 tokens over one day, in parts of at most 300 tokens
    assert len(docs) >= 4 and all(d.format == "messages" for d in docs)
    assert {d.name for d in docs} >= {"#general 2026-03-01", "#general 2026-03-01 (part 2)"}
    assert all(d.tokens <= 300 for d in docs)
    assert sorted(engine.message_ids("kb")) == [10_000 + i for i in range(60)]
    answer = await engine.ask("kb", "What is the gate code for the boathouse?")
    leaf = next(n for n in answer.context.nodes if GATE in n.text)
    assert leaf.message is not None
    assert (leaf.message.message_id, leaf.message.author) == (10_005, "bob")
    assert leaf.message.url == "https://discord.com/channels/300/400/10005"
    assert leaf.message.created_at == "2026-03-01T09:35:00Z"
    cited = [c for c in answer.citations if c.message is not None]
    assert cited and cited[0].to_dict()["message"]["url"].startswith("https://discord.com/channels/")


async def test_the_same_messages_again_change_nothing(channel):
    engine, _ = channel
    with engine.in_space("kb"):
        version = engine.store.kb_version(engine.store.kb_id("kb"))
    again = await engine.add_messages("kb", CHANNEL, history(60))
    assert (again.added, again.edited, again.unchanged, again.documents) == (0, 0, 60, [])
    with engine.in_space("kb"):
        assert engine.store.kb_version(engine.store.kb_id("kb")) == version


async def test_a_deleted_message_leaves_the_store_the_index_and_answers(channel):
    engine, _ = channel
    before = {d.name: d.id for d in engine.documents("kb")}
    with engine.in_space("kb"):
        kb_id = engine.store.kb_id("kb")
        gate_leaves = [n.id for n in engine.store.nodes_of_kb(kb_id) if GATE in n.text and n.layer == 0]
    result = await engine.remove_messages("kb", [10_005, 999_999])
    assert result.removed == 1 and len(result.documents) == 1
    assert set(gate_leaves) <= set(result.removed_nodes)
    assert GATE not in every_text(engine, "kb") and "4417" not in every_text(engine, "kb")
    after = {d.name: d.id for d in engine.documents("kb")}
    rebuilt = [name for name in before if before[name] != after.get(name)]
    assert rebuilt == result.documents == ["#general 2026-03-01"]  # the other parts are untouched
    with engine.in_space("kb"):
        index = engine.indexes.get(kb_id)
        assert not set(gate_leaves) & index.ids
        assert not engine.store.integrity_problems()
    answer = await engine.ask("kb", "What is the gate code for the boathouse?")
    assert all("4417" not in n.text for n in answer.context.nodes)
    assert all(c.message is None or c.message.message_id != 10_005 for c in answer.citations)


async def test_an_emptied_document_is_dropped_and_an_edit_replaces_the_text(tmp_path, embedder):
    engine = make_engine(tmp_path, embedder)
    try:
        await engine.add_messages("kb", CHANNEL, history(12))
        thread = MessagePlace(777, "Where do we meet?", thread=True)
        post = [message(100 + i, f"We meet at the old mill number {i}.", channel=777) for i in range(3)]
        await engine.add_messages("kb", thread, post)
        assert "Where do we meet?" in [d.name for d in engine.documents("kb")]
        edited = replace(post[1], text="We meet at the ferry terminal instead.")
        result = await engine.add_messages("kb", thread, [edited])
        assert (result.added, result.edited, result.documents) == (0, 1, ["Where do we meet?"])
        text = every_text(engine, "kb")
        assert "ferry terminal instead" in text and "old mill number 1" not in text
        # an edit seen from elsewhere (a reconcile reads a thread as a plain channel) stays in its document
        again = replace(post[2], text="We meet on the quay at noon.")
        result = await engine.add_messages("kb", MessagePlace(777, "777"), [again])
        assert result.documents == ["Where do we meet?"] and "777" not in str(engine.documents("kb"))
        removed = await engine.remove_messages("kb", engine.message_ids("kb", channel_id=777))
        assert removed.removed == 3 and removed.removed_documents == 1
        assert "Where do we meet?" not in [d.name for d in engine.documents("kb")]
        assert engine.message_channels("kb") == [400]
    finally:
        engine.close()


async def test_a_new_day_is_a_new_document_and_a_day_grows_by_its_last_part(channel):
    engine, _ = channel
    before = {d.name: d.id for d in engine.documents("kb")}
    late = message(500, "The harbour master retires next spring.", when=START.replace(hour=23))
    next_day = message(501, "Fresh eggs are sold at the farm gate today.", when=START.replace(day=2))
    result = await engine.add_messages("kb", CHANNEL, [late, next_day])
    assert result.added == 2
    after = {d.name: d.id for d in engine.documents("kb")}
    assert "#general 2026-03-02" in after
    changed = sorted(name for name in before if before[name] != after.get(name))
    assert len(changed) <= 2 and all(name.startswith("#general 2026-03-01") for name in changed)


async def test_authors_messages_can_be_found_and_the_quota_holds(tmp_path, embedder):
    engine = make_engine(tmp_path, embedder, max_kb_messages=10)
    try:
        await engine.add_messages("kb", CHANNEL, history(8))
        assert engine.message_ids("kb", author_id=101) == [10_001, 10_005]
        with pytest.raises(LimitError, match="limit of 10 messages"):
            await engine.add_messages("kb", CHANNEL, history(12))
        assert len(engine.message_ids("kb")) == 8
    finally:
        engine.close()


async def test_deleting_the_knowledge_base_leaves_no_message_rows(channel, tmp_path):
    engine, _ = channel
    with engine.in_space("kb"):
        path = engine.store.path
    engine.delete_kb("kb")
    conn = sqlite3.connect(path)
    try:
        for table in ("messages", "message_documents", "leaf_messages"):
            assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0, table
    finally:
        conn.close()


def test_parts_are_packed_in_order_within_the_bound():
    messages = history(10)
    tokens = {m.message_id: 40 for m in messages}
    parts = pack_parts(list(reversed(messages)), tokens, 100)
    assert [len(p) for p in parts] == [2, 2, 2, 2, 2]
    assert [m.message_id for p in parts for m in p] == sorted(m.message_id for m in messages)
    assert part_name("#general 2026-03-01", 1) == "#general 2026-03-01"
    assert part_name("#general 2026-03-01", 3) == "#general 2026-03-01 (part 3)"


async def test_message_rows_follow_their_knowledge_base_into_its_space(tmp_path, embedder):
    kb = "guild-5-channel-6"
    engine = make_engine(tmp_path, embedder, space_pattern="")  # every server in the one root file
    await engine.add_messages(kb, CHANNEL, history(8))
    engine.close()
    engine = make_engine(tmp_path, embedder)  # spaces on: the knowledge base moves to guilds/5/
    try:
        assert engine.space_of(kb) == "5"
        assert engine.message_ids(kb) == [10_000 + i for i in range(8)]
        answer = await engine.ask(kb, "What is the gate code for the boathouse?")
        leaf = next(n for n in answer.context.nodes if "4417" in n.text)
        assert leaf.message is not None and leaf.message.author == "bob"
        with engine.in_space(kb):
            assert not engine.store.integrity_problems()
    finally:
        engine.close()


async def test_a_rebuild_embeds_only_the_texts_it_has_no_vector_for(channel, monkeypatch):
    engine, _ = channel
    # the model check (model_check.py) embeds a few stored leaves once per process, before the first
    # question or upload: done here first, so what is counted below is the rebuild's alone
    await engine.ask("kb", "When does the ferry leave?")
    embedded: list[str] = []
    real = engine.embedder.embed

    def spy(texts, *args, **kwargs):
        embedded.extend(texts)
        return real(texts, *args, **kwargs)

    monkeypatch.setattr(engine.embedder, "embed", spy)
    edited = message(7, "Note 7: the ferry now leaves from the south pier.")
    result = await engine.add_messages("kb", CHANNEL, [edited])
    assert result.edited == 1
    # the rebuilt document's other messages (a summary over other documents may quote one of theirs
    # word for word, and is embedded as the summary it is)
    rebuilt = engine.store.db.execute(
        "SELECT text FROM messages WHERE doc_id = (SELECT doc_id FROM messages WHERE message_id = ?) "
        "AND message_id != ?",
        [10_007, 10_007],
    ).fetchall()
    kept = [text for (text,) in rebuilt]
    assert kept and edited.text in embedded
    assert not set(kept) & set(embedded)  # the document's other leaves kept their stored vectors
