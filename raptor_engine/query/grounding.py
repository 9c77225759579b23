"""Whether the documents answer a question: the extractive answer's lead line.

Three quoted sentences always come back, whatever was asked; what a reader must be told is whether they
answer. `GROUNDING_FEATURES` are read from what answering already computed (the quotes' and the
context's similarities to the question, the question's terms, names and numbers found in the quotes
and in the context), and a logistic regression
(`grounding.json`, fitted by `python -m raptor_tools.grounding`) turns them into the probability that
the quotes answer. Under `weak_below` the answer says it only found the closest passages; under
`nothing_below` that the documents say nothing about it. The thresholds were chosen on the training
split of ../shared/evaldata so that few questions the quotes do answer are called weak
(docs/EVALUATION.md, "Questions the documents do not answer").

A reader's slips must not read as a question about something else: a question term the context lacks
but holds one slip away ("lighthose": a letter dropped, doubled, changed, or two swapped, never the
first) counts as that term (`respellings`). A question with few words of its own ("who designed it?", its subject a
pronoun) gets lower cosines than a long one however well it is answered, so the share of its words
that carry content is a feature too, and one naming nothing but a pronoun and one word ("when was it
built?") is never told the documents say nothing about it (`subject_is_a_pronoun`). A question asking a negative ("who did not keep the light?",
"which keeper never married?") is settled only by a quote that says a negative itself: otherwise
the quotes are the closest passages at best (`asks_a_negative`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from pathlib import Path

from ..ingest.sentences import content_terms, one_slip_apart, stem

MODEL_PATH = Path(__file__).with_name("grounding.json")

GROUNDING_FEATURES = (
    "top_similarity",  # cosine of the first quote to the question
    "best_similarity",  # the highest cosine of any quotable sentence of the context
    "median_similarity",  # the context's median cosine: the passages as a whole are about the question
    "top_lexical",  # rarity-weighted share of the question's terms the first quote holds
    "quote_coverage",  # share of the question's terms the quotes hold
    "context_coverage",  # share of the question's terms anywhere in the context
    "names_missing",  # share of the question's names and numbers the context lacks
    "node_similarity",  # the best context node's retrieval score (cosine)
    "respelled",  # share of the question's terms the context holds only one slip away ("lighthose")
    "content_share",  # share of the question's words that name its subject ("who designed it?": 1 of 3)
)
MIN_RESPELLED_CHARS = 4  # a shorter term is one slip from too many others ("cup", "cut", "cap")
# A question asking a negative; "why or why not", "whether or not" ask both ways
NEGATION = re.compile(r"\b(?:not|never|no|nobody|none|neither|nor|cannot)\b|n['’]t\b", re.IGNORECASE)
BOTH_WAYS = re.compile(r"\b(?:or|why|whether|if)\s+not\b", re.IGNORECASE)
PRONOUN = re.compile(r"\b(?:it|its|they|them|their|he|him|his|she|her|this|that|these|those)\b", re.IGNORECASE)


class Grounding(Enum):
    """How far the quotes answer the question, best first."""

    ANSWERED = "answered"
    CLOSEST = "closest"  # only the closest passages: something near, nothing that clearly answers
    NOTHING = "nothing"  # the documents say nothing about it


@dataclass(frozen=True)
class GroundingModel:
    """A standardised logistic regression over GROUNDING_FEATURES and its two thresholds."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    weak_below: float
    nothing_below: float

    def probability(self, features: list[float]) -> float:
        """The probability that the quotes answer the question."""
        z = self.intercept + sum(
            c * (x - m) / s for c, x, m, s in zip(self.coef, features, self.mean, self.scale, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def verdict(self, features: list[float]) -> Grounding:
        p = self.probability(features)
        if p < self.nothing_below:
            return Grounding.NOTHING
        return Grounding.CLOSEST if p < self.weak_below else Grounding.ANSWERED

    @classmethod
    def from_json(cls, data: dict) -> GroundingModel:
        if tuple(data["features"]) != GROUNDING_FEATURES:
            raise ValueError("grounding.json was fitted on other features; refit it (python -m raptor_tools.grounding)")
        return cls(
            tuple(data["mean"]),
            tuple(data["scale"]),
            tuple(data["coef"]),
            float(data["intercept"]),
            float(data["weak_below"]),
            float(data["nothing_below"]),
        )

    def to_json(self) -> dict:
        return {
            "features": list(GROUNDING_FEATURES),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "coef": list(self.coef),
            "intercept": self.intercept,
            "weak_below": self.weak_below,
            "nothing_below": self.nothing_below,
        }


def respellings(terms: Iterable[str], vocabulary: set[str]) -> dict[str, str]:
    """For each term the vocabulary lacks, the vocabulary's term one slip away (`one_slip_apart`) that
    starts with the same letter (a reader rarely mistypes the first, and "boil" is not "oil"), the
    first in sorted order when several are; numbers and short terms are never respelled. Only the
    vocabulary's terms with the same first letter and within one letter of the term's length are
    compared."""
    missing = sorted(
        t for t in set(terms) if t not in vocabulary and len(t) >= MIN_RESPELLED_CHARS and not t.isdigit()
    )
    if not missing:
        return {}
    lengths = {len(t) + d for t in missing for d in (-1, 0, 1)}
    initials = {t[0] for t in missing}
    near: dict[str, list[str]] = {}  # by first letter
    for v in vocabulary:
        if v[:1] in initials and len(v) in lengths and len(v) >= MIN_RESPELLED_CHARS - 1:
            near.setdefault(v[0], []).append(v)
    found = {}
    for term in missing:
        match = next((v for v in sorted(near.get(term[0], ())) if one_slip_apart(term, v)), None)
        if match is not None:
            found[term] = match
    return found


def content_share(subject: int, words: int) -> float:
    """The share of a question's words that name its subject ('who designed it?': 1 of 3)."""
    return subject / words if words else 0.0


def subject_is_a_pronoun(question: str, subject_terms: int, names: int) -> bool:
    """Whether a question names its subject only by a pronoun ('who designed it?', 'what did they
    find?'): a pronoun, no name, and at most one word of its own. The documents cannot be said to say
    nothing about "it"; such a question gets the closest passages at worst."""
    return subject_terms <= 1 and names == 0 and bool(PRONOUN.search(question))


def asks_a_negative(text: str) -> bool:
    """Whether a question asks a negative ('who did not ...', 'which keeper never ...'), or a quote
    says one; 'why or why not?' asks both ways and is not one."""
    return bool(NEGATION.search(BOTH_WAYS.sub(" ", text)))


# what follows a question's negation: "never married", "did NOT keep the light", "don't leave the hive"
NEGATED = re.compile(r"(?:\b(?:not|never|no|cannot)|n['’]t)\s+(?P<rest>[^?.!]*)", re.IGNORECASE)


def negated_term(question: str) -> str | None:
    """The stemmed first content word after a question's negation, what the negative is about ('marri' of
    'which keeper never married?', 'keep' of 'who did NOT keep the light?'); None when none follows."""
    found = NEGATED.search(BOTH_WAYS.sub(" ", question))
    terms = content_terms(found.group("rest")) if found else []
    return stem(terms[0]) if terms else None


def says_the_asked_negative(question: str, quote: str) -> bool:
    """Whether a quote can settle a negative question: it says a negative, and of what the question negates
    ('Nobody drowned, but ...' for 'who did not drown?'). A negative about something else ('It has not
    failed once in that time' for 'which keeper never married?') settles nothing: without this, whether such
    a question read as answered turned on which such sentence the embedding's rounding ranked first."""
    if not asks_a_negative(quote):
        return False
    negated = negated_term(question)
    return negated is None or negated in {stem(term) for term in content_terms(quote)}


@lru_cache(maxsize=1)
def load_grounding() -> GroundingModel:
    """The shipped model (read once per process)."""
    return GroundingModel.from_json(json.loads(MODEL_PATH.read_text(encoding="utf-8")))
