"""Context recall at a small budget for other orders of the context nodes, training and held-out split
side by side.

Every question with a reference, of every document of the evaluation sets, gets its collapsed and
leaves-only context at the budget in each order of `ORDERS`, scored as `raptor eval` scores a context
(ROUGE-1 recall of the best reference); an order whose `Fusion.judged` is above 0 has its first
nodes reordered by the extractive answer's quote model (`retrieve.judged_order`), and an order given a
fusion per kind of knowledge base uses the one of its leaves' kind (`ranker.document_kind`). Every order fills
the budget as the engine does (`retrieve.TRIM`); the rows of `FILLS` fill it otherwise, in the
engine's order (whole nodes, or nodes trimmed to their best sentences: `retrieve.Trim`). The last row,
`ORACLE`, is no order an engine could make: it reads the reference, and says how much room the
candidates leave (`greedy_oracle`). Printed per split: each set's collapsed (leaves only) recall, the
mean over the sets, and the mean difference against the engine's order with its paired standard error;
with `--losses N`, the N questions of each split whose context falls furthest below the oracle's. An
order is worth adopting only if it wins on the training split by more than its error; the held-out
split then says whether the win carries over. The trees are the ones `raptor eval` caches
(<cache>/<set>), built if missing.

Run: `python -m raptor_tools.benchmarks.context_orders ../shared/evaldata [--budget 500] [--cache DIR]
[--heldout-cache DIR] [--sets qasper,quality] [--splits train] [--losses 20]`.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import math
import sys
from pathlib import Path
from statistics import fmean, variance

_ROOT = Path(__file__).resolve().parents[2]  # the checkout, for `python -m` from anywhere
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from raptor_engine.config import Settings  # noqa: E402
from raptor_engine.engine import Engine  # noqa: E402
from raptor_engine.query.answer import ExtractiveAnswerer  # noqa: E402
from raptor_engine.query.ranker import NARRATIVE, PAPER, document_kind, load_ranker  # noqa: E402
from raptor_engine.query.retrieve import (  # noqa: E402
    FUSION,
    TRIM,
    Fusion,
    Trim,
    allowed_ids,
    collapsed_tree,
    ranked_hits,
)
from raptor_engine.storage.store import Store  # noqa: E402
from raptor_engine.tree.embed import Embedder  # noqa: E402
from raptor_tools.evaluate import EvalSet, build_trees, load_eval_set, split_of  # noqa: E402
from raptor_tools.metrics import best_over, rouge1_recall  # noqa: E402

SETS = ("qasper", "quality", "squality", "narrativeqa_summaries")
SPLITS = ("train", "heldout")
METHODS = {"collapsed": None, "leaves": [0]}  # the layers each method may take
ENGINE_ORDER = "hybrid (the engine)"
JUDGED = Fusion(judged=20)  # the quote model judges the fused order's first 20: their best 2 sentences
# A fusion per kind of knowledge base (`ranker.document_kind` of its leaves; None: no known kind), for
# an order whose full-text weight depends on the kind of document (docs/EVALUATION.md, "Small budgets:
# the full-text rank's weight per question and per knowledge base").
ByKind = dict[str | None, Fusion]
ORDERS: dict[str, tuple[str, Fusion | ByKind]] = {
    ENGINE_ORDER: ("hybrid", Fusion()),
    "vector": ("vector", Fusion()),
    "vector, rare-term nodes first": ("hybrid", Fusion(text_weight=0.0)),
    "hybrid, no rare-term nodes first": ("hybrid", Fusion(rare_first=False)),
    "hybrid, text weight 0.5": ("hybrid", Fusion(text_weight=0.5)),
    "hybrid, text weight 3": ("hybrid", Fusion(text_weight=3.0)),
    "hybrid, text weight 3 for papers, 0.75 for narratives": (
        "hybrid",
        {PAPER: Fusion(text_weight=3.0), NARRATIVE: Fusion(text_weight=0.75), None: Fusion()},
    ),
    "hybrid, RRF k 20": ("hybrid", Fusion(rrf_k=20)),
    "hybrid, RRF k 2": ("hybrid", Fusion(rrf_k=2)),
    "hybrid, 10 text hits": ("hybrid", Fusion(text_candidates=10)),
    "learned node model": ("learned", Fusion()),
    "hybrid, first 20 judged by the quote model (best 2 sentences)": ("hybrid", JUDGED),
    "hybrid, first 10 judged (best 2 sentences)": ("hybrid", dataclasses.replace(JUDGED, judged=10)),
    "hybrid, first 20 judged (best sentence)": ("hybrid", dataclasses.replace(JUDGED, judge_sentences=1)),
    "hybrid, first 20 judged (all sentences)": ("hybrid", dataclasses.replace(JUDGED, judge_sentences=0)),
}

ANY = 10**9  # a budget limit every budget is under
# Other fills of the budget in the engine's order (docs/EVALUATION.md, "Small budgets: the parts of nodes
# that answer"): the fill order's first 20 nodes judged by the quote model.
FILLS: dict[str, Trim] = {
    "whole nodes (no trimming)": Trim(max_budget=0),
    "summaries cut to their best 3 sentences, a node too big cut to fit": Trim(ANY),
    "a node too big for the room left cut to its best sentences that fit": Trim(ANY, layers="none"),
    "every node cut to its best 4 sentences, a node too big cut to fit": Trim(ANY, keep=4, layers="all"),
    "every node cut to its best 2 sentences and one either side": Trim(
        ANY, keep=2, neighbours=1, layers="all", fit=False
    ),
    "the first 3 whole, then every node cut to its best 2, a node too big cut to fit": Trim(
        ANY, keep=2, whole=3, layers="all"
    ),
}
# The bound on any order of the candidates: the fused order's first ORACLE_POOL nodes, rare-term nodes first
# (the engine's order but for a question about the whole; leaves only's for leaves only), taken whole one at
# a time by how much of the reference each adds, while they fit.
ORACLE = "greedy oracle, the first 40 whole (reads the reference)"
ORACLE_POOL = 40
ROWS = [*ORDERS, *FILLS, ORACLE]


@dataclasses.dataclass(frozen=True)
class Loss:
    """One question's collapsed context against the oracle's: where the room is (`--losses`)."""

    set_name: str
    question: str
    engine: float
    oracle: float
    picks: tuple[int, ...]  # the oracle's nodes' places in the fused order (0: the first), as it took them

    @property
    def gap(self) -> float:
        return self.oracle - self.engine


def greedy_oracle(
    texts: list[str], sizes: list[int], answers: tuple[str, ...], budget: int
) -> tuple[float, list[int]]:
    """The recall of the best reference (as `raptor eval` scores a context) when the candidates are taken
    greedily by it: each round the one that adds most while it fits, until none adds anything. Returns the
    recall and the places of the candidates taken, in the order taken. Greedy, so a bound of what an
    order of these candidates could reach, not the exact best."""
    taken: list[int] = []
    best, used = 0.0, 0
    while True:
        pick = None
        for place, (text, size) in enumerate(zip(texts, sizes, strict=True)):
            if place in taken or used + size > budget:
                continue
            recall = best_over(answers, rouge1_recall, "\n\n".join([*(texts[i] for i in taken), text])) or 0.0
            if recall > best + 1e-9:
                best, pick = recall, place
        if pick is None:
            return best, taken
        taken.append(pick)
        used += sizes[pick]


Recalls = dict[str, list[float]]  # per method, one recall per question


def kb_kind(store: Store, kb_id: int) -> str | None:
    """The kind of document a knowledge base holds, read off its leaves' text (`ranker.document_kind`):
    what a fusion per kind keys on. Summaries are left out, since they only copy leaves' sentences."""
    leaves = sorted(allowed_ids(store, kb_id, [0], None) or ())
    nodes = store.nodes_by_ids(leaves)
    return document_kind([nodes[node_id].text for node_id in leaves if node_id in nodes])


