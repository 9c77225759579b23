"""Answers and threads at their edges (fake Discord, real engine): a question under a spoiler on its private
'Show context' page, a question cut at Discord's length, a follow-up's footer (each test fails on the code
before its fix; docs/BOT.md, botqa20)."""

from __future__ import annotations

from bot.render import context_pages
from tests.bot.conftest import CHAN_A, custom_ids
from tests.bot.test_bot_answers import ARCHIVE, FIRST_QUESTION
from tests.bot.test_bot_flows import add_doc, ask


async def test_show_context_of_a_question_under_a_spoiler_keeps_it_hidden(make_harness):
    """/ask with its question under a spoiler: the answer hides it, and so does the clicker's private
    'Show context' page (its title names no question; the page opens with it under a spoiler). Before, the
    page's title was "Context for: Who was appointed ...", unhidden."""
    h = await make_harness()
    await add_doc(h, "archive.md", ARCHIVE)
    _, replies = await ask(h, f"||{FIRST_QUESTION}||", channel=CHAN_A)
    answer = replies[-1]
    button = next(i for i in custom_ids(answer) if i.startswith("raptor:ctx:"))
    page = (await h.replies_done(h.click(answer, button)))[0]
    embed = page["embeds"][0]
    assert "1962" not in embed["title"] and "appointed" not in embed["title"], embed["title"]
    description = embed["description"]
    opening, _, rest = description.partition("\n\n")
    assert opening.startswith("||") and opening.endswith("||") and "appointed keeper" in opening, opening
    assert "appointed keeper of the archive in 1962?" not in rest.replace("\\", "")
    assert "**[1]**" in rest


def test_context_pages_of_a_hidden_question_stay_within_discords_limit():
    """The spoiler line takes room from every page: long nodes and a long question still fit 4,096."""
    from raptor_engine.types import ContextNode

    nodes = [
        ContextNode(node_id=i, layer=0, document="d.md", score=1.0, text="*_|`" * 600, tokens=900, leaf_count=1)
        for i in range(6)
    ]
    question = "|*`_" * 400
    for hidden in (False, True):
        pages = context_pages(question, nodes, 5000, 6000, hidden=hidden)
        assert all(len(p.description or "") <= 4096 and len(p.title or "") <= 256 for p in pages)
        assert all((p.description or "").startswith("||") for p in pages) is hidden
