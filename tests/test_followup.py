"""Follow-up rewriting, sentence de-duplication and page ranges: the pure functions, no model."""

from __future__ import annotations

import pytest

from raptor_engine.ingest.sentences import NewSentences, is_heading, sentences_of
from raptor_engine.llm import format_context
from raptor_engine.query.followup import names_in, split_standalone, standalone_question
from raptor_engine.query.retrieve import fill_budget
from raptor_engine.storage.records import StoredNode
from raptor_engine.types import Citation, ContextNode, Turn, page_range

ARCHIVE_TALK = [
    Turn("user", "Who was appointed keeper of the archive in 1962?"),
    Turn(
        "assistant",
        "From the documents:\n- \u201cIn 1962 the town council appointed Margaret Hale as keeper of the "
        "archive.\u201d [1]\n- \u201cThe archive was housed in the old customs house in Halifax.\u201d [2]",
    ),
]
CONTEXT = " (context: Who was appointed keeper of the archive in 1962?)"


@pytest.mark.parametrize(
    ("follow_up", "standalone"),
    [
        ("and when did she leave?", "When did Margaret Hale leave?"),
        ("What did she do there?", "What did Margaret Hale do in Halifax?"),
        ("What did he do there?", "What did he do in Halifax?"),  # no man named: 'he' stays as asked
        ("and her brother?", "Margaret Hale's brother?"),
        ("was he open then?", "Was he open in 1962?"),  # no man named: 'he' and so 'then' stay as asked
        ("what about the second one?", "What about the second one?"),
        ("why?", "Why?"),
        ("how long?", "How long?"),
        ("tell me more", "Tell me more"),
        ("Is there a fee?", "Is there a fee?"),  # 'is there' points at no place
        ("What happens in winter?", "What happens in winter?"),  # one generic word: still the same topic
    ],
)
def test_follow_ups_are_rewritten_with_what_they_point_back_to(follow_up, standalone):
    assert standalone_question(follow_up, ARCHIVE_TALK) == standalone + CONTEXT


@pytest.mark.parametrize(
    ("follow_up", "standalone"),
    [
        ("who met her later?", "Who met Margaret Hale later?"),  # was "Margaret Hale's later"
        ("why did they send her away?", "Why did they send Margaret Hale away?"),
        ("what happened to her afterwards?", "What happened to Margaret Hale afterwards?"),
        ("who married her eventually?", "Who married Margaret Hale eventually?"),
        ("did they find her, finally?", "Did they find Margaret Hale, finally?"),
        ("who told her first?", "Who told Margaret Hale first?"),
        ("did they bring her home?", "Did they bring Margaret Hale home?"),
        ("did they pay her well?", "Did they pay Margaret Hale well?"),
        ("what did her family think?", "What did Margaret Hale's family think?"),  # a noun in -ly
        ("what was her early life like?", "What was Margaret Hale's early life like?"),  # -ly before a noun
        ("what happened in her later years?", "What happened in Margaret Hale's later years?"),
        ("who was her first husband?", "Who was Margaret Hale's first husband?"),
        ("where was her home?", "Where was Margaret Hale's home?"),  # after 'was': hers
        ("what did they find in her home?", "What did they find in Margaret Hale's home?"),  # after 'in'
    ],
)
def test_her_is_the_object_before_an_adverb_and_hers_before_a_noun(follow_up, standalone):
    """'her' then a word: her own noun ('her father'), or the verb's object followed by an adverb of time
    or place ('met her later'), which used to read as hers ("Margaret Hale's later")."""
    assert standalone_question(follow_up, ARCHIVE_TALK) == standalone + CONTEXT


@pytest.mark.parametrize(
    "fresh",
    ["How long are the loaves baked?", "When was the Kestrel Point tower built?", "What happened in 1990?"],
)
def test_a_fresh_question_is_left_alone(fresh):
    assert standalone_question(fresh, ARCHIVE_TALK) == fresh


def test_without_history_the_question_is_its_own_standalone():
    assert standalone_question("and when did she leave?", []) == "and when did she leave?"


def test_rewrites_chain_and_a_pronoun_of_the_other_gender_looks_for_someone_else():
    talk = ARCHIVE_TALK + [
        Turn("user", "and when did she leave?"),
        Turn("assistant", "\u201cMargaret Hale left in 1975 when she married Thomas Reid.\u201d [1]"),
    ]
    assert standalone_question("what did he do?", talk) == (
        "What did Thomas Reid do? (context: When did Margaret Hale leave?)"
    )
    assert standalone_question("where did she go next?", talk).startswith("Where did Margaret Hale go next?")
    # a bare "why?" after a "when did ...?" asks the same question with its own wh-word
    assert standalone_question("why?", talk) == "Why did Margaret Hale leave?"
    talk += [Turn("user", "why?"), Turn("assistant", "\u201cShe married.\u201d [1]")]
    assert standalone_question("and then?", talk).endswith("(context: Why did Margaret Hale leave?)")


