"""'Who' questions answered by a name the question does not give: "Who will succeed Helen Trevaskis?" by
the sentence naming her successor, not the one naming only her; "Who is the harbourmaster?" by the
sentence that names him (real embedder and the shipped ranker, hand-made context)."""

from __future__ import annotations

import pytest

from raptor_engine.query.answer import (
    QUOTE,
    WHO_KIND,
    ExtractiveAnswerer,
    _names_the_deed,
    holds_asked_kind,
)
from raptor_engine.query.ranker import ranker_for
from raptor_engine.types import ContextNode

REPORT = [
    "This year the Trust had 214 members, up from 187 in 2024.",
    "Our chair since 2019 has been Helen Trevaskis, who will stand down at the annual meeting in March 2026.",
    "Her successor, chosen by the board in October, is Ruth Pascoe, a former harbour pilot.",
    "The largest cost was dredging, followed by staff wages of £52,000 for the harbourmaster and one assistant.",
    "The old granite slipway, built in 1889, was repaired after the storm of 12 January 2025.",
    "The harbourmaster, Colin Jago, reopened it on 3 April 2025.",
]


def _leaves(sentences: list[str]) -> list[ContextNode]:
    nodes, start = [], 0
    for i, text in enumerate(sentences, 1):
        nodes.append(ContextNode(i, 0, "trust.md", 0.5, text, 25, 1, start=start, end=start + len(text)))
        start += len(text) + 1
    return nodes


def _quotes(embedder, question: str, ranking: str) -> list[str]:
    answerer = ExtractiveAnswerer(embedder, ranker=ranker_for(ranking))
    return QUOTE.findall(answerer._answer_sync(question, _leaves(REPORT), []).text)


@pytest.mark.parametrize("ranking", ["learned", "vector"])
def test_who_succeeds_a_named_person_is_answered_by_the_successor_s_name(embedder, ranking):
    quotes = _quotes(embedder, "Who will succeed Helen Trevaskis?", ranking)
    assert any("Ruth Pascoe" in quote for quote in quotes), quotes


@pytest.mark.parametrize("ranking", ["learned", "vector"])
@pytest.mark.parametrize("question", ["Who is the harbourmaster?", "Who was the harbourmaster in 2025?"])
def test_who_is_the_role_leads_with_the_sentence_that_names_the_person(embedder, ranking, question):
    assert "Colin Jago" in _quotes(embedder, question, ranking)[0]


@pytest.mark.parametrize(
    ("question", "sentence", "holds"),
    [
        ("Who will succeed Helen Trevaskis?", REPORT[1], False),  # her own name is given
        ("Who will succeed Helen Trevaskis?", REPORT[2], True),
        ("Who replaced Tom Hale as keeper?", "Tom Hale handed the keys to Mary Quill.", True),
        ("Who kept the light in 1887?", "Ambrose Kittow kept it.", False),  # first word: no name by this rule
        ("Who kept the light in 1887?", "In 1887 it was kept by Ambrose Kittow.", True),
    ],
)
def test_a_who_question_s_name_is_one_the_question_does_not_give(question, sentence, holds):
    assert holds_asked_kind(question, WHO_KIND, sentence) is holds


@pytest.mark.parametrize(
    ("action", "sentence", "names"),
    [
        ("succ", "Her successor is Ruth Pascoe.", True),  # stem of "succeed"
        ("succeed", "The succession passed to his son.", True),
        ("replac", "Her replacement starts in May.", True),
        ("found", "Its founder was a fisherman.", True),
        ("design", "The designers met in Truro.", True),
        ("succ", "The season was a success.", False),  # no doer's or deed's suffix
        ("found", "They found the wreck.", False),  # the verb itself: the stem rule reads that
        ("own", "The owner sold it.", False),  # too short a stem to read derivations safely
    ],
)
def test_a_noun_made_from_the_asked_verb_names_the_deed(action, sentence, names):
    assert _names_the_deed(action, sentence) is names


@pytest.mark.parametrize(
    ("question", "quote", "other_roles"),
    [
        ("Who is the secretary of the society?", "Present: Joan Petrie (chair), Amit Shah (treasurer), eleven members.", True),
        ("Who is the secretary?", "Chair: Joan Petrie; Treasurer: Amit Shah.", True),
        ("Who is the treasurer?", "Present: Joan Petrie (chair), Amit Shah (treasurer), eleven members.", False),
        ("Who is the treasurer?", "Chair: Joan Petrie; Treasurer: Amit Shah.", False),
        # no roles given to names: whether it answers is the grounding model's to judge
        ("Who is the secretary?", "Ruth Pascoe keeps the minutes and writes to members.", False),
        ("Who was Joan Petrie?", "Present: Joan Petrie (chair), Amit Shah (treasurer).", False),  # a name
        ("When did Amit Shah join?", "Present: Joan Petrie (chair), Amit Shah (treasurer).", False),
    ],
)
def test_a_quote_naming_people_by_other_roles_does_not_answer_who_holds_the_asked_one(question, quote, other_roles):
    from raptor_engine.query.answer import _candidates, gives_other_roles
    from raptor_engine.types import ContextNode

    picked = _candidates([ContextNode(1, 0, "minutes.md", 0.5, quote, 20, 1, start=0, end=len(quote))])[:1]
    assert gives_other_roles(question, picked) is other_roles
