"""The engine end to end: real SQLite file, real hnswlib, real model, real UMAP and mixtures."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from raptor_engine import Engine, IngestError, NotFoundError, RaptorError, Settings, Turn
from raptor_engine.engine import EmptyKnowledgeBaseError
from raptor_engine.query.retrieve import fill_budget
from raptor_engine.storage.records import StoredNode
from raptor_engine.tree.summarize import ExtractiveSummarizer
from tests.sample_texts import BEEKEEPING, RAILWAY


def make_engine(tmp_path: Path, embedder, **overrides) -> Engine:
    settings = Settings.from_env(data_dir=tmp_path / "data", **overrides)
    return Engine(settings, embedder=embedder)


def dump(db_path: Path) -> dict[str, list[tuple]]:
    """Every row of every table that holds the trees, for before/after comparisons."""
    conn = sqlite3.connect(db_path)
    try:
        return {
            t: conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()
            for t in ("kbs", "documents", "nodes", "edges", "meta")
        }
    finally:
        conn.close()


@pytest.fixture
async def railway(tmp_path, embedder):
    engine = make_engine(tmp_path, embedder)
    result = await engine.ingest("kb", "railway.md", RAILWAY.encode(), added_by="alice")
    yield engine, result
    engine.close()


async def test_ingest_builds_layers_with_provenance(railway):
    engine, result = railway
    assert result.status == "added"
    assert result.chunks >= 4 and result.layers >= 2  # the title-only section shares the first chunk
    info = engine.tree_info("kb")
    kinds = {layer.kind for layer in info.layers}
    assert {"leaf", "summary", "kb"} <= kinds
    kb_id = engine.store.kb_id("kb")
    nodes = engine.store.nodes_of_kb(kb_id)
    leaves = [n for n in nodes if n.kind == "leaf"]
    assert sum(n.tokens for n in leaves) == result.document.tokens
    for leaf in leaves:  # every leaf is an exact slice of the text it came from, with its section
        assert leaf.text == RAILWAY[leaf.start : leaf.end]
        assert leaf.heading and leaf.heading[0] == "The Harrow Valley Railway"
    summaries = [n for n in nodes if n.kind != "leaf"]
    children = engine.store.children([n.id for n in summaries])
    by_id = {n.id: n for n in nodes}
    for node in summaries:
        assert children[node.id], "a summary must have children"
        assert all(by_id[c].layer < node.layer for c in children[node.id])
        assert node.leaf_count >= len(children[node.id]) or node.kind == "kb"
    root = max(nodes, key=lambda n: n.layer)
    assert root.kind == "kb" and root.leaf_count == len(leaves)
    build = engine.builds("kb")[0]
    assert build["status"] == "ok" and build["layers"][0]["nodes"] == len(leaves)
    assert build["notes"], "the build record says why the tree stopped"
    assert result.document.added_by == "alice"


async def test_same_bytes_again_is_a_noop(railway, tmp_path):
    engine, _ = railway
    before = dump(engine.settings.db_path)
    again = await engine.ingest("kb", "copy-of-railway.md", RAILWAY.encode())
    assert again.status == "duplicate" and again.document.name == "railway.md"
    assert dump(engine.settings.db_path) == before


async def test_collapsed_answer_cites_nodes_within_budget(railway):
    engine, _ = railway
    answer = await engine.ask(
        "kb", "Who led the stranded passengers to the chapel by lantern light?", budget=300
    )
    ctx = answer.context
    assert 0 < ctx.tokens_used <= 300 and ctx.budget == 300
    assert sum(ctx.nodes_per_layer().values()) == len(ctx.nodes)
    assert answer.citations and all(c.node_id in {n.node_id for n in ctx.nodes} for c in answer.citations)
    assert "[1]" in answer.text
    assert "Wren" in answer.text  # the quoted sentence is the one about Tobias Wren
    data = answer.to_dict()
    assert {"answer", "citations", "context"} <= data.keys()
    assert {"node_id", "layer", "document"} <= data["citations"][0].keys()
    assert {"tokens_used", "budget", "nodes_per_layer"} <= data["context"].keys()


async def test_thematic_questions_reach_summaries_and_detail_questions_leaves(railway):
    engine, _ = railway
    thematic = engine.retrieve("kb", "What is this whole document about?", budget=2000)
    assert any(n.layer > 0 for n in thematic.nodes)
    detail = engine.retrieve("kb", "How much did the viaduct cost?", budget=120)
    assert detail.nodes[0].layer == 0 or "forty thousand" in detail.nodes[0].text
    assert any("forty thousand" in n.text for n in detail.nodes)


async def test_traversal_mode_and_filters(railway):
    engine, _ = railway
    traversal = engine.retrieve("kb", "When did the last train run?", mode="traversal")
    assert traversal.mode == "traversal" and traversal.nodes
    assert {n.layer for n in traversal.nodes} >= {0}
    leaves_only = engine.retrieve("kb", "When did the last train run?", layers=[0])
    assert leaves_only.nodes and {n.layer for n in leaves_only.nodes} == {0}
    by_doc = engine.retrieve("kb", "When did the last train run?", documents=["railway.md"])
    assert by_doc.nodes and {n.document for n in by_doc.nodes} == {"railway.md"}
    assert engine.retrieve("kb", "trains", documents=["nope.md"]).nodes == []
    with pytest.raises(NotFoundError, match="No document named 'nope.md'"):  # a typo, not 'nothing answers'
        await engine.ask("kb", "trains", documents=["nope.md"])
    with pytest.raises(NotFoundError, match="there is no layer 40"):
        await engine.ask("kb", "trains", layers=[0, 40])
    with pytest.raises(RaptorError):
        engine.retrieve("kb", "x", mode="sideways")


async def test_second_document_gets_cross_document_layer_and_forget_updates_it(railway):
    engine, _ = railway
    await engine.ingest("kb", "bees.md", BEEKEEPING.encode(), added_by="bob")
    kb_id = engine.store.kb_id("kb")
    kb_nodes = [n for n in engine.store.nodes_of_kb(kb_id) if n.kind == "kb"]
    assert kb_nodes
    leaves = [n for n in engine.store.nodes_of_kb(kb_id) if n.kind == "leaf"]
    covered = {
        d
        for n in kb_nodes
        for d in json.loads(
            engine.store.db.execute("SELECT leaf_ids FROM nodes WHERE id = ?", [n.id]).fetchone()[0]
        )
    }
    assert covered == {leaf.id for leaf in leaves}  # the cross-document layer covers both documents
    answer = await engine.ask("kb", "How do beekeepers extract honey?")
    assert any(c.document == "bees.md" for c in answer.citations)

    railway_ids = {n.id for n in engine.store.nodes_of_kb(kb_id) if n.document == "railway.md"}
    removed = await engine.forget("kb", "railway.md")
    assert removed.name == "railway.md"
    remaining = engine.store.nodes_of_kb(kb_id)
    assert not railway_ids & {n.id for n in remaining}
    assert {n.document for n in remaining if n.kind != "kb"} == {"bees.md"}
    assert engine.store.integrity_problems() == []
    assert engine.indexes.check(kb_id) == []
    hits = engine.retrieve("kb", "railway viaduct flood", budget=2000)
    assert all(n.node_id not in railway_ids for n in hits.nodes)
    with pytest.raises(NotFoundError):
        await engine.forget("kb", "railway.md")


async def test_failed_build_leaves_store_and_answers_untouched(railway, tmp_path):
    engine, _ = railway

    class Exploding(ExtractiveSummarizer):
        async def summarize_many(self, requests):
            raise RuntimeError("backend fell over")

    engine._summarizer = Exploding(engine.embedder.count_tokens)
    before = dump(engine.settings.db_path)
    with pytest.raises(RaptorError, match="bees.md"):
        await engine.ingest("kb", "bees.md", BEEKEEPING.encode())
    assert dump(engine.settings.db_path) == before
    assert engine.builds("kb")[0]["status"] == "failed"
    answer = await engine.ask("kb", "Who surveyed the railway?")
    assert "Pennick" in answer.text


async def test_bad_file_is_refused_with_store_unchanged(railway):
    engine, _ = railway
    before = dump(engine.settings.db_path)
    with pytest.raises(IngestError, match="notes.txt"):
        await engine.ingest("kb", "notes.txt", b"\x00\x01\x02binary\x00" * 50)
    with pytest.raises(IngestError):
        await engine.ingest("kb", "empty.md", b"")
    assert dump(engine.settings.db_path) == before


async def test_first_failed_upload_leaves_no_knowledge_base(tmp_path, embedder):
    engine = make_engine(tmp_path, embedder)
    with pytest.raises(IngestError):
        await engine.ingest("fresh", "bad.pdf", b"not a pdf at all")
    assert engine.knowledge_bases() == []
    with pytest.raises(EmptyKnowledgeBaseError):
        await engine.ask("fresh", "anything?")


async def test_index_missing_corrupt_or_stale_is_rebuilt(railway):
    engine, _ = railway
    kb_id = engine.store.kb_id("kb")
    question = "Who led the passengers to the chapel?"
    expected = [n.node_id for n in engine.retrieve("kb", question).nodes]
    bin_path = engine.settings.index_dir / f"kb-{kb_id}.hnsw"

    fresh = Engine(engine.settings, embedder=engine.embedder)
    bin_path.unlink()
    assert [n.node_id for n in fresh.retrieve("kb", question).nodes] == expected
    assert bin_path.exists()

    fresh = Engine(engine.settings, embedder=engine.embedder)
    bin_path.write_bytes(b"garbage" * 10)
    assert fresh.doctor(repair=True).healthy
    assert [n.node_id for n in fresh.retrieve("kb", question).nodes] == expected

    # Stale: another process adds a document; this engine's cached index catches up by node ids.
    other = Engine(engine.settings, embedder=engine.embedder)
    await other.ingest("kb", "bees.md", BEEKEEPING.encode())
    hits = engine.retrieve("kb", "How much honey can a colony store?")
    assert any(n.document == "bees.md" for n in hits.nodes)
    assert engine.indexes.check(kb_id) == []


FLOOD_TALK = [
    Turn("user", "Tell me about the great flood of 1903."),
    Turn("assistant", "It closed the line."),
]


async def test_follow_up_is_condensed_with_history(railway):
    engine, _ = railway
    answer = await engine.ask("kb", "Who led people to safety then?", history=FLOOD_TALK)
    assert answer.query.startswith("Who led people to safety in 1903?") and "flood" in answer.query
    assert "Wren" in answer.text


async def test_a_fresh_question_in_a_conversation_is_not_glued_to_the_last_one(railway):
    engine, _ = railway
    answer = await engine.ask("kb", "How much did the viaduct cost?", history=FLOOD_TALK)
    assert answer.query == "How much did the viaduct cost?" and not answer.rewritten
    assert "forty thousand" in answer.text.split("\n")[1]


async def test_same_input_gives_same_tree(tmp_path, embedder):
    trees = []
    for name in ("a", "b"):
        engine = make_engine(tmp_path / name, embedder)
        await engine.ingest("kb", "railway.md", RAILWAY.encode())
        kb_id = engine.store.kb_id("kb")
        nodes = [(n.layer, n.kind, n.text) for n in engine.store.nodes_of_kb(kb_id)]
        edges = engine.store.db.execute("SELECT parent_id, child_id FROM edges ORDER BY 1, 2").fetchall()
        trees.append((nodes, edges))
        engine.close()
    assert trees[0] == trees[1]


def _node(node_id: int, tokens: int, text: str | None = None, layer: int = 0) -> StoredNode:
    text = text or f"Node number {node_id} says something of its own."
    return StoredNode(
        node_id, 1, 1, "d", layer, "leaf" if layer == 0 else "summary", text, tokens, 1, 0, 1, None, ()
    )


def test_budget_skips_a_node_that_does_not_fit_instead_of_stopping():
    scored = [(_node(1, 50), 0.9), (_node(2, 500), 0.8), (_node(3, 40), 0.7), (_node(4, 20), 0.6)]
    chosen, used = fill_budget(scored, 100)
    assert [n.node_id for n in chosen] == [1, 3] and used == 90


async def test_hnsw_recall_against_exact_search(tmp_path, embedder):
    """ef at its default gives recall >= 0.99 against brute force on 3,000 stored nodes."""
    from raptor_engine.storage.records import NewNode

    engine = make_engine(tmp_path, embedder)
    rng = np.random.default_rng(7)
    centers = rng.normal(size=(30, embedder.dim))
    vectors = centers[rng.integers(0, 30, 3000)] + 0.6 * rng.normal(size=(3000, embedder.dim))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    nodes = [NewNode(i, 0, "leaf", f"n{i}", 5, vectors[i], start=0, end=1) for i in range(3000)]
    doc = {
        "name": "v",
        "sha256": "0" * 64,
        "size": 1,
        "format": "txt",
        "chunks": 3000,
        "layers": 1,
        "tokens": 15000,
    }
    build = {"action": "ingest"}
    kb_id, _ = engine.store.commit_document("vec", doc, nodes, lambda ids: [], build)
    index = engine.indexes.get(kb_id)
    ids, matrix = engine.store.embeddings(kb_id)
    queries = (centers[:20] + 0.6 * rng.normal(size=(20, embedder.dim))).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    found = total = 0
    for q in queries:
        exact = set(ids[np.argsort(-(matrix @ q))[:50]].tolist())
        approx = {node_id for node_id, _ in index.search(q, k=50, ef=engine.settings.hnsw_ef)}
        found += len(exact & approx)
        total += 50
    assert found / total >= 0.99


async def test_collapsed_retrieval_reads_full_rows_a_batch_at_a_time(railway, monkeypatch):
    """Full rows are read a batch at a time, best first, and no more once nothing left fits whole:
    the same context as filling from every candidate, from fewer rows. (The vector ranking: the
    learned one reads its first RERANK candidates up front, to rank them.)"""
    from raptor_engine.query import retrieve
    from raptor_engine.query.retrieve import CANDIDATES

    monkeypatch.setattr(retrieve, "FETCH_BATCH", 4)

    engine, _ = railway
    monkeypatch.setattr(engine.settings, "ranking", "vector")
    kb_id = engine.store.kb_id("kb")
    question = "When did the railway open?"
    vector = engine.embedder.embed([question])[0]
    hits = engine.indexes.get(kb_id).search(vector, k=CANDIDATES, ef=engine.settings.hnsw_ef)
    every = engine.store.nodes_by_ids([i for i, _ in hits])
    expected, _ = fill_budget([(every[i], score) for i, score in hits], 150)
    read: list[int] = []
    original = engine.store.nodes_by_ids

    def recording(ids):
        read.extend(ids)
        return original(ids)

    monkeypatch.setattr(engine.store, "nodes_by_ids", recording)
    context = engine.retrieve("kb", question, budget=150)
    assert [n.node_id for n in context.nodes] == [n.node_id for n in expected] and context.nodes
    assert {n.node_id for n in context.nodes} <= set(read) and len(read) < len(hits)
    ranked = [node_id for node_id, _ in hits]
    assert read == sorted(read, key=ranked.index)  # best candidates first


async def test_every_node_is_stored_with_its_sentences_and_their_tokens(railway):
    """Retrieval reads each candidate's sentences from SQLite instead of splitting and counting them."""
    from raptor_engine.ingest.sentences import decode_spans, sentences_of

    engine, _ = railway
    nodes = engine.store.nodes_of_kb(engine.store.kb_id("kb"))
    assert {n.kind for n in nodes} >= {"leaf", "summary"}
    for node in nodes:
        assert node.sentences is not None
        stored = decode_spans(node.sentences, node.text)
        split = sentences_of(node.text)
        assert [(s.start, s.end, s.fingerprint) for s in stored] == [
            (s.start, s.end, s.fingerprint) for s in split
        ]
        assert [s.tokens for s in stored] == engine.embedder.count_tokens_batch([s.text for s in split])