def fusion_for(fusion: Fusion | ByKind, kind: str | None) -> Fusion:
    """The fusion an order uses in a knowledge base of this kind: its own, or its kind's (the one for
    no known kind where the order names none for this kind)."""
    if isinstance(fusion, Fusion):
        return fusion
    return fusion.get(kind, fusion.get(None, Fusion()))


async def set_recalls(
    eval_set: EvalSet,
    split: str,
    data_dir: Path,
    budget: int,
    embedder: Embedder | None = None,
    losses: list[Loss] | None = None,
) -> dict[str, Recalls]:
    """Each order's recalls on one set's split, the questions in file order (so orders pair up); each
    question's collapsed context against the oracle's is added to `losses`, if given."""
    questions = [q for q in eval_set.questions if q.answers and split_of(eval_set.name, q.doc_id) == split]
    found: dict[str, Recalls] = {row: {method: [] for method in METHODS} for row in ROWS}
    if not questions:
        return found
    engine = Engine(dataclasses.replace(Settings.from_env(), data_dir=data_dir), embedder=embedder)
    try:
        answerer = ExtractiveAnswerer(engine.embedder, ranker=load_ranker())
        judge, sentence_judge = answerer.node_scores, answerer.sentence_scores  # for orders judging any
        needed = list(dict.fromkeys(q.doc_id for q in questions))
        trees = await build_trees(engine, [eval_set.documents[d] for d in needed], progress=False)
        kinds: dict[int, str | None] = {}
        for question in questions:
            kb_id = engine.store.require_kb(trees[question.doc_id]["kb"])
            if kb_id not in kinds:
                kinds[kb_id] = kb_kind(engine.store, kb_id)
            vector = engine.embedder.embed([question.question])[0]
            rows = {
                order: (ranking, fusion_for(fusion, kinds[kb_id]), TRIM)
                for order, (ranking, fusion) in ORDERS.items()
            }
            engine_ranking, engine_fusion = ORDERS[ENGINE_ORDER]
            rows |= {
                fill: (engine_ranking, fusion_for(engine_fusion, None), trim) for fill, trim in FILLS.items()
            }
            for row, (ranking, fusion, trim) in rows.items():
                for method, layers in METHODS.items():
                    context = collapsed_tree(
                        engine.store,
                        engine.indexes.get(kb_id),
                        kb_id,
                        question.question,
                        vector,
                        budget=budget,
                        ef=engine.settings.hnsw_ef,
                        layers=layers,
                        count_tokens_batch=engine.embedder.count_tokens_batch,
                        ranking=ranking,
                        fusion=fusion,
                        judge=judge,
                        sentence_judge=sentence_judge,
                        trim=trim,
                    )
                    text = "\n\n".join(node.text for node in context.nodes)
                    found[row][method].append(best_over(question.answers, rouge1_recall, text) or 0.0)
            for method, layers in METHODS.items():
                allowed = allowed_ids(engine.store, kb_id, layers, None)
                hits, _ = ranked_hits(
                    engine.store,
                    engine.indexes.get(kb_id),
                    kb_id,
                    question.question,
                    vector,
                    ef=engine.settings.hnsw_ef,
                    allowed=allowed,
                    ranking="hybrid",
                    fusion=FUSION,
                )
                pool = engine.store.nodes_by_ids([node_id for node_id, _ in hits[:ORACLE_POOL]])
                places = [place for place, (node_id, _) in enumerate(hits[:ORACLE_POOL]) if node_id in pool]
                nodes = [pool[hits[place][0]] for place in places]
                recall, taken = greedy_oracle(
                    [n.text for n in nodes], [n.tokens for n in nodes], question.answers, budget
                )
                found[ORACLE][method].append(recall)
                if losses is not None and layers is None:
                    engine_recall = found[ENGINE_ORDER]["collapsed"][-1]
                    picks = tuple(places[i] for i in taken)
                    losses.append(Loss(eval_set.name, question.question, engine_recall, recall, picks))
    finally:
        engine.close()
    return found


