"""Streamed LLM answers: what is shown while the model writes, that the finished answer equals the
non-streamed one for the same model output, the faults a stream shows, and the cleaning of what small
models copy from the prompt ("(node 6, layer:7_…)", "[[2]]"). Against the in-process OpenAI-protocol
server over real HTTP; no assertion on time."""

from __future__ import annotations

import re

import pytest

from raptor_engine.errors import BackendError
from raptor_engine.llm import clean_model_text, context_fence
from raptor_engine.streaming import ShownText, settled
from tests.llm_server import FakeLLMServer
from tests.test_llm import answerer_for, context_nodes
from tests.test_llm_faults import llm_engine
from tests.unhurried import unhurried_settings

BASE = (
    "The signal box at Dunmore was built of red brick in 1894. It controlled the junction with the "
    "branch line to the harbour.\n\nThe last signalman, Ewan Clark, retired in 1967 when the branch closed."
)
QUESTION = "What was the signal box built of?"


@pytest.fixture
async def server():
    async with FakeLLMServer() as running:
        running.stream_at(500)  # many small chunks, quickly
        yield running


class Screen:
    """What a reader saw: every text the stream showed, in order."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    async def show(self, text: str) -> None:
        self.shown.append(text)

    async def visible(self, text: str) -> bool:
        self.shown.append(text)
        return bool(text.strip())


# ---- cleaning what models copy from the prompt ------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "cleaned"),
    [
        ("The lamp was lit (node 6, layer:7_summary) every night [2].", "The lamp was lit every night [2]."),
        ("[2] (node 42, layer 2, knowledge-base summary) The prince searched.", "[2] The prince searched."),
        ("It was red [1] (node 7, layer 0, glass.txt, page 2).", "It was red [1]."),
        ("It was red (Node #7; layer=0, glass.txt) [1].", "It was red [1]."),
        ("It was red (node 7) [1].", "It was red [1]."),
        ("It was red (node 7, layer 0, a.md, pages 3-4, Intro > Part) [1].", "It was red [1]."),
        ("It was red [1]\n(node 7, layer 0, glass.txt", "It was red [1]\n"),
        ("It was red [[1]].", "It was red [1]."),
        ("It was red [[1]][[2]].", "It was red [1][2]."),
        ("It was red [[1, 2]].", "It was red [1][2]."),
        ("It was red [ [1] ].", "It was red [1]."),
        ("It was red [[1][2]].", "It was red [1][2]."),
        ("=====  documents 0123456789abcdef =====\nIt was red [1].", "It was red [1]."),
        ("It was red [1, 2].", "It was red [1][2]."),
        # the marker styles other models write for a block: lenticular brackets (Qwen, DeepSeek), with a
        # source tag after a dagger (OpenAI's file search), a footnote caret, a word before the number
        ("It was red 【1】.", "It was red [1]."),
        ("It was red【1】【2】.", "It was red[1][2]."),
        ("It was red 【1†source】.", "It was red [1]."),
        ("It was red 【4:0†glass.txt】.", "It was red [4]."),
        ("It was red [^2].", "It was red [2]."),
        ("It was red [Source 2] and blue [source: 3].", "It was red [2] and blue [3]."),
        ("It was red [Block 2][Context 3][Passage #4].", "It was red [2][3][4]."),
    ],
)
def test_echoed_block_labels_and_doubled_brackets_are_removed(written, cleaned):
    assert clean_model_text(written) == cleaned


@pytest.mark.parametrize(
    "text",
    [
        "The nodes (node graph) are drawn [1].",
        "He said (not node 7) that [1].",
        "A list [a] and (b) stays [1].",
        "Lymph node 6 was enlarged (layer 2 of tissue) [1].",
        "The note (see node 7 below) stays [1].",
        "The document's own ［2］ and ［^3］ stay as the context gave them [1].",
        "See [Appendix 2] and [Figure 3] [1].",
    ],
)
def test_text_that_only_resembles_a_label_is_kept(text):
    assert clean_model_text(text) == text


def test_the_fence_line_the_prompt_uses_is_what_is_removed():
    fence = context_fence("some blocks")
    assert clean_model_text(f"{fence}\nIt was red [1].") == "It was red [1]."


async def test_the_answer_loses_echoed_labels_streamed_or_not(server, tmp_path):
    server.responder = lambda body: "Cinderella lost (node 7, layer:0_glass) a slipper [[1]]."
    answerer = answerer_for(server, tmp_path)
    plain = await answerer.answer("q", context_nodes(), [])
    streamed = await answerer.answer_stream("q", context_nodes(), [], Screen().visible)
    assert plain.text == streamed.text == "Cinderella lost a slipper [1]."


# ---- what is shown while the model writes -----------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ("It was red [", "It was red "),
        ("It was red [1", "It was red "),
        ("It was red [[1]", "It was red "),
        ("It was red [1, 2", "It was red "),
        ("It was red [1]", "It was red "),
        ("It was red [1] b", "It was red [1] b"),
        ("It was red (", "It was red "),
        ("It was red (no", "It was red "),
        ("It was red (node 7, lay", "It was red "),
        ("It was red (nice", "It was red (nice"),
        ("It was red.\n===== docu", "It was red."),
        ("It was red 【", "It was red "),
        ("It was red 【1†sou", "It was red "),
        ("It was red [^", "It was red "),
        ("It was red [Sour", "It was red "),
        ("It was red [source: 2", "It was red "),
        ("It was red [Appendix 2] b", "It was red [Appendix 2] b"),
    ],
)
def test_what_may_still_change_is_held_back(written, shown):
    assert settled(written) == shown


def shown_as_it_grows(written: str) -> list[str]:
    """What ShownText shows while `written` arrives a character at a time: each text the one before it
    and more."""
    screen = ShownText(context_nodes())
    seen = [screen.text for end in range(1, len(written) + 1) if screen.update(written[:end])]
    assert all(later.startswith(earlier) for earlier, later in zip(seen, seen[1:], strict=False))
    return seen


def test_shown_text_renumbers_drops_pointless_markers_and_only_grows():
    written = "Cinderella lost (node 7, layer 0, glass.txt) a slipper [2] at the ball [9] [1]. The end [[2]]."
    seen = shown_as_it_grows(written)
    assert seen[-1] == "Cinderella lost a slipper [1] at the ball [2]. The end [1]."
    for text in seen:
        assert "(node" not in text and "[9]" not in text
        assert not re.search(r"\[[^\]]*$", text), text  # never a marker cut short


def test_markers_in_other_models_styles_stream_as_the_markers_they_become():
    seen = shown_as_it_grows("Cinderella lost a slipper 【2†source】 at the ball [Source 1]. The end [^2].")
    assert seen[-1] == "Cinderella lost a slipper [1] at the ball [2]. The end [1]."  # shown as it grew


MODEL_OUTPUTS = [
    "The box was built of red brick [1]. It controlled the junction [1][2].",
    "The box was built of red brick (node 3, layer 0, base.txt) [[1]]. [7] It closed [2, 1].",
    "The signal box at Dunmore was built of red brick in 1894. Nothing else is known.",  # no markers
    "Red brick [1], says the context. The last signalman retired in 1967 [3].",
]


CHECKED = {  # what the support check adds to the two outputs that leave a sentence uncited
    MODEL_OUTPUTS[2]: "The signal box at Dunmore was built of red brick in 1894 [1]. Nothing else is known.",
    MODEL_OUTPUTS[3]: "Red brick [1], says the context. The last signalman retired in 1967 [1].",
}


async def test_a_streamed_answer_is_the_answer_the_plain_call_gives(server, tmp_path, embedder):
    engine = llm_engine(server, tmp_path / "data", embedder)
    try:
        await engine.ingest("kb", "base.txt", BASE.encode())
        for written in MODEL_OUTPUTS:
            server.responder = lambda body, w=written: w if "numbered context blocks" in str(body) else "S."
            plain = await engine.ask("kb", QUESTION)
            screen = Screen()
            streamed = await engine.ask("kb", QUESTION, on_text=screen.show)
            assert streamed.text == plain.text and streamed.note == "", written
            assert [c.to_dict() for c in streamed.citations] == [c.to_dict() for c in plain.citations]
            assert len(screen.shown) > 3, "the answer was not shown as it was written"
            assert all(b.startswith(a) for a, b in zip(screen.shown, screen.shown[1:], strict=False))
            # shown as it ends, unless the support check adds markers to sentences left uncited
            assert plain.text == CHECKED.get(written, screen.shown[-1])
            assert [r.stream for r in server.requests[-2:]] == [False, True]
    finally:
        engine.close()


async def test_the_extractive_answerer_has_nothing_to_stream(tmp_path, embedder):
    from raptor_engine.engine import Engine

    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        await engine.ingest("kb", "base.txt", BASE.encode())
        screen = Screen()
        streamed = await engine.ask("kb", QUESTION, on_text=screen.show)
        assert screen.shown == [] and streamed.text == (await engine.ask("kb", QUESTION)).text
    finally:
        engine.close()


# ---- faults -----------------------------------------------------------------------------------------


async def test_a_stream_broken_after_text_was_shown_keeps_it_with_a_note(server, tmp_path):
    server.fail_next("truncated")
    screen = Screen()
    draft = await answerer_for(server, tmp_path).answer_stream("q", context_nodes(), [], screen.visible)
    assert draft.text and screen.shown[-1].startswith(draft.text.split(" [")[0])
    assert draft.note == "The answer was cut off because the connection to the LLM backend broke."
    assert server.outcomes() == ["truncated"]  # shown text is not taken back by sending again


async def test_a_stream_broken_before_any_text_is_sent_again_within_the_budget(server, tmp_path):
    server.fail_next("cut_early")
    draft = await answerer_for(server, tmp_path).answer_stream("q", context_nodes(), [], Screen().visible)
    assert draft.note == "" and draft.text.endswith("[1]")
    assert server.outcomes() == ["cut_early", "ok"]


async def test_streams_broken_until_the_retries_run_out_fail_clearly(server, tmp_path):
    server.always_fail = "cut_early"
    with pytest.raises(BackendError, match="could not answer after 3 attempts because the connection failed"):
        await answerer_for(server, tmp_path, llm_max_retries=2).answer_stream(
            "q", context_nodes(), [], Screen().visible
        )
    assert len(server.requests) == 3


async def test_a_stall_of_the_timeout_after_text_ends_like_a_timeout_keeping_the_text(server, tmp_path):
    server.fail_next("stall")
    server.hang_seconds = 30
    screen = Screen()
    answerer = answerer_for(server, tmp_path, llm_timeout=0.5)
    draft = await answerer.answer_stream("q", context_nodes(), [], screen.visible)
    assert draft.text and draft.note == "The answer was cut off because the model sent nothing for 0.5 s."
    assert len(server.requests) == 1


async def test_a_stall_before_any_text_is_a_timeout_and_is_retried(server, tmp_path):
    server.fail_next("stall")
    server.responder = lambda body: "Red [1]."  # one piece: the stall comes before a second
    server.stream_at(0)
    screen = Screen()

    async def nothing_visible(text: str) -> bool:
        return False  # as if everything so far were held back

    answerer = answerer_for(server, tmp_path, llm_timeout=0.5)
    draft = await answerer.answer_stream("q", context_nodes(), [], nothing_visible)
    assert draft.text == "Red [1]." and draft.note == ""
    assert server.outcomes()[-1] == "ok" and len(server.requests) == 2
    assert screen.shown == []


@pytest.mark.parametrize("fault", ["no_stream", "plain"])
async def test_a_server_that_will_not_stream_gets_the_plain_request(server, tmp_path, fault):
    server.fail_next(fault)
    screen = Screen()
    answerer = answerer_for(server, tmp_path)
    draft = await answerer.answer_stream("q", context_nodes(), [], screen.visible)
    assert draft.text.endswith("[1]") and screen.shown == [draft.text.replace(" [1]", "") + " [1]"]
    if fault == "no_stream":  # refused once: not asked to stream again
        assert [r.stream for r in server.requests] == [True, False]
        await answerer.answer_stream("q", context_nodes(), [], screen.visible)
        assert server.requests[-1].stream is False
    else:
        assert len(server.requests) == 1


async def test_a_server_that_refuses_stream_options_streams_without_them(server, tmp_path):
    server.unsupported_params = {"stream_options"}
    draft = await answerer_for(server, tmp_path).answer_stream("q", context_nodes(), [], Screen().visible)
    assert draft.text.endswith("[1]")
    assert [r.stream for r in server.requests] == [True, True]
    assert "stream_options" not in server.requests[-1].body


async def test_usage_of_a_streamed_answer_is_counted(server, tmp_path):
    draft = await answerer_for(server, tmp_path).answer_stream("q", context_nodes(), [], Screen().visible)
    assert draft.prompt_tokens > 0 and draft.completion_tokens > 0


def test_the_test_server_refuses_unknown_faults():
    with pytest.raises(ValueError):
        FakeLLMServer().fail_next("nonsense")


async def test_a_streamed_answer_cut_by_the_token_limit_ends_as_the_plain_one(server, tmp_path):
    server.finish_reason = "length"
    server.responder = lambda body: "Cinderella lost a slipper [1]. The prince searched the whole"
    answerer = answerer_for(server, tmp_path)
    plain = await answerer.answer("q", context_nodes(), [])
    screen = Screen()
    streamed = await answerer.answer_stream("q", context_nodes(), [], screen.visible)
    assert streamed.text == plain.text == "Cinderella lost a slipper [1]."
    assert screen.shown[-1].endswith("the whole")  # shown as written; the finished text trims it
