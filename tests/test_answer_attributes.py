"""Questions about an attribute of something ("What was the date / cost / cause of X?"), answers that open
by referring back ("It was made in Dublin."), reasons written after the asked verb, and spans of counts
(real embedder, hand-made context)."""

from __future__ import annotations

import pytest

from raptor_engine.ingest.sentences import NewSentences, sentence_key, sentence_spans
from raptor_engine.query.answer import (
    ANSWER_KINDS,
    DANGLING_PENALTY,
    DATES,
    NUMBER_KIND,
    QUOTE,
    REFERS_BACK_AT_START,
    ExtractiveAnswerer,
    _candidates,
    _counts_the_asked,
    _gives_the_asked_reason,
    _measures_the_asked,
    asked_action,
    definition_subject,
    holds_kind,
)
from raptor_engine.query.followup import split_standalone
from raptor_engine.query.retrieve import _only_new
from raptor_engine.types import ContextNode

WHEN, NUMBER, WHY, WHO, WHERE = range(5)


def leaf(i: int, text: str, start: int, heading: tuple[str, ...] = ()) -> ContextNode:
    return ContextNode(i, 0, "a.md", 0.5, text, 30, 1, heading=heading, start=start, end=start + len(text))


def first_quote(embedder, nodes: list[ContextNode], question: str) -> str:
    return QUOTE.findall(ExtractiveAnswerer(embedder)._answer_sync(question, nodes, []).text)[0]


def asked_kind(question: str) -> int | None:
    return next((kind for kind, (asks, _) in enumerate(ANSWER_KINDS) if asks.search(question)), None)


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("What was the date of the observatory's opening?", WHEN),
        ("What was the year of the fire?", WHEN),
        ("What is the cost of parking?", NUMBER),
        ("What was the price of a landing?", NUMBER),
        ("What was the population of Carrick?", NUMBER),
        ("What was the length of the pier?", NUMBER),
        ("What was the cause of the fire?", WHY),
        ("What was the result of the survey?", WHY),
        ("What was the purpose of the lighthouse?", WHY),
        ("What was the name of the first assistant?", WHO),
        ("What is the location of the bothy?", WHERE),
    ],
)
def test_an_attribute_question_asks_for_the_kind_its_attribute_names_and_no_description(question, kind):
    assert asked_kind(question) == kind
    assert definition_subject(question) is None


def test_a_question_about_what_something_is_is_still_a_definition_question():
    assert definition_subject("What was the Great Refractor?") == "Great Refractor"
    assert definition_subject("What is the result?") == "result"  # no attribute *of* anything


@pytest.mark.parametrize(
    ("question", "sentences", "answer"),
    [
        (
            "What was the date of the flood?",
            ["The flood swept away the mill and the footbridge.", "The flood came on 3 October 1903 after a week of rain."],
            "3 October 1903",
        ),
        (
            "What was the cost of the new roof?",
            ["The new roof was laid in Welsh slate by a firm from Conwy.", "The new roof cost 2,400 pounds in all."],
            "2,400 pounds",
        ),
        (
            "What was the name of the first headmaster?",
            ["The first headmaster was strict and kept a cane on his desk.", "The first headmaster was a curate called Amos Pryce."],
            "Amos Pryce",
        ),
        (
            "What was the result of the inquiry?",
            ["The inquiry heard evidence from forty witnesses over six weeks.", "As a result the railway company lost its licence."],
            "lost its licence",
        ),
        (
            "What was the cause of the explosion?",
            ["The explosion destroyed the boiler house in the spring.", "The explosion was caused by a blocked safety valve."],
            "blocked safety valve",
        ),
    ],
)
def test_an_attribute_question_leads_with_the_sentence_that_gives_the_attribute(embedder, question, sentences, answer):
    nodes = [leaf(1, " ".join(sentences), 0)]
    assert answer in first_quote(embedder, nodes, question)


def test_a_sentence_opening_with_a_pronoun_is_read_with_the_leaf_before_it(embedder):
    before = "The observatory's chief instrument is the Great Refractor, a telescope with an eleven-inch lens."
    after = "It was made by the firm of Thomas Grubb in Dublin and shipped by canal in the winter."
    distractor = "The telescope cost 1,850 pounds, a sum that Lowry raised by selling a warehouse."
    nodes = [leaf(1, f"{distractor} {before}", 0), leaf(2, after, len(distractor) + len(before) + 3)]
    found = _candidates(nodes)
    assert {"telescop", "refractor"} <= found[-1].antecedent  # the last sentence of the leaf before
    assert "Dublin" in first_quote(embedder, nodes, "Where was the telescope made?")


