"""'Is that true?', 'are you sure?', 'really?': the last answer checked against the documents.

A new search for the words "is that true" would quote whatever mentions truth. Instead the last
answer's claims (its quotes, or an LLM answer's sentences) are searched for, and each is looked for
among the sentences found: the same sentence, or one holding nearly all its content words. The reply
quotes what supports them, or says plainly that nothing was found. Deterministic, no model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..ingest.sentences import content_terms, sentence_key, sentences_of, stem, strip_bullet
from ..types import ContextNode, Turn
from .followup import NOTHING_RELATED, WEAK_MATCH, in_quotes, previous_answers, quotes_in, unanswered_lead
from .support import EMBED_SHARE, SupportIndex, best_node, says_not_answered

# The statements of one answer that are checked: searched in batches within the question limit
# (`claim_batches`), so a long answer's later ones are searched too; past it the reply says how many were
# not checked, and "yes" is said of the ones checked only.
MAX_CLAIMS = 24
CLAIMS_PER_SEARCH = 4  # each search's context budget is shared by this many claims at most
SUPPORTED_SHARE = 0.8  # the share of a claim's content words one sentence of the documents must hold
CHECKED = "Yes: the documents say so."
PARTLY = (
    "Partly: the documents say what is quoted below, but I found nothing that supports the rest of the last answer."
)
UNSUPPORTED = "I can't confirm that from the documents: I found nothing in them that supports the last answer."
# The last answer said the documents do not answer its question ("Nothing in the documents clearly answers
# this; the closest passages are: …"): its quotes are in the documents, but checking them would say "Yes"
# to an answer that answered nothing.
UNSETTLED = "I can't confirm that from the documents: the last answer found nothing in them that answers the question."
NOTHING_TO_CHECK = "Ask me a question first: there is no answer yet to check."
# The leads when the last answer makes more than MAX_CLAIMS statements: what was checked, and how many not.
CHECKED_FIRST = (
    "Yes for the last answer's first {checked} statements: the documents say what is quoted below. "
    "I did not check its other {unchecked}."
)
PARTLY_FIRST = (
    "Partly: of the last answer's first {checked} statements, the documents say what is quoted below and I found "
    "nothing that supports the rest. I did not check its other {unchecked}."
)
UNSUPPORTED_FIRST = (
    "I can't confirm that from the documents: I found nothing in them that supports the last answer's first "
    "{checked} statements, and I did not check its other {unchecked}."
)
_MARKER = re.compile(r"\[(?:\d{1,4}|\?)\]")


def last_answer(history: list[Turn]) -> str | None:
    """The conversation's last answer, or None before any."""
    answers = previous_answers(history, 1)
    return answers[-1] if answers else None


def answered_nothing(answer: str) -> bool:
    """Whether the last answer said the documents do not answer its question (`UNSETTLED`): the extractive
    leads for the closest or nearest passages, or a reply that says so and cites nothing. Not a document's
    edge ('… ends with that passage'), which answers 'and then?'."""
    if answer.startswith((WEAK_MATCH, NOTHING_RELATED)):
        return True
    return says_not_answered(answer) and not unanswered_lead(answer)


def claims_of(answer: str) -> list[str]:
    """What an answer says: each sentence of its quotes, or of its prose (an LLM's) without markers and
    without a lead line ('From the documents:')."""
    quoted = [s.text for quote in quotes_in(answer) for s in sentences_of(quote)]
    if not quoted:
        unmarked = re.sub(r"\s+([.,;:!?])", r"\1", _MARKER.sub("", answer))  # 'in 1884 [1].' -> 'in 1884.'
        lines = [strip_bullet(line) for line in unmarked.splitlines()]
        prose = " ".join(line for line in lines if line and not line.rstrip().endswith(":"))
        quoted = [s.text for s in sentences_of(prose)]
    return [claim for claim in quoted if content_terms(claim)]