def test_split_standalone_takes_a_rewrite_apart():
    rewrite = split_standalone("When did Margaret Hale leave?" + CONTEXT)
    assert rewrite.core == "When did Margaret Hale leave?"
    assert rewrite.context == "Who was appointed keeper of the archive in 1962?"
    assert split_standalone("What is (roughly) the cost?").core == "What is (roughly) the cost?"


def test_names_skip_capitalised_sentence_openings():
    text = "The lens was cleaned by Dr. Watson. In 1952 the Bay of Fundy froze. Margaret's brother left."
    assert names_in(text) == ["Dr Watson", "Bay of Fundy"]


@pytest.mark.parametrize(
    ("line", "heading"),
    [
        ("## Common repairs", True),
        ("# The Workshop Bicycle Manual", True),
        ("- Punctures", True),
        ("Kestrel Point Lighthouse Manual", True),
        ("The lens is cleaned every morning.", False),
        ("- The lens is cleaned every morning.", False),
    ],
)
def test_headings_titles_and_labels_are_recognised(line, heading):
    assert is_heading(line) is heading


def test_new_sentences_catch_copies_and_copies_cut_short():
    held = NewSentences()
    held.add(sentences_of("The tower was built in 1871 from local granite. It is white."))
    copy, cut, new = sentences_of(
        "the tower  was built in 1871, from local granite!\nThe tower was built in\u2026\nIt has 112 steps."
    )
    assert held.is_copy(copy) and held.is_copy(cut) and not held.is_copy(new)


def _stored(node_id: int, layer: int, text: str, tokens: int) -> StoredNode:
    kind = "leaf" if layer == 0 else "summary"
    return StoredNode(node_id, 1, 1, "d", layer, kind, text, tokens, 1, 0, len(text), None, ())


def test_collapsed_fill_counts_only_new_text_and_skips_a_summary_mostly_held():
    leaf = _stored(1, 0, "Alpha keeps the lamp. Beta trims the wick.", 20)
    mostly_held = _stored(2, 1, "Alpha keeps the lamp. Beta trims the wick. Gamma sings.", 30)
    half_new = _stored(3, 1, "Beta trims the wick. Delta paints the rail every spring.", 28)
    mostly_new = _stored(
        4, 1, "Beta trims the wick. Delta paints the rail. Epsilon oils the clockwork gears.", 30
    )
    kept = "Delta paints the rail. Epsilon oils the clockwork gears."
    chosen, used = fill_budget(
        [(leaf, 0.9), (mostly_held, 0.8), (half_new, 0.75), (mostly_new, 0.7)],
        100,
        lambda texts: [len(text.split()) for text in texts],  # one token a word
    )
    assert [n.node_id for n in chosen] == [1, 4]  # a summary under 70% new is skipped
    assert chosen[1].text == kept and chosen[1].tokens == 4 + 5  # the kept sentences' tokens
    assert used == 29


def test_page_ranges_of_a_chunk_that_crosses_a_page_break():
    marks = ((0, 3), (40, 4))
    assert page_range(marks, 0, 30) == (3, 3)
    assert page_range(marks, 41, 60) == (4, 4)
    assert page_range(marks, 10, 50) == (3, 4)
    node = ContextNode(5, 0, "a.pdf", 0.5, "x" * 80, 20, 1, page=3, page_marks=marks)
    assert node.pages() == (3, 4)
    assert "[1] (node 5, layer 0, a.pdf, pages 3-4)" in format_context([node])
    assert Citation(1, 5, 0, "a.pdf", 0.5, 1, page=3, page_end=4).to_dict()["page_end"] == 4


def test_a_final_then_is_the_year_answered_to_a_when_question_and_left_alone_when_unsure():
    answered = [
        Turn("user", "When did Margaret Hale leave?"),
        Turn("assistant", "From the documents:\n- \u201cMargaret Hale left the archive in 1975.\u201d [1]"),
    ]
    assert standalone_question("what happened then?", answered).startswith("What happened in 1975?")
    unanswered = [
        Turn("user", "When was the light automated?"),
        Turn(
            "assistant",
            "- \u201cLights were being automated.\u201d [1]\n- \u201cIt was lit in 1839.\u201d [2]",
        ),
    ]
    assert standalone_question("who kept it then?", unanswered).startswith("Who kept the light then?")


def test_a_quotation_of_several_sentences_is_quoted_whole():
    text = (
        'Morwenna kept the last watch. Her final entry reads: "Lamp out 4.58. Sea calm. We did not let it '
        'go dark." She locked the door. He said "no. Then he left.'
    )
    assert [s.text for s in sentences_of(text)] == [
        "Morwenna kept the last watch.",
        'Her final entry reads: "Lamp out 4.58. Sea calm. We did not let it go dark."',
        "She locked the door.",
        'He said "no.',  # a quotation never closed stays sentence by sentence
        "Then he left.",
    ]