async def test_nodes_stored_before_sentences_were_retrieve_the_same_context(railway):
    """A database from before m004 has no stored sentences: retrieval splits and counts them itself."""
    from raptor_engine.query import retrieve

    engine, _ = railway
    questions = ["When did the railway open?", "What happened to the line in the end?", "Who built it?"]
    stored = [engine.retrieve("kb", q, budget=400) for q in questions]
    pairs = children_of_summaries(engine)
    shortened = [fill_child_after_summary(engine, summary, child) for summary, child in pairs]
    with engine.store.write() as db:
        db.execute("UPDATE nodes SET sentences = NULL")
    retrieve._split_now.cache_clear()
    older = [engine.retrieve("kb", q, budget=400) for q in questions]
    for a, b in zip(stored, older, strict=True):
        assert [(n.node_id, n.text, n.tokens) for n in a.nodes] == [
            (n.node_id, n.text, n.tokens) for n in b.nodes
        ]
        assert a.tokens_used == b.tokens_used <= 400
    # Whether the questions meet a shortened node depends on the tree the build made (UMAP's numerics
    # differ by CPU), so shortening is checked on each child offered after its summary, which copied
    # some of its sentences: split now from the text, each comes out as it did from stored sentences.
    assert any(kept and kept[0] != child.text for (_, child), kept in zip(pairs, shortened, strict=True))
    assert shortened == [fill_child_after_summary(engine, summary, child) for summary, child in pairs]


