"""Summaries without a model: an extractive `Summarizer` for when no LLM is configured.

`ExtractiveSummarizer` keeps a cluster's most central sentences, in source order, within the
request's token budget. Centrality combines two signals that cost no extra embedding:
- how close each child is to the cluster's mean embedding (the children are already embedded);
- how well each sentence matches the cluster's term distribution: the cosine between the
  sentence's TF-IDF vector and the cluster centroid, as in centroid-based summarisation
  (Radev et al. 2004), with IDF taken over the cluster's own sentences.
A sentence that mostly repeats one already chosen is skipped (MMR-style redundancy check).
"""

from __future__ import annotations

import asyncio
import bisect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..ingest.budget import checked
from ..ingest.chunk import in_code, is_row_line, split_sentences
from ..ingest.sentences import content_terms, is_heading, jaccard, strip_bullet
from ..ingest.transcript import speaker_of, spoken_lines, turns
from ..types import Summary, SummaryRequest

CountTokens = Callable[[str], int]
CountTokensBatch = Callable[[list[str]], list[int]]

ELLIPSIS = "\u2026"
LEXICAL_WEIGHT = 0.6  # the rest of the score is the child's embedding centrality
REDUNDANCY_LIMIT = 0.6  # skip a sentence whose term overlap (Jaccard) with a chosen one reaches this
SCORE_DECIMALS = 12  # lexical scores are compared to this many decimals
SHORT_SENTENCE_TERMS = 4  # sentences with fewer content terms are scored down proportionally
_CHARS_PER_TOKEN = 4.0  # a rough English average, only used to decide how many sentences to count
_SMALLEST_USEFUL = 3  # stop looking once fewer tokens than this remain


def summary_budget(child_tokens: int, ratio: float, max_tokens: int, min_tokens: int = 40) -> int:
    """Tokens a cluster's summary may use: `ratio` of its children (the paper's are ~0.28), clamped."""
    return max(min_tokens, min(max_tokens, round(ratio * child_tokens)))


@dataclass
class _Sentence:
    child: int
    position: int
    text: str
    terms: list[str]
    score: float = 0.0
    tokens: int = -1  # -1 until counted
    code: bool = False  # a line of a code block (`in_code`)