def test_a_name_put_in_for_a_pronoun_weighs_less_than_what_the_follow_up_asks():
    from raptor_engine.query.answer import _candidates, _names_of, _query_weights

    talk = [
        Turn("user", "Who kept the last manned watch?"),
        Turn(
            "assistant", "From the documents:\n- \u201cMorwenna Kittow kept the last manned watch.\u201d [1]"
        ),
    ]
    text = (
        "Morwenna Kittow kept the last manned watch in 1987. Morwenna Kittow now lights it on feast days. "
        "Her final logbook entry says the sea was calm."
    )
    candidates = _candidates([ContextNode(1, 0, "a.md", 0.5, text, 40, 1)])
    rewrite = split_standalone(standalone_question("what did she write in her final entry?", talk))
    assert "Morwenna Kittow" in rewrite.core
    weights = _query_weights(rewrite, candidates, _names_of(talk))
    plain = _query_weights(rewrite, candidates)  # without the conversation's names: full weight
    assert weights["final"] == plain["final"] and weights["entry"] == plain["entry"]
    assert weights["morwenna"] < 0.5 * plain["morwenna"] and weights["kittow"] < 0.5 * plain["kittow"]
    asked_only_the_name = split_standalone(standalone_question("and Morwenna Kittow?", talk))
    alone = _query_weights(asked_only_the_name, candidates, _names_of(talk))
    assert alone == _query_weights(asked_only_the_name, candidates)  # nothing else asked: no change


def test_word_forms_meet_at_one_stem():
    from raptor_engine.ingest.sentences import stem

    assert len({stem(w) for w in ("move", "moved", "moves", "moving")}) == 1
    assert len({stem(w) for w in ("clean", "cleaned", "cleaning", "cleans")}) == 1
    assert len({stem(w) for w in ("carry", "carried", "carries", "carrying")}) == 1  # not "carri"
    assert stem("keeper") != stem("keep")  # a light stemmer: different words stay apart


@pytest.mark.parametrize(
    "question",
    [
        "What is this whole document about?",
        "What is this about?",
        "Give me an overview.",
        "What does it cover?",
        "What is the plot of the story?",
        "What are the key ideas of the paper?",
        "Can you summarise it?",
        "tl;dr",
        "Tell me more (context: What is this document about?)",  # a follow-up, as rewritten
    ],
)
def test_questions_about_the_whole_that_name_nothing(question):
    from raptor_engine.query.followup import asks_about_the_whole

    assert asks_about_the_whole(question)


@pytest.mark.parametrize(
    "question",
    [
        "Summarize what the viaduct cost",
        "What is the main theme of the keeper's diary?",
        "What was the Great Gale about?",
        "Who kept the light in 1962?",
        "What does the author say about bees?",
        "What is it about? (context: Who was Ambrose Kittow?)",
        "The main theme? (context: Who was Ambrose Kittow?)",
    ],
)
def test_thematic_or_plain_questions_that_name_something_are_not_about_the_whole(question):
    from raptor_engine.query.followup import asks_about_the_whole

    assert not asks_about_the_whole(question)


# ---- whom a pronoun means, what a follow-up carries -------------------------------------------

KEEPER_TALK = [
    Turn("user", "Who was Ambrose Kittow?"),
    Turn(
        "assistant",
        "From the documents:\n- \u201cAfter a keeper named Samuel Treloar was dismissed, the Board appointed "
        "Ambrose Kittow as principal keeper.\u201d [1]\n- \u201cHis assistant was Walter Dunstan.\u201d [2]",
    ),
    Turn("user", "What did he do in 1887?"),
    Turn("assistant", "From the documents:\n- \u201cSamuel Treloar had left the coast by then.\u201d [1]"),
]


def test_a_pronoun_means_the_person_the_questions_are_about_not_a_name_an_answer_quoted():
    assert standalone_question("What did he do in 1887?", KEEPER_TALK[:2]).startswith(
        "What did Ambrose Kittow do in 1887?"
    )
    talk = KEEPER_TALK + [Turn("user", "Why?"), Turn("assistant", "\u201cSamuel Treloar failed.\u201d [1]")]
    # after a bare "why?" (no name of its own) the subject is still the one the questions were about
    assert standalone_question("Who replaced him?", talk).startswith("Who replaced Ambrose Kittow?")
    assert standalone_question("what happened to his wife", talk).startswith(
        "What happened to Ambrose Kittow's wife"
    )


