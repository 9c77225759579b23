"""Quotes from a story: a question that is not after a short fact is answered over several scenes, a
short line of dialogue is read with its neighbour, a thematic answer quotes no byline, and 'Describe the
X in the story' asks about X, not the whole story."""

from __future__ import annotations

import pytest

from raptor_engine.query.answer import (
    FOUND,
    FRAGMENT_WORDS,
    NARRATIVE_FRAGMENT_WORDS,
    NARRATIVE_QUOTES,
    NARRATIVE_THEME_MIN_WORDS,
    QUOTE,
    QUOTES,
    ExtractiveAnswerer,
    _candidates,
    _with_next_sentence,
)
from raptor_engine.query.followup import Rewrite, split_standalone, standalone_question
from raptor_engine.query.ranker import NARRATIVE, PAPER, document_kind, load_ranker
from raptor_engine.types import ContextNode, Turn
from tests.test_ranker_kinds import PAPER_SENTENCES

BYLINE = "By JANE ROE."
STORY = [
    "\u201cWe cannot stay here another night,\u201d said the keeper Tomas, staring at the black water.",
    "Ivy asked him why the lamp of the lighthouse had failed again, and he only shook his head.",
    "\u201cFetch the oil from the cellar,\u201d he told her, \u201cand mind the broken step.\u201d",
    "Ivy came back with the can and whispered that someone had been down in the cellar before them.",
    "\u201cNonsense,\u201d the old keeper replied, though his hands trembled on the iron rail.",
    "Outside the gulls cried over the rocks as the tide crept up the landing of the island.",
    "\u201cLook at the glass,\u201d Ivy said, pointing at the cracked lens of the lamp above them.",
    "He answered that the lens had stood for forty winters and would stand for one more.",
    "\u201cThen who cut the wick?\u201d Ivy asked, holding up the frayed end for him to see.",
    "For a long time neither of them said anything, and the wind shouted through the gallery.",
    "\u201cGo to bed,\u201d he said at last, \u201cI will watch the light myself tonight.\u201d",
    "Ivy climbed the stairs slowly, counting the steps as her mother had taught her long ago.",
    "In the morning Ivy found the keeper asleep in his chair and the lamp burning brightly.",
    "She rowed to the mainland alone that afternoon to buy a new wick and a can of oil.",
    "The harbour master told Ivy that a stranger had asked about the lighthouse all week.",
    "Ivy hurried back across the bay before the storm, the new wick wrapped in her coat.",
]


def _context(sentences: list[str], per_node: int = 4) -> list[ContextNode]:
    """The sentences in leaves of `per_node` sentences each, one paragraph a leaf."""
    nodes = []
    for i in range(0, len(sentences), per_node):
        text = " ".join(sentences[i : i + per_node])
        nodes.append(ContextNode(i + 1, 0, "story.md", 0.5, text, 80, 1, start=0, end=len(text)))
    return nodes


def _quote_lines(answer: str) -> list[str]:
    """The quotes of an answer, one a line (a story's quote holds quotation marks of its own)."""
    return [line[3 : line.rindex("\u201d")] for line in answer.splitlines() if line.startswith("- \u201c")]


@pytest.fixture(scope="module")
def answerer(embedder):
    return ExtractiveAnswerer(embedder, ranker=load_ranker())


def test_the_contexts_here_are_of_the_kinds_the_rules_read():
    assert document_kind([c.shown for c in _candidates(_context(STORY))]) == NARRATIVE
    assert document_kind([c.shown for c in _candidates(_context(PAPER_SENTENCES))]) == PAPER


@pytest.mark.parametrize(
    "question",
    ["Who is Ivy and what happens to her?", "What is the relationship between Ivy and the keeper?"],
)
def test_a_story_question_that_is_not_after_a_short_fact_gets_more_quotes(answerer, question):
    quoted = answerer._quotes(question, _context(STORY), [])
    assert quoted is not None and quoted.kind == NARRATIVE and not quoted.thematic
    assert answerer._quote_count(quoted.rewrite, quoted.kind) == NARRATIVE_QUOTES > QUOTES
    assert len(quoted.picked) > QUOTES  # the relative floor may stop it short of NARRATIVE_QUOTES
    draft = answerer._answer_sync(question, _context(STORY), [])
    assert len(_quote_lines(draft.text)) == len(quoted.picked)


def test_a_short_fact_a_follow_up_or_another_kind_keeps_three_quotes(answerer):
    story, paper = _context(STORY), _context(PAPER_SENTENCES)
    short_fact = answerer._quotes("Where did Ivy row to?", story, [])
    assert short_fact is not None and answerer._quote_count(short_fact.rewrite, short_fact.kind) == QUOTES
    other_kind = answerer._quotes("Why does the character layer help the tagger?", paper, [])
    assert other_kind is not None and other_kind.kind == PAPER
    assert answerer._quote_count(other_kind.rewrite, other_kind.kind) == QUOTES
    follow_up = Rewrite("What happens to Ivy after that?", "Who is Ivy?")  # leans on the question before
    assert answerer._quote_count(follow_up, NARRATIVE) == QUOTES
    history = [Turn("user", "Who is Ivy?"), Turn("assistant", "From the documents:\n- \u201cIvy asked ...\u201d [1]")]
    asked = standalone_question("And what happens to her after that?", history)
    assert split_standalone(asked).context
    followed = answerer._quotes(asked, story, history)
    assert followed is not None and len(followed.picked) <= QUOTES


