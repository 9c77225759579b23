"""qa24: yes or no was said only for follow-ups: a first question 'Did the council approve the plan?', 'Was
the bridge finished before 1900?', 'Is the deposit refundable?' quoted the sentence that settles it under
'From the documents:'. Now a first question opens with yes or no where the quoted sentence settles it (a
date against the one asked about, a figure against a number, a statement or its negation), and says
nothing otherwise; and the sentence that settles a check is always among the quotes shown under it."""

from __future__ import annotations

import asyncio

import pytest

from raptor_engine.engine import _shown_with
from raptor_engine.query.smalltalk import SAID_OF_NOTHING
from raptor_engine.query.verdict import settled
from raptor_engine.types import ContextNode
from tests.followup_documents import TEXTS as QA23_TEXTS
from tests.followup_documents_qa24 import TEXTS
from tests.test_followup_other_document import conversation
from tests.unhurried import engine_with

BUILT = "Work began in 1879 and the bridge was finished in 1884."
FEES = "Fees were not raised in 2024; the committee agreed to keep the adult fee at 180 pounds."
FAIR = "The summer fair on 8 July 2023 raised 1,120 pounds, compared with 860 pounds in 2022. Elaine Moss organised it."


@pytest.mark.parametrize(
    ("question", "quote", "line"),
    [
        ("Was the bridge finished before 1900?", BUILT, "yes, 1884 is before 1900."),
        ("Was the bridge finished before 1880?", BUILT, "no, 1884 is not before 1880."),
        ("Was the summer fair before August 2023?", FAIR, "yes, 8 July 2023 is before August 2023."),  # not '... 2022'
        ("Did the council approve the plan?", "The council approved the plan in March 2024.", "yes, as the first passage says:"),
        ("Did the council approve the plan?", "The council did not approve the plan.", "no, as the first passage says:"),
        ("Is the deposit refundable?", "The deposit of 20 pounds is non-refundable.", "no, as the first passage says:"),
        ("Is there a car park at the clinic?", "There is no car park at the clinic.", "no, as the first passage says:"),
        ("Is the deposit more than 10 pounds?", "The deposit of 20 pounds is non-refundable.", "yes (20 pounds, against 10 pounds)."),
        ("Did more than 20 members attend?", "Fourteen members attended.", "no (fourteen members, against 20)."),
        ("Were there more than 25 people on the waiting list?", "There were 31 people on the waiting list in March 2024.",
         "yes (31 people, against 25 people)."),
        # the year is right and the event did not happen: the statement's no, not '2024 is in 2024'
        ("Were fees raised in 2024?", FEES, "no, as the first passage says:"),
        ("Was the roof finished before November 2024?", "The roof was not finished until October 2024.",
         "yes, October 2024 is before November 2024."),  # a 'not' before 'until' says when, not whether
        ("Was the roof finished before November 2024?", "The roof wasn't finished till October 2024.",
         "yes, October 2024 is before November 2024."),
    ],
)
def test_a_first_question_the_quote_settles_opens_with_yes_or_no(question, quote, line):
    found = settled(question, question, [quote], follow_up=False)
    assert found is not None and found.line == f"From the documents: {line}"
    assert found.quote in quote  # the sentence that settles it


@pytest.mark.parametrize(
    ("question", "quote"),
    [
        ("Is that before 2022?", "Cover runs from 1 April 2021 to 31 March 2022."),  # 'that' is nothing yet
        ("Is the deposit refundable?", "The deposit is refundable if you cancel 30 days before."),  # on a condition
        ("Is flood damage covered for sheds?", "Flood damage is excluded for outbuildings such as sheds."),
        ("Can I bring my dog?", "Dogs are allowed in the garden on a lead but not on the plots."),
        ("Did the council agree to fell the trees?", "The council agreed not to fell them."),  # 'them'
        ("Was the trip before 10 June?", "A trip runs from 9 June to 11 June 2025."),  # the span straddles it
        ("Is the library open on Sundays?", "The library is open six days a week and closed on Sundays."),  # 'closed'
        ("Is the new dam higher than the old one?", "The new dam was twelve metres higher than the earth bank."),  # 'one'
        ("Is the Alpen Mini lighter than the Brisk 500?", "The Brisk 500 holds half a litre and weighs 420 grams."),
        ("Did more than 200 members vote?", "No more than 150 members voted."),  # a bound, not a count
        ("Did the club sell more than 40 tickets?", "The club did not sell 55 tickets, as it had hoped."),
    ],
)
def test_a_first_question_the_quote_does_not_settle_says_neither(question, quote):
    assert settled(question, question, [quote], follow_up=False) is None


@pytest.mark.parametrize(
    ("check", "last_question", "quote"),
    [
        ("was that in 2024?", "When were fees raised?", FEES),
        ("was that more than 100 pounds?", "What was the fee raised to?", "The fee was not raised to 200 pounds."),
    ],
)
def test_a_check_of_an_event_the_quote_denies_says_neither(check, last_question, quote):
    assert settled(check, check, [quote], last_question=last_question, last_quotes=[quote]) is None


