"""Follow-ups that name nothing of their own, asked of the real engine (no LLM) over a knowledge base of
three documents written here: "why?" gets a reason, "and then?" what follows the last quote, "tell me
more" sentences not quoted yet, "for example?" an example, "is that true?" the last answer checked
against the documents, a bare "when?" the last question's subject; and `follows` reads a follow-up
against an older exchange. The phrasings here are not the ones the rules were tuned on."""

from __future__ import annotations

import asyncio
import re

import pytest

from raptor_engine import Engine, RaptorError, Turn
from raptor_engine.query.answer import FOUND, WEAK_MATCH
from raptor_engine.query.followup import Onward, onward_ask, quotes_in, standalone_question, through_exchange
from raptor_engine.query.onward import EXAMPLES, MORE_REASONS
from raptor_engine.query.verify import CHECKED, NOTHING_TO_CHECK, UNSUPPORTED
from tests.unhurried import unhurried_settings

MILL = """# The Brenning Mill

The Brenning Mill stands on the river Dole below Harwick. It was built in 1790 by Thomas Callow, a corn
merchant from Harwick.

## The wheel

The mill's first wheel was an undershot wheel of oak. In 1834 the oak wheel was replaced by an iron
breastshot wheel. It was replaced because the oak had rotted in the wet winters and had broken twice in one
year. The iron wheel turned four pairs of millstones.

## The flood of 1852

On 3 February 1852 the river Dole burst its banks and flooded the mill to the height of the first floor.
The miller, Samuel Callow, lost his whole winter store of grain. He rebuilt the mill race with a stone
sluice to hold the water back in later floods. The next spring the mill ground corn again, and Samuel
bought a second pair of French stones.

## Closure

Several things ended the mill's trade. Cheaper flour came from the new roller mills at Harwick docks.
Large bakeries, such as the Co-operative bakery in Harwick, bought their flour from the docks instead. The
mill stopped grinding in 1931 and is now a private house.
"""

CHOIR = """# The Harwick Choir

The Harwick Choir was founded in 1898 by Agnes Lowry, the organist of St Mary's church. It began with
twelve singers who met in the church hall on Thursday evenings.

## Competitions

In 1925 the choir won the county festival with a setting of Psalm 23. The prize was a silver cup, which is
still kept in the church vestry.

## The war years

During the war many of the men joined the army, and the choir sang with only four tenors. Agnes Lowry
retired in 1946 and was followed by her pupil, Harold Dent.
"""

LIGHTSHIP = """# The Dole Lightship

The Dole lightship was moored off the river mouth in 1867. She was withdrawn in 1958 because a new
automatic buoy with a flashing lamp made a crew unnecessary. Her crew of seven lived aboard for a month
at a time.

## Storms

In the gale of 1881 her anchor cable parted and she drifted for nine miles. The crew lit flares, and the
Harwick lifeboat towed her back the next morning. After the gale the owners fitted a second anchor and a
heavier cable.
"""

REASON = re.compile(r"\bbecause\b|\bdue to\b|\bso that\b|\bto (?:avoid|prevent)\b")


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path_factory.mktemp("onward") / "data"), embedder=embedder)
    for name, text in (("mill.md", MILL), ("choir.md", CHOIR), ("lightship.md", LIGHTSHIP)):
        asyncio.run(engine.ingest("town", name, text.encode()))
    try:
        yield engine
    finally:
        engine.close()


async def converse(engine: Engine, *questions: str, **kwargs):
    """Ask each question after the ones before it, as `raptor chat` does; the answers in order."""
    history: list[Turn] = []
    answers = []
    for question in questions:
        answer = await engine.ask("town", question, history=list(history), **kwargs)
        history += [Turn("user", question), Turn("assistant", answer.text)]
        answers.append(answer)
    return answers


def flat(text: str) -> str:
    return " ".join(text.split())


def keys(answer) -> list[str]:
    return [flat(quote) for quote in quotes_in(answer.text)]


def repeats(answer, previous) -> set[str]:
    """Sentences the answer quotes that the previous answer quoted too."""
    said = {s for quote in keys(previous) for s in re.split(r"(?<=[.!?])\s+", quote)}
    return {s for quote in keys(answer) for s in re.split(r"(?<=[.!?])\s+", quote)} & said


