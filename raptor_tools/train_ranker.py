"""`raptor train-ranker EVALDATA`: fit the shipped ranker (raptor_engine/query/ranker.json) on the
training split of the evaluation sets, and measure it on the held-out split.

For every question of a training document with a reference answer:

- the node model's rows are the collapsed tree's fused candidates (vector and full-text search, the
  first RERANK of them, as retrieval ranks them), labelled with the ROUGE-1 recall of the best
  reference by the node's text, over the question's best candidate's;
- the sentence model's rows are the quotable sentences of the collapsed context at a 2,000-token
  budget (the hybrid order, so the rows do not depend on the node model being fitted), labelled the
  same way by each sentence.

Each model is chosen among a ridge regression and two sizes of gradient-boosted regression trees
(HistGradientBoostingRegressor, fixed seed, fixed hyper-parameters) by cross-validation grouped by
document, and exported to plain JSON. The answer's blend of the sentence model with the hand score
(ranker.Blend) is then chosen on the same folds' out-of-fold scores (`choose_blend`): for all
questions, then for the questions of each document kind (`choose_kind_blends`, ranker.document_kind). The split is by
document (evaluate.split_of), so no held-out document is seen in training. `--ablation` refits the sentence model without each feature in
turn and prints what the held-out quotes lose; the figures are in docs/EVALUATION.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import numpy as np

from raptor_engine.config import Settings
from raptor_engine.engine import Engine
from raptor_engine.errors import RaptorError
from raptor_engine.ingest.sentences import content_terms
from raptor_engine.query.answer import ExtractiveAnswerer, pick_quotes, question_terms
from raptor_engine.query.ranker import (
    DOCUMENT_KINDS,
    FORMAT,
    HAND,
    MODEL_PATH,
    NODE_FEATURES,
    SENTENCE_FEATURES,
    Blend,
    asks_short_fact,
    blended,
    document_kind,
    model_from_json,
    node_features,
    ranker_from_json,
)
from raptor_engine.query.retrieve import CANDIDATES, RERANK, fused_candidates, query_terms, read_candidates
from raptor_tools import metrics
from raptor_tools.evaluate import EvalQuestion, build_trees, contains_answer, load_eval_set, split_of

log = logging.getLogger(__name__)

SETS = ("qasper", "quality", "squality", "narrativeqa_summaries")
SEED = 0
BUDGET = 2000
# Fixed hyper-parameters: shallow trees and large leaves, since a few thousand questions' rows are few.
TREE_PARAMS: dict[str, Any] = {
    "max_iter": 200,
    "learning_rate": 0.05,
    "max_leaf_nodes": 15,
    "max_depth": 5,
    "min_samples_leaf": 40,
    "l2_regularization": 1.0,
    "early_stopping": False,
}
TOP = 3  # quotes the extractive answer gives: what the held-out check scores


def relevance(reference: str, text: str) -> float:
    """How much of the reference a text gives: the share of its content words (no stopwords: 'the',
    'and' would reward any long sentence against a three-word reference) the text holds, plus 1 when
    the whole reference appears in it word for word."""
    wanted = Counter(content_terms(reference))
    total = sum(wanted.values())
    held = sum((wanted & Counter(content_terms(text))).values()) / total if total else 0.0
    return held + float(contains_answer(reference, text))


def relevance_labels(question: EvalQuestion, texts: list[str]) -> np.ndarray | None:
    """Each text's best `relevance` over the references, over the best text's; None when no text has any."""
    found = np.array([max((relevance(ref, t) for ref in question.answers), default=0.0) for t in texts])
    if not len(texts) or found.max() <= 0:
        return None
    return found / found.max()


@dataclass
class Rows:
    """Feature rows, labels, and for each row its question's number and text (to score top picks)."""

    features: list[np.ndarray] = field(default_factory=list)
    labels: list[np.ndarray] = field(default_factory=list)
    texts: list[list[str]] = field(default_factory=list)
    questions: list[EvalQuestion] = field(default_factory=list)
    sets: list[str] = field(default_factory=list)

    def add(self, question: EvalQuestion, set_name: str, features: np.ndarray, texts: list[str]) -> None:
        """A question's rows, labelled by `relevance` over the best text's; a question none of whose
        texts shares a content word with a reference teaches nothing and is left out."""
        labels = relevance_labels(question, texts)
        if labels is None:
            return
        self.features.append(features)
        self.labels.append(labels)
        self.texts.append(texts)
        self.questions.append(question)
        self.sets.append(set_name)

    def relabelled(self) -> Rows:
        """The same rows labelled by the current `relevance` (rows saved by an earlier run keep their
        features; their labels follow the code)."""
        out = Rows()
        for question, set_name, features, texts in zip(
            self.questions, self.sets, self.features, self.texts, strict=True
        ):
            out.add(question, set_name, features, texts)
        return out

    def matrix(self) -> tuple[np.ndarray, np.ndarray]:
        return np.concatenate(self.features), np.concatenate(self.labels)

    def extend(self, other: Rows) -> None:
        for key in ("features", "labels", "texts", "questions", "sets"):
            getattr(self, key).extend(getattr(other, key))

    def to_json(self) -> list[dict[str, Any]]:
        return [
            {
                "question": dataclasses.asdict(q),
                "set": s,
                "features": f.tolist(),
                "labels": y.tolist(),
                "texts": t,
            }
            for q, s, f, y, t in zip(
                self.questions, self.sets, self.features, self.labels, self.texts, strict=True
            )
        ]

    @classmethod
    def from_json(cls, rows: list[dict[str, Any]]) -> Rows:
        out = cls()
        for row in rows:
            question = row["question"]
            question["answers"], question["options"] = tuple(question["answers"]), tuple(question["options"])
            out.questions.append(EvalQuestion(**question))
            out.sets.append(row["set"])
            out.features.append(
                np.asarray(row["features"], dtype=np.float64).reshape(-1, len(row["features"][0]))
            )
            out.labels.append(np.asarray(row["labels"], dtype=np.float64))
            out.texts.append(row["texts"])
        return out


