"""qa23: 'who said so?' / 'according to whom?' were searched as questions ('Who said so? (context: ...)'),
quoting passages about anything; 'why?' after an answer whose own sentence gave the reason ('Martin Cole said
the pipe had frozen because the loft was unheated') quoted another claim's reason from the same section ('The
claim was refused because the shed was not locked'). Now 'who said so?' names who the last answer's first
quote says said it (a transcript's speaker, 'X said ...', 'according to X'), or says it names no one and
where it comes from; and 'why?' quotes the last answer's own reason unless a new one near it is about what
was asked."""

from __future__ import annotations

import pytest

from raptor_engine.query.smalltalk import asks_who_said, said_by, who_said_reply
from raptor_engine.types import Citation
from tests.followup_documents import TEXTS
from tests.test_followup_other_document import conversation
from tests.unhurried import engine_with


@pytest.mark.parametrize(
    "message",
    ["who said so?", "Who said that?", "according to whom?", "according to who", "and who says so?", "who told you that?",
     "whose words are those?", "ok, who said this?", "who is saying that?"],
)
def test_who_said_so_is_asked_of_the_last_quote(message):
    assert asks_who_said(message)


@pytest.mark.parametrize(
    "message",
    ["who said the lights were out?", "who reported it?", "who said what about the rent?", "says who?", "who chaired it?"],
)
def test_a_question_of_its_own_is_no_who_said_so(message):
    assert not asks_who_said(message)


@pytest.mark.parametrize(
    ("quote", "who"),
    [
        ("The loss adjuster, Martin Cole, said the pipe had frozen because the loft was unheated.",
         "the loss adjuster, Martin Cole"),
        ("Harriet Blake said she had reported them to the council twice.", "Harriet Blake"),
        ("The council replied that repairs were scheduled for Q4 2023.", "the council"),
        ("According to the 2021 survey, 230 moorings were let.", "the 2021 survey"),
        ("Fourteen members attended.", None),
        ("The balance at the end of FY23 was 3,115 pounds.", None),
    ],
)
def test_who_a_sentence_says_said_it(quote, who):
    assert said_by(quote) == who


def _citation(marker: int) -> Citation:
    return Citation(marker=marker, node_id=4, layer=0, document="minutes.md", score=0.5, leaf_count=1, heading=("Trees",))


def test_a_quote_cut_to_its_reason_is_read_whole():
    text = "From the documents:\n- \u201c\u2026because the loft was unheated.\u201d [1]"
    passage = "In November a pipe burst. The loss adjuster, Martin Cole, said the pipe had frozen because the loft was unheated."
    reply, cited = who_said_reply(text, [_citation(1)], lambda quote: passage)
    assert reply.startswith("From the documents: the loss adjuster, Martin Cole, said so:\n- \u201cThe loss adjuster"), reply
    assert [c.marker for c in cited] == [1]


def test_a_transcripts_speaker_said_it():
    reply, _ = who_said_reply("From the documents:\n- Jane Doe: \u201cWe close in May.\u201d [2]", [_citation(2)])
    assert reply == "From the documents: Jane Doe said so:\n- \u201cWe close in May.\u201d [2]"


def test_a_quote_naming_no_one_says_where_it_comes_from():
    reply, _ = who_said_reply("From the documents:\n- \u201cFourteen members attended.\u201d [1]", [_citation(1)])
    assert reply.startswith("The passage the last answer quoted first names no one who said it; it comes from minutes.md"), reply


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = engine_with(tmp_path_factory.mktemp("said_so"), embedder, TEXTS)
    try:
        yield engine
    finally:
        engine.close()


async def test_who_said_so_names_who_the_quote_says(engine):
    answer = await conversation(engine, ["When were the street lights to be repaired?", "who said so?"])
    assert answer.text.startswith("From the documents: the council said so:\n- \u201cThe council replied"), answer.text
    assert answer.answered and len(answer.citations) == 1


async def test_why_quotes_the_reason_the_last_answer_gave(engine):
    answer = await conversation(engine, ["What did Martin Cole say?", "why?"])
    assert answer.text.split("\n")[1].startswith("- \u201c\u2026because the loft was unheated"), answer.text
    said = await conversation(engine, ["What did Martin Cole say?", "why?", "according to whom?"])
    assert said.text.startswith("From the documents: the loss adjuster, Martin Cole, said so:"), said.text


async def test_who_said_so_after_a_question_naming_its_file_shows_no_searched_line(engine):
    """The earlier question was searched without its file's name; 'who said so?' searched nothing of its
    own, so its answer has no "Searched as" line (it had the earlier search's, after `Answer.searched`)."""
    answer = await conversation(engine, ["What does minutes.md say about the street lights?", "who said so?"])
    assert answer.searched_as == "" and answer.searched_text == "who said so?", answer.searched_as
