"""Multi-turn follow-up chains asked of the real engine (no LLM, but for one check with the fake
OpenAI-protocol server) over a knowledge base of two documents written here, one class of follow-up a
test: pronouns, a choice among what an answer listed, comparisons, a topic switch, corrections, short
acknowledgements, chat spelling, 'and then?' in reading order, and 'is that true?' mixed with wh-words
and 'tell me more'. The documents and phrasings are not the ones the rules were tuned on."""

from __future__ import annotations

import asyncio
import re

import pytest

from raptor_engine import Engine, Turn
from raptor_engine.query.answer import FOUND
from raptor_engine.query.followup import (
    CONTEXT_OPEN,
    WEAK_MATCH,
    quotes_in,
    split_standalone,
    standalone_question,
)
from raptor_engine.query.verify import CHECKED, PARTLY
from tests.llm_server import FakeLLMServer, default_responder
from tests.test_llm import llm_settings
from tests.unhurried import unhurried_settings

CANAL = """# The Ashby Canal

The Ashby Canal runs for eleven miles from Ashby to the river Tarn at Wenlow. It was designed by the
engineer Miriam Stroud and opened in 1796.

## Building the canal

Digging began in 1791 with a workforce of four hundred navvies. Miriam Stroud lined the summit pound with
puddled clay because the limestone below it leaked. She had learned surveying from her uncle, a mapmaker
in Bristol. The canal climbs 120 feet through nine locks.

## The engines

Two engines pumped water up to the summit. The Ranger was a beam engine built in 1801 by a Leeds foundry.
The Comet was a smaller engine added in 1838. The Ranger could lift 400 gallons a minute. The Comet lifted
150 gallons a minute and burned half as much coal.

## Decline and rescue

In 1862 a railway opened alongside the canal and took most of its coal traffic. After that the company cut
its tolls by a third, but trade kept falling. The last cargo boat passed through in 1931. Volunteers
reopened the locks in 1994, and today the canal carries pleasure boats.
"""

