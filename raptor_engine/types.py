"""Plain data shared by the RAPTOR steps (load, chunk, embed, cluster, summarise, build, retrieve, answer).

Kept free of behaviour so every module, the CLI and the bot can import it without pulling in models.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # annotations only: the parse worker imports this module without numpy
    import numpy as np


def counted(number: int, singular: str, plural: str = "") -> str:
    """A count in words, as the CLI, the bot and the tree picture say it: '1 layer', '2 leaves', '20,000 nodes'."""
    return f"{number:,} {singular if number == 1 else plural or singular + 's'}"


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
    # "txt" | "md" | "pdf" | "docx" | "odt" | "epub" | "html" | "subtitles" (.vtt, .srt) | "csv" (.csv, .tsv)
    # | "email" (.eml) | "notebook" (.ipynb) | "code" (source and configuration files) | "log" (`load.SUPPORTED_EXTENSIONS`)
    format: str
    # what the person who uploaded it should be told about how it was read ("2 cues ... were skipped")
    notices: tuple[str, ...] = ()


PageMarks = tuple[tuple[int, int], ...]  # (offset in a text, page that starts there), offsets rising


def page_range(marks: PageMarks, start: int, end: int) -> tuple[int, int] | None:
    """First and last page of text[start:end] from its page marks; None when the text has no pages."""
    if not marks:
        return None
    first = last = marks[0][1]
    for offset, page in marks:
        if offset <= start:
            first = page
        if offset < max(end, start + 1):
            last = page
    return first, max(first, last)


def pages_label(first: int | None, last: int | None = None) -> str | None:
    """'p. 4', or 'pp. 3-4' for text that crosses a page break; None without a page."""
    if first is None:
        return None
    return f"pp. {first}-{last}" if last is not None and last != first else f"p. {first}"


@dataclass
class Chunk:
    """About 100 tokens of whole sentences; `text == doc.text[start:end]`.

    `page` is the page the chunk starts on; `page_marks` says where in `text` each page begins,
    so a sentence after a page break is cited with its own page.
    """

    index: int
    text: str
    start: int
    end: int
    tokens: int
    page: int | None = None
    heading: tuple[str, ...] = ()
    page_marks: PageMarks = ()
    code: bool = False  # wholly inside a block of code, with no fence to tell it by (`chunk.code_lines`)


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
    code: list[bool] = field(default_factory=list)  # for each text: a leaf wholly of code (`Chunk.code`)


@dataclass
class Summary:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    # An extractive summary's provenance: tokens copied from each child, by the child's position in the
    # request. Empty for new text (an LLM's), which only the model can embed.
    copied: dict[int, int] = field(default_factory=dict)


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


@dataclass(frozen=True)
class MessageRef:
    """Where a leaf of a chat-message document comes from: the message, who wrote it, when, its link."""

    message_id: int
    author: str
    created_at: str  # ISO 8601, UTC
    url: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


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
    page_marks: PageMarks = ()  # where each page begins in `text` (leaves of paged documents)
    message: MessageRef | None = None  # a leaf of a chat-message document: the message it holds
    # a leaf's sentences left out of `text` because the context holds them in another node (a summary's
    # copy): (where in `text` it stood, its sentence key), so that copy can be read in its place
    held_elsewhere: tuple[tuple[int, str], ...] = ()
    # a leaf that opens / ends its document: set for a follow-up going back or on ('before that?',
    # 'and then?') only, so its answer can say there is nothing before or after it
    opens_document: bool = False
    ends_document: bool = False
    code: bool = False  # a leaf wholly inside a block of code (`Chunk.code`): every line of it is code
    # a node of a file that a later file of the same name follows (posted again with new content)
    superseded: bool = False
    # a leaf of a table too big to read whole for a question over every row (`Engine._with_whole_table`)
    table_too_big: bool = False

    def pages(self, start: int = 0, end: int | None = None) -> tuple[int, int] | None:
        """First and last page of text[start:end] (all of it by default); None without pages."""
        found = page_range(self.page_marks, start, len(self.text) if end is None else end)
        if found is None and self.page is not None:
            return self.page, self.page
        return found


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
    """What an answerer writes: text whose [n] markers point at 1-based positions in the context.

    `pages` is set by an answerer that quotes: node id -> the first and last page of the sentences
    it quoted from that node, so the citation names the quoted sentence's page, not the node's first.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    pages: dict[int, tuple[int, int]] = field(default_factory=dict)
    note: str = ""  # one sentence shown under the text, e.g. why a streamed answer stops short


# Called with a streamed answer's text so far; answers whether any of it is visible to the reader yet
# (a stream broken before anything was shown is sent again, one broken after is kept as it is).
StreamCallback = Callable[[str], Awaitable[bool]]
# Called with the whole text of an answer shown so far; each call's text begins with the previous one's.
TextCallback = Callable[[str], Awaitable[None]]


