"""Answers said in the form their question asks for: a purpose straight after the asked verb for 'why was X
built?', where the money came from for 'how did X pay for Y?', a count of the very thing 'how many X?'
counts (not a number of something else), a cause of X for 'what caused X?' (not a 'because' of another
thing), the asked end said of X for 'when did X stop doing Y / close / die?'. Each rule on its own sentences, then
on contexts whose first quote it must change (texts unlike the probe set's)."""

from __future__ import annotations

import pytest

from raptor_engine.query.answer import (
    NUMBER_KIND,
    PRICE_ONLY_PENALTY,
    REASON_FORM_BONUS,
    REASON_KIND,
    _counts_only_others,
    _event_bonus,
    _event_said_of_the_asked,
    _explains_another,
    _means_score,
    _names_what_caused_the_asked,
    _reason_asked,
    _states_the_asked_reason,
    holds_asked_kind,
    stated_form_score,
)
from tests.test_answer_ranking import answer_over, first_quote


@pytest.mark.parametrize(
    ("question", "sentence", "stated"),
    [
        ("Why was the college founded?", "The college was founded in 1868 to train village teachers.", True),
        (
            "Why were the sluice gates installed?",
            "The gates were installed so that the lane stays dry.",
            True,
        ),
        (
            "Why did the council build the sea wall?",
            "The council built it in order to shelter the cottages.",
            True,
        ),
        ("Why was the chapel enlarged?", "It was enlarged so as to seat the quarrymen's families.", True),
        (
            "Why were the almshouses founded?",
            "They were founded in 1620 for the relief of poor widows.",
            True,
        ),
        ("Why was the barn built?", "The barn was built for storing the tithe grain.", True),
        # the asked verb without a purpose after it, or a reason clause that may only say when
        ("Why was the chapel built?", "It was built of local granite in 1790.", False),
        ("Why was the chapel built?", "The chapel was built in 1790, when the village grew.", False),
        ("Why was the chapel built?", "The vicar hoped to see a school built to the same plan.", False),
        # a purpose after another verb
        ("Why was the chapel built?", "The mayor came to the opening to read a letter.", False),
        # ... past another clause opening between them (held-out NarrativeQA: "Why did the principal commit
        # fraud?" led with a suicide "after Harry attempts to reason with him")
        ("Why did Malcolm commit fraud?", "Malcolm commits suicide after Harry attempts to reason with him.", False),
        ("Why was the wall built?", "The wall was built and then painted to match the gate.", False),
        ("Why was the barn built?", "The barn was built by the monks so that grain could be stored.", True),
        ("Why did the library close?", "On Sundays the library closed", False),  # the verb ends the sentence
        ("Why did the library close?", "The library closed", False),
    ],
)
def test_a_purpose_straight_after_the_asked_verb_is_stated_in_so_many_words(question, sentence, stated):
    assert _states_the_asked_reason(question, sentence) is stated
    assert stated_form_score(question, sentence) == (REASON_FORM_BONUS if stated else 0.0)


@pytest.mark.parametrize(
    ("question", "sentence", "score"),
    [
        (
            "How did the club pay for the boathouse?",
            "It cost 90,000 pounds, paid for by a lottery grant.",
            REASON_FORM_BONUS,
        ),
        (
            "How was the new roof funded?",
            "Most of it was financed through a bequest from a churchwarden.",
            REASON_FORM_BONUS,
        ),
        ("How could the family afford the farm?", "They took out a mortgage on the mill.", REASON_FORM_BONUS),
        (
            "How did the town raise the money?",
            "Most of it was raised by a public subscription.",
            REASON_FORM_BONUS,
        ),
        # the price, or what was bought, is not where the money came from
        (
            "How did the club pay for the boathouse?",
            "The new boathouse cost \u00a390,000.",
            -PRICE_ONLY_PENALTY,
        ),
        (
            "How did the club pay for the boathouse?",
            "The club bought the site in 1990 for 5,000 pounds.",
            -PRICE_ONLY_PENALTY,
        ),
        ("How did the club pay for the boathouse?", "The boathouse was finished in 1990.", 0.0),
        # another 'how' question: raising children is not raising money
        ("How did she raise her children?", "They were raised by her sister in Leeds.", 0.0),
        ("How did the crew train for the race?", "Their coach was paid for by a grant.", 0.0),
        ("How did the crew train for the race?", "The new boat cost 5,000 pounds.", 0.0),
    ],
)
def test_how_did_x_pay_is_answered_by_where_the_money_came_from_not_by_a_price(question, sentence, score):
    assert _means_score(question, sentence) == score
    assert stated_form_score(question, sentence) == score