KEEPER = """# Lock keeper Tobias Wrenn

Tobias Wrenn kept the top lock at Ashby from 1840 to 1871. He had served as a ship's carpenter before he
came to the canal.

Wrenn opposed the railway because he feared it would ruin the canal trade. He was proved right within
twenty years.

In 1871 he left Ashby and moved to Gloucester, where he built narrowboats. He died there in 1889. His
niece, Ada Wrenn, became the first woman to run a canal carrying company in 1902.
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path_factory.mktemp("chains") / "data"), embedder=embedder)
    for name, text in (("canal.md", CANAL), ("keeper.md", KEEPER)):
        asyncio.run(engine.ingest("canal", name, text.encode()))
    try:
        yield engine
    finally:
        engine.close()


async def converse(engine: Engine, *questions: str):
    """Ask each question after the ones before it, as `raptor chat` does; the answers in order."""
    history: list[Turn] = []
    answers = []
    for question in questions:
        answer = await engine.ask("canal", question, history=list(history))
        history += [Turn("user", question), Turn("assistant", answer.text)]
        answers.append(answer)
    return answers


def flat(text: str) -> str:
    return " ".join(text.split())


def quoted(answer) -> str:
    return " ".join(flat(quote) for quote in quotes_in(answer.text))


def place(text: str, document: str = CANAL) -> int:
    """Where a quoted sentence (or the part of it after an ellipsis) stands in its document."""
    return flat(document).index(flat(text).lstrip("\u2026").split(". ")[0])


# ------------------------------------------------------------------------------------------- pronouns


@pytest.mark.parametrize("who", ["who was she", "and who is she?", "WHO IS SHE"])
async def test_she_after_a_who_question_is_the_person_the_answer_named(engine, who):
    _, person, learned = await converse(engine, "Who designed the Ashby Canal?", who, "where did she learn surveying?")
    assert re.fullmatch(r"who (?:is|was) miriam stroud\??", split_standalone(person.query).core.lower()), person.query
    assert learned.query.startswith("Where did Miriam Stroud learn surveying?"), learned.query
    assert "Bristol" in quoted(learned), learned.text


async def test_a_name_the_conversation_shows_as_a_place_is_never_he(engine):
    """'lock keeper of Ashby': the answer says 'at Ashby', so 'he' is Tobias Wrenn, not Ashby."""
    _, before, died = await converse(engine, "Who was lock keeper of Ashby?", "what job had he done before", "and when did he die")
    assert before.query.startswith("What job had Tobias Wrenn done before"), before.query
    assert "ship's carpenter" in quoted(before), before.text
    assert died.query.startswith("When did Tobias Wrenn die"), died.query


async def test_where_did_he_go_after_that_leads_with_where_he_went_though_quoted_before(engine):
    """'In 1871 he left Ashby and moved to Gloucester' may be quoted under 'who was he?': the follow-up
    asking where he went still leads with it (a destination in its form; its pronoun reads the name)."""
    first, went = await converse(engine, "Who was lock keeper of Ashby?", "where did he go after that?")
    assert went.query.startswith("Where did Tobias Wrenn go after that?"), went.query
    assert quotes_in(went.text) and "moved to Gloucester" in flat(quotes_in(went.text)[0]), (first.text, went.text)


def exchange(question: str, quote: str) -> list[Turn]:
    """A question and an extractive answer quoting one sentence."""
    return [Turn("user", question), Turn("assistant", f"\u201c{quote}\u201d [1]")]


def test_a_place_is_what_follows_in_at_or_near_never_a_name_written_as_an_owner():
    office = exchange("Who was postmaster of Kelby?", "Amos Reed kept the post office at Kelby from 1850.")
    assert standalone_question("where did he live?", office).startswith("Where did Amos Reed live?")
    # 'a promise to Lisbeth's mother': after 'to', and an owner, so still the person asked about
    promise = exchange("What is Lisbeth's nickname?", "Jacob made a promise to Lisbeth's mother before she died.")
    assert standalone_question("what is her job?", promise).startswith("What is Lisbeth's job?")


# --------------------------------------------------------------------------------------- choice, ordinals

LISTED = [
    Turn("user", "Which engines pumped the water?"),
    Turn(
        "assistant",
        "From the documents:\n- \u201cTwo engines pumped water up to the summit. The Ranger was a beam engine built "
        "in 1801 by a Leeds foundry.\u201d [1]\n- \u201cThe Comet was a smaller engine added in 1838.\u201d [1]\n"
        "- \u201cThe Ashby Canal runs for eleven miles.\u201d [2]",
    ),
]


@pytest.mark.parametrize(
    ("choice", "standalone"),
    [
        ("the 2nd one?", "Tell me about the Comet."),
        ("and the first one", "Tell me about the Ranger."),
        ("what about the last one?", "Tell me about the Comet."),
        ("when was the second one built", "When was the Comet built"),
        ("which of them is older?", "Which is older, the Ranger or the Comet?"),
        ("which one burned less coal", "Which burned less coal, the Ranger or the Comet?"),
        ("which is bigger", "Which is bigger, the Ranger or the Comet?"),
        ("the latter?", "Tell me about the Comet."),
    ],
)
def test_a_choice_among_what_the_last_answer_listed_names_it(choice, standalone):
    """The things the answer lists open its sentences in one block ([1]); another block's are not listed."""
    assert standalone_question(choice, LISTED) == standalone


def test_the_other_one_is_the_listed_thing_the_last_question_did_not_name():
    talk = LISTED + exchange("tell me about the first one", "The Ranger was built in 1801.")
    assert standalone_question("and the other one?", talk) == "Tell me about the Comet."


ENGINES = (
    "Two engines pumped water up to the summit. The Ranger was a beam engine built in 1801 by a Leeds foundry. "
    "The Comet was a smaller engine added in 1838. The Ranger could lift 400 gallons a minute."
)


def from_engines(quote: str) -> str:
    """The passage a quote was cited from, as `Engine.cited_passage` finds it."""
    return ENGINES if quote.split(". ")[0] in ENGINES else ""


@pytest.mark.parametrize(
    ("choice", "standalone"),
    [("and the 2nd?", "Tell me about the Comet."), ("which of them is newer?", "Which is newer, the Ranger or the Comet?")],
)
def test_a_choice_after_quotes_naming_one_thing_reads_the_passage_they_were_cited_from(choice, standalone):
    talk = [
        Turn("user", "What pumped the water up?"),
        Turn("assistant", f"{FOUND}\n- \u201cTwo engines pumped water up to the summit. The Ranger was a beam engine.\u201d [1]"),
    ]
    assert "Comet" not in standalone_question(choice, talk)  # the quotes alone name only the Ranger
    assert standalone_question(choice, talk, from_engines) == standalone
    # and the thing chosen is what 'it' means after it
    talk += exchange(choice, "The Comet was a smaller engine added in 1838.")
    if standalone.startswith("Tell me"):
        assert standalone_question("how much could it lift?", talk, from_engines) == "How much could the Comet lift?"


