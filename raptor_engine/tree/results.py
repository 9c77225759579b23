"""What a build worker returns is checked before anything of it is stored.

A worker on another machine (`raptor worker`) is another process the bot's store trusts with nothing: a
tree is committed as it comes back, so a worker that is broken, of a build with a bug, or run by someone
who holds the cluster's certificate could hand the bot vectors that are NaN or of another model's size
(every later search of the knowledge base compares against them), nodes linked to stored nodes of another
channel's knowledge base in the same store (`stored_children`: their text would be cited in this channel),
texts with terminal escapes, or summaries for the LLM cache every server shares. Each check here says in a
few words what was wrong; the engine turns it into one sentence and stores nothing.

What this cannot stop: Dask itself unpickles what a worker sends (an error's exception, for one), so code
run by a worker holding the cluster's certificate can run code in the bot's process too (docs/SCALING.md,
"Who can get in: the build cluster's results"). The certificate is the boundary; these checks keep a
worker that is merely wrong, or one that only controls its data, from writing it into the store.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ingest.sentences import SentenceSpan
from ..storage.llm_cache import CachedSummary
from ..storage.records import NewNode
from ..types import Chunk
from .build import BuiltTree, LayerRecord
from .summarize import clip_chars

# A control character the loaders never keep (every C0 code but tab, line feed, form feed and carriage
# return; DEL; C1): one in a returned text is a terminal escape the CLI would print.
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
NODE_KINDS = {"leaf": 0, "summary": 1}  # a worker's tree holds these kinds only (the engine adds "kb"); their lowest layer


class BadResultError(ValueError):
    """A worker's result is not a tree this version builds; the message says what, in a few words."""


def _int(value: Any, what: str, low: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise BadResultError(f"{what} is not a whole number from {low}")
    return value


def _text(value: Any, what: str, max_chars: int) -> str:
    if not isinstance(value, str):
        raise BadResultError(f"{what} is not text")
    if len(value) > max_chars:
        raise BadResultError(f"{what} has {len(value):,} characters, over the limit of {max_chars:,}")
    if CONTROL_CHARS.search(value):
        raise BadResultError(f"{what} holds control characters")
    return value


def check_vector(value: Any, dim: int, what: str) -> None:
    """A vector of `dim` finite float32 numbers, as the embedder makes them."""
    if not isinstance(value, np.ndarray) or value.dtype != np.float32 or value.shape != (dim,):
        shape = getattr(value, "shape", None)
        raise BadResultError(f"{what} is not a vector of {dim} numbers (shape {shape})")
    if not np.isfinite(value).all():
        raise BadResultError(f"{what} holds numbers that are not finite (NaN or infinity)")


def _check_span_fields(node: NewNode, what: str) -> None:
    for name in ("start", "end", "page"):
        value = getattr(node, name)
        if value is not None:
            _int(value, f"{what}'s {name}")
    if node.start is not None and (node.end is None or node.end < node.start):
        raise BadResultError(f"{what} ends before it starts")
    if not isinstance(node.heading, tuple) or not all(isinstance(h, str) for h in node.heading):
        raise BadResultError(f"{what}'s heading is not a list of texts")
    for heading in node.heading:
        _text(heading, f"{what}'s heading", 10_000)
    marks = node.page_marks
    if not isinstance(marks, tuple) or not all(
        isinstance(m, tuple) and len(m) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in m)
        for m in marks
    ):
        raise BadResultError(f"{what}'s page marks are not pairs of numbers")
    if not isinstance(node.code, bool):
        raise BadResultError(f"{what}'s code flag is not true or false")


def _check_sentences(node: NewNode, what: str) -> None:
    spans = node.sentences
    if spans is None:
        return
    if not isinstance(spans, list) or not all(type(s) is SentenceSpan for s in spans):
        raise BadResultError(f"{what}'s sentences are not sentence spans")
    for span in spans:
        for name in ("start", "end", "tokens", "fingerprint"):
            _int(getattr(span, name), f"{what}'s sentence {name}", low=-(2**63))
        if span.source != node.text or not 0 <= span.start <= span.end <= len(node.text):
            raise BadResultError(f"{what} has a sentence outside its text")


def check_nodes(nodes: Any, dim: int, max_chars: int) -> list[NewNode]:
    """A worker tree's nodes: what the store commits of each, and the links between them (children before
    parents, never a stored node: a worker's tree links to nothing it was not sent)."""
    if not isinstance(nodes, list) or not all(type(n) is NewNode for n in nodes):
        raise BadResultError("its nodes are not nodes")
    seen: set[int] = set()
    for position, node in enumerate(nodes):
        what = f"node {position}"
        key = _int(node.key, f"{what}'s key")
        if key in seen:
            raise BadResultError(f"{what}'s key {key} is another node's too")
        if node.kind not in NODE_KINDS:
            raise BadResultError(f"{what} is of a kind a worker does not build")
        layer = _int(node.layer, f"{what}'s layer")
        if (layer == 0) != (node.kind == "leaf"):
            raise BadResultError(f"{what} is a {node.kind} on layer {layer}")
        _text(node.text, what, max_chars)
        _int(node.tokens, f"{what}'s token count")
        check_vector(node.embedding, dim, f"{what}'s vector")
        if node.stored_children:
            raise BadResultError(f"{what} links to stored nodes")
        children = node.children
        if not isinstance(children, list) or not all(isinstance(c, int) and not isinstance(c, bool) for c in children):
            raise BadResultError(f"{what}'s children are not node keys")
        if node.kind == "leaf" and children:
            raise BadResultError(f"{what} is a leaf with children")
        if node.kind == "summary" and (not children or not set(children) <= seen):
            raise BadResultError(f"{what} is a summary of nodes the tree does not have before it")
        _check_span_fields(node, what)
        _check_sentences(node, what)
        seen.add(key)
    return nodes


