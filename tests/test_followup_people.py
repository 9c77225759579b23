"""Whom a follow-up's he/she means: a person the conversation shows as that gender, never a thing, and
never a name that swallowed the word opening its sentence. Pure functions, no model."""

from __future__ import annotations

import pytest

from raptor_engine.query.followup import names_in, standalone_question
from raptor_engine.types import Turn


def talk(*turns: str) -> list[Turn]:
    """Alternating user and assistant turns; an assistant turn is quoted as the extractive answerer does."""
    return [
        Turn("user", text) if i % 2 == 0 else Turn("assistant", f"\u201c{text}\u201d [1]")
        for i, text in enumerate(turns)
    ]


ELIAS = talk(
    "Who was Elias Marrow?",
    "The first principal keeper was Elias Marrow, a former bosun in the Royal Navy who had lost two fingers "
    "of his left hand at sea.\u201d [1]\n\u201cHester Marrow had kept the night watch beside her husband.",
)


# ---- a gendered pronoun prefers a person the conversation shows as that gender -------------------


def test_her_after_a_question_about_a_man_is_the_woman_the_answer_shows():
    """'Who was Elias Marrow?' -> 'what was her salary?': her is Hester (the quote says 'her husband'),
    not Elias, whom the quote shows as a 'his' across a name that is no person ('Royal Navy')."""
    assert standalone_question("What was her salary?", ELIAS) == (
        "What was Hester Marrow's salary? (context: Who was Elias Marrow?)"
    )
    # ... and 'his' is still Elias
    assert standalone_question("what was his salary?", ELIAS).startswith("What was Elias Marrow's salary?")


@pytest.mark.parametrize(
    ("answer", "follow_up", "standalone"),
    [
        # a title
        (
            "Mr Penrose kept the cottage with Mrs Anne Penrose.",
            "what did she do?",
            "What did Mrs Anne Penrose do?",
        ),
        (
            "Mrs Penrose kept the cottage with Sir Thomas Penrose.",
            "what did he do?",
            "What did Sir Thomas Penrose do?",
        ),
        # a gendered noun just before the name or in apposition after it
        (
            "Penrose kept the cottage with his wife Anne Penrose.",
            "what did she do?",
            "What did Anne Penrose do?",
        ),
        (
            "Penrose kept the cottage, helped by the keeper's daughter Jennet Penrose.",
            "what did she do?",
            "What did Jennet Penrose do?",
        ),
        (
            "Penrose kept it with Jory Penrose, a young man from Trewin.",
            "what did he do?",
            "What did Jory Penrose do?",
        ),
        (
            "Penrose kept it with Jory Penrose, the son of a pilot.",
            "what did he do?",
            "What did Jory Penrose do?",
        ),
        # the pronoun the quote uses right after the name
        (
            "Penrose kept it until Jennet Penrose took her turn.",
            "what did she do?",
            "What did Jennet Penrose do?",
        ),
    ],
)
def test_the_conversation_shows_a_persons_gender_by_title_noun_or_pronoun(answer, follow_up, standalone):
    """Asked about a man ('Thomas Penrose', a first name the list knows), a 'she' is the woman the answer
    shows as one; asked about a woman, a 'he' is the man the answer shows as one."""
    asked = "Who was Thomas Penrose?" if "she" in follow_up else "Who was Mary Penrose?"
    conversation = talk(asked, answer)
    assert standalone_question(follow_up, conversation) == f"{standalone} (context: {asked})"


def test_a_pronoun_stays_as_asked_when_no_one_of_its_gender_was_named():
    """Nobody but a man named: 'her' is left as asked (the context carries the question), not made him."""
    only_him = talk("Who was Elias Marrow?", "Elias Marrow kept the light for twenty-two years.")
    assert standalone_question("what was her salary?", only_him) == (
        "What was her salary? (context: Who was Elias Marrow?)"
    )
    only_her = talk("Who was Ada Pennick?", "The line was surveyed in 1871 by the engineer Ada Pennick.")
    assert standalone_question("what did he build?", only_her) == (
        "What did he build? (context: Who was Ada Pennick?)"
    )
    # a name nothing shows the gender of is still who the questions follow
    unknown = talk("Who was Zell Quarrie?", "Zell Quarrie kept the light.")
    assert standalone_question("what did she do?", unknown).startswith("What did Zell Quarrie do?")


def test_after_a_question_about_a_woman_he_is_the_man_asked_about_before_her():
    """'Who was Walter Dunstan?' -> 'Who was Morwenna Kittow?' -> 'when did he ...?': the man asked about
    first (shown as 'a young man'), not Morwenna (shown as 'his daughter'), without her question as context."""
    conversation = talk(
        "Who was Walter Dunstan?",
        "His assistant was Walter Dunstan, a young man from Trewin.",
        "Who was Morwenna Kittow?",
        "In 1976 he was joined by his daughter, Morwenna Kittow, then twenty-four.",
    )
    # the question about her is no context for one about him: it would find her again
    assert (
        standalone_question("When did he become principal keeper?", conversation)
        == "When did Walter Dunstan become principal keeper?"
    )
    assert standalone_question("When did she become principal keeper?", conversation).startswith(
        "When did Morwenna Kittow become principal keeper?"
    )