def test_a_choice_after_a_question_that_named_two_things_chooses_among_them():
    talk = exchange("Is the Ranger older than the Comet?", "The Ranger was a beam engine built in 1801.")
    assert standalone_question("what about the latter?", talk, from_engines) == "Tell me about the Comet."


async def test_the_passage_a_quote_was_cited_from_is_its_leaf(engine):
    passage = engine.cited_passage("canal", "The Ranger was a beam engine built in 1801 by a Leeds foundry. It leaked.")
    assert "The Comet was a smaller engine added in 1838." in flat(passage)
    assert engine.cited_passage("canal", "The canal was painted purple by elephants.") == ""
    assert engine.cited_passage("no such kb", "The Ranger was a beam engine.") == ""


async def test_a_choice_among_engines_one_quote_named_is_answered_about_the_other(engine):
    first, second = await converse(engine, "Which engines pumped water up to the summit?", "the 2nd one")
    if "Comet" in quoted(first) or "Ranger" not in quoted(first):
        pytest.skip("the first answer (ranked by answer.py) did not name the Ranger alone")
    assert second.query == "Tell me about the Comet.", second.query
    assert "Comet" in quoted(second), second.text


@pytest.mark.parametrize(
    "own", ["Which engineer designed the canal?", "Who was the first woman to run a carrying company?"]
)
def test_a_question_of_its_own_after_a_list_is_no_choice(own):
    """'which ...' and 'the first ...' that name something of their own are new questions, left as asked."""
    assert standalone_question(own, LISTED) == own


def test_a_choice_with_no_list_before_it_is_left_to_the_context():
    talk = exchange("Who designed the canal?", "Miriam Stroud designed it.")
    assert standalone_question("the second one?", talk).startswith("The second one?" + CONTEXT_OPEN)


async def test_a_choice_is_answered_about_the_thing_chosen(engine):
    """'the second one' is the engine the answer named second, as the member read it."""
    first, second, capacity = await converse(engine, "What engines were there?", "the second one", "how much could it lift?")
    listed = quoted(first)
    if not ("Ranger" in listed and "Comet" in listed):
        pytest.skip("the first answer (ranked by answer.py) did not list both engines")
    chosen = "Comet" if listed.index("Ranger") < listed.index("Comet") else "Ranger"
    assert second.query == f"Tell me about the {chosen}.", second.query
    assert chosen in quoted(second)
    assert capacity.query.startswith(f"How much could the {chosen} lift?"), capacity.query
    assert {"Comet": "150 gallons", "Ranger": "400 gallons"}[chosen] in quoted(capacity), capacity.text


# ------------------------------------------------------------------------------------------ comparisons


async def test_is_that_more_than_a_figure_quotes_the_figure_again(engine):
    first, compared = await converse(engine, "How far does the canal climb?", "is that more than 100 feet")
    assert compared.query == "How far does the canal climb?", compared.query
    assert "120 feet" in quoted(compared), compared.text


async def test_is_that_less_than_another_thing_asks_the_question_of_it(engine):
    _, compared = await converse(engine, "How much could the Ranger lift?", "is it any bigger than the Comet?")
    assert compared.query.startswith("How much could the Comet lift?"), compared.query
    assert "150 gallons" in quoted(compared), compared.text


def test_after_comparing_with_another_thing_it_is_still_the_thing_compared():
    """'was it weaker than the Ranger?' asks the Ranger's figure; the 'it' that follows is the Comet."""
    talk = exchange("How much could the Comet lift?", "The Comet lifted 150 gallons a minute.")
    talk += exchange("was it weaker than the Ranger?", "The Ranger could lift 400 gallons a minute.")
    assert standalone_question("how come it was weaker?", talk) == "How come the Comet was weaker?"
    assert standalone_question("when was it added", talk) == "When was the Comet added"


# --------------------------------------------------------------------------------------- a topic switch


