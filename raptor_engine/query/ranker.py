"""The learned ranker: scores for candidate sentences (what the extractive answer quotes) and for
candidate context nodes (what fills the budget, and so what an LLM reads, in that order).

Both models were fitted offline on the project's evaluation sets (`raptor train-ranker`, see
docs/EVALUATION.md) with labels from the reference answers, and ship as plain JSON beside this file:
gradient-boosted regression trees (scikit-learn's HistGradientBoostingRegressor, exported node by node)
or a linear model. Nothing here imports scikit-learn: prediction walks the exported trees with numpy,
every tree at once, so ranking 200 sentences costs about a millisecond. JSON rather than a pickle,
since a pickle is code.

A model names the features it was fitted on; loading one whose names differ from the code's lists
below is an error, so a feature added to the code without retraining cannot be silently misread.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MODEL_PATH = Path(__file__).with_name("ranker.json")
FORMAT = 2

# What the sentence model reads, in this order (computed by answer.sentence_features).
SENTENCE_FEATURES = (
    "similarity",  # cosine of the sentence to the question
    "similarity_gap",  # ... minus the best sentence's
    "similarity_rank",  # its rank by cosine among the candidates, 0 the best, 1 the worst
    "node_score",  # the cosine of its context node to the question
    "node_rank",  # the node's place in the context (retrieval order), 0 first, 1 last
    "layer",  # the node's layer (0 a leaf)
    "lexical",  # weighted share of the question's terms it holds (rare terms and numbers weigh more)
    "bm25",  # BM25 of the sentence among the candidate sentences, over the best one's
    "node_bm25",  # BM25 of its node among the context's nodes, over the best one's
    "proximity",  # the question's terms it holds over the span of words they cover
    "kind_when",  # the question asks when and the sentence holds a date or year
    "kind_number",  # ... how many / how much and a number
    "kind_why",  # ... why and a reason
    "kind_who",  # ... who and a name
    "definition",  # 'what/who is X?' and the sentence says what X is
    "event",  # 'when did X end/start?' and the sentence has an ending's (+1) or a start's (-1) year
    "words",  # log of its length in words
    "position_in_node",  # where in its node it starts, 0 the beginning, 1 the end
    "opening",  # it lies in its document's first 1,500 characters
    "neighbours",  # mean cosine of the sentences before and after it in its node
    "centrality",  # cosine to the mean of all candidate sentences
    "heading",  # share of the question's terms in its node's headings
    "hand",  # the hand-weighted score (answer.hand_score): the model learns where it is wrong
)

# What the node model reads (computed by node_features).
NODE_FEATURES = (
    "cosine",  # the node's cosine to the question
    "cosine_gap",  # ... minus the best candidate's
    "vector_rank",  # log(1 + rank) in the vector search (log(1 + VECTOR_RANK_MISSING) when not found)
    "bm25",  # BM25 (FTS5) over the best candidate's, 0 when the text search did not find it
    "text_rank",  # log(1 + rank) in the text search (log(1 + TEXT_RANK_MISSING) when not found)
    "layer",
    "tokens",  # log(1 + tokens)
    "lexical",  # share of the question's content terms in the node's text
    "kind",  # the question asks when / how many / who and the node holds a year / number / name
)
TEXT_RANK_MISSING = 100
VECTOR_RANK_MISSING = 200


class RankerError(ValueError):
    """The shipped ranker file is unreadable or does not match the code's features."""


