"""qa27: a yes/no question whose asked property no quote holds ('Is the ferry free?' over a page saying only
'The ferry leaves at seven.') led 'From the documents:' over a quote that does not say. Now it leads that
the documents do not say whether the ferry is free, then the nearest passages; a quote that does hold the
property, saying yes or no, keeps the answer's own lead; a year a quote's 'this year' stands for counts."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from raptor_engine.query.followup import unanswered_lead
from raptor_engine.query.verdict import NOT_SAID, settled, unsaid
from tests.test_followup_other_document import conversation
from tests.unhurried import engine_with

FERRY_PAGE = (
    '<html><head><style>[data-off]{display:none} .tip::before{content:"Note: "}</style></head><body>'
    '<p>The ferry leaves at seven.</p><p data-off>The ferry is free.</p><p class="tip">Buy tickets on board.</p>'
    "</body></html>"
)


@pytest.mark.parametrize(
    ("question", "quotes", "what"),
    [
        ("Is the ferry free?", ["The ferry leaves at seven."], "the ferry is free"),
        ("Does the ferry take cars?", ["The ferry leaves at seven."], "the ferry takes cars"),
        ("Can I pay by card?", ["Note: Buy tickets on board."], "you can pay by card"),
        (
            "Is the museum open on Mondays?",
            ["The boathouse became a museum in 1975."],
            "the museum is open on Mondays",
        ),
        # a weekday, a month or a year is asked in so many words: 'open' alone does not say
        (
            "Is the museum open on Mondays?",
            ["The museum is open from Tuesday to Sunday."],
            "the museum is open on Mondays",
        ),
        ("Are dogs allowed on the ferry?", ["The ferry leaves at seven."], "dogs are allowed on the ferry"),
        (
            "Did the Kernow serve the station?",
            ["The Kernow arrived in 1931."],
            "the Kernow served the station",
        ),
        ("Did the keeper take the boat?", ["The keeper lived in the tower."], "the keeper took the boat"),
        ("Does the night ferry take cars?", ["The ferry leaves at seven."], "the night ferry takes cars"),
        (
            "Was Jory Pascoe the last coxswain?",
            ["The boathouse became a museum."],
            "Jory Pascoe was the last coxswain",
        ),
        ("Is the flat furnished?", ["The tenants must not sublet the flat."], "the flat is furnished"),
        ("Does the station still operate?", ["The station closed in 1968."], "the station still operates"),
        (
            "Does the notice mention the KT-210?",
            ["The KT-200 kettle is recalled."],
            "the notice mentions the KT-210",
        ),
        ("Are dogs allowed on Sundays?", ["Dogs are welcome on the beach."], "dogs are allowed on Sundays"),
        (
            "Was the south channel dredged in 2025?",
            ["The south channel was dredged this year."],
            "the south channel was dredged in 2025",
        ),  # a document of no known year: 'this year' is not 2025
        (
            "Is the ferry free?",
            ["Parking by the ferry is free.", "The ferry leaves at seven."],
            None,
        ),  # one holds both
    ],
)
def test_a_yes_no_question_no_quote_holds_says_the_documents_do_not_say(question, quotes, what):
    line = unsaid(question, quotes)
    if what is None:
        assert line is None
    else:
        assert line == NOT_SAID.format(what=what)
        assert unanswered_lead(f"{line}\n- \u201c{quotes[0]}\u201d [1]")  # 'Closest passages', answered False


@pytest.mark.parametrize(
    ("question", "quote"),
    [
        ("Is the ferry free?", "The ferry is free."),
        ("Is the ferry free?", "A ticket for the ferry costs 4 pounds."),  # its opposite: a no
        ("Is the museum open on Mondays?", "The museum is closed on Mondays."),
        ("Does the ferry take cars?", "The ferry carries up to twenty cars."),  # 'take' says little
        ("Can I bring my dog?", "Dogs are allowed in the garden on a lead."),
        ("Is the deposit refundable?", "The deposit of 20 pounds is non-refundable."),
        ("Is the loft heated?", "The loft is unheated."),
        (
            "Did the Grace Pellow capsize?",
            "In 1907 the Grace Pellow capsized while going to the schooner Alert.",
        ),
        ("Was the station founded in 1866?", "The Penmarrow lifeboat station was founded in 1866."),
        ("Do I buy tickets on board?", "Note: Buy tickets on board."),
        # what is allowed or counted in is asked, not the place (the outside pass's tenancy and recall notices)
        ("Are pets allowed?", "Pets are not permitted without the landlord's written consent."),
        ("Is smoking allowed in the flat?", "They will not smoke inside the property."),
        (
            "Is the graphite grey model included?",
            "The KT-200 kettle, sold in white and in graphite grey, is recalled.",
        ),
        ("Can I get a replacement instead?", "You can choose a full refund or a free replacement kettle."),
        ("Did anyone drown?", "Nine sailors drowned within sight of the harbour wall that night."),
        # the document and its saying are not asked of
        ("Does the report mention dredging?", "The south channel was dredged this year."),
        ("Does the agreement say anything about pets?", "Pets are not permitted without consent."),
        # three words asked, two held: the quote answers as far as a careful reader needs
        ("Did the council approve the plan?", "The council approved it in March 2024."),
    ],
)
def test_a_quote_that_holds_the_asked_property_keeps_the_answer(question, quote):
    assert unsaid(question, [quote]) is None


@pytest.mark.parametrize(
    "question",
    [
        "When does the ferry leave?",  # not a yes/no question
        "Is it free?",  # what 'it' is, the quote does not say
        "Is that before 2022?",
    ],
)
def test_other_questions_are_left_alone(question):
    assert unsaid(question, ["The ferry leaves at seven."]) is None


def test_this_year_is_the_year_of_its_document():
    quote = "The south channel was dredged this year, removing 12,000 tonnes of silt."
    assert unsaid("Was the south channel dredged in 2025?", [quote], {quote: 2025}) is None
    assert unsaid("Was the south channel dredged in 2024?", [quote], {quote: 2025}) is not None
    assert unsaid("Was the south channel dredged in 2024?", [quote.replace("this", "last")], {
        quote.replace("this", "last"): 2025}) is None  # fmt: skip


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    report = (
        "# Harbour Master's Annual Report 2025\n\n## Channels\n\nThe south channel was dredged this year, removing "
        "12,000 tonnes of silt. The north channel was surveyed in May and found clear.\n\n## Moorings\n\n"
        "The harbour let 140 moorings, up from 128 the year before.\n"
    )
    texts = {"ferry.html": FERRY_PAGE, "report.md": report}
    with contextlib.closing(engine_with(tmp_path_factory.mktemp("unsaid"), embedder, texts)) as engine:
        yield engine


@pytest.mark.parametrize(
    ("question", "lead"),
    [
        ("Is the ferry free?", NOT_SAID.format(what="the ferry is free")),
        ("Does the ferry take cars?", NOT_SAID.format(what="the ferry takes cars")),
        ("Is the ferry free of charge?", NOT_SAID.format(what="the ferry is free of charge")),
        ("When does the ferry leave?", "From the documents:"),
        ("Do I buy tickets on board?", "From the documents: yes, as the first passage says:"),
        ("Was the south channel dredged in 2025?", "From the documents:"),  # the report's 'this year'
    ],
)
def test_the_lead_through_the_engine(engine, question, lead):
    answer = asyncio.run(engine.ask("harbour", question))
    first, _, rest = answer.text.partition("\n")
    assert first == lead, answer.text
    assert rest.startswith("- \u201c")
    assert answer.answered is (not lead.startswith("The documents do not say"))
    assert "The ferry is free" not in answer.text  # the hidden paragraph is never read


async def test_a_follow_up_whose_it_the_rewrite_names_is_read_as_the_question_it_stands_for(engine):
    """'Is it free?' after 'When does the ferry leave?' is 'Is the ferry free?': no check of the last answer."""
    answer = await conversation(engine, ["When does the ferry leave?", "Is it free?"])
    assert answer.text.startswith(NOT_SAID.format(what="the ferry is free")), answer.text
    assert not answer.answered


@pytest.mark.parametrize(
    ("question", "quote"),
    [
        ("Do juniors pay?", "Juniors under 18 still row free."),
        ("Do children pay to enter?", "Entry is free for children."),
        ("Is the museum open on Mondays?", "The museum is closed on Mondays."),
        ("Are dogs banned on the beach?", "Dogs are allowed on the beach all year."),
    ],
)
def test_a_property_said_by_its_opposite_is_said(question, quote):
    """'Juniors row free' says whether juniors pay (no): the opposite word counts either way round."""
    assert unsaid(question, [quote]) is None


@pytest.mark.parametrize(
    ("question", "quote"),
    [
        (
            "Was the Curlew sold?",
            "The committee proposed selling the Curlew, whose hull was cracked in the storm.",
        ),
        ("Was the bridge demolished?", "The council planned to demolish the bridge in 1990."),
        ("Did the club buy a new boat?", "Members discussed buying a new boat at the meeting."),
        ("Was the road closed?", "The road was due to be closed in May."),
    ],
)
def test_a_plan_or_proposal_is_not_a_yes(question, quote):
    """A clause that proposes, plans or discusses the asked act does not say it happened."""
    found = settled(question, question, [quote], follow_up=False)
    assert found is None or not found.line.startswith("From the documents: yes")


def test_a_plan_asked_about_is_still_answered():
    """'Was the sale proposed?' asks about the proposal itself: the proposing clause says yes."""
    found = settled(
        "Was the sale of the Curlew proposed?",
        "Was the sale of the Curlew proposed?",
        ["The committee proposed the sale of the Curlew."],
        follow_up=False,
    )
    assert found is not None and found.line.startswith("From the documents: yes")


@pytest.mark.parametrize(
    "question",
    [
        "can you please tell me who chaired the meeting?",
        "hi! could you tell me who chaired the meeting? thanks!",
        "Do you know when the ferry leaves?",
        "Could you explain how the tide gauge works?",
        "Can you say which boat is the oldest?",
    ],
)
def test_a_question_asked_within_a_polite_one_gets_no_unsaid_lead(question):
    """'Can you tell me who chaired the meeting?' asks who, not whether: no 'do not say whether' lead."""
    assert unsaid(question, ["The ferry leaves at seven."]) is None
