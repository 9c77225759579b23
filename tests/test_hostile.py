"""Issue 9: hostile uploads end in one clear sentence or a safe ingest, bounded in time, memory and size.

The files come from the generators in raptor_tools/hostile.py (the same ones `raptor robustness` runs at
the issue's sizes), here at sizes that keep each test to seconds, with limits scaled down to match.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from raptor_engine import Engine
from raptor_engine.errors import IngestError, LimitError
from raptor_engine.ingest.chunk import chunk_document
from raptor_engine.ingest.load import LoadLimits, load_document, strip_invisible
from raptor_engine.ingest.parse_worker import ParseStats, WorkerLimits, load_isolated
from raptor_engine.tree import docbuild
from raptor_engine.tree.embed import MAX_CHARS_PER_TOKEN
from raptor_engine.tree.summarize import clip_chars
from raptor_engine.types import LoadedDocument, Section, Summary, SummaryRequest
from raptor_tools.hostile import (
    DOCX_ENCODINGS,
    HIDDEN_MARK,
    VISIBLE,
    aes_pdf,
    deeply_nested_docx,
    docx_with_main_part,
    encoded_runs_docx,
    encrypted_office_file,
    entity_bomb_docx,
    entity_storm_html,
    expanding_docx,
    garbled_font_pdf,
    hidden_html,
    hidden_html_markdown,
    hidden_runs_docx,
    hidden_styles_docx,
    hostile_corpus,
    hostile_settings,
    html_page_named_markdown,
    huge_header_run_docx,
    inflating_stream_pdf,
    invisible_text,
    letter_run,
    long_words,
    main_part_renamed_docx,
    many_entries_docx,
    many_pages_pdf,
    many_runs_docx,
    noncharacter_text,
    prefixed_runs_docx,
    prose_with_long_words,
    run_hostile,
    shared_stream_pdf,
    surrogate_font_pdf,
    unclosed_tags_html,
    utf16_entity_docx,
    utf32_text,
    zalgo,
)
from raptor_tools.robustness import SAFE_TEXT
from tests.unhurried import unhurried, unhurried_settings

ROOT = Path(__file__).resolve().parents[1]
MB = 1024 * 1024
SMALL = LoadLimits(max_expanded_bytes=MB, max_pages=50, max_elements=2_000, max_text_chars=200_000)


def refusal(filename: str, data: bytes, limits: LoadLimits = SMALL) -> str:
    with pytest.raises(IngestError) as caught:
        load_document(filename, data, limits=limits)
    return caught.value.reason


# ------------------------------------------------------------------------------- caps with their reasons


def test_a_pdf_stream_that_inflates_past_the_cap_says_so():
    assert refusal("bomb.pdf", inflating_stream_pdf(3 * MB)) == "expands to more than 1 MB when unpacked."


def test_pages_sharing_a_huge_string_stop_at_the_text_cap_not_as_corrupt():
    reason = refusal("shared.pdf", shared_stream_pdf(150_000, 40))
    assert reason == "holds more than 200,000 characters of text, over the limit."


def test_a_pdf_with_too_many_pages_says_how_many():
    assert refusal("pages.pdf", many_pages_pdf(51)) == "has 51 pages, more than the 50 allowed."


def test_a_docx_whose_xml_unpacks_past_the_cap_says_so():
    data = expanding_docx(3 * MB)
    assert len(data) < 3 * MB / 10  # compresses well, yet under the zip-ratio guard
    assert refusal("big.docx", data) == "expands to more than 1 MB when unpacked."


def test_a_docx_of_many_tiny_runs_stops_at_the_element_cap():
    reason = refusal("runs.docx", many_runs_docx(5_000))
    assert reason == "has more than 2,000 paragraphs, runs and table cells, over the limit."


def test_a_docx_with_entity_declarations_is_refused_as_an_xml_bomb():
    assert "entity declarations" in refusal("laughs.docx", entity_bomb_docx())


def test_a_docx_nested_past_the_parser_depth_is_refused_as_nested_too_deeply():
    assert refusal("deep.docx", deeply_nested_docx(400), LoadLimits()) == "is nested too deeply to read."


def test_html_of_unclosed_tags_stops_at_the_element_cap():
    reason = refusal("tags.html", unclosed_tags_html(100_000))
    assert reason == "has more than 2,000 HTML tags, over the limit."


def test_text_over_the_character_cap_is_refused_before_chunking():
    reason = refusal("long.txt", b"word " * 50_000)
    assert reason == "holds more than 200,000 characters of text, over the limit."


# ------------------------------------------------------------------------------------------ AES PDFs


def test_an_aes_pdf_with_an_empty_user_password_is_read_and_a_real_password_refused():
    doc = load_document("aes.pdf", aes_pdf(""))
    assert "AES encrypted minutes" in doc.text
    assert "password-protected" in refusal("locked.pdf", aes_pdf("hunter2"), LoadLimits())


def test_without_the_crypto_library_an_aes_pdf_names_the_missing_package(monkeypatch):
    import pypdf._encryption as encryption
    from pypdf._crypt_providers import _fallback

    data = aes_pdf("")
    monkeypatch.setattr(encryption, "aes_cbc_decrypt", _fallback.aes_cbc_decrypt)
    monkeypatch.setattr(encryption, "aes_ecb_decrypt", _fallback.aes_ecb_decrypt)
    monkeypatch.setattr(encryption, "CryptAES", _fallback.CryptAES)
    reason = refusal("aes.pdf", data, LoadLimits())
    assert "'cryptography' package" in reason and "corrupt" not in reason


def test_the_project_depends_on_pypdf_with_its_crypto_extra():
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.replace(" ", "").startswith("pypdf[crypto]") for d in dependencies)


# ---------------------------------------------------------------------------------- invisible characters


def test_hidden_tag_text_and_bidi_overrides_are_removed_at_load():
    doc = load_document("hidden.txt", invisible_text())
    assert not any(0xE0000 <= ord(ch) <= 0xE007F for ch in doc.text)
    assert not any(ch in doc.text for ch in "\u202e\u202c\u2066\u2069\u200d")
    assert "painted white in 1901." in doc.text and "gol" in doc.text


def test_heading_paths_lose_invisible_characters_too():
    doc = load_document("h.md", "# Ha\u200brbour\U000e0041\n\nText.".encode())
    assert doc.sections[0].heading == ("Harbour",)


def test_right_to_left_scripts_and_ordinary_accents_are_kept():
    text = "מגדלור נבנה בשנת 1890. المنارة بنيت. Café Việt Nam."
    assert strip_invisible(text) == text


def test_combining_mark_floods_are_capped():
    doc = load_document("zalgo.txt", zalgo(10, marks=40))
    assert len(doc.text.replace(" ", "")) == 10 * 9  # each letter keeps at most 8 marks


# ------------------------------------------------------------------------------------ the parse worker


def test_the_worker_reads_what_the_loader_reads():
    source = b"# Light\n\nThe keeper lit the lamp.\n\n## Fog\n\nFog came in."
    doc, stats = load_isolated("notes.md", source, WorkerLimits())
    assert doc == load_document("notes.md", source)
    assert stats.outcome == "read" and stats.peak_rss_mb > 0


def test_a_parse_past_the_deadline_is_killed_with_a_clear_sentence(monkeypatch):
    children: list[subprocess.Popen] = []
    start_child = subprocess.Popen

    def recorded(*args, **kwargs):
        children.append(start_child(*args, **kwargs))
        return children[-1]

    monkeypatch.setattr(subprocess, "Popen", recorded)
    stats = ParseStats()
    limits = WorkerLimits(timeout_s=0.5, load=LoadLimits(max_elements=10**9))
    with pytest.raises(IngestError) as caught:
        load_isolated("tags.html", unclosed_tags_html(4 * MB), limits, stats)
    assert str(caught.value) == "tags.html: took longer than 0.5 s to read."
    assert stats.outcome == "timeout"
    assert [child.returncode for child in children] == [-signal.SIGKILL]  # killed at the deadline, not waited for


def test_a_parse_past_the_memory_limit_is_stopped_with_a_clear_sentence():
    stats = ParseStats()
    # the time limit far off, so that however busy the machine, the memory limit is what stops the child
    limits = WorkerLimits(
        timeout_s=600, memory_mb=200, load=LoadLimits(max_elements=10**9, max_text_chars=10**9)
    )
    with pytest.raises(IngestError) as caught:
        load_isolated("big.txt", ("lighthouse " * 8 * MB).encode(), limits, stats)
    assert str(caught.value) == "big.txt: needs more than 200 MB of memory to read."
    assert stats.outcome == "memory"


def test_a_reply_that_is_not_a_document_is_refused_not_trusted():
    from raptor_engine.ingest.parse_worker import _result

    bent = {"document": {"name": "x.txt", "text": "abc", "format": "txt", "sections": [[0, 99, None, []]]}}
    with pytest.raises(IngestError) as caught:
        _result("x.txt", 0, bent, b"", WorkerLimits(), ParseStats())
    assert caught.value.reason == "could not be read (the file reader failed on it)."


def test_the_worker_gets_no_secrets_from_the_environment(monkeypatch):
    from raptor_engine.ingest.parse_worker import _child_environment

    monkeypatch.setenv("DISCORD_TOKEN", "secret-token")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    env = _child_environment()
    assert "secret-token" not in env.values() and "sk-secret" not in env.values()
    assert str(ROOT) in env["PYTHONPATH"].split(os.pathsep)


def test_the_worker_imports_the_loader_without_torch_or_numpy():
    code = "import sys, raptor_engine.ingest.parse_worker; print('torch' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# ------------------------------------------------------------------------------- honest token counts


def test_an_unknown_run_counts_by_its_length(embedder):
    assert embedder.count_tokens("A" * 120) >= 40  # one [UNK] to WordPiece
    assert embedder.count_tokens("ACGT" * 25_000) >= 100_000 / 3
    assert embedder.count_tokens("o" + "\u0301" * 60) >= 61 / MAX_CHARS_PER_TOKEN  # marks the tokenizer drops
    assert embedder.count_tokens("The keeper lit the lamp.") == 6  # ordinary text counts as before


@pytest.mark.parametrize(  # made when the test runs, not when every worker collects the suite
    "make",
    [
        lambda: letter_run(30_000).decode(),
        lambda: long_words(200).decode(),
        lambda: "😀🚢⚓" * 3_000,
        lambda: zalgo(3_000).decode(),
    ],
    ids=["dna", "long words", "emoji", "zalgo"],
)
def test_no_chunk_exceeds_either_limit_for_any_run(embedder, make):
    text = make()
    doc = LoadedDocument(name="t.txt", text=text, sections=[Section(0, len(text))], format="txt")
    chunks = chunk_document(
        doc,
        embedder.count_tokens,
        max_tokens=100,
        count_tokens_batch=embedder.count_tokens_batch,
        max_chars=400,
    )
    assert "".join(c.text for c in chunks).replace(" ", "") == text.replace(" ", "")
    for chunk in chunks:
        assert len(chunk.text) <= 400
        assert chunk.tokens == embedder.count_tokens(chunk.text) <= 100


def test_clip_chars_cuts_at_a_word_with_an_ellipsis():
    assert clip_chars("short", 10) == "short"
    clipped = clip_chars("the keeper lit the great lamp at dusk", 20)
    assert clipped == "the keeper lit the…" and len(clipped) <= 20
    assert len(clip_chars("x" * 5000, 100)) == 100


# ------------------------------------------------------------------------------------ through the engine


class RamblingSummarizer:
    """An LLM that ignores the length it was asked for."""

    name = "rambling"
    input_budget = 3500

    async def summarize_many(self, requests: list[SummaryRequest]) -> list[Summary]:
        return [Summary(text="ramble " * 2000) for _ in requests]


def test_no_stored_node_exceeds_the_character_limit(tmp_path, embedder):
    settings = unhurried_settings(data_dir=tmp_path, node_max_chars=300)
    engine = Engine(settings, embedder=embedder, summarizer=RamblingSummarizer())
    text = SAFE_TEXT + " " + letter_run(2_000).decode() + " " + " ".join([SAFE_TEXT] * 30)
    result = asyncio.run(engine.ingest("kb", "dna.txt", text.encode()))
    rows = engine.store.db.conn.execute("SELECT LENGTH(text), tokens, layer FROM nodes").fetchall()
    engine.close()
    assert result.layers >= 2 and max(layer for _, _, layer in rows) >= 1  # summaries were made
    assert max(length for length, _, _ in rows) <= 300
    assert result.document.tokens >= 2_000 / 3


def test_a_parse_past_its_deadline_stores_nothing_while_other_kbs_answer(tmp_path, embedder):
    settings = unhurried_settings(data_dir=tmp_path, parse_timeout=5.0, max_elements=10**9)
    engine = Engine(settings, embedder=embedder)
    asyncio.run(engine.ingest("other", "base.txt", SAFE_TEXT.encode()))
    nodes = engine.store.db.conn.execute("SELECT id, text FROM nodes ORDER BY id").fetchall()

    async def both() -> tuple[BaseException | None, bool]:
        ingest = asyncio.create_task(engine.ingest("hostile", "tags.html", unclosed_tags_html(15 * MB)))
        answer = await engine.ask("other", "When was the harbour wall rebuilt?")
        assert "1898" in answer.text
        answered_during_the_parse = not ingest.done()
        error = (await asyncio.gather(ingest, return_exceptions=True))[0]
        return error, answered_during_the_parse

    error, answered_during_the_parse = asyncio.run(both())
    assert isinstance(error, IngestError) and str(error) == "tags.html: took longer than 5 s to read."
    assert answered_during_the_parse
    assert engine.knowledge_bases() == ["other"]  # the question was recorded; nothing of the upload was
    assert engine.store.db.conn.execute("SELECT id, text FROM nodes ORDER BY id").fetchall() == nodes
    engine.close()


def never_chunked(monkeypatch) -> None:
    """Fail the ingest if it reaches the chunker (the costly step a quick refusal must come before): a check
    of the order of the steps, which holds on a machine of any speed."""

    def chunked(*_args, **_kwargs):
        raise AssertionError("the upload was chunked before it was refused")

    monkeypatch.setattr(docbuild, "chunk_document", chunked)


def test_text_far_over_the_token_bound_is_refused_before_chunking(tmp_path, embedder, monkeypatch):
    engine = Engine(unhurried_settings(data_dir=tmp_path, max_kb_tokens=10_000), embedder=embedder)
    never_chunked(monkeypatch)
    with pytest.raises(LimitError) as caught:
        asyncio.run(engine.ingest("kb", "dna.txt", letter_run(3 * MB)))
    assert "has at least 524,288 tokens" in str(caught.value)
    engine.close()


def test_text_the_model_cannot_read_is_refused_quickly(tmp_path, embedder, monkeypatch):
    engine = Engine(unhurried_settings(data_dir=tmp_path), embedder=embedder)  # default bounds: 300k letters fit them
    never_chunked(monkeypatch)  # quickly: before chunking
    with pytest.raises(IngestError) as caught:
        asyncio.run(engine.ingest("kb", "dna.txt", letter_run(300_000)))
    assert "cannot read" in str(caught.value)
    engine.close()


def test_rare_ideographs_and_a_few_long_words_are_not_unreadable(embedder):
    japanese = "灯台守の日誌は嵐の夜に書かれた。" * 200  # several ideographs are [UNK], one character each
    assert embedder.unknown_share(japanese) == 0
    assert embedder.unknown_share(prose_with_long_words(20).decode()) < 0.5
    assert embedder.unknown_share(letter_run(50_000).decode()) > 0.9


QUICK = [item for item in hostile_corpus() if item.expect == "refused" and item.filename != "shared.pdf"]


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory, embedder):
    # no parse or build deadline: each file must end in its own cap's sentence, on any machine
    engine = Engine(unhurried(hostile_settings(tmp_path_factory.mktemp("hostile"))), embedder=embedder)
    outcomes = asyncio.run(run_hostile(engine, QUICK))
    yield engine, dict(zip([item.case for item in QUICK], outcomes, strict=True))
    engine.close()


@pytest.mark.parametrize("item", QUICK, ids=lambda item: item.filename)
def test_each_hostile_class_ends_in_its_sentence_with_the_store_unchanged(hostile_run, item):
    engine, outcomes = hostile_run
    outcome = outcomes[item.case]
    assert outcome.as_expected(item, engine.settings), outcome
    assert outcome.message.endswith(".") and "\n" not in outcome.message
    assert outcome.worker_peak_mb < 2048  # the time it took is the robustness report's figure, not a test's


def test_hidden_instructions_never_reach_the_store(tmp_path, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path), embedder=embedder)
    asyncio.run(engine.ingest("kb", "hidden.txt", invisible_text()))
    stored = " ".join(row[0] for row in engine.store.db.conn.execute("SELECT text FROM nodes"))
    engine.close()
    assert not any(0xE0000 <= ord(ch) <= 0xE01EF or ch in "\u202e\u2066\u200d" for ch in stored)
    assert "painted white in 1901" in stored


def test_a_decomposed_name_is_stored_composed_and_forgotten_by_either_spelling(tmp_path, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path), embedder=embedder)
    asyncio.run(engine.ingest("kb", "cafe\u0301.txt", SAFE_TEXT.encode()))
    assert [d.name for d in engine.documents("kb")] == ["caf\u00e9.txt"]
    removed = asyncio.run(engine.forget("kb", "cafe\u0301.txt"))
    assert removed.name == "caf\u00e9.txt" and engine.documents("kb") == []
    engine.close()


# --------------------------------------------------------------- disguises and text no reader can see


@pytest.mark.parametrize(
    "filename, make",
    [
        ("hidden.html", hidden_html),
        ("hidden.md", hidden_html_markdown),
        ("page.md", html_page_named_markdown),
        ("page.txt", html_page_named_markdown),
        ("hidden.docx", hidden_runs_docx),
        ("styled.docx", hidden_styles_docx),
    ],
)
def test_text_a_reader_never_sees_is_not_loaded(filename, make):
    """Hidden HTML (display:none, hidden, aria-hidden, templates, an unclosed comment), HTML hidden in
    Markdown, a whole HTML page under a text name, and Word's hidden runs could carry instructions to an
    LLM that no reader of the document ever sees."""
    doc = load_document(filename, make())
    assert HIDDEN_MARK not in doc.text
    assert VISIBLE in doc.text


def test_markdown_keeps_html_shown_as_code_and_word_keeps_runs_marked_not_hidden():
    assert "<!-- a comment shown as code -->" in load_document("a.md", hidden_html_markdown()).text
    text = load_document("a.docx", hidden_runs_docx()).text
    assert "Still shown." in text and "A visible cell." in text
    assert "Shown anyway." in load_document("b.docx", hidden_styles_docx()).text


def test_utf32_is_read_and_noncharacters_are_dropped():
    assert load_document("a.txt", utf32_text()).text.startswith(VISIBLE)
    text = load_document("b.txt", noncharacter_text()).text
    assert VISIBLE in text and not any(ch in text for ch in "\ufffe\uffff\ufdd0\U0010ffff")


@pytest.mark.parametrize(  # the files are made when the test runs, not when every worker collects
    "filename, make, reason",
    [
        ("a.docx", lambda: many_pages_pdf(1), "is a PDF file, not a Word document"),
        ("a.pdf", hidden_runs_docx, "is a Word document, not a PDF"),
        ("a.docx", encrypted_office_file, "encrypted (password-protected) or old-style (.doc) Word file"),
        ("a.pdf", garbled_font_pdf, "does not map to readable characters"),
        ("a.docx", utf16_entity_docx, "entity declarations"),
        ("a.html", lambda: entity_storm_html(2_000), "cannot be displayed as text"),
        ("a.docx", lambda: many_entries_docx(5_001), "a zip of 5,004 files, more than the 5,000"),
    ],
)
def test_a_disguised_or_unreadable_file_says_what_it_is(filename, make, reason):
    assert reason in refusal(filename, make())


@pytest.mark.parametrize("prefix", ["x", "", "wordml", "\u00e9"])
def test_word_elements_are_counted_under_any_namespace_prefix(prefix):
    assert "paragraphs, runs and table cells" in refusal("a.docx", prefixed_runs_docx(3_000, prefix))
    assert load_document("b.docx", prefixed_runs_docx(50, prefix), limits=SMALL).text.startswith("word0 word1")


@pytest.mark.parametrize("encoding", DOCX_ENCODINGS)
def test_word_elements_are_counted_in_every_encoding_lxml_reads(encoding):
    assert "paragraphs, runs and table cells" in refusal("a.docx", encoded_runs_docx(3_000, encoding))
    assert load_document("b.docx", encoded_runs_docx(50, encoding), limits=SMALL).text.startswith("word0 word1")


def test_a_part_in_an_encoding_no_codec_knows_is_refused_by_name():
    data = docx_with_main_part(b'<?xml version="1.0" encoding="x-martian"?><w:document/>')
    assert refusal("a.docx", data) == (
        "has a part in a text encoding Word never writes (x-martian); save it again from Word."
    )


def test_a_run_past_the_xml_parser_limit_is_refused_as_such_not_as_corrupt():
    assert refusal("h.docx", huge_header_run_docx(10_500_000), LoadLimits()) == (
        "has a single piece of text over 10 MB (one run or value), longer than can be read."
    )


def test_the_main_part_is_scanned_whatever_its_name():
    """python-docx follows the package's relationships to any entry; the element cap followed names."""
    assert "paragraphs, runs and table cells" in refusal("a.docx", main_part_renamed_docx(3_000))


def test_surrogates_from_a_pdf_font_are_dropped_and_the_worker_reply_still_fits():
    """pypdf returned lone and paired surrogates; the JSON reply joined the pair, so the sections no longer
    fitted the text and the upload failed as "the file reader failed on it"."""
    doc, _ = load_isolated("odd.pdf", surrogate_font_pdf(), WorkerLimits())
    assert doc.text.endswith(VISIBLE) and not any("\ud800" <= ch <= "\udfff" for ch in doc.text)
    assert doc.sections[-1].end == len(doc.text)