def _node(text: str, layer: int = 0) -> ContextNode:
    return ContextNode(node_id=1, layer=layer, document="a.md", score=0.5, text=text, tokens=10, leaf_count=1)


def test_the_sentence_that_settles_a_check_is_shown_under_its_line():
    shown = "- \u201cThe annual premium for 2021-22 was 412 pounds.\u201d [2]"
    nodes = [_node("A summary: Cover runs from 1 April 2021 to 31 March 2022.", layer=1),
             _node("The annual premium for 2021-22 was 412 pounds."),
             _node("Cover runs from 1 April 2021 to 31 March 2022. It renews each year.")]
    sentence = "Cover runs from 1 April 2021 to 31 March 2022."
    assert _shown_with(shown, sentence, nodes) == f"- \u201c{sentence}\u201d [3]\n{shown}"  # the leaf, not the summary
    already = f"- \u201c{sentence} It renews each year.\u201d [3]"
    assert _shown_with(already, sentence, nodes) == already
    assert _shown_with(shown, sentence, nodes[1:2]) is None  # not in the context: no yes or no


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = engine_with(tmp_path_factory.mktemp("yes_no_first"), embedder, {**QA23_TEXTS, **TEXTS})
    try:
        yield engine
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("question", "lead"),
    [
        ("Is the deposit refundable?", "From the documents: no, as the first passage says:"),
        ("Did more than 20 members attend?", "From the documents: no (fourteen members, against 20)."),
        # no passage holds 2020 or 2015 (the answer found only the closest passages), but the first settles it
        ("Was the garden opened before 2020?", "From the documents: yes, 12 May 2016 is before 2020."),
        ("Was the garden opened before 2015?", "From the documents: no, 12 May 2016 is not before 2015."),
        ("Did Ravi Menon become lead maintainer before 2023?", "From the documents: yes, 2022 is before 2023."),
        ("Are bonfires allowed?", "From the documents: no, as the first passage says:"),
        ("Was the rounding error reported by Amina Diallo?", "From the documents: yes, as the first passage says:"),
    ],
)
async def test_a_first_yes_no_question_through_the_engine(engine, question, lead):
    answer = await engine.ask("harbour", question)
    first, _, rest = answer.text.partition("\n")
    assert first == lead, answer.text
    assert answer.answered and rest.startswith("- \u201c")


@pytest.mark.parametrize(
    "question",
    [
        "Is flood damage covered for sheds?",
        "Is that before 2022?",
        "Is the lease longer than 2030?",  # the lease runs until 2031: a length is no date
        "Was the garden opened before the war?",
    ],
)
async def test_a_first_question_the_quotes_do_not_settle_keeps_its_lead(engine, question):
    answer = await engine.ask("harbour", question)
    assert not answer.text.startswith(("From the documents: yes", "From the documents: no")), answer.text


async def test_who_said_so_of_a_quote_naming_no_one_has_sources_that_agree(engine):
    answer = await conversation(engine, ["Are bonfires allowed?", "who said so?"])
    assert answer.text.startswith("The passage the last answer quoted first names no one who said it"), answer.text
    assert answer.answered and len(answer.citations) == 1  # 'Sources', not 'Closest passages'
    assert answer.searched_as == ""  # not 'Searched as: Are bonfires allowed?'


async def test_who_said_so_after_an_answer_that_found_nothing_names_no_passage(engine):
    answer = await conversation(engine, ["Who was appointed keeper of the lighthouse?", "who said so?"])
    assert answer.text == SAID_OF_NOTHING, answer.text  # not the first of the closest passages
    assert not answer.answered and not answer.citations
    assert not answer.has_context  # no 'Closest passages' heading over nothing


def test_a_denied_event_in_the_asked_year_is_a_no_through_the_engine(tmp_path, embedder):
    report = {
        "club.md": "# Riverside Rowing Club: annual report 2024\n\n## Membership\n"
        "The club had 212 members at the end of 2024, up from 187 a year earlier. " + FEES + "\n\n"
        "## The boathouse\nThe new boathouse roof was finished in October 2024, two months late.\n"
    }
    engine = engine_with(tmp_path, embedder, report)
    try:
        answer = asyncio.run(engine.ask("harbour", "Were fees raised in 2024?"))
    finally:
        engine.close()
    assert answer.text.startswith("From the documents: no, as the first passage says:\n- \u201cFees were not raised"), answer.text


def test_a_figure_check_reads_the_quote_of_the_last_answer_that_gives_the_asked_figure():
    """'was that more than the grant?' after 'How much did it cost?' whose first quote was about a fee: the
    figure is the cost in the second quote, not the first quote's fee (which said 'no (£180, ...)')."""
    last = [FEES, "It cost 48,500 pounds, which was more than the 40,000 pound grant from the county council."]
    found = settled("was that more than the grant?", "was that more than the grant?", last[1:],
                    last_question="How much did it cost?", last_quotes=last)  # fmt: skip
    assert found is not None and found.line == "From the documents: yes (48,500 pounds, against 40,000 pound)."
    assert found.quote == last[1]
