"""Messages that are not questions ('thanks!', 'ok', 'hello', '?') get a short reply, search nothing,
and never become what a follow-up leans on."""

from __future__ import annotations

import pytest

from raptor_engine.engine import EmptyKnowledgeBaseError, Engine
from raptor_engine.query.smalltalk import (
    REPLIES,
    SOURCES_CHANGED,
    Act,
    names_nothing,
    small_talk_act,
    strip_small_talk,
    without_small_talk,
)
from raptor_engine.types import Turn
from tests.unhurried import unhurried_settings


@pytest.mark.parametrize(
    ("message", "act"),
    [
        ("thanks!", Act.THANK),
        ("Thank you so much!!", Act.THANK),
        ("ok thanks", Act.THANK),
        ("great, thank you bot", Act.THANK),
        ("THX", Act.THANK),
        ("ok", Act.ACKNOWLEDGE),
        ("Okay.", Act.ACKNOWLEDGE),
        ("got it, makes sense", Act.ACKNOWLEDGE),
        ("that\u2019s helpful", Act.ACKNOWLEDGE),
        ("lol", Act.ACKNOWLEDGE),
        ("\uff1f", Act.UNCLEAR),  # the full-width question mark of Chinese and Japanese
        ("\U0001f44d", Act.ACKNOWLEDGE),
        ("\U0001f44d\U0001f3fd \U0001f64f", Act.ACKNOWLEDGE),
        ("hello", Act.GREET),
        ("Hi there!", Act.GREET),
        ("good morning raptor", Act.GREET),
        ("hey, what can you do?", Act.HELP),
        ("help", Act.HELP),
        ("bye", Act.FAREWELL),
        ("thanks, bye!", Act.FAREWELL),
        ("?", Act.UNCLEAR),
        ("??", Act.UNCLEAR),
        ("what?", Act.UNCLEAR),
        ("Huh?", Act.UNCLEAR),
    ],
)
def test_messages_that_are_not_questions_are_recognised(message, act):
    assert small_talk_act(message) is act


@pytest.mark.parametrize(
    "message",
    [
        "why?",
        "really?",
        "tell me more",
        "what else?",
        "and then?",
        "who?",
        "when?",
        "what about the second one?",
        "thanks, who kept the light?",
        "ok and who replaced him?",
        "Hello, what is this document about?",
        "What happened?",
        "help me find the date of the fire",
        "great storm",
        "Who said thank you?",
        "ok " * 40,  # longer than a greeting ever is
        # questions in other scripts: words, even with no ASCII letter or no '?' among them
        "灯塔是什么时候建的？",
        "ما هو المنارة",
        "Кто зажёг маяк?",
        "Τι είναι ο φάρος;",
        "灯台はいつ建てられましたか",
        "Wer war Kittow?",
        "¿Quién encendió la luz?",
        # a number or a date alone looks for where the documents give it
        "1887",
        "1887?",
        "12.5%",
        "2020-03-01",
    ],
)
def test_questions_are_not_small_talk(message):
    assert small_talk_act(message) is None


@pytest.mark.parametrize(
    ("question", "stripped"),
    [
        ("ok thanks, and who replaced him?", "and who replaced him?"),
        ("Thanks! When did she leave?", "When did she leave?"),
        ("Great - and why?", "and why?"),
        ("Hi, what is this about?", "what is this about?"),
        ("What, exactly, is a fresnel lens?", "What, exactly, is a fresnel lens?"),
        ("So, what happened next?", "So, what happened next?"),
        ("thanks!", "thanks!"),
        ("Who replaced him?", "Who replaced him?"),
    ],
)
def test_small_talk_in_front_of_a_question_is_taken_off(question, stripped):
    assert strip_small_talk(question) == stripped


