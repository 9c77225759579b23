"""Fit the extractive answer's grounding model: `python -m raptor_tools.grounding ../shared/evaldata`.

The model (raptor_engine/query/grounding.py) decides the answer's lead line: the documents answer
this, only the closest passages, or nothing about it. Labelled questions come from the sets
themselves, with no new data:

- **positives**: each question with a reference asked against its own document, when the quotes hold
  the reference (ROUGE-1 recall of the best reference by the quotes >= POSITIVE_RECALL);
- **negatives**: the same question asked against another document of the same set, and against a
  document of another set, neither of which holds its answer;
- the set's questions marked unanswerable (QASPER's "Unanswerable" references) would be negatives
  too; the QASPER slice in ../shared/evaldata has none;
- each question is also asked misspelt and with a pronoun for its subject
  (raptor_tools/grounding_variants.py), labelled the same way, so the model learns what a reader's
  slips and a bare "it" do to its features; the negated variant is collected for the report only (the
  answerer caps a negated question by rule).

Own-document questions whose quotes miss the reference are reported, not fitted. Every question is
asked as `raptor ask` asks it (collapsed tree, 2,000-token budget, the shipped ranker), on trees cached
under `--cache` (one folder per set, as `raptor eval --data-dir` and `raptor train-ranker` keep them;
copy a cache before pointing this at it). Negatives pair documents of the same split (evaluate.split_of),
so the held-out figures use no training document. A standardised logistic regression (fixed
regularisation, balanced classes) is fitted on the training split; `weak_below` is the probability
under which WEAK_SHARE of the training positives as written fall and `nothing_below` the one under
which NOTHING_SHARE do, their probabilities taken out of fold (each document's rows scored by a model
fitted without that document). The held-out split reports it against the previous rule (the first quote shares no
term with the question and its cosine is under 0.35). Deterministic: the same trees give the same
model.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from raptor_engine.config import Settings
from raptor_engine.engine import Engine
from raptor_engine.query.answer import ExtractiveAnswerer, neutralise_context
from raptor_engine.query.grounding import GROUNDING_FEATURES, MODEL_PATH, Grounding, GroundingModel
from raptor_engine.query.ranker import ranker_for
from raptor_tools import metrics, say
from raptor_tools.evaluate import EvalQuestion, build_trees, load_eval_set, quoted_text, split_of
from raptor_tools.grounding_variants import hash_index, judged, partner, variants

SETS = ("qasper", "quality", "squality", "narrativeqa_summaries")
BUDGET = 2000
POSITIVE_RECALL = 0.5
WEAK_SHARE = 0.02  # training positives (out of fold) called "closest passages" at most
NOTHING_SHARE = 0.0  # ... and "nothing about it": under every training positive (out of fold)
REGULARISATION = 0.1  # sklearn's C: strong, for ~400 rows from 25 documents
ROWS_FILE = "grounding-rows.json"
# Fitted on the questions as written and their misspelt and pronoun-only variants; a negated question
# is capped by rule, so its rows are collected for the report only.
FITTED_VARIANTS = ("original", "misspelt", "pronoun")
THRESHOLD_VARIANTS = ("original",)  # whose out-of-fold positives place the two thresholds
# The rule the model replaces: no shared term and a cosine under this.
PREVIOUS_SIMILARITY = 0.35
TOP_SIMILARITY, TOP_LEXICAL = GROUNDING_FEATURES.index("top_similarity"), GROUNDING_FEATURES.index("top_lexical")




def row(
    engine: Engine,
    answerer: ExtractiveAnswerer,
    kb: str,
    question: EvalQuestion,
    asked: tuple[str, str],
    kind: str,
    split: str,
    set_name: str,
) -> dict[str, Any] | None:
    """One question, as written or as one of its variants (`asked`: the variant's name and text), asked
    against one tree: its features, and how much of the reference the quotes hold."""
    variant, text = asked
    if not judged(text):
        return None
    context = engine.retrieve(kb, text, budget=BUDGET)
    nodes = neutralise_context(context.nodes)
    features = answerer.grounding_features(text, nodes)
    if features is None:
        return None
    quotes = quoted_text(answerer._answer_sync(text, nodes, []).text)
    recall = metrics.best_over(question.answers, metrics.rouge1_recall, quotes) if question.answers else 0.0
    return {
        "set": set_name,
        "split": split,
        "kind": kind,
        "variant": variant,
        "question_id": question.question_id,
        "doc_id": question.doc_id,
        "features": [round(float(x), 6) for x in features],
        "recall": round(float(recall), 4),
    }


def unanswerable(question: EvalQuestion) -> bool:
    """A question its own document does not answer: QASPER marks it by its type, or by the reference
    "Unanswerable"."""
    return question.question_type == "unanswerable" or any(
        a.strip().lower() == "unanswerable" for a in question.answers
    )




async def collect_set(evaldata: Path, name: str, other: str, cache_root: Path, base: Settings) -> list[dict[str, Any]]:
    """The rows of one set's questions, as written and as each of their variants: against their own
    document, another of the set, and one of `other` (a different set), each of the question's split."""
    eval_set, foreign = load_eval_set(evaldata / name), load_eval_set(evaldata / other)
    questions = [q for q in eval_set.questions if q.answers or unanswerable(q)]
    rows: list[dict[str, Any]] = []
    for target, documents in ((eval_set, eval_set.documents), (foreign, foreign.documents)):
        settings = dataclasses.replace(base, data_dir=cache_root / target.name)
        engine = Engine(settings)
        try:
            trees = await build_trees(engine, list(documents.values()), progress=False)
            answerer = ExtractiveAnswerer(engine.embedder, ranker=ranker_for(settings.ranking))
            by_split = {
                split: sorted(d for d in documents if split_of(target.name, d) == split) for split in ("train", "heldout")
            }
            for q in questions:
                split = split_of(name, q.doc_id)
                if target is eval_set:
                    pairs = [("unanswerable" if unanswerable(q) else "own", q.doc_id)]
                    pairs.append(("same_set", partner(by_split[split], q.doc_id)))
                else:
                    ids = by_split[split]
                    pairs = [("other_set", ids[hash_index(q.question_id, len(ids))] if ids else None)]
                for kind, doc_id in pairs:
                    if doc_id is None:
                        continue
                    for asked in variants(q.question).items():
                        found = await asyncio.to_thread(
                            row, engine, answerer, trees[doc_id]["kb"], q, asked, kind, split, name
                        )
                        if found is not None:
                            rows.append(found)
        finally:
            engine.close()
    return rows




def variant_of(r: dict[str, Any]) -> str:
    """Which of `grounding_variants.VARIANTS` a row asked (rows collected before variants: the original)."""
    return r.get("variant", "original")


def label(r: dict[str, Any]) -> int | None:
    """1: the quotes answer; 0: nothing in this document answers; None: own document, quotes miss, and
    every negated question (the answerer caps those by rule, ExtractiveAnswerer._grounding)."""
    if variant_of(r) not in FITTED_VARIANTS:
        return None
    if r["kind"] == "own":
        return 1 if r["recall"] >= POSITIVE_RECALL else None
    return 0


def fit(rows: list[dict[str, Any]]) -> GroundingModel:
    """The logistic regression on the training split's labelled rows, and its thresholds from
    out-of-fold probabilities (each training document's rows scored by a model fitted without it):
    a threshold read off the model's own training scores calls too few held-out positives weak."""
    train = [r for r in rows if r["split"] == "train" and label(r) is not None]
    x = np.array([r["features"] for r in train], dtype=np.float64)
    y = np.array([label(r) for r in train])
    model = standardised_fit(x, y)
    documents = np.array([r["doc_id"] for r in train])
    out_of_fold = np.zeros(len(train))
    for document in sorted(set(documents)):
        held = documents == document
        out_of_fold[held] = [standardised_fit(x[~held], y[~held]).probability(list(f)) for f in x[held]]
    # thresholds read on the questions as written: the variants' harder positives would lower them for
    # every question (at 2% of all positives, half the negatives were no longer caught)
    positives = out_of_fold[(y == 1) & np.array([variant_of(r) in THRESHOLD_VARIANTS for r in train])]
    return dataclasses.replace(
        model,
        weak_below=round(float(np.quantile(positives, WEAK_SHARE)), 4),
        nothing_below=round(float(np.quantile(positives, NOTHING_SHARE)), 4),
    )


def standardised_fit(x: np.ndarray, y: np.ndarray) -> GroundingModel:
    """A logistic regression on standardised features (fixed regularisation, balanced classes), as a
    GroundingModel with no thresholds yet."""
    from sklearn.linear_model import LogisticRegression

    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=REGULARISATION, class_weight="balanced", max_iter=1000)
    model.fit((x - mean) / scale, y)
    return GroundingModel(
        tuple(mean.round(6)),
        tuple(scale.round(6)),
        tuple(model.coef_[0].round(6)),
        round(float(model.intercept_[0]), 6),
        0.0,
        0.0,
    )


