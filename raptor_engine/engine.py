"""The engine: the one API the CLI, the bot and the evaluation call.

It wires the RAPTOR steps together (load -> chunk -> embed -> cluster -> summarise -> build ->
store -> index; retrieve -> answer), keeps heavy work off the caller's event loop, and serialises
builds per knowledge base while questions go on being answered from the last complete tree.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import hashlib
import logging
import re
import sqlite3
import threading
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .config import Settings
from .errors import (
    IngestError,
    LimitError,
    NotFoundError,
    RaptorError,
    damaged_store,
    is_damaged_database,
    storage_error,
)
from .ingest.budget import BuildBudget, current_budget
from .ingest.chunk import split_sentences
from .ingest.load import plain_letters, safe_filename, strip_unsafe
from .ingest.messages import (
    MESSAGE_FORMAT,
    ChatMessage,
    MessagePlace,
    PartPlan,
    ReusingEmbedder,
    clean_text,
    message_chunks,
    messages_sha,
    plan_additions,
)
from .ingest.parse_worker import ParseStats, WorkerLimits, discard_spare, start_spare
from .ingest.sentences import THEMATIC, content_terms, in_bigrams
from .query.answer import (
    FOUND,
    ExtractiveAnswerer,
    SentenceVectors,
    cite_pages,
    map_citations,
    neutralise_context,
)
from .query.asked import fit_question, searched_part, without_named_files
from .query.compared import chosen, compared_times, which_more
from .query.followup import (
    DOCUMENT_NOUNS,
    QUOTE_AND_BLOCK,
    TITLES,
    TURNS_CONSIDERED,
    WEAK_MATCH,
    Onward,
    chooses,
    names_in,
    onward_ask,
    other_one_as_document,
    quotes_in,
    says_the_other,
    split_standalone,
    standalone_question,
    subject_terms,
    through_exchange,
    unanswered_lead,
)
from .query.ranker import ranker_for
from .query.respell import respelled
from .query.retrieve import (
    ELISION,
    RANKINGS,
    TRIM,
    SentenceJudge,
    allowed_ids,
    collapsed_tree,
    context_node,
    tree_traversal,
)
from .query.smalltalk import (
    REPLIES,
    SAID_OF_NOTHING,
    SOURCES_CHANGED,
    Act,
    asks_who_said,
    chosen_citations,
    cited_marker,
    documents_reply,
    names_nothing,
    same_answer,
    small_talk_act,
    sources_reply,
    strip_small_talk,
    who_said_reply,
    without_small_talk,
)
from .query.support import SupportCheck, SupportIndex, check_answer, label_citations, says_not_answered
from .query.tables import (
    LISTS_COUNTED_ROWS,
    MAX_WHOLE_TABLE_CHARS,
    MAX_WHOLE_TABLE_ROWS,
    asks_which_rows,
    asks_whole_table,
    holds_rows,
    names_row_values,
    rows_in,
    table_leaf,
)
from .query.verdict import CHECKS_LAST_ANSWER, settled, unsaid
from .query.verify import (
    MAX_CLAIMS,
    NOTHING_TO_CHECK,
    UNSETTLED,
    answered_nothing,
    check_reply,
    claim_batches,
    claims_of,
    last_answer,
)
from .storage.archive import abandoned_imports
from .storage.files import keep_cache_private
from .storage.index import IndexManager, extend_hnsw, new_hnsw
from .storage.llm_cache import SummaryCache
from .storage.message_store import MessageDocumentWrite
from .storage.records import DocumentInfo, NewNode, StaleTreeError, StoredNode, StoredTop
from .storage.removals import Removal, record_removal
from .storage.spaces import DB_NAME, Space, Spaces, migrate_to_spaces, space_dir
from .storage.store import Store
from .storage.writers import WriterGate
from .tree.build import BuiltTree, Summarized, build_kb_layer
from .tree.cluster import use_compile_cache
from .tree.docbuild import DocumentTree, build_document, build_trees, check_token_bounds, parse_limits
from .tree.embed import Embedder
from .tree.model_check import ModelCheck
from .tree.stages import StageClock
from .tree.summarize import ExtractiveSummarizer
from .tree.treeplot import plan_picture, render_png
from .types import (
    Answer,
    AnswerDraft,
    Answerer,
    Chunk,
    ContextNode,
    Progress,
    ProgressCallback,
    RetrievedContext,
    Summarizer,
    TextCallback,
    Turn,
)

if TYPE_CHECKING:
    from .workers import BuildCluster

log = logging.getLogger(__name__)

MODES = ("collapsed", "traversal")
MAX_QUESTION_CHARS = 2000  # a longer question is searched shortened to what it asks (`fit_question`), and told so
MAX_ASKED_CHARS = 10_000  # a longer one is refused: more than two of Discord's longest messages
MAX_COMMIT_ATTEMPTS = 5
CITED_LOOKUPS = 8  # the nodes a quote's words find, among which its leaf is looked for
MAX_QUOTES_TRACED = 6  # the last answer's quotes looked up for the one document a follow-up's 'it' means
# what a follow-up's rewrite still leans on the last answer with ('who wrote it?', 'when was that written?')
_POINTS_BACK = re.compile(r"\b(?:it|its|this|that)\b", re.IGNORECASE)
_DOCUMENT_WORDS = rf"({'|'.join(DOCUMENT_NOUNS)})"
_THE_OTHER = re.compile(rf"\bthe other {_DOCUMENT_WORDS}\b", re.IGNORECASE)
# 'What did the second report recommend?': a document by its place among the knowledge base's documents
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "fifth": 5, "5th": 5}
_THE_NTH = re.compile(rf"\bthe ({'|'.join(_ORDINALS)}|last) {_DOCUMENT_WORDS}\b", re.IGNORECASE)
# 'the 2021 report', 'the Q3 review', 'the 2019 one': a document named by a year or a label its title holds
_LABEL = r"(1[0-9]{3}|20[0-9]{2}|[A-Za-z]{1,2}[0-9]{1,2})"
_LABELLED_WORDS = _DOCUMENT_WORDS.replace(")", "|review|minutes|meeting|accounts|one)")
_THE_LABELLED = re.compile(rf"\bthe {_LABEL} {_LABELLED_WORDS}\b", re.IGNORECASE)
# 'What did the committee agree in Q2?': a label of letters and a number (no bare year: 'in 1894' is a
# time the text tells of, not a document) names a document after 'in' as well
_IN_LABEL = re.compile(r"\s+(?:in|for|during)\s+(?:the\s+)?([A-Za-z]{1,2}[0-9]{1,2})\b(?![-'\u2019])", re.IGNORECASE)
MAX_TITLE_CHARS = 200  # the most of a document's first line read as its title
NAME_LOOKUPS = 8  # the nodes a name finds, whose sentences show its gender to a follow-up's he/she
MAX_SAID_CHARS = 8_000  # the most of those sentences read for one name
_POSSESSIVE_END = re.compile(r"['\u2019]s$")
MAX_NAMES_MOVED = 4  # the most names of a question moved to another document looked up there
# A UTF-16 half with no other half: what Python makes of a byte that is not UTF-8 in a command-line
# argument or stdin ('\udcff'), and what JSON's "\ud800" decodes to.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def readable_text(text: str) -> str:
    """`text` with each lone surrogate as U+FFFD: the tokenizer and SQLite refuse them, so a question
    typed in a terminal of another encoding failed with "Unexpected TypeError" instead of an answer."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def shown_text(text: str) -> str:
    """Text a user typed that is stored and shown again (a question, a turn of its conversation, a
    knowledge base's name): readable, without control characters (a terminal escape would run when shown)."""
    return strip_unsafe(readable_text(text))


# The space the current Engine call works in (see `_in_space`); copied into threads by asyncio.to_thread.
_current_space: contextvars.ContextVar[tuple[Spaces, Space] | None] = contextvars.ContextVar(
    "raptor_space", default=None
)


def _in_space(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run an Engine method whose first argument is a knowledge base name against that knowledge base's
    space: inside it (and in the threads it starts) `self.store` and `self.indexes` are that space's. The
    name is read as `readable_text` reads it (SQLite cannot store a lone surrogate, so a name made from bytes
    that are not UTF-8 failed with UnicodeEncodeError), as the CLI and the bot already pass it."""
    if asyncio.iscoroutinefunction(method):

        @functools.wraps(method)
        async def run_async(self: Engine, kb: str, *args: Any, **kwargs: Any) -> Any:
            kb = readable_text(kb)
            with self.in_space(kb):
                return await method(self, kb, *args, **kwargs)

        return run_async

    @functools.wraps(method)
    def run(self: Engine, kb: str, *args: Any, **kwargs: Any) -> Any:
        kb = readable_text(kb)
        with self.in_space(kb):
            return method(self, kb, *args, **kwargs)

    return run


class EmptyKnowledgeBaseError(RaptorError):
    """Asked a question of a knowledge base with no documents."""


# Replies that ask the user for a question instead of answering one ("what is the?", "???", "where does
# it say that?" before any answer): `--json` and the bot say `answered: false` for them.
UNANSWERED_ACTS = frozenset({Act.VAGUE, Act.UNCLEAR, Act.SOURCES, Act.TRANSLATE, Act.REWORD})


class QuestionTimeoutError(RaptorError):
    """A question was not answered within RAPTOR_QUESTION_TIMEOUT seconds."""


class _StoredText(Exception):
    """An upload's text is a document stored already (found once it is read): no build, a duplicate."""

    def __init__(self, document: DocumentInfo) -> None:
        super().__init__(document.name)
        self.document = document


@dataclass
class IngestResult:
    status: str  # "added" | "duplicate"
    document: DocumentInfo
    chunks: int = 0
    layers: int = 0
    nodes: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    stage_seconds: dict[str, float] = field(default_factory=dict)  # by build stage (stages.StageClock)
    # for the person who added it: how the file was read ("2 cues skipped: ..."), shown by the CLI and bot
    notices: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["document"] = self.document.to_dict()
        return out


@dataclass
class MessagesResult:
    """What adding or removing chat messages changed (`Engine.add_messages`, `Engine.remove_messages`)."""

    added: int = 0  # messages new to the knowledge base
    edited: int = 0  # stored messages whose text changed
    removed: int = 0  # messages taken out
    unchanged: int = 0  # messages given that were stored as they are, or had no text
    documents: list[str] = field(default_factory=list)  # the message documents written
    removed_documents: int = 0  # message documents left empty, so dropped
    removed_nodes: list[int] = field(default_factory=list)  # nodes that went (their text may have quoted it)
    tainted_nodes: list[int] = field(default_factory=list)  # of those, the ones that held or summarised it
    nodes: int = 0
    seconds: float = 0.0
    scrub_seconds: float = 0.0  # of `seconds`, spent leaving no removed text in the files (`_scrub_removed`)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _recorded(kb: str, **what: Any) -> Callable[[Any, list[int], dict[int, str]], None]:
    """The store's in-transaction hook that records a removal (`record_removal`: in a file with the bot's
    tables, whoever removes), given the nodes that went and those of them that held or summarised the
    removed text."""

    def within(db: Any, gone: list[int], tainted: dict[int, str]) -> None:
        record_removal(db, Removal(kb, gone_nodes=tuple(gone), tainted_nodes=tuple(sorted(tainted)), **what))

    return within


def _offset_keys(nodes: list[NewNode], base: int) -> list[NewNode]:
    """A tree's node keys moved by `base`, so several trees committed at once have distinct keys."""
    for node in nodes:
        node.key += base
        node.children = [child + base for child in node.children]
    return nodes


@dataclass
class LayerInfo:
    layer: int
    kind: str  # "leaf" | "summary" | "kb"
    nodes: int
    tokens: int


@dataclass
class TreeInfo:
    kb: str
    documents: int
    layers: list[LayerInfo]

    @property
    def nodes(self) -> int:
        return sum(layer.nodes for layer in self.layers)

    def kind_label(self, kind: str) -> str:
        """What a layer's nodes are, in words. The knowledge base's own layer (over every document's top
        nodes) combines nothing across documents while there is one, so it is then its top."""
        if kind == "kb":
            return "cross-document summaries" if self.documents > 1 else "top summaries of the knowledge base"
        return {"leaf": "leaves", "summary": "summaries"}.get(kind, "nodes")

    def layer_label(self, layer: LayerInfo) -> str:
        """`kind_label` for the layer's count: "1 leaf", "1 top summary of the knowledge base"."""
        label = self.kind_label(layer.kind)
        if layer.nodes == 1:
            label = label.replace("leaves", "leaf").replace("summaries", "summary").replace("nodes", "node")
        return label

    @property
    def tokens(self) -> int:
        return sum(layer.tokens for layer in self.layers)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kb": self.kb,
            "documents": self.documents,
            "nodes": self.nodes,
            "tokens": self.tokens,
            "layers": [layer.__dict__ for layer in self.layers],
        }


@dataclass
class TreePicture:
    """`Engine.tree_picture`'s result: the PNG and which of the requested nodes it highlights."""

    png: bytes
    nodes: int
    highlighted: list[int]  # requested ids found in the tree, in the order given
    cited: list[int]
    missing: list[int]  # requested ids no longer in the tree
    binned: bool  # some rows were too crowded and were drawn as groups of nodes


@dataclass
class DoctorReport:
    problems: list[str]
    repaired: list[str]

    @property
    def healthy(self) -> bool:
        return not self.problems or len(self.repaired) == len(self.problems)


def _human_size(size: int) -> str:
    """Bytes as a person reads them: a small limit must not show as '0.0 MB'."""
    if size < 10_000:
        return f"{size:,} bytes"
    if size < 10_000_000:
        return f"{size / 1000:,.0f} kB"
    return f"{size / 1e6:,.1f} MB"


def _observed(task: asyncio.Future[Any]) -> None:
    """Retrieve a background task's failure, so one the build never awaited is not reported as lost."""
    if not task.cancelled():
        task.exception()


@dataclass
class _LeafIndex:
    """The leaves' index, started as soon as they are embedded (`Engine._leaf_index_ahead`): under the
    ids from `first` on, which the store would give them then."""

    first: int
    count: int
    index: asyncio.Future[Any]


async def _extended(leaves: asyncio.Future[Any], ids: range, matrix: np.ndarray) -> Any:
    """The leaves' index, once built, with the rest of the tree's rows added on a thread."""
    return await asyncio.to_thread(extend_hnsw, await leaves, ids, matrix)