def test_small_talk_exchanges_leave_the_history_a_follow_up_leans_on():
    history = [
        Turn("user", "Who kept the light in 1887?"),
        Turn("assistant", "From the documents: Ambrose Kittow [1]"),
        Turn("user", "thanks!"),
        Turn("assistant", "You're welcome!"),
        Turn("user", "ok, and when did he retire?"),
        Turn("assistant", "In 1903 [1]"),
    ]
    assert without_small_talk(history) == [
        history[0],
        history[1],
        Turn("user", "and when did he retire?"),
        history[5],
    ]


ARCHIVE = (
    "# The Harbour Archive\n\n"
    "In 1962 the town council appointed Margaret Hale as keeper of the archive. "
    "She had trained as a librarian in Edinburgh and was the first woman to hold the post. "
    "Margaret Hale left the archive in 1975, when she married a boat builder and moved to Arran. "
    "After 1975 the archive was run by a committee of volunteers for ten years. "
    "In 1985 the council appointed David Orr, who computerised the catalogue.\n"
)


async def test_the_engine_replies_to_small_talk_without_searching_and_follow_ups_skip_it(tmp_path, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        with pytest.raises(EmptyKnowledgeBaseError):
            await engine.ask("kb", "hello")  # an empty knowledge base says so, as for a question
        await engine.ingest("kb", "archive.md", ARCHIVE.encode())
        first = await engine.ask("kb", "Who was appointed keeper of the archive in 1962?")
        history = [Turn("user", first.question), Turn("assistant", first.text)]

        thanks = await engine.ask("kb", "Thanks!", history=history)
        assert thanks.text.startswith("You're welcome")
        assert not thanks.has_context and thanks.citations == [] and not thanks.rewritten
        history += [Turn("user", thanks.question), Turn("assistant", thanks.text)]

        follow_up = await engine.ask("kb", "ok, and when did she leave?", history=history)
        assert follow_up.has_context and follow_up.citations
        assert follow_up.query.startswith("When did Margaret Hale leave?")
        assert "Thanks" not in follow_up.query and "ok" not in follow_up.query.lower().split()
        assert "Margaret Hale left the archive in 1975" in follow_up.text
        for question in ("Кто хранитель архива?", "档案馆的管理员是谁？", "1985"):  # searched, however written
            asked = await engine.ask("kb", question)
            assert asked.has_context and asked.citations, question
    finally:
        engine.close()


@pytest.mark.parametrize("question", ["what is the?", "Who is he?", "why?", "what about them?!", "the the the"])
def test_questions_made_only_of_words_that_name_nothing_are_recognised(question):
    assert names_nothing(question)


@pytest.mark.parametrize(
    "question",
    ["What is this about?", "1985", "who won?", "Кто хранитель?", "档案馆的管理员是谁？", "E-4012", "summarise"],
)
def test_a_question_naming_anything_or_asking_about_the_whole_is_searched(question):
    assert not names_nothing(question)


async def test_a_question_that_names_nothing_asks_for_something_specific_unless_it_follows_an_answer(
    tmp_path, embedder
):
    """ "what is the?" got three confident quotes picked by nothing in particular; after an answer,
    "why?" is a follow-up the conversation gives words to."""
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        await engine.ingest("kb", "archive.md", ARCHIVE.encode())
        for question in ("what is the?", "ok, who was it?", "Why?"):
            vague = await engine.ask("kb", question)
            assert vague.text == REPLIES[Act.VAGUE], question
            assert not vague.has_context and vague.citations == [], question
            assert vague.answered is False and vague.to_dict()["answered"] is False, question
        first = await engine.ask("kb", "Who was appointed keeper of the archive in 1962?")
        history = [Turn("user", first.question), Turn("assistant", first.text)]
        follow_up = await engine.ask("kb", "why?", history=history)
        assert follow_up.has_context and follow_up.citations
    finally:
        engine.close()


@pytest.mark.parametrize(
    "message",
    [
        "What documents do you have?",
        "which files are in this channel?",
        "How many files are there?",
        "list the documents",
        "What's been uploaded? Which documents?",
        "what documents can I ask about?",
        "Which papers were uploaded?",
        "show me the files",
    ],
)
def test_questions_about_which_documents_there_are(message):
    assert small_talk_act(message) is Act.DOCUMENTS


@pytest.mark.parametrize(
    "message",
    [
        "what are these documents about?",
        "what is this document about?",
        "What's in the files?",
        "What documents did Margaret Hale catalogue?",
        "which document mentions the fire?",
        "what are the sources of the river?",
        "summarise the documents",
    ],
)
def test_questions_about_what_the_documents_say_are_searched(message):
    assert small_talk_act(message) is None


async def test_which_documents_is_answered_from_the_list(tmp_path, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        await engine.ingest("kb", "archive.md", ARCHIVE.encode())
        await engine.ingest("kb", "notes.txt", b"The quay was rebuilt in 1911 after a winter storm broke it.")
        answer = await engine.ask("kb", "What documents do you have?")
        assert answer.text.splitlines() == ["I can answer from 2 documents:", "- archive.md", "- notes.txt"]
        assert not answer.has_context and not answer.citations
    finally:
        engine.close()


@pytest.mark.parametrize(
    "message",
    [
        "Where does it say that?",
        "which page is that on?",
        "source?",
        "What's the source?",
        "where did you get that from?",
        "Which document is that from?",
        "cite that please",
        "sources",
        "which section is that in?",
        "Which file did that come from?",
    ],
)
def test_questions_about_the_last_answers_sources(message):
    assert small_talk_act(message) is Act.SOURCES


@pytest.mark.parametrize(
    "message",
    [
        "where?",
        "where did she go?",
        "what is the source of the Nile?",
        "which document mentions the fire?",
        "what page does the index start on?",
        "where was it built?",
        "What is this document?",
        "which section covers the war?",
    ],
)
def test_questions_about_places_and_pages_in_the_documents_are_searched(message):
    assert small_talk_act(message) is None


async def test_where_does_it_say_that_after_the_quoted_document_left_points_nowhere_else(tmp_path, embedder):
    """The last question answered again over a changed tree quotes other passages: those are not where
    the answer in the conversation came from, so the reply says it cannot trace it."""
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        await engine.ingest("kb", "archive.md", ARCHIVE.encode())
        await engine.ingest("kb", "herons.md", b"# Herons\n\nThe herons nest at Tregantle. They were counted in 2001.\n")
        first = await engine.ask("kb", "Who was appointed keeper of the archive in 1962?")
        assert {c.document for c in first.citations} == {"archive.md"}
        history = [Turn("user", first.question), Turn("assistant", first.text)]
        await engine.forget("kb", "archive.md")
        places = await engine.ask("kb", "where does it say that?", history=history)
        assert places.text == SOURCES_CHANGED and places.citations == [] and not places.has_context
    finally:
        engine.close()


async def test_where_does_it_say_that_gives_the_last_answers_places_and_quotes(tmp_path, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        await engine.ingest("kb", "archive.md", ARCHIVE.encode())
        alone = await engine.ask("kb", "where does it say that?")
        assert alone.text.startswith("Ask me a question first") and not alone.has_context
        first = await engine.ask("kb", "Who was appointed keeper of the archive in 1962?")
        history = [
            Turn("user", first.question),
            Turn("assistant", first.text),
            Turn("user", "thanks!"),
            Turn("assistant", "You're welcome!"),
        ]
        where = await engine.ask("kb", "Where does it say that?", history=history)
        assert [c.node_id for c in where.citations] == [c.node_id for c in first.citations]
        assert where.query == first.query and where.rewritten  # shown as "Searched as: <the question>"
        lines = where.text.splitlines()
        assert lines[0] == "The last answer quoted:" and len(lines) == len(first.citations) + 1
        assert lines[1].startswith("- [1] archive.md") and "Margaret Hale as keeper" in lines[1]
    finally:
        engine.close()


def test_only_messages_that_search_nothing_skip_the_question_limits():
    """The bot exempts small talk from its cooldown; 'source?' re-runs the last question, so it is not."""
    from types import SimpleNamespace

    from bot.answering import question_refusal

    class Refusing:
        def retry_after(self, user_id):
            return 5.0

        def message(self, wait):
            return "wait"

    services = SimpleNamespace(cooldown=Refusing(), question_limit=Refusing())
    assert question_refusal(services, 1, "thanks!") is None
    assert question_refusal(services, 1, "hello") is None
    assert question_refusal(services, 1, "where does it say that?") is not None
    assert question_refusal(services, 1, "Who kept the light?") is not None


@pytest.mark.parametrize(
    "message",
    ["in French please", "In French?", "French please", "can you say that in German?", "translate that into Spanish",
     "en français", "auf Deutsch bitte", "answer in English"],
)
def test_asking_for_an_answer_in_another_language_is_no_question(message):
    """botqa16, played through the real bot: 'in French please' was searched as a question ('Nothing in the
    documents clearly answers this'), and the correction after it leaned on it."""
    assert small_talk_act(message) is Act.TRANSLATE


@pytest.mark.parametrize(
    "message", ["What did the French king do?", "is it in French?", "what is the French word for pier?", "in which language?"]
)
def test_questions_about_languages_are_searched(message):
    assert small_talk_act(message) is None


@pytest.mark.parametrize(("message", "act"), [("in French please", Act.TRANSLATE), ("can you make it shorter?", Act.REWORD)])
async def test_a_request_about_the_last_answer_gets_one_sentence_and_the_next_follow_up_skips_it(
    tmp_path, embedder, message, act
):
    """'in French please' and (botqa23) 'can you make it shorter?' search nothing, and the follow-up after
    them leans on the question before."""
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        await engine.ingest("kb", "archive.md", ARCHIVE.encode())
        first = await engine.ask("kb", "Who was appointed keeper of the archive in 1962?")
        history = [Turn("user", first.question), Turn("assistant", first.text)]
        request = await engine.ask("kb", message, history=history)
        assert request.text == REPLIES[act] and not request.has_context and not request.answered
        history += [Turn("user", request.question), Turn("assistant", request.text)]
        follow_up = await engine.ask("kb", "and when did she leave?", history=history)
        assert follow_up.query.startswith("When did Margaret Hale leave?"), follow_up.query
    finally:
        engine.close()


@pytest.mark.parametrize(
    "message",
    ["say that shorter", "shorter please", "can you make it shorter?", "simplify that", "in bullet points",
     "explain it like I'm five", "explain like im 5", "ELI5 pls", "in simpler words", "rephrase that", "too long",
     "in plain English please", "can you put that in your own words?", "a shorter version?", "in other words?",
     "in one sentence", "in a sentence please", "can you say it in one line?", "briefly?", "in a few words",
     "in a nutshell", "one-liner please", "in two sentences"],
)
def test_asking_to_reshape_the_last_answer_is_no_question(message):
    """botqa23, played through the real bot: "say that shorter" was searched ("Nothing in the documents
    clearly answers this"), "can you make it shorter?" as "Can you make the new shed shorter?", "in bullet
    points" and "shorter please" over every document."""
    assert small_talk_act(message) is Act.REWORD


@pytest.mark.parametrize(
    "message",
    ["tl;dr", "summarise that", "is it shorter?", "which route is shorter?", "who is Eli?", "is the pier too long?",
     "how long?", "in short?", "what does that mean?", "can you explain that?", "what is the simplest way to start it?",
     "which sentence says so?", "who wrote the first line?", "how many words?", "what did she say briefly after that?"],
)
def test_questions_near_a_request_to_reshape_are_searched(message):
    assert small_talk_act(message) is None