def collect(
    engine: Engine,
    answerer: ExtractiveAnswerer,
    kb: str,
    question: EvalQuestion,
    set_name: str,
    nodes: Rows,
    sentences: Rows,
) -> None:
    """One question's node rows and sentence rows."""
    store = engine.store
    kb_id = store.require_kb(kb)
    vector = engine.embedder.embed([question.question])[0]
    index = engine.indexes.get(kb_id)
    hits = index.search(vector, k=CANDIDATES, ef=engine.settings.hnsw_ef)
    candidates = fused_candidates(store, kb_id, question.question, vector, hits, None)[:RERANK]
    read = read_candidates(store, candidates)
    head = [c for c in candidates if c.node_id in read]
    nodes.add(
        question,
        set_name,
        node_features(question.question, query_terms(question.question), head),
        [c.text for c in head],
    )
    context = engine.retrieve(kb, question.question, budget=BUDGET)
    texts, rows = answerer.feature_rows(question.question, context.nodes)
    sentences.add(question, set_name, rows, texts)


async def collect_set(directory: Path, cache_root: Path, base: Settings) -> dict[str, tuple[Rows, Rows]]:
    """Rows of one set, split into 'train' and 'heldout' by document."""
    eval_set = load_eval_set(directory)
    settings = dataclasses.replace(base, data_dir=cache_root / eval_set.name, ranking="hybrid")
    engine = Engine(settings)
    out = {"train": (Rows(), Rows()), "heldout": (Rows(), Rows())}
    try:
        questions = [q for q in eval_set.questions if q.answers]
        needed = list(dict.fromkeys(q.doc_id for q in questions))
        trees = await build_trees(engine, [eval_set.documents[d] for d in needed], progress=False)

        answerer = ExtractiveAnswerer(engine.embedder)

        def run() -> None:
            for question in questions:
                split = split_of(eval_set.name, question.doc_id)
                collect(engine, answerer, trees[question.doc_id]["kb"], question, eval_set.name, *out[split])

        await asyncio.to_thread(run)
    finally:
        engine.close()
    return out


