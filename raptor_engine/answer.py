"""Answers from retrieved context, and the citation mapping every answerer shares.

The default `ExtractiveAnswerer` needs no model and no key: it quotes the context sentences most
similar to the question (by the same embedder that built the tree), each followed by the [n] of
the context block it came from. An LLM answerer (llm.py) writes prose with the same markers.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from .chunk import split_sentences
from .embed import Embedder
from .types import AnswerDraft, Citation, ContextNode, Turn

MARKER = re.compile(r"\[(\d{1,4})\]")
# What a document writes that looks like a citation marker: [2], [ 2 ], [12], [2, 3], [2-4], [^2], 【2】,
# in any bracket pair a reader or a model might take for one, with any script's digits.
DOCUMENT_MARKER = re.compile(
    r"[\[【〔［〚⟦]\s*(\^?\s*\d+(?:\s*(?:[,;]|[-‐‑–—]|and|&)\s*\d+)*)\s*[\]】〕］〛⟧]"
)
QUOTES = 3  # sentences the extractive answer quotes
MAX_SENTENCES = 200  # sentences of context considered, best nodes first
MIN_SENTENCE_CHARS = 12
DOCUMENTS_SHOWN = 3  # documents named for a cross-document summary; the rest are counted


def neutralise_markers(text: str) -> str:
    """A document's own bracketed numbers in full-width brackets ("[2]" -> "［2］"): still visibly there
    for a reader, but never an answer's citation marker, whoever copies them (a quote or a model)."""
    return DOCUMENT_MARKER.sub(lambda m: f"［{m.group(1)}］", text)


def neutralise_context(context: list[ContextNode]) -> list[ContextNode]:
    """The context with every node's text passed through `neutralise_markers`, for an answerer."""
    return [replace(node, text=neutralise_markers(node.text)) for node in context]


def describe_documents(
    drawn_from: tuple[tuple[str, int], ...], shown: int = DOCUMENTS_SHOWN, name: Callable[[str], str] = str
) -> str:
    """Where a cross-document summary comes from, e.g. "3 documents: a.pdf, b.md, c.txt" (most leaves
    first; "and 2 more" past `shown`), or just "a.pdf" when its cluster holds one document's tops.
    `name` formats each file name (the bot makes it inert)."""
    if not drawn_from:
        return "all documents"
    if len(drawn_from) == 1:
        return name(drawn_from[0][0])
    names = ", ".join(name(document) for document, _ in drawn_from[:shown])
    more = len(drawn_from) - shown
    return f"{len(drawn_from)} documents: {names}" + (f" and {more} more" if more > 0 else "")


def map_citations(text: str, context: list[ContextNode]) -> tuple[str, list[Citation]]:
    """Renumber valid [n] markers (1-based positions in `context`) in order of first use; drop the rest.

    A marker pointing at nothing ([0], [99]) is removed from the text rather than shown to a reader.
    """
    renumber: dict[int, int] = {}
    citations: list[Citation] = []

    def replace(match: re.Match[str]) -> str:
        position = int(match.group(1))
        if not 1 <= position <= len(context):
            return ""
        if position not in renumber:
            renumber[position] = len(renumber) + 1
            node = context[position - 1]
            citations.append(
                Citation(
                    marker=renumber[position],
                    node_id=node.node_id,
                    layer=node.layer,
                    document=node.document,
                    score=node.score,
                    leaf_count=node.leaf_count,
                    page=node.page,
                    heading=node.heading,
                    drawn_from=node.drawn_from,
                )
            )
        return f"[{renumber[position]}]"

    cleaned = MARKER.sub(replace, text)
    cleaned = re.sub(r"(\[\d+\])(?:\s*\1)+", r"\1", cleaned)  # "[1][1]" -> "[1]"
    cleaned = re.sub(r"[ \t]+([.,;:!?])", r"\1", cleaned)
    cleaned = re.sub(r"[ \t]{2,}", " ", cleaned).strip()
    return cleaned, citations


def _sentences(context: list[ContextNode]) -> list[tuple[int, str]]:
    """(1-based block, sentence) pairs from the context, best blocks first."""
    out: list[tuple[int, str]] = []
    for position, node in enumerate(context, start=1):
        for start, end in split_sentences(node.text):
            sentence = " ".join(node.text[start:end].split())
            if len(sentence) >= MIN_SENTENCE_CHARS:
                out.append((position, sentence))
            if len(out) >= MAX_SENTENCES:
                return out
    return out


class ExtractiveAnswerer:
    """Quotes the most relevant sentences of the context, each with its block's [n]."""

    name = "extractive"

    def __init__(self, embedder: Embedder, quotes: int = QUOTES):
        self.embedder = embedder
        self.quotes = quotes

    def _answer_sync(self, question: str, context: list[ContextNode]) -> AnswerDraft:
        candidates = _sentences(context)
        if not candidates:
            return AnswerDraft("The documents hold nothing that answers this question.")
        vectors = self.embedder.embed([question, *[s for _, s in candidates]])
        scores = vectors[1:] @ vectors[0]
        picked: list[int] = []
        for i in np.argsort(-scores, kind="stable"):
            if all(candidates[i][1] != candidates[j][1] for j in picked):
                picked.append(int(i))
            if len(picked) == self.quotes:
                break
        lines = [f"“{candidates[i][1]}” [{candidates[i][0]}]" for i in picked]
        return AnswerDraft("From the documents:\n" + "\n".join(f"- {line}" for line in lines))

    async def answer(self, question: str, context: list[ContextNode], history: list[Turn]) -> AnswerDraft:
        """Quotes carry the document's bracketed numbers neutralised, so only the answerer's [n] are markers."""
        return await asyncio.to_thread(self._answer_sync, question, neutralise_context(context))

    async def condense(self, question: str, history: list[Turn]) -> str:
        """Without a model, a follow-up is searched together with the previous question."""
        previous = [t.content for t in history if t.role == "user"]
        return f"{previous[-1]} {question}" if previous else question