@dataclass(frozen=True)
class TreeEnsemble:
    """Regression trees as arrays, all trees' nodes concatenated; `roots` is each tree's first node."""

    baseline: float
    roots: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    missing_left: np.ndarray
    left: np.ndarray
    right: np.ndarray
    leaf: np.ndarray
    value: np.ndarray
    depth: int

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TreeEnsemble:
        roots, offset = [], 0
        columns: dict[str, list[Any]] = {
            k: [] for k in ("feature", "threshold", "missing_left", "left", "right", "leaf", "value")
        }
        for tree in data["trees"]:
            roots.append(offset)
            for key in ("feature", "threshold", "missing_left", "leaf", "value"):
                columns[key] += tree[key]
            # children are stored within their tree; shift them to the concatenated positions
            columns["left"] += [offset + i for i in tree["left"]]
            columns["right"] += [offset + i for i in tree["right"]]
            offset += len(tree["value"])
        return cls(
            baseline=float(data["baseline"]),
            roots=np.asarray(roots, dtype=np.int64),
            feature=np.asarray(columns["feature"], dtype=np.int64),
            threshold=np.asarray(columns["threshold"], dtype=np.float64),
            missing_left=np.asarray(columns["missing_left"], dtype=bool),
            left=np.asarray(columns["left"], dtype=np.int64),
            right=np.asarray(columns["right"], dtype=np.int64),
            leaf=np.asarray(columns["leaf"], dtype=bool),
            value=np.asarray(columns["value"], dtype=np.float64),
            depth=int(data["depth"]),
        )

    def predict(self, rows: np.ndarray) -> np.ndarray:
        """Walk every tree for every row at once: `depth` vectorised steps, not a Python loop per node."""
        count = rows.shape[0]
        if count == 0 or len(self.roots) == 0:
            return np.full(count, self.baseline)
        at = np.broadcast_to(self.roots, (count, len(self.roots))).copy()
        row_index = np.arange(count)[:, None]
        for _ in range(self.depth):
            values = rows[row_index, self.feature[at]]
            go_left = np.where(np.isnan(values), self.missing_left[at], values <= self.threshold[at])
            step = np.where(go_left, self.left[at], self.right[at])
            at = np.where(self.leaf[at], at, step)
        return self.baseline + self.value[at].sum(axis=1)


@dataclass(frozen=True)
class LinearModel:
    """Standardised features times weights, plus a bias (logistic regression's decision function)."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LinearModel:
        return cls(
            np.asarray(data["mean"], dtype=np.float64),
            np.asarray(data["scale"], dtype=np.float64),
            np.asarray(data["weights"], dtype=np.float64),
            float(data["bias"]),
        )

    def predict(self, rows: np.ndarray) -> np.ndarray:
        return ((np.nan_to_num(rows) - self.mean) / self.scale) @ self.weights + self.bias


Model = TreeEnsemble | LinearModel


def model_from_json(data: dict[str, Any], expected: tuple[str, ...], name: str) -> Model:
    """One of the file's models, checked against the features the code computes."""
    if tuple(data.get("features", ())) != expected:
        raise RankerError(
            f"the {name} ranker was fitted on other features than the code computes; retrain it "
            "(raptor train-ranker)"
        )
    if data.get("kind") == "trees":
        return TreeEnsemble.from_json(data)
    if data.get("kind") == "linear":
        return LinearModel.from_json(data)
    raise RankerError(f"the {name} ranker has an unknown kind {data.get('kind')!r}")


# A question after a short fact ("Which datasets are used?", "How many annotators?", "Do they report
# results on English?"), not a description, a reason or a whole story ("Why ...", "Describe ...",
# "What happens to X?"): its reference is often a few words, which the hand score finds more often.
SHORT_FACT = re.compile(
    r"^\s*(?:what|which|how (?:many|much|big|large|long|old)|who|whom|when|where|do|does|did|is|are|was|"
    r"were|can|has|have)\b(?!.*\b(?:why|describe|happens?|happened|relationship|significance|feel|"
    r"think|mean|plot|story)\b)",
    re.IGNORECASE,
)


def asks_short_fact(question: str) -> bool:
    """Whether the question asks for a short fact (SHORT_FACT) rather than a description or reason."""
    return bool(SHORT_FACT.search(question))


@dataclass(frozen=True)
class Blend:
    """How the extractive answer uses the sentence model, chosen with it by cross-validation on the
    training documents (`raptor train-ranker`). A quote's score is a weight times the model's score
    plus the rest times the hand score: the model alone prefers the long sentences that share many
    words with a long reference, the hand score more often the sentence holding a short answer's
    exact words, so a question after a short fact (`asks_short_fact`) has its own weight,
    `short_fact`, and every other question `other`. A second or third quote loses `repeat_penalty`
    times the share of the question's terms it holds that the quotes before it already held, so
    three quotes answer different parts of the question."""

    short_fact: float
    other: float
    repeat_penalty: float

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Blend:
        short, other, penalty = float(data["short_fact"]), float(data["other"]), float(data["repeat_penalty"])
        if not (0.0 <= short <= 1.0 and 0.0 <= other <= 1.0 and penalty >= 0.0):
            raise RankerError(f"the ranker's blend {data!r} is out of range")
        return cls(short, other, penalty)

    def weight(self, question: str) -> float:
        """The model's share of a quote's score for this question."""
        return self.short_fact if asks_short_fact(question) else self.other


HAND = SENTENCE_FEATURES.index("hand")


