"""botqa25: follow-ups the outside pass found read wrong, for their whole class, in the engine (so the bot
and the CLI read them alike): asking to confirm the last answer ("that's right?", "right?", "correct?"),
"the other one" after an answer from one of two documents, and a bare "when?" after a question whose
wh-words are its verb's subject or object ("Who has plot 14?", "Which plot does Lena Ross have?", "Who
joined most recently?")."""

from __future__ import annotations

import pytest

from raptor_engine.engine import Engine
from raptor_engine.query.followup import Onward, onward_ask, other_one_as_document, standalone_question
from raptor_engine.query.smalltalk import Act, small_talk_act
from raptor_engine.query.verify import CHECKED, UNSETTLED
from raptor_engine.types import Turn
from tests.bot.test_bot_real_process import MANUAL, MINUTES
from tests.conversations import asked_turns
from tests.unhurried import unhurried_settings

MEMBERS = "name,plot,joined\nJoan Petrie,4,2015\nAmit Shah,14,2019\nLena Ross,7,2023\n"

CONFIRMING = [
    "that's right?",
    "right?",
    "correct?",
    "is that so?",
    "that is correct?",
    "that\u2019s right?",
    "so that's right?",
    "exactly?",
    "true?",
    "it's true?",
    "is it?",
    "isn't it?",
    "right, isn't it?",
    "is that the case?",
    "is that accurate?",
    "indeed?",
]


@pytest.mark.parametrize("message", CONFIRMING)
def test_asking_to_confirm_the_last_answer_is_a_check_of_it(message):
    assert small_talk_act(message) is None and onward_ask(message) is Onward.CHECK


@pytest.mark.parametrize(
    ("message", "act"),
    [("right", Act.ACKNOWLEDGE), ("that's right", Act.ACKNOWLEDGE), ("correct", Act.ACKNOWLEDGE), ("ok?", Act.ACKNOWLEDGE)],
)
def test_agreeing_without_a_question_mark_stays_an_acknowledgement(message, act):
    assert small_talk_act(message) is act


@pytest.mark.parametrize("message", ["what is correct?", "right side?", "is it open?", "am I right about the oil?", "the right oil?"])
def test_questions_near_a_confirmation_are_no_check(message):
    assert onward_ask(message) is None


@pytest.mark.parametrize(
    ("message", "read"),
    [
        ("and the other one?", "and the other document?"),
        ("the other?", "the other document?"),
        ("what does the other one say?", "what does the other document say?"),
        ("what about the other upload?", "what about the other document?"),
        ("and in the other one?", "and in the other document?"),
        ("ok, check the other attachment", "ok, check the other document"),
    ],
)
def test_the_other_one_alone_reads_as_the_other_document(message, read):
    assert other_one_as_document(message) == read


@pytest.mark.parametrize(
    "message",
    ["the other keeper?", "who was the other one elected with?", "what about the other two?", "the other ones?", "why?"],
)
def test_the_other_of_something_named_is_no_document(message):
    assert other_one_as_document(message) is None


@pytest.mark.parametrize(
    ("asked", "follow_up", "standalone"),
    [
        ("who has plot 14?", "and when?", "When? (context: who has plot 14?)"),
        ("who has plot 14?", "where?", "Where? (context: who has plot 14?)"),
        ("How many members have plots?", "when?", "When? (context: How many members have plots?)"),
        ("Who has been appointed keeper?", "when?", "When? (context: Who has been appointed keeper?)"),
        ("which plot does Lena Ross have?", "and when?", "When? (context: which plot does Lena Ross have?)"),
        ("What oil does the rotavator take?", "when?", "When? (context: What oil does the rotavator take?)"),
        ("who joined most recently?", "and when?", "Who joined most recently and when?"),
        ("who joined first?", "where?", "Who joined first and where?"),
        # unchanged: the new wh-word still takes the old one's place
        ("What time did the ferry leave?", "where?", "Where did the ferry leave?"),
        ("Who founded Marrow's Bakery?", "when?", "When was Marrow's Bakery founded?"),
        ("What did she see?", "who?", "Who did she see?"),
    ],
)
def test_a_bare_wh_word_after_a_question_whose_wh_words_are_subject_or_object(asked, follow_up, standalone):
    """Before: 'When has plot 14?', 'When has been appointed keeper?', 'When does Lena Ross have?', 'When
    does the rotavator take?', 'When was most recently joined?'."""
    assert standalone_question(follow_up, asked_turns(asked, quote="Three wins.")) == standalone


