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

from ..ingest.transcript import speaker_of

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
    "kind_where",  # ... where / from what source and a place or source ('on Mars', 'from Food.com')
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
# results on English?", "In what language are the tweets?", "For how many years ...?"), not a
# description, a reason or a whole story ("Why ...", "Describe ...", "What happens to X?"): its
# reference is often a few words, which the hand score finds more often.
_LEADING_PREPOSITION = (
    r"(?:in|on|at|from|for|to|by|with|of|into|onto|under|during|after|before|through|among|between|"
    r"within|against|over|upon|about|across|since|until|via|per)\s+"
)
SHORT_FACT = re.compile(
    rf"^\s*(?:(?:{_LEADING_PREPOSITION})?(?:what|which|how (?:many|much|big|large|long|old)|who|whom|when|"
    r"where)|do|does|did|is|are|was|were|can|has|have)\b(?!.*\b(?:why|describe|happens?|happened|"
    r"relationship|significance|feel|think|mean|plot|story)\b)",
    re.IGNORECASE,
)
# "When did the fire happen?", "Where did the accident happen?": a time or a place, however it is asked
# ("What happened to X?" asks for a story)
WHEN_IT_HAPPENED = re.compile(
    r"^\s*(?:when|where|what (?:year|date|day|time))\b(?!.*\b(?:why|describe|relationship|significance|feel|think|"
    r"mean|plot|story)\b).*\bhappen(?:s|ed)?\b",
    re.IGNORECASE,
)


def asks_short_fact(question: str) -> bool:
    """Whether the question asks for a short fact (SHORT_FACT) rather than a description or reason."""
    return bool(SHORT_FACT.search(question) or WHEN_IT_HAPPENED.search(question))


# What kind of document the context comes from, read off the quotable sentences themselves: the
# trade between the model and the hand score differs between them (a paper's answers are short facts
# the hand score finds; a story's are described over long sentences the model prefers).
PAPER = "paper"  # a scientific or technical paper: citations, table and figure labels, decimals, percentages
NARRATIVE = "narrative"  # fiction or narrative prose: dialogue in quotation marks, 'said', 'asked'
DOCUMENT_KINDS = (PAPER, NARRATIVE)
# A numbered citation: "[12]", "[3, 4]", "［2–5］" (also a label, not a quantity, to the answer kinds)
CITATION_BRACKET = r"[\[［]\s*\d+(?:\s*[,;–-]\s*\d+)*\s*[\]］]"
# every paper mark but 'et al' holds a digit, so only the sentences with one are searched for them
_PAPER_MARK = re.compile(
    rf"\b(?:BIBREF|TABREF|FIGREF|SECREF|INLINEFORM|DISPLAYFORM)\d|{CITATION_BRACKET}"
    r"|\b(?:Table|Fig\.|Figure|Section|Eq\.|Equation|Appendix)\s+\d|\d(?:\.\d+)?\s?%|\b\d+\.\d+\b"
)
HAS_DIGIT = re.compile(r"\d")
_ET_AL = re.compile(r"\bet al\b")  # of lower-cased text
_DIALOGUE_MARK = re.compile(r"[“”]|(?:^|\s)\"|\"(?:\s|$)")
_SPEECH_VERB = re.compile(r"\b(?:said|asked|replied|told|shouted|whispered|cried|answered)\b")  # of lower-cased text
PAPER_MARKS_PER_1000 = 8.0  # QASPER's papers hold 11-47 a 1,000 words, the stories none
NARRATIVE_MARKS_PER_1000 = 10.0  # dialogue marks plus twice the speech verbs; the papers hold 0-6
SPEAKER_TURN_SHARE = 0.3  # of the sentences, for a transcript (a kind no blend was fitted on)
MIN_KIND_WORDS = 150  # under this the rates say too little