async def test_a_new_full_question_mid_thread_is_searched_as_asked_and_the_person_is_kept(engine):
    _, _, switched, back = await converse(
        engine,
        "Who designed the Ashby Canal?",
        "why did she use clay?",
        "When did the last cargo boat pass through?",
        "where did she learn surveying",
    )
    assert switched.query == "When did the last cargo boat pass through?"
    assert "1931" in quoted(switched)
    assert back.query.startswith("Where did Miriam Stroud learn surveying"), back.query


# ------------------------------------------------------------------------------------------ corrections


async def test_a_correction_that_names_a_thing_asks_the_last_question_about_it(engine):
    _, corrected, after = await converse(engine, "When did the railway open?", "no i meant the canal", "who designed it?")
    assert corrected.query == "When did the canal open?", corrected.query
    assert "1796" in quoted(corrected), corrected.text
    assert after.query.startswith("Who designed the canal?"), after.query


def test_a_correction_that_gives_a_place_puts_it_in_place_of_the_last_ones():
    talk = exchange("What did Tobias Wrenn build in Gloucester?", "Narrowboats.")
    assert standalone_question("sorry, I meant at Ashby", talk) == "What did Tobias Wrenn build at Ashby?"
    assert standalone_question("no I mean in Bristol", talk) == "What did Tobias Wrenn build in Bristol?"


async def test_and_a_thing_asks_the_last_question_about_it(engine):
    _, other = await converse(engine, "When was the Ranger built?", "and the Comet")
    assert other.query == "When was the Comet built?", other.query
    assert "1838" in quoted(other), other.text


# ----------------------------------------------------------------------------------- acknowledgements


@pytest.mark.parametrize("ack", ["cheers!", "ok cool", "got it", "nice one", "great, thanks"])
async def test_an_acknowledgement_searches_nothing_and_the_next_follow_up_leans_on_the_question(engine, ack):
    _, acked, then = await converse(engine, "Who designed the Ashby Canal?", ack, "when did it open")
    assert not acked.has_context and not acked.citations, acked.text
    assert then.query.startswith("When did the Ashby Canal open"), then.query
    assert "1796" in quoted(then), then.text


# ------------------------------------------------------------------------------------------ chat spelling


async def test_chat_spellings_of_question_words_are_read_as_the_words(engine):
    _, opened, happened = await converse(engine, "who designed the ashby canal", "wen did it open", "wat happend in 1862")
    assert opened.query.startswith("When did the ashby canal open"), opened.query
    assert "1796" in quoted(opened), opened.text
    assert happened.query.lower().startswith("what happened in 1862"), happened.query
    assert "railway" in quoted(happened), happened.text


# ------------------------------------------------------------------------------- 'and then?' in reading order


async def test_and_then_goes_on_in_reading_order_from_where_the_last_answer_stopped(engine):
    first, then, after = await converse(engine, "When did work on the canal begin?", "and then what?", "and after that?")
    assert quoted(then) and quoted(after), (then.text, after.text)
    places = [[place(q) for q in quotes_in(a.text)] for a in (then, after)]
    for found in places:
        assert found == sorted(found), places
    assert places[1][0] > places[0][-1], places  # the second picks up after the first's last quote
    assert place(quotes_in(first.text)[0]) < places[0][0]


async def test_and_then_after_a_reason_cut_from_its_sentence_goes_on_after_that_sentence(engine):
    """'why?' quotes '…because the limestone below it leaked': 'and then?' continues after that sentence."""
    _, reason, then = await converse(engine, "What did Miriam Stroud line with clay?", "how come?", "and then?")
    cut = quotes_in(reason.text)[0]
    if not cut.startswith("\u2026"):
        pytest.skip("the reason was quoted whole (answer.py ranked it first)")
    assert quotes_in(then.text) and then.text.startswith(FOUND), then.text
    assert all(place(q) > place(cut) for q in quotes_in(then.text)), then.text


# -------------------------------------------------------------------- 'is that true?' mixed with the rest


async def test_a_check_shows_the_claims_it_checked_not_a_searched_question(engine):
    first, checked = await converse(engine, "Who designed the Ashby Canal?", "u sure?")
    assert checked.text.startswith(CHECKED), checked.text
    assert checked.verified and checked.verified[0] in flat(first.text)
    assert checked.searched_as.startswith("Checked against the documents: \u201c"), checked.searched_as
    assert "Searched as" not in checked.searched_as