# Phrasings of each request: typed in lower case, without a question mark, with a filler or a typo.
PHRASINGS = [
    ("why's that?", Onward.REASON),
    ("WHY", Onward.REASON),
    ("ok but how come", Onward.REASON),
    ("what was the reason", Onward.REASON),
    ("why did that happen?", Onward.REASON),
    ("on what grounds?", Onward.REASON),
    ("and after?", Onward.NEXT),
    ("what followed?", Onward.NEXT),
    ("then what happened?", Onward.NEXT),
    ("what came next", Onward.NEXT),
    ("so what happened afterwards?", Onward.NEXT),
    ("what did she do next?", Onward.NEXT),
    ("expand on that", Onward.MORE),
    ("more info", Onward.MORE),
    ("could you explain further?", Onward.MORE),
    ("elaboarte please", Onward.MORE),
    ("what does that mean?", Onward.MORE),
    ("go ahead", Onward.MORE),
    ("any more details?", Onward.MORE),
    ("anything else?", Onward.MORE),
    ("e.g.?", Onward.EXAMPLE),
    ("give me some examples", Onward.EXAMPLE),
    ("can you give examples", Onward.EXAMPLE),
    ("exampel?", Onward.EXAMPLE),
    ("which ones?", Onward.EXAMPLE),
    ("is that accurate?", Onward.CHECK),
    ("seriously?", Onward.CHECK),
    ("are you certain about that", Onward.CHECK),
    ("can you verify that?", Onward.CHECK),
    ("says who?", Onward.CHECK),
    ("isn't that right?", Onward.CHECK),
    ("why did the lightship drift?", None),  # a question of its own
    ("tell me more about the choir", None),
    ("what about Agnes Lowry?", None),
    ("and in 1925?", None),
    ("why not?", Onward.REASON),
    ("hmm, how so", Onward.REASON),
    ("and then what?", Onward.NEXT),
    ("after that?", Onward.NEXT),
    ("More!", Onward.MORE),
    ("could you elaborate on that", Onward.MORE),
    ("example pls", Onward.EXAMPLE),
    ("r u sure", Onward.CHECK),
    ("really??", Onward.CHECK),
    ("what year?", None),  # a bare wh-word: the rewrite carries the subject (below)
]


@pytest.mark.parametrize(("phrasing", "kind"), PHRASINGS)
def test_what_a_follow_up_asks_of_the_last_answer(phrasing, kind):
    assert onward_ask(phrasing) is kind


@pytest.mark.parametrize(
    ("opening", "why"), [("When was the lightship withdrawn?", "why's that?"), ("What happened to the oak wheel?", "WHY")]
)
async def test_why_after_an_answer_quotes_a_reason_not_the_answer_again(engine, opening, why):
    first, reason = await converse(engine, opening, why)
    assert reason.text.startswith(FOUND), reason.text
    assert REASON.search(keys(reason)[0]) or MORE_REASONS.search(keys(reason)[0]), reason.text
    assert keys(reason)[0] != keys(first)[0]


@pytest.mark.parametrize("next_", ["what followed?", "so what happened afterwards?"])
async def test_and_then_quotes_what_follows_the_last_quote_in_its_document(engine, next_):
    first, then = await converse(engine, "What happened in the gale of 1881?", next_)
    anchor = flat(LIGHTSHIP).index(re.split(r"(?<=[.!?])\s+", keys(first)[0])[0])
    assert keys(then) and not repeats(then, first), then.text
    for quote in keys(then):
        assert flat(LIGHTSHIP).index(re.split(r"(?<=[.!?])\s+", quote)[0]) > anchor, then.text


@pytest.mark.parametrize("more", ["expand on that", "elaboarte please", "what does that mean?"])
async def test_tell_me_more_never_repeats_a_quote_and_stays_with_the_document(engine, more):
    first, again = await converse(engine, "Who founded the Harwick Choir?", more)
    assert again.has_context and keys(again), again.text  # 'what does that mean?' is no "I didn't catch that"
    assert not repeats(again, first), again.text
    assert all(quote in flat(CHOIR) for quote in keys(again)), again.text