def test_after_who_did_something_the_pronoun_is_the_person_the_answer_introduced():
    talk = [
        Turn("user", "Who replaced Ambrose Kittow?"),
        Turn("assistant", "\u201cIn 1903 the Board sent Peter Kittow to replace Ambrose Kittow.\u201d [1]"),
    ]
    assert standalone_question("what did he change?", talk).startswith("What did Peter Kittow change?")
    # ... but a user who keeps saying "him" for the person they have been following still means them
    talk = KEEPER_TALK[:2] + [
        Turn("user", "Who replaced him?"),
        Turn("assistant", "\u201cIn 1903 the Board sent Peter Kittow to replace Ambrose Kittow.\u201d [1]"),
    ]
    assert standalone_question("what happened to his wife?", talk).startswith(
        "What happened to Ambrose Kittow's wife?"
    )
    # a who-question about someone it names further on stays about them
    talk = [
        Turn("user", "Who sat in the audience while Rita Wilson was rehearsing?"),
        Turn("assistant", "\u201cMarty Phillips sat in the back row.\u201d [1]"),
    ]
    assert standalone_question("what happened to her?", talk).startswith("What happened to Rita Wilson?")
    # ... but "who does X meet?" is about X, whoever the answer names
    talk = [
        Turn("user", "Who does Maskull meet on the ship?"),
        Turn("assistant", "\u201cOn the ship Maskull meets Krag.\u201d [1]"),
    ]
    assert standalone_question("where is he going?", talk).startswith("Where is Maskull going?")


def test_a_name_after_in_or_at_is_a_place_not_a_person():
    talk = [
        Turn("user", "Who was appointed to the farm in 1850?"),
        Turn("assistant", "\u201cIn 1850 Lisbeth Dahl moved to New Ridge.\u201d [1]"),
    ]
    assert standalone_question("what was her job?", talk).startswith("What was Lisbeth Dahl's job?")
    talk = [
        Turn("user", "What is Lisbeth's nickname?"),
        Turn("assistant", "\u201cAt New Ridge everyone called Lisbeth Longskirt.\u201d [1]"),
    ]
    assert standalone_question("what was her job?", talk).startswith("What was Lisbeth's job?")
    # a name with 'the' is a ship, a people, a thing: 'his' is the person beside it
    talk = [
        Turn("user", "Why did the Tr'en leave Korvin's door unlocked?"),
        Turn("assistant", "\u201cThe Tr'en wanted Korvin to escape.\u201d [1]"),
    ]
    assert standalone_question("what was his mission?", talk).startswith("What was Korvin's mission?")


def test_a_bare_wh_word_asks_the_last_question_again_with_it():
    did = [Turn("user", "Did the Board give Kittow a medal?"), Turn("assistant", "\u201cIt did.\u201d [1]")]
    assert standalone_question("and why?", did) == "Why did the Board give Kittow a medal?"
    when = [Turn("user", "When did Hester retire?"), Turn("assistant", "\u201cIn 1874.\u201d [1]")]
    assert standalone_question("where?", when) == "Where did Hester retire?"
    # a 'what' question's wh-word is an argument: "why did he do in 1887?" means nothing, so it is carried
    assert standalone_question("why?", KEEPER_TALK) == "Why? (context: What did Ambrose Kittow do in 1887?)"


def test_what_about_re_asks_about_a_new_name_or_starts_a_new_topic():
    talk = [Turn("user", "What did Hester Marrow earn?"), Turn("assistant", "\u201cForty pounds.\u201d [1]")]
    assert standalone_question("What about Elias Marrow?", talk) == "What did Elias Marrow earn?"
    # a topic of its own: nothing stale is carried
    assert standalone_question("and what about the last keeper?", talk) == "What about the last keeper?"
    # a pronoun or a bare year still leans on the last turn
    assert standalone_question("what about her husband?", talk).startswith(
        "What about Hester Marrow's husband? (context:"
    )
    assert standalone_question("what about 1875?", talk).endswith("(context: What did Hester Marrow earn?)")


@pytest.mark.parametrize(
    ("previous", "follow_up", "standalone"),
    [
        # a new topic: 'and the X?' reads as 'what about the X?', question mark and all
        ("What did Hester Marrow earn?", "and the last keeper?", "What about the last keeper?"),
        ("What did Hester Marrow earn?", "or the outer basin?", "What about the outer basin?"),
        ("Who cared for Lisbeth?", "and the harbour", "What about the harbour?"),
        # leaning on the last turn, the context follows the question's own '?'
        (
            "Who cared for Lisbeth?",
            "and the 2019 one?",
            "What about the 2019 one? (context: Who cared for Lisbeth?)",
        ),
        # the last question asked of the new thing, or of the person's relative, as before
        ("When did the Wren stop running?", "and the Alder?", "When did the Alder stop running?"),
        ("Who cared for Lisbeth?", "and the brother?", "What about Lisbeth's brother?"),
    ],
)
def test_and_the_thing_is_searched_as_a_question_like_what_about(previous, follow_up, standalone):
    talk = [Turn("user", previous), Turn("assistant", "\u201cThe records say little more.\u201d [1]")]
    assert standalone_question(follow_up, talk) == standalone
    what_about = follow_up.replace("and ", "what about ", 1).replace("or ", "what about ", 1)
    assert standalone_question(what_about.rstrip("?") + "?", talk) == standalone