async def test_when_after_a_check_of_a_next_answer_asks_about_what_it_quoted(engine):
    _, then, _, when = await converse(engine, "What happened in 1862?", "what came next?", "are you sure about that", "when?")
    latest = quotes_in(then.text)[0]
    assert split_standalone(when.query).context == flat(latest), when.query
    assert "Who designed" not in when.query


def test_a_wh_word_after_an_and_then_that_found_only_closest_passages_leans_on_the_last_real_answer():
    """'and after that?' past the document's end quotes only the closest passages: 'what year?' asks
    about what the answer before it quoted, not about those passages."""
    talk = exchange("What happened in 1862?", "In 1862 a railway opened alongside the canal.")
    talk += exchange("what happened after that", "After that the company cut its tolls by a third.")
    talk += [Turn("user", "and after that?"), Turn("assistant", f"{WEAK_MATCH}\n- \u201cThe Ranger was a beam engine.\u201d [1]")]
    for asked in ("what year?", "why"):
        assert split_standalone(standalone_question(asked, talk)).context == "After that the company cut its tolls by a third."


async def test_check_wh_word_and_tell_me_more_in_one_chain(engine):
    first, checked, when, more, why = await converse(
        engine, "What did Tobias Wrenn oppose?", "is that right?", "when did he leave ashby", "tell me more", "why?"
    )
    assert checked.text.startswith(CHECKED) and "railway" in flat(checked.text), checked.text
    assert when.query.lower().startswith("when did tobias wrenn leave ashby"), when.query
    assert "1871" in quoted(when), when.text
    said = set(quotes_in(when.text))
    assert quotes_in(more.text) and not said & set(quotes_in(more.text)), more.text
    assert why.has_context and quotes_in(why.text), why.text


# ----------------------------------------------------------------------- 'is that true?' with an LLM answer


def paraphrasing(body: dict) -> str:
    """Summaries and condensing as the default fake; answers paraphrase the canal's designer and add a
    claim no document makes."""
    system = " ".join(str(m.get("content", "")) for m in body.get("messages") or [] if m.get("role") == "system")
    if "Summarizing" in system or "standalone question" in system.lower():
        return default_responder(body)
    return (
        "The canal's designer was Miriam Stroud, an engineer, and it first opened in 1796 [1]. "
        "Its boats were pulled by elephants from the circus [2]."
    )


async def test_a_check_of_an_llm_answer_finds_a_paraphrased_claim_by_meaning(tmp_path, embedder):
    async with FakeLLMServer(responder=paraphrasing) as server:
        engine = Engine(llm_settings(server, tmp_path / "data"), embedder=embedder)
        try:
            await engine.ingest("canal", "canal.md", CANAL.encode())
            answer = await engine.ask("canal", "Who designed the canal?")
            history = [Turn("user", "Who designed the canal?"), Turn("assistant", answer.text)]
            checked = await engine.ask("canal", "really?", history=history)
        finally:
            engine.close()
    assert checked.text.startswith(PARTLY), checked.text  # the designer found, the elephants not
    assert "It was designed by the engineer Miriam Stroud and opened in 1796." in flat(checked.text)
    assert "elephants" not in quoted(checked)
    assert len(checked.verified) == 2 and re.search(r"Miriam Stroud", checked.verified[0])


async def test_a_quote_opening_with_an_abbreviation_is_found_by_its_whole_first_sentence(engine):
    """'St. Mary's wharf ...' is one sentence: cut at 'St.', the search would take the shorter leaf that also
    says 'St.' instead of the one the quote came from."""
    await engine.ingest("saints", "lock.md", b"St. Anne's lock dates from 1840.")
    await engine.ingest(
        "saints", "wharf.md", b"St. Mary's wharf handled coal from 1850 until the railway came. Its crane was steam-powered."
    )
    passage = engine.cited_passage("saints", "St. Mary's wharf handled coal from 1850 until the railway came.")
    assert "Its crane was steam-powered." in flat(passage)


