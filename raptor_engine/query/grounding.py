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
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from pathlib import Path

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
)


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


@lru_cache(maxsize=1)
def load_grounding() -> GroundingModel:
    """The shipped model (read once per process)."""
    return GroundingModel.from_json(json.loads(MODEL_PATH.read_text(encoding="utf-8")))
