"""Retrieval: the collapsed tree (the paper's choice) and tree traversal.

Collapsed tree: every layer is searched at once through the knowledge base's hnswlib index, and
nodes are taken in score order while they fit the token budget. A node that does not fit is
skipped and the next one tried, so one long summary does not end the context early (the official
code stops at the first node that does not fit).

Tree traversal: the top-k nodes among the roots, then the top-k among their children, down to
the leaves; the selected nodes fill the budget top-down.
"""

from __future__ import annotations

import numpy as np

from .index import KBIndex
from .store import Store, StoredNode
from .types import ContextNode, RetrievedContext

CANDIDATES = 200  # nodes fetched from the index before filling the budget


def _context_node(node: StoredNode, score: float) -> ContextNode:
    return ContextNode(
        node_id=node.id,
        layer=node.layer,
        document=node.document,
        score=score,
        text=node.text,
        tokens=node.tokens,
        leaf_count=node.leaf_count,
        page=node.page,
        heading=node.heading,
        start=node.start,
        end=node.end,
    )


def pick_within_budget(sizes: list[tuple[int, int]], budget: int) -> list[int]:
    """Positions of the (key, tokens) pairs taken in order while they fit; one that does not fit is
    skipped, not the end of the context."""
    picked: list[int] = []
    used = 0
    for position, (_, tokens) in enumerate(sizes):
        if used + tokens <= budget:
            picked.append(position)
            used += tokens
    return picked


def fill_budget(scored: list[tuple[StoredNode, float]], budget: int) -> tuple[list[ContextNode], int]:
    """Take nodes in the given order while they fit; skip (do not stop at) a node that does not."""
    picked = [scored[i] for i in pick_within_budget([(n.id, n.tokens) for n, _ in scored], budget)]
    return [_context_node(node, score) for node, score in picked], sum(n.tokens for n, _ in picked)


def allowed_ids(
    store: Store, kb_id: int, layers: list[int] | None, documents: list[str] | None
) -> set[int] | None:
    """The node ids a filtered search may return, or None for no filter."""
    if not layers and not documents:
        return None
    sql = "SELECT n.id FROM nodes n LEFT JOIN documents d ON d.id = n.doc_id WHERE n.kb_id = ?"
    params: list[object] = [kb_id]
    if layers:
        sql += f" AND n.layer IN ({','.join('?' * len(layers))})"
        params += list(layers)
    if documents:
        sql += f" AND d.name IN ({','.join('?' * len(documents))})"
        params += list(documents)
    return {row[0] for row in store.db.execute(sql, params).fetchall()}


def collapsed_tree(
    store: Store,
    index: KBIndex,
    kb_id: int,
    query: str,
    query_vector: np.ndarray,
    *,
    budget: int,
    ef: int,
    layers: list[int] | None = None,
    documents: list[str] | None = None,
) -> RetrievedContext:
    allowed = allowed_ids(store, kb_id, layers, documents)
    if allowed is not None and not allowed:
        return RetrievedContext([], 0, budget, "collapsed", query)
    hits = index.search(
        query_vector, k=CANDIDATES, ef=ef, allowed=None if allowed is None else allowed.__contains__
    )
    # The budget is decided on token counts alone; only the ~20 nodes that fit are read in full
    # (reading all 200 candidates' texts cost more than the search itself at 100k nodes).
    sizes = store.node_tokens([node_id for node_id, _ in hits])
    present = [(node_id, score) for node_id, score in hits if node_id in sizes]
    picked = [present[i] for i in pick_within_budget([(i, sizes[i]) for i, _ in present], budget)]
    nodes = store.nodes_by_ids([node_id for node_id, _ in picked])
    chosen, used = fill_budget([(nodes[i], score) for i, score in picked if i in nodes], budget)
    return RetrievedContext(chosen, used, budget, "collapsed", query)


def tree_traversal(
    store: Store,
    kb_id: int,
    query: str,
    query_vector: np.ndarray,
    *,
    budget: int,
    top_k: int,
    layers: list[int] | None = None,
    documents: list[str] | None = None,
) -> RetrievedContext:
    """Top-k per layer from the roots down; exact cosine scores over the few candidates at each step."""
    allowed = allowed_ids(store, kb_id, layers, documents)
    if documents:
        # Cross-document summaries mix documents; start from the chosen documents' own tops.
        frontier = [t.id for t in store.document_tops(kb_id) if allowed is not None and t.id in allowed]
    else:
        frontier = store.root_ids(kb_id)
    selected: list[tuple[int, float]] = []
    seen: set[int] = set()
    while frontier:
        ids, matrix = store.embeddings(kb_id, ids=frontier)
        if len(ids) == 0:
            break
        scores = matrix @ query_vector.astype(np.float32)
        order = np.argsort(-scores, kind="stable")[:top_k]
        picked = [(int(ids[i]), float(scores[i])) for i in order if int(ids[i]) not in seen]
        seen.update(node_id for node_id, _ in picked)
        selected += picked
        children = store.children([node_id for node_id, _ in picked])
        frontier = sorted({c for kids in children.values() for c in kids} - seen)
    nodes = store.nodes_by_ids([node_id for node_id, _ in selected])
    scored = [
        (nodes[node_id], score)
        for node_id, score in selected
        if node_id in nodes and (not layers or nodes[node_id].layer in layers)
    ]
    chosen, used = fill_budget(scored, budget)
    return RetrievedContext(chosen, used, budget, "traversal", query)