def test_only_the_questions_decide_a_topic_switch_not_names_an_answer_quoted():
    talk = [
        Turn("user", "Who does Maskull accept an invitation from?"),
        Turn("assistant", "\u201cMaskull accepts an invitation from Krag.\u201d [1]"),
    ]
    assert standalone_question("Who is Krag an acquaintance of?", talk) == "Who is Krag an acquaintance of?"
    # a why-question that names its own subject is not a bare "why?"
    why = "Why do more students tune into Mark's show?"
    assert standalone_question(why, talk) == why


def test_irregular_past_forms_meet_their_verb():
    from raptor_engine.ingest.sentences import stem

    assert stem("found") == stem("find") and stem("left") == stem("leave") and stem("built") == stem("build")
    assert stem("keeper") != stem("kept")


@pytest.mark.parametrize(
    "forms", [("use", "used", "uses", "using"), ("age", "aged", "ages", "aging"), ("die", "died", "dies", "dead"),
              ("owe", "owed", "owes", "owing"), ("ice", "iced", "icing"), ("tie", "tied", "ties"), ("eye", "eyed")],
)  # fmt: skip
def test_a_short_verb_meets_its_past_and_ing_forms(forms):
    """review25: 'used' and 'using' kept their suffix (cut, two letters would be left) and never met 'use'."""
    from raptor_engine.ingest.sentences import stem

    assert len({stem(form) for form in forms}) == 1


def test_words_that_only_look_like_a_short_verbs_forms_stay_apart():
    from raptor_engine.ingest.sentences import stem

    for word, other in [("seed", "see"), ("need", "nee"), ("shed", "she"), ("thing", "the"), ("doing", "doe"),
                        ("bring", "bre"), ("being", "bee")]:  # fmt: skip
        assert stem(word) != stem(other), word


@pytest.mark.parametrize(
    "request_about_the_answer",
    [
        "summarise that",
        "summarize it",
        "can you summarise that?",
        "describe it",
        "expand on that",
        "clarify that",
        "rephrase that",
        "simplify that",
        "give me a summary",
        "continue",
    ],
)
def test_a_request_about_the_last_answer_leaves_the_topic_to_the_question_before_it(request_about_the_answer):
    """'summarise that' names no subject: the follow-up after it leans on the question it was about, not
    on 'Summarise that' ('Why? (context: Summarise that)' searched for nothing)."""
    talk = ARCHIVE_TALK + [
        Turn("user", request_about_the_answer),
        Turn("assistant", "\u201cIn 1962 the town council appointed Margaret Hale.\u201d [1]"),
    ]
    assert standalone_question("why?", talk) == "Why?" + CONTEXT
    assert standalone_question("and when did she leave?", talk) == "When did Margaret Hale leave?" + CONTEXT


MARROW_TALK = [
    Turn("user", "Who was Elias Marrow?"),
    Turn(
        "assistant",
        "\u201cThe first principal keeper was Elias Marrow, a former bosun.\u201d [1]\n"
        "\u201cHe arrived with his wife Hester in October 1839.\u201d [4]\n"
        "\u201cHester kept the light from 1861 to 1874, with her eldest son Jacob as assistant.\u201d [2]\n"
        "\u201cJacob Marrow went on to become harbour master of Halbeck.\u201d [3]",
    ),
]


@pytest.mark.parametrize("named", ["and Jacob?", "and jacob?", "what about jacob?"])
def test_a_follow_up_that_names_someone_the_answer_named_moves_the_conversation_to_them(named):
    """'and Jacob?' (or 'and jacob?') names a person of its own: the next 'he' is Jacob, not Elias."""
    talk = MARROW_TALK + [
        Turn("user", named),
        Turn("assistant", "\u201cJacob Marrow became harbour master.\u201d [1]"),
    ]
    assert standalone_question("where did he work?", talk).startswith("Where did Jacob")


def test_a_lower_case_name_the_conversation_wrote_as_a_name_is_that_name():
    assert standalone_question("what about hester?", MARROW_TALK) == "Who was Hester?"
    # a fresh question is left as asked, its name spelled as the conversation wrote it
    assert standalone_question("when did jacob leave?", MARROW_TALK) == "when did Jacob leave?"
    # a word the conversation also writes in lower case is no name ('master' in 'harbour master')
    assert standalone_question("who was the master?", MARROW_TALK).startswith("Who was the master?")


