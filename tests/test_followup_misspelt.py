"""qa20: a mistyped follow-up is the follow-up it is once respelled: 'waht did tehy agree?' after 'Who chaired
the Q2 meeting?' is searched as 'what did they agree?' is, a slip of a content word ('memebers', 'meetting')
no longer reads as a new topic, and slips of pronouns and of the first two letters ('hsi', 'seh', 'hte',
'adn') are read as the words. Each mistyped follow-up must be searched, and answered, exactly as its
correctly typed twin."""

from __future__ import annotations

import pytest

from raptor_engine.query.respell import question_word
from tests.test_compared_grounding import TEXTS  # minutes of Q1, Q2; surveys of 2019, 2021
from tests.test_followup_other_document import conversation  # asks of the knowledge base "harbour"
from tests.unhurried import engine_with


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = engine_with(tmp_path_factory.mktemp("misspelt"), embedder, TEXTS)
    try:
        yield engine
    finally:
        engine.close()


# (the last question, the follow-up as meant, the same follow-up mistyped)
TWINS = [
    ("Who chaired the Q2 meeting?", "what did they agree?", "waht did tehy agree?"),
    ("Who chaired the Q2 meeting?", "how many members attended the meeting?", "how many memebers attended the meetting?"),
    ("How many plots were vacant in Q2?", "and what about the budget?", "and waht about hte budget?"),
    ("How many plots were vacant in Q2?", "and in Q1?", "adn in Q1?"),
    ("What did the committee agree at the Q2 meeting?", "and who chaired the meeting?", "and who chaired hte meetng?"),
    ("Who prepared the 2021 survey?", "what did his survey count?", "what did hsi survey count?"),
    ("Who kept the Skerry light?", "when did she relight the lamp?", "wehn did seh relight the lamp?"),
    ("How many moorings did the 2021 survey count?", "and the waiting list?", "and teh waitng list?"),
    ("Who prepared the 2021 survey?", "what did he say about dredging?", "waht did he say abut dreging?"),
    ("Who chaired the Q2 meeting?", "how many plots were vacant then?", "how many plots were vacnat tehn?"),
    # qa21: slips of four letters or fewer, two letters swapped ('lsit', 'rnet', 'lmap'), and 'hwo' read by the
    # word after it
    ("Who chaired the Q2 meeting?", "list the members", "lsit the members"),
    ("Who chaired the Q2 meeting?", "what was the rent?", "whta was the rnet?"),
    ("Who kept the Skerry light?", "when did she relight the lamp?", "when did she relight the lmap?"),
    ("Who chaired the Q2 meeting?", "How many members attended?", "Hwo many members attended?"),
    ("How many plots were vacant in Q2?", "who chaired the meeting?", "hwo chaired the meeting?"),
]


@pytest.mark.parametrize(
    ("meant", "typed"),
    [("List the members at the Q2 meeting", "Lsit the members at the Q2 meeting"),
     ("How many plots were vacant in Q2?", "Hwo many plots were vacant in Q2?"),
     ("What was the rent in Q1?", "Waht was the rnet in Q1?")],
)
async def test_a_short_slip_in_a_first_question_is_searched_as_its_correct_twin(engine, meant, typed):
    right = await conversation(engine, [meant])
    wrong = await conversation(engine, [typed])
    assert wrong.query == right.query, (wrong.query, right.query)
    assert wrong.text == right.text, wrong.text


@pytest.mark.parametrize(("first", "meant", "typed"), TWINS)
async def test_a_mistyped_follow_up_is_searched_and_answered_as_its_correct_twin(engine, first, meant, typed):
    right = await conversation(engine, [first, meant])
    wrong = await conversation(engine, [first, typed])
    assert wrong.query == right.query, (wrong.query, right.query)
    assert wrong.text == right.text, wrong.text


async def test_a_content_word_slip_keeps_the_conversation_s_meeting(engine):
    answer = await conversation(engine, ["Who chaired the Q2 meeting?", "how many memebers attended the meetting?"])
    assert answer.query == "How many members attended the meeting? (context: Who chaired the Q2 meeting?)"


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("hte", "the"), ("hsi", "his"), ("seh", "she"), ("hwen", "when"), ("adn", "and"), ("hre", "her"), ("ti", None),
     ("he", None), ("hwo", None)],
)
def test_slips_of_pronouns_and_of_the_first_two_letters_are_the_words(typed, meant):
    assert question_word(typed) == meant