def test_a_pronoun_after_a_heading_line_or_in_a_summary_is_not_read_with_the_leaf_before():
    nodes = [
        leaf(1, "Lowry bought the hilltop from the Earl of Moyle.", 0),
        leaf(2, "## The Refractor\nIt was made by Grubb in Dublin.", 49, heading=("The Refractor",)),
        ContextNode(3, 1, "a.md", 0.5, "Quill saved the lens. It was made in Dublin by Grubb himself.", 20, 2),
    ]
    found = {c.text: c for c in _candidates(nodes)}
    assert found["It was made by Grubb in Dublin."].antecedent == {"refractor"}  # the heading, not the earl
    assert not found["It was made in Dublin by Grubb himself."].antecedent


@pytest.mark.parametrize(
    ("question", "sentence", "gives"),
    [
        ("Why did the library close?", "The library closed in March 2022 when inspectors found asbestos.", True),
        ("Why did the library close?", "The library is open six days a week and closed on Sundays.", False),
        ("Why was the refractor built?", "It was built to measure the positions of double stars.", True),
        # a purpose in its own form, whichever words it uses (PURPOSE_FORM)
        ("What was the purpose of the lighthouse?", "It was put there to guide the boats at night.", True),
        ("What is the lantern for?", "The lantern has a shutter, which lets the keeper signal.", True),
        ("What was the purpose of the lighthouse?", "The lighthouse was painted white in 1901.", False),
        ("What was the result of the storm?", "As a result the curing yards closed.", False),  # `_result_score`
        ("What was the cause of the fire?", "The fire started when a paraffin lamp fell over.", True),
    ],
)
def test_a_reason_is_given_in_the_form_the_question_asks(question, sentence, gives):
    assert _gives_the_asked_reason(question, sentence) is gives


@pytest.mark.parametrize(
    ("question", "action"),
    [
        ("What did the surveyors conclude?", "conclud"),
        ("What did Margaret Lowry buy?", "buy"),
        ("What did she find?", "find"),
        ("What does the word mean?", None),
    ],
)
def test_what_did_x_do_asks_about_the_verb(question, action):
    assert asked_action(question) == action


def test_a_span_of_counts_is_a_quantity_and_a_span_of_years_is_not():
    counted = "Stories must be from 1500 to 2000 words long, not counting the title."
    assert _counts_the_asked("How many words may a story have?", counted)
    assert _measures_the_asked("How long must a story be?", counted)
    assert _measures_the_asked("How high does the path climb?", "The path climbs from 1200 to 1800 feet.")
    years = "Between 1820 and 1836 the parish register records forty-three men lost."
    assert DATES.search(years)
    assert not holds_kind(NUMBER_KIND, "Between 1820 and 1836 the tower stood empty.")
    assert not DATES.search(counted)


def test_a_step_under_a_heading_that_names_the_task_answers_how_to_do_it(embedder):
    manual = leaf(
        1,
        "Descale the kettle every four weeks in a hard water area. Fill the jug to the MIN mark with half "
        "water and half white vinegar, boil it, and leave it overnight.",
        0,
        heading=("Model K2 Kettle", "Cleaning and descaling"),
    )
    other = leaf(2, "Fill the jug with cold water and press the switch down.", 400, heading=("Model K2 Kettle", "Using it"))
    assert "vinegar" in first_quote(embedder, [manual, other], "How do I descale the kettle?")


def test_the_question_verb_a_sentence_holds_only_as_a_noun_is_not_held(embedder):
    nodes = [
        leaf(1, "Rosa Bellini was a cook at the village school for thirty years and made this stew.", 0),
        leaf(2, "Simmer the stew for two and a half hours, until the beans are creamy.", 200),
    ]
    assert "two and a half hours" in first_quote(embedder, nodes, "How long does the stew cook?")


