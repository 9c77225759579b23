"""Pictures of the tree in Discord (issue 11): `/kb tree` attaches the PNG, and each answer's
**Show tree** button privately sends the tree with exactly that answer's context highlighted,
also after a restart. Real discord.py objects against the fake Discord API, over a real Engine."""

from __future__ import annotations

from types import SimpleNamespace

from bot.kb import kb_name
from bot.pictures import NOT_DRAWN, TREE_FILE, size_refusal
from raptor_engine.engine import TreePicture
from tests.bot.bot_samples import LIGHTHOUSE, SOURDOUGH
from tests.bot.conftest import ATTACHMENT_LIMIT, BOB, CHAN_A, CHAN_B, GUILD, custom_ids, text_of
from tests.bot.test_bot_flows import add_doc, ask

KB_A = kb_name(GUILD, CHAN_A)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def record_answers(h) -> list:
    """Keep every Answer the engine gives, so a test can compare the picture with its context."""
    answers = []
    real_ask = h.engine.ask

    async def ask_and_record(*args, **kwargs):
        answer = await real_ask(*args, **kwargs)
        answers.append(answer)
        return answer

    h.engine.ask = ask_and_record
    return answers


async def test_kb_tree_attaches_the_picture_of_the_whole_tree(harness):
    h = harness
    await add_doc(h, "kestrel.md", LIGHTHOUSE)
    await add_doc(h, "bread.txt", SOURDOUGH)
    reply = (await h.replies_done(h.slash("kb", sub="tree", user=BOB)))[0]
    assert reply["flags"] & 64  # only the asker sees it
    assert "**L0**:" in text_of(reply) and "cross-document" in text_of(reply)
    files = h.fake.attachment_bytes(reply)
    assert list(files) == [TREE_FILE]
    png = files[TREE_FILE]
    assert png.startswith(PNG_SIGNATURE) and len(png) < ATTACHMENT_LIMIT
    assert reply["embeds"][-1]["image"]["url"] == f"attachment://{TREE_FILE}"
    assert png == h.engine.tree_picture(KB_A, name="#docs-a").png  # the engine's picture, byte for byte

    def broken(*args, **kwargs):
        raise RuntimeError("no fonts")

    h.engine.tree_picture = broken  # a drawing failure still gives the layers, and says why
    reply = (await h.replies_done(h.slash("kb", sub="tree", user=BOB)))[0]
    assert "**L0**:" in text_of(reply) and NOT_DRAWN in text_of(reply) and not reply["attachments"]


def test_a_picture_over_the_attachment_limit_is_refused_in_one_sentence():
    picture = TreePicture(b"x" * 3 * 1024 * 1024, nodes=1, highlighted=[], cited=[], missing=[], binned=False)
    small_limit = SimpleNamespace(filesize_limit=1024 * 1024)
    assert size_refusal(small_limit, picture) == (
        "The picture of this tree is 3.0 MB, over Discord's 1.0 MB limit for attachments."
    )
    assert size_refusal(SimpleNamespace(filesize_limit=ATTACHMENT_LIMIT), picture) is None


async def test_show_tree_highlights_exactly_the_answers_context_privately_even_after_a_restart(
    make_harness, bot_settings
):
    h = await make_harness()
    answers = record_answers(h)
    await add_doc(h, "kestrel.md", LIGHTHOUSE)
    await add_doc(h, "bread.txt", SOURDOUGH, channel=CHAN_B)
    _, replies = await ask(h, "How is the lens cleaned and when is the light lit?")
    answer_message = replies[-1]
    button = next(i for i in custom_ids(answer_message) if i.startswith("raptor:tree:"))
    answer = answers[-1]
    context = [n.node_id for n in answer.context.nodes]
    cited = [c.node_id for c in answer.citations]
    expected = h.engine.tree_picture(
        KB_A, highlight=context, cited=cited, caption=answer.question, name="#docs-a"
    )
    assert expected.highlighted == context and expected.png != h.engine.tree_picture(KB_A, name="#docs-a").png

    token = h.click(answer_message, button, user=BOB)
    reply = (await h.replies_done(token))[0]
    assert reply["flags"] & 64  # private to the person who clicked
    assert f"the {len(context)} nodes this answer drew on" in reply["content"]
    assert f"({len(set(cited))} cited" in reply["content"]
    assert h.fake.attachment_bytes(reply) == {TREE_FILE: expected.png}

    # a restart: a new bot over the same data directory answers the old button from the stored answer
    await h.bot.close()
    again = await make_harness(settings=bot_settings)
    token = again.click(answer_message, button)
    reply = (await again.replies_done(token))[0]
    assert reply["flags"] & 64 and again.fake.attachment_bytes(reply) == {TREE_FILE: expected.png}

    # clicked in another channel, the button cannot show this channel's tree
    refused = (await again.replies_done(again.click(answer_message, button, channel=CHAN_B)))[0]
    assert "no longer available" in refused["content"] and not refused["attachments"]