def previous_rule(features: list[float]) -> Grounding:
    """The lead line before the model: 'closest passages' when the first quote shares no term with the
    question and its cosine is under PREVIOUS_SIMILARITY."""
    weak = features[TOP_LEXICAL] == 0 and features[TOP_SIMILARITY] < PREVIOUS_SIMILARITY
    return Grounding.CLOSEST if weak else Grounding.ANSWERED


def table(
    rows: list[dict[str, Any]], model: GroundingModel, split: str, variant: str = "original"
) -> list[dict[str, Any]]:
    """Per set and kind of row of one variant: how many, and the share the previous rule and the model
    call 'closest' or 'nothing' (not answered)."""
    out = []
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r["split"] == split and variant_of(r) == variant:
            kind = r["kind"] if r["kind"] != "own" else ("positive" if label(r) == 1 else "own, quotes miss")
            groups.setdefault((r["set"], kind), []).append(r)
    for shown, sets in (("all sets", SETS), *((name, (name,)) for name in SETS)):
        for kind in ("positive", "own, quotes miss", "same_set", "other_set", "unanswerable"):
            chosen = [r for (s, k), rs in groups.items() if k == kind and s in sets for r in rs]
            if not chosen:
                continue
            verdicts = [model.verdict(r["features"]) for r in chosen]
            out.append(
                {
                    "set": shown,
                    "rows": kind,
                    "questions": len(chosen),
                    "previous_not_answered": share(previous_rule(r["features"]) is not Grounding.ANSWERED for r in chosen),
                    "not_answered": share(v is not Grounding.ANSWERED for v in verdicts),
                    "nothing": share(v is Grounding.NOTHING for v in verdicts),
                }
            )
    return out