@pytest.mark.parametrize(
    ("question", "kind", "sentence", "another"),
    [
        ("How many men were lost?", NUMBER_KIND, "He came with his wife and their four children.", True),
        ("How many men were lost?", NUMBER_KIND, "The walk took three hours and two ferries.", True),
        ("How many men were lost?", NUMBER_KIND, "The register records twelve men lost at sea.", False),
        (
            "How many men were lost?",
            NUMBER_KIND,
            "He had two sons, and eleven men drowned that winter.",
            False,
        ),
        # a number that may count the asked thing, said without its noun
        ("How many men were lost?", NUMBER_KIND, "Twelve died when the boat overturned.", False),
        ("How many men were lost?", NUMBER_KIND, "Seven of the crew never came home.", False),
        # a count of people or things may name them by any noun
        ("How many people died?", NUMBER_KIND, "Thirty passengers and crew were drowned.", False),
        # 'how much' measures: a unit is what it asks for
        ("How much water does the tank hold?", NUMBER_KIND, "It holds 40 litres.", False),
        (
            "What caused the flood?",
            REASON_KIND,
            "The bridge was rebuilt in stone because timber cost too much.",
            True,
        ),
        ("What caused the flood?", REASON_KIND, "The flood came because the sluice was left open.", False),
        ("What caused the flood?", REASON_KIND, "A blocked culvert caused most of the damage.", False),
        ("What was the cause of the flood?", REASON_KIND, "The mill closed because its owner died.", True),
        # no cause question, or no X to look for
        (
            "Why did the bridge close?",
            REASON_KIND,
            "The bridge was rebuilt because timber cost too much.",
            False,
        ),
        ("What caused it?", REASON_KIND, "The bridge was rebuilt because timber cost too much.", False),
    ],
)
def test_a_number_or_a_because_of_something_else_is_not_what_the_question_asks(
    question, kind, sentence, another
):
    """'How many men?' is not answered by "their four children" (`_counts_only_others`), nor 'what caused the
    flood?' by a 'because' of another thing (`_explains_another`)."""
    rule = _counts_only_others if kind == NUMBER_KIND else _explains_another
    assert rule(question, sentence) is another
    assert holds_asked_kind(question, kind, sentence) is not another


@pytest.mark.parametrize(
    ("question", "sentence", "names"),
    [
        ("What caused the outage?", "A maintenance job triggered the outage at nine.", True),
        ("What caused the landslide?", "Weeks of rain started the landslide above the village.", True),
        ("What started the fire?", "A spark from the kiln set the roof alight.", True),
        ("What was the cause of the blaze?", "Someone had ignited a pile of straw by the door.", True),
        ("What caused the flood?", "A culvert gave way and the embankment burst.", True),
        ("What caused the crash?", "The brakes of the lorry failed on the hill.", True),
        # a verb of causing whose object is something else, what X itself did, or a fire's words for another X
        ("What caused the flood?", "The flood burst through the lower town.", False),
        (
            "What caused the fire?",
            "The roof collapsed an hour later.",
            False,
        ),  # a fire is set, not given way to
        ("What caused the outage?", "A maintenance job triggered an alarm at nine.", False),
        ("What caused the fire?", "The fire destroyed the upper floors.", False),
        ("What caused the flood?", "A spark from the kiln set the roof alight.", False),
    ],
)
def test_what_caused_x_is_answered_by_what_did_it(question, sentence, names):
    assert _names_what_caused_the_asked(question, sentence) is names
    assert _states_the_asked_reason(question, sentence) is names


@pytest.mark.parametrize(
    ("question", "asks"),
    [("What started the fire?", "cause"), ("What started the riot?", "cause"), ("What started in 1990?", "")],
)
def test_what_started_x_asks_a_cause_and_what_started_then_does_not(question, asks):
    assert _reason_asked(question) == asks


