"""Plain data shared by the RAPTOR steps (load, chunk, embed, cluster, summarise, build, retrieve, answer).

Kept free of behaviour so every module, the CLI and the bot can import it without pulling in models.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # annotations only: the parse worker imports this module without numpy
    import numpy as np


@dataclass(frozen=True)
class Section:
    """A stretch of a loaded document's text that shares one page and one heading path.

    `start`/`end` are character offsets into `LoadedDocument.text`; sections are in order,
    do not overlap, and together cover the text.
    """

    start: int
    end: int
    page: int | None = None  # 1-based PDF page; None for formats without pages
    heading: tuple[str, ...] = ()  # heading path, outermost first; () where the format has none


@dataclass
class LoadedDocument:
    """The text of one uploaded file, with where each part of it came from."""

    name: str
    text: str
    sections: list[Section]
    format: str  # "txt" | "md" | "pdf" | "docx" | "html"


@dataclass
class Chunk:
    """About 100 tokens of whole sentences; `text == doc.text[start:end]`."""

    index: int
    text: str
    start: int
    end: int
    tokens: int
    page: int | None = None
    heading: tuple[str, ...] = ()


@dataclass
class Clustering:
    """Groups of node positions for one layer. A position may sit in several groups (soft membership)."""

    clusters: list[list[int]]
    method: str  # "gmm" | "single" | "contiguous" | "distinct" (grouped by duplicate embeddings)
    notes: list[str] = field(default_factory=list)


@dataclass
class SummaryRequest:
    """One cluster to summarise: its children's texts in source order, and their embeddings."""

    texts: list[str]
    embeddings: np.ndarray
    max_tokens: int


@dataclass
class Summary:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False


class Summarizer(Protocol):
    """Turns clusters into summaries. Async and batched so an LLM backend can run a layer concurrently."""

    name: str
    input_budget: int  # most tokens of children text one request may carry

    async def summarize_many(self, requests: list[SummaryRequest]) -> list[Summary]: ...


@dataclass
class Turn:
    """One message of a conversation, for follow-up questions."""

    role: str  # "user" | "assistant"
    content: str


@dataclass
class ContextNode:
    """A node chosen for the answer's context."""

    node_id: int
    layer: int
    document: str | None  # None for knowledge-base (cross-document) summaries
    score: float
    text: str
    tokens: int
    leaf_count: int
    page: int | None = None
    heading: tuple[str, ...] = ()
    start: int | None = None
    end: int | None = None
    # a cross-document summary's documents with the leaves it covers in each, most leaves first
    drawn_from: tuple[tuple[str, int], ...] = ()


@dataclass
class RetrievedContext:
    nodes: list[ContextNode]
    tokens_used: int
    budget: int
    mode: str  # "collapsed" | "traversal"
    query: str

    def nodes_per_layer(self) -> dict[int, int]:
        counts: dict[int, int] = {}
        for node in self.nodes:
            counts[node.layer] = counts.get(node.layer, 0) + 1
        return dict(sorted(counts.items()))


@dataclass
class AnswerDraft:
    """What an answerer writes: text whose [n] markers point at 1-based positions in the context."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Answerer(Protocol):
    name: str

    async def answer(self, question: str, context: list[ContextNode], history: list[Turn]) -> AnswerDraft: ...

    async def condense(self, question: str, history: list[Turn]) -> str:
        """A standalone query for retrieval from a follow-up question and the conversation so far."""
        ...


@dataclass
class Citation:
    marker: int  # the [n] in the answer text
    node_id: int
    layer: int
    document: str | None
    score: float
    leaf_count: int
    page: int | None = None
    heading: tuple[str, ...] = ()
    drawn_from: tuple[tuple[str, int], ...] = ()  # for a cross-document summary: (document, leaves)

    def to_dict(self) -> dict[str, Any]:
        return {
            "marker": self.marker,
            "node_id": self.node_id,
            "layer": self.layer,
            "document": self.document,
            "score": round(self.score, 4),
            "leaf_count": self.leaf_count,
            "page": self.page,
            "section": " > ".join(self.heading) or None,
            "documents": [{"name": name, "leaves": leaves} for name, leaves in self.drawn_from] or None,
        }


@dataclass
class Answer:
    question: str
    query: str  # what retrieval searched for (the condensed question for a follow-up)
    text: str
    citations: list[Citation]
    context: RetrievedContext
    backend: str
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "query": self.query,
            "answer": self.text,
            "citations": [c.to_dict() for c in self.citations],
            "context": {
                "mode": self.context.mode,
                "tokens_used": self.context.tokens_used,
                "budget": self.context.budget,
                "nodes_per_layer": {str(k): v for k, v in self.context.nodes_per_layer().items()},
                "nodes": [
                    {
                        "node_id": n.node_id,
                        "layer": n.layer,
                        "document": n.document,
                        "score": round(n.score, 4),
                        "tokens": n.tokens,
                        "leaf_count": n.leaf_count,
                    }
                    for n in self.context.nodes
                ],
            },
            "backend": self.backend,
            "usage": {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens},
        }


@dataclass
class Progress:
    """A progress report from a long build. Callbacks may receive it on a worker thread."""

    stage: str  # "load" | "chunk" | "embed" | "cluster" | "summarise" | "store" | "index" | "done"
    done: int = 0
    total: int = 0
    layer: int = 0
    summaries: int = 0
    message: str = ""

    def describe(self) -> str:
        parts = [f"{self.stage} {self.done}/{self.total}" if self.total else self.stage]
        if self.layer:
            parts.append(f"layer {self.layer}")
        if self.summaries:
            parts.append(f"{self.summaries} summaries")
        return " · ".join(parts)


ProgressCallback = Callable[[Progress], None]