def test_text_evidence_outweighs_the_first_name_list():
    """A first name the list calls a man's, which the text shows as a woman's, is a 'she'."""
    conversation = talk("Who was Hugh Pell?", "Hugh Pell, a quiet woman from Falmouth, built the tower.")
    assert standalone_question("what did she build?", conversation).startswith("What did Hugh Pell build?")
    conversation = talk("Who was Paul Pell?", "Paul Pell kept the light until she retired in 1903.")
    assert standalone_question("when did she retire?", conversation).startswith("When did Paul Pell retire?")


# ---- a thing's name is no he or she ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "answer"),
    [
        ("How is Kestrel cleaned?", "The prisms are cleaned every morning with a soft linen cloth."),
        ("How was Merrow Queen restored?", "The volunteers restored it over twelve patient winters."),
        (
            "What is Kestrel?",
            "The light shows two white flashes, which sailors know as the Kestrel signature.",
        ),
    ],
)
def test_a_bare_things_name_is_not_who_he_means(asked, answer):
    """'How is Kestrel cleaned?' asks about a thing: 'who made him?' is left as asked, not 'who made Kestrel?'."""
    conversation = talk(asked, answer)
    assert standalone_question("who made him?", conversation) == f"Who made him? (context: {asked})"


def test_a_person_asked_about_the_same_way_is_still_a_person():
    """'How was Hester chosen?' asks how a person was treated: her first name says she is a 'she'."""
    conversation = talk("How was Hester chosen?", "The Board took the unusual step of appointing Hester.")
    assert standalone_question("what was her salary?", conversation).startswith("What was Hester's salary?")


# ---- a name never swallows the function word opening its sentence ---------------------------------


def test_a_name_does_not_swallow_a_capitalised_sentence_opener():
    text = (
        "Since Anne Marrow left the cove, Jacob kept it. Although Hester Marrow wrote it, nobody read it. "
        "Unless Morwenna Kittow returns, nobody will. Whenever Jacob came, Hester smiled. Despite Halbeck's "
        "storms, nobody left. Meanwhile Ambrose Kittow slept."
    )
    assert names_in(text) == [
        "Anne Marrow",
        "Jacob",
        "Hester Marrow",
        "Morwenna Kittow",
        "Hester",
        "Halbeck",
        "Ambrose Kittow",
    ]


def test_a_follow_up_after_a_question_opening_with_since_means_the_person_not_since():
    conversation = talk("Since Anne left, who kept the light?", "After she left, Jacob Marrow kept it.")
    assert standalone_question("and what did she do next?", conversation).startswith("What did Anne do next?")


def test_a_surname_alone_is_the_person_the_conversation_named_with_it():
    """'Pennick chose a route' after 'the engineer Ada Pennick': Pennick is Ada, no 'he'."""
    conversation = talk(
        "Who was Ada Pennick?",
        "The line was surveyed in 1871 by the engineer Ada Pennick.\u201d [1]\n\u201cPennick chose a route along the river.",
    )
    assert standalone_question("What did he build?", conversation) == (
        "What did he build? (context: Who was Ada Pennick?)"
    )
    assert standalone_question("What did she build?", conversation).startswith("What did Ada Pennick build?")


def test_among_an_answers_people_he_is_first_the_one_it_shows_as_a_man():
    """'Who kept the light with Hester?' -> 'what did he become later?': her son Jacob, whom the first quote
    shows as a man, before a two-word name a later quote gives in passing."""
    conversation = talk(
        "Who kept the light with Hester?",
        "Hester kept the light from 1861 to 1874, with her eldest son Jacob as assistant.\u201d [1]\n"
        "\u201cThe year was 1887 and the keeper was Ambrose Kittow.",
    )
    assert standalone_question("What did he become later?", conversation).startswith(
        "What did Jacob become later?"
    )


def test_they_is_the_people_the_last_question_named_together():
    conversation = talk(
        "Who were Elias and Hester Marrow?", "Elias Marrow arrived with his wife Hester in 1839."
    )
    assert standalone_question("when did they leave the point?", conversation).startswith(
        "When did Elias and Hester Marrow leave the point?"
    )
    assert standalone_question("how many children did they have?", conversation).startswith(
        "How many children did Elias and Hester Marrow have?"
    )
    assert standalone_question("what was their house called?", conversation).startswith(
        "What was Elias and Hester Marrow's house called?"
    )
    conversation = talk("What did Jacob, Hester and Elias do?", "They kept the light.")
    assert standalone_question("where did they live?", conversation).startswith(
        "Where did Jacob, Hester and Elias live?"
    )
    # people named apart are no group: 'they' is left to the context
    conversation = talk("Did Hester outlive Elias?", "Elias Marrow died in March 1861.")
    assert standalone_question("where did they live?", conversation) == (
        "Where did they live? (context: Did Hester outlive Elias?)"
    )