class Answerer(Protocol):
    """Writes an answer from the context. One whose text is its own words (a model) sets a class
    attribute `writes_prose = True`: the engine then checks each sentence against the context
    (query/support.py); one that quotes the context does not need it."""

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
    page_end: int | None = None  # the last page when the cited text crosses a page break
    message: MessageRef | None = None  # a leaf of a chat-message document: the message it holds
    # "cited": the answerer gave this marker; "matched": the support check found the node supports a
    # sentence the answerer left uncited (query/support.py)
    kind: str = "cited"

    @property
    def pages_label(self) -> str | None:
        """'p. 4' or 'pp. 3-4' (None without a page)."""
        return pages_label(self.page, self.page_end)

    def to_dict(self) -> dict[str, Any]:
        return {
            "marker": self.marker,
            "node_id": self.node_id,
            "layer": self.layer,
            "document": self.document,
            "score": round(self.score, 4),
            "leaf_count": self.leaf_count,
            "page": self.page,
            "page_end": self.page_end if self.page_end is not None else self.page,
            "section": " > ".join(self.heading) or None,
            "documents": [{"name": name, "leaves": leaves} for name, leaves in self.drawn_from] or None,
            "kind": self.kind,
        } | ({"message": self.message.to_dict()} if self.message else {})


@dataclass(frozen=True)
class WrongCitation:
    """A marker the answerer gave to a sentence its node does not support."""

    marker: int  # the [n] in the answer text
    sentence: str


@dataclass
class Answer:
    question: str
    query: str  # what was answered: the standalone rewrite of a follow-up, else the question
    text: str
    citations: list[Citation]
    context: RetrievedContext
    backend: str
    # what retrieval searched, when not `query` ("" when it was): a long message's questions, without the
    # file names it asks by; the "Searched as" line shows this, so it shows what found the passages
    searched: str = ""
    shortened_from: int = 0  # the question's length when it was longer than the engine searches (its note says so)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    note: str = ""  # one sentence shown under the text, e.g. why a streamed answer stops short
    # What the support check (query/support.py) found in a written answer; an answer of quotes is not checked.
    checked: bool = False
    unsupported: list[str] = field(default_factory=list)  # sentences nothing in the context supports
    wrong_citations: list[WrongCitation] = field(default_factory=list)
    # False when the answer says the documents do not answer the question: the extractive answer's lead
    # line ("the closest passages are:"), or a model's reply opening so (query/support.py, says_not_answered);
    # also for a reply asking for a question instead ("what is the?": engine.UNANSWERED_ACTS)
    answered: bool = True
    # For 'is that true?': the last answer's claims that were looked for in the documents (query/verify.py)
    verified: list[str] = field(default_factory=list)

    @property
    def has_context(self) -> bool:
        """Whether the answer stands on retrieved text (not so for a reply to 'thanks!' or 'hello')."""
        return bool(self.context.nodes)

    @property
    def rewritten(self) -> bool:
        """Whether the question was searched as written otherwise: a follow-up as a standalone question, a
        mistyped word as the documents spell it."""
        return self.query != self.question

    @property
    def searched_text(self) -> str:
        """Exactly the text retrieval searched."""
        return self.searched or self.query

    @property
    def searched_as(self) -> str:
        """The line that says what was looked for, shown under the answer: the claims a check ('is that
        true?') looked for, else exactly the text searched; "" for a question searched as it was asked."""
        if self.verified:
            claims = " \u00b7 ".join(f"\u201c{claim}\u201d" for claim in self.verified)
            return f"Checked against the documents: {claims}"
        shown = self.searched_text != self.question or self.shortened_from
        return f"Searched as: {self.searched_text}" if shown else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "query": self.query,
            "searched": self.searched_text,
            "shortened_from": self.shortened_from,
            "rewritten": self.rewritten,
            "verified": self.verified,
            "answer": self.text,
            "answered": self.answered,
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
            "support": {
                "checked": self.checked,
                "unsupported": list(self.unsupported),
                "wrong_citations": [{"marker": w.marker, "sentence": w.sentence} for w in self.wrong_citations],
            },
        } | ({"note": self.note} if self.note else {})


@dataclass
class Progress:
    """A progress report from a long build. Callbacks may receive it on a worker thread."""

    stage: str  # "wait" | "load" | "chunk" | "embed" | "cluster" | "summarise" | "store" | "index" | "done"
    done: int = 0
    total: int = 0
    layer: int = 0
    summaries: int = 0
    message: str = ""

    def describe(self) -> str:
        """One line for a progress bar or the bot's status message ("embed 40/120 · layer 0")."""
        if self.stage == "wait" and self.message:  # the reason is the whole news: no counts to show
            return f"waiting, {self.message}"
        parts = [f"{self.stage} {self.done}/{self.total}" if self.total else self.stage]
        if self.layer:
            parts.append(f"layer {self.layer}")
        if self.summaries:
            parts.append(f"{self.summaries} summaries")
        return " · ".join(parts)


ProgressCallback = Callable[[Progress], None]
