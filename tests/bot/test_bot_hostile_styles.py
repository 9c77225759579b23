"""Text no reader sees, hidden by formatting rather than markup (files22): a web page's style sheet, white
letters in a Word document, a PDF annotation flagged hidden. Uploaded through the bot, each file is added
with the words a reader sees and none of the hidden ones reach the server's store."""

from __future__ import annotations

from tests.bot.conftest import CHAN_A, text_of
from tests.bot.test_bot_flows import KB_A
from tests.test_unseen_files22 import SECRET, SHOWN, _annotated_pdf, _docx, _free_text, _html, _run


async def test_text_hidden_by_style_sheets_white_letters_or_annotation_flags_is_not_stored(harness):
    h = harness
    page = h.fake.add_file("page.html", _html("<style>.n { display: none }</style>", f'<div class="n">{SECRET}</div>'))
    word = h.fake.add_file("cv.docx", _docx(_run("The lamp room faces Kittiwake Rock."), _run(SECRET, '<w:color w:val="FFFFFF"/>')))
    notes = h.fake.add_file("notes.pdf", _annotated_pdf(_free_text(SECRET.encode(), b"/F 2"), _free_text(b"The gull nests on the ledge.")))
    token = h.kb_add(page, word, notes, channel=CHAN_A)
    replies = await h.replies_done(token, lambda r: "Done" in text_of(r[0]), what="the styled uploads")
    content = replies[0]["content"]
    assert all(f"**{name}** added" in content for name in ("page.html", "cv.docx", "notes.pdf"))
    with h.engine.in_space(KB_A):  # the server's own store
        stored = " ".join(n.text for n in h.engine.store.nodes_of_kb(h.engine.store.kb_id(KB_A)))
    assert "IGNORE PREVIOUS" not in stored
    assert SHOWN in stored and "Kittiwake Rock" in stored and "gull nests" in stored