def test_a_story_quote_shorter_than_the_narrative_threshold_is_read_with_its_neighbour():
    short = "Ivy found the keeper asleep in his chair with the lamp burning."  # 12 words: a full sentence elsewhere
    after = "She rowed to the mainland alone that afternoon to buy a new wick."
    assert FRAGMENT_WORDS <= len(short.split()) < NARRATIVE_FRAGMENT_WORDS
    candidates = _candidates(_context([short, after]))
    first = next(c for c in candidates if c.text == short)
    assert _with_next_sentence(first, [first]).text == short
    assert _with_next_sentence(first, [first], NARRATIVE_FRAGMENT_WORDS).text == f"{short} {after}"


def test_the_answer_reads_a_story_quote_with_its_neighbour_and_a_paper_quote_alone(answerer):
    draft = answerer._answer_sync("Who is Ivy and what happens to her?", _context(STORY), [])
    quotes = _quote_lines(draft.text)
    assert any(len(q.split()) >= NARRATIVE_FRAGMENT_WORDS for q in quotes)
    # every story sentence here is under the narrative threshold: each quote that could be joined is
    joined = [q for q in quotes if sum(s in q for s in STORY) >= 2]
    assert joined
    # a paper's sentences of 12 to 19 words are quoted alone
    assert all(FRAGMENT_WORDS <= len(s.split()) for s in PAPER_SENTENCES)
    paper = answerer._answer_sync("What does Table 4 show?", _context(PAPER_SENTENCES), [])
    quotes = QUOTE.findall(paper.text)
    assert quotes and all(sum(s in quote for s in PAPER_SENTENCES) == 1 for quote in quotes)
    assert any(len(quote.split()) < NARRATIVE_FRAGMENT_WORDS for quote in quotes)


def test_a_thematic_answer_from_a_story_quotes_no_byline(answerer):
    story = _context([BYLINE, *STORY])
    assert len(BYLINE.split()) < NARRATIVE_THEME_MIN_WORDS
    quoted = answerer._quotes("What is the plot of the story?", story, [])
    assert quoted is not None and quoted.thematic and quoted.kind == NARRATIVE
    assert all(len(c.text.split()) >= NARRATIVE_THEME_MIN_WORDS for c in quoted.picked)


def test_a_thematic_answer_falls_back_to_short_sentences_when_nothing_longer_is_quotable(answerer):
    candidates = _candidates(_context(["The lamp failed.", "Ivy rowed home.", "The storm came."]))
    for candidate, score in zip(candidates, (0.3, 0.5, 0.4), strict=True):
        candidate.score = score
    picked = answerer._pick_spread(candidates, 5, NARRATIVE_THEME_MIN_WORDS)
    assert [c.text for c in picked] == ["Ivy rowed home.", "The storm came.", "The lamp failed."]


@pytest.mark.parametrize(
    ("question", "thematic"),
    [
        ("Describe the lighthouse in the story.", False),
        ("Describe the setting of the story.", False),
        ("What is the plot of the story?", True),
        ("Describe the story in brief.", True),
    ],
)
def test_describing_a_thing_of_a_story_is_a_question_about_that_thing(answerer, question, thematic):
    quoted = answerer._quotes(question, _context(STORY), [])
    assert quoted is not None and quoted.thematic is thematic
    # asked as a question about the whole, it is not judged, as one about the whole is not
    assert quoted.thematic or quoted.themed
    assert answerer._answer_sync(question, _context(STORY), []).text.startswith(FOUND)


def test_a_question_about_a_thing_of_a_story_asked_plainly_is_judged(answerer):
    quoted = answerer._quotes("What is the setting of the story?", _context(STORY), [])
    assert quoted is not None and not quoted.thematic and not quoted.themed


def test_outside_a_story_describing_a_thing_stays_a_question_about_the_whole(answerer):
    quoted = answerer._quotes("Describe the tagger in the paper.", _context(PAPER_SENTENCES), [])
    assert quoted is not None and quoted.thematic


@pytest.mark.parametrize("question", ["Describe the dragon in the story.", "Describe the spaceship of the story."])
def test_describing_a_thing_the_story_never_names_is_judged_and_not_said_to_be_found(answerer, question):
    """A story has a setting and characters whatever it says, but a dragon only where it names one: a
    question about a thing the sentences never name is judged as any other, not waved through."""
    quoted = answerer._quotes(question, _context(STORY), [])
    assert quoted is not None and quoted.themed
    assert not answerer._answer_sync(question, _context(STORY), []).text.startswith(FOUND)