def test_the_first_person_of_the_pronouns_gender_comes_before_one_a_his_merely_follows():
    """'... the answer is Ambrose Kittow, with Walter Dunstan as his assistant keeper': 'his' is
    Ambrose's, so 'who was his assistant?' asks about Ambrose, not Walter."""
    conversation = talk(
        "Who kept the light in 1887?",
        "The answer is Ambrose Kittow, with Walter Dunstan as his assistant keeper.",
    )
    assert standalone_question("who was his assistant?", conversation).startswith(
        "Who was Ambrose Kittow's assistant?"
    )


@pytest.mark.parametrize(
    "asked",
    ["Who were Chidi Okonkwo and Aiko Tanaka?", "Who were Nguyen Van An and Fatima Zahra?", "Who were Chidi and Aiko?"],
)
def test_she_or_he_after_two_people_of_unknown_gender_stays_as_asked(asked):
    """Names the first-name lists do not hold say nothing of gender: when the last question named two such
    people, 'she' is either of them and so is 'he', so neither is guessed (the context carries both)."""
    turns = talk(asked, "One ran the mill and the other taught at the school.")
    for pronoun in ("she", "he"):
        assert standalone_question(f"When did {pronoun} arrive?", turns) == (
            f"When did {pronoun} arrive? (context: {asked})"
        )


def test_she_after_two_people_is_the_one_the_other_gender_does_not_rule_out():
    turns = talk("Who were Wei Chen and Priya Raman?", "Wei Chen, her husband, drew the maps.")
    assert standalone_question("What did she lead?", turns).startswith("What did Priya Raman lead?")
    assert standalone_question("What did he draw?", turns).startswith("What did Wei Chen draw?")


def test_them_beside_she_or_he_is_not_the_people_named_together():
    """'Where did she sell them?' after 'Who were Ada Penrose and Walter Dunstan?': 'she' is one of the
    people named together, so 'them' is what she sold, not those people."""
    turns = talk("Who were Ada Penrose and Walter Dunstan?", "Walter Dunstan built boats and Ada Penrose sold them.")
    assert standalone_question("Where did she sell them?", turns) == (
        "Where did Ada Penrose sell them? (context: Who were Ada Penrose and Walter Dunstan?)"
    )
    assert standalone_question("What did they build?", turns).startswith(
        "What did Ada Penrose and Walter Dunstan build?"
    )


def test_a_name_holding_a_possessive_is_kept_as_written():
    """'Queen Anne's Revenge' (a ship) is one name as written, not 'Queen Anne Revenge', which no text
    holds; a possessive that ends a name still ends it ('Ambrose Kittow's wife')."""
    assert names_in("When did Queen Anne\u2019s Revenge run aground near St John's Point?") == [
        "Queen Anne\u2019s Revenge",
        "St John's Point",
    ]
    assert names_in("Who was Ambrose Kittow's wife?") == ["Ambrose Kittow"]
    turns = talk("When did Queen Anne's Revenge run aground?", "It ran aground in 1718 near Beaufort.")
    assert standalone_question("Who was her captain?", turns).startswith("Who was Queen Anne's Revenge's captain?")


def test_a_thing_asked_about_as_one_is_no_she_though_its_name_opens_with_a_womans_name():
    """'What is Mary Rose?' asks about a thing (a tea, a ship) whatever the first-name list says of Mary:
    the she is the woman asked about before; what the conversation shows still wins ('Mary Rose, who ran
    the inn with her husband')."""
    turns = talk(
        "Who was Margaret Hale?", "Margaret Hale kept the archive.",
        "What is Mary Rose?", "Mary Rose is a brand of tea sold in Halbeck.",
    )
    assert standalone_question("When did she leave?", turns).startswith("When did Margaret Hale leave?")
    shown = talk("What was Mary Rose?", "Mary Rose ran the inn with her husband.")
    assert standalone_question("When did she leave?", shown).startswith("When did Mary Rose leave?")


@pytest.mark.parametrize("vague", ["say more", "how so?", "go on", "tell me more", "really?"])
def test_the_person_a_who_question_was_answered_with_outlives_a_vague_follow_up(vague):
    """'Who was appointed keeper?' -> 'say more' -> 'when did she leave?': she is still the person the
    who-question's answer gave, though that answer is no longer the last."""
    turns = talk(
        "Who was appointed keeper of the archive in 1962?",
        "In 1962 the town council appointed Margaret Hale as keeper of the archive.",
        vague,
        "Under her care the archive gained a reading room and a fireproof vault.",
    )
    assert standalone_question("and when did she leave?", turns).startswith("When did Margaret Hale leave?")