ROWS_FILE = "ranker-rows.json"  # the collected rows, under the cache folder, for --reuse-rows


def collect_all(evaldata: Path, cache_root: Path, base: Settings) -> dict[str, tuple[Rows, Rows]]:
    """The node and sentence rows of every set, by split."""
    splits = {"train": (Rows(), Rows()), "heldout": (Rows(), Rows())}
    for name in SETS:
        if not (evaldata / name).is_dir():
            raise RaptorError(f"{evaldata / name} is missing; train-ranker reads the sets {', '.join(SETS)}.")
        found = asyncio.run(collect_set(evaldata / name, cache_root, base))
        for split, pair in found.items():
            for target, source in zip(splits[split], pair, strict=True):
                target.extend(source)
    return splits


def saved_rows(
    path: Path, splits: dict[str, tuple[Rows, Rows]] | None = None
) -> dict[str, tuple[Rows, Rows]]:
    """Write the rows to `path` when given them, else read them back."""
    if splits is not None:
        data = {split: [rows.to_json() for rows in pair] for split, pair in splits.items()}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data), encoding="utf-8")
        return splits
    if not path.is_file():
        raise RaptorError(f"{path} is missing: run train-ranker once without --reuse-rows.")
    data = json.loads(path.read_text(encoding="utf-8"))
    return {split: (Rows.from_json(pair[0]), Rows.from_json(pair[1])) for split, pair in data.items()}


# The candidate models, chosen between by cross-validation over the training documents: the rows are
# few (a few hundred questions), so a simpler model may generalise better than a bigger one.
MODELS: dict[str, dict[str, Any]] = {
    "linear": {"alpha": 10.0},
    "small trees": {
        "max_iter": 60,
        "learning_rate": 0.05,
        "max_leaf_nodes": 7,
        "max_depth": 3,
        "min_samples_leaf": 100,
        "l2_regularization": 1.0,
        "early_stopping": False,
    },
    "trees": TREE_PARAMS,
}
FOLDS = 4
NODE_BUDGET = 500  # the node model is judged by what fills this budget (the small budget an LLM gets)


def fit_model(kind: str, features: np.ndarray, labels: np.ndarray, names: tuple[str, ...]) -> dict[str, Any]:
    """One candidate model fitted (fixed seed and parameters) and exported as JSON."""
    if kind == "linear":
        return fit_linear(features, labels, names)
    from sklearn.ensemble import HistGradientBoostingRegressor

    model = HistGradientBoostingRegressor(random_state=SEED, **MODELS[kind]).fit(features, labels)
    return export_trees(model, names)


def fit_linear(features: np.ndarray, labels: np.ndarray, names: tuple[str, ...]) -> dict[str, Any]:
    """Ridge regression on standardised features, exported as ranker.LinearModel reads it."""
    from sklearn.linear_model import Ridge

    rows = np.nan_to_num(features)
    mean, scale = rows.mean(axis=0), rows.std(axis=0)
    scale[scale == 0] = 1.0
    model = Ridge(alpha=MODELS["linear"]["alpha"]).fit((rows - mean) / scale, labels)
    return {
        "kind": "linear",
        "features": list(names),
        "mean": mean.tolist(),
        "scale": scale.tolist(),
        "weights": [float(w) for w in model.coef_],
        "bias": float(model.intercept_),
    }