def paired_difference(new: list[float], old: list[float]) -> tuple[float, float]:
    """Mean of new - old over paired questions, and its standard error."""
    diffs = [a - b for a, b in zip(new, old, strict=True)]
    if len(diffs) < 2:
        return (diffs[0] if diffs else 0.0), 0.0
    return fmean(diffs), math.sqrt(variance(diffs) / len(diffs))


def split_table(results: dict[str, dict[str, Recalls]]) -> list[str]:
    """A markdown table, one row per order: per set collapsed (leaves only), the mean over the sets,
    and the difference of that mean against the engine's order ± its standard error (the sets'
    questions are independent). Sets without questions in the split are left out."""
    sets = [name for name, orders in results.items() if orders[ENGINE_ORDER]["collapsed"]]
    if not sets:
        return []
    lines = [
        "| order | " + " | ".join(sets) + " | mean | against the engine, points |",
        "|---|" + "---|" * (len(sets) + 2),
    ]
    for order in ROWS:
        cells, means, diffs, variances = [], [], [], []
        for name in sets:
            recalls = results[name][order]
            cells.append(f"{fmean(recalls['collapsed']):.3f} ({fmean(recalls['leaves']):.3f})")
            means.append(fmean(recalls["collapsed"]))
            diff, error = paired_difference(recalls["collapsed"], results[name][ENGINE_ORDER]["collapsed"])
            diffs.append(diff)
            variances.append(error**2)
        error = math.sqrt(sum(variances)) / len(sets)
        lines.append(
            f"| {order} | "
            + " | ".join(cells)
            + f" | {fmean(means):.3f} | {100 * fmean(diffs):+.1f} ± {100 * error:.1f} |"
        )
    return lines


