"""Scores for the evaluation, written out here so they need no network and no extra package.

- ROUGE-1 and ROUGE-L *recall* of a reference by a text: how much of the reference's words the
  retrieved context contains (unigrams, clipped by count) and in order (longest common subsequence).
  Tokens are lower-cased runs of letters and digits, as in the ROUGE toolkit without stemming.
- Token F1 between a predicted and a reference answer, SQuAD-style (lower-case, punctuation and
  articles dropped), the metric QASPER and the evaluation sets' own scorer use.
- Multiple-choice letter parsing and accuracy, for QuALITY.

Scores over several references take the maximum, as the evaluation sets prescribe.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

_WORD = re.compile(r"[a-z0-9]+")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
LETTERS = "ABCDEFGHIJ"


def rouge_tokens(text: str) -> list[str]:
    """Lower-cased alphanumeric runs: 'Don't stop!' -> ['don', 't', 'stop']."""
    return _WORD.findall(text.lower())


def rouge1_recall(reference: str, text: str) -> float:
    """Share of the reference's unigrams found in `text`, each counted at most as often as it occurs there."""
    ref = Counter(rouge_tokens(reference))
    total = sum(ref.values())
    if total == 0:
        return 0.0
    found = Counter(rouge_tokens(text))
    return sum((ref & found).values()) / total


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence, bit-parallel (Allison-Dix / Hyyrö).

    A row of the classic DP table is held as the bits of one Python integer, so comparing a
    300-word reference with a 2,000-token context costs 300 big-integer steps, not 600,000 cells.
    """
    if not a or not b:
        return 0
    if len(a) > len(b):
        a, b = b, a  # the shorter sequence drives the loop; the longer one sets the bit width
    masks: dict[str, int] = {}
    for position, token in enumerate(b):
        masks[token] = masks.get(token, 0) | (1 << position)
    full = (1 << len(b)) - 1
    row = full
    for token in a:
        matches = row & masks.get(token, 0)
        row = ((row + matches) | (row - matches)) & full
    return len(b) - row.bit_count()


def rougeL_recall(reference: str, text: str) -> float:  # noqa: N802 (the metric's name)
    """LCS of the reference and `text`, over the reference's length."""
    ref = rouge_tokens(reference)
    if not ref:
        return 0.0
    return lcs_length(ref, rouge_tokens(text)) / len(ref)


def best_over(references: Iterable[str], score: Callable[[str, str], float], text: str) -> float | None:
    """The best score of `text` against any reference; None when there is no reference."""
    scores = [score(ref, text) for ref in references if ref and ref.strip()]
    return max(scores) if scores else None


def answer_tokens(text: str) -> list[str]:
    """SQuAD normalisation: lower-case, drop punctuation and articles, split on whitespace."""
    text = text.lower().translate(_PUNCTUATION)
    return _ARTICLES.sub(" ", text).split()


def token_f1(prediction: str, reference: str) -> float:
    """Harmonic mean of token precision and recall (1.0 when both are empty, as SQuAD scores it)."""
    pred, gold = answer_tokens(prediction), answer_tokens(reference)
    if not pred or not gold:
        return float(pred == gold)
    same = sum((Counter(pred) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def max_token_f1(prediction: str, references: Iterable[str]) -> float | None:
    refs = [r for r in references if r is not None]
    return max((token_f1(prediction, r) for r in refs), default=None)


def parse_choice(reply: str, options: int) -> int | None:
    """The 0-based option a model's reply picks ('B', '(b)', 'The answer is **C**.'), or None if unclear.

    Only the first `options` letters count, and a bare lower-case letter only when it is the whole
    reply, so 'a spaceship...' or 'I think...' is not read as a choice.
    """
    letters = LETTERS[:options]
    both = letters + letters.lower()
    text = reply.strip()
    if len(text) == 1 and text in both:
        return letters.index(text.upper())
    patterns = (
        rf"^[\s*(\[]*([{letters}])(?=[\s.:,)*\]]|$)",  # "B", "(B)", "B.", "**B**", "B) because ..."
        rf"(?i:\b(?:answer|option|choice)\b)(?:\s+is)?[\s:*(\[]*([{both}])\b",  # "The answer is C"
        rf"\(([{both}])\)",  # "... so (c)"
    )
    for pattern in patterns:
        match = re.search(pattern, text)
        if match:
            return letters.index(match.group(1).upper())
    return None


def accuracy(picked: Sequence[int | None], gold: Sequence[int]) -> float:
    """Share of questions answered with the gold option; an unparsed reply counts as wrong."""
    if not gold:
        return 0.0
    return sum(p == g for p, g in zip(picked, gold, strict=True)) / len(gold)


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the values that exist; None when none do."""
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None