def children_of_summaries(engine: Engine) -> list[tuple[StoredNode, StoredNode]]:
    """Each summary with each of its children, whose sentences an extractive summary copies."""
    nodes = {n.id: n for n in engine.store.nodes_of_kb(engine.store.kb_id("kb"))}
    children = engine.store.children([n.id for n in nodes.values() if n.layer > 0])
    return [(nodes[parent], nodes[child]) for parent, ids in children.items() for child in ids]


def fill_child_after_summary(
    engine: Engine, summary: StoredNode, child: StoredNode
) -> tuple[str, int] | None:
    """The child's text and tokens in a context that already holds its summary (None if left out),
    the sentences read as the store has them now."""
    nodes = engine.store.nodes_by_ids([summary.id, child.id])
    chosen, _ = fill_budget(
        [(nodes[summary.id], 1.0), (nodes[child.id], 0.5)], 10_000, engine.embedder.count_tokens_batch
    )
    return next(((n.text, n.tokens) for n in chosen if n.node_id == child.id), None)


async def test_the_index_holds_token_counts_so_a_question_reads_none_from_sqlite(railway, monkeypatch):
    """What fits is decided from counts kept with the index (saved beside it, or read once from an older file)."""
    engine, _ = railway
    kb_id = engine.store.kb_id("kb")
    expected = engine.store.token_counts(kb_id)
    assert engine.indexes.get(kb_id).tokens == expected
    meta_path = engine.indexes._paths(kb_id)[1]
    meta = json.loads(meta_path.read_text())
    assert meta["tokens"] == [expected[i] for i in meta["ids"]]
    del meta["tokens"]  # an index saved before the counts were
    meta_path.write_text(json.dumps(meta))
    engine.indexes._cache.clear()
    assert engine.indexes.get(kb_id).tokens == expected

    def no_reads(ids):
        raise AssertionError(f"read token counts of {len(ids)} nodes from SQLite")

    monkeypatch.setattr(engine.store, "node_tokens", no_reads)
    assert engine.retrieve("kb", "When did the railway open?").nodes


