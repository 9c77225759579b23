"""Follow-ups that go on from the last answer, asked of the real engine (no LLM) over a story and a
history: "what happened before that?" (and "and before that?") quotes what comes before the last
answer's passage in its document, "who else?" someone the last answers did not name, "what else did he
do?" what tells of whom 'he' means (the person a who-question's answer named), never a repeat; "he"
never means a woman or a place a quote named in passing; and a question in another language than the
documents' says so in its first line."""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raptor_engine import Engine, Turn
from raptor_engine.query.answer import FOUND, NOTHING_RELATED, WEAK_MATCH
from raptor_engine.query.followup import (
    DOCUMENT_ENDS,
    DOCUMENT_OPENS,
    OTHER_LANGUAGE,
    OTHER_LANGUAGE_OPENING,
    Onward,
    onward_ask,
    quotes_in,
    rewrite,
    unanswered_lead,
)
from raptor_engine.query.language import documents_language, other_language, question_language
from raptor_engine.query.support import says_not_answered
from raptor_tools.followup_onward import TALE, report, tally
from tests.unhurried import unhurried_settings

HISTORY = """# The Salt Road

The salt road ran from the pans at Merrow to the market town of Ashby. Traders carried salt on mules over
the moor. The first inn on the road was built in 1702 by Tobias Fenn. A toll gate was put up at Cold Cross
in 1761. Carriers complained about the toll for thirty years. The gate was pulled down in 1794 after a
riot. The railway reached Ashby in 1851 and the mules were sold. Today the road is a footpath.
"""