@pytest.mark.parametrize(
    ("question", "sentence", "gives"),
    [
        ("Why is a new water tank needed?", "The old tank by the shed is cracked and loses water.", True),
        ("Why was a new bridge built?", "The original wooden bridge had rotted through.", True),
        ("Why is a new water tank needed?", "Owen Price will order the new tank.", False),
    ],
)
def test_a_replacement_is_explained_by_what_it_replaces(question, sentence, gives):
    assert _gives_the_asked_reason(question, sentence) is gives


OPENING = "Port Ellin was a fishing village of some 900 people when the Harbour Trust was formed to build a pier."
REST = "The pier is 640 feet long and stands on granite blocks. The Trust's engineer was James Annand of Glasgow."


def test_a_leaf_says_where_the_sentences_it_leaves_out_for_a_summarys_copy_stood():
    summary = ContextNode(9, 2, "a.md", 0.9, f"{OPENING} The light was first lit in 1855.", 40, 4)
    stored = f"## Building the pier\n{OPENING} {REST}"
    count = lambda texts: [len(t.split()) for t in texts]  # noqa: E731
    held = NewSentences()
    held.add(sentence_spans([summary.text], count)[0])
    shortened, kept = _only_new(leaf(1, stored, 0), tuple(sentence_spans([stored], count)[0]), held)
    assert shortened is not None and OPENING not in shortened.text
    assert shortened.held_elsewhere == ((shortened.text.index("The pier"), sentence_key(OPENING)),)


def test_a_thematic_answer_reads_a_summarys_copy_of_the_opening_sentence_where_it_stands(embedder):
    summary = ContextNode(9, 2, "a.md", 0.9, f"The light was first lit in 1855. {OPENING}", 40, 4)
    opening = ContextNode(1, 0, "a.md", 0.5, REST, 30, 1, start=0, end=400, held_elsewhere=((0, sentence_key(OPENING)),))
    later = leaf(2, "On the night of 4 January 1911 a gale tore away the seaward end of the pier.", 500)
    nodes = [summary, later, opening]
    quoted = QUOTE.findall(ExtractiveAnswerer(embedder)._answer_sync("What is this document about?", nodes, []).text)
    assert quoted[0] == OPENING
    placed = {c.text: c for c in _candidates(nodes)}[OPENING]
    assert placed.placed == ("a.md", 0)


def test_a_thematic_answer_leaves_a_sentence_that_points_back_behind_one_that_says_what_it_means(embedder):
    # the same claim twice, once opening with a pronoun whose antecedent is in another leaf: read alone,
    # as a thematic answer's quotes are, "It" says nothing of what was drawn up
    named = "The petition was drawn up by the harbour master and signed by the whole town."
    pointing = "It was drawn up by the harbour master and signed by the whole town."
    nodes = [leaf(1, f"Fishing boats left the cove at dawn. {pointing}", 0), leaf(2, named, 500)]
    answerer = ExtractiveAnswerer(embedder)
    candidates = _candidates(nodes)
    answerer._score(split_standalone("What is the central theme?"), candidates, set(), True, set())
    score = {c.text: c.score for c in candidates}
    assert score[named] - score[pointing] > DANGLING_PENALTY / 2


@pytest.mark.parametrize(
    ("sentence", "refers"),
    [
        ("It was made by Grubb in Dublin.", True),
        ("They concluded that the skies had grown too bright.", True),
        ("As a result the yards closed.", True),
        ("It is important to note that the lens was cleaned.", False),
        ("It was not clear that the lamp had failed.", False),
        ("The lamp failed in the night.", False),
    ],
)
def test_what_opens_by_referring_back(sentence, refers):
    assert bool(REFERS_BACK_AT_START.search(sentence)) is refers


def test_a_who_question_does_not_read_he_or_she_with_the_person_it_stands_for(embedder):
    named = "Detectives suspect a cowboy singer, Tex Barton, who tried to slip out of the back door."
    pronoun = "He was in the audience when Rita was rehearsing before the blackout."
    nodes = [leaf(1, named, 0), leaf(2, pronoun, len(named) + 1)]
    answerer = ExtractiveAnswerer(embedder)

    def referred(question: str) -> float:
        found = _candidates(nodes)
        answerer._similarities(split_standalone(question), found, set())
        return found[-1].referred

    assert referred("Why did the cowboy singer slip out of the back door?") > 0  # read with "Tex Barton ..."
    assert referred("Who tried to slip out of the back door?") == 0  # "He" hides the name asked for