def check_built_tree(tree: Any, dim: int, max_chars: int) -> BuiltTree:
    """One tree of a worker's result (its nodes, `check_nodes`; its layers and token counts)."""
    if type(tree) is not BuiltTree:
        raise BadResultError("it is not a tree")
    nodes = check_nodes(tree.nodes, dim, max_chars)
    if not isinstance(tree.layers, list) or not all(type(layer) is LayerRecord for layer in tree.layers):
        raise BadResultError("its layers are not layer records")
    for layer in tree.layers:
        _int(layer.nodes, "a layer's node count")
        if not isinstance(layer.notes, list) or not all(isinstance(n, str) for n in layer.notes):
            raise BadResultError("a layer's notes are not texts")
        for note in layer.notes:
            _text(note, "a layer's note", 10_000)
    if nodes and max(n.layer for n in nodes) != len(tree.layers) - 1:
        raise BadResultError("its layers and its nodes disagree")
    _text(tree.stop_reason, "its stop reason", 10_000)
    _int(tree.prompt_tokens, "its prompt token count")
    _int(tree.completion_tokens, "its completion token count")
    return tree


def check_leaf_texts(tree: BuiltTree, chunks: Sequence[Chunk], what: str = "its leaves") -> None:
    """The tree's leaves are the chunks it was built from, one each, in order (the text the store keeps
    and cites is the document's, not the worker's)."""
    leaves = [n for n in tree.nodes if n.kind == "leaf"]
    if [n.text for n in leaves] != [c.text for c in chunks]:
        raise BadResultError(f"{what} are not the chunks of the document")


def check_chunks(chunks: Any, max_chars: int) -> list[Chunk]:
    """An upload's chunks, as `Chunk`s the store counts and the index cites."""
    if not isinstance(chunks, list) or not all(type(c) is Chunk for c in chunks):
        raise BadResultError("its chunks are not chunks")
    for position, chunk in enumerate(chunks):
        what = f"chunk {position}"
        _text(chunk.text, what, max_chars)
        for name in ("index", "start", "end", "tokens"):
            _int(getattr(chunk, name), f"{what}'s {name}")
    return chunks


def check_summaries(added: Any, summary_texts: list[str], max_chars: int) -> dict[str, CachedSummary]:
    """The summaries a worker asks the bot to cache (the cache every server shares): only those its tree
    holds as summary nodes (`summary_texts`, one per node), one entry per summary node at most, under a key
    of the cache's form."""
    if not isinstance(added, dict):
        raise BadResultError("its new summaries are not a mapping")
    if len(added) > len(summary_texts):
        raise BadResultError(f"it returned {len(added):,} new summaries for {len(summary_texts):,} summary nodes")
    held = set(summary_texts)
    for key, summary in added.items():
        if not isinstance(key, str) or not re.fullmatch(r"[0-9a-f]{64}", key):
            raise BadResultError("a new summary's key is not a cache key")
        if type(summary) is not CachedSummary:
            raise BadResultError("a new summary is not a summary")
        if not isinstance(summary.text, str) or clip_chars(summary.text, max_chars) not in held:
            raise BadResultError("a new summary is none of its tree's summary nodes")
        if len(summary.text) > 20 * max_chars:  # the model's own text, before it is clipped to a node's size
            raise BadResultError("a new summary is longer than any summary")
        _int(summary.prompt_tokens, "a new summary's prompt token count")
        _int(summary.completion_tokens, "a new summary's completion token count")
    return added


def summary_texts(trees: Sequence[BuiltTree]) -> list[str]:
    """The texts of the summary nodes of `trees`, one per node (what a worker's new cached summaries must
    be: two clusters may be summarised in the same words)."""
    return [n.text for tree in trees for n in tree.nodes if n.kind == "summary"]


def vector_size(trees: Sequence[Any]) -> int:
    """The size of the first vector of `trees` (what every other must have when the bot's own embedder's is
    not given); 0 when there is none."""
    for tree in trees:
        for node in getattr(tree, "nodes", None) or []:
            shape = getattr(getattr(node, "embedding", None), "shape", ())
            return int(shape[0]) if len(shape) == 1 else 0
    return 0


def check_document_result(built: Any, added: Any, dim: int | None, max_chars: int) -> None:
    """An upload's result (`DocumentTree`): its tree, its chunks (one leaf each), its texts, its new
    summaries. BadResultError says what was wrong."""
    from .docbuild import DocumentTree

    if type(built) is not DocumentTree:
        raise BadResultError("it is not a document's tree")
    tree = check_built_tree(built.tree, dim or vector_size([built.tree]), max_chars)
    check_leaf_texts(tree, check_chunks(built.chunks, max_chars))
    for name in ("format", "text_sha256", "words_sha256"):
        _text(getattr(built, name), f"its {name}", 200)
    if not isinstance(built.notices, tuple):
        raise BadResultError("its notices are not texts")
    for notice in built.notices:
        _text(notice, "a notice", 10_000)
    check_summaries(added, summary_texts([tree]), max_chars)


def check_trees_result(
    trees: Any, added: Any, chunk_lists: Sequence[Sequence[Chunk]], dim: int | None, max_chars: int
) -> None:
    """A message rebuild's result: one tree per document sent, whose leaves are the chunks sent."""
    if not isinstance(trees, list) or len(trees) != len(chunk_lists):
        raise BadResultError(f"it is not {len(chunk_lists)} trees")
    size = dim or vector_size(trees)
    for tree, chunks in zip(trees, chunk_lists, strict=True):
        check_leaf_texts(check_built_tree(tree, size, max_chars), chunks)
    check_summaries(added, summary_texts(trees), max_chars)
