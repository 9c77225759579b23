"""ExtractiveSummarizer with the real model's tokenizer and embeddings."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from raptor_engine.ingest.chunk import split_sentences
from raptor_engine.tree import summarize
from raptor_engine.tree.summarize import ExtractiveSummarizer, summary_budget
from raptor_engine.types import SummaryRequest

ASTRONOMY = [
    "Jupiter is the largest planet in the solar system. Its moons include Io, Europa, Ganymede and Callisto. "
    "Jupiter's Great Red Spot is a storm larger than the Earth.",
    "Saturn is a gas giant planet known for its bright rings. The rings of Saturn are made of ice and rock. "
    "My grandmother bakes an excellent apple pie with cinnamon every Sunday.",
    "Astronomers study the planets of the solar system with telescopes. Space probes have visited every "
    "giant planet. The solar system formed about 4.6 billion years ago from a cloud of gas.",
    "Neptune and Uranus are the ice giant planets of the outer solar system. Neptune has the strongest winds "
    "of any planet. Uranus rotates on its side.",
]
OFF_TOPIC = "My grandmother bakes an excellent apple pie with cinnamon every Sunday."


def _normalised_sentences(texts: list[str]) -> list[str]:
    return [" ".join(t[s:e].split()) for t in texts for s, e in split_sentences(t)]


@pytest.fixture(scope="module")
def summarizer(embedder):
    return ExtractiveSummarizer(embedder.count_tokens, count_tokens_batch=embedder.count_tokens_batch)


@pytest.fixture(scope="module")
def request_80(embedder):
    return SummaryRequest(texts=ASTRONOMY, embeddings=embedder.embed(ASTRONOMY), max_tokens=80)


async def test_summary_fits_budget_in_complete_sentences_in_source_order(summarizer, request_80, embedder):
    (summary,) = await summarizer.summarize_many([request_80])
    assert 0 < embedder.count_tokens(summary.text) <= 80
    sources = _normalised_sentences(ASTRONOMY)
    chosen = split_sentences(summary.text)
    picked = [" ".join(summary.text[s:e].split()) for s, e in chosen]
    assert all(p in sources for p in picked), picked
    positions = [sources.index(p) for p in picked]
    assert positions == sorted(positions)
    assert len(picked) >= 2


async def test_central_sentences_win_over_an_off_topic_one(summarizer, request_80):
    (summary,) = await summarizer.summarize_many([request_80])
    assert OFF_TOPIC not in summary.text
    assert "planet" in summary.text


async def test_same_request_same_summary(summarizer, request_80):
    first = await summarizer.summarize_many([request_80, request_80])
    second = await summarizer.summarize_many([request_80])
    assert first[0].text == first[1].text == second[0].text


async def test_a_generous_budget_keeps_everything_but_repeats(summarizer, embedder):
    texts = [
        "The river floods every spring. Farmers plant rice after the flood.",
        "The river floods every spring.",
    ]
    request = SummaryRequest(texts=texts, embeddings=embedder.embed(texts), max_tokens=200)
    (summary,) = await summarizer.summarize_many([request])
    assert summary.text == "The river floods every spring. Farmers plant rice after the flood."


async def test_an_oversized_best_sentence_is_cut_at_a_word_boundary(summarizer, embedder):
    words = " ".join(f"word{i}" for i in range(200))
    text = f"The long sentence lists {words} and ends here."
    request = SummaryRequest(texts=[text], embeddings=embedder.embed([text]), max_tokens=40)
    (summary,) = await summarizer.summarize_many([request])
    assert summary.text.endswith("\u2026")
    assert 0 < embedder.count_tokens(summary.text) <= 40
    body = summary.text[:-1]
    assert text.startswith(body) and text[len(body)] == " "


async def test_non_empty_input_never_gives_empty_text(embedder):
    summarizer = ExtractiveSummarizer(embedder.count_tokens)  # without the batch counter
    texts = ["no punctuation at all in this fragment", "   "]
    request = SummaryRequest(texts=texts, embeddings=embedder.embed(texts), max_tokens=3)
    (summary,) = await summarizer.summarize_many([request])
    assert summary.text and embedder.count_tokens(summary.text) <= 3


async def test_empty_input_gives_empty_text(summarizer):
    request = SummaryRequest(texts=["", "  \n"], embeddings=np.zeros((2, 4), dtype=np.float32), max_tokens=50)
    (summary,) = await summarizer.summarize_many([request])
    assert summary.text == ""


async def test_child_embeddings_break_lexical_ties():
    # Two children with equally "central" wording: the one nearer the cluster's mean embedding wins.
    texts = ["Alpha beta gamma delta.", "Alpha beta gamma epsilon.", "Alpha beta gamma zeta."]
    embeddings = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
    request = SummaryRequest(texts=texts, embeddings=embeddings, max_tokens=4)
    summarizer = ExtractiveSummarizer(lambda t: len(t.split()))
    (summary,) = await summarizer.summarize_many([request])
    assert summary.text == "Alpha beta gamma epsilon."


def _tf_idf_cosines(term_lists: list[list[str]]) -> list[float]:
    """Each list's TF-IDF cosine to the centroid, one dictionary per list (the definition, written out)."""
    total = len(term_lists)
    df = Counter(t for terms in term_lists for t in set(terms))
    idf = {t: math.log((1 + total) / (1 + n)) + 1.0 for t, n in df.items()}
    centroid = {t: n * idf[t] for t, n in Counter(t for terms in term_lists for t in terms).items()}
    centroid_norm = math.sqrt(sum(w * w for w in centroid.values()))
    out = []
    for terms in term_lists:
        weights = {t: n * idf[t] for t, n in Counter(terms).items()}
        norm = math.sqrt(sum(w * w for w in weights.values()))
        out.append(sum(w * centroid[t] for t, w in weights.items()) / (norm * centroid_norm) if norm else 0.0)
    return out