@pytest.mark.parametrize(
    ("asked", "quotes", "follow_up", "event"),
    [
        # the answer's first quote is the railway, which the question named only to date the reopening
        (
            "Was the canal reopened after the railway came?",
            ["In 1862 a railway opened alongside the canal and took most of its coal traffic.",
             "Volunteers reopened the locks in 1994, and today the canal carries pleasure boats."],
            "and when was that?",
            "Volunteers reopened the locks in 1994",
        ),
        (
            "Tell me about the engines of the canal",
            ["Two engines pumped water up to the summit.", "The Comet was a smaller engine added in 1838."],
            "who did that?",
            "Two engines pumped water up to the summit.",
        ),
        (
            "Can a boat use the canal at night?",
            ["Boats may pass the locks after dark only with the lock keeper's written leave.",
             "The canal climbs 120 feet through nine locks."],
            "who approves that?",
            "Boats may pass the locks after dark",
        ),
        (
            "What did the company do about the tolls?",
            ["Volunteers reopened the locks in 1994.", "After that the company cut its tolls by a third."],
            "so why did that happen?",
            "After that the company cut its tolls by a third.",
        ),
    ],
)
def test_a_wh_word_asked_of_that_means_the_event_the_last_answer_told(asked, quotes, follow_up, event):
    """'and when was that?' after an answer about a rebuild asks when the rebuild was, not when the fire
    the question also named was: 'that' is the answer's statement of what was asked."""
    answer = "From the documents:\n" + "\n".join(f"- \u201c{q}\u201d [{i}]" for i, q in enumerate(quotes, 1))
    rewrite = split_standalone(standalone_question(follow_up, [Turn("user", asked), Turn("assistant", answer)]))
    assert rewrite.context.startswith(event), rewrite
    assert rewrite.core.lower().rstrip("?") in follow_up.lower()


@pytest.mark.parametrize("follow_up", ["who was that?", "what happened after that?", "is that true?"])
def test_other_questions_about_that_keep_their_reading(follow_up):
    answer = "From the documents:\n- \u201cVolunteers reopened the locks in 1994.\u201d [1]"
    talk = [Turn("user", "Was the canal reopened after the railway came?"), Turn("assistant", answer)]
    rewrite = split_standalone(standalone_question(follow_up, talk))
    assert not rewrite.context.startswith("Volunteers"), rewrite


async def test_when_was_that_after_a_reopening_answers_the_reopening_not_the_railway(engine):
    first, when, where = await converse(
        engine, "Was the canal reopened after the railway took its trade?", "and when was that?", "where was that?"
    )
    assert "1994" in flat(quotes_in(when.text)[0]), (first.text, when.text)
    assert split_standalone(where.query).context == split_standalone(when.query).context


def test_that_is_the_answers_first_statement_when_it_shares_the_questions_words():
    """'Angus kept it lit until 1958' answered 'When did Angus stop lighting the lamp?' first: 'where was
    that?' asks of it, though 'Angus took over the lamp' shares more of the question's words."""
    answer = (
        "From the documents:\n- \u201cAngus kept it lit until 1958, when the harbour board put in an electric "
        "beacon.\u201d [1]\n- \u201cHer younger brother, Angus, took over the lamp after that.\u201d [1]"
    )
    talk = [Turn("user", "When did Angus stop lighting the lamp?"), Turn("assistant", answer)]
    assert split_standalone(standalone_question("and where was that?", talk)).context.startswith("Angus kept it lit")


@pytest.mark.parametrize(
    ("asked", "follow_up", "meant"),
    [
        ("How many days a week can I work from home?", "what about from abroad?",
         "How many days a week can I work from abroad?"),
        ("Which boats were moored at Wenlow?", "and what about at Ashby?", "Which boats were moored at Ashby?"),
        ("What did Tobias Wrenn build in Gloucester?", "what about in Bristol", "What did Tobias Wrenn build in Bristol?"),
    ],
)
def test_what_about_a_place_asks_the_last_question_of_that_place(asked, follow_up, meant):
    talk = [Turn("user", asked), Turn("assistant", "From the documents:\n- \u201cSomething.\u201d [1]")]
    assert split_standalone(standalone_question(follow_up, talk)).core.rstrip("?") == meant.rstrip("?")


@pytest.mark.parametrize(
    ("follow_up", "meant"),
    [
        ("no, I meant when did Ada Wrenn run the company", "When did Ada Wrenn run the company?"),
        ("sorry I meant where did Tobias Wrenn go", "Where did Tobias Wrenn go?"),
        ("no i mean how much was the toll", "How much was the toll?"),
    ],
)
def test_a_correction_that_is_a_question_of_its_own_is_searched_as_that_question(follow_up, meant):
    talk = [Turn("user", "When was the Heron lost?"), Turn("assistant", "From the documents:\n- \u201cIn 1923.\u201d [1]")]
    assert split_standalone(standalone_question(follow_up, talk)).core == meant