@pytest.mark.parametrize(
    ("question", "sentence", "ends"),
    [
        ("When did the quarry stop cutting slate?", "The last slate was cut there in 1969.", True),
        ("When did the ferry stop running?", "The last ferry ran in the autumn of 1962.", True),
        (
            "When did the press cease printing?",
            "Printing finally ceased in 1931, when the lease ran out.",
            True,
        ),
        ("When did the cinema close?", "The cinema closed for good one wet Sunday in June.", True),
        ("When did Nora Vale die?", "She kept the shop until her death two winters later.", True),
        ("When did the ferry service start?", "The service was first run in 1911.", True),  # a start as well
        ("When did the ferry service start?", "The first skipper came in 1911.", False),
        # the asked end of something else, or no asked end at all
        ("When did the quarry stop cutting slate?", "In 1969 the last of the quarrymen retired.", False),
        ("When did the quarry stop cutting slate?", "A gang could cut forty tons of slate a week.", False),
        ("When did Nora Vale die?", "Nora Vale sold the shop, and her brother died in 1950.", False),
        (
            "Where did Nora Vale die?",
            "She kept the shop until her death two winters later.",
            False,
        ),  # no time asked
    ],
)
def test_when_did_x_end_is_answered_by_the_asked_end_said_of_x(question, sentence, ends):
    assert _event_said_of_the_asked(question, sentence) is ends


def test_the_asked_end_of_x_outweighs_another_end_of_the_asked_kind():
    question = "When did the quarry stop cutting slate?"
    activity = _event_bonus(question, "The last slate was cut there in 1969.")
    other = _event_bonus(question, "In 1969 the last of the quarrymen retired.")
    assert activity > other > 0.0


@pytest.mark.parametrize(
    ("leaves", "question", "answer"),
    [
        (  # without `_counts_only_others`, the number of children leads
            [
                "The harbour master came with his wife and their three children in 1881, a few weeks before the "
                "breakwater was finished.",
                "The log of St. Anne's church lists thirty-one men drowned off the reef between 1860 and 1880.",
            ],
            "How many men were lost before the breakwater was finished?",
            "thirty-one men drowned",
        ),
        (  # without the asked end said of what ends, the sentence that shares the question's words leads
            [
                "The quarry stopped cutting slate only in the hardest frosts, when a good gang could cut forty "
                "tons a week.",
                "The last slate was sent down the incline in 1969, when Owen Pryce retired.",
            ],
            "When did the quarry stop cutting slate?",
            "The last slate was sent down the incline in 1969",
        ),
        (  # without `_explains_another` and `_names_what_caused_the_asked`, the 'because' of the rebuilding leads
            [
                "## The fire of 1902\n\nIn April 1902 a spark from the forge set the thatch alight. "
                "The blaze gutted the hall and its organ. "
                "The parish rebuilt the burnt hall with a tiled roof, because the insurers would not cover thatch again."
            ],
            "What caused the fire?",
            "a spark from the forge",
        ),
        (  # without GIVING_WAY, the sentence telling what the flood did leads
            [
                "## The breach of 1834\n\nIn February 1834 a rat-riddled culvert gave way and the embankment at "
                "Mill Green burst. The flood drowned eleven men working in the brickfield below. The company "
                "rebuilt the embankment in stone, because the magistrates would not allow another earth bank."
            ],
            "What caused the flood?",
            "a rat-riddled culvert gave way",
        ),
    ],
)
def test_a_short_fact_question_leads_with_the_sentence_in_its_answer_form(embedder, leaves, question, answer):
    assert answer in first_quote(embedder, leaves, question)


@pytest.mark.parametrize(
    ("leaves", "question", "answer"),
    [
        (  # under the blend, the sentence naming the organ and the Jubilee more leads without the stated purpose
            [
                "The great organ of the Jubilee Hall was saved from the fire by the caretaker, Mr Penrose. "
                "The organ is the hall's finest possession. "
                "It was built to accompany the choral festivals that the town held each summer."
            ],
            "Why was the great organ built?",
            "to accompany the choral festivals",
        ),
        (  # ... and the sentence about the club buying the shed, without where the money came from
            [
                "A rowing club formed by dockers bought the old boat shed in 1961 for 800 pounds. "
                "Rebuilding the shed took four years and cost 20,000 pounds, most of it raised by a lottery."
            ],
            "How did the rowing club pay for rebuilding the shed?",
            "raised by a lottery",
        ),
    ],
)
def test_a_why_or_manner_question_leads_with_the_answer_stated_under_the_blend(
    embedder, leaves, question, answer
):
    text = answer_over(embedder, leaves, question, ranked=True)
    assert answer in text.split("\u201c", 1)[1].split("\u201d", 1)[0]