async def test_an_added_document_brings_its_token_counts_into_the_index(railway):
    engine, _ = railway
    kb_id = engine.store.kb_id("kb")
    engine.indexes.get(kb_id)
    await engine.ingest("kb", "bees.md", BEEKEEPING.encode())
    assert engine.indexes.get(kb_id).tokens == engine.store.token_counts(kb_id)
    await engine.forget("kb", "bees.md")
    assert engine.indexes.get(kb_id).tokens == engine.store.token_counts(kb_id)


async def test_umap_is_imported_after_the_chunking_and_before_the_embedding_only_when_a_layer_will_cluster(
    tmp_path, embedder, monkeypatch
):
    """A process that has not warmed up imports umap (~1.5 CPU s) for a document large enough to cluster,
    between its chunking and its embedding (beside the embedding it cost more CPU on two cores); a
    note of two sentences is never clustered and never imports it."""
    from raptor_engine.tree import docbuild

    engine = make_engine(tmp_path, embedder)
    seen: list[str] = []
    starts: list[list[str]] = []
    monkeypatch.setattr(docbuild, "import_umap", lambda: starts.append(list(seen)))
    await engine.ingest("kb", "railway.md", RAILWAY.encode(), progress=lambda e: seen.append(e.stage))
    assert len(starts) == 1 and starts[0][-1] == "chunk" and "embed" not in starts[0]
    await engine.ingest("kb", "note.txt", b"The valve stuck on 3 May. The repair costs 14,800 euros.")
    assert len(starts) == 1