def export_trees(model: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """A fitted HistGradientBoostingRegressor as plain JSON, node by node (read by ranker.TreeEnsemble)."""
    trees = []
    depth = 0
    for (predictor,) in model._predictors:  # one tree per iteration for a regressor
        nodes = predictor.nodes
        if nodes["is_categorical"].any():
            raise RaptorError("a categorical split cannot be exported; the features are all numeric")
        depth = max(depth, int(nodes["depth"].max()))
        trees.append(
            {
                "feature": [int(v) for v in nodes["feature_idx"]],
                "threshold": [float(v) for v in nodes["num_threshold"]],
                "missing_left": [bool(v) for v in nodes["missing_go_to_left"]],
                "left": [int(v) for v in nodes["left"]],
                "right": [int(v) for v in nodes["right"]],
                "leaf": [bool(v) for v in nodes["is_leaf"]],
                "value": [float(v) for v in nodes["value"]],
            }
        )
    return {
        "kind": "trees",
        "features": list(names),
        "baseline": float(np.ravel(model._baseline_prediction)[0]),
        "depth": depth,
        "trees": trees,
    }


def predictions(
    model: dict[str, Any], rows: Rows, names: tuple[str, ...], column: int | None = None
) -> list[np.ndarray]:
    """A model's scores for each question's rows (with `column` zeroed, for an ablation)."""
    fitted = model_from_json(model, names, "candidate")
    out = []
    for features in rows.features:
        if column is not None:
            features = features.copy()
            features[:, column] = 0.0
        out.append(fitted.predict(features))
    return out


def top_recall(rows: Rows, scores: list[np.ndarray], top: int = TOP) -> float:
    """Mean ROUGE-1 recall of the best reference by each question's `top` best-scored texts joined."""
    found = []
    for question, texts, score in zip(rows.questions, rows.texts, scores, strict=True):
        order = np.argsort(-score, kind="stable")[:top]
        joined = " ".join(texts[i] for i in order)
        found.append(metrics.best_over(question.answers, metrics.rouge1_recall, joined) or 0.0)
    return float(np.mean(found)) if found else 0.0


def budget_recall(rows: Rows, scores: list[np.ndarray], budget: int = NODE_BUDGET) -> float:
    """Mean ROUGE-1 recall of the best reference by the nodes that fill `budget` tokens in score
    order (a node that does not fit is skipped, as retrieval does)."""
    size = NODE_FEATURES.index("tokens")
    found = []
    for question, texts, features, score in zip(
        rows.questions, rows.texts, rows.features, scores, strict=True
    ):
        used, taken = 0, []
        for i in np.argsort(-score, kind="stable"):
            tokens = int(round(np.expm1(features[i, size])))
            if used + tokens <= budget:
                used += tokens
                taken.append(texts[i])
        found.append(metrics.best_over(question.answers, metrics.rouge1_recall, " ".join(taken)) or 0.0)
    return float(np.mean(found)) if found else 0.0


# The blend of the sentence model with the hand score, and the quotes' repeat penalty, are chosen
# together on the training documents' out-of-fold scores (ranker.Blend).
BLEND_WEIGHTS = tuple(round(0.1 * i, 1) for i in range(11))
REPEAT_PENALTIES = (0.0, 0.1, 0.2)


def text_terms(rows: Rows) -> list[list[set[str]]]:
    """Each question's texts' stemmed content terms (what pick_quotes compares), computed once."""
    return [[question_terms(text) for text in texts] for texts in rows.texts]


def quote_results(
    rows: Rows, scores: list[np.ndarray], repeat_penalty: float, terms: list[list[set[str]]] | None = None
) -> dict[str, np.ndarray]:
    """Per set, one row per question: the ROUGE-1 recall of the best reference by the quotes the
    answer would pick (answer.pick_quotes), and 1 when a reference is in them word for word."""
    found: dict[str, list[tuple[float, float]]] = {}
    terms = terms if terms is not None else text_terms(rows)
    for question, set_name, texts, score, held_terms in zip(
        rows.questions, rows.sets, rows.texts, scores, terms, strict=True
    ):
        asked = question_terms(question.question)
        picked = pick_quotes(score.tolist(), held_terms, TOP, asked, repeat_penalty)
        joined = " ".join(texts[i] for i in picked)
        recall = metrics.best_over(question.answers, metrics.rouge1_recall, joined) or 0.0
        held = float(any(contains_answer(reference, joined) for reference in question.answers))
        found.setdefault(set_name, []).append((recall, held))
    return {name: np.asarray(pairs, dtype=np.float64) for name, pairs in sorted(found.items())}


def quote_scores_by_set(
    rows: Rows, scores: list[np.ndarray], repeat_penalty: float, terms: list[list[set[str]]] | None = None
) -> dict[str, tuple[float, float]]:
    """Per set: the mean of `quote_results` (recall, share of questions whose reference is held)."""
    results = quote_results(rows, scores, repeat_penalty, terms)
    return {name: tuple(pairs.mean(axis=0).round(4).tolist()) for name, pairs in results.items()}


def standard_error(results: dict[str, np.ndarray]) -> float:
    """The standard error of the mean over sets of each set's mean recall."""
    variance = sum(pairs[:, 0].var(ddof=1) / len(pairs) for pairs in results.values() if len(pairs) > 1)
    return float(math.sqrt(variance)) / max(1, len(results))


NO_WORSE = 0.01  # how far under the hand weights a set's recall or reference-held share may fall


def quote_objective(by_set: dict[str, tuple[float, float]], hand: dict[str, tuple[float, float]]) -> float:
    """What the blend maximises: the mean over the sets (each kind of question counts once) of the
    quotes' recall of the reference; -inf when any set's recall or share of questions whose reference
    the quotes hold word for word falls under the hand weights' (the goal is no kind worse)."""
    for name, (recall, held) in by_set.items():
        if recall < hand[name][0] - NO_WORSE or held < hand[name][1] - NO_WORSE:
            return -math.inf
    return float(np.mean([recall for recall, _ in by_set.values()]))


def out_of_fold(kind: str, rows: Rows, names: tuple[str, ...]) -> list[np.ndarray]:
    """Each training question's scores by a model fitted on the other folds' documents."""
    from sklearn.model_selection import GroupKFold

    groups = [f"{s}/{q.doc_id}" for s, q in zip(rows.sets, rows.questions, strict=True)]
    found: list[np.ndarray] = [np.zeros(0)] * len(rows.questions)
    for fit_on, judge_on in GroupKFold(n_splits=FOLDS).split(groups, groups=groups):
        model = fit_model(kind, *subset(rows, list(fit_on)).matrix(), names)
        judged = subset(rows, list(judge_on))
        for i, scores in zip(judge_on, predictions(model, judged, names), strict=True):
            found[i] = scores
    return found


def blend_grid(
    rows: Rows, learned: list[np.ndarray], penalties: tuple[float, ...]
) -> tuple[dict[tuple[float, float, float], float], dict[tuple[float, float, float], float]]:
    """Every blend's `quote_objective` on these rows' out-of-fold scores (keys: short-fact weight,
    other weight, repeat penalty) and the standard error of its mean recall."""
    hand = [f[:, HAND] for f in rows.features]
    short = [asks_short_fact(q.question) for q in rows.questions]
    terms = text_terms(rows)
    by_hand = quote_scores_by_set(rows, hand, 0.0, terms)
    tried: dict[tuple[float, float, float], float] = {}
    errors: dict[tuple[float, float, float], float] = {}
    for short_weight in BLEND_WEIGHTS:
        for other_weight in BLEND_WEIGHTS:
            scores = [
                blended(model, own, short_weight if is_short else other_weight)
                for model, own, is_short in zip(learned, hand, short, strict=True)
            ]
            for penalty in penalties:
                results = quote_results(rows, scores, penalty, terms)
                by_set = {name: tuple(pairs.mean(axis=0)) for name, pairs in results.items()}
                key = (short_weight, other_weight, penalty)
                tried[key], errors[key] = quote_objective(by_set, by_hand), standard_error(results)
    return tried, errors


def within_one_error(
    tried: dict[tuple[float, float, float], float], errors: dict[tuple[float, float, float], float]
) -> list[tuple[float, float, float]]:
    """The blends whose objective lies within one standard error of the best one's."""
    best = max(tried, key=lambda key: tried[key])
    return [key for key in tried if tried[key] >= tried[best] - errors[best]]


def readable(tried: dict[tuple[float, float, float], float]) -> dict[str, float | None]:
    return {
        "/".join(map(str, key)): round(value, 4) if math.isfinite(value) else None
        for key, value in tried.items()
    }


def choose_blend(rows: Rows, learned: list[np.ndarray]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The blend (ranker.Blend: the model's weight for short-fact questions and for the others, and
    the repeat penalty) by `quote_objective` on out-of-fold scores, and every blend's objective (None:
    some set fell under the hand weights). The rows are few (a few dozen questions a set), so the
    one-standard-error rule chooses: of the blends within one standard error of the best, the one
    nearest the hand weights (smallest short-fact weight, then other weight, then penalty). The hand
    weights alone (0/0/0) are among the blends tried, so one always qualifies. Then each document
    kind (`choose_kind_blends`)."""
    tried, errors = blend_grid(rows, learned, REPEAT_PENALTIES)
    chosen = min(within_one_error(tried, errors))
    blend: dict[str, Any] = dict(zip(("short_fact", "other", "repeat_penalty"), chosen, strict=True))
    by_kind, kinds_tried = choose_kind_blends(rows, learned, chosen)
    blend["by_kind"] = by_kind
    return blend, {"all": readable(tried), **kinds_tried}


MIN_KIND_QUESTIONS = 40  # a document kind with fewer training questions keeps the blend of all


def question_kinds(rows: Rows) -> list[str | None]:
    """Each question's document kind as the answer reads it: from its context's quotable sentences."""
    return [document_kind(texts) for texts in rows.texts]


def choose_kind_blends(
    rows: Rows, learned: list[np.ndarray], base: tuple[float, float, float]
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float | None]]]:
    """Weights of their own for the questions of each recognised document kind (ranker.document_kind),
    chosen on those questions alone as the blend of all is (the same objective: no set under the hand
    weights), the repeat penalty kept. The one-standard-error rule here leans to the blend of all: of
    the weights within one standard error of the kind's best, the nearest to `base`, so a kind gets
    weights of its own only where its questions clearly ask for them. Kept only where they differ."""
    kinds = question_kinds(rows)
    chosen: dict[str, dict[str, float]] = {}
    tried_by_kind: dict[str, dict[str, float | None]] = {}
    for kind in DOCUMENT_KINDS:
        keep = [i for i, found in enumerate(kinds) if found == kind]
        if len(keep) < MIN_KIND_QUESTIONS:
            continue
        tried, errors = blend_grid(subset(rows, keep), [learned[i] for i in keep], (base[2],))
        near = within_one_error(tried, errors)
        short, other, _ = min(near, key=lambda key: (abs(key[0] - base[0]) + abs(key[1] - base[1]), key))
        tried_by_kind[kind] = readable(tried)
        if (short, other) != base[:2]:
            chosen[kind] = {"short_fact": short, "other": other}
    return chosen, tried_by_kind


def blend_scores(rows: Rows, learned: list[np.ndarray], blend: Blend) -> list[np.ndarray]:
    """Each question's quote scores as the answer blends them (the weight for its question and its
    document's kind)."""
    return [
        blended(model, features[:, HAND], blend.weight(question.question, kind))
        for model, features, question, kind in zip(
            learned, rows.features, rows.questions, question_kinds(rows), strict=True
        )
    ]


def blends_compared(rows: Rows, learned: list[np.ndarray], blend: Blend) -> dict[str, Any]:
    """Per set, the quotes' recall and share of references held by the hand weights, by the blend of
    all questions alone (no weights by document kind), and by the blend chosen; and how many questions
    each document kind has."""
    alone = dataclasses.replace(blend, by_kind=())
    hand = [f[:, HAND] for f in rows.features]
    return {
        "hand": quote_scores_by_set(rows, hand, 0.0),
        "blend_of_all": quote_scores_by_set(rows, blend_scores(rows, learned, alone), blend.repeat_penalty),
        "blend": quote_scores_by_set(rows, blend_scores(rows, learned, blend), blend.repeat_penalty),
        "document_kinds": {
            name: dict(Counter(str(k) for k, s in zip(question_kinds(rows), rows.sets, strict=True) if s == name))
            for name in sorted(set(rows.sets))
        },
    }


def subset(rows: Rows, keep: list[int]) -> Rows:
    out = Rows()
    for key in ("features", "labels", "texts", "questions", "sets"):
        getattr(out, key).extend(getattr(rows, key)[i] for i in keep)
    return out


def cross_validate(kind: str, rows: Rows, names: tuple[str, ...], judge: Any) -> float:
    """The judge's mean over FOLDS folds of the training documents (a document's questions stay
    together), each fold scored by a model fitted on the others."""
    from sklearn.model_selection import GroupKFold

    groups = [f"{s}/{q.doc_id}" for s, q in zip(rows.sets, rows.questions, strict=True)]
    total, count = 0.0, 0
    for fit_on, judge_on in GroupKFold(n_splits=FOLDS).split(groups, groups=groups):
        fitting, judged = subset(rows, list(fit_on)), subset(rows, list(judge_on))
        model = fit_model(kind, *fitting.matrix(), names)
        total += judge(judged, predictions(model, judged, names)) * len(judge_on)
        count += len(judge_on)
    return total / count


def choose(rows: Rows, names: tuple[str, ...], judge: Any) -> tuple[str, dict[str, float]]:
    """The candidate kind with the best cross-validated judge (ties: the simpler, listed first)."""
    scores = {kind: round(cross_validate(kind, rows, names, judge), 4) for kind in MODELS}
    return max(scores, key=lambda kind: (scores[kind], -list(MODELS).index(kind))), scores


def train(
    evaldata: Path, cache_root: Path, base: Settings, *, ablation: bool, reuse_rows: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Collect the rows of every set (or read the last run's), choose and fit both models; the ranker
    file's content and a report (cross-validation on the training documents, then the held-out check)."""
    rows_path = cache_root / ROWS_FILE
    if reuse_rows:
        splits = {
            split: (nodes.relabelled(), sentences.relabelled())
            for split, (nodes, sentences) in saved_rows(rows_path).items()
        }
    else:
        splits = saved_rows(rows_path, collect_all(evaldata, cache_root, base))
    (train_nodes, train_sentences), (held_nodes, held_sentences) = splits["train"], splits["heldout"]
    sentence_kind, sentence_cv = choose(train_sentences, SENTENCE_FEATURES, top_recall)
    node_kind, node_cv = choose(train_nodes, NODE_FEATURES, budget_recall)
    train_learned = out_of_fold(sentence_kind, train_sentences, SENTENCE_FEATURES)
    blend, blends_tried = choose_blend(train_sentences, train_learned)
    sentence_model = fit_model(sentence_kind, *train_sentences.matrix(), SENTENCE_FEATURES)
    node_model = fit_model(node_kind, *train_nodes.matrix(), NODE_FEATURES)
    loaded = ranker_from_json(
        {"format": FORMAT, "sentence": sentence_model, "node": node_model, "blend": blend}
    )
    held_learned = predictions(sentence_model, held_sentences, SENTENCE_FEATURES)
    fused = [-np.arange(len(f), dtype=float) for f in held_nodes.features]
    report: dict[str, Any] = {
        "train_questions": len(train_sentences.questions),
        "heldout_questions": len(held_sentences.questions),
        "sentence_rows": int(sum(len(f) for f in train_sentences.features)),
        "node_rows": int(sum(len(f) for f in train_nodes.features)),
        "sentence_model": {"chosen": sentence_kind, "cross_validated_top3_recall": sentence_cv},
        "node_model": {
            "chosen": node_kind,
            "cross_validated_budget_recall": node_cv,
            "fused_order_budget_recall": round(
                budget_recall(train_nodes, [-np.arange(len(f), dtype=float) for f in train_nodes.features]), 4
            ),
        },
        "blend": {
            "chosen": blend,
            "cross_validated_objective": blends_tried,
            "out_of_fold_quotes_recall_and_reference_held": blends_compared(
                train_sentences, train_learned, loaded.blend
            ),
        },
        "heldout_quotes_recall_and_reference_held": {
            "learned": quote_scores_by_set(held_sentences, held_learned, 0.0),
            **blends_compared(held_sentences, held_learned, loaded.blend),
        },
        "heldout_top3_recall": {
            "learned": round(top_recall(held_sentences, held_learned), 4),
            "cosine": round(top_recall(held_sentences, [f[:, 0] for f in held_sentences.features]), 4),
        },
        f"heldout_budget{NODE_BUDGET}_recall": {
            "learned": round(
                budget_recall(held_nodes, predictions(node_model, held_nodes, NODE_FEATURES)), 4
            ),
            "fused": round(budget_recall(held_nodes, fused), 4),
            "cosine": round(budget_recall(held_nodes, [f[:, 0] for f in held_nodes.features]), 4),
        },
    }
    if ablation:
        report["ablation"] = ablate(
            sentence_kind, train_sentences, held_sentences, report["heldout_top3_recall"]["learned"]
        )
    ranker = {
        "format": FORMAT,
        "trained_on": {
            "sets": list(SETS),
            "split": "documents whose evaluate.split_of is 'train'",
            "seed": SEED,
            "sentence_model": sentence_kind,
            "node_model": node_kind,
            "params": {sentence_kind: MODELS[sentence_kind], node_kind: MODELS[node_kind]},
            "train_questions": report["train_questions"],
        },
        "sentence": sentence_model,
        "node": node_model,
        "blend": blend,
    }
    ranker_from_json(ranker)  # what is written must load
    return ranker, report


def ablate(kind: str, train_rows: Rows, held: Rows, full: float) -> dict[str, float]:
    """Held-out top-3 recall lost when the sentence model is refitted without each feature (zeroed)."""
    features, labels = train_rows.matrix()
    lost = {}
    for column, name in enumerate(SENTENCE_FEATURES):
        without = features.copy()
        without[:, column] = 0.0
        model = fit_model(kind, without, labels, SENTENCE_FEATURES)
        lost[name] = round(full - top_recall(held, predictions(model, held, SENTENCE_FEATURES, column)), 4)
    return lost


@click.command("train-ranker")
@click.argument("evaldata", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--cache",
    "cache_root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".eval-cache"),
    show_default=True,
    help="Where the sets' trees are cached (one folder per set, as `raptor eval` keeps them).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the ranker (default: the shipped raptor_engine/query/ranker.json).",
)
@click.option(
    "--ablation", is_flag=True, help="Also refit without each sentence feature and report the loss."
)
@click.option(
    "--reuse-rows",
    is_flag=True,
    help=f"Fit on the rows the last run collected (<cache>/{ROWS_FILE}) instead of collecting them again.",
)
@click.option(
    "--report", type=click.Path(dir_okay=False, path_type=Path), help="Write the training report as JSON."
)
def train_ranker_command(
    evaldata: Path,
    cache_root: Path,
    out: Path | None,
    ablation: bool,
    reuse_rows: bool,
    report: Path | None,
) -> None:
    """Fit the learned ranker on the training split of the sets in EVALDATA (../shared/evaldata)."""
    try:
        settings = Settings.from_env()
        ranker, found = train(evaldata, cache_root, settings, ablation=ablation, reuse_rows=reuse_rows)
    except (RaptorError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    out = out or MODEL_PATH
    out.write_text(json.dumps(ranker, separators=(",", ":")) + "\n", encoding="utf-8")
    click.echo(json.dumps(found, indent=2))
    if report:
        report.write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")
    click.echo(f"Wrote {out}", err=True)