SPANISH = """# El puente de Alcor

El puente de Alcor fue construido en 1820 por el ingeniero Mateo Ruiz. Tiene tres arcos de piedra y
mide ochenta metros. Durante la guerra el arco central fue destruido y se reconstruyó en 1950. Hoy
el puente es solo para peatones y ciclistas, y los coches usan un puente nuevo que está más al norte.
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path_factory.mktemp("continue") / "data"), embedder=embedder)
    for kb, name, text in (("tales", "tale.md", TALE), ("tales", "road.md", HISTORY), ("es", "puente.md", SPANISH)):
        asyncio.run(engine.ingest(kb, name, text.encode()))
    try:
        yield engine
    finally:
        engine.close()


async def converse(engine: Engine, *questions: str, kb: str = "tales"):
    """Ask each question after the ones before it, as `raptor chat` does; the answers in order."""
    history: list[Turn] = []
    answers = []
    for question in questions:
        answer = await engine.ask(kb, question, history=list(history))
        history += [Turn("user", question), Turn("assistant", answer.text)]
        answers.append(answer)
    return answers


def flat(text: str) -> str:
    return " ".join(text.split())


def sentences(answer) -> list[str]:
    """The sentences an answer quotes, each once, in its order."""
    return [s for quote in quotes_in(answer.text) for s in re.split(r"(?<=[.!?])\s+", flat(quote)) if s]


def where(sentence: str, text: str = TALE) -> int:
    return flat(text).index(sentence.lstrip("\u2026"))


# Each request's phrasings, as members type them; none of these is a list the rules were written from.
PHRASINGS = [
    ("what happened before that?", Onward.BEFORE),
    ("and before that", Onward.BEFORE),
    ("befor that?", Onward.BEFORE),
    ("ok and what came before?", Onward.BEFORE),
    ("what led up to this?", Onward.BEFORE),
    ("what happened earlier?", Onward.BEFORE),
    ("earlier?", Onward.BEFORE),
    ("what did she do before that?", Onward.BEFORE),
    ("what about before then?", Onward.BEFORE),
    ("what was before that", Onward.BEFORE),
    ("what came after that?", Onward.NEXT),
    ("and later?", Onward.NEXT),
    ("what happens later on", Onward.NEXT),
    ("what did we do next?", Onward.NEXT),
    ("who else?", Onward.OTHERS),
    ("anyone else?", Onward.OTHERS),
    ("and who else was there", Onward.OTHERS),
    ("somebody else?", Onward.OTHERS),
    ("any other people?", Onward.OTHERS),
    ("what else happened?", Onward.MORE),
    ("what else did he do?", Onward.MORE),
    ("anything else worth knowing?", Onward.MORE),
    ("what else does the story say?", Onward.MORE),
    ("where else?", Onward.MORE),
    ("any others?", Onward.MORE),
    ("is that all?", Onward.MORE),
    # the same requests in the other languages `language.py` tells, accents typed or not
    ("et ensuite ?", Onward.NEXT),
    ("¿y después?", Onward.NEXT),
    ("y despues", Onward.NEXT),
    ("und dann?", Onward.NEXT),
    ("e poi?", Onward.NEXT),
    ("e depois?", Onward.NEXT),
    ("en toen?", Onward.NEXT),
    ("que s'est-il passé ensuite ?", Onward.NEXT),
    ("et avant ?", Onward.BEFORE),
    ("¿y antes de eso?", Onward.BEFORE),
    ("und davor?", Onward.BEFORE),
    ("und wer noch?", Onward.OTHERS),
    ("qui d'autre ?", Onward.OTHERS),
    ("¿quién más?", Onward.OTHERS),
    ("e chi altro?", Onward.OTHERS),
    ("et quoi d'autre ?", Onward.MORE),
    ("was sonst noch?", Onward.MORE),
    ("¿y por qué?", Onward.REASON),
    ("perché?", Onward.REASON),
    ("¿quién tomó el molino?", None),  # a question of its own
    ("und wer hat die Mühle genommen?", None),
    ("what came first?", None),  # the story's opening, not the last answer's
    ("the other one?", None),  # a choice among what an answer listed
    ("what about the other?", None),
    ("who else was at the castle?", None),  # a question of its own
    ("what happened before the flood?", None),
    ("what else did Garrick take?", None),
]


@pytest.mark.parametrize(("phrasing", "kind"), PHRASINGS)
def test_what_a_follow_up_that_goes_on_asks(phrasing, kind):
    assert onward_ask(phrasing) is kind


@pytest.mark.parametrize("before", ["what happened before that?", "what came before?", "earlier?"])
async def test_before_that_quotes_what_comes_before_the_last_answer_in_its_document(engine, before):
    first, back = await converse(engine, "What did Garrick do in autumn?", before)
    anchor = where(sentences(first)[0])
    assert back.text.startswith(FOUND), back.text
    assert sentences(back) and not set(sentences(back)) & set(sentences(first)), back.text
    assert all(where(s) < anchor for s in sentences(back)), back.text
    assert [where(s) for s in sentences(back)] == sorted(where(s) for s in sentences(back))  # reading order


async def test_and_before_that_goes_further_back_each_time(engine):
    first, back, further = await converse(engine, "Who took the mill?", "what happened before that?", "and before that?")
    assert sentences(back) and sentences(further), further.text
    assert max(where(s) for s in sentences(further)) < min(where(s) for s in sentences(back)), further.text
    assert further.searched_as and "Before that" in further.searched_as


async def test_after_before_that_and_then_goes_forward_again_without_repeating(engine):
    first, back, forward = await converse(engine, "Who took the mill?", "what happened before that?", "and then?")
    assert sentences(forward) and not set(sentences(forward)) & set(sentences(back)), forward.text
    assert min(where(s) for s in sentences(forward)) > max(where(s) for s in sentences(back)), forward.text


@pytest.mark.parametrize("then", ["and then?", "after that?", "what came next?", "e poi?"])
async def test_and_then_after_the_documents_last_passage_says_it_ends_there(engine, then):
    """The last answer quoted the tale's last sentence: nothing comes after it, and the answer says so in
    its first line (and that its quotes are only the closest, which a later follow-up does not lean on)."""
    first, after = await converse(engine, "Who married Haldor?", then)
    assert sentences(first)[0] == "Brenna married Haldor the next summer.", first.text
    lead = after.text.splitlines()[0]
    assert lead == DOCUMENT_ENDS.format(document="tale.md"), after.text
    assert says_not_answered(after.text) and not after.answered
    assert not any("tale.md" in quote for quote in quotes_in(after.text)), after.text  # a lead, never a quote
    assert not set(sentences(after)) & set(sentences(first)), after.text


async def test_before_the_documents_first_passage_says_it_opens_with_it(engine):
    first, back = await converse(engine, "Where did the miller Oswin live with his daughter?", "what happened before that?")
    assert sentences(first)[0].startswith("Long ago a miller named Oswin"), first.text
    assert back.text.splitlines()[0] == DOCUMENT_OPENS.format(document="tale.md"), back.text
    assert says_not_answered(back.text)


async def test_and_then_mid_document_keeps_its_lead(engine):
    """Only a passage that ends its document says so: one with sentences after it quotes them. (The last
    answer is given: which sentences the engine quotes for "What did Haldor find?" is a near tie of the
    embedder's rounding, and when it quotes the story's last sentence, nothing does come after.)"""
    told = f"{FOUND}\n- \u201cHaldor found that the papers were forged.\u201d [1]"
    history = [Turn("user", "What did Haldor find?"), Turn("assistant", told)]
    after = await engine.ask("tales", "and then?", history=history)
    assert after.text.startswith(FOUND), after.text
    assert "ends with that passage" not in after.text
    assert "Garrick was driven out of Kell" in after.text, after.text


@pytest.mark.parametrize("then", ["and then?", "what happened next?"])
async def test_and_then_after_a_ranked_answer_reads_on_into_a_sentence_it_quoted_lower_down(engine, then):
    """A ranked answer quoted, third, the sentence that follows its first quote: that sentence is still
    what comes next (before, it was left out as said already, and the answer was the closest passages from
    before the quote or the next sentence as the ranking's cut-off fell)."""
    told = (
        f"{FOUND}\n"
        "- \u201cHaldor found that the papers were forged. Garrick was driven out of Kell, and the mill was "
        "given back to Oswin.\u201d [1]\n"
        "- \u201cThe countess sent her steward Haldor to read Garrick's papers.\u201d [1]\n"
        "- \u201cBrenna married Haldor the next summer.\u201d [1]"
    )
    history = [Turn("user", "What did Haldor find?"), Turn("assistant", told)]
    after = await engine.ask("tales", then, history=history)
    assert after.text.startswith(FOUND) and after.answered, after.text
    assert sentences(after) == ["Brenna married Haldor the next summer."], after.text


@pytest.mark.parametrize(("then", "other"), [("et ensuite ?", "und wer noch?"), ("¿y después?", "¿quién más?")])
async def test_a_follow_up_in_another_language_goes_on_as_its_english_does(engine, then, other):
    """'et ensuite ?' quotes, as 'and then?' does, sentences after the last answer's first quote in
    reading order; 'und wer noch?', as 'who else?' does, someone new: neither is searched as a new
    question (which quoted the last answer again)."""
    first, forward = await converse(engine, "Who took the mill?", then)
    assert forward.text.startswith(FOUND) and sentences(forward), forward.text
    assert not set(sentences(forward)) & set(sentences(first)), forward.text
    places = [where(s) for s in sentences(forward)]
    assert min(places) > where(sentences(first)[0]) and places == sorted(places), forward.text
    first, more = await converse(engine, "Who lent Oswin the money?", other)
    assert sentences(more) and not set(sentences(more)) & set(sentences(first)), more.text
    said = " ".join(sentences(first))
    assert any(p in " ".join(sentences(more)) for p in ("Brenna", "countess", "Haldor") if p not in said), more.text


@pytest.mark.parametrize("other", ["who else?", "anyone else?", "anybody else involved?"])
async def test_who_else_names_someone_the_last_answer_did_not_and_repeats_nothing(engine, other):
    first, more = await converse(engine, "Who lent Oswin the money?", other)
    assert more.text.startswith(FOUND), more.text
    assert sentences(more) and not set(sentences(more)) & set(sentences(first)), more.text
    said = " ".join(sentences(first))
    new_people = [p for p in ("Brenna", "countess", "Haldor") if p not in said]
    assert any(p in " ".join(sentences(more)) for p in new_people), more.text


async def test_what_else_did_he_do_reads_on_about_whom_the_last_answer_named(engine):
    """'he' after 'Who lent Oswin the money?' is the lender the answer named, not Oswin, whom the question
    named: every new sentence tells of Garrick."""
    first, more = await converse(engine, "Who lent Oswin the money?", "what else did he do?")
    assert more.searched_as and more.searched_as.startswith("Searched as: What else did he do?"), more.searched_as
    assert more.text.startswith(FOUND) and sentences(more), more.text
    assert not set(sentences(more)) & set(sentences(first)), more.text
    assert all("Garrick" in s for s in sentences(more)), more.text


async def test_what_else_did_he_do_when_nothing_else_names_him_says_so(engine):
    """The answer quoted every sentence naming Haldor: the rest of the story is only the closest passages."""
    first, more = await converse(engine, "What did Haldor find?", "what else did he do?")
    left = [s for s in re.split(r"(?<=[.!?])\s+", flat(TALE)) if "Haldor" in s and s not in sentences(first)]
    if left:  # a sentence naming him is still unquoted: it is quoted
        assert more.text.startswith(FOUND) and any("Haldor" in s for s in sentences(more)), more.text
    else:
        assert more.text.startswith(WEAK_MATCH), more.text
    assert not set(sentences(more)) & set(sentences(first)), more.text


async def test_before_that_in_a_history_quotes_the_earlier_events(engine):
    first, back = await converse(engine, "When was the toll gate pulled down?", "what happened before that?")
    anchor = where(sentences(first)[0], HISTORY)
    assert all(where(s, HISTORY) < anchor for s in sentences(back)), back.text
    unsaid = [s for s in re.split(r"(?<=[.!?])\s+", flat(HISTORY)) if flat(HISTORY).index(s) < anchor]
    unsaid = [s for s in unsaid if s not in sentences(first) and not s.startswith("#")]
    assert unsaid[-1] in sentences(back), back.text  # the event just before, not one a page back


def test_a_two_word_names_own_surname_does_not_end_what_is_said_of_it():
    """'Loveday Kittow hung hers': 'Kittow', a person of the text on its own too, is no next person,
    so the 'hers' after it shows her a woman, and a 'he' after 'who ...?' does not mean her."""
    told = [
        Turn("user", "What happened to the schooner?"),
        Turn("assistant", "From the documents:\n- \u201cThe schooner was bound for Cardiff with clay and had lost her mast.\u201d [1]"),
        Turn("user", "who helped the crew?"),
        Turn(
            "assistant",
            "From the documents:\n- \u201cAt the cottage Loveday Kittow hung hers on the cliff path.\u201d [1]\n"
            "- \u201cKittow's wife Loveday warmed the men.\u201d [1]\n- \u201cKittow rowed out twice.\u201d [1]",
        ),
    ]
    asked = rewrite("what did he get for it?", told)
    assert "Loveday" not in asked.core and "Cardiff" not in asked.core, asked
    assert asked.subject != "Cardiff", asked  # 'bound for Cardiff' names a place
    assert "Loveday" not in (rewrite("and what happened after?", [*told, Turn("user", "what did he get for it?"), Turn("assistant", "x")]).context)


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("¿Quién construyó el molino?", "Spanish"),
        ("cuantos dias puedo trabajar desde casa", "Spanish"),
        ("Qui a construit le moulin?", "French"),
        ("Wer hat die Mühle gebaut?", "German"),
        ("Was ist ein Mühlrad?", "German"),
        ("Chi ha costruito il mulino?", "Italian"),
        ("Quem construiu o moinho?", "Portuguese"),
        ("Wie heeft de molen gebouwd?", "Dutch"),
        ("Kto zbudował młyn?", "Polish"),
        ("谁建造了磨坊？", "Chinese"),
        ("誰が水車小屋を建てたのですか？", "Japanese"),
        ("누가 방앗간을 지었나요?", "Korean"),
        ("Кто построил мельницу?", "Russian"),
        ("Хто збудував млин і коли?", "Ukrainian"),  # not Russian: the same script, another language
        ("Хто пабудаваў млын?", "Belarusian"),
        ("Кой построи мелницата?", "Bulgarian"),
        ("Ко је саградио млин?", "Serbian"),
        ("Кој ја изгради воденицата?", "Macedonian"),
        ("Где мельница?", "a language written in Cyrillic"),  # Russian or Serbian: only the script is sure
        ("من بنى الطاحونة؟", "Arabic"),
        ("چه کسی آسیاب را ساخت؟", "Persian"),
        ("چکی کس نے بنائی؟", "Urdu"),
        ("चक्की किसने बनाई?", "Hindi"),
        ("गिरणी कोणी बांधली?", "Marathi"),
        ("Who built the mill?", "English"),
        ("who was he", "English"),
        ("Quién?", None),  # too short to tell
        ("Posso lavorare a casa oggi?", None),  # Italian or Portuguese: cannot tell
        ("Oswin Garrick 1702?", None),
    ],
)
def test_the_language_of_a_question_is_read_off_its_frequent_words_or_its_script(question, language):
    assert question_language(question) == language