@pytest.mark.parametrize(
    "question",
    ["What is this whole document about?", "What does this document say?", "Give me an overview.", "tl;dr"],
)
async def test_a_question_about_the_whole_that_names_nothing_starts_from_the_top_summaries(railway, question):
    """Such a question's similarities are noise (all within a few hundredths here), so ranking by them
    alone gave leaves or summaries by chance; the summaries come first, highest layer first."""
    engine, _ = railway
    context = engine.retrieve("kb", question, budget=2000)
    top = max(layer.layer for layer in engine.tree_info("kb").layers)
    assert context.nodes[0].layer == top
    layers = [n.layer for n in context.nodes]
    assert layers.index(0) > max(i for i, layer in enumerate(layers) if layer > 0)  # leaves only after


async def test_a_thematic_question_that_names_something_keeps_similarity_order(railway, monkeypatch):
    engine, _ = railway
    question = "Summarize what the viaduct cost the company"
    assert any("forty thousand" in n.text for n in engine.retrieve("kb", question, budget=2000).nodes[:2])
    monkeypatch.setattr(engine.settings, "ranking", "vector")
    context = engine.retrieve("kb", question, budget=2000)
    scores = [n.score for n in context.nodes]
    assert scores == sorted(scores, reverse=True)  # similarity order, not summaries first
    assert any("forty thousand" in n.text for n in context.nodes[:2])


