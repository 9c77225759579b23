"""'What was the result of X?', 'What happened to / after X?' and 'When did X die / close?': what came of X
is told as a change (sold, fined, flooded, 'left N without') or by a connective of consequence; a sentence
telling X itself or its cause is not it; a time told without a year answers 'when did X die?' when it names
that very event. Each rule on its own sentences, then on contexts whose first quote it must change (texts
unlike the probe set's)."""

from __future__ import annotations

import pytest

from raptor_engine.query.answer import (
    QUOTED_PENALTY,
    REFERS_BACK_AT_START,
    RESULT_BONUS,
    TELLS_ONLY_X_PENALTY,
    _event_bonus,
    _names_the_asked_event,
    _quoted_penalty,
    _result_score,
    _result_subject,
    _tells_the_destination,
)
from tests.test_answer_ranking import first_quote


@pytest.mark.parametrize(
    ("question", "subject"),
    [
        ("What was the result of the strike?", ("strike", False)),
        ("What were the consequences of the merger?", ("merger", False)),
        ("What happened to the statue?", ("statu", True)),
        ("What happened to the two trawlers that ran aground?", ("trawler", True)),  # X, not its clause
        ("What happened to the orchard after the frost?", ("orchard", True)),
        ("What happened after the election?", ("elect", False)),
        ("Why did the strike end?", None),
        ("What happened?", None),
    ],
)
def test_a_result_question_names_what_it_asks_about(question, subject):
    found = _result_subject(question)
    assert (found is None) if subject is None else (found is not None and found[1] == subject[1])
    if subject is not None:
        assert found[0].startswith(subject[0][:4])


@pytest.mark.parametrize(
    ("question", "sentence", "score"),
    [
        ("What was the result of the strike?", "The works stood idle for nine weeks.", RESULT_BONUS),
        ("What was the result of the storm?", "The storm left 6,000 homes without power.", RESULT_BONUS),
        ("What was the result of the strike?", "Consequently the owners raised wages.", RESULT_BONUS),
        ("What was the result of the storm?", "As a result the curing yards closed.", RESULT_BONUS),
        ("What was the result of the strike?", "The strike began on a Monday in May.", -TELLS_ONLY_X_PENALTY),
        ("What was the result of the strike?", "The cause of the strike was a cut in pay.", -TELLS_ONLY_X_PENALTY),
        ("What was the result of the trawlers sinking?", "Two trawlers sank off the point.", -TELLS_ONLY_X_PENALTY),
        ("What happened to the statue?", "The statue was melted down for its bronze.", RESULT_BONUS),
        ("What happened to the statue?", "The council removed the statue from the square.", RESULT_BONUS),
        ("What happened to the statue?", "It was moved to the museum garden.", RESULT_BONUS),  # by a pronoun
        (  # a clause set off by commas between X and what was done to it
            "What happened to the chapel?",
            "The chapel, which stood by the ford, was demolished in the next decade.",
            RESULT_BONUS,
        ),
        (  # the change is another thing's, far from X
            "What happened to the statue?",
            "A statue carved the year before had lost an arm when the crane swung.",
            -TELLS_ONLY_X_PENALTY,
        ),
        ("What happened to the trawlers that sank?", "Two trawlers sank off the point.", -TELLS_ONLY_X_PENALTY),
        ("What happened to the statue?", "The square was paved in granite.", 0.0),
        ("Why did the strike end?", "The works stood idle for nine weeks.", 0.0),
    ],
)
def test_what_came_of_x_is_a_change_or_a_consequence_not_x_itself(question, sentence, score):
    assert _result_score(question, sentence) == pytest.approx(score)


@pytest.mark.parametrize(
    ("question", "sentence", "named"),
    [
        ("When did the poet die?", "She lived in the cottage until her death the winter after.", True),
        ("When did the poet die?", "Her brother took over the press in 1930.", False),
        ("When did the cinema close?", "The cinema closed for good one wet Sunday in June.", True),
        ("When did the line stop running?", "The last train ran the following spring.", True),
        ("In what year did the shop open?", "The shop opened in 1922.", True),
        # a when-clause asks no time
        ("How do I post a parcel when the office is closed?", "The office closed early in 1998.", False),
    ],
)
def test_a_when_question_prefers_the_asked_event_in_its_own_words(question, sentence, named):
    assert _names_the_asked_event(question, sentence) is named


def test_the_asked_event_in_its_own_words_outweighs_another_ending():
    question = "When did the poet die?"
    death = _event_bonus(question, "She lived in the cottage until her death the winter after.")
    other = _event_bonus(question, "Her brother left the press the following year.")
    assert death > other > 0.0


@pytest.mark.parametrize(
    ("leaves", "question", "answer"),
    [
        (  # without the result rules, the sentence telling the strike itself leads
            [
                "## The strike of 1889\n\nIn June 1889 the dockers of Harwick went on strike over a cut in pay. "
                "The works stood idle for nine weeks, and the owners raised wages in August."
            ],
            "What was the result of the strike?",
            "stood idle for nine weeks",
        ),
        (  # without reading what was done to it, the sentence naming the statue most leads
            [
                "What the statue of the founder looked like, and what happened to the statue, is told in the "
                "town's guide. In 1941 the statue was melted down for the war effort."
            ],
            "What happened to the statue?",
            "melted down",
        ),
        (  # without the event's own words, her brother's year leads
            [
                "Ada Brenn ran the press from 1902. Ada's brother, Tom Brenn, took over the press in 1930. "
                "Ada lived above the shop until her death the winter after."
            ],
            "When did Ada Brenn die?",
            "until her death",
        ),
    ],
)
def test_a_result_or_end_question_leads_with_the_sentence_that_answers_it(embedder, leaves, question, answer):
    assert answer in first_quote(embedder, leaves, question)


@pytest.mark.parametrize(
    ("question", "sentence", "tells"),
    [
        ("Where did she go after the war?", "In 1946 she sailed for Lisbon with her sons.", True),
        ("Where did the family move?", "The family moved to a farm near Ohio in 1850.", True),
        ("Where did he settle?", "He settled in Perth, where he taught music.", True),
        ("Where did he go next?", "After the trial he left the city for the coast.", True),
        ("Where did he go next?", "He was born in Perth and taught music.", False),
        ("Where was she born?", "In 1946 she sailed for Lisbon with her sons.", False),  # no going asked
    ],
)
def test_where_did_x_go_is_answered_by_a_verb_of_going_and_where_to(question, sentence, tells):
    assert _tells_the_destination(question, sentence) is tells


@pytest.mark.parametrize(
    ("sentence", "refers"),
    [
        ("In 1946 she sailed for Lisbon.", True),
        ("Two years later he sold the farm.", True),
        ("After the war they moved north.", True),
        ("In 1946 the school sailed through its inspection.", False),
        ("In the end the council paid.", False),
    ],
)
def test_a_person_s_pronoun_after_an_opening_time_refers_back(sentence, refers):
    assert bool(REFERS_BACK_AT_START.search(sentence)) is refers


def test_a_quoted_sentence_answering_the_follow_up_in_its_form_loses_less():
    question = "Where did Ada Brenn go after that?"
    went = _quoted_penalty(question, "In 1931 she left the press and moved to Leeds.", asks_for_more=False)
    other = _quoted_penalty(question, "Ada Brenn ran the press from 1902.", asks_for_more=False)
    assert 0.0 < went < other == pytest.approx(QUOTED_PENALTY)
    assert _quoted_penalty(question, "In 1931 she left the press and moved to Leeds.", asks_for_more=True) > other