@dataclass(frozen=True)
class Ranker:
    """The sentence and node models of one ranker file, and how the answer blends the sentence model."""

    sentence: Model
    node: Model
    blend: Blend

    def sentence_scores(self, features: np.ndarray) -> np.ndarray:
        """The sentence model's own scores (what it was fitted to predict)."""
        return self.sentence.predict(features)

    def quote_scores(self, question: str, features: np.ndarray) -> np.ndarray:
        """What orders the quotes: the model's scores blended with the hand score (a column of the
        rows) by the question's weight."""
        return blended(self.sentence_scores(features), features[:, HAND], self.blend.weight(question))

    def node_scores(self, features: np.ndarray) -> np.ndarray:
        return self.node.predict(features)


def ranker_from_json(data: dict[str, Any]) -> Ranker:
    if data.get("format") != FORMAT:
        raise RankerError(f"the ranker file has format {data.get('format')!r}; this code reads {FORMAT}")
    if not isinstance(data.get("blend"), dict):
        raise RankerError("the ranker file has no blend; retrain it (raptor train-ranker)")
    return Ranker(
        model_from_json(data["sentence"], SENTENCE_FEATURES, "sentence"),
        model_from_json(data["node"], NODE_FEATURES, "node"),
        Blend.from_json(data["blend"]),
    )


def blended(learned: np.ndarray, hand: np.ndarray, weight: float) -> np.ndarray:
    """A convex mix of the model's and the hand weights' scores (both lie on about [0, 1])."""
    model, own = np.asarray(learned, dtype=np.float64), np.asarray(hand, dtype=np.float64)
    return weight * model + (1.0 - weight) * own


@functools.lru_cache(maxsize=4)
def load_ranker(path: Path = MODEL_PATH) -> Ranker:
    """The ranker in `path` (the shipped one by default), read once per process."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RankerError(f"the ranker file {path} cannot be read ({exc})") from exc
    return ranker_from_json(data)


def ranker_for(ranking: str) -> Ranker | None:
    """The shipped ranker for the extractive answer's sentences, unless the setting (RAPTOR_RANKING)
    asks for the vector search alone and the hand weights."""
    return None if ranking == "vector" else load_ranker()


# ---- node features ---------------------------------------------------------------------------

_YEAR_OR_NUMBER = re.compile(r"\d")
_NAME = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+")
_ASKS_WHEN = re.compile(r"\b(?:when|what year|which year|what date|how (?:many|much|long|old))\b", re.I)
_ASKS_WHO = re.compile(r"\b(?:who|whom|whose)\b", re.I)


def node_kind_match(question: str, text: str) -> float:
    """1 when the question asks for a time or quantity and the text holds a number, or asks who and
    the text holds a name; else 0. A cheap form of the sentence model's kind features."""
    if _ASKS_WHEN.search(question):
        return float(bool(_YEAR_OR_NUMBER.search(text)))
    if _ASKS_WHO.search(question):
        return float(bool(_NAME.search(text)))
    return 0.0


@dataclass
class NodeCandidate:
    """A candidate context node: where each search ranked it, and (read for the ranker) its text."""

    node_id: int
    cosine: float
    vector_rank: int | None = (
        None  # 0-based rank in the vector search, None when only the text search found it
    )
    text_score: float | None = None  # BM25, larger better; None when the text search did not find it
    text_rank: int | None = None
    layer: int = 0
    tokens: int = 0
    text: str = ""
    terms: frozenset[str] = frozenset()  # stemmed content terms of the text


def node_features(question: str, question_terms: set[str], candidates: list[NodeCandidate]) -> np.ndarray:
    """The node model's rows, one per candidate (see NODE_FEATURES)."""
    best_cosine = max((c.cosine for c in candidates), default=0.0)
    best_text = max((c.text_score for c in candidates if c.text_score is not None), default=0.0)
    rows = []
    for candidate in candidates:
        held = len(question_terms & candidate.terms) / len(question_terms) if question_terms else 0.0
        text_score = candidate.text_score
        rows.append(
            [
                candidate.cosine,
                candidate.cosine - best_cosine,
                math.log1p(VECTOR_RANK_MISSING if candidate.vector_rank is None else candidate.vector_rank),
                (text_score / best_text) if text_score is not None and best_text > 0 else 0.0,
                math.log1p(TEXT_RANK_MISSING if candidate.text_rank is None else candidate.text_rank),
                float(candidate.layer),
                math.log1p(candidate.tokens),
                held,
                node_kind_match(question, candidate.text),
            ]
        )
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(NODE_FEATURES))
