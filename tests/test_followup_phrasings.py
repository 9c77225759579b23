"""qa16: follow-up phrasings of kinds the other follow-up tests do not ask, as conversations through the
real engine (no model) over the port documents of `raptor_tools.followup_chains`, two survey reports and
a lighthouse story: a year alone ('and in 2019?'), a correction to 'the other report', 'those' for
everything an answer listed, ordinals written as '2nd', 'the former'/'the latter', comparatives,
yes/no checks, typos, and he/she for names the names table does not know. Each row is the question the
last turn was searched as."""

from __future__ import annotations

import asyncio

import pytest

from raptor_engine import Engine, Turn
from raptor_engine.query.followup import standalone_question
from raptor_tools.followup_chains import DOCUMENTS
from tests.test_followup_it_document import REPORT_2019, REPORT_2021
from tests.unhurried import unhurried_settings

SKERRY = """# The lighthouse on Skerry

Jude Penhallow and Ansel Trask kept the Skerry light from 1890. The keepers' cottage stood below the tower.

## Storms

In the great storm of 1894 the lamp failed twice. Jude climbed the tower each time, and she relit the lamp by hand.

## Visitors

Ansel rowed to the mainland for oil every week, and his boat was the only one on the island.
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path_factory.mktemp("phrasings") / "data"), embedder=embedder)
    texts = {**DOCUMENTS, "r2019.md": REPORT_2019, "r2021.md": REPORT_2021, "skerry.md": SKERRY}
    for name, text in texts.items():
        asyncio.run(engine.ingest("k", name, text.encode()))
    try:
        yield engine
    finally:
        engine.close()


FERRIES = "Which ferries crossed the Ambry?"
# The first answer of the rows that lean on everything it listed, as the engine gives it when it names both
# ferries: these rows test how the follow-up is read, and which sentences the first answer ranks first is
# a near tie of the embedder's rounding (the answer probes test the ranking).
GIVEN_ANSWERS = {
    FERRIES: (
        "From the documents:\n"
        "- \u201cTwo ferries crossed the Ambry before the bridge opened.\u201d [1]\n"
        "- \u201cThe Alder was a paddle steamer launched in 1862 at Greenock.\u201d [2]\n"
        "- \u201cThe Wren was a smaller screw ferry launched in 1871.\u201d [2]"
    )
}


async def last_query(engine: Engine, conversation: str) -> str:
    """What the conversation's last question was searched as; an earlier question in GIVEN_ANSWERS is
    answered as given there, every other one by the engine."""
    history: list[Turn] = []
    answer = None
    questions = conversation.split(" | ")
    for i, question in enumerate(questions):
        given = GIVEN_ANSWERS.get(question) if i < len(questions) - 1 else None
        if given is not None:
            history += [Turn("user", question), Turn("assistant", given)]
            continue
        answer = await engine.ask("k", question, history=list(history))
        history += [Turn("user", question), Turn("assistant", answer.text)]
    assert answer is not None
    return answer.query
R2019 = "What did the 2019 report recommend?"
R2021 = "What did the 2021 report recommend?"
PIKE = "Who was harbour master of Port Lenning?"


@pytest.mark.parametrize(
    ("conversation", "searched"),
    [
        # a year alone: the last question again for that year
        # (asked of the 2019 report, whose title holds the year, as 'it': tests/test_followup_labels.py)
        (f"{R2021} | and in 2019?", "What did it recommend?"),
        (f"{R2021} | what about 2019?", "What did it recommend?"),
        (f"{R2021} | no, I meant in 2019", "What did it recommend?"),
        ("When did the Kessel Bridge open? | and in 1968?", "In 1968? (context: When did the Kessel Bridge open?)"),
        # 'the other report': the last question, searched in the documents the last answer did not quote
        (f"{R2019} | no, the other report", "What did it recommend?"),
        (f"{R2019} | no, the other one", "What did it recommend?"),
        (f"{R2021} | what about the other report?", "What did it recommend?"),
        (f"{R2019} | who wrote it? | and the other one?", "Who wrote it?"),
        # 'this'/'that' leaning on the last turn
        (f"{R2019} | when was this written?", f"When was this written? (context: {R2019})"),
        ("What did the 2019 survey find? | why was that?", "Why was that? (context: The 2019 survey found"),
        # 'those' for everything listed; a determiner 'those' stays
        (f"{FERRIES} | what happened to those?", "What happened to the Alder and the Wren?"),
        (f"{FERRIES} | did those carry cattle?", "Did the Alder and the Wren carry cattle?"),
        (f"{FERRIES} | were those steamers?", f"Were those steamers? (context: {FERRIES})"),
        # 'they'/'them' right after a question asking for several things
        (f"{FERRIES} | what happened to them?", "What happened to the Alder and the Wren?"),
        (f"{FERRIES} | when were they launched?", "When were the Alder and the Wren launched?"),
        ("What ferries were there before the bridge? | what did they carry?", "What did the Alder and the Wren carry?"),
        # ordinals, former/latter, a choice corrected
        (f"{FERRIES} | the 2nd one", "Tell me about the Wren."),
        (f"{FERRIES} | what about the second one?", "Tell me about the Wren."),
        (f"{FERRIES} | tell me about the former", "Tell me about the Alder"),
        (f"{FERRIES} | and the latter?", "Tell me about the Wren."),
        (f"{FERRIES} | the first one? | no, the other one", "Tell me about the Wren."),
        # comparatives
        (f"{FERRIES} | which is bigger?", "Which is bigger, the Alder or the Wren?"),
        (f"{FERRIES} | which one was bigger?", "Which was bigger, the Alder or the Wren?"),
        (f"{FERRIES} | which was older?", "Which was older, the Alder or the Wren?"),
        ("How long is the Kessel Bridge? | is it longer than 300 metres?", "How long is the Kessel Bridge?"),
        # a choice between the two things the last two questions asked the same of
        ("When did the Alder launch? | and the wren? | which was first?", "Which was first, the "),
        ("How many people could the Alder take? | and the Wren? | which one held more?", "Which held more, the Alder or the Wren?"),
        ("Who designed the Kessel Bridge? | and the road bridge? | which is longer?", "Which is longer, the Kessel Bridge or the road bridge?"),
        # another thing for the same question
        ("How many people could the Alder take? | and the Wren?", "How many people could the Wren take?"),
        ("How many people could the Alder take? | what about the wren", "How many people could the wren take?"),
        ("When did the Kessel Bridge open? | and the road bridge?", "When did the road bridge open?"),
        # yes/no about a person; typos
        ("Who designed the Kessel Bridge? | did she have children?", "Did Edith Marlow have children?"),
        ("Who designed the Kessel Bridge? | is she still alive?", "Is Edith Marlow still alive?"),
        (f"{PIKE} | did he have kids?", "Did Captain Rowan Pike have kids?"),
        (f"{PIKE} | waht did he propose in 1895?", "What did Captain Rowan Pike propose in 1895?"),
        (f"{PIKE} | wher did he go aftr 1902?", "Where did Captain Rowan Pike go"),
        # checks: the claims of the last answer are what is searched
        ("What did the 2019 survey find? | is that true?", "The 2019 survey found the north pier unsafe"),
        (f"{R2019} | are you sure?", "Calloway recommended closing the north pier"),  # asked of the 2019 report
        # names the table does not know: the documents say who is a she and who a he
        ("Who kept the Skerry light? | what did he do every week?", "What did Ansel Trask do every week?"),
        ("Who kept the Skerry light? | what did she do in the storm?", "What did Jude Penhallow do in the storm?"),
    ],
)
async def test_a_follow_up_phrasing_is_searched_as_it_means(engine, conversation, searched):
    assert (await last_query(engine, conversation)).startswith(searched)


def talk(*turns: str) -> list[Turn]:
    return [Turn("user", t) if i % 2 == 0 else Turn("assistant", f"\u201c{t}\u201d [1]") for i, t in enumerate(turns)]


@pytest.mark.parametrize(
    ("conversation", "follow_up", "standalone"),
    [
        # a year in place of the last question's only year; two years, or none, leave it leaning on the turn
        (talk("How many moorings were there in 2021?", "230."), "and for 2019?", "How many moorings were there in 2019?"),
        (talk("What changed between 2019 and 2021?", "Dredging."), "and in 2023?", "In 2023? (context: "),
        (  # was 'In 1975? (context: ...)'
            talk("Who was appointed keeper of the archive in 1962?", "Margaret Hale."),
            "and in 1975?",
            "Who was appointed keeper of the archive in 1975?",
        ),
        (talk("What did the report recommend?", "Dredging."), "and in 2019?", "In 2019? (context: "),
        # 'the other X' needs the last question's numbered thing of that kind
        (talk("What did the 2019 report recommend?", "Closing the pier."), "no, the other survey", "No, the other survey (context:"),
        (talk("What did the 2019 report recommend?", "Closing the pier."), "the other one?", "What did the other report recommend?"),
    ],
)
def test_a_year_or_the_other_one_rewrites_only_what_the_last_question_numbered(conversation, follow_up, standalone):
    assert standalone_question(follow_up, conversation).startswith(standalone)


def test_those_without_a_list_is_left_leaning_on_the_last_turn():
    conversation = talk("What happened to the Alder?", "It was sold to a company in Belfast in 1886.")
    assert standalone_question("what happened to those?", conversation).startswith("What happened to those? (context:")


def test_a_choice_after_two_questions_that_differ_in_one_thing_is_between_those_things():
    conversation = talk("When did the Alder launch?", "In 1862.", "and the Wren?", "In 1871.")
    assert standalone_question("which was first?", conversation) == "Which was first, the Alder or the Wren?"
    differ = talk("When did the Alder launch?", "In 1862.", "Where was the Wren broken up?", "At Belfast.")
    assert standalone_question("which was first?", differ).startswith("Which was first? (context:")
    verb = talk("When did the Alder launch?", "In 1862.", "When did the Alder sink?", "Never.")
    assert standalone_question("which was first?", verb).startswith("Which was first? (context:")


def test_two_requests_that_share_no_word_list_nothing_to_choose_from():
    """'say more' then 'tell me more': their first words have a capital only for opening the question, no
    thing swapped. Before, 'and the first one?' after them was searched as 'Tell me about Say more.'"""
    for before, after in (("say more", "in one sentence please"), ("tell me more", "say more")):
        conversation = talk("When was the first bridge at Corran built?", "In 1888.", before, "It was timber.", after, "Yes.")
        assert "Say more" not in standalone_question("and the first one?", conversation)
    names = talk("Margaret Hale left when?", "In 1975.", "Thomas Reid left when?", "In 1948.")
    assert standalone_question("which was first?", names) == "Which was first, Margaret Hale or Thomas Reid?"


@pytest.mark.parametrize(
    ("conversation", "follow_up", "standalone"),
    [
        (talk("Who built the first bridge?", "Walter Dunbar."), "and the second one?", "Who built the second bridge?"),
        (talk("Who built the first bridge?", "Walter Dunbar."), "no, I meant the 1902 one", "Who built the 1902 bridge?"),
        (talk("When did the 1888 bridge wash away?", "In 1894."), "what about the second one?", "When did the second bridge wash away?"),
        (
            talk("When was the first bridge at Corran built?", "In 1888.", "who designed it?", "Isobel Grant."),
            "and the second one?",
            "Who designed the second bridge?",
        ),
    ],
)
def test_the_nth_one_is_the_last_questions_placed_thing_placed_anew(conversation, follow_up, standalone):
    """Before, 'and the second one?' after 'Who built the first bridge?' was searched as 'What about the
    second one? (context: …)' and quoted the first bridge again."""
    assert standalone_question(follow_up, conversation) == standalone


def test_they_is_everything_listed_only_right_after_a_question_asking_for_several():
    ferries = talk("Which ferries crossed the Ambry?", "The Alder.\u201d [1]\n- \u201cThe Wren.")
    assert standalone_question("when were they launched?", ferries) == "When were the Alder and the Wren launched?"
    one = ferries + talk("What was the Alder?", "A paddle steamer.")
    assert "the Alder and the Wren" not in standalone_question("what did they carry?", one)