async def _engine(tmp_path, embedder, files: dict[str, str]) -> Engine:
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    for name, text in files.items():
        await engine.ingest("kb", name, text.encode())
    return engine


async def _after(engine: Engine, first: str, *follow_ups: str) -> list:
    """Each follow-up asked right after `first`'s answer (not after each other)."""
    answer = await engine.ask("kb", first)
    history = [Turn("user", answer.question), Turn("assistant", answer.text)]
    return [await engine.ask("kb", follow_up, history=history) for follow_up in follow_ups]


async def test_a_request_to_confirm_is_answered_from_the_last_answer(tmp_path, embedder):
    """Before: "that's right?" and "correct?" were searched as "That's right? (context: who is the
    treasurer?)" ("Nothing in the documents clearly answers this" over the fund and the troughs) and
    "right?" was "Ask me another question …"; after an answer that found nothing, "is that true?" said
    "Yes: the documents say so." of its closest passages."""
    engine = await _engine(tmp_path, embedder, {"minutes.md": MINUTES, "manual.md": MANUAL})
    try:
        for reply in await _after(engine, "who is the treasurer?", "that's right?", "right?", "correct?", "is that so?"):
            assert reply.text.startswith(CHECKED) and "Amit Shah (treasurer)" in reply.text, reply.text
            assert "(context:" not in reply.query, reply.query
        for reply in await _after(engine, "what colour are the tines painted?", "right?", "is that true?"):
            assert reply.text == UNSETTLED and not reply.citations, reply.text
    finally:
        engine.close()


async def test_the_other_one_after_an_answer_from_one_of_two_documents_is_asked_of_the_other(tmp_path, embedder):
    """Before: "and the other one?" was searched as "What about the other one? (context: when will the new
    shed be built?)" and quoted the shed's passages of both files."""
    engine = await _engine(tmp_path, embedder, {"minutes.md": MINUTES, "manual.md": MANUAL})
    try:
        replies = await _after(
            engine, "when will the new shed be built?", "and the other one?", "the other?", "what about the other upload?"
        )
        for reply in replies:
            assert reply.citations and {c.document for c in reply.citations} == {"manual.md"}, reply.text
            assert "other" not in reply.query, reply.query
        back = await _after(engine, "what oil does the rotavator take?", "and the other one?")
        assert {c.document for c in back[0].citations} == {"minutes.md"}, back[0].text
    finally:
        engine.close()


async def test_when_after_a_tables_ranked_rows_asks_the_question_again_with_when(tmp_path, embedder):
    """Before: "and when?" after "who joined most recently?" was searched as "When was most recently
    joined?", and after "who has plot 14?" as "When has plot 14?"."""
    engine = await _engine(tmp_path, embedder, {"minutes.md": MINUTES, "members.csv": MEMBERS})
    try:
        (recent,) = await _after(engine, "who joined most recently?", "and when?")
        assert recent.query == "Who joined most recently and when?", recent.query
        assert recent.text.index("Lena Ross") < recent.text.index("Amit Shah"), recent.text
        (plot,) = await _after(engine, "who has plot 14?", "and when?")
        assert plot.query.startswith("When? (context: who has plot 14?)"), plot.query
        assert "joined: 2019" in plot.text, plot.text
    finally:
        engine.close()


@pytest.mark.parametrize("message", ["merci", "Merci !", "merci beaucoup", "Danke schön!", "gracias", "grazie mille", "obrigado", "dank je wel", "dziękuję"])
def test_thanks_in_another_language_is_small_talk(message):
    """Before: "merci" was searched ("Merci (context: qui est le trésorier ?)") and became the next
    follow-up's context."""
    assert small_talk_act(message) is Act.THANK


async def test_the_other_one_after_a_question_naming_nothing_is_not_moved_to_a_bare_it(tmp_path, embedder):
    """'the other one?' after 'what did the storm do?' and 'when?' has no question to ask of the other
    document: it was searched there as 'It? (context: what did the storm do?)' and quoted the members'
    rows; it is read by the follow-up rules as before."""
    engine = await _engine(tmp_path, embedder, {"minutes.md": MINUTES, "manual.md": MANUAL, "members.csv": MEMBERS})
    try:
        history: list[Turn] = []
        for asked in ("what did the storm do?", "when?", "the other one?"):
            reply = await engine.ask("kb", asked, history=history)
            history += [Turn("user", reply.question), Turn("assistant", reply.text)]
        assert not reply.query.startswith("It?"), reply.query
    finally:
        engine.close()
