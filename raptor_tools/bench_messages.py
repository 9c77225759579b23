"""`raptor bench --messages N`: a channel's history as message documents (ingest/messages.py).

Imports N chat messages (sentences of the varied sample text, a few minutes apart, four authors) in
batches of 500 as `/kb add-messages` does, then measures what sync needs: the time from a deletion to
its text being gone from the store and the index, and from a new message to a question answered from
it; then a bulk delete of 1,000 messages and one author's every message (forget-me), each until no file
under the data directory holds their text. Reported: import seconds, tokens/s, CPU seconds (every thread),
peak RSS of the process, the latencies, and how much of each removal was the scrub of the files. The real embedding model and UMAP run; the extractive summariser writes the summaries.
"""

from __future__ import annotations

import asyncio
import re
import resource
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from raptor_engine.config import Settings
from raptor_engine.engine import Engine
from raptor_engine.ingest.messages import ChatMessage, MessagePlace

from .bench_ingest import generated_paragraphs

BATCH = 500  # what bot/messages.py puts in the tree at a time
AUTHORS = [(100, "alice"), (101, "bob"), (102, "carol"), (103, "dave")]
PLACE = MessagePlace(400, "general")
NEEDLE = "The gate code for the boathouse is 4417 until the end of the month."
START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)


def chat_history(count: int, minutes: float = 3.0) -> list[ChatMessage]:
    """`count` messages of one or two sentences of varied text, `minutes` apart."""
    sentences = (s for p in generated_paragraphs() for s in re.split(r"(?<=[.!?])\s+", p) if len(s) > 20)
    messages = []
    for i in range(count):
        text = next(sentences) if i % 3 else f"{next(sentences)} {next(sentences)}"
        messages.append(_message(i, text, START + timedelta(minutes=minutes * i)))
    return messages


def _message(index: int, text: str, when: datetime) -> ChatMessage:
    author_id, author = AUTHORS[index % len(AUTHORS)]
    message_id = 1_000_000 + index
    return ChatMessage(
        message_id,
        PLACE.channel_id,
        author_id,
        author,
        when.isoformat(timespec="seconds").replace("+00:00", "Z"),
        f"https://discord.com/channels/300/{PLACE.channel_id}/{message_id}",
        text,
    )


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _text_gone(engine: Engine, kb: str, text: str, node_ids: set[int]) -> bool:
    """Whether no node or message row holds `text` and the index holds none of `node_ids`."""
    with engine.in_space(kb):
        kb_id = engine.store.kb_id(kb)
        in_nodes = engine.store.db.execute(
            "SELECT COUNT(*) FROM nodes WHERE kb_id = ? AND instr(text, ?) > 0", [kb_id, text]
        ).fetchone()[0]
        in_rows = engine.store.db.execute(
            "SELECT COUNT(*) FROM messages WHERE kb_id = ? AND instr(text, ?) > 0", [kb_id, text]
        ).fetchone()[0]
        indexed = node_ids & engine.indexes.get(kb_id).ids
    return not (in_nodes or in_rows or indexed)


def _held_texts(engine: Engine, kb: str) -> list[str]:
    """The text of every message the knowledge base still holds (the sample text repeats sentences)."""
    with engine.in_space(kb):
        kb_id = engine.store.kb_id(kb)
        return [r[0] for r in engine.store.db.execute("SELECT text FROM messages WHERE kb_id = ?", [kb_id])]


async def measure(count: int, data_dir: Path, say: Any = print) -> dict[str, Any]:
    """Import, delete, add: the figures of one run in `data_dir`."""
    engine = Engine(Settings.from_env(data_dir=data_dir))
    kb = "bench-messages"
    try:
        await asyncio.to_thread(engine.warm)
        messages = chat_history(count)
        tokens = sum(engine.embedder.count_tokens_batch([m.text for m in messages]))
        cpu, started = time.process_time(), time.perf_counter()
        for begin in range(0, count, BATCH):
            await engine.add_messages(kb, PLACE, messages[begin : begin + BATCH])
            if begin and begin % 2000 == 0:
                say(f"{begin:,} messages in {time.perf_counter() - started:.0f} s")
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
        documents = len(engine.documents(kb))
        figures: dict[str, Any] = {
            "messages": count,
            "tokens": tokens,
            "documents": documents,
            "import_seconds": round(seconds, 1),
            "import_cpu_seconds": round(cpu_seconds, 1),
            "tokens_per_second": round(tokens / seconds),
            "peak_rss_mb": round(_peak_rss_mb()),
        }
        figures |= await _delete_and_add(engine, kb, messages)
        return figures
    finally:
        engine.close()


