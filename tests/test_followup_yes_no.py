"""qa23: a yes/no follow-up ('is that before 2022?', 'was it more than the excess?', 'did he agree?') quoted
the sentence that settles it under 'From the documents:' and never said yes or no. Now the first words say
so where the quotes settle it (a date, a figure, a negation: `verdict.verdict`), and nothing is said where
they do not."""

from __future__ import annotations

import pytest

from raptor_engine.query.verdict import CHECKS_LAST_ANSWER, verdict
from tests.followup_documents import TEXTS
from tests.test_followup_other_document import conversation
from tests.unhurried import engine_with

COVER = "Cover runs from 1 April 2021 to 31 March 2022 and renews each year unless either side cancels it."
SPRING = "The spring term runs from 6 January 2025 to 4 April 2025, with half term from 17 February to 21 February."
TRIP = "A residential trip to the Forest of Dean runs from 9 June to 11 June 2025 and costs 165 pounds."
PAID = "The claim was for 6,300 pounds and Greyfriars Mutual paid 5,800 pounds after deducting the 500 pound excess."


@pytest.mark.parametrize(
    ("asked", "last_question", "last_quote", "line"),
    [
        ("is that before 2022?", "When does cover end?", COVER, "From the documents: no, 31 March 2022 is not before 2022."),
        ("was that after 2020?", "When does cover start?", COVER, "From the documents: yes, 1 April 2021 is after 2020."),
        ("is that before 10 January?", "When does the spring term start?", SPRING,
         "From the documents: yes, 6 January 2025 is before 10 January."),
        ("and is that in 2025?", "When does the spring term end?", SPRING, "From the documents: yes, 4 April 2025 is in 2025."),
        ("is that after March?", "When is the residential trip?", TRIP,
         "From the documents: yes, 9 June to 11 June 2025 is after March."),
        ("was it more than the excess?", "How much did Greyfriars pay for the burst pipe?", PAID,
         "From the documents: yes (5,800 pounds, against 500 pound)."),
        ("was that less than 6,000 pounds?", "How much did Greyfriars pay for the burst pipe?", PAID,
         "From the documents: yes (5,800 pounds, against 6,000 pounds)."),
        ("was that more than 20?", "How many members attended?", "Fourteen members attended.",
         "From the documents: no (fourteen members, against 20)."),
        ("is it over 500 pounds?", "What is the subsidence excess?", "The excess for subsidence is 1,000 pounds.",
         "From the documents: yes (1,000 pounds, against 500 pounds)."),
        ("was it more than 1,000 pounds?", "What is the subsidence excess?", "The excess for subsidence is 1,000 pounds.",
         "From the documents: no, the same (1,000 pounds)."),
    ],
)
def test_a_date_or_a_figure_the_last_answer_gave_settles_the_check(asked, last_question, last_quote, line):
    assert verdict(asked, asked, ["Something else."], last_question, [last_quote]) == line


@pytest.mark.parametrize("opening", ["ok, ", "okay so ", "then ", "so, ", "and "])
@pytest.mark.parametrize(
    ("asked", "last_question", "last_quote", "line"),
    [
        ("is that before 2022?", "When does cover end?", COVER, "From the documents: no, 31 March 2022 is not before 2022."),
        ("is it over 500 pounds?", "What is the subsidence excess?", "The excess for subsidence is 1,000 pounds.",
         "From the documents: yes (1,000 pounds, against 500 pounds)."),
        ("do they end before 2022?", "When does cover end?", COVER, "From the documents: no, 31 March 2022 is not before 2022."),
        ("have they ended before 2022?", "When does cover end?", COVER,
         "From the documents: no, 31 March 2022 is not before 2022."),
    ],
)
def test_a_check_opening_with_ok_or_then_or_asking_with_do_is_a_check_too(opening, asked, last_question, last_quote, line):
    """review25: 'ok, is that before 2022?' was a yes/no question (`_YES_NO` opens with 'ok' and 'then') but no
    check of the last answer (`CHECKS_LAST_ANSWER` did not, nor 'do' or 'have'): no yes or no at all."""
    typed = opening + asked
    assert CHECKS_LAST_ANSWER.match(typed)
    assert verdict(typed, typed, ["Something else."], last_question, [last_quote]) == line


@pytest.mark.parametrize(
    ("asked", "quote", "line"),
    [
        ("is it more than 500 pounds?", "The excess for subsidence is £1,000.", "yes (£1,000, against 500 pounds)"),
        ("is it over £500?", "The excess for subsidence is 1,000 pounds.", "yes (1,000 pounds, against £500)"),
        ("is it less than $500?", "The fee is 1,000 dollars.", "no (1,000 dollars, against $500)"),
        ("is it more than €500?", "The fee is 400 euros.", "no (400 euros, against €500)"),
        ("is it more than 50 per cent?", "The share is 40%.", "no (40%, against 50 per cent)"),
        ("is it more than 30%?", "The share is 40 percent.", "yes (40 percent, against 30%)"),
    ],
)
def test_a_currency_sign_and_its_word_are_one_unit(asked, quote, line):
    """review25: '£1,000' against '500 pounds' said neither yes nor no (units 'pound' and '£' differed)."""
    assert verdict(asked, asked, ["Something else."], "What is it?", [quote]) == f"From the documents: {line}."