def document_kind(texts: list[str]) -> str | None:
    """PAPER, NARRATIVE or None (not recognised: a transcript of speaker turns, too little text, or
    neither), from the rates of each kind's marks in the texts (a context's quotable sentences). An
    unrecognised kind gets the blend fitted on every question, so a kind the ranker never saw
    degrades to that, not to a guess."""
    count = sum(len(text.split()) for text in texts)
    if count < MIN_KIND_WORDS:
        return None
    # "Grad F: Yeah, I think ...", "Project Manager: So ...": a transcript's turns (`transcript.speaker_of`;
    # the extractive answer shows each of its sentences after its speaker)
    if sum(speaker_of(text) is not None for text in texts) >= SPEAKER_TURN_SHARE * len(texts):
        return None
    joined = "\n".join(texts)
    lowered = joined.lower()
    per_1000 = 1000.0 / count
    numbered = "\n".join(text for text in texts if HAS_DIGIT.search(text))
    paper = (len(_PAPER_MARK.findall(numbered)) + len(_ET_AL.findall(lowered))) * per_1000
    narrative = (len(_DIALOGUE_MARK.findall(joined)) + 2 * len(_SPEECH_VERB.findall(lowered))) * per_1000
    if paper >= PAPER_MARKS_PER_1000 and narrative < NARRATIVE_MARKS_PER_1000:
        return PAPER
    if narrative >= NARRATIVE_MARKS_PER_1000 and paper < PAPER_MARKS_PER_1000:
        return NARRATIVE
    return None


@dataclass(frozen=True)
class Blend:
    """How the extractive answer uses the sentence model, chosen with it by cross-validation on the
    training documents (`raptor train-ranker`). A quote's score is a weight times the model's score
    plus the rest times the hand score: the model alone prefers the long sentences that share many
    words with a long reference, the hand score more often the sentence holding a short answer's
    exact words, so a question after a short fact (`asks_short_fact`) has its own weight,
    `short_fact`, and every other question `other`. A document of a recognised kind
    (`document_kind`) may have its own pair of weights in `by_kind`; any other document, or a kind
    without its own pair, gets `short_fact` and `other`. A second or third quote loses
    `repeat_penalty` times the share of the question's terms it holds that the quotes before it
    already held, so three quotes answer different parts of the question."""

    short_fact: float
    other: float
    repeat_penalty: float
    by_kind: tuple[tuple[str, float, float], ...] = ()  # (kind, short_fact, other)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Blend:
        short, other, penalty = float(data["short_fact"]), float(data["other"]), float(data["repeat_penalty"])
        kinds = data.get("by_kind", {})
        if not isinstance(kinds, dict):
            raise RankerError(f"the ranker's blend {data!r} is malformed")
        by_kind = tuple(
            (str(kind), float(pair["short_fact"]), float(pair["other"])) for kind, pair in sorted(kinds.items())
        )
        weights = [short, other, *(w for _, a, b in by_kind for w in (a, b))]
        unknown = {kind for kind, _, _ in by_kind} - set(DOCUMENT_KINDS)
        if not all(0.0 <= w <= 1.0 for w in weights) or penalty < 0.0 or unknown:
            raise RankerError(f"the ranker's blend {data!r} is out of range")
        return cls(short, other, penalty, by_kind)

    def weight(self, question: str, kind: str | None = None) -> float:
        """The model's share of a quote's score for this question, in a document of this kind."""
        short, other = self.short_fact, self.other
        for named, kind_short, kind_other in self.by_kind:
            if named == kind:
                short, other = kind_short, kind_other
        return short if asks_short_fact(question) else other


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

    def quote_scores(self, question: str, features: np.ndarray, kind: str | None = None) -> np.ndarray:
        """What orders the quotes: the model's scores blended with the hand score (a column of the
        rows) by the weight for the question and the kind of document (`document_kind`)."""
        return blended(self.sentence_scores(features), features[:, HAND], self.blend.weight(question, kind))

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
