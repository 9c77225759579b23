"""The quote model as a judge of the collapsed tree's first candidates (`retrieve.judged_order`,
`ExtractiveAnswerer.node_scores`): measured as an order of the context (docs/EVALUATION.md, "Small
budgets") and not the engine's. A how-many question judges the node giving the number higher, the
order is the same every time, and nodes the judge cannot score fall back cleanly."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from raptor_engine import Engine
from raptor_engine.query.answer import ExtractiveAnswerer
from raptor_engine.query.ranker import NodeCandidate, load_ranker
from raptor_engine.query.retrieve import FUSION, Fusion, collapsed_tree, judged_order
from raptor_engine.storage.records import StoredNode
from raptor_engine.types import ContextNode
from tests.unhurried import unhurried_settings

# A paper's opening and methods: the generic sentences hold the question's words ("look", "tags",
# "many"), the leaf that answers it holds a number and few of them.
PAPER = [
    "Introduction\nTags help readers find e-books. Many publishers look at tags to describe their books, and "
    "readers look at tags when they search a shop.",
    "Tag recommendation suggests tags for a new e-book. We look at how well recommended tags match the tags "
    "that editors chose, and at how many of them readers use.",
    "Related work\nMost tag recommenders look at the text of a book. Few of them look at search terms, although "
    "many readers look for books by the words they type.",
    "Dataset\nOur dataset has two sources of data, one to generate tag recommendations and one to evaluate "
    "them. The statistics are in Table 1.",
    "For editor tags, we collect data of 48,705 e-books from 13 publishers. Apart from the editor tags, the "
    "data holds the ISBN, the title, a description and the author of each e-book.",
    "Evaluation\nWe measure accuracy with precision and recall. With semantic similarity we measure how close "
    "the recommended tags are to the relevant tags in meaning.",
    "Results\nCombining both sources of data gives the best tag recommendations. Approaches trained only on "
    "search terms are poor in accuracy but diverse.",
    "Conclusion\nWe look forward to looking at more publishers and at tags in other languages, since many tags "
    "look alike across shops.",
]
HOW_MANY = "How many tags do they look at?"
JUDGED = Fusion(judged=20)  # as raptor_tools.benchmarks.context_orders measures it


def _context_node(node_id: int, text: str, layer: int = 0) -> ContextNode:
    return ContextNode(
        node_id=node_id,
        layer=layer,
        document="paper.txt",
        score=0.5,
        text=text,
        tokens=len(text.split()),
        leaf_count=1,
        page=None,
        heading=(),
        start=0,
        end=len(text),
    )


class _Store:
    """The one store call `judged_order` makes: reading the head's rows."""

    def __init__(self, ids: list[int]):
        self.rows = {
            i: StoredNode(i, 1, 1, "d", 0, "leaf", f"node {i}", 3, 1, None, None, None, ())
            for i in ids
        }

    def nodes_by_ids(self, ids: list[int]) -> dict[int, StoredNode]:
        return {i: self.rows[i] for i in ids if i in self.rows}


def _judged(scores: dict[int, list[float]], fusion: Fusion, ids: list[int] | None = None) -> list[int]:
    ids = ids if ids is not None else list(scores)
    candidates = [NodeCandidate(i, 0.5, vector_rank=rank) for rank, i in enumerate(ids)]
    known: dict[int, StoredNode] = {}
    order = judged_order(
        _Store(list(scores)),  # type: ignore[arg-type]
        "q",
        np.zeros(4, dtype=np.float32),
        candidates,
        lambda question, vector, nodes: [scores[node.node_id] for node in nodes],
        fusion,
        known,
    )
    return [c.node_id for c in order]


def test_the_judge_reorders_only_the_head_and_the_fused_rank_breaks_near_ties():
    scores = {1: [0.40], 2: [0.45], 3: [0.90], 4: [0.41], 5: [0.99]}
    # the head is the first 4; node 5 stays behind it whatever its score
    assert _judged(scores, Fusion(judged=4, judge_rank_weight=0.0)) == [3, 2, 4, 1, 5]
    # rank weight 0.1 over 4 places takes 0.025 a place: 2 (0.45 - 0.025) still passes 1 (0.40), 4 (0.41 -
    # 0.075) falls behind 1
    assert _judged(scores, Fusion(judged=4, judge_rank_weight=0.1)) == [3, 2, 1, 4, 5]
    # a heavy rank weight keeps the fused order
    assert _judged(scores, Fusion(judged=4, judge_rank_weight=5.0)) == [1, 2, 3, 4, 5]
    assert _judged(scores, FUSION) == [1, 2, 3, 4, 5]  # the engine judges none


