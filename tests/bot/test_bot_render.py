"""Discord-limit rendering: splitting, sources embeds, context pages (pure, no Discord, no engine)."""

from __future__ import annotations

import re

import discord
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bot.render import (
    CONTENT_LIMIT,
    EMBEDS_TOTAL_LIMIT,
    context_pages,
    group_embeds,
    node_uses,
    render_answer,
    sources_embeds,
    split_text,
)
from raptor_engine.query.support import NOT_ANSWERED_SOURCES
from raptor_engine.types import Answer, Citation, ContextNode, MessageRef, RetrievedContext, WrongCitation


def make_answer(text: str, citations: int = 3, heading_len: int = 10) -> Answer:
    nodes = [
        ContextNode(
            node_id=10 + i,
            layer=i % 3,
            document=f"doc{i}.pdf" if i % 4 else None,
            score=0.5,
            text=f"node text {i} " * 40,
            tokens=80,
            leaf_count=1 if i % 3 == 0 else 4,
            page=i + 1 if i % 3 == 0 else None,
            heading=("Intro", "H" * heading_len) if i % 3 == 0 else (),
        )
        for i in range(citations)
    ]
    cites = [
        Citation(
            marker=i + 1,
            node_id=n.node_id,
            layer=n.layer,
            document=n.document,
            score=n.score,
            leaf_count=n.leaf_count,
            page=n.page,
            heading=n.heading,
        )
        for i, n in enumerate(nodes)
    ]
    ctx = RetrievedContext(nodes=nodes, tokens_used=80 * len(nodes), budget=2000, mode="collapsed", query="q")
    return Answer(
        question="What is it?",
        query="What is it?",
        text=text,
        citations=cites,
        context=ctx,
        backend="extractive",
    )


def test_short_text_is_one_piece():
    assert split_text("Hello [1].") == ["Hello [1]."]


def test_long_answer_splits_at_sentences_within_2000_and_keeps_markers():
    sentence = "The lighthouse keeper logged the lamp hours every night [12]. "
    text = sentence * 80  # ~5,000 characters
    pieces = split_text(text)
    assert len(pieces) == 3
    assert all(len(p) <= CONTENT_LIMIT for p in pieces)
    assert all(p.endswith("[12].") for p in pieces)  # cut after a sentence, never inside a marker
    assert " ".join(pieces).count("[12]") == 80


def test_unbroken_text_is_hard_cut_without_loss():
    text = "x" * 4500
    pieces = split_text(text)
    assert [len(p) for p in pieces] == [2000, 2000, 500]
    assert "".join(pieces) == text


def test_code_fences_stay_balanced_across_pieces():
    text = "Intro\n```\n" + "\n".join(f"line {i} of code" for i in range(300)) + "\n```\nAfter."
    pieces = split_text(text)
    assert len(pieces) > 1
    assert all(p.count("```") % 2 == 0 for p in pieces)
    assert all(len(p) <= CONTENT_LIMIT for p in pieces)


@settings(max_examples=60, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("ab c.\n[]1`")), min_size=0, max_size=9000),
    st.integers(min_value=16, max_value=3000),
)
@example("11111111111111`11", 16)  # no space to cut at: the cut goes before the inline code, not into "11"
@example("11111111`11111111", 16)  # the only inline code starts at half-way: cut there
@example("1111111 111111111111", 16)  # the only space is before half-way: a short piece, no word cut
@example("1111111\n111111111111", 16)
@example("1`111111111111111111", 16)  # a word longer than a message is cut; nothing is lost
def test_split_never_exceeds_the_limit_and_keeps_all_words(text, limit):
    pieces = split_text(text, limit)
    assert all(len(p) <= limit for p in pieces)
    words = re.findall(r"[^\s`]+", text)
    kept = re.findall(r"[^\s`]+", " ".join(pieces))
    assert "".join(kept) == "".join(words)  # nothing lost or reordered
    if all(len(word) <= limit for word in words):  # a word longer than a message must be cut; no other is
        assert kept == words


def test_a_piece_without_spaces_ends_before_inline_code_and_never_inside_a_backtick_run():
    assert split_text("11111111111111`11", 16) == ["11111111111111", "`11"]
    pieces = split_text("aaaaaaaaaaaaaa```bbb", 16)
    assert pieces[0] == "aaaaaaaaaaaaaa" and "".join(pieces[1:]).startswith("```")


def test_sources_embed_lists_layers_nodes_documents_and_footer():
    answer = make_answer("Answer [1] [2] [3].", citations=3)
    embeds = sources_embeds(answer)
    assert len(embeds) == 1
    lines = embeds[0].description.splitlines()
    assert lines[0] == "**[1]** L0 leaf · node 10 · all documents · p. 1 · Intro › HHHHHHHHHH"
    assert lines[1] == "**[2]** L1 summary · node 11 · doc1.pdf · 4 leaves"
    assert lines[2] == "**[3]** L2 summary · node 12 · doc2.pdf · 4 leaves"
    assert embeds[0].footer.text == "Context: L0×1 · L1×1 · L2×1 · 240/2,000 tokens · collapsed · extractive"


def test_many_citations_spread_over_embeds_and_messages_within_limits():
    answer = make_answer("Answer. " * 600, citations=60, heading_len=200)
    messages = render_answer(answer)
    for m in messages:
        assert len(m.content) <= CONTENT_LIMIT
        assert len(m.embeds) <= 10
        assert sum(len(e) for e in m.embeds) <= EMBEDS_TOTAL_LIMIT
        assert all(len(e.description or "") <= 4096 for e in m.embeds)
    descriptions = "\n".join(e.description for m in messages for e in m.embeds)
    assert descriptions.count("· node ") == 60
    assert messages[0].embeds == []  # the sources ride on the last text message
    assert any(m.embeds for m in messages)