def test_the_documents_language_and_a_question_in_another():
    assert documents_language([TALE]) == "English" and documents_language([SPANISH]) == "Spanish"
    assert other_language("¿Quién construyó el molino?", [TALE]) == ("English", "Spanish")
    assert other_language("Who built the bridge?", [SPANISH]) == ("Spanish", "English")
    assert other_language("Who built the mill?", [TALE]) is None
    assert other_language("¿Quién construyó el puente?", [SPANISH]) is None
    assert documents_language(["Oswin."]) is None  # too little to tell


UKRAINIAN = "Млин був збудований у 1702 році, і це був перший такий будинок у місті, який стояв біля річки."
RUSSIAN = "Мельница была построена в 1702 году, и это был первый такой дом в городе, который стоял у реки."


def test_languages_of_one_script_are_told_apart_and_a_script_alone_differs_from_none_of_them():
    """Ukrainian documents and a Russian question differ (both used to read as "Russian"); a question
    told only by its script is in no other language than documents of that script, and in another than
    English ones."""
    assert documents_language([UKRAINIAN]) == "Ukrainian" and documents_language([RUSSIAN]) == "Russian"
    assert other_language("Кто построил мельницу?", [UKRAINIAN]) == ("Ukrainian", "Russian")
    assert other_language("Хто збудував млин і коли?", [RUSSIAN]) == ("Russian", "Ukrainian")
    assert other_language("Где мельница?", [RUSSIAN]) is None
    assert other_language("Где мельница?", [UKRAINIAN]) is None
    assert other_language("Где мельница?", [TALE]) == ("English", "a language written in Cyrillic")
    assert other_language("Кто построил мельницу?", [RUSSIAN]) is None