def test_centroid_similarity_is_the_tf_idf_cosine_to_the_centroid():
    term_lists = [
        ["planet", "rings", "ice", "planet"],
        ["planet", "moons", "storm"],
        [],
        ["grandmother", "pie", "cinnamon", "sunday"],
        ["ice", "giant", "planet", "winds", "ice"],
    ]
    assert summarize._centroid_similarity(term_lists) == pytest.approx(_tf_idf_cosines(term_lists), abs=1e-12)
    assert list(summarize._centroid_similarity([[], []])) == [0.0, 0.0]


def test_scores_equal_but_for_rounding_rank_in_source_order(monkeypatch):
    # Summing the same terms in another order can move a score in its last bit; such sentences tie.
    sentences = summarize._sentences(["Delicious, said Retief. My apologies, said Retief."])
    noisy = np.array([0.5156033162685154, 0.5156033162685155])
    monkeypatch.setattr(summarize, "_centroid_similarity", lambda _: noisy)
    summarize._score(sentences, np.ones(1))
    assert sentences[0].score == sentences[1].score
    assert [s.position for s in summarize._ranked(sentences)] == [0, 1]


def test_summary_budget_is_a_clamped_ratio():
    assert summary_budget(1000, 0.28, 200) == 200
    assert summary_budget(500, 0.28, 200) == 140
    assert summary_budget(50, 0.28, 200) == 40
    assert summary_budget(50, 0.28, 200, min_tokens=10) == 14


def test_protocol_attributes():
    summarizer = ExtractiveSummarizer(len, input_budget=1234)
    assert summarizer.name == "extractive"
    assert summarizer.input_budget == 1234


def test_names_in_code_spell_summarize_and_prose_is_left_alone():
    """One spelling in the API: modules, classes, functions and parameters say "summarize"."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for package in ("raptor_engine", "raptor_tools", "bot"):
        for path in sorted((root / package).rglob("*.py")):
            assert "summaris" not in path.stem, path
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = []
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names.append(node.name)
                if isinstance(node, ast.arg):
                    names.append(node.arg)
                for name in names:
                    assert "summaris" not in name.lower(), f"{path.name}:{node.lineno} {name}"


def test_a_subtitle_exports_cue_numbers_and_timings_are_never_summary_sentences(summarizer, embedder):
    """Every cue's timing line shares the same digits, so its TF-IDF is near the cluster's centre: an SRT
    meeting's summary read '1 00:00:01,000 --> 00:00:04,000 2 00:00:05,000 --> 00:00:09,000'."""
    cues = [
        "JOHN: Good morning, let's review the harbour budget for next year.",
        "MARY: The dredging contract costs forty thousand pounds this year.",
        "JOHN: We also need a new crane for the north pier before winter.",
        "MARY: The harbour trust will pay half and the council the rest.",
    ]
    texts = [
        "\n\n".join(f"{n}\n00:00:{n:02},000 --> 00:00:{n + 1:02},000\n{line}" for n, line in enumerate(cues, 1)),
        "\n\n".join(f"{n}\n00:01:{n:02},000 --> 00:01:{n + 1:02},000\n{line}" for n, line in enumerate(cues, 5)),
    ]
    texts[1] = f"WEBVTT\n\n{texts[1]}"
    request = SummaryRequest(texts=texts, embeddings=embedder.embed(texts), max_tokens=60)
    summary = summarizer.summarize(request)
    assert summary.text and "-->" not in summary.text and "WEBVTT" not in summary.text, summary.text


