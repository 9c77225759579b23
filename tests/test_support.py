"""Every written answer is checked against its context (raptor_engine/query/support.py): sentences the
model left uncited get the marker of the node that supports them, shown as matched; a marker pointing at
a node that does not support its sentence is reported; a sentence nothing supports is marked [?] and
counted; what states nothing is exempt. With the real embedder, the check alone and through the engine
and the CLI with an OpenAI-protocol test server."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import raptor_engine.cli as cli_module
from raptor_engine import Engine
from raptor_engine.llm import OpenAIAnswerer
from raptor_engine.query.answer import SentenceVectors
from raptor_engine.query.support import (
    CITED,
    EXEMPT,
    MATCHED,
    NOT_ANSWERED,
    NOT_ANSWERED_SOURCES,
    UNSUPPORTED,
    UNSUPPORTED_MARK,
    SupportIndex,
    check_answer,
    claim_text,
    describe_support,
    says_not_answered,
    spelled_numbers,
    states_something,
)
from raptor_engine.types import Turn
from tests.llm_server import FakeLLMServer
from tests.sample_texts import RAILWAY
from tests.test_answer_ranking import context
from tests.test_cli_streaming import llm  # noqa: F401, F811  (a fixture)
from tests.unhurried import unhurried_settings

COPIED = "The light was first lit in 1839."  # block 3
PARAPHRASED = "Kittow, the son of a Halbeck pilot, was thirty-four."  # block 2, clauses reordered
INVENTED = "The keeper kept three cats and a parrot in the lamp room."


@pytest.fixture
def index(embedder) -> SupportIndex:
    return SupportIndex(context(), SentenceVectors(embedder))


def kinds(check) -> list[tuple[str, int | None]]:
    return [(claim.kind, claim.supported_by) for claim in check.claims]


def test_uncited_sentences_get_the_supporting_nodes_marker_and_an_invented_one_is_flagged(index):
    check = check_answer(f"{COPIED} {PARAPHRASED} {INVENTED}", index)
    assert kinds(check) == [(MATCHED, 3), (MATCHED, 2), (UNSUPPORTED, None)]
    assert check.text == (
        "The light was first lit in 1839 [3]. Kittow, the son of a Halbeck pilot, was thirty-four [2]. "
        f"The keeper kept three cats and a parrot in the lamp room {UNSUPPORTED_MARK}."
    )
    assert check.matched == {2, 3} and check.cited == set()
    assert check.unsupported == [INVENTED]


def test_a_marker_the_model_gave_is_kept_when_its_node_supports_the_sentence(index):
    check = check_answer(f"{COPIED} [3] And {PARAPHRASED[0].lower()}{PARAPHRASED[1:]} [2]", index)
    assert kinds(check) == [(CITED, 3), (CITED, 2)]
    assert check.matched == set() and check.wrong == []
    assert "[3]" in check.text and check.text.count("[") == 2  # nothing added


def test_a_marker_pointing_at_a_node_that_does_not_say_it_is_reported_and_the_right_node_matched(index):
    check = check_answer(f"The Board awarded Ambrose Kittow a silver medal [2]. {COPIED} [6]", index)
    assert kinds(check) == [(MATCHED, 1), (MATCHED, 3)]
    assert check.wrong == [(2, "The Board awarded Ambrose Kittow a silver medal."), (6, COPIED)]
    assert check.text.startswith("The Board awarded Ambrose Kittow a silver medal [2] [1].")


def test_a_number_the_context_does_not_hold_makes_a_copied_sentence_unsupported(index):
    """Paraphrases keep numbers; a changed year is a different claim, however similar the words."""
    check = check_answer("The tower was painted white in 1911. The tower was painted white in 1910.", index)
    assert kinds(check) == [(UNSUPPORTED, None), (MATCHED, 3)]


def test_a_number_in_digits_is_held_by_a_source_that_spells_it_out(index):
    """Block 2 says "thirty-four": a model that writes 34 states the same number; 35 does not."""
    check = check_answer("Kittow, the son of a Halbeck pilot, was 34. Kittow, the son of a Halbeck pilot, was 35.", index)
    assert kinds(check) == [(MATCHED, 2), (UNSUPPORTED, None)]


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("fifty keepers", {"50"}),
        ("Forty-Two years", {"42"}),
        ("three hundred and ten", {"310"}),
        ("twenty-five thousand three hundred", {"25300"}),
        ("two thousand and five", {"2005"}),
        ("it was fifty and sixty", {"50", "60"}),  # "and" joins a number only after hundred or thousand
        ("seven, eight", {"7", "8"}),
        ("nineteen eighty-four", {"19", "84"}),
        ("a hundred and then some", set()),
        ("the twentieth", set()),
    ],
)
def test_spelled_numbers_are_read_as_digits(text, numbers):
    assert spelled_numbers(text) == numbers


def test_a_marker_opening_the_next_sentence_belongs_to_the_one_before(index):
    check = check_answer(f"{COPIED} [3] {INVENTED}", index)
    assert kinds(check) == [(CITED, 3), (UNSUPPORTED, None)]


@pytest.mark.parametrize(
    "sentence",
    [
        "Here is what the documents say about the keepers:",
        "Do you want to know more about the lighthouse?",
        "The documents do not mention a lighthouse cat.",
        "The context does not say who painted the tower.",
        "The passages don't mention a cat.",
        "It doesn't contain any information about the keeper's wife.",
        "I don't know.",
        "Nothing else is known.",
        "Thanks!",
    ],
)
def test_what_states_nothing_is_exempt(index, sentence):
    assert not states_something(claim_text(sentence))
    check = check_answer(sentence, index)
    assert [claim.kind for claim in check.claims] == [EXEMPT]
    assert check.text == sentence


def test_who_says_it_is_not_part_of_what_is_compared(index):
    check = check_answer(
        "According to the context, the light was first lit in 1839. Red brick, says the text.", index
    )
    assert kinds(check)[0] == (MATCHED, 3)


def test_list_items_without_a_full_stop_are_checked_and_marked_at_their_end(index):
    check = check_answer(
        "The documents say:\n- A fog signal was installed below the tower in 1923\n- Cats ruled the lamp room",
        index,
    )
    assert kinds(check) == [(EXEMPT, None), (MATCHED, 7), (UNSUPPORTED, None)]
    assert check.text.endswith(f"in 1923 [7]\n- Cats ruled the lamp room {UNSUPPORTED_MARK}")


def test_the_line_under_an_answer_counts_what_was_not_found():
    assert describe_support(0, 0) == ""
    assert describe_support(2, 0) == f"2 sentences not found in the documents (marked {UNSUPPORTED_MARK})."
    assert describe_support(1, 1) == (
        f"1 sentence not found in the documents (marked {UNSUPPORTED_MARK}); "
        "1 citation does not support its sentence."
    )
    assert describe_support(0, 2) == "2 citations do not support their sentences."


def test_sentences_embedded_while_streaming_are_not_embedded_again(embedder):
    class Counting:
        dim = embedder.dim

        def __init__(self) -> None:
            self.embedded: list[str] = []

        def embed(self, texts):
            self.embedded += texts
            return embedder.embed(texts)

    counting = Counting()
    index = SupportIndex(context(), SentenceVectors(counting))  # type: ignore[arg-type]
    index.prepare()
    index.vectors([claim_text(f"{COPIED} [1]")])  # what `ahead` does with a finished sentence
    before = len(counting.embedded)
    check_answer(f"{COPIED} [1] {INVENTED}", index)
    assert counting.embedded[before:] == [INVENTED]


async def test_while_streaming_finished_sentences_are_embedded_and_the_one_still_written_is_not(index):
    index.ahead(f"{COPIED} [3] {PARAPHRASED} The keeper kept thr")
    assert index._ahead is not None
    await index._ahead
    cached = index.vectors._vectors
    assert claim_text(COPIED) in cached and claim_text(PARAPHRASED) in cached
    assert not any(text.startswith("The keeper kept") for text in cached)
    index.ahead(f"{COPIED} [3] {PARAPHRASED} {INVENTED} More")  # only the newly finished one goes
    assert index._ahead is not None
    assert (await index._ahead).shape[0] == 1 and INVENTED in cached


# ---- through the engine and the CLI, with an OpenAI-protocol test server --------------------------

FROM_THE_DOCUMENT = (
    "In October 1903 the river Merrow rose eight feet in a single night. "
    "Stationmaster Tobias Wren led the passengers to the chapel on the hill by lantern light."
)
MADE_UP = "The railway was later bought by a circus owner from Lisbon."


def answering(text: str):
    return lambda body: text if "numbered context blocks" in str(body) else "A summary."


@pytest.fixture
async def railway_engine(tmp_path, embedder):
    async with FakeLLMServer() as server:
        settings = unhurried_settings(data_dir=tmp_path / "data", llm_base_url=server.base_url, llm_api_key="sk-test")
        engine = Engine(
            unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder, answerer=OpenAIAnswerer(settings)
        )
        await engine.ingest("t", "railway.md", RAILWAY.encode())
        try:
            yield engine, server
        finally:
            engine.close()


async def test_an_uncited_answer_cites_what_supports_it_and_flags_what_nothing_does(railway_engine):
    engine, server = railway_engine
    server.responder = answering(f"{FROM_THE_DOCUMENT} {MADE_UP}")
    answer = await engine.ask("t", "What happened in the flood?")
    assert answer.checked and answer.unsupported == [MADE_UP]
    assert answer.citations and {c.kind for c in answer.citations} == {MATCHED}
    context_ids = {n.node_id for n in answer.context.nodes}
    assert all(c.node_id in context_ids for c in answer.citations)
    assert answer.text.count("[1]") >= 1 and answer.text.endswith(f"Lisbon {UNSUPPORTED_MARK}.")
    out = answer.to_dict()
    assert out["support"] == {"checked": True, "unsupported": [MADE_UP], "wrong_citations": []}
    assert [c["kind"] for c in out["citations"]] == [MATCHED] * len(answer.citations)


async def test_a_model_citation_of_a_block_that_does_not_say_it_is_reported(railway_engine):
    engine, server = railway_engine
    flood = "In October 1903 the river Merrow rose eight feet in a single night."
    # the model cites every block: at most one of them holds the flood sentence
    server.responder = lambda body: (
        " ".join(f"{flood} [{n}]." for n in range(1, 4))
        if "numbered context blocks" in str(body)
        else "A summary."
    )
    answer = await engine.ask("t", "What happened in the flood?")
    assert answer.wrong_citations, answer.text
    assert {w.sentence for w in answer.wrong_citations} == {flood}
    markers = {c.marker for c in answer.citations}
    assert {w.marker for w in answer.wrong_citations} <= markers
    assert CITED in {c.kind for c in answer.citations} or MATCHED in {c.kind for c in answer.citations}


@pytest.mark.parametrize("tail", [" [1", " [2, 3", " ["])
async def test_an_answer_that_ends_inside_a_marker_is_checked_without_it(railway_engine, tail):
    """A reply cut mid-marker (a model's stop, a stream broken after text) drops the unclosed marker:
    left in, "[1" showed in the answer and its number made a copied sentence unsupported."""
    engine, server = railway_engine
    flood = "In October 1903 the river Merrow rose eight feet in a single night"
    server.responder = answering(flood + tail)
    answer = await engine.ask("t", "What happened in the flood?")
    assert answer.unsupported == [] and answer.citations, answer.text
    assert answer.text.startswith(flood) and tail.strip() not in answer.text.replace("[1]", "")


async def test_streaming_gives_the_same_checked_answer(railway_engine):
    engine, server = railway_engine
    server.responder = answering(f"{FROM_THE_DOCUMENT} {MADE_UP}")
    plain = await engine.ask("t", "What happened in the flood?")
    shown: list[str] = []

    async def show(text: str) -> None:
        shown.append(text)

    streamed = await engine.ask("t", "What happened in the flood?", on_text=show)
    assert shown and (streamed.text, streamed.unsupported) == (plain.text, plain.unsupported)
    assert [c.kind for c in streamed.citations] == [c.kind for c in plain.citations]


@pytest.mark.parametrize("message", ["thanks!", "which documents do you have?"])
async def test_small_talk_and_the_list_of_documents_are_not_checked(railway_engine, message):
    engine, server = railway_engine
    answer = await engine.ask("t", message)
    assert not answer.checked and answer.unsupported == [] and UNSUPPORTED_MARK not in answer.text


async def test_where_does_it_say_that_lists_the_places_without_counting_the_last_answers_unfound_sentence(
    railway_engine,
):
    engine, server = railway_engine
    server.responder = answering(f"{FROM_THE_DOCUMENT} {MADE_UP}")
    first = await engine.ask("t", "What happened in the flood?")
    history = [Turn("user", "What happened in the flood?"), Turn("assistant", first.text)]
    places = await engine.ask("t", "where does it say that?", history=history)
    assert first.unsupported and places.unsupported == [] and places.wrong_citations == []
    assert [c.node_id for c in places.citations] == [c.node_id for c in first.citations]


async def test_the_extractive_answer_is_not_checked(tmp_path, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        await engine.ingest("t", "railway.md", RAILWAY.encode())
        answer = await engine.ask("t", "What happened in the flood?")
        assert not answer.checked and {c.kind for c in answer.citations} == {CITED}
    finally:
        engine.close()


def test_ask_json_and_the_printed_sources_say_matched_and_count_the_unsupported(llm):  # noqa: F811
    server, data = llm  # tests/test_cli_streaming.py: the CLI with a test server, a railway tree built
    server.responder = answering(f"{FROM_THE_DOCUMENT} {MADE_UP}")
    runner = CliRunner()
    question = [*data, "ask", "What happened in the flood?", "--kb", "t"]
    out = json.loads(runner.invoke(cli_module.cli, [*question, "--json"]).output)
    printed = runner.invoke(cli_module.cli, question).output
    assert out["support"]["unsupported"] == [MADE_UP]
    assert {c["kind"] for c in out["citations"]} == {MATCHED}
    assert "1 sentence not found in the documents" in printed
    sources = printed.split("Sources", 1)[1]
    assert sources.count("matched") == len(out["citations"])


@pytest.mark.parametrize(
    ("text", "not_answered"),
    [
        (f"{NOT_ANSWERED}. The closest block says the river rose in 1903 [1].", True),
        ("The context does not say who built the bridge.", True),
        ("I cannot find that in the documents.", True),
        ("Nothing in the documents clearly answers this; the closest passages are:\n- \u201cx\u201d [1]", True),
        ("The documents say nothing about this; the nearest passages are:\n- \u201cx\u201d [1]", True),
        ("No stationmaster but Tobias Wren is named in the documents [1].", False),  # it cites: it answers
        ("Tobias Wren led them [1]. Nothing else is known.", False),
        ("From the documents:\n- \u201cThe river rose.\u201d [1]", False),
    ],
)
def test_an_answer_that_says_the_documents_do_not_answer_is_recognised(text, not_answered):
    assert says_not_answered(text) is not_answered


async def test_a_model_saying_the_documents_do_not_answer_is_an_unanswered_answer(railway_engine):
    """The prompt asks for a fixed opening when the blocks do not answer; the engine marks the answer
    unanswered (the CLI and the bot then title its passages the closest, not its sources)."""
    engine, server = railway_engine
    server.responder = answering(f"{NOT_ANSWERED}. In October 1903 the river Merrow rose eight feet in a single night [1].")
    answer = await engine.ask("t", "Who won the 1998 World Cup?")
    system = server.requests[-1].messages[0]["content"]
    assert f'begin your reply with the sentence "{NOT_ANSWERED}."' in system
    assert NOT_ANSWERED in server.requests[-1].messages[-1]["content"]
    assert not answer.answered and answer.to_dict()["answered"] is False
    assert answer.unsupported == []  # saying so is not a claim to check
    server.responder = answering(FROM_THE_DOCUMENT)
    assert (await engine.ask("t", "What happened in the flood?")).answered


def test_the_cli_titles_an_unanswered_answers_passages_the_closest(llm):  # noqa: F811
    server, data = llm
    server.responder = answering(f"{NOT_ANSWERED}. In October 1903 the river Merrow rose eight feet in a single night [1].")
    printed = CliRunner().invoke(cli_module.cli, [*data, "ask", "Who won the 1998 World Cup?", "--kb", "t"]).output
    assert NOT_ANSWERED_SOURCES in printed and "\nSources\n" not in printed
    server.responder = answering(FROM_THE_DOCUMENT)
    printed = CliRunner().invoke(cli_module.cli, [*data, "ask", "What happened in the flood?", "--kb", "t"]).output
    assert "\nSources\n" in printed and NOT_ANSWERED_SOURCES not in printed