def share(flags: Any) -> float:
    flags = list(flags)
    return round(sum(flags) / len(flags), 3) if flags else 0.0


def render(found: list[dict[str, Any]]) -> str:
    lines = [
        "| set | rows | questions | previous rule: not answered | model: not answered | of which 'nothing' |",
        "|---|---|---|---|---|---|",
    ]
    for t in found:
        lines.append(
            f"| {t['set']} | {t['rows']} | {t['questions']} | {t['previous_not_answered']:.1%} | "
            f"{t['not_answered']:.1%} | {t['nothing']:.1%} |"
        )
    return "\n".join(lines)


def collect_all(evaldata: Path, cache_root: Path, base: Settings) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for i, name in enumerate(SETS):
        print(f"collecting {name}", file=sys.stderr)
        rows += asyncio.run(collect_set(evaldata, name, SETS[(i + 1) % len(SETS)], cache_root, base))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("evaldata", type=Path, help="../shared/evaldata")
    parser.add_argument("--cache", type=Path, default=Path(".eval-cache"), help="the sets' cached trees, a folder per set")
    parser.add_argument("--reuse-rows", action="store_true", help=f"fit on <cache>/{ROWS_FILE} from the last run")
    parser.add_argument("--out", type=Path, default=MODEL_PATH, help="where to write the model")
    args = parser.parse_args(argv)
    rows_path = args.cache / ROWS_FILE
    if args.reuse_rows:
        rows = json.loads(rows_path.read_text(encoding="utf-8"))
    else:
        rows = collect_all(args.evaldata, args.cache, Settings.from_env())
        args.cache.mkdir(parents=True, exist_ok=True)
        rows_path.write_text(json.dumps(rows) + "\n", encoding="utf-8")
    model = fit(rows)
    args.out.write_text(json.dumps(model.to_json(), indent=1) + "\n", encoding="utf-8")
    for split in ("train", "heldout"):
        for variant in FITTED_VARIANTS:
            say(f"\n{split}, {variant} questions:\n{render(table(rows, model, split, variant))}")
    print(f"\nWrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