def _leaves_first(tree: BuiltTree, count: int) -> bool:
    """Whether the tree's first `count` nodes are its leaves, all of them (`build_document_tree`'s order)."""
    return sum(1 for node in tree.nodes if node.kind == "leaf") == count and all(
        node.kind == "leaf" for node in tree.nodes[:count]
    )


def _placeholder_top(node: NewNode) -> StoredTop:
    """A top node of the document being stored, named by a negative id until it has a real one."""
    return StoredTop(
        id=-(node.key + 1), layer=node.layer, text=node.text, tokens=node.tokens, embedding=node.embedding
    )


def _followed(history: list[Turn] | None, follows: int | None) -> list[Turn] | None:
    """The history up to the exchange a follow-up replies to (`Engine.ask`'s `follows`)."""
    if follows is None or not history:
        return history
    try:
        return through_exchange(history, follows)
    except IndexError:
        raise RaptorError(f"This conversation has no exchange {follows} to follow up.") from None


def _conversation(question: str, history: list[Turn]) -> tuple[str, list[Turn]]:
    """The question without small talk in front of it, and the history without small-talk exchanges
    (a scan of every turn: the engine runs it in a thread)."""
    return strip_small_talk(question), without_small_talk(history)


def _add_support(answer: Answer, check: SupportCheck) -> None:
    """What the support check found, on the answer: matched citations, unsupported sentences, wrong markers."""
    answer.checked = True
    answer.unsupported = check.unsupported
    answer.wrong_citations = label_citations(check, answer.citations, answer.context.nodes)


def _the_document(query: str, named: re.Match[str]) -> str:
    """'What did the other report recommend?' -> 'What did it recommend?': the question moved to the
    document `named` ('the other report', 'the second report') points at and searched there alone, where
    'it' is that document: words naming the document are no terms its passages must hold. A document
    named after a preposition goes with it ('What did the committee agree in the Q1 minutes?' -> 'What
    did the committee agree?'), unless nothing of the question would be left."""
    placed = re.compile(rf"\s+(?:in|from|of|at|for)\s+(?:{named.re.pattern})(?=\s*[?.!]*$)", named.re.flags)
    without = placed.sub("", query, count=1)
    if without != query and len(without.split()) >= 3:
        return without
    return named.re.sub(lambda match: "It" if match.start() == 0 else "it", query, count=1)


SHORTENED = (
    "This question is {asked:,} characters, more than the {limit:,} a question is searched with, so it was "
    "shortened to what it asks; the “Searched as” line shows what was searched."
)


def _merged_contexts(contexts: list[RetrievedContext], query: str) -> RetrievedContext:
    """The contexts of a check's batches of claims as one: each node once, in the order found, so the
    reply's [n] markers count through them all."""
    nodes = list({node.node_id: node for context in contexts for node in context.nodes}.values())
    first = contexts[0]
    tokens = sum(node.tokens for node in nodes)
    return RetrievedContext(nodes=nodes, tokens_used=tokens, budget=first.budget, mode=first.mode, query=query)

def said_shortened(answer: Answer, asked_chars: int) -> None:
    """Mark an answer to a question shortened to MAX_QUESTION_CHARS (`fit_question`): its note says so and
    to what limit, so no one takes it for an answer to every word they wrote."""
    answer.shortened_from = asked_chars
    told = SHORTENED.format(asked=asked_chars, limit=MAX_QUESTION_CHARS)
    answer.note = " ".join(filter(None, [told, answer.note]))


def _what_is_searched(query: str) -> str:
    """The query as retrieval searches it: a long message's questions, not the paragraph pasted with them
    (`searched_part`), its follow-up context kept. The answerer still gets the whole query."""
    rewritten = split_standalone(query)
    core = searched_part(rewritten.core)
    return query if core == rewritten.core else replace(rewritten, core=core).text


def _with_choice(draft: AnswerDraft, asked: str, query: str, nodes: list[ContextNode]) -> AnswerDraft:
    """An extractive draft whose follow-up chooses between the figures of two times ('which year was
    higher?', searched as the last question of one time with the other's as context) opening with the
    choice (`compared.chosen`): the time whose figure is higher or lower, both figures given, or that a
    side has none or the units differ. Any other draft as it is."""
    way = which_more(asked)
    if way is None:
        return draft
    rewritten = split_standalone(query)
    times = compared_times(rewritten.core, rewritten.context)
    rest = draft.text.partition("\n")[2]
    if times is None or not rest:
        return draft
    quotes = []
    for quote, block in QUOTE_AND_BLOCK.findall(rest):
        node = nodes[int(block) - 1] if 0 < int(block) <= len(nodes) else None
        if node is not None:
            title = " ".join([node.document or "", *node.heading, *(name for name, _ in node.drawn_from)])
            quotes.append((quote.strip("\u2026 "), title))
    terms = {t for t in content_terms(rewritten.core.lower()) if not any(ch.isdigit() for ch in t)}  # not '2021'
    line = chosen(times, way, quotes, terms)
    return replace(draft, text=f"{line}\n{rest}") if line is not None else draft


def _with_verdict(
    draft: AnswerDraft, asked: str, query: str, history: list[Turn], nodes: list[ContextNode]
) -> AnswerDraft:
    """An extractive draft of a yes/no question ('is that before 2022?', 'was it more than the excess?',
    'did he agree?'; a first 'Did the council approve the plan?' too) opening with yes or no where the
    quotes settle it (`verdict.settled`: 'that' is what the last answer quoted for the last question,
    which the rewrite keeps as its context or asks again), in place of its first line, with the quote that
    settles it among those shown (first, from the context, when the answer did not quote it; no yes or no
    when the context lacks it). Any other draft as it is (a choice between two times has its own line; an
    answer that found only the closest passages says no yes or no)."""
    if which_more(asked) is not None:
        return draft
    lead, _, rest = draft.text.partition("\n")
    weak = lead == WEAK_MATCH  # 'Was the garden opened before 2020?': no passage holds 2020, the threshold
    if not rest or (unanswered_lead(draft.text) and not weak):
        return draft
    last = next((turn.content for turn in reversed(history) if turn.role == "assistant"), "")
    rewritten = split_standalone(query)
    quotes = [quote.strip("\u2026 ") for quote, _ in QUOTE_AND_BLOCK.findall(rest)]
    before = [quote.strip("\u2026 ") for quote in quotes_in(last)] if last and not unanswered_lead(last) else []
    found = settled(
        asked, rewritten.core, quotes, rewritten.context or rewritten.core, before, follow_up=bool(history), weak=weak
    )
    if found is None and lead in (FOUND, WEAK_MATCH) and not CHECKS_LAST_ANSWER.match(rewritten.core.strip()):
        # 'Is the ferry free?' over 'The ferry leaves at seven.': no 'From the documents:' over what does not say
        line = unsaid(rewritten.core, quotes, _years_of_quotes(rest, nodes))
        return replace(draft, text=f"{line}\n{rest}") if line is not None else draft
    if found is None or found.line == lead:
        return draft
    shown = _shown_with(rest, found.quote, nodes)
    return replace(draft, text=f"{found.line}\n{shown}") if shown is not None else draft


_YEAR = re.compile(r"\b(?:1[5-9]|20)\d{2}\b")


def _years_of_quotes(rest: str, nodes: list[ContextNode]) -> dict[str, int]:
    """The year each quote's document is of, where its title and file name name one year only ('Harbour
    Master's Annual Report 2025'): what its 'this year' means."""
    years = {}
    for quote, block in QUOTE_AND_BLOCK.findall(rest):
        node = nodes[int(block) - 1] if 0 < int(block) <= len(nodes) else None
        if node is None:
            continue
        named = set(_YEAR.findall(" ".join([node.document or "", *node.heading[:1]])))
        if len(named) == 1:
            years[quote.strip("\u2026 ")] = int(named.pop())
    return years


def _shown_with(rest: str, quote: str, nodes: list[ContextNode]) -> str | None:
    """The answer's quotes (`rest`) holding `quote`: as they are when one of them holds it, else with it
    quoted first from the context node that holds it ('the last answer's date'); None when none does."""
    plain = " ".join(quote.split())
    if any(plain in " ".join(shown.strip("\u2026 ").split()) for shown, _ in QUOTE_AND_BLOCK.findall(rest)):
        return rest
    held = [i for i, node in enumerate(nodes) if plain in " ".join(node.text.split())]
    if not held:
        return None
    at = min(held, key=lambda i: (nodes[i].layer, i))  # a passage of the document before a summary
    return f"- \u201c{plain}\u201d [{at + 1}]\n{rest}"


def _compares(label: str, context: str) -> bool:
    """Whether the context the rewrite kept names a document by another label: the follow-up compares
    the two ('How many moorings did the 2019 survey count? (context: ... the 2021 survey ...)')."""
    named = [*_THE_LABELLED.finditer(context), *_IN_LABEL.finditer(context)]
    return any(other.group(1).lower() != label.lower() for other in named)


# 'What is this handbook about?', 'Summarise the minutes', 'What is the history about?': a question about the
# whole that names a document by a word of its file name or title (the words after the/this/that, up to four)
_THE_WHOLE_OF = re.compile(r"\b(?:the|this|that|these|those)\s+((?:[A-Za-z][\w'\u2019-]*\s+){0,3}[A-Za-z][\w'\u2019-]*)", re.I)
# words of a question about the whole that name no document, whatever a title holds ('Theme and Variations')
_ABOUT_THE_WHOLE = frozenset(
    "theme themes idea ideas point points message topic topics argument summary gist overview moral plot main central "
    "key overall major whole text document documents file files page about say says cover discuss describe".split()
)


def thematic_document(question: str, openings: dict[str, tuple[tuple[str, ...], str]], named: list[str]) -> str | None:
    """The one document of `named` a question about the whole names ('this handbook' -> 'handbook.md', 'the
    history' -> the document titled '... A Short History'): every word after its the/this/that that is a word
    of a document's file name or title (`_labelled_document`) names that same one, and at least one does.
    None for a question that names none, or names several ('compare the handbook and the minutes')."""
    found: set[str] = set()
    for phrase in _THE_WHOLE_OF.finditer(question):
        for word in content_terms(phrase.group(1)):
            if len(word) < 3 or word in _ABOUT_THE_WHOLE:
                continue
            document = _labelled_document(word, openings, named)
            if document is not None:
                found.add(document)
    return found.pop() if len(found) == 1 else None


def _labelled_document(label: str, openings: dict[str, tuple[tuple[str, ...], str]], named: list[str]) -> str | None:
    """The one document of `named` whose file name, headings or first line holds `label` ('2021' in
    'Harbour survey report 2021' or 'r2021.md', 'Q3' in 'Sales review, Q3 2022') as a number or word of
    its own; None when none does, or several (the label names no one document)."""
    before = r"(?<!\d)" if label[0].isdigit() else r"(?<![^\W\d_])"
    after = r"(?!\d)" if label[-1].isdigit() else r"(?!(?!s\b)[^\W\d_])"  # 'report' in 'Reports 2019
    holds = re.compile(before + re.escape(label) + after, re.IGNORECASE)
    found = []
    for name in named:
        headings, text = openings.get(name, ((), ""))
        title = " ".join([name, *headings, text.strip().split("\n", 1)[0][:MAX_TITLE_CHARS]])
        if holds.search(title):
            found.append(name)
    return found[0] if len(found) == 1 else None


def _ignore_outcome(future: asyncio.Future[Any]) -> None:
    """A background step whose result is no longer wanted: its error, if any, is not raised again."""
    if not future.cancelled():
        future.exception()


def _resolve_placeholders(kb_nodes: list[NewNode], ids: dict[int, int]) -> list[NewNode]:
    for node in kb_nodes:
        node.stored_children = [ids[-c - 1] if c < 0 else c for c in node.stored_children]
    return kb_nodes


def _open_spaces(settings: Settings) -> Spaces:
    """The data directory's spaces (an old layout moved into them), or StorageError in one sentence
    when the directory cannot be opened or written (read-only, full, not permitted)."""
    try:
        spaces = Spaces(settings)
        migrate_to_spaces(spaces)
    except (sqlite3.Error, OSError) as error:
        failure = storage_error(error, str(settings.data_dir))
        if failure is None:
            raise
        log.debug("opening %s failed", settings.data_dir, exc_info=True)
        raise failure from error
    return spaces


def _marked_too_big(context: RetrievedContext, document: str | None) -> RetrievedContext:
    """The context with the leaves of a table too big to read whole marked (`ContextNode.table_too_big`)."""
    nodes = [replace(n, table_too_big=True) if n.document == document else n for n in context.nodes]
    return replace(context, nodes=nodes)


def _reads_past_budget(answerer: Answerer) -> bool:
    """Whether an answerer may be given a whole table past the token budget: the quoting answer counts its
    rows in code; an LLM's prompt is bounded by the budget (a local model's window may hold no more)."""
    return isinstance(answerer, ExtractiveAnswerer)


def _with_leaves(context: RetrievedContext, stored: list[StoredNode]) -> RetrievedContext:
    """The context with a document's every leaf (`stored`): one it held stays in its place, whole (one
    trimmed, or without sentences a summary's copy held, as stored); the others follow the context, in
    their order, scored as the lowest it held. So a question about prose beside the table keeps its own
    sentences first among the 200 an answer reads."""
    whole = {node.id: node for node in stored}
    held = {node.node_id: node for node in context.nodes if node.node_id in whole}
    cut = {i for i, node in held.items() if ELISION in node.text or node.held_elsewhere}
    if not held or (len(held) == len(stored) and not cut):
        return context
    least = min(node.score for node in held.values())
    kept = [context_node(whole[n.node_id], n.score) if n.node_id in cut else n for n in context.nodes]
    added = [context_node(node, least) for node in stored if node.id not in held]
    log.info("a question over a table's rows: its %d leaves read whole (%d found)", len(stored), len(held))
    tokens = context.tokens_used + sum(node.tokens for node in added)
    return replace(context, nodes=[*kept, *added], tokens_used=tokens)


