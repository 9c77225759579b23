"""Questions of the kinds the second probe set asks (tests/fixtures/answer_kinds): comparisons and
superlatives, negatives, causes, 'who was responsible?' and 'when did X happen?'. Each rule is checked on
its own sentences, then on a context whose first quote it must change (texts unlike the probe set's)."""

from __future__ import annotations

import pytest

from raptor_engine.query.answer import (
    KIND_BONUS,
    _asks_a_negative,
    _candidates,
    _gives_the_asked_reason,
    _kind_bonus,
    _measures_the_compared,
    _names_the_responsible,
    _states_the_asked_reason,
    _tells_what_the_asked_did,
    compared_scales,
    holds_kind,
)
from raptor_engine.query.ranker import asks_short_fact, load_ranker
from raptor_engine.types import ContextNode
from tests.test_answer_ranking import first_quote


@pytest.mark.parametrize(
    ("question", "compares"),
    [
        ("Which boat is the fastest?", True),
        ("Is the red tent heavier than the blue one?", True),
        ("Which of the two flats is bigger?", True),
        ("Which mower is the most powerful?", True),
        ("Which ticket costs more, the day pass or the week pass?", True),
        ("Which bridge is the oldest?", True),
        ("Does the new parser outperform the baseline?", True),  # doing better, said by its verb
        ("Which systems outperformed the rule-based tagger?", True),
        ("What are their results on the new dataset?", True),  # results: how well, against what
        ("How well does the model perform on tweets?", True),
        ("What was the performance of the tagger?", True),
        ("What was the result of the storm?", False),  # what came of X, not how well it did
        ("How heavy is the tent?", False),  # a measure asked, not a comparison
        ("Who was the first keeper?", False),
        ("What is the light for?", False),
    ],
)
def test_a_comparison_or_superlative_question_names_its_scale(question, compares):
    assert bool(compared_scales(question)) is compares


@pytest.mark.parametrize(
    ("question", "sentence", "measures"),
    [
        ("Which boat is the fastest?", "The Osprey was the slowest of the fleet.", True),  # the same scale
        ("Which boat is the fastest?", "The Osprey crossed in forty minutes.", True),  # a time
        ("Which boat is the fastest?", "The Osprey carries forty people.", False),
        ("Is the red tent heavier than the blue one?", "The blue tent weighs 2.1 kilograms.", True),
        ("Is the red tent heavier than the blue one?", "The blue tent costs 90 pounds.", False),
        ("Which ticket costs more, the day pass or the week pass?", "A week pass is \u00a330.", True),
        ("Which mower is the most powerful?", "The Hawk has the more powerful motor.", True),
        ("Which mower is the most powerful?", "The Hawk has a larger grass box.", False),
        # a paper says which is best by a verb of doing better: it places both on the good-bad scale
        ("Which model performs best?", "UTCNN significantly outperforms these models on posts.", True),
        ("Does the new parser outperform the baseline?", "The parser surpasses it by two points.", True),
        ("Which model performs best?", "The model is trained on the posts of two forums.", False),
    ],
)
def test_a_comparison_is_answered_by_a_place_on_its_scale(question, sentence, measures):
    assert _measures_the_compared(question, sentence) is measures


@pytest.mark.parametrize(
    ("question", "sentence", "effect"),
    [
        ("What caused the flood?", "The flood drowned the lower fields.", True),
        ("What was the cause of the flood?", "The flood swept away the bridge at Kell.", True),
        ("What caused the flood?", "The flood was caused by a blocked culvert.", False),  # names its cause
        ("What caused the flood?", "Heavy rain in the hills filled the river in a night.", False),
        ("Why did the flood happen?", "The flood drowned the lower fields.", False),  # not a cause question
    ],
)
def test_a_cause_question_reads_what_its_subject_did_as_an_effect(question, sentence, effect):
    assert _tells_what_the_asked_did(question, sentence) is effect