MILL = """# The Tidewater Mill at Orrin Ford

Orrin Ford is a village on a tidal creek where a water mill ground corn for two hundred years. This
history follows the millers from the building of the mill in 1790 to the day the last of them shut
the sluice gate in 1962.

## Agnes Penrose

After the death of her father in 1868, the Millers' Guild appointed Agnes Penrose as head miller of
Orrin Ford. Agnes Penrose was twenty-six, the eldest daughter of the family, and had kept the mill's
accounts since she was fourteen. She ran the mill for thirty-one years. Her foreman for most of that
time was Tobias Quill, a carpenter from the next parish.

In 1871 Agnes Penrose built a second waterwheel on the lower race. She built it because the old wheel
could not keep up with the harvest when the tide turned at night. The new wheel doubled the mill's
output. Silas Brand, a merchant from the coast, bought most of the flour that the mill produced.

## The Flood of 1894

The flood of 1894 tore away the lower race and drowned the road to the village. For six weeks the
mill stood idle while the villagers rebuilt the banks with stone from the old quarry.

## The End of the Mill

The mill closed in 1962, when the last miller, Edwin Penrose, shut the sluice gate for good. The
building is now a museum, and its wheels turn on summer weekends for visitors.
"""


async def test_a_conversation_keeps_its_subject_and_drops_stale_context(tmp_path, embedder):
    """A multi-turn conversation as `raptor chat` and the bot hold it: what each follow-up is
    rewritten to, and what the answers quote first."""
    engine = make_engine(tmp_path, embedder)
    try:
        await engine.ingest("kb", "mill.md", MILL.encode())
        history: list[Turn] = []

        async def ask(question: str):
            answer = await engine.ask("kb", question, history=list(history))
            history.extend([Turn("user", question), Turn("assistant", answer.text)])
            return answer

        first = await ask("Who was Agnes Penrose?")
        # the sentences that say what she was come before those that only mention her
        assert "appointed Agnes Penrose as head miller" in first.text.split("\n")[1] or (
            "Agnes Penrose was twenty-six" in first.text.split("\n")[1]
        )
        built = await ask("What did she build in 1871?")
        assert built.query.startswith("What did Agnes Penrose build in 1871?")
        why = await ask("Why?")
        assert why.query.startswith("Why?") and "Agnes Penrose" in why.query
        # the pronoun is the person asked about, not a name an answer quoted (Tobias Quill, Silas Brand)
        foreman = await ask("Who was her foreman?")
        assert foreman.query.startswith("Who was Agnes Penrose's foreman?")
        assert "Tobias Quill" in foreman.text
        flood = await ask("And what about the flood?")
        assert flood.query == "What about the flood?"  # a new topic: no stale context carried
        assert "1894" in flood.text
        closed = await ask("When did the mill close?")
        assert "1962" in closed.text.split("\n")[1]
    finally:
        engine.close()