class ExtractiveSummarizer:
    """Picks central, non-redundant sentences; deterministic and fast (no model, no network)."""

    name = "extractive"

    def __init__(
        self,
        count_tokens: CountTokens,
        *,
        count_tokens_batch: CountTokensBatch | None = None,
        input_budget: int = 3500,
    ):
        self.count_tokens = count_tokens
        self.count_tokens_batch = count_tokens_batch
        self.input_budget = input_budget

    async def summarize_many(self, requests: list[SummaryRequest]) -> list[Summary]:
        # Tokenising a large layer takes a moment; keep it off the event loop.
        return await asyncio.to_thread(self.summarize_all, requests)

    def summarize(self, request: SummaryRequest) -> Summary:
        """The summary of one cluster (synchronous)."""
        return self.summarize_all([request])[0]

    def summarize_all(self, requests: list[SummaryRequest]) -> list[Summary]:
        """Summaries of a whole layer; token counting is batched across it (one tokenizer call each way)."""
        # A build checkpoint (budget.py) before each cluster of every pass.
        clusters = [_sentences(r.texts, r.code) for r in checked(requests, every=1)]
        for sentences, request in checked(zip(clusters, requests, strict=True), every=1):
            if sentences:
                _score(sentences, _child_centrality(request.embeddings, len(request.texts)))
        ranked = [_ranked(sentences) for sentences in clusters]
        # Count only the leading candidates of each cluster (about twice what its budget holds), all in
        # one call; _select counts any further sentence it reaches one at a time.
        candidates = [
            s for order, r in zip(ranked, requests, strict=True) for s in order[: _candidates(order, r)]
        ]
        for sentence, tokens in zip(candidates, self._counts([s.text for s in candidates]), strict=True):
            sentence.tokens = tokens
        chosen = [
            self._select(order, r.max_tokens) for order, r in checked(zip(ranked, requests, strict=True), every=1)
        ]
        # Sentence counts add up for WordPiece tokenizers; verify the joined texts for any other kind.
        texts = [_join(c) for c in chosen]
        joined = self._counts(texts)
        summaries = []
        for sentences, picked, text, tokens, request in checked(
            zip(clusters, chosen, texts, joined, requests, strict=True), every=1
        ):
            summaries.append(self._finish(sentences, picked, text, tokens, request.max_tokens))
        return summaries

    def _finish(
        self, sentences: list[_Sentence], picked: list[_Sentence], text: str, tokens: int, max_tokens: int
    ) -> Summary:
        """The summary: the picked sentences (joined already as `text`, of `tokens` tokens) if they fit, else
        fewer, else the best one cut short; with the tokens it copied from each child. Joining is not
        cheap (each separator asks whether either sentence is a heading or a speaker's line), so the
        joined text is not made twice."""
        if not sentences:
            return Summary(text="")
        picked = list(picked)
        while len(picked) > 1 and tokens > max_tokens:
            picked.remove(min(picked, key=lambda s: (s.score, -s.child, -s.position)))
            text = _join(picked)
            tokens = self.count_tokens(text)
        if picked and tokens <= max_tokens:
            return Summary(text=text, copied=_copied_tokens(picked))
        best = min(sentences, key=lambda s: (-s.score, s.child, s.position))
        text = self._truncate(best.text, max_tokens)
        return Summary(text=text, copied={best.child: max(1, self.count_tokens(text))})

    def _select(self, ranked: list[_Sentence], max_tokens: int) -> list[_Sentence]:
        """Greedy by score within the budget, skipping redundant sentences; returned in source order."""
        chosen: list[_Sentence] = []
        chosen_terms: list[set[str]] = []
        used = 0
        for sentence in ranked:
            if max_tokens - used < _SMALLEST_USEFUL:
                break
            if sentence.tokens < 0:
                sentence.tokens = self.count_tokens(sentence.text)
            if used + sentence.tokens > max_tokens:
                continue  # a shorter, lower-ranked sentence may still fit
            terms = set(sentence.terms)
            if any(jaccard(terms, other) >= REDUNDANCY_LIMIT for other in chosen_terms):
                continue
            chosen.append(sentence)
            chosen_terms.append(terms)
            used += sentence.tokens
        chosen.sort(key=lambda s: (s.child, s.position))
        return chosen

    def _counts(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        if self.count_tokens_batch is not None:
            return list(self.count_tokens_batch(texts))
        return [self.count_tokens(t) for t in texts]

    def _truncate(self, text: str, max_tokens: int) -> str:
        """The longest word-boundary prefix that fits with a closing ellipsis (never empty)."""
        words = text.split()

        def fits(k: int) -> bool:
            return self.count_tokens(" ".join(words[:k]) + ELLIPSIS) <= max_tokens

        keep = _largest_true(fits, len(words))
        if keep:
            return " ".join(words[:keep]) + ELLIPSIS
        first = words[0]
        chars = _largest_true(lambda k: self.count_tokens(first[:k] + ELLIPSIS) <= max_tokens, len(first))
        return first[: max(chars, 1)] + ELLIPSIS


def clip_chars(text: str, max_chars: int) -> str:
    """A summary within the node character limit: cut at the last word boundary, with an ellipsis.

    Any summariser (an LLM's reply, or extractive sentences) passes through this, since a summary node
    is a node and no node may exceed the limit.
    """
    if len(text) <= max_chars:
        return text
    room = max(1, max_chars - len(ELLIPSIS))
    cut = text.rfind(" ", 0, room + 1)
    head = text[: cut if cut > room // 2 else room].rstrip()
    return head + ELLIPSIS


def _copied_tokens(picked: list[_Sentence]) -> dict[int, int]:
    """Tokens each child gave to the summary (every picked sentence is counted by `_select`)."""
    copied: dict[int, int] = {}
    for sentence in picked:
        copied[sentence.child] = copied.get(sentence.child, 0) + max(1, sentence.tokens)
    return copied


def pooled_vector(copied: dict[int, int], child_vectors: np.ndarray) -> np.ndarray | None:
    """A copied summary's vector without the model: its children's vectors weighted by the tokens each
    gave, at unit length.

    The model's vector is the mean of the text's token states; an extractive summary's tokens are
    its children's, so the children's vectors, weighted by how much of the summary each one wrote,
    stand in for them (tests/test_summary_vectors.py measures how close that lands). None when
    there is nothing to pool (no copied child, or vectors that cancel out): the model embeds it then.
    """
    if not copied:
        return None
    positions = sorted(copied)
    weights = np.array([copied[p] for p in positions], dtype=np.float64)
    vector = weights @ np.asarray(child_vectors, dtype=np.float64)[positions]
    norm = float(np.linalg.norm(vector))
    if not math.isfinite(norm) or norm < 1e-6:
        return None
    return (vector / norm).astype(np.float32)


_CLOSED = re.compile(r"[.!?\u2026:;\u3002\uff01\uff1f][\"'\u201d\u2019)\]\u300d\uff09]*$")  # a sentence's own end


def _join(sentences: list[_Sentence]) -> str:
    """The sentences as one text, each after the separator `_separator` chooses."""
    out = ""
    for previous, sentence in zip([None, *sentences], sentences, strict=False):
        if previous is not None:
            # a line of code stands apart: run into prose or into another line, it reads as other code
            out += "\n\n" if previous.code or sentence.code else _separator(previous.text, sentence.text)
        out += sentence.text
    return out


def _separator(previous: str, sentence: str) -> str:
    """What goes between two copied sentences, so the summary splits into the sentences it copied: a
    blank line after one the text left without a full stop (a subtitle's cue, a log line, a turn of a
    transcript), which would otherwise run into the next, from whatever document or speaker; a line
    break before a list item or a speaker's turn, after a table's row and around a heading, which is never
    glued to the next sentence ('## Repairs A punctured tube...') and keeps a line readers can tell apart;
    else a space. A row is one sentence to the end of its line (a cell may hold '. '), so a sentence run
    onto its line was read as more of its last cell, and the row as a row the table did not hold."""
    if strip_bullet(sentence) != sentence or is_row_line(previous):
        return "\n"
    labelled = speaker_of(previous) is not None
    if not _CLOSED.search(previous) and (labelled or not is_heading(previous)):
        return "\n\n"
    if is_heading(previous) and not labelled or is_heading(sentence) or speaker_of(sentence):
        return "\n"
    return " "


def _ranked(sentences: list[_Sentence]) -> list[_Sentence]:
    return sorted(sentences, key=lambda s: (-s.score, s.child, s.position))


def _candidates(ranked: list[_Sentence], request: SummaryRequest) -> int:
    """How many top sentences to count up front: about twice what the budget holds, estimated from characters."""
    average_chars = sum(len(s.text) for s in ranked) / max(1, len(ranked))
    fit = request.max_tokens / max(1.0, average_chars / _CHARS_PER_TOKEN)
    return math.ceil(2 * fit) + 4


def _largest_true(predicate: Callable[[int], bool], upper: int) -> int:
    """The largest k in 0..upper with predicate(k), for a predicate that is true up to some point."""
    low, high = 0, upper
    while low < high:
        middle = (low + high + 1) // 2
        if predicate(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _sentences(texts: list[str], code: list[bool] | None = None) -> list[_Sentence]:
    """Every child's sentences, whitespace collapsed, tagged with (child, position) for source order. A
    child's lines of code are left out where it has prose to summarise it by: a summary is read as
    sentences, and a line of code among them reads as other code (a code block alone keeps its lines).
    `code[i]`: child i is a leaf wholly of code (`Chunk.code`), every line of it code."""
    out: list[_Sentence] = []
    flags = code or [False] * len(texts)
    for child, text in enumerate(texts):
        spans = split_sentences(text, flags[child]) or ([(0, len(text))] if text.strip() else [])
        spoken = turns(text)
        found: list[_Sentence] = []
        for position, (start, end) in enumerate(spans):
            sentence = " ".join(text[start:end].split())
            if sentence and not _cue_lines_only(sentence, text[start:end]):
                said = _with_speaker(sentence, spoken, start)
                found.append(_Sentence(child, position, said, content_terms(sentence), code=in_code(text, start, flags[child])))
        prose = [sentence for sentence in found if not sentence.code]
        out.extend(prose or found)
    return out


def _with_speaker(sentence: str, spoken: list[tuple[int, str]], start: int) -> str:
    """A transcript's sentence as a summary copies it: after its speaker's label when a turn's later
    sentence has none of its own ('Speaker 2: The pier will cost ...'), so that in the summary it is not
    read as the words of whoever spoke on the line above it."""
    at = bisect.bisect_right([offset for offset, _ in spoken], start) - 1
    if at < 0 or speaker_of(sentence):
        return sentence
    return f"{spoken[at][1]}: {sentence}"


def _cue_lines_only(sentence: str, raw: str) -> bool:
    """Whether a sentence is only a subtitle export's header or a cue's number and timing lines
    ("WEBVTT", "12", "00:01:02,500 --> 00:01:04,000"): every cue's timing shares the same digits, so it
    scored near the cluster's centre and a subtitle export's summary was its timings."""
    return ("-->" in sentence or sentence.startswith("WEBVTT")) and not spoken_lines(raw)


def _child_centrality(embeddings: np.ndarray | None, count: int) -> np.ndarray:
    """Each child's cosine to the cluster's mean embedding, rescaled to 0..1 (all 1 when undefined)."""
    if embeddings is None or len(embeddings) != count or count == 0:
        return np.ones(count)
    vectors = np.asarray(embeddings, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms > 0, norms, 1.0)
    mean = vectors.mean(axis=0)
    length = float(np.linalg.norm(mean))
    if not math.isfinite(length) or length == 0.0:
        return np.ones(count)
    cosines = vectors @ (mean / length)
    spread = float(cosines.max() - cosines.min())
    if spread < 1e-9:
        return np.ones(count)
    return (cosines - cosines.min()) / spread


def _score(sentences: list[_Sentence], child_scores: np.ndarray) -> None:
    """Combine the centroid (TF-IDF) similarity of each sentence with its child's centrality."""
    lexical = _centroid_similarity([s.terms for s in sentences])
    lexical *= np.minimum(1.0, np.array([len(s.terms) for s in sentences]) / SHORT_SENTENCE_TERMS)
    # Rounded, so that sentences that score the same in exact arithmetic tie (and keep source order)
    # whatever order their terms were summed in.
    lexical = np.round(lexical, SCORE_DECIMALS)
    top = float(lexical.max()) or 1.0
    for sentence, similarity in zip(sentences, lexical.tolist(), strict=True):
        child = float(child_scores[sentence.child])
        sentence.score = LEXICAL_WEIGHT * (similarity / top) + (1 - LEXICAL_WEIGHT) * child


def _centroid_similarity(term_lists: list[list[str]]) -> np.ndarray:
    """Each term list's TF-IDF cosine to the TF-IDF centroid of them all (IDF over these lists).

    Computed on (list, term) pairs with numpy rather than a dictionary per sentence: scoring a layer's
    sentences one at a time in Python was a quarter of the extractive summariser's time.
    """
    vocabulary: dict[str, int] = {}
    term_ids = np.array(
        [vocabulary.setdefault(t, len(vocabulary)) for terms in term_lists for t in terms], dtype=np.int64
    )
    owners = np.repeat(np.arange(len(term_lists)), [len(terms) for terms in term_lists])
    if not len(term_ids):
        return np.zeros(len(term_lists))
    pairs, tf = np.unique(owners * len(vocabulary) + term_ids, return_counts=True)
    pair_owner, pair_term = np.divmod(pairs, len(vocabulary))
    document_frequency = np.bincount(pair_term, minlength=len(vocabulary))
    idf = np.log((1 + len(term_lists)) / (1 + document_frequency)) + 1.0
    centroid = np.bincount(term_ids, minlength=len(vocabulary)) * idf
    centroid_norm = float(np.sqrt(centroid @ centroid)) or 1.0
    weights = tf * idf[pair_term]
    norms = np.sqrt(np.bincount(pair_owner, weights * weights, minlength=len(term_lists)))
    dots = np.bincount(pair_owner, weights * centroid[pair_term], minlength=len(term_lists))
    return np.divide(dots, norms * centroid_norm, out=np.zeros(len(term_lists)), where=norms > 0)