@pytest.mark.parametrize(
    ("question", "sentence", "gives"),
    [
        ("What caused the collapse?", "The cause of the collapse was a cracked beam.", True),
        ("What led to the strike?", "The strike began after wages were cut.", True),
        ("Why did the roof fail?", "The main cause of the failure was rot in the rafters.", True),
        ("Why did the roof fail?", "The inquiry blamed the builder for using green timber.", True),
        ("What caused the collapse?", "The collapse closed the road for a month.", False),
    ],
)
def test_a_cause_stated_as_one_answers_a_cause_or_why_question(question, sentence, gives):
    assert _gives_the_asked_reason(question, sentence) is gives


@pytest.mark.parametrize(
    ("question", "sentence", "names"),
    [
        ("Who was responsible for the delay?", "The report blamed the contractor for the delay.", True),
        ("Who is in charge of the archive?", "The archive team, led by Ines Ford, keeps the records.", True),
        ("Who was responsible for the delay?", "The delay lasted three weeks.", False),
        ("Who built the bridge?", "The report blamed the contractor for the delay.", False),
    ],
)
def test_who_was_responsible_is_answered_in_words_of_blame_or_charge(question, sentence, names):
    assert _names_the_responsible(question, sentence) is names


@pytest.mark.parametrize(
    ("question", "short"),
    [
        ("When did the fire happen?", True),
        ("Where did the accident happen?", True),
        ("What happened to the mill?", False),  # a story
        ("Why did it happen?", False),
    ],
)
def test_when_or_where_something_happened_is_a_short_fact(question, short):
    assert asks_short_fact(question) is short


@pytest.mark.parametrize(
    ("leaves", "question", "answer"),
    [
        (  # without the scale, the sentence naming both bikes leads
            [
                "We rode the Lark and the Tern for a month around the city.",
                "The Tern took twelve minutes to the station, three fewer than the Lark.",
            ],
            "Is the Tern faster than the Lark?",
            "twelve minutes",
        ),
        (  # without 'outperforms' on the good-bad scale, the sentence that only says what was compared leads
            [
                "Each tagger was trained and tested on the news corpus with the same settings.",
                "On the news corpus, the CRF tagger outperforms both baselines by four points.",
            ],
            "Which tagger performs best on the news corpus?",
            "the CRF tagger outperforms",
        ),
        (  # without results read as the good-bad scale, the sentence about the new dataset leads
            [
                "We release a new dataset of 12,000 annotated product reviews for this task.",
                "On the new dataset our tagger outperforms the rule-based baseline by six points.",
            ],
            "What are their results on the new dataset?",
            "our tagger outperforms",
        ),
        (  # without the negative, the sentence listing every bike leads
            [
                "We rode three city bikes with a stand: the Lark, the Pavo and the Tern.",
                "The Pavo does not come with a stand, so it must lean on a wall.",
            ],
            "Which bike does not come with a stand?",
            "does not come with a stand",
        ),
        (  # without reading the storm's own deeds as effects, they lead
            [
                "## The storm of 1703\n\nA gale from the north-east blew for two days before it reached the coast. "
                "The storm flattened the barn and tore the roof off the chapel."
            ],
            "What caused the storm?",
            "A gale from the north-east",
        ),
    ],
)
def test_a_question_of_the_second_set_kinds_leads_with_the_sentence_that_answers_it(
    embedder, leaves, question, answer
):
    assert answer in first_quote(embedder, leaves, question)


@pytest.mark.parametrize(
    ("sentence", "when"),
    [
        ("He died of a fever two years later.", True),
        ("An inquiry held that winter blamed the company.", True),
        ("The court found for her the following autumn.", True),
        ("The outage began at 09:05, soon after the job started.", True),
        ("She died shortly after her seventieth birthday.", True),
        ("The pasture is used during the summertime.", True),
        ("The jug holds 1.50 litres.", False),  # a decimal is no clock time
        ("The mill grinds flour for the shop.", False),
    ],
)
def test_a_time_told_without_a_date_answers_when(sentence, when):
    assert holds_kind(0, sentence) is when


