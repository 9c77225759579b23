"""What users see in Discord, through the bot's real flows against the fake Discord API: document text
and file names are inert (no markdown, masked links, mentions, timestamps, emoji or live URLs), a
document's own [n] never become markers, progress edits are throttled and end clean, /kb status counts
the WAL and the indices, cross-document summaries name their documents, thread names are plain, /kb
tree fits a one-document channel, and Show context reflows a PDF's hard line breaks."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st
from reportlab.pdfgen import canvas

from bot.answering import thread_name
from bot.jobs import ThrottledEditor
from bot.kb import kb_name
from bot.render import human_size, inert, reflow, render_answer, split_text
from raptor_engine.types import AnswerDraft
from tests.bot.bot_samples import LIGHTHOUSE, SOURDOUGH
from tests.bot.conftest import BOB, CHAN_A, GUILD, custom_ids, text_of
from tests.bot.test_bot_flows import add_doc, ask, sources_of
from tests.bot.test_bot_render import make_answer

KB_A = kb_name(GUILD, CHAN_A)

HOSTILE_NAME = "**Q3** ||secret|| <@&350> <t:1767225600> @everyone [x](https:e.vil) -# notes.txt"
HOSTILE_TEXT = """Account help for the password reset

You can [Reset your Discord password here](http://evil.example/reset) before the password deadline [2].
Ask <@&350> or @everyone and @here about the Discord password reset, or <@123456789012345678> in <#400> [2].
The Discord password reset window closes <t:1767225600:R> and shows <:wave:123456789012345678> and <a:spin:1>.
**Important**: the Discord password reset code is ||hidden|| and `secret` until the page loads [3].
# The Discord password reset heading [2]
> A quoted line about the Discord password reset policy.
-# Small print about the Discord password reset fee.
```the Discord password reset fence```
Visit https://evil.example/password for Discord password reset details [2] and __more__ ~~here~~.
The Discord password reset was explained in the earlier notice [3], [ 2 ] and 【2】.
"""

# Discord syntax that is still live (not preceded by the escaping backslash).
LIVE = {
    "masked link": re.compile(r"(?<!\\)\[[^\]\n]*(?<!\\)\]\("),
    "mention, channel, timestamp or emoji": re.compile(r"(?<!\\)<(?:@|#|t:|a?:\w)"),
    "@everyone/@here": re.compile(r"(?<!\\)@(?:everyone|here)"),
    "spoiler": re.compile(r"(?<!\\)\|(?<!\\)\|"),
    "bold": re.compile(r"(?<!\\)\*(?<!\\)\*"),
    "underline or italics": re.compile(r"(?<![\\\w])_"),
    "strike-through": re.compile(r"(?<!\\)~(?<!\\)~"),
    "code": re.compile(r"(?<!\\)`"),
    "link": re.compile(r"\w://"),
    "heading, quote or subtext": re.compile(r"(?m)^\s*(?:#|>|-#)"),
}


def live_syntax(text: str) -> list[str]:
    return [name for name, pattern in LIVE.items() if pattern.search(text)]


def without_bot_markup(text: str) -> str:
    """What the bot itself formats: bold **[n]** markers and **names**, and '> ' quote prefixes."""
    text = re.sub(r"\*\*\[\d+\]\*\*", "", text)
    text = re.sub(r"(?m)^> ?", "", text)
    return re.sub(r"\*\*((?:\\.|[^*\\])+)\*\*", r"\1", text)


async def test_document_text_and_file_names_are_inert_everywhere(harness):
    h = harness
    added = (await add_doc(h, HOSTILE_NAME, HOSTILE_TEXT))[0]["content"]
    shown = inert(HOSTILE_NAME)
    assert f"✅ **{shown}** added" in added and HOSTILE_NAME not in added
    assert live_syntax(without_bot_markup(added)) == []

    # lone bars, not a spoiler: one would hide the answer and leave the thread unnamed (test_bot_small_messages)
    question = "How do I **reset** my Discord || password <@&350> @everyone [now](http://x.y)?"
    token, replies = await ask(h, question)
    content = "\n".join(m["content"] for m in replies if m["content"])
    assert "Reset your Discord password here" in content or "Discord password reset" in content
    assert live_syntax(content) == [], content
    assert "［2］" in content or "［3］" in content  # the document's own numbers, shown but not markers
    assert {int(n) for n in re.findall(r"\[(\d+)\]", content)} <= set(range(1, 4))
    sources = sources_of(replies)
    assert shown in sources and live_syntax(without_bot_markup(sources)) == []

    # the thread is named after the question, as plain words
    [thread_call] = h.fake.calls_to("POST", r"/threads$")
    name = thread_call.body["name"]
    assert "reset" in name and not set(name) & set("*|<>[]`#\\") and "@everyone" not in name

    # Show context: the node text, quoted, is inert too; the title carries the question inert
    button = next(i for i in custom_ids(replies[-1]) if i.startswith("raptor:ctx:"))
    page = (await h.replies_done(h.click(replies[-1], button)))[0]["embeds"][0]
    assert live_syntax(without_bot_markup(page["description"])) == [], page["description"]
    assert live_syntax(page["title"]) == []

    listing = text_of((await h.replies_done(h.slash("kb", sub="list", user=BOB)))[0])
    assert shown in listing and live_syntax(without_bot_markup(listing)) == []


class CiteEverything:
    """An answerer citing every block of its context, so every retrieved node reaches the sources."""

    name = "cite-everything"

    async def answer(self, question, context, history):
        return AnswerDraft(" ".join(f"Point {i}. [{i}]" for i in range(1, len(context) + 1)))

    async def condense(self, question, history):
        return question


async def test_cross_document_summaries_name_the_documents_they_draw_on(make_harness, bot_settings):
    bot_settings.budget = 100_000  # every node of three small documents fits: the top layer is cited
    h = await make_harness(settings=bot_settings, answerer=CiteEverything())
    # a second edition of the manual clusters with the first: their top summaries share a parent
    second_edition = LIGHTHOUSE.replace(
        "Kestrel Point Lighthouse Manual", "Kestrel Point Manual, 2nd edition"
    )
    docs = {"kestrel.md": LIGHTHOUSE, "kestrel-2nd.md": second_edition, "bread.txt": SOURDOUGH}
    for name, text in docs.items():
        await add_doc(h, name, text)
    # tree traversal starts from the top layer (the collapsed tree's new-text fill would skip a summary
    # whose sentences its children already gave)
    _, replies = await ask(h, "What do these documents cover?", mode="traversal")
    sources = sources_of(replies)
    assert "all documents" not in sources
    shared = re.findall(r"L\d summary · node \d+ · (\d) documents: (.*?) · \d+ leaves", sources)
    assert shared, sources
    for count, names in shared:
        assert len(names.split(", ")) == int(count) and set(names.split(", ")) <= set(docs)
    assert any({"kestrel.md", "kestrel-2nd.md"} <= set(names.split(", ")) for _, names in shared)


async def test_multi_file_add_throttles_edits_and_ends_without_a_progress_line(harness, monkeypatch):
    h = harness
    emitted: dict[int, list[float]] = {}  # when each status editor sent a text (arrivals carry the load's jitter)
    original_emit = ThrottledEditor._emit

    async def recording_emit(self, text):
        emitted.setdefault(id(self), []).append(self.clock())
        await original_emit(self, text)

    monkeypatch.setattr(ThrottledEditor, "_emit", recording_emit)
    first = h.fake.add_file("kestrel.md", LIGHTHOUSE.encode())
    second = h.fake.add_file("bread.txt", SOURDOUGH.encode())
    token = h.kb_add(first, second)
    replies = await h.replies_done(token, lambda r: "Done" in text_of(r[0]), what="both files")
    await h.finished(token)
    final = replies[0]["content"]
    assert "✅ **kestrel.md** added" in final and "✅ **bread.txt** added" in final
    assert "⏳" not in final, final
    versions = h.fake.versions[int(replies[0]["id"])]
    done_at = next(i for i, v in enumerate(versions) if "✅ **kestrel.md**" in v)
    assert not any("⏳ **kestrel.md**" in v for v in versions[done_at:]), versions[done_at:]
    edits = h.fake.calls_to("PATCH", rf"^webhooks/\d+/{token}/messages/@original$")
    [sent] = [times for times in emitted.values() if len(times) >= 2]  # this command's editor
    assert len(edits) >= 2  # at least one gap to check
    gaps = [later - earlier for earlier, later in zip(sent, sent[1:], strict=False)]
    assert min(gaps) >= 0.99, gaps  # at most one edit a second, as sent


async def test_status_counts_the_write_ahead_log_and_the_indices(harness, bot_settings):
    h = harness
    await add_doc(h, "kestrel.md", LIGHTHOUSE)
    status = text_of((await h.replies_done(h.slash("kb", sub="status", user=BOB)))[0])
    db, index_dir = h.engine.spaces.files_of(KB_A)  # the server's own store
    assert db == Path(bot_settings.data_dir) / "guilds" / str(GUILD) / "raptor.db"
    wal = Path(f"{db}-wal")
    assert wal.exists() and wal.stat().st_size > 0  # recent writes are still in the WAL
    database = sum(p.stat().st_size for p in (db, wal, Path(f"{db}-shm")) if p.exists())
    indices = sum(p.stat().st_size for p in index_dir.rglob("*") if p.is_file())
    assert indices > 0
    assert f"database {human_size(database)} (with its write-ahead log)" in status, status
    assert f"search indices {human_size(indices)}" in status


async def test_tree_calls_the_top_layer_cross_document_only_over_several_documents(harness):
    h = harness
    await add_doc(h, "kestrel.md", LIGHTHOUSE)
    assert any(layer.kind == "kb" for layer in h.engine.tree_info(KB_A).layers)
    one = text_of((await h.replies_done(h.slash("kb", sub="tree", user=BOB)))[0])
    assert "cross-document" not in one and ": 1 top summary of the knowledge base ·" in one, one
    await add_doc(h, "bread.txt", SOURDOUGH)
    two = text_of((await h.replies_done(h.slash("kb", sub="tree", user=BOB)))[0])
    assert "cross-document summaries" in two


def wrapped_pdf(lines: list[str]) -> bytes:
    """A one-page PDF with each line drawn separately, as a PDF's text comes out: hard line breaks."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    y = 760
    for line in lines:
        pdf.drawString(50, y, line)
        y -= 14
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


async def test_show_context_reflows_a_pdfs_hard_line_breaks(harness):
    h = harness
    lines = [
        "The keeper writes in the log every night the lamp is lit, noting the",
        "weather, the state of the sea and every ship that passes the point",
        "during the watch, with the time it was seen and its heading.",
        "Duties of the keeper each morning:",
        "- polish the brass fittings of the lantern",
        "- trim the wicks and wind the clockwork",
        "The log book is kept in the watch room, and the inspector reads it",
        "when he visits the station twice a year to check on the keepers.",
    ]
    attachment = h.fake.add_file("log.pdf", wrapped_pdf(lines), content_type="application/pdf")
    token = h.kb_add(attachment)
    await h.replies_done(token, lambda r: "Done" in text_of(r[0]), what="the PDF")
    _, replies = await ask(h, "What does the keeper write in the log every night?")
    button = next(i for i in custom_ids(replies[-1]) if i.startswith("raptor:ctx:"))
    page = (await h.replies_done(h.click(replies[-1], button)))[0]["embeds"][0]["description"]
    quoted = [line[2:] for line in page.splitlines() if line.startswith("> ")]
    assert any(
        "noting the weather, the state of the sea and every ship that passes the point during the watch"
        in line
        for line in quoted
    ), page
    assert "- polish the brass fittings of the lantern" in quoted  # list lines stay lines
    assert "- trim the wicks and wind the clockwork" in quoted
    assert not any(line.endswith("noting the") for line in quoted)


# ---------------------------------------------------------------------------------------------- pure helpers


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab *_~|`[]()<>#@:/\\\n.-", min_size=1, max_size=6000))
@example("a" + "*" * 3000)  # no boundary to cut at: a hard cut would land between "\\" and "*"
def test_escaped_text_splits_within_the_limit_without_breaking_an_escape(text):
    escaped = inert(text)
    pieces = split_text(escaped, 500)
    assert all(len(p) <= 500 for p in pieces)
    for piece in pieces:
        trailing = len(piece) - len(piece.rstrip("\\"))
        assert trailing % 2 == 0, piece[-20:]  # no piece ends inside an escape


def test_a_long_hostile_answer_is_split_into_messages_within_2000_characters():
    hostile = "**bold** ||spoiler|| <@&350> [link](http://evil.example) `code` # heading. " * 120
    answer = make_answer(hostile + "[1]", citations=1)
    messages = render_answer(answer)
    assert len(messages) >= 3 and all(len(m.content) <= 2000 for m in messages)
    assert all(live_syntax(m.content) == [] for m in messages)
    assert messages[-1].content.endswith("[1]")  # the answer's own marker survives the escaping


def test_thread_names_are_plain_and_within_discords_limit():
    name = thread_name("What does **the keeper** do <@&350> @everyone ||now|| [see](http://x.y)? " * 20)
    assert len(name) <= 100 and not set(name) & set("*|<>[]`#\\") and "@everyone" not in name
    assert name.startswith("What does the keeper do @role everyone now see?")
    assert thread_name("<t:1767225600:R> `` ** ") == "a date"
    assert thread_name("** || ``") == "Follow-up"


async def test_finishing_lets_an_edit_under_way_land_before_the_final_text():
    """Cancelled mid-request, the first post of a channel fall-back could be sent twice, or an edit
    could land after the final text; finish waits for it instead."""
    release = asyncio.Event()
    landed: list[str] = []

    async def show(text: str) -> None:
        if not landed:
            await release.wait()  # the first request is slow (a 429 being waited out, say)
        landed.append(text)

    editor = ThrottledEditor(show, interval=0.01)
    editor.request("⏳ queued")
    await asyncio.sleep(0.01)
    finishing = asyncio.create_task(editor.finish("Done."))
    await asyncio.sleep(0.01)
    release.set()
    await asyncio.wait_for(finishing, 5)
    assert landed == ["⏳ queued", "Done."]
    editor.request("⏳ late progress")  # after finish: ignored
    await asyncio.sleep(0.05)
    assert landed == ["⏳ queued", "Done."]


def test_reflow_joins_wrapped_lines_but_keeps_paragraphs_lists_and_code():
    text = (
        "The keeper writes in the log every night the lamp is lit, noting the\n"
        "weather and every ship that passes, with the time it was seen.\n"
        "Short last line.\n"  # a sentence ending on a short line ends its paragraph
        "Duties each morning:\n"
        "- polish the brass fittings of the\n"
        "lantern gallery\n"
        "- trim the wicks\n"
        "\n"
        "```\nlamp = on\nwick = trimmed\n```\n"
        "\n"
        "    indented\n    code"
    )
    assert reflow(text) == (
        "The keeper writes in the log every night the lamp is lit, noting the weather and every ship"
        " that passes, with the time it was seen. Short last line.\n\nDuties each morning:\n"
        "- polish the brass fittings of the lantern gallery\n- trim the wicks\n\n"
        "```\nlamp = on\nwick = trimmed\n```\n\n    indented\n    code"
    )