SCRIPT_LETTERS = st.text(
    st.one_of(
        st.characters(min_codepoint=0x0400, max_codepoint=0x04FF),
        st.characters(min_codepoint=0x0600, max_codepoint=0x06FF),
        st.characters(min_codepoint=0x0900, max_codepoint=0x097F),
        st.sampled_from(" ?.,ab"),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(question=st.one_of(SCRIPT_LETTERS, st.text(max_size=60)), document=st.one_of(SCRIPT_LETTERS, st.text(max_size=200)))
def test_any_text_reads_as_a_language_or_none_and_never_fails(question, document):
    """Letters of the shared scripts in any mix (signs alone, no words, one script's letters among
    another's): a name or None, and a pair only when the two differ."""
    for text in (question, document):
        assert question_language(text) is None or isinstance(question_language(text), str)
        assert documents_language([text]) is None or isinstance(documents_language([text]), str)
    pair = other_language(question, [document])
    assert pair is None or (pair[0] != pair[1] and all(pair))


async def test_a_ukrainian_question_is_not_told_it_is_russian(engine):
    (answer,) = await converse(engine, "Хто забрав млин у мельника і коли?")
    lead = answer.text.splitlines()[0]
    assert lead.startswith(OTHER_LANGUAGE_OPENING + "English and the question seems to be in Ukrainian,"), answer.text
    assert unanswered_lead(answer.text)


def test_a_lead_naming_only_the_script_is_still_a_lead_for_quotes_that_do_not_answer():
    lead = OTHER_LANGUAGE.format(documents="English", asked="a language written in Cyrillic")
    assert unanswered_lead(lead + "\n- \u201cThe miller kept the mill.\u201d [1]")


@pytest.mark.parametrize(
    "question", ["¿Quién tomó el molino del molinero?", "Wer hat die Mühle genommen?", "谁拿走了磨坊？", "Qui a pris le moulin?"]
)
async def test_a_question_in_another_language_is_told_the_documents_language(engine, question):
    (answer,) = await converse(engine, question)
    lead = answer.text.splitlines()[0]
    assert lead.startswith(OTHER_LANGUAGE_OPENING + "English and the question seems to be in "), answer.text
    assert lead.count(".") == 0 and lead.endswith(":")  # one sentence, then the passages
    assert not answer.answered and says_not_answered(answer.text) and quotes_in(answer.text)


async def test_an_english_question_over_spanish_documents_is_told_they_are_in_spanish(engine):
    (answer,) = await converse(engine, "Who paid for the bridge?", kb="es")
    assert answer.text.startswith(OTHER_LANGUAGE_OPENING + "Spanish and the question seems to be in English"), answer.text


async def test_a_question_in_the_documents_language_keeps_its_lead(engine):
    (off,) = await converse(engine, "What did the astronauts eat on the moon?")
    assert off.text.startswith((WEAK_MATCH, NOTHING_RELATED)), off.text
    (answered,) = await converse(engine, "¿Quién construyó el puente de Alcor?", kb="es")
    assert not answered.text.startswith(OTHER_LANGUAGE_OPENING), answered.text


def test_the_tools_tally_counts_repeats_and_answers_that_quote_only_earlier_text():
    """`python -m raptor_tools.followup_onward` counts per kind what the tests above check one by one."""
    counts = Counter()
    first = "From the documents:\n- \u201cOswin could not pay, so Garrick took the mill.\u201d [1]"
    earlier = "From the documents:\n- \u201cOswin built the new wheel before midsummer.\u201d [1]"
    later = "From the documents:\n- \u201cBrenna married Haldor the next summer.\u201d [1]"
    assert tally(counts, "before", first, earlier, flat(TALE)) is True
    assert tally(counts, "before", first, later, flat(TALE)) is False
    assert tally(counts, "before", first, first, flat(TALE)) is False  # the same sentence again
    assert tally(counts, "who else", first, first, flat(TALE)) is None
    assert counts["before", "asked"] == 3 and counts["before", "only earlier"] == 1
    assert counts["before", "repeats"] == 1 and counts["who else", "repeats"] == 1
    table = report(counts)
    assert "| before | 3 | 1 | 1 |" in table and "| who else | 1 | 1 | - |" in table and "| what else | 0 | 0 | - |" in table


def test_only_the_other_language_lead_itself_reads_as_not_answered():
    lead = OTHER_LANGUAGE.format(documents="English", asked="Spanish")
    assert says_not_answered(f"{lead}\n- \u201cx\u201d [1]")
    assert not says_not_answered("The documents are in agreement that the bridge opened in 1884 [1].")


@pytest.mark.parametrize(
    ("question", "follow_up", "expected"),
    [
        ("What did the king's son do with the slipper?", "What did he do with it?", "What did the king's son do with it?"),
        ("What did the old miller sell?", "and why did he sell it?", "Why did the old miller sell it?"),
        ("Where did the keeper live?", "when did he leave?", "When did the keeper leave?"),
        ("What did the queen say to her daughter?", "why did she say that?", "Why did the queen say that?"),
        ("What did the countess send?", "what did she do later?", "What did the countess do later?"),
    ],
)
def test_a_lower_case_person_the_question_names_is_whom_the_pronoun_means(question, follow_up, expected):
    """'the king's son', 'the old miller', 'the keeper': a person named without a capital is the
    antecedent, as a name would be (the answer's quotes name nobody here, or someone in passing)."""
    told = [Turn("user", question), Turn("assistant", "From the documents:\n- \u201cIt was late when Tom Pryce came.\u201d [1]")]
    assert rewrite(follow_up, told).core == expected


def test_the_person_phrases_own_gender_word_wins_over_a_pronoun_a_quote_puts_near_it():
    """Cinderella: 'before the king's son, who gave her the golden shoe' puts a 'her' after him; 'son'
    still says he is a 'he'."""
    answer = (
        "From the documents:\n- \u201cShe first washed her hands and face clean, and then went and bowed down"
        " before the king's son, who gave her the golden shoe.\u201d [1]"
    )
    told = [Turn("user", "What did the king's son do with the slipper?"), Turn("assistant", answer)]
    assert rewrite("What did he do with it?", told).core == "What did the king's son do with it?"


@pytest.mark.parametrize(
    ("question", "follow_up", "kept"),
    [
        ("What did the king's son do with the slipper?", "why did she do that?", "she"),  # a son is no 'she'
        ("What did the stepsisters do to the shoe?", "why did he do that?", "he"),  # no one person
        ("What did Oswin give the miller?", "why did he give it?", "Oswin"),  # a name comes first
    ],
)
def test_a_person_phrase_does_not_take_a_pronoun_it_cannot_mean(question, follow_up, kept):
    told = [Turn("user", question), Turn("assistant", "From the documents:\n- \u201cNothing was said.\u201d [1]")]
    asked = rewrite(follow_up, told)
    assert kept in asked.core.split() or kept in asked.core, asked
    assert "the king's son" not in asked.core and "the stepsisters" not in asked.core and "the miller" not in asked.core


def _every_language_name() -> list[str]:
    from raptor_engine.query import language

    names = set(language.LANGUAGE_WORDS) | {name for name, _ in language.SCRIPTS}
    for script, languages in language.SHARED_SCRIPTS.items():
        names |= set(languages) | {language._unnamed(script)}
    return sorted(names)


def test_the_other_language_lead_is_told_for_every_language_name():
    names = _every_language_name()
    for documents, asked in zip(names, names[1:] + names[:1], strict=True):
        assert unanswered_lead(OTHER_LANGUAGE.format(documents=documents, asked=asked) + " [1] x")


def test_a_long_answer_repeating_the_leads_words_is_read_in_linear_time():
    """Unbounded names were searched from each repetition ('and the question seems to be in'): 1.7 s of CPU
    on this 100 KB answer, quadratic in it."""
    text = OTHER_LANGUAGE_OPENING + "x and the question seems to be in " * 3000
    start = time.process_time()
    assert not unanswered_lead(text)
    print(f"{len(text):,} characters: {time.process_time() - start:.4f}s CPU")