def test_a_question_asking_for_a_year_or_date_wants_one_not_that_night():
    assert (
        _kind_bonus("What was the year of the fire?", "The fire started during a night of observation.")
        == 0.0
    )
    assert (
        _kind_bonus("What was the year of the fire?", "In the spring of 1894 fire destroyed the dome.")
        == KIND_BONUS
    )
    assert (
        _kind_bonus("When did the fire start?", "The fire started during a night of observation.")
        == KIND_BONUS / 2
    )


def leaf(i: int, text: str, start: int, heading: tuple[str, ...]) -> ContextNode:
    return ContextNode(i, 0, "a.md", 0.5, text, 30, 1, heading=heading, start=start, end=start + len(text))


def test_a_leaf_that_spans_sections_opens_in_the_section_the_leaf_before_ends_in():
    first = "## The Great Refractor\nThe refractor has a lens of eleven inches."
    second = "It was built to measure double stars.\n## The fire\nA lamp fell over in the computing room."
    nodes = [
        leaf(1, first, 0, ("The Observatory", "The Great Refractor")),
        leaf(2, second, len(first) + 1, ("The Observatory",)),  # the title alone: it spans two sections
    ]
    found = {c.text: c for c in _candidates(nodes)}
    assert {"great", "refractor"} <= found["It was built to measure double stars."].section
    assert "refractor" not in found["A lamp fell over in the computing room."].section  # after its heading
    alone = {c.text: c for c in _candidates(nodes[1:])}  # without the leaf before, nothing is known
    assert not alone["It was built to measure double stars."].section


@pytest.mark.parametrize(
    ("question", "sentence", "stated"),
    [
        ("Why is a new boiler needed?", "The old boiler leaks and fails every winter.", True),
        ("What was the purpose of the wall?", "It was built to keep the sea out of the fields.", True),
        ("Why did the wall fall?", "The cause of the collapse was a storm surge.", True),
        # a reason clause after one of the question's words earns the reason bonus, but is no stated answer
        (
            "Why is the setting appropriate for recognition?",
            "Recognition systems such as W are robust.",
            False,
        ),
        (
            "What colour is the wall?",
            "The cause of the collapse was a storm surge.",
            False,
        ),  # not a why question
    ],
)
def test_an_answer_said_in_so_many_words_is_told_from_a_reason_clause_near_a_question_word(
    question, sentence, stated
):
    assert _states_the_asked_reason(question, sentence) is stated


def test_an_answer_said_in_so_many_words_counts_in_full_under_the_learned_blend(embedder, monkeypatch):
    """The sentence model never saw the stated-form rules: a blended quote score adds them again at the
    model's share, so with the hand score's share they count in full."""
    import raptor_engine.query.answer as answer

    question = "Why is a new boiler needed?"  # not a short fact: the model has a share of its score
    text = (
        "The biggest cost this year will be the new boiler, quoted at 2,000 pounds. The old boiler in the "
        "cellar leaks and fails every winter. Sam Hale will order the new boiler from Marsh and Sons."
    )
    nodes = [ContextNode(1, 0, "a.md", 0.5, text, 30, 1, start=0, end=len(text))]
    ranker = load_ranker()
    share = ranker.blend.weight(question, None)
    assert share > 0.0
    answerer = answer.ExtractiveAnswerer(embedder, ranker=ranker)
    scores = []
    for stated in (0.0, 1.0):
        monkeypatch.setattr(answer, "stated_form_score", lambda question, sentence, stated=stated: stated)
        scores.append({c.text: c.score for c in answerer._quotes(question, nodes, []).candidates})
    assert len(scores[0]) == 3
    assert scores[1] == pytest.approx({sentence: score + share for sentence, score in scores[0].items()})


@pytest.mark.parametrize(
    ("question", "negative"),
    [
        ("Which kettle does not switch off by itself?", True),
        ("Where is diving not allowed?", True),
        ("Which keeper didn't stay?", True),
        ("Which bike has no stand?", True),
        # a negative inside what the question says, not what it asks
        ("As a sign of gratitude, what does he promise her by not telling the police?", False),
        ("What did he do after he could not find the key?", False),
    ],
)
def test_a_question_asks_a_negative_when_the_negative_follows_its_question_word(question, negative):
    assert _asks_a_negative(question) is negative
