"""The hybrid order's knobs (`retrieve.Fusion`) and the benchmark that compares orders of the context
at a small budget on the evaluation splits (docs/EVALUATION.md, "Small budgets")."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from raptor_engine import Engine, Settings
from raptor_engine.query.ranker import NARRATIVE, PAPER, NodeCandidate
from raptor_engine.query.retrieve import FUSION, Fusion, collapsed_tree, fusion_score
from raptor_tools.benchmarks.context_orders import (
    ENGINE_ORDER,
    METHODS,
    ORACLE,
    ORDERS,
    ROWS,
    SPLITS,
    Loss,
    fusion_for,
    greedy_oracle,
    kb_kind,
    loss_lines,
    paired_difference,
    set_recalls,
    split_table,
)
from raptor_tools.evaluate import build_trees, load_eval_set, score_context, split_of
from tests.test_eval import write_set
from tests.test_text_index import CODES, _fault_log
from tests.unhurried import unhurried_settings


def test_the_fusion_weighs_each_search_by_its_rank():
    vector_first = NodeCandidate(1, 0.9, vector_rank=0)
    both_middling = NodeCandidate(2, 0.5, vector_rank=9, text_rank=4)
    text_first = NodeCandidate(3, 0.1, text_rank=0)
    assert FUSION == Fusion()
    # k = 60: found by both searches at middling ranks beats the vector search's first
    assert fusion_score(both_middling) > fusion_score(vector_first)
    # a small k lets one first place count more than two middling ones
    assert fusion_score(vector_first, Fusion(rrf_k=2)) > fusion_score(both_middling, Fusion(rrf_k=2))
    # the text weight scales the full-text rank's share only
    assert fusion_score(text_first, Fusion(text_weight=0.0)) == 0.0
    assert fusion_score(both_middling, Fusion(text_weight=0.0)) == fusion_score(
        NodeCandidate(2, 0.5, vector_rank=9)
    )
    assert fusion_score(text_first, Fusion(text_weight=0.5)) == pytest.approx(fusion_score(text_first) / 2)


async def test_rare_term_nodes_come_first_whatever_the_fusion(tmp_path, embedder):
    """With the full-text rank weighted 0 the fused order is the vector order, which misses some fault
    codes at this budget; putting the nodes that name a rare word of the question first finds them all."""
    engine = Engine(unhurried_settings(data_dir=tmp_path, ranking="hybrid"), embedder=embedder)
    try:
        await engine.ingest("kb", "faults.txt", _fault_log().encode(), added_by="t")
        kb_id = engine.store.require_kb("kb")

        def found(fusion: Fusion) -> int:
            hits = 0
            for code in CODES:
                question = f"What happened with fault {code}?"
                context = collapsed_tree(
                    engine.store,
                    engine.indexes.get(kb_id),
                    kb_id,
                    question,
                    engine.embedder.embed([question])[0],
                    budget=150,
                    ef=engine.settings.hnsw_ef,
                    ranking="hybrid",
                    fusion=fusion,
                )
                hits += any(code in node.text for node in context.nodes)
            return hits

        assert found(Fusion(text_weight=0.0, rare_first=False)) < len(CODES)
        assert found(Fusion(text_weight=0.0)) == len(CODES)
        assert found(FUSION) == len(CODES)
    finally:
        engine.close()


def test_an_order_by_kind_takes_its_kind_s_fusion_and_else_the_one_for_no_kind():
    by_kind = {PAPER: Fusion(text_weight=3.0), None: Fusion(text_weight=0.5)}
    assert fusion_for(by_kind, PAPER) == Fusion(text_weight=3.0)
    assert fusion_for(by_kind, NARRATIVE) == Fusion(text_weight=0.5)  # no fusion of its own: no kind's
    assert fusion_for(by_kind, None) == Fusion(text_weight=0.5)
    assert fusion_for({PAPER: Fusion(rrf_k=2)}, NARRATIVE) == FUSION  # nor one for no kind: the engine's
    assert fusion_for(Fusion(rrf_k=20), PAPER) == Fusion(rrf_k=20)  # one fusion for every kind
    # the row measured in docs/EVALUATION.md: papers weigh the full-text rank 3, narratives 0.75
    ranking, fusion = ORDERS["hybrid, text weight 3 for papers, 0.75 for narratives"]
    assert ranking == "hybrid"
    assert [fusion_for(fusion, kind).text_weight for kind in (PAPER, NARRATIVE, None)] == [3.0, 0.75, 1.0]


PAPER_TEXT = " ".join(
    f"Our model reaches {80 + i}.{i}% on the test set (Table {i}), above the baseline of Smith et al. BIBREF{i}. "
    f"The encoder has {i + 2} layers of {64 * (i + 1)} units, as in Section {i}."
    for i in range(1, 14)
)
STORY_TEXT = " ".join(
    f'"Where is the ship number {i}?" asked Mara. "Beyond the hills," said Tom, and he looked away. '
    f'"Then we walk," she replied, and they went on through the grass and the cold wind of the evening.'
    for i in range(1, 12)
)


async def test_the_kind_of_a_knowledge_base_is_read_off_its_leaves(tmp_path, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path), embedder=embedder)
    try:
        for kb, text in (
            ("paper", PAPER_TEXT),
            ("story", STORY_TEXT),
            ("short", "A short note on the garden."),
        ):
            await engine.ingest(kb, f"{kb}.txt", text.encode(), added_by="t")
        kinds = {kb: kb_kind(engine.store, engine.store.require_kb(kb)) for kb in ("paper", "story", "short")}
        assert kinds == {"paper": PAPER, "story": NARRATIVE, "short": None}
    finally:
        engine.close()


def test_paired_difference_and_its_standard_error():
    assert paired_difference([0.5, 0.7, 0.9], [0.5, 0.5, 0.5]) == pytest.approx((0.2, 0.2 / 3**0.5))
    assert paired_difference([0.4], [0.1]) == pytest.approx((0.3, 0.0))
    assert paired_difference([], []) == (0.0, 0.0)


def test_the_greedy_oracle_takes_what_adds_most_of_the_reference_while_it_fits():
    texts = ["the red fox", "a red fox jumps over", "jumps", "over the dog", "dog"]
    sizes = [3, 5, 1, 3, 1]
    reference = ("red fox jumps over the dog",)
    # the 5-token candidate adds the most (4 of 6 words), then 'over the dog' the last two; a tie would go
    # to the earlier place, the engine's better rank
    assert greedy_oracle(texts, sizes, reference, 10) == (1.0, [1, 3])
    # with 6 tokens 'over the dog' no longer fits: the cheap 'dog' is taken instead
    recall, taken = greedy_oracle(texts, sizes, reference, 6)
    assert (recall, taken) == (pytest.approx(5 / 6), [1, 4])
    assert greedy_oracle(["cat dog", "dog cat"], [2, 2], ("dog",), 10) == (1.0, [0])  # a tie: the better rank
    # it stops when nothing adds, not when the budget is spent: a candidate of no reference word is left
    assert greedy_oracle(["cat", "dog"], [1, 1], ("dog",), 10) == (1.0, [1])
    assert greedy_oracle(["cat"], [1], ("dog",), 10) == (0.0, [])
    assert greedy_oracle(["dog"], [5], ("dog",), 4) == (0.0, [])  # nothing fits


def test_the_losses_list_the_questions_furthest_below_the_oracle_first():
    losses = [
        Loss("qasper", "What is small?", 0.5, 0.6, (0,)),
        Loss("quality", "Who left?", 0.0, 1.0, (3, 25)),
        Loss("qasper", "What is level?", 0.7, 0.7, ()),
    ]
    assert [loss.gap for loss in losses] == pytest.approx([0.1, 1.0, 0.0])
    assert loss_lines(losses, 2) == [
        "0.00 -> 1.00 (quality, the oracle's ranks [4, 26]): Who left?",
        "0.50 -> 0.60 (qasper, the oracle's ranks [1]): What is small?",
    ]
    assert loss_lines([], 5) == []


async def test_the_benchmark_scores_each_order_as_raptor_eval_does(tmp_path: Path, embedder):
    eval_set = load_eval_set(write_set(tmp_path / "tiny"))
    data_dir = tmp_path / "data"
    scored = 0
    for split in SPLITS:
        losses: list[Loss] = []
        found = await set_recalls(eval_set, split, data_dir, 300, embedder, losses)
        questions = [q for q in eval_set.questions if q.answers and split_of("tiny", q.doc_id) == split]
        # the oracle's row pairs with the engine's question by question, as every row does
        assert [loss.question for loss in losses] == [q.question for q in questions]
        assert [loss.engine for loss in losses] == found[ENGINE_ORDER]["collapsed"]
        assert [loss.oracle for loss in losses] == found[ORACLE]["collapsed"]
        assert set(found) == set(ROWS)
        assert all(len(recalls[method]) == len(questions) for recalls in found.values() for method in METHODS)
        assert all(0.0 <= r <= 1.0 for recalls in found.values() for rs in recalls.values() for r in rs)
        if not questions:
            assert split_table({"tiny": found}) == []
            continue
        engine = Engine(dataclasses.replace(Settings.from_env(), data_dir=data_dir), embedder=embedder)
        try:
            trees = await build_trees(engine, list(eval_set.documents.values()), progress=False)
            for question, recall in zip(questions, found[ENGINE_ORDER]["collapsed"], strict=True):
                context = engine.retrieve(trees[question.doc_id]["kb"], question.question, budget=300)
                assert recall == pytest.approx(score_context(question, context)["rouge1_recall"], abs=1e-3)
                scored += 1
        finally:
            engine.close()
        table = split_table({"tiny": found})
        assert len(table) == 2 + len(ROWS)
        assert table[2].startswith(f"| {ENGINE_ORDER} |") and table[2].endswith("| +0.0 ± 0.0 |")
    assert scored == sum(bool(q.answers) for q in eval_set.questions)