async def test_two_tell_me_mores_in_a_row_bring_new_sentences_each_time(engine):
    first, second, third = await converse(engine, "What happened to the mill in 1852?", "more info", "go ahead")
    assert keys(second) and keys(third)
    assert not repeats(second, first) and not repeats(third, second) and not repeats(third, first), third.text


@pytest.mark.parametrize("example", ["e.g.?", "give me some examples"])
async def test_for_example_quotes_an_example(engine, example):
    first, instance = await converse(engine, "What ended the mill's trade?", example)
    assert instance.text.startswith(FOUND), instance.text
    assert EXAMPLES.search(keys(instance)[0]) and not repeats(instance, first), instance.text


async def test_an_example_asked_where_none_is_near_says_so(engine):
    _, instance = await converse(engine, "Who founded the Harwick Choir?", "exampel?")
    assert instance.text.startswith(WEAK_MATCH), instance.text


@pytest.mark.parametrize("check", ["is that accurate?", "seriously?", "can you verify that?"])
async def test_is_that_true_checks_the_last_answer_against_the_documents(engine, check):
    first, checked = await converse(engine, "Who founded the Harwick Choir?", check)
    assert checked.text.startswith(CHECKED), checked.text
    assert keys(checked)[0] == keys(first)[0] and checked.citations  # the passage that says it, cited
    assert "Agnes Lowry" in checked.text


async def test_an_answer_the_documents_do_not_hold_is_said_to_have_no_support(engine):
    made_up = "From the documents:\n- \u201cThe Harwick Choir was founded by a sea captain on the moon in 1750.\u201d [1]"
    history = [Turn("user", "Who founded the Harwick Choir?"), Turn("assistant", made_up)]
    checked = await engine.ask("town", "says who?", history=history)
    assert checked.text == UNSUPPORTED and not checked.answered and not checked.citations


async def test_is_that_true_before_any_answer_asks_for_a_question(engine):
    history = [Turn("user", "thanks"), Turn("assistant", "Ask me another question about the documents.")]
    checked = await engine.ask("town", "is that accurate?", history=history)
    assert checked.text == NOTHING_TO_CHECK


@pytest.mark.parametrize(
    ("opening", "bare", "searched", "expected"),
    [
        ("Who built the Brenning Mill?", "and what year?", "What year was the Brenning Mill built?", "1790"),
        ("Who founded the Harwick Choir?", "where exactly", "Where was the Harwick Choir founded?", None),
        ("What did the choir win in 1925?", "how much", "How much did the choir win in 1925?", None),
    ],
)
async def test_a_bare_wh_word_carries_the_last_questions_subject(engine, opening, bare, searched, expected):
    _, answer = await converse(engine, opening, bare)
    assert answer.query.startswith(searched), answer.query
    if expected:
        assert any(expected in quote for quote in keys(answer)), answer.text


async def test_follows_reads_a_follow_up_against_an_older_exchange(engine):
    history = []
    for question in ("When was the lightship withdrawn?", "Who founded the Harwick Choir?"):
        answer = await engine.ask("town", question, history=list(history))
        history += [Turn("user", question), Turn("assistant", answer.text)]
    latest = await engine.ask("town", "and where?", history=history)
    older = await engine.ask("town", "and where?", history=history, follows=0)
    assert latest.query.startswith("Where was the Harwick Choir founded?"), latest.query
    assert older.query.startswith("Where was the lightship withdrawn?"), older.query
    assert through_exchange(history, 0) == history[:2] and through_exchange(history, -1) == history
    with pytest.raises(RaptorError, match="no exchange 2"):
        await engine.ask("town", "and where?", history=history, follows=2)


def test_a_check_asks_nothing_new_so_what_follows_it_leans_on_what_it_checked():
    answer = "From the documents:\n- \u201cThe Harwick Choir was founded in 1898 by Agnes Lowry.\u201d [1]"
    checked = "Yes: the documents say so.\n" + answer.split("\n", 1)[1]
    talk = [
        Turn("user", "Who founded the Harwick Choir?"),
        Turn("assistant", answer),
        Turn("user", "you sure?"),
        Turn("assistant", checked),
    ]
    assert standalone_question("and where?", talk) == "Where was the Harwick Choir founded?"
    assert standalone_question("go on", talk) == "Go on (context: Who founded the Harwick Choir?)"