class Engine:
    """One engine per data directory; share it between the CLI's or the bot's tasks."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        embedder: Embedder | None = None,
        summarizer: Summarizer | None = None,
        answerer: Answerer | None = None,
    ):
        self.settings = settings or Settings.from_env()
        use_compile_cache(keep_cache_private(self.settings.cache_dir) / "numba")
        self.spaces = _open_spaces(self.settings)
        self._embedder = embedder
        self._model_check: ModelCheck | None = None
        self._summarizer = summarizer
        self._answerer = answerer
        self._support_vectors: SentenceVectors | None = None
        self._quote_judge: ExtractiveAnswerer | None = None  # trims a small budget's nodes (`_sentence_judge`)
        self._model_lock = threading.Lock()
        self._locks: dict[str, asyncio.Lock] = {}
        self._waiting: dict[str, int] = defaultdict(int)
        self.last_parse: ParseStats | None = None  # what reading the latest upload cost (logs, robustness)
        self.cluster: BuildCluster | None = None  # set by the bot (or `ingest --scheduler`): builds on Dask
        self._stops_lock = threading.Lock()
        self._stop_reason: str | None = None  # set by `stop_answers`
        self._answer_stops: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._spare_parses = False  # keep a parse child started ahead (`warm`): a long-lived process

    # -- spaces: which store and indices a call works on ------------------------------------------

    @property
    def store(self) -> Store:
        """The store of the space the current call works in (the root store outside any call)."""
        return self._space().store

    @property
    def indexes(self) -> IndexManager:
        return self._space().indexes

    def _space(self) -> Space:
        current = _current_space.get()
        return current[1] if current is not None and current[0] is self.spaces else self.spaces.root

    @contextlib.contextmanager
    def in_space(self, kb: str) -> Iterator[Space]:
        """Work in `kb`'s space (pinned open) until the block ends: `engine.store` and `engine.indexes`
        are that space's inside it (what tools and tests that read a store directly use)."""
        with self.spaces.using(kb) as space, self._working_in(space):
            yield space

    @contextlib.contextmanager
    def _working_in(self, space: Space) -> Iterator[None]:
        token = _current_space.set((self.spaces, space))
        try:
            yield
        finally:
            _current_space.reset(token)

    def space_of(self, kb: str) -> str | None:
        """The space knowledge base `kb` lives in (None: the data directory's root store)."""
        return self.spaces.space_of(kb)

    def delete_space(self, name: str) -> bool:
        """Delete a whole space, its knowledge bases and indices (the bot: removed from a server)."""
        return self.spaces.delete(name)

    # -- components, created on first use so listing documents never loads a model ------------

    @property
    def embedder(self) -> Embedder:
        with self._model_lock:
            if self._embedder is None:
                self._embedder = Embedder(
                    self.settings.embed_model,
                    batch_size=self.settings.embed_batch_size,
                    batch_tokens=self.settings.embed_batch_tokens,
                    backend=self.settings.embed_backend,
                    cache_dir=self.settings.cache_dir,
                    gpu_batch_tokens=self.settings.embed_gpu_batch_tokens,
                    tokenize_threads=self.settings.embed_tokenize_threads,
                )
            return self._embedder

    @property
    def model_check(self) -> ModelCheck:
        """Whether each knowledge base's stored vectors are the configured embedding model's (model_check)."""
        embedder = self.embedder
        with self._model_lock:
            if self._model_check is None:
                self._model_check = ModelCheck(embedder)
            return self._model_check

    def _require_model_of(self, kb: str, kb_id: int | None) -> None:
        """Refuse to search or add to a knowledge base whose vectors another embedding model made (synchronous:
        it may embed a few leaves, so async code runs it in a thread)."""
        if kb_id is not None and self.store.has_nodes(kb_id):
            self.model_check.require_same_model(self.store, kb_id, kb)

    def _llm_backends(self) -> tuple[Summarizer | None, Answerer | None]:
        if not self.settings.llm_configured:
            return None, None
        from .llm import make_backends

        return make_backends(self.settings, self.settings.db_path, count_tokens=self.embedder.count_tokens)

    @property
    def summarizer(self) -> Summarizer:
        if self._summarizer is None:
            llm_summarizer, llm_answerer = self._llm_backends()
            self._summarizer = llm_summarizer or ExtractiveSummarizer(
                self.embedder.count_tokens,
                count_tokens_batch=self.embedder.count_tokens_batch,
                input_budget=self.settings.cluster_input_budget,
            )
            if self._answerer is None and llm_answerer is not None:
                self._answerer = llm_answerer
        return self._summarizer

    @property
    def answerer(self) -> Answerer:
        if self._answerer is None:
            _, llm_answerer = self._llm_backends()
            self._answerer = llm_answerer or ExtractiveAnswerer(
                self.embedder, ranker=ranker_for(self.settings.ranking)
            )
        return self._answerer

    def support_index(self, answerer: Answerer, nodes: list[ContextNode]) -> SupportIndex | None:
        """What a written answer is checked against (query/support.py); None for an answerer that quotes."""
        if not getattr(answerer, "writes_prose", False) or not nodes:
            return None
        embedder = self.embedder
        with self._model_lock:
            if self._support_vectors is None:
                self._support_vectors = SentenceVectors(embedder)
        return SupportIndex(nodes, self._support_vectors)

    def _sentence_judge(self, budget: int) -> SentenceJudge | None:
        """The quote model that trims a small budget's nodes to their answering sentences
        (`retrieve.trimmed_sentences`): the answerer itself when it quotes, else (an LLM reads the
        context) a quoting answerer kept for it. None where the budget is not trimmed."""
        if budget > TRIM.max_budget or ranker_for(self.settings.ranking) is None:
            return None  # without the quote model (RAPTOR_RANKING=vector) there is nothing to judge by
        answerer = self.answerer
        if isinstance(answerer, ExtractiveAnswerer):
            return answerer.sentence_scores if answerer.ranker is not None else None
        embedder = self.embedder  # outside the lock: it takes the lock itself
        with self._model_lock:
            if self._quote_judge is None:
                self._quote_judge = ExtractiveAnswerer(embedder, ranker=ranker_for(self.settings.ranking))
        return self._quote_judge.sentence_scores

    @property
    def backend_name(self) -> str:
        """Which backends answer and summarise, e.g. 'extractive' or 'openai:gpt-4o-mini @ host'."""
        summarizer, answerer = self.summarizer.name, self.answerer.name
        return summarizer if summarizer == answerer else f"summaries: {summarizer}; answers: {answerer}"

    def warm(self, *, load_clustering: bool = True) -> None:
        """Load the model and UMAP's numba code now, off any hot path (compiled once per machine, then cached).

        With `load_clustering` False, UMAP is only compiled if this machine has not yet: for a one-shot
        command, whose small documents may never cluster, its import waits for the first layer that does.
        """
        from .tree.cluster import compile_once, warm_up

        _ = self.embedder
        if load_clustering:
            warm_up()
            # A long-lived process (the bot, the benchmark) keeps a parse child started ahead for its next
            # upload, so a parse does not wait for the child's Python to start (parse_worker.start_spare).
            self._spare_parses = True
            start_spare()
        else:
            compile_once()

    def close(self) -> None:
        if self._spare_parses:
            discard_spare()
        self.spaces.close()

    # -- building -----------------------------------------------------------------------------

    def _lock(self, kb: str) -> asyncio.Lock:
        return self._locks.setdefault(kb, asyncio.Lock())

    def _writer_gate(self, kb: str) -> WriterGate:
        """The cross-process turn to write this knowledge base: an upload's build through its commit, a
        removal's top layer and commit (writers.py)."""
        return WriterGate(self.settings.data_dir / "locks", kb, self.settings.writer_wait)

    @staticmethod
    def _say_waiting(kb: str, name: str, progress: ProgressCallback | None) -> None:
        """An upload that waits for another process's write of its knowledge base says so (a "wait" stage)."""
        log.info("%s waits for another process's write of %s", name, kb)
        if progress:
            progress(Progress("wait", 0, 0, message="another upload to this knowledge base goes first"))

    def _version_of(self, kb_id: int | None) -> int:
        """The knowledge base's version now (0 for one not created yet), to detect other writers."""
        return 0 if kb_id is None else self.store.kb_version(kb_id)

    def queue_length(self, kb: str) -> int:
        """Builds of this knowledge base running or waiting in this process."""
        return self._waiting.get(kb, 0)

    def worker_limits(self) -> WorkerLimits:
        """The bounds on reading one upload: the worker process's and the loader's (all from Settings)."""
        return parse_limits(self.settings)

    def build_budget(self, name: str) -> BuildBudget:
        """The deadline and memory ceiling of one upload's build, from Settings; the deadline runs from now.
        Summaries from an LLM take round trips to it, so such builds get RAPTOR_LLM_BUILD_TIMEOUT."""
        s = self.settings
        seconds = s.llm_build_timeout if s.llm_configured else s.build_timeout
        return BuildBudget(name, seconds=seconds, memory_mb=s.build_memory_mb)

    def _check_limits(self, kb_id: int | None, name: str, size: int) -> None:
        s = self.settings
        if size > s.max_file_bytes:
            raise LimitError(
                f"{name} is {_human_size(size)}, over the limit of {_human_size(s.max_file_bytes)}."
            )
        if kb_id is not None and len(self.store.documents(kb_id)) >= s.max_documents:
            raise LimitError(
                f"This knowledge base already holds {s.max_documents} documents, the most allowed."
            )

    @_in_space
    async def ingest(
        self,
        kb: str,
        filename: str,
        data: bytes,
        *,
        added_by: str = "",
        progress: ProgressCallback | None = None,
    ) -> IngestResult:
        """Add a document: build its subtree, refresh the cross-document layer, store all at once.

        The same document already in the knowledge base is a no-op ("duplicate"): identical bytes, or
        the same text saved again otherwise (load.text_fingerprint), or the same words under another kind
        (load.words_fingerprint), which are found once the upload is read, before it is built. On any error nothing is stored. Builds of one knowledge base run one at a time,
        in arrival order, and across processes take turns from before the build to the commit (writers.py).
        """
        name = safe_filename(filename)
        added_by = readable_text(added_by)  # stored beside the document: SQLite cannot store a lone surrogate
        # The size now; the document count only after the duplicate check (same bytes are a no-op).
        self._check_limits(None, name, len(data))
        sha = hashlib.sha256(data).hexdigest()
        clock = StageClock()

        def report(event: Progress) -> None:
            clock(event)
            if progress:
                progress(event)

        self._waiting[kb] += 1
        try:
            async with self._lock(kb), self._writer_gate(kb) as gate:
                result = await self._ingest_locked(kb, name, data, sha, added_by, report, gate)
        finally:
            self._waiting[kb] -= 1
            if self._spare_parses and self.cluster is None:  # for the next upload's parse
                start_spare()
            elif self._spare_parses:  # builds run on Dask: the parse is the worker's
                discard_spare()
        if clock.marks:
            result.stage_seconds = clock.seconds(time.perf_counter())
        return result

    async def _ingest_locked(
        self,
        kb: str,
        name: str,
        data: bytes,
        sha: str,
        added_by: str,
        progress: ProgressCallback | None,
        gate: WriterGate,
    ) -> IngestResult:
        # Another process's build of this knowledge base runs first (writers.py): two side by side on a small
        # machine both passed the deadline. The wait is RAPTOR_WRITER_WAIT's; the deadline starts after it.
        await gate.enter(functools.partial(self._say_waiting, kb, name, progress))
        started = time.perf_counter()
        started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        kb_id = self.store.kb_id(kb)
        if kb_id is not None:
            existing = self.store.document_by_sha(kb_id, sha)
            if existing is not None:
                return IngestResult("duplicate", existing)
        self._check_limits(kb_id, name, len(data))
        await asyncio.to_thread(self._require_model_of, kb, kb_id)
        budget = self.build_budget(name)
        leaf_index: list[_LeafIndex] = []
        try:
            with budget.active():
                # A knowledge base without documents holds none the upload could repeat: no text to check.
                loaded = functools.partial(self._refuse_stored_text, kb_id) if self._holds_documents(kb_id) else None
                leaves_ready = functools.partial(self._leaf_index_ahead, kb_id, leaf_index)
                built = await budget.bound(self._build_tree(name, data, kb_id, progress, loaded, leaves_ready))
                tree, chunks, fmt = built.tree, built.chunks, built.format
            kb_id = self.store.kb_id(kb)
            stored = self._stored_copy(kb_id, sha, built.text_sha256, built.words_sha256)
            if stored is not None:  # another process stored the same document meanwhile (or a Dask build)
                return IngestResult("duplicate", stored)
            seen_version = self._version_of(kb_id)
            kb_layer = await self._kb_layer(kb_id, tree, progress)
        except _StoredText as same:  # the upload is a document stored already, under other bytes
            return IngestResult("duplicate", same.document)
        except (IngestError, LimitError):
            raise  # the upload itself was refused: leave the store byte-for-byte as it was
        except RaptorError as exc:
            self._record_failure(kb_id, name, started, started_at, exc)
            raise
        except Exception as exc:
            log.exception("building %s failed", name)
            self._record_failure(kb_id, name, started, started_at, exc)
            failure = storage_error(exc) or RaptorError(
                f"Building the tree for {name} failed: {type(exc).__name__}."
            )
            raise failure from exc
        notes = [tree.stop_reason] + [n for layer in tree.layers for n in layer.notes]
        if kb_layer:
            notes += kb_layer.notes
        prompt_tokens = tree.prompt_tokens + (kb_layer.prompt_tokens if kb_layer else 0)
        completion_tokens = tree.completion_tokens + (kb_layer.completion_tokens if kb_layer else 0)
        document = {
            "name": name,
            "sha256": sha,
            "text_sha256": built.text_sha256,
            "words_sha256": built.words_sha256,
            "size": len(data),
            "format": fmt,
            "added_by": added_by,
            "chunks": len(chunks),
            "layers": tree.height,
            "tokens": sum(c.tokens for c in chunks),
        }
        build = {
            "document": name,
            "action": "ingest",
            "started_at": started_at,
            "seconds": time.perf_counter() - started,
            "embedder": self.embedder.name,
            "summarizer": self.summarizer.name,
            "layers": [layer.to_dict() for layer in tree.layers],
            "notes": notes,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
        }
        kb_nodes = kb_layer.nodes if kb_layer else []
        if progress:
            progress(Progress("store", 0, len(tree.nodes)))
        ahead = self._index_beside_commit(kb_id, tree, leaf_index[0] if leaf_index else None)
        for attempt in range(MAX_COMMIT_ATTEMPTS):
            try:
                kb_id, doc_id = await asyncio.to_thread(
                    self.store.commit_document,
                    kb,
                    document,
                    tree.nodes,
                    functools.partial(_resolve_placeholders, kb_nodes),
                    build,
                    seen_version,
                )
                break
            except (sqlite3.Error, OSError) as exc:  # a full or read-only disk: said in one sentence
                failure = storage_error(exc)
                if failure is None:
                    raise
                raise failure from exc
            except StaleTreeError:
                # Another process wrote this knowledge base after its tops were read: the
                # cross-document layer would drop its document, so redo that (cheap) layer.
                log.info(
                    "%s changed during the build of %s (attempt %d); redoing its top layer", kb, name, attempt
                )
                kb_id = self.store.kb_id(kb)
                existing = self._stored_copy(kb_id, sha, built.text_sha256, built.words_sha256)
                if existing is not None:
                    return IngestResult("duplicate", existing)
                seen_version = self._version_of(kb_id)
                kb_layer = await self._kb_layer(kb_id, tree, progress)
                kb_nodes = kb_layer.nodes if kb_layer else []
        else:
            raise RaptorError(f"{name} was not stored: the knowledge base kept changing under it; try again.")
        gate.leave()
        if progress:
            progress(Progress("index", 0, len(tree.nodes)))
        await self._index_after_commit(kb_id, doc_id, ahead)
        info = next(d for d in self.store.documents(kb_id) if d.id == doc_id)
        seconds = time.perf_counter() - started
        if progress:
            progress(Progress("done", len(tree.nodes), len(tree.nodes), layer=tree.height - 1))
        log.info(
            "ingested %s into %s: %d chunks, %d layers in %.1fs", name, kb, len(chunks), tree.height, seconds
        )
        return IngestResult(
            "added",
            info,
            len(chunks),
            tree.height,
            len(tree.nodes),
            seconds,
            notes,
            prompt_tokens,
            completion_tokens,
            notices=list(built.notices),
        )

    def _leaf_index_ahead(self, kb_id: int | None, started: list[_LeafIndex], leaves: list[NewNode]) -> None:
        """A knowledge base's first document: its leaves' index, started on a thread once they are embedded,
        under the ids the store would give them now, so that hnswlib (which inserts without the GIL) works
        on the core the leaf layer's single-threaded global clustering leaves idle. Appended to `started`;
        nothing is kept unless `_index_beside_commit` finds those ids still next and `IndexManager.adopt`
        finds them stored. Derived data: a failure here only means the index is built later."""
        try:
            if (kb_id is not None and self.store.has_nodes(kb_id)) or not leaves:
                return
            first = self.store.next_node_id()
        except Exception:
            log.warning("the leaves' index of %s could not be started ahead", kb_id, exc_info=True)
            return
        matrix = np.vstack([leaf.embedding for leaf in leaves]).astype(np.float32)
        future = asyncio.ensure_future(asyncio.to_thread(new_hnsw, range(first, first + len(leaves)), matrix))
        future.add_done_callback(_observed)
        started.append(_LeafIndex(first, len(leaves), future))

    def _index_beside_commit(
        self, kb_id: int | None, tree: BuiltTree, leaves: _LeafIndex | None = None
    ) -> asyncio.Future[Any] | None:
        """A knowledge base's first document: its index, built on a thread while SQLite writes its rows, under
        the ids the store is about to give them (hnswlib inserts without the GIL); from the leaves' index
        started during the build where it was started under these ids (the leaves are the tree's first
        nodes), with only the summaries left to add. None for a knowledge base that holds nodes already:
        its index is brought up to date after the commit (`IndexManager.get`). Nothing is kept before
        `_index_after_commit` checks it against the rows, so a failed commit leaves nothing behind."""
        if kb_id is not None and self.store.has_nodes(kb_id):
            return None
        first = self.store.next_node_id()
        matrix = np.vstack([node.embedding for node in tree.nodes]).astype(np.float32)
        ids = range(first, first + len(matrix))
        if leaves is not None and leaves.first == first and _leaves_first(tree, leaves.count):
            future = asyncio.ensure_future(_extended(leaves.index, ids[leaves.count :], matrix[leaves.count :]))
        else:
            if leaves is not None:
                log.info("the leaves' index of kb %s was started under other ids; building it whole", kb_id)
            future = asyncio.ensure_future(asyncio.to_thread(new_hnsw, ids, matrix))
        future.add_done_callback(_observed)
        return future

    async def _index_after_commit(self, kb_id: int, doc_id: int, ahead: asyncio.Future[Any] | None) -> None:
        """The knowledge base's index at its new version: the one built beside the commit where it matches
        the stored rows (`IndexManager.adopt`), else brought up to date from SQLite."""
        if ahead is not None:
            try:
                if await asyncio.to_thread(self.indexes.adopt, kb_id, await ahead, doc_id) is not None:
                    return
            except Exception:  # derived data: SQLite has the document, and `get` builds its index from there
                log.warning("the index built beside the write of kb %s failed; building it again", kb_id, exc_info=True)
        await asyncio.to_thread(self.indexes.get, kb_id)

    def _stored_copy(self, kb_id: int | None, sha: str, text_sha: str, words_sha: str = "") -> DocumentInfo | None:
        """The document of `kb_id` with these bytes or, failing that, this text fingerprint or these words
        (`_same_text`)."""
        if kb_id is None:
            return None
        return self.store.document_by_sha(kb_id, sha) or self._same_text(kb_id, text_sha, words_sha)

    def _same_text(self, kb_id: int, text_sha: str, words_sha: str) -> DocumentInfo | None:
        """The document of `kb_id` this loaded text is: by its fingerprint, or by its words alone (the same
        document under another kind, or one an earlier loader stored: `load.words_fingerprint`)."""
        return (self.store.document_by_text(kb_id, text_sha) if text_sha else None) or (
            self.store.document_by_words(kb_id, words_sha) if words_sha else None
        )

    def _holds_documents(self, kb_id: int | None) -> bool:
        return kb_id is not None and self.store.has_documents(kb_id)

    def _refuse_stored_text(self, kb_id: int | None, text_sha: str, words_sha: str = "") -> None:
        """Stop a build once its upload reads as a document stored already (`build_document`'s `loaded`)."""
        stored = self._same_text(kb_id, text_sha, words_sha) if kb_id is not None else None
        if stored is not None:
            raise _StoredText(stored)

    async def _build_tree(
        self,
        name: str,
        data: bytes,
        kb_id: int | None,
        progress: ProgressCallback | None,
        loaded: Callable[[str, str], None] | None = None,
        leaves_ready: Callable[[list[NewNode]], None] | None = None,
    ) -> DocumentTree:
        """The document's own tree, built on the Dask cluster when one is attached, else here (where
        `loaded` checks the text once read and `leaves_ready` gets the embedded leaves; a cluster's build
        is checked when it is back)."""
        held = self.store.kb_tokens(kb_id) if kb_id is not None else 0
        if self.cluster is not None:
            built = await self.cluster.build(
                name, data, self.settings, held, progress, current_budget(), dim=self.embedder.dim
            )
        else:
            # The model loads (in a new process: a second or more) while the parse child reads the upload.
            embedder = asyncio.ensure_future(asyncio.to_thread(lambda: self.embedder))
            summarizer = asyncio.ensure_future(self._summarizer_once_loaded(embedder))
            for task in (embedder, summarizer):
                task.add_done_callback(_observed)
            built = await build_document(
                name,
                data,
                settings=self.settings,
                held=held,
                embedder=embedder,
                summarizer=summarizer,
                progress=progress,
                loaded=loaded,
                leaves_ready=leaves_ready,
            )
        self.last_parse = built.parse
        return built

    async def _summarizer_once_loaded(self, embedder: asyncio.Future[Embedder]) -> Summarizer:
        """The summariser, made on the event loop once the embedder it counts tokens with has loaded."""
        await embedder
        return self.summarizer

    async def _kb_layer(
        self,
        kb_id: int | None,
        tree: BuiltTree | None,
        progress: ProgressCallback | None,
        exclude_doc: int | None = None,
    ) -> Summarized | None:
        """The cross-document layer over every document's tops (the new tree's included)."""
        tops = self.store.document_tops(kb_id, exclude_doc=exclude_doc) if kb_id is not None else []
        if tree is not None:
            top_layer = tree.height - 1
            tops += [_placeholder_top(n) for n in tree.nodes if n.layer == top_layer]
        first_key = len(tree.nodes) if tree is not None else 0
        return await build_kb_layer(
            tops,
            first_key=first_key,
            embedder=self.embedder,
            summarizer=self.summarizer,
            settings=self.settings,
            progress=progress,
        )

    def _record_failure(
        self, kb_id: int | None, name: str, started: float, started_at: str, exc: BaseException
    ) -> None:
        if kb_id is None:
            return  # the knowledge base does not exist yet; a failed first build leaves no trace
        try:
            self.store.record_failed_build(
                kb_id,
                {
                    "document": name,
                    "action": "ingest",
                    "started_at": started_at,
                    "seconds": time.perf_counter() - started,
                    "embedder": self.settings.embed_model,
                    "summarizer": getattr(self._summarizer, "name", ""),
                    "error": str(exc),
                },
            )
        except Exception:
            log.warning("could not record the failed build of %s", name, exc_info=True)

    @_in_space
    async def forget(self, kb: str, document: str, waiting: Callable[[], None] | None = None) -> DocumentInfo:
        """Remove a document's nodes, then rebuild the cross-document layer and update the index; the removal
        is recorded in its transaction (`record_removal`). It takes the knowledge base's writer turn, so it
        waits for a whole upload another process is building there (its top layer is built on the tree that
        upload commits): `waiting` is called once when it must."""
        kb_id = self.store.require_kb(kb)
        self._waiting[kb] += 1
        try:
            async with self._lock(kb), self._writer_gate(kb) as gate:
                busy = (
                    f"Nothing was removed: another process's upload to {kb!r} kept it busy for "
                    f"{self.settings.writer_wait:g} seconds (RAPTOR_WRITER_WAIT); try again."
                )
                await gate.enter(waiting, busy)
                doc = self.store.find_document(kb_id, readable_text(document))
                started = time.perf_counter()
                seen_version = self._version_of(kb_id)
                kb_layer = await self._kb_layer(kb_id, None, None, exclude_doc=doc.id)
                build = {
                    "document": doc.name,
                    "action": "forget",
                    "seconds": time.perf_counter() - started,
                    "embedder": self.embedder.name,
                    "summarizer": self.summarizer.name,
                    "notes": kb_layer.notes if kb_layer else [],
                    "prompt_tokens": kb_layer.prompt_tokens if kb_layer else 0,
                    "completion_tokens": kb_layer.completion_tokens if kb_layer else 0,
                }
                try:
                    tainted = await asyncio.to_thread(
                        self.store.commit_forget,
                        kb_id,
                        doc.id,
                        kb_layer.nodes if kb_layer else [],
                        build,
                        seen_version,
                        _recorded(kb, documents=((doc.id, doc.name),)),
                    )
                except StaleTreeError:
                    raise RaptorError(
                        f"{doc.name} was not removed: another process changed this knowledge base; try again."
                    ) from None
                await asyncio.to_thread(self.indexes.get, kb_id)
                await asyncio.to_thread(self._scrub_removed, tainted.values())
                return doc
        finally:
            self._waiting[kb] -= 1

    @_in_space
    async def clear(self, kb: str) -> int:
        """Remove every document of a knowledge base; returns how many there were. The removal is recorded
        in its transaction (`record_removal`)."""
        kb_id = self.store.kb_id(kb)
        if kb_id is None:
            return 0
        async with self._lock(kb):
            count = len(self.store.documents(kb_id))
            await asyncio.to_thread(self.delete_kb, kb)
            return count

    @_in_space
    def delete_kb(self, kb: str) -> bool:
        """Drop a knowledge base and its index entirely (the bot: channel deleted, server left); recorded as
        the removal of every document (`record_removal`)."""
        kb_id = self.store.kb_id(kb)
        if kb_id is None:
            return False
        summaries = self.store.delete_kb(kb_id, _recorded(kb, every=True))
        self.indexes.drop(kb_id)
        self._scrub_removed(summaries)
        return True

    def _scrub_removed(self, texts: Iterable[str]) -> None:
        """After a commit that removed text for privacy (a message deleted, a member forgotten, a document
        forgotten): forget the cached summaries that quoted it, then scrub the store's file (run it in a
        thread, in the knowledge base's space)."""
        SummaryCache(self.settings.db_path).forget_summaries(texts)
        if not self.store.scrub():
            log.warning("the WAL of %s was busy; removed text stays in it until the next scrub", self.store.path)

    # -- chat messages as documents (ingest/messages.py) -------------------------------------

    @_in_space
    async def add_messages(
        self,
        kb: str,
        place: MessagePlace,
        messages: list[ChatMessage],
        *,
        added_by: str = "",
        progress: ProgressCallback | None = None,
        keep: Callable[[ChatMessage], bool] | None = None,
    ) -> MessagesResult:
        """Add messages posted in `place`, or replace the text of stored ones that were edited.

        Only the documents (a day of the channel, or the thread, in parts) that gain or change a message are
        rebuilt, then the cross-document layer; all in one transaction. A message already stored with the
        same text, or with no text, changes nothing. Raises LimitError past the knowledge base's bounds.
        `keep` is asked about each message once this call has the knowledge base's writer turn, so a
        removal that had the turn before it (an author who opted out meanwhile) is never undone."""
        cleaned = [replace(m, text=clean_text(m.text)) for m in messages]
        cleaned = [m for m in cleaned if m.text]
        started = time.perf_counter()
        self._waiting[kb] += 1
        try:
            async with self._lock(kb), self._writer_gate(kb) as gate:
                await gate.enter()
                if keep is not None:
                    cleaned = [m for m in cleaned if keep(m)]
                kb_id = self.store.kb_id(kb)
                homes = await asyncio.to_thread(self._homes, kb_id, [m.message_id for m in cleaned])
                changed = [m for m in cleaned if homes.get(m.message_id, (0, None))[1] != m.text]
                result = MessagesResult(
                    added=sum(1 for m in changed if m.message_id not in homes),
                    edited=sum(1 for m in changed if m.message_id in homes),
                    unchanged=len(messages) - len(changed),
                )
                if not changed:
                    return result
                await asyncio.to_thread(self._check_message_quota, kb_id, result.added)
                await asyncio.to_thread(self._require_model_of, kb, kb_id)
                plans = await asyncio.to_thread(self._plan_additions, kb_id, place, changed)
                await self._rewrite_messages(kb, kb_id, plans, [], added_by, progress, result)
        finally:
            self._waiting[kb] -= 1
        result.seconds = time.perf_counter() - started
        return result

    @_in_space
    async def remove_messages(
        self,
        kb: str,
        message_ids: Iterable[int],
        *,
        author_id: int | None = None,
    ) -> MessagesResult:
        """Take messages out of the knowledge base (deleted in Discord, or their author opted out): the
        given ids, and with `author_id` every message of that author held when the removal gets its turn
        (so none an import stored meanwhile escapes).

        Each document that held one is rebuilt without it (or dropped when nothing is left), then the
        cross-document layer, in one transaction: once this returns the text is in no node, summary or
        index entry, and no file of the space holds it (`_scrub_removed`) but the removal's record, written in
        that transaction for the bot's copies (`record_removal`). Ids not held are ignored."""
        started = time.perf_counter()
        wanted = {int(i) for i in message_ids}
        self._waiting[kb] += 1
        try:
            async with self._lock(kb), self._writer_gate(kb) as gate:
                kb_id = self.store.kb_id(kb)
                if kb_id is None or not (wanted or author_id is not None):
                    return MessagesResult()
                await gate.enter()
                if author_id is not None:
                    wanted |= set(await asyncio.to_thread(self.store.message_ids, kb_id, author_id=author_id))
                homes = await asyncio.to_thread(self._homes, kb_id, wanted)
                if not homes:
                    return MessagesResult()
                docs = {doc for doc, _ in homes.values()}
                plans, emptied = await asyncio.to_thread(self._plan_removals, kb_id, set(homes), docs)
                result = MessagesResult(removed=len(homes), removed_documents=len(emptied))
                held = await asyncio.to_thread(self._held_messages, set(homes), docs)
                within = _recorded(kb, messages=tuple(held))  # their text's marks: the bot's copies lose them
                tainted = await self._rewrite_messages(
                    kb, kb_id, plans, emptied, "", None, result, set(homes), within
                )
                scrub_started = time.perf_counter()
                await asyncio.to_thread(self._scrub_removed, tainted.values())
                result.scrub_seconds = time.perf_counter() - scrub_started
        finally:
            self._waiting[kb] -= 1
        result.seconds = time.perf_counter() - started
        return result

    @_in_space
    def message_ids(
        self, kb: str, *, channel_id: int | None = None, author_id: int | None = None
    ) -> list[int]:
        """Ids of the messages a knowledge base holds: all, one channel's (or thread's), or one author's."""
        kb_id = self.store.kb_id(kb)
        return (
            [] if kb_id is None else self.store.message_ids(kb_id, channel_id=channel_id, author_id=author_id)
        )

    @_in_space
    def message_channels(self, kb: str) -> list[int]:
        """The channels and threads whose messages a knowledge base holds."""
        kb_id = self.store.kb_id(kb)
        return [] if kb_id is None else self.store.message_channels(kb_id)

    def _held_messages(self, message_ids: set[int], doc_ids: set[int]) -> list[ChatMessage]:
        """The stored messages of `message_ids`, read from their documents `doc_ids`."""
        held = (m for doc_id in sorted(doc_ids) for m in self.store.messages_of_document(doc_id))
        return [m for m in held if m.message_id in message_ids]

    def _homes(self, kb_id: int | None, message_ids: Iterable[int]) -> dict[int, tuple[int, str]]:
        return {} if kb_id is None else self.store.message_homes(kb_id, message_ids)

    def _tokens_kept(self, kb_id: int | None, replaced: list[int]) -> int:
        """The knowledge base's tokens without the documents about to be replaced (what bounds the new)."""
        if kb_id is None:
            return 0
        return self.store.kb_tokens(kb_id) - sum(self.store.document_tokens(doc_id) for doc_id in replaced)

    def _check_message_quota(self, kb_id: int | None, adding: int) -> None:
        held = self.store.message_count(kb_id) if kb_id is not None else 0
        limit = self.settings.max_kb_messages
        if held + adding > limit:
            raise LimitError(
                f"Adding {adding:,} messages to the {held:,} stored would pass this knowledge base's limit of "
                f"{limit:,} messages."
            )

    def _plan_additions(
        self, kb_id: int | None, place: MessagePlace, changed: list[ChatMessage]
    ) -> list[PartPlan]:
        """Which message documents to write (store reads and token counts: run it in a thread)."""
        homes = self.store.message_homes(kb_id, [m.message_id for m in changed]) if kb_id is not None else {}
        stored_keys = (
            self.store.group_keys({doc_id for doc_id, _ in homes.values()}) if kb_id is not None else {}
        )
        edited_keys = {message_id: stored_keys[doc_id] for message_id, (doc_id, _) in homes.items()}
        keys = {edited_keys.get(m.message_id) or place.group_key(m) for m in changed}
        stored_parts = self.store.message_parts(kb_id, keys) if kb_id is not None else {}
        stored = {
            key: [PartPlan(p.group_key, p.group_name, p.part, p.messages, p.doc_id) for p in parts]
            for key, parts in stored_parts.items()
        }
        every = {m.message_id: m for parts in stored.values() for p in parts for m in p.messages}
        every.update({m.message_id: m for m in changed})
        ids = list(every)
        counts = self.embedder.count_tokens_batch([every[i].text for i in ids])
        tokens = dict(zip(ids, counts, strict=True))
        return plan_additions(place, changed, stored, tokens, self.settings.message_group_tokens, edited_keys)

    def _plan_removals(
        self, kb_id: int, removed: set[int], doc_ids: set[int]
    ) -> tuple[list[PartPlan], list[int]]:
        """The documents to rebuild without the removed messages, and those left empty (to drop)."""
        plans, emptied = [], []
        for doc_id in sorted(doc_ids):
            part = self.store.message_part(doc_id)
            if part is None:
                continue
            remaining = [m for m in part.messages if m.message_id not in removed]
            if remaining:
                plans.append(PartPlan(part.group_key, part.group_name, part.part, remaining, doc_id))
            else:
                emptied.append(doc_id)
        return plans, emptied

    async def _rewrite_messages(
        self,
        kb: str,
        kb_id: int | None,
        plans: list[PartPlan],
        emptied: list[int],
        added_by: str,
        progress: ProgressCallback | None,
        result: MessagesResult,
        dropped: set[int] | None = None,
        within: Callable[[Any, list[int], dict[int, str]], None] | None = None,
    ) -> dict[int, str]:
        """Build the planned message documents, the cross-document layer over them, and commit both with
        the removal of the documents they replace (the caller holds the knowledge base's writer turn).
        Returns the nodes that went whose text held or summarised a message of `dropped` (id -> text)."""
        started = time.perf_counter()
        label = plans[0].name if plans else "messages"
        replaced = [p.old_doc_id for p in plans if p.old_doc_id is not None] + emptied
        budget = self.build_budget(label)
        with budget.active():
            writes = await budget.bound(
                self._build_message_parts(kb_id, plans, replaced, added_by, progress, dropped is not None)
            )
            tops = (
                await asyncio.to_thread(self.store.tops_except, kb_id, set(replaced))
                if kb_id is not None
                else []
            )
            for write in writes:
                top_layer = write.document["layers"] - 1
                tops += [_placeholder_top(n) for n in write.nodes if n.layer == top_layer]
            kb_layer = await budget.bound(
                build_kb_layer(
                    tops,
                    first_key=sum(len(w.nodes) for w in writes),
                    embedder=self.embedder,
                    summarizer=self.summarizer,
                    settings=self.settings,
                    progress=progress,
                )
            )
        kb_nodes = kb_layer.nodes if kb_layer else []
        build = {
            "document": label,
            "action": "messages",
            "seconds": time.perf_counter() - started,
            "embedder": self.embedder.name,
            "summarizer": self.summarizer.name,
            "notes": [f"{len(writes)} message document(s) written, {len(emptied)} dropped"],
            "prompt_tokens": kb_layer.prompt_tokens if kb_layer else 0,
            "completion_tokens": kb_layer.completion_tokens if kb_layer else 0,
        }
        try:
            kb_id, result.removed_nodes, tainted = await asyncio.to_thread(
                self.store.commit_message_documents,
                kb,
                replaced,
                writes,
                functools.partial(_resolve_placeholders, kb_nodes),
                build,
                self._version_of(kb_id),
                dropped or (),
                within,
            )
        except StaleTreeError:
            raise RaptorError(
                "The messages were not stored: the knowledge base changed meanwhile; try again."
            ) from None
        if progress:
            progress(Progress("index", 0, 0))
        await asyncio.to_thread(self.indexes.get, kb_id)
        result.documents = [w.document["name"] for w in writes]
        result.nodes = sum(len(w.nodes) for w in writes)
        log.info(
            "messages in %s: %d added, %d edited, %d removed; %d document(s) rebuilt, %d dropped in %.1fs",
            kb,
            result.added,
            result.edited,
            result.removed,
            len(writes),
            len(emptied),
            time.perf_counter() - started,
        )
        result.tainted_nodes = sorted(tainted)
        return tainted

    async def _build_message_parts(
        self,
        kb_id: int | None,
        plans: list[PartPlan],
        replaced: list[int],
        added_by: str,
        progress: ProgressCallback | None,
        removal: bool = False,
    ) -> list[MessageDocumentWrite]:
        """Each planned message document's own tree (its keys distinct across the lot): chunked here, where
        the plan counted their tokens, built on the Dask cluster when one is attached (`_build_message_trees`)."""
        held = await asyncio.to_thread(self._tokens_kept, kb_id, replaced)
        chunked = await asyncio.to_thread(self._chunk_message_parts, plans, held)
        chunk_lists = [chunks for chunks, _ in chunked]
        known = await asyncio.to_thread(self._kept_leaf_vectors, replaced, chunk_lists)
        name = plans[0].name if plans else "messages"
        trees = await self._build_message_trees(name, chunk_lists, known, progress, removal)
        writes: list[MessageDocumentWrite] = []
        base = 0
        for plan, (chunks, owners), tree in zip(plans, chunked, trees, strict=True):
            document = {
                "name": plan.name,
                "sha256": messages_sha(plan.messages),
                "size": sum(len(m.text.encode()) for m in plan.messages),
                "format": MESSAGE_FORMAT,
                "added_by": added_by,
                "chunks": len(chunks),
                "layers": tree.height,
                "tokens": sum(c.tokens for c in chunks),
            }
            nodes = _offset_keys(tree.nodes, base)
            leaf_messages = {base + i: owner for i, owner in enumerate(owners)}
            writes.append(
                MessageDocumentWrite(
                    document, nodes, leaf_messages, plan.messages, plan.group_key, plan.group_name, plan.part
                )
            )
            base += len(nodes)
        return writes

    def _chunk_message_parts(self, plans: list[PartPlan], held: int) -> list[tuple[list[Chunk], list[int]]]:
        """Each planned document's leaves' chunks and the message of each, within the token bounds (`held`:
        the knowledge base's tokens without the documents replaced). Run it in a thread."""
        embedder = self.embedder
        chunked = []
        for plan in plans:
            chunks, owners = message_chunks(
                plan.messages,
                embedder.count_tokens,
                embedder.count_tokens_batch,
                max_tokens=self.settings.chunk_tokens,
                hard_limit=embedder.max_tokens,
                max_chars=self.settings.node_max_chars,
            )
            tokens = sum(c.tokens for c in chunks)
            check_token_bounds(self.settings, plan.name, tokens, held)
            held += tokens
            chunked.append((chunks, owners))
        return chunked

    def _kept_leaf_vectors(self, replaced: list[int], chunk_lists: list[list[Chunk]]) -> dict[str, np.ndarray]:
        """The stored vectors of the replaced documents' leaves that the new documents keep, by text: only
        those, so a removed message's text goes nowhere, not even to a build worker. Run it in a thread."""
        if not replaced:
            return {}
        kept = {chunk.text for chunks in chunk_lists for chunk in chunks}
        return {text: vector for text, vector in self.store.leaf_vectors(replaced).items() if text in kept}

    async def _build_message_trees(
        self,
        name: str,
        chunk_lists: list[list[Chunk]],
        known: dict[str, np.ndarray],
        progress: ProgressCallback | None,
        removal: bool,
    ) -> list[BuiltTree]:
        """The message documents' trees, the leaves of `known` texts keeping their stored vectors: on the Dask
        cluster when one is attached, as uploads are, else here. A removal the cluster cannot run (no worker,
        lost, unreachable) is built here instead: a deleted message must leave now, not at the next start."""
        if not chunk_lists:  # a removal that only empties documents: nothing to build
            return []
        if self.cluster is not None:
            from .workers import ClusterUnreachableError

            budget = current_budget()
            try:
                return await self.cluster.build_trees(
                    name, chunk_lists, known, self.settings, progress, budget, dim=self.embedder.dim
                )
            except ClusterUnreachableError as error:
                if not removal:
                    raise
                log.warning("removing messages without the build workers, in this process: %s", error)
                if budget is not None:
                    budget.restart()  # its clock was held for the cluster
        embedder = ReusingEmbedder(self.embedder, known) if known else self.embedder
        return await build_trees(
            chunk_lists, embedder=embedder, summarizer=self.summarizer, settings=self.settings, progress=progress
        )

    # -- reading ------------------------------------------------------------------------------

    def knowledge_bases(self, space: str | None = None) -> list[str]:
        """Every knowledge base, the root space's and every other space's, sorted; or one space's."""
        if space is not None:
            return self._space_kb_names(space)
        names = self.spaces.root.store.kb_names()
        for name in self.spaces.names():
            names += self._space_kb_names(name)
        return sorted(names)

    def _space_kb_names(self, name: str) -> list[str]:
        """A space's knowledge bases; none if it has no store (never made, or deleted meanwhile)."""
        try:
            with self.spaces.pinned(name, create=False) as space:
                return space.store.kb_names()
        except NotFoundError:
            return []

    @_in_space
    def documents(self, kb: str) -> list[DocumentInfo]:
        kb_id = self.store.kb_id(kb)
        return [] if kb_id is None else self.store.documents(kb_id)

    @_in_space
    def namesakes(self, kb: str, document: DocumentInfo) -> list[DocumentInfo]:
        """The knowledge base's other documents of `document`'s name: a file added again with new content
        is a document of its own, so the earlier version still answers, cited under the same name."""
        return [d for d in self.documents(kb) if d.name == document.name and d.id != document.id]

    @_in_space
    def tree_info(self, kb: str) -> TreeInfo:
        kb_id = self.store.kb_id(kb)
        if kb_id is None:
            return TreeInfo(kb, 0, [])
        layers = [LayerInfo(*row) for row in self.store.layer_stats(kb_id)]
        return TreeInfo(kb, len(self.store.documents(kb_id)), layers)

    @_in_space
    def tree_picture(
        self,
        kb: str,
        *,
        highlight: Iterable[int] = (),
        cited: Iterable[int] = (),
        caption: str = "",
        name: str | None = None,
    ) -> TreePicture:
        """A PNG of the whole tree, with `highlight` (an answer's context) and `cited` nodes marked.

        Synchronous (reading the store and drawing take up to a few seconds at 20k leaves): the bot
        and other async callers run it in a thread. Ids no longer in the tree are reported in
        `missing` (a document added or removed since re-makes the cross-document layer). `caption`
        (e.g. the question) goes under the title, which names the tree `name` (default: `kb`).
        """
        kb_id = self.store.kb_id(kb)
        if kb_id is None or not self.store.has_nodes(kb_id):
            raise EmptyKnowledgeBaseError(f"The knowledge base {kb!r} has no documents yet.")
        plan = plan_picture(self.store.tree_shape(kb_id), name or kb, highlight=highlight, cited=cited)
        return TreePicture(
            png=render_png(plan, caption),
            nodes=plan.nodes,
            highlighted=plan.highlighted,
            cited=sorted(plan.cited),
            missing=plan.missing,
            binned=plan.binned,
        )

    @_in_space
    def builds(self, kb: str, limit: int = 20) -> list[dict[str, Any]]:
        kb_id = self.store.kb_id(kb)
        return [] if kb_id is None else self.store.builds(kb_id, limit)

    @_in_space
    def usage(self, kb: str) -> dict[str, int]:
        kb_id = self.store.kb_id(kb)
        return {} if kb_id is None else self.store.usage(kb_id)

    @_in_space
    def retrieve(
        self,
        kb: str,
        query: str,
        *,
        mode: str = "collapsed",
        budget: int | None = None,
        layers: list[int] | None = None,
        documents: list[str] | None = None,
    ) -> RetrievedContext:
        """Context for a query (synchronous: embedding and search; run it in a thread from async code)."""
        if mode not in MODES:
            raise RaptorError(f"Unknown mode {mode!r}; use one of {', '.join(MODES)}.")
        budget = self.settings.budget if budget is None else budget
        if budget <= 0:
            raise RaptorError("The token budget must be a positive number.")
        if self.settings.ranking not in RANKINGS:
            raise RaptorError(f"RAPTOR_RANKING must be one of {', '.join(RANKINGS)}, not {self.settings.ranking!r}.")
        kb_id = self.store.kb_id(kb)
        if kb_id is None or not self.store.has_nodes(kb_id):
            raise EmptyKnowledgeBaseError(f"The knowledge base {kb!r} has no documents yet.")
        self.model_check.require_same_model(self.store, kb_id, kb)
        vector = self.embedder.embed([query])[0]
        if mode == "collapsed":
            context = collapsed_tree(
                self.store,
                self.indexes.get(kb_id),
                kb_id,
                query,
                vector,
                budget=budget,
                ef=self.settings.hnsw_ef,
                layers=layers,
                documents=documents,
                count_tokens_batch=self.embedder.count_tokens_batch,
                ranking=self.settings.ranking,
                sentence_judge=self._sentence_judge(budget),
            )
        else:
            context = tree_traversal(
                self.store,
                kb_id,
                query,
                vector,
                budget=budget,
                top_k=self.settings.top_k,
                layers=layers,
                documents=documents,
            )
        self._name_sources(context)
        return context

    @_in_space
    def _unnamed(self, kb: str, query: str) -> str:
        """The query searched for a question naming a document by its file name ('what does manual.md
        say about the tines?'): without the name, whose words are in the document's title and no
        passage, and would rank its nodes above how well they answer. The answerer gets the question as
        asked, and checks the quotes come from the document named (`query/asked.py`)."""
        return without_named_files(query, [document.name for document in self.documents(kb)])

    @_in_space
    def respelled(self, kb: str, question: str, *, conversation: str = "") -> str:
        """The question with each mistyped word read as the knowledge base's documents write it
        (`query/respell.py`: "who kept the lighthose?" -> "who kept the lighthouse?"), so the search, the
        full-text index and the answer's quotes all meet the documents' words. A follow-up is respelled
        before it is rewritten, also against its `conversation`'s questions ("meetting" after "the Q2
        meeting?"), so a slip does not read as a new topic. A question in a script without spaces between words, or of a
        knowledge base with no documents, is left as it is."""
        kb_id = self.store.kb_id(kb)
        if kb_id is None or in_bigrams(question):
            return question
        read = respelled(
            question,
            self.embedder.known_words,
            lambda: self.store.word_forms(kb_id),
            conversation=conversation,
        )
        if read != question:
            log.info("read a question's mistyped words as the documents write them")
        return read

    async def _condensed(self, answerer: Answerer, kb: str, asked: str, history: list[Turn]) -> str:
        """The standalone question a follow-up stands for. Without a model, a conversation that makes a
        choice ('the second one?') reads the passages an answer's quotes came from when the quotes name
        fewer than two things (a model reads the choice from the turns itself)."""
        if isinstance(answerer, ExtractiveAnswerer):
            cited = functools.partial(self.cited_passage, kb) if chooses(asked, history) else None
            said = functools.partial(self.said_about, kb)  # a name's gender the documents show
            titled = functools.partial(self.quoted_title, kb)  # 'the year before' the figure quoted
            return await asyncio.to_thread(standalone_question, asked, history, cited, said, titled)
        return await answerer.condense(asked, history)

    def said_about(self, kb: str, name: str) -> str:
        """What the documents say around a name: each sentence of the leaves the full-text index finds
        for it that holds the name, with the sentence after it, one a line ('' when none). A follow-up's
        he/she reads a name's gender there when the conversation and the names table do not show it;
        one index query, nothing stored."""
        kb_id = self.store.kb_id(kb)
        if kb_id is None:
            return ""
        named = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
        lines: list[str] = []
        for node in self._found_leaves(kb_id, name, NAME_LOOKUPS):
            text = " ".join(node.text.split())
            spans = split_sentences(text)
            for index, (start, end) in enumerate(spans):
                if named.search(text, start, end):
                    after = spans[index + 1][1] if index + 1 < len(spans) else end
                    lines.append(text[start:after])
        return "\n".join(dict.fromkeys(lines))[:MAX_SAID_CHARS]

    def quoted_title(self, kb: str, quote: str) -> str:
        """The name, headings and first line of the document an answer's quote was taken from ('' when no
        leaf holds it): where the year or quarter of a figure the question did not name is read."""
        kb_id = self.store.kb_id(kb)
        leaf = self._cited_leaf(kb_id, quote) if kb_id is not None else None
        if leaf is None or leaf.document is None:
            return ""
        headings, text = self.store.document_openings(kb_id).get(leaf.document, ((), ""))
        return " ".join([leaf.document, *headings, text.strip().split("\n", 1)[0][:MAX_TITLE_CHARS]])

    def cited_passage(self, kb: str, quote: str) -> str:
        """The text of the leaf an answer's quote was taken from ('' when none holds it): what a choice
        among the things that answer listed reads when its quotes named fewer than two."""
        kb_id = self.store.kb_id(kb)
        leaf = self._cited_leaf(kb_id, quote) if kb_id is not None else None
        return leaf.text if leaf is not None else ""

    def _cited_leaf(self, kb_id: int, quote: str) -> StoredNode | None:
        """The leaf an answer's quote was taken from (None when none holds it)."""
        # its first sentence: a quote may join sentences that do not follow each other in the passage
        said = " ".join(quote.strip("\u2026 ").split())
        spans = split_sentences(said)
        if not spans:
            return None
        wanted = said[slice(*spans[0])]
        held = self._found_leaves(kb_id, wanted, CITED_LOOKUPS)
        return next((node for node in held if wanted in " ".join(node.text.split())), None)

    def _found_leaves(self, kb_id: int, words: str, limit: int) -> list[StoredNode]:
        """The leaves among the `limit` nodes the full-text index finds for `words`, best first."""
        hits = self.store.text_search(kb_id, [words], limit)
        nodes = self.store.nodes_by_ids([node_id for node_id, _ in hits])
        return [nodes[i] for i, _ in hits if i in nodes and nodes[i].layer == 0]

    def _followed_document(
        self, kb: str, query: str, history: list[Turn], documents: list[str] | None, asked: str = ""
    ) -> tuple[str, list[str] | None]:
        """The question to search and the document filter of a follow-up that points at a document.
        An 'it'/'this'/'that' the rewrite left leaning on the last answer ('who wrote it?' after 'What did
        the 2021 report recommend?') keeps the question and searches that answer's one document, when
        every quote of it was taken from the same one (and any filter asked for holds it). 'The other
        report' (the documents that answer did not quote), 'the second report' (`_nth_document`) or 'the
        2021 report' / 'the Q3 one' in the rewrite or in the follow-up as `asked` (the one document whose
        name or title holds that year or label, `_labelled_document`) moves the question itself to that
        document: it is searched as 'What did it recommend?' there, so the answer's support is judged
        against what the question asks, not against words that name the document and no passage; a first
        question ('What did the 2021 report recommend?') moves only by a year or label. Else the query
        and `documents` as given."""
        rewritten = split_standalone(query)
        # a first question's 'the second report' is no place among documents the user saw or chose
        moved = (_THE_OTHER.search(rewritten.core) or _THE_NTH.search(rewritten.core)) if history else None
        labelled = _THE_LABELLED.search(rewritten.core) or _THE_LABELLED.search(asked) or _IN_LABEL.search(rewritten.core)
        if labelled is not None and _compares(labelled.group(1), rewritten.context):
            labelled = None  # 'was that more than in 2019?': both reports' figures are wanted
        if moved is None and labelled is None and (not rewritten.context or not _POINTS_BACK.search(rewritten.core)):
            return query, documents
        kb_id = self.store.kb_id(kb)
        stored = [d.name for d in self.store.documents(kb_id)] if kb_id is not None else []
        if kb_id is None or len(stored) < 2:
            return query, documents
        named = self._document_names(kb_id, documents) or stored
        if moved is not None and moved.re is _THE_NTH:
            document = self._nth_document(kb_id, moved.group(1).lower(), moved.group(2).lower(), named, history)
            if document is None:
                return query, documents
            log.info("a follow-up's 'the %s %s' searched in that document", moved.group(1), moved.group(2))
            return self._as_of(kb_id, _the_document(query, moved), [document]), [document]
        if moved is None and labelled is not None:
            document = _labelled_document(labelled.group(1), self.store.document_openings(kb_id), named)
            if document is not None:
                log.info("a follow-up's 'the %s ...' searched in the one document whose title holds it", labelled.group(1))
                in_core = labelled.re.search(rewritten.core)
                if in_core is not None and in_core.re is _IN_LABEL:  # 'in Q2' goes: the document is searched
                    return query.replace(in_core.group(0), "", 1), [document]
                return (_the_document(query, in_core) if in_core else query), [document]
        if moved is not None:  # the documents the last answer did not quote ('report' ones, when any are)
            rest = self._other_documents(kb_id, moved.group(1), named, history)
            return (self._as_of(kb_id, _the_document(query, moved), rest), rest) if rest else (query, documents)
        document = self._quoted_document(kb_id, history)
        if document is None:
            return query, documents
        if not rewritten.context or not _POINTS_BACK.search(rewritten.core):
            return query, documents
        if documents and document not in named:
            return query, documents
        log.info("a follow-up's 'it' searched in the one document the last answer quoted")
        return query, [document]

    def _whole_of_document(self, kb: str, query: str, documents: list[str] | None) -> list[str] | None:
        """The documents a question about the whole searches: the one it names ('What is this handbook
        about?', `thematic_document`) among several, else `documents` as given. Searched across every
        document, such a question quoted the opening of each (the minutes' date, the paper's aim) under
        the handbook's first sentence."""
        core = split_standalone(query).core
        if not THEMATIC.search(core):
            return documents
        kb_id = self.store.kb_id(kb)
        if kb_id is None:
            return documents
        named = self._document_names(kb_id, documents) or [d.name for d in self.store.documents(kb_id)]
        if len(named) < 2:
            return documents
        document = thematic_document(core, self.store.document_openings(kb_id), named)
        if document is None:
            return documents
        log.info("a question about the whole of one document searched in that document")
        return [document]

    def _other_one(self, kb: str, asked: str, query: str, history: list[Turn]) -> str | None:
        """'and the other one?' (or 'the other?', 'what does the other one say?') as 'the other document'
        (`other_one_as_document`) when the rewrite (`query`) found no other one among what the conversation
        listed, every quote of the last answer came from one document and the knowledge base holds others:
        the last question is then asked of them (`_followed_document`), not searched for 'the other one'
        across every document. None otherwise."""
        other = other_one_as_document(asked)
        if other is None or not says_the_other(split_standalone(query).core):
            return None  # 'what about the other one?' after 'the first one' of two ferries: the second ferry
        kb_id = self.store.kb_id(kb)
        quoted = set(self._quoted_documents(kb_id, history)) if kb_id is not None else set()
        if len(quoted) != 1 or None in quoted or len(self.store.documents(kb_id)) < 2:
            return None
        log.info("a follow-up's 'the other one' read as the document the last answer did not quote")
        return other

    def _other_documents(self, kb_id: int, noun: str, named: list[str], history: list[Turn]) -> list[str]:
        """The documents 'the other report' means, among those of `named` whose name or title says `noun`
        ('report'; all of them when none does): the ones the last answer did not cite, when it cited some
        (one of two, one or two of three); when it cited every one (a question about Ines Calloway quoting
        both reports), those besides the one its first quote came from, the document it answered from.
        [] when the last answer cited none of them."""
        quoted = [name for name in dict.fromkeys(self._quoted_documents(kb_id, history)) if name in named]
        openings = self.store.document_openings(kb_id)
        called = [name for name in named if _labelled_document(noun, openings, [name])] or named
        cited = [name for name in quoted if name in called]
        if not cited:
            return []
        return [name for name in called if name not in cited] or [name for name in called if name != cited[0]]

    def _as_of(self, kb_id: int, query: str, documents: list[str]) -> str:
        """A question moved to other `documents` ('What did Ines Calloway recommend?' asked of the other
        report), with each name none of them holds read as the document, 'it' ('What did it recommend?'):
        the person belonged to the last answer's document, and what is asked of the other one is the same
        thing of its own. A name they hold stays ('What did Rowan Pike argue?' of a report that names him)."""
        rewritten = split_standalone(query)
        core = rewritten.core
        for name in self._names_of(kb_id, core)[:MAX_NAMES_MOVED]:
            leaves = self._found_leaves(kb_id, name, NAME_LOOKUPS)
            held = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", re.IGNORECASE)
            if any(leaf.document in documents and held.search(" ".join(leaf.text.split())) for leaf in leaves):
                continue
            titled = re.compile(rf"(?:\b(?:{'|'.join(TITLES)})\.?\s+)?{re.escape(name)}(['\u2019]s\b)?", re.IGNORECASE)
            core = titled.sub(lambda m: "its" if m.group(1) else "it", core, count=1)
        if core == rewritten.core:
            return query
        log.info("a name the other document does not hold read as that document")
        return replace(rewritten, core=core[:1].upper() + core[1:]).text

    def _names_of(self, kb_id: int, question: str) -> list[str]:
        """The names a question gives, as it writes them, without a title ('Dr Ines Calloway': 'Ines
        Calloway'): runs of its words that are capitalised names (`names_in`) or that the knowledge base
        writes only with a capital ('what did calloway recommend?')."""
        forms = self.store.word_forms(kb_id).forms
        named = {word.lower() for name in names_in(question) for word in name.split()}
        runs: list[list[str]] = [[]]
        for place, word in enumerate(re.findall(r"[^\W\d_][\w'\u2019.-]*|\S", question)):
            bare = _POSSESSIVE_END.sub("", word).rstrip(".")
            ways = forms.get(bare.lower()) if place and len(bare) > 2 else None  # not 'What', not 'I'
            if bare.lower() in named or (ways and all(way[:1].isupper() for way in ways)):
                runs[-1].append(bare)
            elif runs[-1]:
                runs.append([])
        names = [run[1:] if run[0].lower() in TITLES and len(run) > 1 else run for run in runs if run]
        return [" ".join(run) for run in names]

    def _nth_document(self, kb_id: int, ordinal: str, noun: str, named: list[str], history: list[Turn]) -> str | None:
        """The document 'the second report' means: the second of the documents the last answer cited, in
        the order its sources list them, when it cited two or more (what the user just saw); else the
        second of `named` (the knowledge base's documents in the order they were added, as `/kb list`
        shows them, or the ones a filter names) whose name or title says 'report', when any does, else of
        all of them. None past the last one."""
        cited = [name for name in dict.fromkeys(self._quoted_documents(kb_id, history)) if name in named]
        openings = self.store.document_openings(kb_id)
        called = [name for name in named if _labelled_document(noun, openings, [name])]
        listed = cited if len(cited) >= 2 else called or named
        place = _ORDINALS.get(ordinal, len(listed))
        return listed[place - 1] if place <= len(listed) else None

    def _quoted_document(self, kb_id: int, history: list[Turn]) -> str | None:
        """The one document every quote of the last answer was taken from (None for none, or several)."""
        found = set(self._quoted_documents(kb_id, history))
        return next(iter(found)) if len(found) == 1 and None not in found else None

    def _quoted_documents(self, kb_id: int, history: list[Turn]) -> list[str | None]:
        """The document each quote of the last answer was taken from, in the answer's order (None for a
        quote no leaf holds)."""
        last = next((turn.content for turn in reversed(history) if turn.role == "assistant"), "")
        quotes = quotes_in(last)[:MAX_QUOTES_TRACED]
        leaves = [self._cited_leaf(kb_id, quote) for quote in quotes]
        return [leaf.document if leaf is not None else None for leaf in leaves]

    def _question_context(
        self, kb: str, query: str, mode: str, budget: int, layers: list[int] | None, documents: list[str] | None
    ) -> RetrievedContext:
        """`retrieve` for a person's question: a filter that names nothing in the tree (a mistyped
        document, a layer above the top) and a context left empty by the budget or the filters are one
        sentence each, not an answer saying that the documents hold nothing."""
        kb_id = self.store.kb_id(kb)
        if kb_id is not None and self.store.has_nodes(kb_id):
            self._check_layers(kb_id, layers)
            documents = self._document_names(kb_id, documents)
        context = self.retrieve(kb, query, mode=mode, budget=budget, layers=layers, documents=documents)
        if not context.nodes and kb_id is not None:
            self._explain_empty_context(kb_id, budget, layers, documents)
        return context

    def _with_document_edges(self, nodes: list[ContextNode]) -> list[ContextNode]:
        """The context's leaves marked as opening or ending their document (`Store.document_edges`): what
        'and then?' after a document's last passage needs to say it ends there."""
        edges = self.store.document_edges([node.node_id for node in nodes if node.layer == 0])
        return [
            replace(node, opens_document=edges[node.node_id][0], ends_document=edges[node.node_id][1])
            if node.node_id in edges
            else node
            for node in nodes
        ]

    def _with_whole_table(self, question: str, context: RetrievedContext) -> RetrievedContext:
        """The context with every leaf of its table read whole, for a question asked of all its rows
        (`asks_whole_table`: a count, a superlative, a threshold, a total, a listing; or 'who/which ...?'
        naming a value of its rows, `names_row_values`): the search returned some of them, so 'how many boats
        are there?' over a table of 40 counted none. The table is the document of the best-scored leaf
        holding labelled rows. One of more than MAX_WHOLE_TABLE_ROWS rows or MAX_WHOLE_TABLE_CHARS characters
        is left as retrieved, its leaves marked so the answer says why it gives no count."""
        every = asks_whole_table(question)
        leaf = table_leaf(context.nodes) if every or asks_which_rows(question) else None
        if leaf is None:
            return context
        stored = self.store.document_leaves(leaf.node_id, MAX_WHOLE_TABLE_CHARS)
        if stored is not None and rows_in([node.text for node in stored]) > MAX_WHOLE_TABLE_ROWS:
            stored = None
        if stored is None:  # 'who is on duty on Thursday?' names values unread: the table is not said too big
            log.info("a question over a table's rows: %s is too big to read whole", leaf.document)
            return _marked_too_big(context, leaf.document) if every else context
        if not every and not names_row_values(question, [node.text for node in stored]):
            return context  # 'who is the treasurer?': a key's row, or none named; a lookup, as retrieved
        return _with_leaves(context, stored)

    def _with_superseded(self, kb: str, nodes: list[ContextNode]) -> list[ContextNode]:
        """The context's nodes of a file posted again since with new content, marked
        (`Store.superseded_nodes`): a sentence the later file says otherwise ('Wednesday evenings' for
        'Tuesday evenings') is quoted from the later file only. A summary across documents that draws on
        such a file is marked too: it may hold the earlier file's copy of the sentence."""
        named = [node.node_id for node in nodes if node.document is not None]
        superseded = self.store.superseded_nodes(named)
        kb_id = self.store.kb_id(kb)
        drawn = {name for node in nodes if node.document is None for name, _ in node.drawn_from}
        reposted = self.store.reposted_names(kb_id, sorted(drawn)) if kb_id is not None and drawn else set()
        return [
            replace(node, superseded=True) if node.node_id in superseded or _draws_on(node, reposted) else node
            for node in nodes
        ]

    def _explain_empty_context(
        self, kb_id: int, budget: int, layers: list[int] | None, documents: list[str] | None
    ) -> None:
        """A context left empty by the filters or the budget, not by the documents, in one sentence."""
        sizes = self.store.token_counts(kb_id)
        allowed = allowed_ids(self.store, kb_id, layers, documents)
        candidates = [sizes[i] for i in allowed if i in sizes] if allowed is not None else list(sizes.values())
        if not candidates:
            shown = ", ".join(map(str, sorted(set(layers or []))))
            raise NotFoundError(f"The chosen documents have no nodes in layer {shown}.")
        if budget < min(candidates):
            raise LimitError(
                f"No passage fits in a context budget of {budget:,} token{'s' if budget != 1 else ''}; "
                "use a larger budget."
            )

    def _check_layers(self, kb_id: int, layers: list[int] | None) -> None:
        """Refuse a layer filter naming a layer the tree does not have: a wrong filter, not a question
        the documents cannot answer."""
        if not layers:
            return
        top = max(row[0] for row in self.store.layer_stats(kb_id))
        missing = sorted({layer for layer in layers if not 0 <= layer <= top})
        if missing:
            raise NotFoundError(
                f"This knowledge base's layers are 0 to {top}; there is no layer {', '.join(map(str, missing))}."
            )

    def _document_names(self, kb_id: int, documents: list[str] | None) -> list[str] | None:
        """The stored names a document filter means: each given as a name (in any Unicode normal form) or
        a sha256 prefix, as `forget` takes them; NotFoundError for one that names no document."""
        if not documents:
            return documents
        names = {doc.name for doc in self.store.documents(kb_id)}
        return [name if name in names else self.store.find_document(kb_id, name).name for name in documents]

    def _name_sources(self, context: RetrievedContext) -> None:
        """Cross-document summaries belong to no one document: record the documents they draw on."""
        for node in context.nodes:
            if node.document is None:
                node.drawn_from = tuple(self.store.documents_under(node.node_id))
        refs = self.store.message_refs([n.node_id for n in context.nodes if n.layer == 0])
        for node in context.nodes:
            node.message = refs.get(node.node_id)

    @_in_space
    async def ask(
        self,
        kb: str,
        question: str,
        *,
        mode: str = "collapsed",
        budget: int | None = None,
        history: list[Turn] | None = None,
        layers: list[int] | None = None,
        documents: list[str] | None = None,
        asked_by: str = "",
        on_text: TextCallback | None = None,
        follows: int | None = None,
    ) -> Answer:
        """Answer from the last complete tree, with citations; `history` makes it a follow-up.

        `follows` names the exchange of `history` the question follows up (0: its first question and
        answer; -1, as None, the last): a reply to an older message is read against that exchange, as
        if the conversation had stopped there.

        With `on_text`, an answerer that can stream (an LLM) calls it with the text shown so far while
        it writes (see `streaming.ShownText`); the returned Answer is the same as without it.

        Every step that can take time runs off the caller's event loop, and past `settings.question_timeout` seconds the
        question is given up with a one-sentence QuestionTimeoutError."""
        deadline = asyncio.timeout(self.settings.question_timeout)
        try:
            async with deadline:
                history = _followed(history, follows)
                return await self._ask(
                    kb, question, mode, budget, history, layers, documents, asked_by, on_text
                )
        except TimeoutError:
            if not deadline.expired():
                raise
            log.warning("a question in %s ran past %.0f s and was given up", kb, self.settings.question_timeout)
            raise QuestionTimeoutError(
                f"Answering took longer than {self.settings.question_timeout:g} seconds, so it was stopped; "
                "try again, or ask a shorter question."
            ) from None

    async def _ask(
        self,
        kb: str,
        question: str,
        mode: str,
        budget: int | None,
        history: list[Turn] | None,
        layers: list[int] | None,
        documents: list[str] | None,
        asked_by: str,
        on_text: TextCallback | None,
    ) -> Answer:
        # styled letters ("𝐖𝐡𝐨 𝐤𝐞𝐩𝐭…", full-width) read as the plain ones documents are stored in
        question = " ".join(plain_letters(shown_text(question)).split())
        history = [Turn(turn.role, shown_text(turn.content)) for turn in history or []]
        if not question:
            raise RaptorError("The question is empty.")
        if len(question) > MAX_ASKED_CHARS:
            raise RaptorError(
                f"The question is longer than {MAX_ASKED_CHARS:,} characters; ask it in fewer words."
            )
        fitted = fit_question(question, MAX_QUESTION_CHARS)
        answer = await self._answer(kb, fitted, mode, budget, history, layers, documents, asked_by, on_text)
        if fitted != question:
            said_shortened(answer, len(question))
        return answer

    async def _answer(
        self,
        kb: str,
        question: str,
        mode: str,
        budget: int | None,
        history: list[Turn],
        layers: list[int] | None,
        documents: list[str] | None,
        asked_by: str,
        on_text: TextCallback | None,
    ) -> Answer:
        """`_ask` of a question within MAX_QUESTION_CHARS, its history's text as shown."""
        budget = self.settings.budget if budget is None else budget
        # more than any knowledge base may hold (an LLM prompt of everything); the configured one always goes
        most = max(self.settings.max_kb_tokens, self.settings.budget)
        if budget > most:
            raise RaptorError(
                f"A context budget of {budget:,} tokens is more than a knowledge base may hold "
                f"({most:,}); use a smaller budget."
            )
        act = small_talk_act(question)
        if history and asks_who_said(question):  # 'who said so?': the last answer's first quote's speaker
            return await self._sources_answer(
                kb, question, history, mode, budget, layers, documents, asked_by, who=True
            )
        if act is Act.SOURCES and history:
            return await self._sources_answer(
                kb, question, history, mode, budget, layers, documents, asked_by
            )
        onward = onward_ask(question) if history else None
        if onward is Onward.CHECK and act is None:
            checked = await self._checked_answer(
                question, history, lambda text: self._question_context(kb, text, mode, budget, layers, documents)
            )
            if checked.has_context:  # it searched: a question like any other in the log
                await asyncio.to_thread(self._record_question, kb, checked, asked_by)
            return checked
        if onward is not None and act is Act.UNCLEAR:
            act = None  # 'what do you mean?' after an answer asks about it
        if act is not None:
            return await asyncio.to_thread(self._small_talk_answer, kb, question, act, mode, budget)
        asked, history = await asyncio.to_thread(_conversation, question, history or [])
        if not history and names_nothing(asked):
            return await asyncio.to_thread(self._small_talk_answer, kb, question, Act.VAGUE, mode, budget)
        answerer = self.answerer
        if history:  # 'whne did he leave?' is read against the conversation as 'when did he leave?'
            spoken = "\n".join(turn.content for turn in history[-2 * TURNS_CONSIDERED :] if turn.role == "user")
            asked = await asyncio.to_thread(self.respelled, kb, asked, conversation=spoken)
        query = await self._condensed(answerer, kb, asked, history) if history else asked
        other = await asyncio.to_thread(self._other_one, kb, asked, query, history) if history else None
        if other is not None:  # 'and the other one?' after an answer from one document: the other document
            moved = await self._condensed(answerer, kb, other, history)
            if subject_terms(_THE_OTHER.sub("", split_standalone(moved).core)):  # not 'What about it?'
                asked, query = other, moved
        if onward is None:
            query, documents = await asyncio.to_thread(self._followed_document, kb, query, history, documents, asked)
            documents = await asyncio.to_thread(self._whole_of_document, kb, query, documents)
        query = await asyncio.to_thread(self.respelled, kb, query)
        searched = await asyncio.to_thread(self._unnamed, kb, _what_is_searched(query))
        context = await asyncio.to_thread(self._question_context, kb, searched, mode, budget, layers, documents)
        table_asked = onward is None or bool(LISTS_COUNTED_ROWS.match(question))  # 'which ones?' after a count
        if table_asked and holds_rows(context.nodes):  # 'how many boats are there?': every row of the table
            whole = await asyncio.to_thread(self._with_whole_table, split_standalone(query).core, context)
            context = whole if _reads_past_budget(answerer) or whole.tokens_used <= context.budget else context
        if onward in (Onward.NEXT, Onward.BEFORE) or (table_asked and holds_rows(context.nodes)):
            # ('how many members joined in 2020?': a count is stated only of a table wholly in the context)
            context.nodes = await asyncio.to_thread(self._with_document_edges, context.nodes)
        context.nodes = await asyncio.to_thread(self._with_superseded, kb, context.nodes)
        # The standalone question, not the bare follow-up, is what the answer must address; document
        # text reaches the answerer with its own bracketed numbers neutralised.
        support = await asyncio.to_thread(self.support_index, answerer, context.nodes)
        draft = await self._draft(answerer, query, context.nodes, history, on_text, support)
        if history and isinstance(answerer, ExtractiveAnswerer):
            draft = _with_choice(draft, asked, query, context.nodes)
        if isinstance(answerer, ExtractiveAnswerer):  # a first 'Did the council approve the plan?' too
            draft = _with_verdict(draft, asked, query, history, context.nodes)
        check = await asyncio.to_thread(check_answer, draft.text, support) if support is not None else None
        text, citations = map_citations(check.text if check is not None else draft.text, context.nodes)
        cite_pages(citations, context.nodes, draft.pages)
        answer = Answer(
            question=question,
            query=query,
            searched=searched,
            text=text,
            citations=citations,
            context=context,
            backend=answerer.name,
            prompt_tokens=draft.prompt_tokens,
            completion_tokens=draft.completion_tokens,
            note=draft.note,
            answered=not says_not_answered(text),
        )
        if check is not None:
            _add_support(answer, check)
        await asyncio.to_thread(self._record_question, kb, answer, asked_by)
        return answer

    async def _draft(
        self,
        answerer: Answerer,
        query: str,
        nodes: list[ContextNode],
        history: list[Turn],
        on_text: TextCallback | None,
        support: SupportIndex | None = None,
    ) -> AnswerDraft:
        """The answerer's draft, streamed through `on_text` when asked for and the answerer can. While
        the model writes, `support` embeds the context's sentences, and each finished sentence as it
        streams, so checking the answer afterwards costs little."""
        preparing = asyncio.ensure_future(asyncio.to_thread(support.prepare)) if support is not None else None
        try:
            draft = await self._write(answerer, query, nodes, history, on_text, support)
        except BaseException:
            if preparing is not None:
                preparing.cancel()
                preparing.add_done_callback(_ignore_outcome)
            raise
        if preparing is not None:
            await preparing
        return draft

    async def _write(
        self,
        answerer: Answerer,
        query: str,
        nodes: list[ContextNode],
        history: list[Turn],
        on_text: TextCallback | None,
        support: SupportIndex | None,
    ) -> AnswerDraft:
        """The answerer's draft, streamed through `on_text` when asked for and the answerer can. A
        streamed draft ends early, with what was written so far, when `stop_answers` is called."""
        stream = getattr(answerer, "answer_stream", None)
        if on_text is None or stream is None:
            return await answerer.answer(query, neutralise_context(nodes), history)
        from .streaming import ShownText  # with the LLM backend, which is imported only when configured

        context = neutralise_context(nodes)
        show = on_text
        if support is not None:

            async def show(text: str) -> None:
                await on_text(text)
                support.ahead(text)  # embed each finished sentence while the model writes the next

        feed = ShownText(nodes).feeding(show)
        written = [""]

        async def take(text: str) -> bool:
            written[0] = text
            return await feed(text)

        return await self._unless_stopped(
            stream(query, context, history, take), lambda: self._stopped_draft(written[0])
        )

    def stop_answers(self, reason: str) -> None:
        """End every answer being streamed now, and any begun later, with the text written so far, its
        citations and `reason` as its note (a bot stopping says why instead of leaving a reply cut
        off mid-sentence). Thread-safe."""
        with self._stops_lock:
            self._stop_reason = reason
            stops = list(self._answer_stops)
        for loop, stop in stops:
            with contextlib.suppress(RuntimeError):  # that loop is closed: nothing waits on it
                loop.call_soon_threadsafe(stop.set)

    async def _unless_stopped(
        self, writing: Awaitable[AnswerDraft], stopped: Callable[[], AnswerDraft]
    ) -> AnswerDraft:
        """`writing`'s draft, or `stopped()` once `stop_answers` is called (the writing is cancelled)."""
        stop = asyncio.Event()
        entry = (asyncio.get_running_loop(), stop)
        with self._stops_lock:
            self._answer_stops.add(entry)
            if self._stop_reason is not None:
                stop.set()
        task = asyncio.ensure_future(writing)
        waiter = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            raise
        finally:
            waiter.cancel()
            with self._stops_lock:
                self._answer_stops.discard(entry)
        if task.done():
            return task.result()
        task.cancel()
        await asyncio.wait({task})
        return stopped()

    def _stopped_draft(self, written: str) -> AnswerDraft:
        """The draft of an answer stopped early: its complete sentences so far, checked and cited by the
        support check as a finished answer is."""
        from .streaming import settled

        return AnswerDraft(settled(written), note=self._stop_reason or "")

    def _small_talk_answer(self, kb: str, question: str, act: Act, mode: str, budget: int) -> Answer:
        """The reply to a message that is not a question ('thanks!', 'hello') or that asks which documents
        there are: nothing searched or cited. A knowledge base with nothing in it says so, as for a question.
        Synchronous (SQLite): run it in a thread."""
        kb_id = self.store.kb_id(kb)
        if kb_id is None or not self.store.has_nodes(kb_id):
            raise EmptyKnowledgeBaseError(f"The knowledge base {kb!r} has no documents yet.")
        if act is Act.DOCUMENTS:
            reply = documents_reply([document.name for document in self.store.documents(kb_id)])
        else:
            reply = REPLIES[act]
        context = RetrievedContext(nodes=[], tokens_used=0, budget=budget, mode=mode, query=question)
        return Answer(
            question, question, reply, [], context, backend=self.answerer.name, answered=act not in UNANSWERED_ACTS
        )

    async def _sources_answer(
        self,
        kb: str,
        question: str,
        history: list[Turn],
        mode: str,
        budget: int,
        layers: list[int] | None,
        documents: list[str] | None,
        asked_by: str,
        who: bool = False,
    ) -> Answer:
        """'Where does it say that?': the last real question is answered again as it was (same tree, same
        conversation before it, so the same context and quotes), and its citations are spelled out. When
        the answer given again is not the one the conversation holds (the tree changed since), its
        citations would point at other passages: the reply says the answer cannot be traced instead.
        `who` ('who said so?'): who said what its first quote says, with that quote (`who_said_reply`), or
        where it comes from when it names no one: either way answered, with that passage as its source, and
        no 'Searched as' line naming the earlier question."""
        real = await asyncio.to_thread(without_small_talk, history)
        last = max((i for i, turn in enumerate(real) if turn.role == "user"), default=None)
        if last is None:
            return await asyncio.to_thread(self._small_talk_answer, kb, question, Act.SOURCES, mode, budget)
        previous = await self.ask(
            kb,
            real[last].content,
            mode=mode,
            budget=budget,
            history=real[:last],
            layers=layers,
            documents=documents,
            asked_by=asked_by,
        )
        said = next((turn.content for turn in real[last + 1 :] if turn.role == "assistant"), None)
        if said is not None and not same_answer(said, previous.text):
            context = RetrievedContext(nodes=[], tokens_used=0, budget=budget, mode=mode, query=question)
            return Answer(question, question, SOURCES_CHANGED, [], context, backend=previous.backend)
        if who:
            nodes = previous.context.nodes
            text, cited = who_said_reply(
                previous.text, previous.citations, lambda quote: next((n.text for n in nodes if quote in n.text), "")
            )
            if not previous.answered:  # its quotes are only the closest passages: no one said what was asked
                nothing = RetrievedContext(nodes=[], tokens_used=0, budget=budget, mode=mode, query=question)
                return Answer(question, question, SAID_OF_NOTHING, [], nothing, backend=previous.backend, answered=False)
            # the reply says where its one quote comes from, named or not: that passage is its source, and
            # what it names is the question asked, not the earlier one answered again to find the quote
            return replace(previous, question=question, query=question, searched="", text=text, citations=cited, unsupported=[],
                           wrong_citations=[], answered=bool(cited))
        only = cited_marker(question)  # '[2]?', 'the second source': that citation alone
        text = sources_reply(previous.text, previous.citations, only)
        citations = chosen_citations(previous.citations, only) or previous.citations
        # the list of places holds none of the answer's sentences: nothing in it to count as unfound
        return replace(
            previous, question=question, text=text, citations=citations, unsupported=[], wrong_citations=[]
        )

    async def _checked_answer(
        self, question: str, history: list[Turn], search: Callable[[str], RetrievedContext]
    ) -> Answer:
        """'Is that true?': the last answer's claims are searched for (`search`: the question's context
        for a text) in the tree as it is now, and the reply quotes the sentences that say them, or says
        that nothing supports them (verify.py). The claims are searched in batches within the question
        limit, so a long answer's later claims are looked for too; past MAX_CLAIMS the reply says how many
        were not checked. With an answerer that writes prose (an LLM), a claim is also found by its
        meaning, as the support check finds a written sentence's source."""
        said = last_answer(await asyncio.to_thread(without_small_talk, history))
        settled = said is not None and not answered_nothing(said)
        every = claims_of(said) if settled else []
        claims = every[:MAX_CLAIMS]
        if not claims:  # no answer yet, or one that answered nothing: nothing to confirm
            nothing = RetrievedContext(nodes=[], tokens_used=0, budget=0, mode="", query=question)
            text = UNSETTLED if said is not None and not settled else NOTHING_TO_CHECK
            return Answer(question, question, text, [], nothing, self.answerer.name, answered=False)
        found = [await asyncio.to_thread(search, batch) for batch in claim_batches(claims, MAX_QUESTION_CHARS)]
        context = _merged_contexts(found, " ".join(claims))
        support = await asyncio.to_thread(self.support_index, self.answerer, context.nodes)
        reply = await asyncio.to_thread(check_reply, claims, context.nodes, support, len(every) - len(claims))
        text, citations = map_citations(reply, context.nodes)
        answered = bool(citations)
        return Answer(
            question, context.query, text, citations, context, self.answerer.name, answered=answered, verified=claims
        )

    def _record_question(self, kb: str, answer: Answer, asked_by: str) -> None:
        kb_id = self.store.kb_id(kb)
        if kb_id is None:
            return
        self.store.record_question(
            kb_id,
            {
                "asked_by": asked_by,
                "mode": answer.context.mode,
                "backend": answer.backend,
                "prompt_tokens": answer.prompt_tokens,
                "completion_tokens": answer.completion_tokens,
                "context_tokens": answer.context.tokens_used,
                "nodes": len(answer.context.nodes),
            },
        )

    # -- health -------------------------------------------------------------------------------

    def doctor(self, repair: bool = True) -> DoctorReport:
        """Check SQLite and every index of every space; rebuild what is derived (indices) when asked, and
        remove what a killed import left."""
        report = self._doctor_space(repair)
        abandoned = abandoned_imports(self.spaces, remove=repair)
        report.problems += abandoned
        report.repaired += abandoned if repair else []
        for name in self.spaces.names():
            try:
                with self.spaces.pinned(name) as space, self._working_in(space):
                    found = self._doctor_space(repair)
            except sqlite3.DatabaseError as error:
                if not is_damaged_database(error):
                    raise
                log.warning("the database of space %s is damaged", name, exc_info=True)
                found = DoctorReport([damaged_store(space_dir(self.settings, name) / DB_NAME, error)], [])
            report.problems += [f"space {name}: {problem}" for problem in found.problems]
            report.repaired += [f"space {name}: {problem}" for problem in found.repaired]
        return report

    def _doctor_space(self, repair: bool) -> DoctorReport:
        problems = list(self.store.integrity_problems())
        repaired: list[str] = []
        text_index = self.store.text_index_problems()
        problems += text_index
        if repair:  # derived from the nodes: always rebuilt, so a silently stale index is fixed too
            self.store.rebuild_text_index()
            if text_index and not self.store.text_index_problems():
                repaired += text_index
        leftovers = self.indexes.abandoned_writes(remove=repair)
        problems += leftovers
        repaired += leftovers if repair else []
        for kb in self.store.kb_names():
            kb_id = self.store.kb_id(kb)
            if kb_id is None:
                continue
            problems += self._vectors_of_another_model(kb, kb_id)
            found = self.indexes.check(kb_id)
            problems += found
            if found and repair:
                self.indexes.rebuild(kb_id)
                if not self.indexes.check(kb_id):
                    repaired += found
        return DoctorReport(problems, repaired)


    def _vectors_of_another_model(self, kb: str, kb_id: int) -> list[str]:
        """Doctor's line for a knowledge base built with another embedding model (nothing it can repair: the
        vectors must be made again from the documents)."""
        if not self.store.has_nodes(kb_id):
            return []
        found = self.model_check.agreement_of(self.store, kb_id)
        if found.same_model:
            return []
        return [
            f"knowledge base {kb!r}: built with another embedding model than {self.embedder.name} (its leaves' "
            f"vectors and this model's agree to cosine {found.cosine:.2f}); forget its documents and add them "
            "again, or set RAPTOR_EMBED_MODEL to the model that built it"
        ]


def _draws_on(node: ContextNode, names: set[str]) -> bool:
    """Whether a summary across documents draws on one of the named documents."""
    return node.document is None and any(name in names for name, _ in node.drawn_from)