@pytest.mark.parametrize(
    ("core", "quote", "line"),
    [
        ("Did Colin Ashworth agree?", "Colin Ashworth did not agree with the objection and abstained.", "no"),
        ("Was the loft heated?", "Martin Cole said the pipe had frozen because the loft was unheated.", "no"),
        ("Is the multiplication tables check taken in Year 5?",
         "The multiplication tables check is not taken in Year 5; it was taken in Year 4.", "no"),
        ("Did the council agree to repair the pavement?",
         "The association objected, and the council agreed to repair the pavement instead.", "yes"),
        ("Has the society ever met in Leeds?", "The society has never met in Leeds.", "no"),
    ],
)
def test_a_statement_or_its_negation_settles_the_check(core, quote, line):
    assert verdict(core.lower(), core, [quote]) == f"From the documents: {line}, as the first passage says:"


@pytest.mark.parametrize(
    ("asked", "core", "quote", "last_question", "last_quote"),
    [
        # 'she' is Nadia Okafor, but the one who agreed is the ombudsman
        ("did she agree?", "Did Nadia Okafor agree?", "She complained to the ombudsman, who agreed with the insurer.", "", ""),
        ("is flood damage covered for sheds?", "Is flood damage covered for sheds?",
         "Flood damage is excluded for outbuildings such as sheds and greenhouses.", "", ""),  # 'excluded' is no 'not'
        ("is that in the summer term?", "Is that in the summer term?", "The summer term runs from 22 April 2025.", "", ""),
        ("was that before the war?", "Was that before the war?", "x", "When did he leave?", "He left in 1903."),
        ("is that before 10 June?", "Is that before 10 June?", "x", "When is the residential trip?", TRIP),  # 9-11 June
        ("is that before 2022?", "Is that before 2022?", "x", "When does cover run?", COVER),  # start or end?
        ("is it more than 5 metres?", "Is it more than 5 metres?", "x", "How much is the excess?", "It is 250 pounds."),
        ("what was it?", "What was it?", "x", "How much is the excess?", "It is 250 pounds."),
    ],
)
def test_no_yes_or_no_where_the_quotes_do_not_settle_it(asked, core, quote, last_question, last_quote):
    assert verdict(asked, core, [quote], last_question, [last_quote] if last_quote else []) is None


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = engine_with(tmp_path_factory.mktemp("yes_no"), embedder, TEXTS)
    try:
        yield engine
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("questions", "lead"),
    [
        (["When does cover end?", "is that before 2022?"], "From the documents: no, 31 March 2022 is not before 2022."),
        (["When does the spring term start?", "is that before 10 January?"],
         "From the documents: yes, 6 January 2025 is before 10 January."),
        (["How much did Greyfriars pay for the burst pipe?", "was it more than the excess?"],
         "From the documents: yes (5,800 pounds, against 500 pound)."),
        (["How many members attended?", "was that more than 20?"], "From the documents: no (fourteen members, against 20)."),
        (["When does cover end?", "ok, is that before 2022?"], "From the documents: no, 31 March 2022 is not before 2022."),
        (["How many members attended?", "so, was that more than 20?"],
         "From the documents: no (fourteen members, against 20)."),
        (["What did the council propose in Q3 2023?", "did Colin Ashworth agree?"],
         "From the documents: no, as the first passage says:"),
    ],
)
async def test_a_check_through_the_engine_opens_with_yes_or_no(engine, questions, lead):
    answer = await conversation(engine, questions)
    assert answer.text.split("\n")[0] == lead, answer.text
    assert answer.answered


async def test_a_check_the_quotes_do_not_settle_keeps_its_lead(engine):
    answer = await conversation(engine, ["When is the residential trip?", "is that in the summer term?"])
    assert not answer.text.startswith(("From the documents: yes", "From the documents: no")), answer.text


WAGES = "The largest cost was dredging, followed by staff wages of £52,000 for the harbourmaster and one assistant."


@pytest.mark.parametrize(
    ("core", "quote", "line"),
    [
        # the £52,000 is the staff wages', which the question does not ask about: no yes or no from it
        ("Was the dredging more than £50,000?", WAGES, None),
        ("Was the dredging more than £50,000?", "The dredging was done at a cost of £61,500.", "yes (£61,500, against £50,000)"),
        ("Was the dredging more than £50,000?", "The dredging removed 4,800 cubic metres and cost £61,500.",
         "yes (£61,500, against £50,000)"),
        ("Was the grant more than £50,000?", "Of the cost, the county gave a grant of £40,000.", "no (£40,000, against £50,000)"),
        ("Were the staff wages more than £50,000?", WAGES, "yes (£52,000, against £50,000)"),
    ],
)
def test_a_figure_the_sentence_gives_another_thing_settles_no_check(core, quote, line):
    """lead27: 'Was the dredging more than £50,000?' was answered 'yes (£52,000, against £50,000)' from a
    sentence whose £52,000 is the staff wages' ('followed by staff wages of £52,000'): the right yes for the
    wrong reason. A figure bound to a thing by 'X of' is X's, unless X is a measure ('a cost of')."""
    said = verdict(core.lower(), core, [quote])
    assert said == (None if line is None else f"From the documents: {line}.")