def claim_batches(claims: list[str], limit: int) -> list[str]:
    """The claims joined CLAIMS_PER_SEARCH at a time into texts of at most `limit` characters, in order,
    each searched on its own: one search of them all cut at the limit never looked for a long answer's
    later claims, and a dozen claims share one context budget between them. A claim longer than the limit
    is searched by its opening (`check_reply` still compares the whole claim)."""
    batches: list[list[str]] = []
    for claim in claims:
        last = batches[-1] if batches else []
        if last and len(last) < CLAIMS_PER_SEARCH and len(" ".join([*last, claim])) <= limit:
            last.append(claim)
        else:
            batches.append([claim[:limit]])
    return [" ".join(batch) for batch in batches]


@dataclass(frozen=True)
class _Said:
    """A sentence of the context: its block ([n], 1-based), its comparison key, text and stemmed terms."""

    position: int
    key: str
    text: str
    terms: frozenset[str]


def _context_sentences(nodes: list[ContextNode]) -> list[_Said]:
    """Every sentence of the context, split and stemmed once for all the claims checked against it."""
    return [
        _Said(position, sentence.key, strip_bullet(sentence.text), frozenset(stem(t) for t in content_terms(sentence.text)))
        for position, node in enumerate(nodes, start=1)
        for sentence in sentences_of(node.text)
    ]


def support_for(claim: str, said: list[_Said]) -> tuple[int, str] | None:
    """The context block ([n], 1-based) and sentence that says the claim, or None."""
    key = sentence_key(claim)
    terms = {stem(t) for t in content_terms(claim)}
    best: tuple[float, int, str] | None = None
    for sentence in said:
        if sentence.key == key:
            return sentence.position, sentence.text
        share = len(terms & sentence.terms) / len(terms) if terms else 0.0
        if share >= SUPPORTED_SHARE and (best is None or share > best[0]):
            best = (share, sentence.position, sentence.text)
    return (best[1], best[2]) if best is not None else None


def check_reply(
    claims: list[str], nodes: list[ContextNode], meaning: SupportIndex | None = None, unchecked: int = 0
) -> str:
    """The reply to 'is that true?': whether the documents support the claims, quoting what does. With
    `meaning` (an LLM's answer, whose sentences paraphrase the documents), a claim no sentence holds
    nearly word for word is looked for as the support check looks for a written sentence's source.
    `unchecked`: how many of the last answer's claims past MAX_CLAIMS were not looked for; the lead says
    so. Synchronous (it may embed): run it in a thread."""
    said = _context_sentences(nodes)
    found = [support_for(claim, said) for claim in claims]
    if meaning is not None and not all(found):
        missing = [i for i, hit in enumerate(found) if hit is None]
        for i, hit in zip(missing, supported_by_meaning([claims[i] for i in missing], meaning), strict=True):
            found[i] = hit
    lines = (f"- {in_quotes(text)} [{position}]" for position, text in filter(None, found))
    shown = list(dict.fromkeys(lines))
    return "\n".join([_check_lead(bool(shown), all(found), len(claims), unchecked), *shown])


def _check_lead(some: bool, every: bool, checked: int, unchecked: int) -> str:
    """The reply's first line: whether some (`some`) or all (`every`) of the checked claims are supported,
    and, when some claims were not checked, of which it says so."""
    if not unchecked:
        return (CHECKED if every else PARTLY) if some else UNSUPPORTED
    lead = (CHECKED_FIRST if every else PARTLY_FIRST) if some else UNSUPPORTED_FIRST
    return lead.format(checked=checked, unchecked=unchecked)


def supported_by_meaning(claims: list[str], index: SupportIndex) -> list[tuple[int, str] | None]:
    """For each claim, the context block ([n]) and the sentence of it that says the claim in other words
    (the support check's blend of embedding cosine and shared terms, at its threshold), or None."""
    if not claims:
        return []
    cosine, lexical = index.similarities(claims)
    blended = index.node_scores(claims, cosine, lexical)
    sentence_scores = EMBED_SHARE * cosine + (1 - EMBED_SHARE) * lexical
    found: list[tuple[int, str] | None] = []
    for row in range(len(claims)):
        position = best_node(blended[row])
        if position is None:
            found.append(None)
            continue
        in_block = [i for i, sentence in enumerate(index.sentences) if sentence.position == position]
        best = max(in_block, key=lambda i: sentence_scores[row, i])
        found.append((position, strip_bullet(index.sentences[best].text)))
    return found
