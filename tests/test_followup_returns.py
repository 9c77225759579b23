"""qa22: follow-ups of an outside pass over a football club's season report, a tenancy agreement and a
product changelog that read wrong through the real CLI.

- A month or a version number alone ('and in January?', 'and march', 'and in 3.1.0?') was searched as
  typed with the last question as context, not as the last question of that month or version: 'and in
  3.1.0?' after 'What changed in version 3.0.0?' read "Nothing in the documents clearly answers this".
- '[2]?', 'source 2', 'the second source' were searched as questions of their own (passages about
  anything); they now show that citation of the last answer, as 'where does it say that?' shows them all.
- 'back to the rent, when is it paid?' after a question about the deposit read 'it' as the deposit.
- 'apart from council tax?' after 'What does the tenant pay for?' was searched alone, as a new question.
- 'the highest?' / 'and the lowest?' after the bar's takings then the gate receipts' were searched as typed
  ('The documents say nothing about this').
- 'the second one' after 'Who was top scorer?' then 'how many goals?' chose among the two questions
  ('Tell me about How many goals.'), and 'which was bigger?' after a question 'in December' offered
  December as a thing to choose."""

from __future__ import annotations

import pytest

from raptor_engine.query.followup import Turn, standalone_question
from raptor_engine.query.smalltalk import LAST_CITATION, Act, cited_marker, small_talk_act, sources_reply
from raptor_engine.types import Citation
from tests.conversations import asked_turns
from tests.test_followup_other_document import conversation
from tests.unhurried import engine_with


def _talk(*questions: str) -> list[Turn]:
    return asked_turns(*questions, quote="Three wins.")


@pytest.mark.parametrize(
    ("asked", "follow_up", "standalone"),
    [
        ("How did the Rovers do in October?", "and in January?", "How did the Rovers do in January?"),
        ("How did the Rovers do in October?", "what about Jan?", "How did the Rovers do in January?"),
        ("How did the Rovers do in October?", "and dec", "How did the Rovers do in December?"),
        ("What was the score against Fenley Town on 2 September?", "and in December?",
         "What was the score against Fenley Town in December?"),
        ("What happened in February?", "and march", "What happened in March?"),
        ("What happened in March 2024?", "and in May?", "What happened in May 2024?"),
        ("Who scored on 16th of March?", "and April?", "Who scored in April?"),
        ("May the tenant keep a cat in March?", "and in June?", "May the tenant keep a cat in June?"),
        ("What was the score on 9 December?", "and on 26 December?", "What was the score on 26 December?"),
        ("What was the score in March?", "and 3 May?", "What was the score on 3 May?"),
        ("What was the score in March?", "and on April 3rd?", "What was the score on 3 April?"),
        ("What changed in version 3.0.0?", "and in 3.1.0?", "What changed in version 3.1.0?"),
        ("What changed in version 3.0.0?", "what about v2.4?", "What changed in version 2.4?"),
        ("When was release 2.4.0 made?", "and 1.0.0?", "When was release 1.0.0 made?"),
        ("Which bugs did 3.0.2 fix?", "and 2.4.1?", "Which bugs did 2.4.1 fix?"),
    ],
)
def test_a_month_or_a_version_alone_asks_the_last_question_of_it(asked, follow_up, standalone):
    assert standalone_question(follow_up, _talk(asked)) == standalone


@pytest.mark.parametrize(
    ("asked", "follow_up"),
    [
        ("What happened in 2023?", "and in March?"),  # a year alone: March of which year is a new question
        ("What did the tenant pay?", "and May?"),  # 'May' may be a person
        ("What was revenue in 4.2 million pounds?", "and 3.1.0?"),  # a decimal is no version
        ("What was the score in March?", "and May?"),
        ("What changed in version 3.0.0 and 3.1.0?", "and 2.4.0?"),  # two versions: which one to replace?
    ],
)
def test_a_month_or_a_version_replaces_no_other_kind_of_word(asked, follow_up):
    standalone = standalone_question(follow_up, _talk(asked))
    assert not standalone.startswith(asked.rstrip("?")), standalone