def test_embeds_are_grouped_by_the_6000_total():
    embeds = [discord.Embed(description="y" * 4000) for _ in range(3)]
    assert [len(g) for g in group_embeds(embeds)] == [1, 1, 1]


def test_context_pages_number_nodes_like_the_markers_and_fit():
    answer = make_answer("a", citations=12)
    pages = context_pages(answer.question, answer.context.nodes, 960, 2000)
    assert len(pages) > 1
    text = "\n".join(p.description for p in pages)
    assert [int(n) for n in re.findall(r"\*\*\[(\d+)\]\*\*", text)] == list(range(1, 13))
    assert all(len(p.description) <= 4096 and len(p) <= 6000 for p in pages)
    assert pages[-1].footer.text.startswith(f"Page {len(pages)}/{len(pages)} · 12 nodes")


def test_a_message_leaf_is_cited_as_message_by_name_date_with_its_jump_link_and_an_inert_name():
    link = "https://discord.com/channels/300/400/1234"
    message = MessageRef(1234, "**bob** <@1>", "2026-03-01T18:00:00Z", link)
    node = ContextNode(11, 0, "#general 2026-03-01", 0.7, "The gate code is 4417.", 8, 1, message=message)
    cite = Citation(marker=1, node_id=11, layer=0, document="#general 2026-03-01", score=0.7, leaf_count=1, message=message)
    answer = Answer("q", "q", "It is 4417 [1].", [cite], RetrievedContext([node], 8, 2000, "collapsed", "q"), "x")
    label = r"[message by \*\*bob\*\* \<@1\>, 2026-03-01 18:00 UTC](" + link + ")"
    assert label in sources_embeds(answer)[0].description
    assert label in context_pages("q", [node], 8, 2000)[0].description  # Show context shows it too
    forged = MessageRef(1, "eve", "2026-03-01T18:00:00Z", "https://evil.example/channels/1/2/3")
    cite.message = forged
    assert "message by eve, 2026-03-01 18:00 UTC" in sources_embeds(answer)[0].description
    assert "evil.example" not in sources_embeds(answer)[0].description  # only Discord's jump links are linked


def test_a_long_citation_drops_the_link_rather_than_cutting_it():
    message = MessageRef(1, "<" * 80, "2026-03-01T18:00:00Z", "https://discord.com/channels/300/400/1")
    cite = Citation(marker=1, node_id=11, layer=0, document="[" * 100, score=0.7, leaf_count=1, message=message)
    node = ContextNode(11, 0, "[" * 100, 0.7, "text", 1, 1, message=message)
    answer = Answer("q", "q", "x [1]", [cite], RetrievedContext([node], 1, 2000, "collapsed", "q"), "x")
    line = sources_embeds(answer)[0].description
    assert "message by" in line and "](https://discord.com" not in line and len(line) <= 400


def test_sources_say_which_citations_were_matched_and_which_markers_do_not_support_their_sentence():
    answer = make_answer("Answer [1] [2] [?].", citations=2)
    answer.citations[1].kind = "matched"
    answer.checked = True
    answer.unsupported = ["Made up."]
    answer.wrong_citations = [WrongCitation(1, "The *lamp* was blue.")]
    [embed] = sources_embeds(answer)
    lines = embed.description.splitlines()
    assert not lines[0].endswith("*matched*") and lines[1].endswith(" · *matched*")
    assert lines[2] == "**[1]** does not support “The \\*lamp\\* was blue.”"  # the model's words, inert
    assert embed.footer.text.startswith(
        "1 sentence not found in the documents (marked [?]); 1 citation does not support its sentence.\nContext:"
    )
    pages = context_pages(answer.question, answer.context.nodes, 160, 2000, node_uses([10, 11], [11]))
    blocks = pages[0].description.split("\n\n")
    assert blocks[0].splitlines()[0].endswith("· **cited**") and blocks[1].splitlines()[0].endswith(
        "· **matched**"
    )


def test_the_sources_of_an_answer_the_documents_do_not_give_are_titled_the_closest_passages():
    """An answer that says the documents do not answer (the extractive lead line, or a model's reply)
    must not present its passages as the sources of an answer."""
    answered = make_answer("Answer [1].", citations=1)
    assert sources_embeds(answered)[0].title == "Sources"
    unanswered = make_answer("The documents do not answer this. The closest block is about oil [1].", citations=1)
    unanswered.answered = False
    assert sources_embeds(unanswered)[0].title == NOT_ANSWERED_SOURCES


PASTED = "We bought a rotavator last spring and use it on the clay beds near the gate most weekends. " * 20


@pytest.mark.parametrize(
    "query",
    [
        PASTED + "How often should the tines be cleaned?",  # a pasted paragraph, then the question
        "Who chaired the meeting? " * 80,  # one question repeated
        PASTED + "Who chaired it? (context: " + "What did the minutes say about the shed after the storm? " * 6 + ")",
    ],
    ids=["paste", "repeated", "follow-up"],
)
def test_a_long_searched_text_is_shown_whole(query):
    """However long, the searched line is what was searched, never its opening, "…" and a count of its
    characters: in the footer when it fits, else the text's last line (`searched_in_footer`)."""
    answer = make_answer("From the documents:\n- \u201cx\u201d [1]")
    answer.question, answer.query = "asked " + query, query.strip()
    embeds = sources_embeds(answer)
    shown = (embeds[-1].footer.text or "").split("\n") + (embeds[-1].description or "").split("\n")
    assert f"Searched as: {query.strip()}" in shown