async def test_engine_names_with_lone_surrogates_read_as_replacement_characters(tmp_path, embedder):
    """A caller of the engine API (not the CLI, which cleans names) may pass a knowledge base name or
    `added_by` made from bytes that are not UTF-8 ('\\udcff'): SQLite cannot store a lone surrogate, so
    every call failed with UnicodeEncodeError. They read as U+FFFD, the same name on every call."""
    engine = make_engine(tmp_path, embedder)
    try:
        added = await engine.ingest("kb\udcff", "railway.md", RAILWAY.encode(), added_by="me\udc80")
        assert added.status == "added"
        assert [(d.name, d.added_by) for d in engine.documents("kb\udcfe")] == [("railway.md", "me\ufffd")]
        assert engine.tree_info("kb\udcff").kb == "kb\ufffd"
        answer = await engine.ask("kb\udcff", "Who led the passengers to safety in 1903?")
        assert answer.citations
        assert (await engine.forget("kb\udcff", "railway.md")).name == "railway.md"
        assert engine.delete_kb("kb\udcff")
    finally:
        engine.close()


async def test_an_index_folder_this_user_may_not_write_leaves_adds_and_questions_working(railway, monkeypatch):
    """An indices folder owned by another user (the data directory copied, or `sudo raptor` run in it
    once): hnswlib says nothing when it cannot create its file, so the rename after it failed with 'No such
    file or directory' after the document was committed, and every later question failed the same way.
    The index is derived: an add and a question use it from memory; doctor, whose job is the files, says
    in one sentence that it cannot write them."""
    import errno
    from contextlib import contextmanager

    from raptor_engine.errors import StorageError
    from raptor_engine.storage import index as index_module

    engine, _ = railway

    @contextmanager
    def unwritable(path: Path):
        raise PermissionError(errno.EACCES, "Permission denied", str(path.with_name(f".{path.name}.x.tmp")))
        yield path

    monkeypatch.setattr(index_module, "writing", unwritable)
    added = await engine.ingest("kb", "bees.md", BEEKEEPING.encode())
    assert added.status == "added"
    answer = await engine.ask("kb", "How many frames does a hive hold?")
    assert answer.citations
    engine.indexes._cache.clear()  # as a new process finds the saved index behind the store
    assert (await engine.ask("kb", "Who surveyed the railway?")).citations
    with pytest.raises(StorageError, match=r"The data directory .*indices may not be written by this user"):
        engine.doctor(repair=True)