@pytest.mark.parametrize(
    ("asked", "follow_up", "standalone"),
    [
        ("What is the deposit?", "back to the rent, when is it paid?", "When is the rent paid?"),
        ("What is the deposit?", "ok, going back to the rent: how much is it?", "How much is the rent?"),
        ("Who pays the water charges?", "Back to the boiler - who fixes it?", "Who fixes the boiler?"),
        ("What is the rent?", "back to the deposit. is its protection scheme named?",
         "Is the deposit's protection scheme named?"),
        ("Who was Elias?", "back to Hester, who did she marry?", "Who did Hester marry?"),
        ("Who was Elias?", "returning to Hester: where was her house?", "Where was Hester's house?"),
        ("What is the deposit?", "back to the rent, how much is the late interest?",
         "How much is the late interest, the rent?"),
        ("What was the score on 26 December?", "going back to the 9 December match, who did they play?",
         "Who did they play, the 9 December match?"),
        ("When is the rent paid?", "back to the deposit", "When is the deposit paid?"),
    ],
)
def test_back_to_a_topic_asks_of_that_topic(asked, follow_up, standalone):
    assert standalone_question(follow_up, _talk(asked)) == standalone


@pytest.mark.parametrize(
    ("asked", "follow_up", "standalone"),
    [
        ("What does the tenant pay for?", "apart from council tax?", "What does the tenant pay for apart from council tax?"),
        ("What does the tenant pay for?", "and anything else except the rent?", "What does the tenant pay for except the rent?"),
        ("Who attended the meeting?", "anyone besides Joan?", "Who attended the meeting besides Joan?"),
        ("Who attended the meeting?", "other than Joan", "Who attended the meeting other than Joan?"),
        ("Which pets are allowed?", "aside from cats?", "Which pets are allowed aside from cats?"),
        ("Who won an award?", "who else, not counting Wilk?", "Who won an award not counting Wilk?"),
    ],
)
def test_leaving_something_out_asks_the_last_question_without_it(asked, follow_up, standalone):
    assert standalone_question(follow_up, _talk(asked)) == standalone


@pytest.mark.parametrize(
    ("asked", "follow_up", "standalone"),
    [
        (("How much did the bar make?", "and the gate receipts?"), "the highest?",
         "Which was higher, the bar or the gate receipts?"),
        (("How much did the bar make?", "and the gate receipts?"), "and the lowest?",
         "Which was lower, the bar or the gate receipts?"),
        (("How much is the rent?", "and the deposit?"), "the biggest one?", "Which is bigger, the rent or the deposit?"),
        (("When did the Alder launch?", "and the Wren?"), "the oldest?", "Which was older, the Alder or the Wren?"),
        (("What was revenue in 2021?", "and in 2020?"), "the highest?", "What was revenue in 2020? (context: What was revenue in 2021?)"),
    ],
)
def test_a_superlative_alone_chooses_between_the_last_two(asked, follow_up, standalone):
    assert standalone_question(follow_up, _talk(*asked)) == standalone


def test_a_superlative_with_nothing_to_choose_from_stays_as_typed():
    assert standalone_question("the highest?", _talk("What is the rent?")).startswith("The highest?")


def test_a_question_saying_back_to_in_its_own_words_is_no_return():
    standalone = standalone_question("what was back to the future about?", _talk("What is the deposit?"))
    assert "deposit" not in standalone.split("(")[0] and "future" in standalone


def test_the_second_one_after_two_questions_chooses_no_question():
    standalone = standalone_question("the second one", _talk("Who was top scorer?", "how many goals?"))
    assert "How many goals" not in standalone.split("(")[0], standalone


def test_which_after_a_month_offers_no_month_as_a_thing():
    talk = _talk("What was the score against Fenley Town on 2 September?", "and in December?")
    assert "December?" not in standalone_question("which was bigger?", talk).split("(")[0].split(",")[-1]


@pytest.mark.parametrize(
    ("message", "marker"),
    [
        ("[2]?", 2), ("and [3]", 3), ("source 2?", 2), ("what is citation #1?", 1), ("the second source", 2),
        ("show me the last quote", LAST_CITATION), ("quote 2", 2), ("where is [1] from?", 1), ("where does [2] say so", 2),
        ("what does source 2 say?", 2), ("Where does [2] say that?", 2), ("reference 2 please", 2),
        ("what was in the 3rd passage?", 3),
    ],
)
def test_a_citation_named_by_its_number_or_place_asks_for_that_source(message, marker):
    assert cited_marker(message) == marker
    assert small_talk_act(message) is Act.SOURCES