def test_a_who_is_question_about_a_named_thing_is_about_it_not_about_who_the_answer_quoted():
    """'Who was the Dalai Lama?' names its subject (with 'the'); an answer that found only someone else
    does not make 'he' that someone."""
    talk = [
        Turn("user", "Who was the Dalai Lama?"),
        Turn("assistant", "\u201cThe engineer was Josiah Penhallow, a quiet man from Falmouth.\u201d [1]"),
    ]
    assert standalone_question("and when was he born?", talk).startswith("When was Dalai Lama born?")
    # 'Who was the first keeper?' still asks for someone the answer introduces
    talk = [
        Turn("user", "Who was the first keeper?"),
        Turn("assistant", "\u201cThe first was Elias Marrow.\u201d [1]"),
    ]
    assert standalone_question("and when did he leave?", talk).startswith("When did Elias Marrow leave?")


def test_a_follow_up_after_one_that_named_nothing_keeps_the_subject_before_it():
    """'What happened to the Margaret Ellen?' -> 'how many were lost?' -> 'who was the master?': the
    third still leans on the ship, which only the first question named."""
    talk = [
        Turn("user", "What happened to the Margaret Ellen?"),
        Turn("assistant", "\u201cThe Margaret Ellen struck the outer edge of the ledge.\u201d [1]"),
        Turn("user", "how many were lost?"),
        Turn("assistant", "\u201cTwo of the crew were lost.\u201d [1]"),
    ]
    rewritten = split_standalone(standalone_question("who was the master?", talk))
    assert rewritten.core == "Who was the master?"
    assert "How many were lost?" in rewritten.context and "Margaret Ellen" in rewritten.context


def test_a_month_or_place_a_question_names_is_no_person_for_the_next_he():
    talk = [
        Turn("user", "Who kept the light during the war?"),
        Turn(
            "assistant",
            "\u201cPeter Kittow, who had kept the light through the war, retired in 1958.\u201d [1]",
        ),
        Turn("user", "what happened in April 1941?"),
        Turn("assistant", "\u201cIn April 1941 a German aircraft machine-gunned the tower.\u201d [1]"),
    ]
    assert standalone_question("and when did he retire?", talk).startswith("When did Peter Kittow retire?")


def test_a_name_after_and_is_a_name_even_when_no_answer_wrote_it():
    talk = [
        Turn("user", "Who was Elias Marrow?"),
        Turn("assistant", "\u201cThe first principal keeper was Elias Marrow, a former bosun.\u201d [1]"),
        Turn("user", "and Jacob?"),
        Turn("assistant", "\u201cHe went on to become harbour master.\u201d [1]"),
    ]
    assert standalone_question("where did he work?", talk).startswith("Where did Jacob work?")


def test_they_is_the_family_or_people_the_last_question_named():
    talk = [
        Turn("user", "When did the Marrows arrive?"),
        Turn("assistant", "\u201cIn October 1839.\u201d [1]"),
    ]
    assert standalone_question("when did they leave?", talk).startswith("When did the Marrows leave?")
    assert standalone_question("what was their house called?", talk).startswith(
        "What was the Marrows' house called?"
    )
    # a place named with 'the' is where, not who
    talk = [Turn("user", "Who lived in the Hebrides?"), Turn("assistant", "\u201cCrofters.\u201d [1]")]
    assert standalone_question("what did they grow?", talk).startswith("What did they grow?")
    # no group named: 'they' is left to the carried context
    talk = [
        Turn("user", "Who bought the line?"),
        Turn("assistant", "\u201cA society of volunteers.\u201d [1]"),
    ]
    assert (
        standalone_question("what did they restore?", talk)
        == "What did they restore? (context: Who bought the line?)"
    )


@pytest.mark.parametrize(
    "correction", ["no, I meant Daniel Kittow", "I mean Daniel Kittow", "sorry, I meant Daniel Kittow"]
)
def test_a_correction_asks_the_last_question_again_about_what_was_meant(correction):
    talk = [Turn("user", "When did Peter Kittow retire?"), Turn("assistant", "\u201cIn 1958.\u201d [1]")]
    assert standalone_question(correction, talk) == "When did Daniel Kittow retire?"


@pytest.mark.parametrize(
    ("asked", "follow_up", "searched"),
    [
        (
            "What did the 2021 report recommend?",
            "no, I meant the 2019 one",
            "What did the 2019 report recommend?",
        ),
        (
            "What did the 2021 report recommend?",
            "what about the 2019 one?",
            "What did the 2019 report recommend?",
        ),
        ("What did the 2021 report recommend?", "and the 2019 one?", "What did the 2019 report recommend?"),
        (
            "When does the 3 pm ferry leave Hobart?",
            "sorry, I meant the 5 one",
            "When does the 5 pm ferry leave Hobart?",
        ),
    ],
)
def test_the_numbered_one_asks_the_last_question_again_of_that_number(asked, follow_up, searched):
    """botqa16, played through the real bot: 'no, I meant the 2019 one' after a question about the 2021
    report was searched as 'In the 2019 one please' or 'What about the 2019 one'."""
    talk = [Turn("user", asked), Turn("assistant", "\u201cReyes recommended dredging.\u201d [1]")]
    assert standalone_question(follow_up, talk) == searched