class _JoinedTwice(ExtractiveSummarizer):
    """The summariser as it was when `_finish` joined the picked sentences again: the reference."""

    trimmed = 0

    def _finish(self, sentences, picked, text, tokens, max_tokens):
        if not sentences:
            return summarize.Summary(text="")
        picked = list(picked)
        if len(picked) > 1 and tokens > max_tokens:
            type(self).trimmed += 1
        while len(picked) > 1 and tokens > max_tokens:
            picked.remove(min(picked, key=lambda s: (s.score, -s.child, -s.position)))
            tokens = self.count_tokens(summarize._join(picked))
        if picked and tokens <= max_tokens:
            return summarize.Summary(text=summarize._join(picked), copied=summarize._copied_tokens(picked))
        best = min(sentences, key=lambda s: (-s.score, s.child, s.position))
        text = self._truncate(best.text, max_tokens)
        return summarize.Summary(text=text, copied={best.child: max(1, self.count_tokens(text))})


def test_summaries_join_their_sentences_once_and_are_the_same(embedder):
    """A counter by characters makes the joined text (separators included) outgrow its sentences' sum, so
    some budgets drop sentences after the join: every summary equals the reference's that joins again."""
    vectors = embedder.embed(ASTRONOMY)
    requests = [
        SummaryRequest(texts=ASTRONOMY[i:] + ASTRONOMY[:i], embeddings=np.roll(vectors, -i, axis=0), max_tokens=budget)
        for i in range(len(ASTRONOMY))
        for budget in (60, 150, 200, 260, 330, 400, 2000)
    ]
    mine = ExtractiveSummarizer(len).summarize_all(requests)
    theirs = _JoinedTwice(len).summarize_all(requests)
    assert _JoinedTwice.trimmed > 0
    assert [(s.text, s.copied) for s in mine] == [(s.text, s.copied) for s in theirs]


CODE_CHILD = (
    "Tidewatch reads tide tables and warns keepers before a spring tide.\n\n```python\n"
    "def check_tide(height, limit=4.5):\n    if height > limit:\n        return True\n    return False\n```\n\n"
    "The function returns True when it warned the keepers."
)
CODE_ONLY = "```python\ndef check_tide(height, limit=4.5):\n    if height > limit:\n        return True\n```"


def test_a_summary_leaves_out_lines_of_code_where_there_is_prose_and_keeps_them_apart_where_not(summarizer, embedder):
    """Copied among prose sentences a line of code read as other code ('…spring tide. def check_tide(…):
    if height > limit:'); a code block alone keeps its lines, each a paragraph of its own."""
    texts = [CODE_CHILD, ASTRONOMY[0]]
    summary = summarizer.summarize(SummaryRequest(texts=texts, embeddings=embedder.embed(texts), max_tokens=200))
    assert "check_tide(" not in summary.text and "height > limit" not in summary.text
    assert "Tidewatch reads tide tables" in summary.text
    alone = summarizer.summarize(SummaryRequest(texts=[CODE_ONLY], embeddings=embedder.embed([CODE_ONLY]), max_tokens=200))
    assert "def check_tide(height, limit=4.5):\n\nif height > limit:" in alone.text


ROWS = (
    "- Item: Stamp; Cost: 45p; Notes: First class. Sold singly.\n- Item: Card; Cost: £1.20; Notes: Birthday. "
    "With envelope.\n- Item: Pen; Cost: £0.80; Notes: Blue ink. Refillable."
)
BARRED = "Stamp | 45p | First class. Sold singly\nCard | £1.20 | Birthday. With envelope"
PROSE = "The shop sells stamps and cards. The ferry leaves at seven. Pens are sold singly at the counter."


@pytest.mark.parametrize("rows", [ROWS, BARRED])
def test_a_summary_sets_a_table_row_on_its_own_line(summarizer, embedder, rows):
    """A row is one sentence to its line's end (a cell may hold '. '): a sentence copied onto the row's line
    was read as more of its last cell, and the whole line as a row of the table, quoted and counted twice."""
    texts = [rows, PROSE]
    summary = summarizer.summarize(SummaryRequest(texts=texts, embeddings=embedder.embed(texts), max_tokens=200))
    sources = _normalised_sentences(texts)
    picked = [" ".join(summary.text[s:e].split()) for s, e in split_sentences(summary.text)]
    assert any("|" in p or p.startswith("- Item") for p in picked), picked
    assert all(p in sources for p in picked), picked