def _bytes_gone(data_dir: Path, texts: list[str]) -> bool:
    """Whether no file under the data directory holds any of `texts` (raw bytes: pages, WAL, index files)."""
    needles = [t.encode() for t in texts]
    for path in data_dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if any(needle in data for needle in needles):
                return False
    return True


async def _delete_and_add(engine: Engine, kb: str, messages: list[ChatMessage]) -> dict[str, Any]:
    """Seconds from a deletion to its text gone (tables, index and every file's bytes), for one message, a
    bulk delete of 1,000 and one author's every message (forget-me); and from a new message to an answer
    quoting it. Each removal's share spent scrubbing the files (`Engine._scrub_removed`) is reported."""
    figures: dict[str, Any] = {}
    victim = messages[len(messages) // 2]
    with engine.in_space(kb):
        kb_id = engine.store.kb_id(kb)
        leaves = {n.id for n in engine.store.nodes_of_kb(kb_id) if n.layer == 0 and n.text == victim.text}
    started = time.perf_counter()
    result = await engine.remove_messages(kb, [victim.message_id])
    gone = await asyncio.to_thread(_text_gone, engine, kb, victim.text, leaves)
    figures["deletion_seconds"] = round(time.perf_counter() - started, 2)
    figures["deletion_scrub_seconds"] = round(result.scrub_seconds, 2)
    figures["deleted_text_gone"] = gone and _bytes_gone(engine.settings.data_dir, [victim.text])
    bulk = [m for m in messages[: len(messages) // 3] if m.author_id != AUTHORS[0][0]][:1000]
    figures |= await _timed_removal(engine, kb, "bulk", [m.message_id for m in bulk], None, bulk)
    author = [m for m in messages if m.author_id == AUTHORS[0][0]]
    figures |= await _timed_removal(engine, kb, "forget_me", [], AUTHORS[0][0], author)
    new = _message(len(messages), NEEDLE, START + timedelta(minutes=3.0 * len(messages) + 1))
    started = time.perf_counter()
    await engine.add_messages(kb, PLACE, [new])
    answer = await engine.ask(kb, "What is the gate code for the boathouse?")
    figures["new_message_answerable_seconds"] = round(time.perf_counter() - started, 2)
    figures["new_message_answered"] = "4417" in answer.text
    return figures


async def _timed_removal(
    engine: Engine, kb: str, label: str, ids: list[int], author_id: int | None, removed: list[ChatMessage]
) -> dict[str, Any]:
    """One removal's figures: its messages, seconds (and of them scrubbing), and whether their bytes left
    every file (checked on the longest of their texts that no kept message repeats)."""
    started = time.perf_counter()
    result = await engine.remove_messages(kb, ids, author_id=author_id)
    seconds = time.perf_counter() - started
    kept = "\n".join(await asyncio.to_thread(_held_texts, engine, kb))
    sample = sorted({m.text for m in removed if m.text not in kept}, key=len, reverse=True)[:50]
    return {
        f"{label}_removed": result.removed,
        f"{label}_seconds": round(seconds, 2),
        f"{label}_scrub_seconds": round(result.scrub_seconds, 2),
        f"{label}_text_gone": await asyncio.to_thread(_bytes_gone, engine.settings.data_dir, sample),
    }


def run(count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="raptor-bench-messages-") as scratch:
        return asyncio.run(measure(count, Path(scratch) / "data"))


def render(figures: dict[str, Any]) -> str:
    f = figures
    return "\n".join(
        [
            f"Messages: {f['messages']:,} ({f['tokens']:,} tokens) into {f['documents']} documents in "
            f"{f['import_seconds']} s ({f['tokens_per_second']:,} tokens/s; {f['import_cpu_seconds']} CPU s), "
            f"peak RSS {f['peak_rss_mb']:,} MB",
            f"Deletion to text gone (store, index and every file's bytes): {f['deletion_seconds']} s, "
            f"{f['deletion_scrub_seconds']} s of it scrubbing"
            + ("" if f["deleted_text_gone"] else " (TEXT STILL FOUND)"),
            *[
                f"{what}: {f[f'{key}_removed']:,} messages gone in {f[f'{key}_seconds']} s, "
                f"{f[f'{key}_scrub_seconds']} s of it scrubbing" + ("" if f[f"{key}_text_gone"] else " (TEXT STILL FOUND)")
                for key, what in (("bulk", "Bulk delete"), ("forget_me", "Forget-me (one author)"))
            ],
            f"New message to answered from it: {f['new_message_answerable_seconds']} s"
            + ("" if f["new_message_answered"] else " (NOT IN THE ANSWER)"),
        ]
    )