def test_the_numbered_one_is_read_as_before_when_the_last_question_numbers_nothing_or_the_same():
    def searched(asked: str) -> str:
        talk = [Turn("user", asked), Turn("assistant", "\u201cReyes recommended dredging.\u201d [1]")]
        return standalone_question("no, I meant the 2019 one", talk)

    assert (
        searched("What did the report recommend?") == "What did the 2019 one recommend?"
    )  # the thing swapped
    assert searched("What did the 2019 report recommend?").startswith("What about the 2019 one")


def test_a_misspelt_name_is_searched_as_the_answer_spelt_it():
    talk = [
        Turn("user", "Who was Morwena Kitow?"),
        Turn(
            "assistant",
            "\u201cIn 1976 he was joined by his daughter, Morwenna Kittow, then twenty-four.\u201d [1]",
        ),
    ]
    assert standalone_question("when did she retire?", talk).startswith("When did Morwenna Kittow retire?")
    # a different person with a like name is not taken for them
    talk = [Turn("user", "Who was Jon Smith?"), Turn("assistant", "\u201cJan Smith kept the inn.\u201d [1]")]
    assert standalone_question("when did he die?", talk).startswith("When did Jon Smith die?")


def test_a_pronoun_of_the_other_gender_after_asking_about_a_relative_is_that_relative():
    """'What was Ambrose Kittow's wife's name?' -> 'what did she do?': she is his wife, named as the
    answer names her, else called his wife; not some other name the answer quoted ('Mont Blanc')."""
    asked = Turn("user", "What was Ambrose Kittow's wife's name?")
    talk = [asked, Turn("assistant", "\u201cHe carried oil higher than Mont Blanc.\u201d [1]")]
    assert standalone_question("what did she do during the gale?", talk).startswith(
        "What did Ambrose Kittow's wife do during the gale?"
    )
    talk = [asked, Turn("assistant", "\u201cLanterns that Kittow's wife Loveday hung on the path.\u201d [1]")]
    assert standalone_question("what did she do during the gale?", talk).startswith(
        "What did Loveday do during the gale?"
    )
    talk = [
        Turn("user", "What was Daniel Kittow's daughter's name?"),
        Turn(
            "assistant", "\u201cHe was joined by his daughter, Morwenna Kittow, then twenty-four.\u201d [1]"
        ),
    ]
    assert standalone_question("when did she retire?", talk).startswith("When did Morwenna Kittow retire?")


def test_a_follow_up_in_capitals_is_read_as_typed_in_lower_case():
    talk = [
        Turn("user", "Who was Josiah Penhallow?"),
        Turn("assistant", "\u201cThe engineer was Josiah Penhallow, a quiet man from Falmouth.\u201d [1]"),
    ]
    assert standalone_question("WHERE WAS HE FROM?", talk).startswith("Where was Josiah Penhallow from?")
    assert standalone_question("AND JOSIAH PENHALLOW'S WIFE?", talk).startswith("Josiah Penhallow's wife?")


@pytest.mark.parametrize(
    ("asked", "answer", "follow_up", "standalone"),
    [
        # a thing named with 'the' (a lens, a ship, a storm) is no 'he'/'she': the follow-up is left to the context
        (
            "How is the Kestrel lens cleaned?",
            "The keepers wiped the lens.",
            "who was his assistant?",
            "Who was his assistant?",
        ),
        (
            "What happened to the Margaret Ellen?",
            "The Margaret Ellen struck the ledge.",
            "who was her master?",
            "Who was her master?",
        ),
        (
            "What was the Great Gale?",
            "The gale arrived on the night of 14 October 1887.",
            "what did he record?",
            "What did he record?",
        ),
        # a name whose words say place, body or event, even without 'the'
        (
            "What is Halbeck Cove?",
            "Halbeck Cove is a fishing town.",
            "when did he arrive?",
            "When did he arrive?",
        ),
        ("What did Skerrow Point Trust open?", "A museum.", "who was her partner?", "Who was her partner?"),
        (
            "How did Kestrel Optics clean it?",
            "With leather.",
            "who was his assistant?",
            "Who was his assistant?",
        ),
        ("Tell me about Storm Eunice", "It hit in 2022.", "what did she damage?", "What did she damage?"),
        # ... but a person the answer shows as a 'he' or a 'she' beside the thing is who that pronoun means
        (
            "How is the Kestrel lens cleaned?",
            "Ambrose Kittow wiped the lens with his own hands.",
            "who was his assistant?",
            "Who was Ambrose Kittow's assistant?",
        ),
        (
            "What did the Board decide?",
            "The Board appointed Hester as keeper in her own right.",
            "what was her salary?",
            "What was Hester's salary?",
        ),
        (
            "What happened to the Margaret Ellen?",
            "Two were lost, including the master, Captain Henry Ashcroft.",
            "where was he from?",
            "Where was Captain Henry Ashcroft from?",
        ),
        # ... and not one it quotes in passing, nor one it shows as a 'she' for a 'his'
        (
            "How is the Kestrel lens cleaned?",
            "Ambrose Kittow wiped the lens.",
            "who was his assistant?",
            "Who was his assistant?",
        ),
        (
            "How is the Kestrel lens cleaned?",
            "He was joined by his daughter, Morwenna Kittow, who cleaned the lens.",
            "who was his assistant?",
            "Who was his assistant?",
        ),
    ],
)
def test_a_pronoun_never_means_a_thing_place_or_body_only_a_person(asked, answer, follow_up, standalone):
    """'How is the Kestrel lens cleaned?' -> 'who was his assistant?' is not 'Kestrel's assistant'."""
    talk = [Turn("user", asked), Turn("assistant", f"\u201c{answer}\u201d [1]")]
    assert standalone_question(follow_up, talk) == f"{standalone} (context: {asked})"