def test_a_nodes_worth_is_the_mean_of_its_best_sentences():
    scores = {1: [0.9, 0.1, 0.1], 2: [0.6, 0.5, 0.5]}
    flat = Fusion(judged=2, judge_rank_weight=0.0)
    assert _judged(scores, dataclasses.replace(flat, judge_sentences=1)) == [1, 2]  # 0.9 against 0.6
    assert _judged(scores, flat) == [2, 1]  # best two: 0.5 against 0.55
    assert _judged(scores, dataclasses.replace(flat, judge_sentences=0)) == [2, 1]  # all: 0.37 against 0.53


def test_nodes_the_judge_cannot_score_count_as_its_lowest_and_gone_nodes_go_last():
    scores: dict[int, list[float]] = {1: [], 2: [0.2], 3: [0.8]}
    assert _judged(scores, Fusion(judged=3, judge_rank_weight=0.0)) == [3, 1, 2]  # 1 ties 2 at 0.2, ranks first
    assert _judged({1: [], 2: []}, JUDGED) == [1, 2]  # nothing scored: the fused order
    # node 9 was found by the search but is no longer stored: it is not judged and follows the head
    assert _judged({1: [0.1], 3: [0.7]}, Fusion(judged=3, judge_rank_weight=0.0), ids=[1, 9, 3]) == [3, 1, 9]


@pytest.fixture(scope="module")
def judge(embedder) -> ExtractiveAnswerer:
    return ExtractiveAnswerer(embedder, ranker=load_ranker())


def test_each_nodes_sentences_are_scored_and_a_copy_counts_for_both(judge):
    leaves = [_context_node(1, PAPER[1]), _context_node(2, PAPER[4]), _context_node(3, "Dataset")]
    summary = _context_node(4, PAPER[4].split(". ")[0] + ".", layer=1)  # a summary copying leaf 2's sentence
    nodes = [*leaves, summary]
    vector = judge.embedder.embed([HOW_MANY])[0]
    scores = judge.node_scores(HOW_MANY, vector, nodes)
    assert [len(found) for found in scores] == [2, 2, 0, 1]  # a heading alone has no quotable sentence
    assert all(found == sorted(found, reverse=True) for found in scores)
    assert scores[3][0] in scores[1]  # the summary's sentence is leaf 2's, scored once and counted for both
    assert judge.node_scores(HOW_MANY, vector, nodes) == scores  # deterministic
    assert ExtractiveAnswerer(judge.embedder).node_scores(HOW_MANY, vector, nodes) == [[]] * 4  # no ranker


def test_a_how_many_question_judges_the_node_giving_the_number_higher(judge):
    """The same node with and without a number: "how many" prefers the number, "which" does not."""
    plain = "Dataset\nIn total the study looks at the tags of the e-books. The tags come from the publishers."
    counted = "Dataset\nIn total the study looks at 48,705 tags of e-books. The tags come from the publishers."
    nodes = [_context_node(1, plain), _context_node(2, counted)]
    for question, number_first in ((HOW_MANY, True), ("Which tags do they look at?", False)):
        without, with_number = judge.node_scores(question, judge.embedder.embed([question])[0], nodes)
        assert (max(with_number) > max(without)) is number_first


async def test_the_judged_context_is_the_same_every_time_and_off_is_the_fused_order(tmp_path, embedder, judge):
    engine = Engine(unhurried_settings(data_dir=tmp_path, ranking="hybrid"), embedder=embedder)
    try:
        await engine.ingest("kb", "paper.txt", "\n\n".join(PAPER).encode(), added_by="t")
        kb_id = engine.store.require_kb("kb")
        vector = engine.embedder.embed([HOW_MANY])[0]

        judged_calls: list[int] = []

        def spied_judge(question, query_vector, nodes):  # noqa: ANN001, ANN202 - judge.node_scores' own
            judged_calls.append(len(nodes))
            return judge.node_scores(question, query_vector, nodes)

        def context(fusion: Fusion, with_judge: bool = True) -> list[int]:
            return [
                node.node_id
                for node in collapsed_tree(
                    engine.store,
                    engine.indexes.get(kb_id),
                    kb_id,
                    HOW_MANY,
                    vector,
                    budget=200,
                    ef=engine.settings.hnsw_ef,
                    ranking="hybrid",
                    fusion=fusion,
                    judge=spied_judge if with_judge else None,
                ).nodes
            ]

        judged = context(JUDGED)
        assert judged and context(JUDGED) == judged
        assert judged_calls and all(count > 1 for count in judged_calls)  # the first candidates were judged
        judged_calls.clear()
        assert context(Fusion(judged=0)) == context(JUDGED, with_judge=False) == context(FUSION)
        assert not judged_calls
        # whether the judged order differs from the fused one on this tree is a near tie of the vectors; that
        # the judge orders by its scores is tested on fixed candidates above
    finally:
        engine.close()
