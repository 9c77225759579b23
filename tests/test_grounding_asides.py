"""Whether the quotes answer, for a question with words that ask nothing: the document it names
('what does manual.md say about the tines?'), filler and thanks, a pasted paragraph before it. Each was
answered with the right sentence under 'Nothing in the documents clearly answers this'; a question the
documents do not answer, phrased the same ways, must still say so (query/asked.py)."""

from __future__ import annotations

import asyncio

import pytest

from raptor_engine.engine import Engine
from raptor_engine.query.answer import FOUND, QUOTE
from raptor_engine.types import Turn
from tests.unhurried import unhurried_settings

DOCUMENTS = {
    "minutes.md": """# Minutes of the allotment society, 3 May 2026

Present: Joan Petrie (chair), Amit Shah (treasurer), eleven members.

The society agreed to replace the shed on plot 14, which the storm of February flattened. The new shed
will be built by the members on 20 June, with timber paid for from the repair fund.

Amit Shah reported that the repair fund holds 812 pounds. The water troughs will be cleaned in July.
""",
    "manual.md": """# The Hartwell rotavator manual

Before starting the rotavator, check the oil level with the dipstick under the red cap. Use SAE 30 oil.
To start it, set the choke, pull the cord firmly twice and open the throttle halfway.
Clean the tines after every use and store the machine in a dry shed.
""",
    "camera_handbook.md": """# Field camera handbook

The lens is cleaned every Friday with a dry microfibre cloth, never with water.
Batteries are charged overnight and replaced after three hundred cycles.
""",
    "report_2021.md": """# Annual report 2021

Revenue for the year was 4.2 million pounds, up from 3.6 million the year before.
The company opened two new depots, in Leeds and in Bristol.
""",
}

PARAGRAPH = (
    "We bought a second-hand rotavator last spring and have used it on our plot most weekends since, mostly "
    "on the heavy clay beds near the gate, where the couch grass is worst. My neighbour keeps telling me that "
    "machines like this fail early when they are neglected, and I would rather not pay for a new one. "
)


@pytest.fixture(scope="module")
def allotment(tmp_path_factory, embedder):
    """One knowledge base holding the four documents."""
    engine = Engine(unhurried_settings(data_dir=tmp_path_factory.mktemp("asides") / "data"), embedder=embedder)
    for name, text in DOCUMENTS.items():
        asyncio.run(engine.ingest("kb", name, text.encode()))
    try:
        yield engine
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("question", "quoted"),
    [
        # the document named
        ("what does manual.md say about the tines?", "Clean the tines"),
        ("according to minutes.md, who chaired the meeting?", "Joan Petrie (chair)"),
        ("in report_2021.md, what was revenue?", "4.2 million"),
        ("according to the handbook, how often is the lens cleaned?", "every Friday"),
        ("what does the camera handbook say about cleaning the lens?", "every Friday"),
        # filler, politeness, a greeting, thanks
        ("can you please tell me who chaired the meeting?", "Joan Petrie (chair)"),
        ("hi! could you tell me who chaired the meeting? thanks!", "Joan Petrie (chair)"),
        ("I was wondering if you could tell me when the water troughs will be cleaned, thanks so much!", "July"),
        ("quick question: how often is the lens cleaned?", "every Friday"),
        # an inflection of the quote's word
        ("when is the troughs' cleaning?", "July"),
        # a pasted paragraph, then the question
        (PARAGRAPH * 3 + "How often should the tines be cleaned?", "Clean the tines"),
    ],
)
async def test_a_question_with_words_that_ask_nothing_is_answered_when_the_quote_answers(allotment, question, quoted):
    answer = await allotment.ask("kb", question)
    assert quoted in QUOTE.findall(answer.text)[0], answer.text
    assert answer.text.startswith(FOUND) and answer.answered, answer.text


@pytest.mark.parametrize(
    "question",
    [
        "what does manual.md say about the warranty?",  # a document that exists, asked what it does not say
        "according to manual.md, what is the top speed of the rotavator?",
        "according to the handbook, what is the camera's weight?",
        "can you please tell me who the secretary of the society is? thanks!",
        "hi! quick question: what does the manual say about the carburettor?",
        "in report_2021.md, how many employees did the company have?",
        "what does minutes.md say about cleaning the tines?",  # the manual says it, not the minutes
        PARAGRAPH * 3 + "Who is the secretary of the society?",
    ],
)
async def test_a_question_the_documents_do_not_answer_still_says_so_phrased_the_same_ways(allotment, question):
    answer = await allotment.ask("kb", question)
    assert not answer.text.startswith(FOUND) and not answer.answered, answer.text


async def test_a_comparison_with_a_year_no_document_has_still_says_so(allotment):
    """'was that more than in 2017?' after the 2021 revenue: searched as the 2017 revenue beside the 2021
    question, it quotes the 2021 figure, which is not the one compared with."""
    history: list[Turn] = []
    for question in ["What was revenue in 2021?", "was that more than in 2017?"]:
        answer = await allotment.ask("kb", question, history=list(history))
        history += [Turn("user", question), Turn("assistant", answer.text)]
    assert "2017" in answer.query
    assert not answer.text.startswith(FOUND) and not answer.answered, answer.text