def test_after_a_question_about_a_thing_he_is_still_the_person_asked_about_before():
    talk = [
        Turn("user", "Who was Elias Marrow?"),
        Turn("assistant", "\u201cThe first principal keeper was Elias Marrow.\u201d [1]"),
        Turn("user", "How was the Argand lamp lit?"),
        Turn("assistant", "\u201cThe lamps were lit at sunset.\u201d [1]"),
    ]
    assert standalone_question("when did he die?", talk).startswith("When did Elias Marrow die?")


def test_a_person_an_answer_shows_as_the_other_gender_is_not_he_or_she():
    """'Who cleaned the lens?' answered 'his daughter, Morwenna Kittow': a 'he' next is not Morwenna."""
    talk = [
        Turn("user", "Who cleaned the lens?"),
        Turn(
            "assistant",
            "\u201cHe was joined by his daughter, Morwenna Kittow, who cleaned the lens.\u201d [1]",
        ),
    ]
    assert (
        standalone_question("when did he retire?", talk)
        == "When did he retire? (context: Who cleaned the lens?)"
    )
    assert standalone_question("when did she retire?", talk).startswith("When did Morwenna Kittow retire?")


def test_after_a_question_about_a_thing_a_person_quoted_in_passing_is_not_she():
    """'What happened to the Margaret Ellen?' -> 'who was her master?': 'her' is the ship, not Loveday Kittow,
    whom a later quote of the answer names in passing."""
    asked = "What happened to the Margaret Ellen?"
    answer = (
        "\u201cThe Margaret Ellen struck the outer edge of the ledge.\u201d [1]\n"
        "\u201cA lantern is hung where Loveday Kittow hung hers in 1887.\u201d [2]"
    )
    talk = [Turn("user", asked), Turn("assistant", answer)]
    assert standalone_question("who was her master?", talk) == f"Who was her master? (context: {asked})"


def test_a_year_alone_keeps_the_question_it_was_asked_of_for_the_next_follow_up():
    """'When was the tower built?' -> 'and in 1890?' -> 'who else?': the year names no subject, so the
    question it leaned on is still carried (not 'In 1890?' alone)."""
    turns = [
        Turn("user", "When was the tower built?"),
        Turn("assistant", "From the documents:\n- \u201cThe tower was built in 1871.\u201d [1]"),
        Turn("user", "and in 1890?"),
        Turn("assistant", "From the documents:\n- \u201cIn 1890 a fog horn was added.\u201d [1]"),
    ]
    assert (
        standalone_question("who else?", turns) == "Who else? (context: In 1890? When was the tower built?)"
    )


@pytest.mark.parametrize(
    ("follow_up", "standalone"),
    [
        # an 'it' after 'and'/'but'/'or' whose own question named a thing before it asks of that thing
        (
            "How many members were present at the meeting of the allotment society and who chaired it?",
            "How many members were present at the meeting of the allotment society and who chaired it?",
        ),
        (
            "How is the dough mixed and how long does it rest?",
            "How is the dough mixed and how long does it rest?",
        ),
        # no thing named before the 'it' (or no clause before it): the last answer's, as before
        ("and when did it close?", "When did the archive close?"),
        (
            "What did she do and when did it end?",
            "What did Margaret Hale do and when did the archive end?" + CONTEXT,
        ),
    ],
)
def test_an_it_that_its_own_question_names_is_not_the_last_answers(follow_up, standalone):
    assert standalone_question(follow_up, ARCHIVE_TALK) == standalone