@pytest.mark.parametrize(
    "message", ["what did [2] say about the rent?", "2?", "in 2019?", "the second one", "who wrote the second chapter?",
                "What happened on 2 [3]?"],
)
def test_a_question_with_a_number_is_no_request_for_a_citation(message):
    assert cited_marker(message) is None
    assert small_talk_act(message) is not Act.SOURCES


@pytest.mark.parametrize("message", ["where does it say so", "where does it say so?", "so where is that from?"])
def test_where_does_it_say_so_asks_for_the_sources(message):
    assert small_talk_act(message) is Act.SOURCES


def _citation(marker: int, node: int) -> Citation:
    return Citation(marker=marker, node_id=node, layer=0, document="tenancy.md", score=0.5, leaf_count=1)


def test_the_sources_reply_shows_the_citation_asked_for_or_says_which_there_are():
    text = "From the documents:\n- \u201cThe rent is 950 pounds.\u201d [1]\n- \u201cThe deposit is 1,096 pounds.\u201d [2]"
    citations = [_citation(1, 10), _citation(2, 11)]
    shown = sources_reply(text, citations, 2)
    assert "[2]" in shown and "1,096" in shown and "[1]" not in shown and "950" not in shown
    assert "950" in sources_reply(text, citations, 1) and "1,096" in sources_reply(text, citations, LAST_CITATION)
    assert sources_reply(text, citations, 5) == "The last answer has no [5]; it cites [1] to [2]."
    assert "[1]" in sources_reply(text, citations) and "[2]" in sources_reply(text, citations)


SEASON = """# Ashcombe Rovers: Season Report 2023-24

## October

October brought three wins. The Rovers beat Kingsbridge 4-0 away on 7 October and Wexcombe United 2-1 at
home on 21 October.

## January

January was the worst month of the season: two defeats, 0-4 away at Pelham Athletic on 13 January and 1-2 at
home to Kingsbridge on 27 January.
"""

CHANGELOG = """# Tidepool Changelog

## Version 3.1.0, released 14 February 2025

Added end-to-end encryption for shared notebooks. The sync interval now defaults to 5 minutes.

## Version 3.0.0, released 1 October 2024

The storage format changed from JSON files to a single SQLite database. The plugin interface was rewritten.
"""

TENANCY = """# Tenancy agreement, Flat 2

## Rent

The rent is 950 pounds a month, payable in advance on the first day of each month by standing order.

## Deposit

The tenant pays a deposit of 1,096 pounds on signing this agreement. The landlord protects the deposit with
the Deposit Protection Service within thirty days.
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    texts = {"season.md": SEASON, "changelog.md": CHANGELOG, "tenancy.md": TENANCY}
    engine = engine_with(tmp_path_factory.mktemp("returns"), embedder, texts)
    try:
        yield engine
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("questions", "standalone"),
    [
        (["What changed in version 3.0.0?", "and in 3.1.0?"], "What changed in version 3.1.0?"),
        (["How did the Rovers do in October?", "and in January?"], "How did the Rovers do in January?"),
    ],
)
async def test_another_month_or_version_is_answered_as_its_own_question_is(engine, questions, standalone):
    """The follow-up's answer is the answer of the question it stands for, asked alone (on main: the
    month or version searched as typed beside the last question, and answered from the last one's passages)."""
    answer = await conversation(engine, questions)
    alone = await conversation(engine, [standalone])
    assert answer.query == standalone
    assert answer.text == alone.text


async def test_another_month_quotes_that_month(engine):
    answer = await conversation(engine, ["How did the Rovers do in October?", "and in January?"])
    assert "January" in answer.text, answer.text


async def test_a_citation_by_its_number_shows_that_one(engine):
    first = await conversation(engine, ["How much is the deposit?"])
    assert len(first.citations) >= 1
    answer = await conversation(engine, ["How much is the deposit?", "[1]?"])
    assert answer.text.startswith("The last answer quoted:"), answer.text
    assert [c.marker for c in answer.citations] == [1]
    assert answer.text.count("\n- [") == 1, answer.text
    missing = await conversation(engine, ["How much is the deposit?", "source 9"])
    assert missing.text.startswith("The last answer has no [9]"), missing.text


async def test_back_to_the_rent_answers_about_the_rent(engine):
    answer = await conversation(engine, ["How much is the deposit?", "back to the rent, when is it paid?"])
    assert answer.query == "When is the rent paid?"
    assert "first day of each month" in answer.text.split("\n")[1], answer.text