async def measure(
    evaldata: Path,
    caches: dict[str, Path],
    budget: int,
    sets: tuple[str, ...] = SETS,
    losses: dict[str, list[Loss]] | None = None,
    splits: tuple[str, ...] = SPLITS,
) -> dict[str, dict[str, dict[str, Recalls]]]:
    """Recalls per split, set and order (and each split's questions against the oracle in `losses`)."""
    results: dict[str, dict[str, dict[str, Recalls]]] = {split: {} for split in splits}
    for name in sets:
        eval_set = load_eval_set(evaldata / name)
        for split in splits:
            found = None if losses is None else losses.setdefault(split, [])
            results[split][name] = await set_recalls(
                eval_set, split, caches[split] / name, budget, losses=found
            )
    return results


def loss_lines(losses: list[Loss], count: int) -> list[str]:
    """The `count` questions whose collapsed context falls furthest below the oracle's, largest gap first,
    each with the ranks in the fused order (1: the first) of the nodes the oracle took."""
    worst = sorted(losses, key=lambda loss: (-loss.gap, loss.set_name, loss.question))[:count]
    return [
        f"{loss.engine:.2f} -> {loss.oracle:.2f} ({loss.set_name}, the oracle's ranks {[p + 1 for p in loss.picks]}): "
        f"{loss.question}"
        for loss in worst
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("evaldata", type=Path)
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--cache", type=Path, default=Path(".eval-cache"), help="trees: <cache>/<set>")
    parser.add_argument("--heldout-cache", type=Path, help="the held-out split's trees, if not in --cache")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument(
        "--losses", type=int, default=0, help="list this many questions furthest below the oracle"
    )
    parser.add_argument("--splits", default=",".join(SPLITS), help="train: tune without the held-out split")
    args = parser.parse_args()
    caches = {"train": args.cache, "heldout": args.heldout_cache or args.cache}
    sets, splits = tuple(args.sets.split(",")), tuple(args.splits.split(","))
    if not set(splits) <= set(SPLITS):
        parser.error(f"--splits takes {' and '.join(SPLITS)}")
    losses: dict[str, list[Loss]] = {}
    results = asyncio.run(measure(args.evaldata, caches, args.budget, sets, losses, splits))
    for split, per_set in results.items():
        print(f"\n{split} split, budget {args.budget}: collapsed (leaves only)\n")
        print("\n".join(split_table(per_set)))
        if args.losses:
            print(
                f"\n{split} split: the {args.losses} questions furthest below the oracle (engine -> oracle)\n"
            )
            print("\n".join(loss_lines(losses.get(split, []), args.losses)))


if __name__ == "__main__":
    main()
