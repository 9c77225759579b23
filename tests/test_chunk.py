"""Chunker tests with the real all-MiniLM-L6-v2 tokenizer (via the shared `embedder` fixture)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reportlab.pdfgen import canvas

from raptor_engine.errors import IngestError
from raptor_engine.ingest import chunk as chunk_module
from raptor_engine.ingest.chunk import chunk_document, split_sentences
from raptor_engine.ingest.load import load_document
from raptor_engine.types import Chunk, LoadedDocument, Section

SAMPLE = Path(__file__).resolve().parents[1] / "raptor_tools" / "samples" / "lighthouse_keepers.md"


def plain(text: str) -> LoadedDocument:
    return LoadedDocument(name="t.txt", text=text, sections=[Section(0, len(text))], format="txt")


def sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in split_sentences(text)]


def chunk_of(chunks: list[Chunk], offset: int) -> Chunk:
    return next(c for c in chunks if c.start <= offset < c.end)


def assert_well_formed(doc: LoadedDocument, chunks: list[Chunk], limit: int, counter) -> None:
    """Exact spans, consecutive indices, honest token counts within limit, no non-space text left out."""
    assert [c.index for c in chunks] == list(range(len(chunks)))
    covered = [False] * len(doc.text)
    previous_end = 0
    for chunk in chunks:
        assert chunk.text == doc.text[chunk.start : chunk.end]
        assert chunk.text.strip() == chunk.text and chunk.text
        assert chunk.start >= previous_end
        assert chunk.tokens == counter(chunk.text) <= limit
        previous_end = chunk.end
        covered[chunk.start : chunk.end] = [True] * (chunk.end - chunk.start)
    missing = [i for i, ch in enumerate(doc.text) if not ch.isspace() and not covered[i]]
    assert missing == []


# -------------------------------------------------------------------------------------- sentence splitting


def test_split_handles_abbreviations_decimals_quotes_and_ellipses():
    text = (
        "Mr. Smith met Dr. Jones at 9.30 in the U.S. embassy. They paid $3.50, e.g. for tea! "
        'Was it good? "Very good." She paused... and then left. It cost approx. 12 dollars, i.e. a lot. '
        "See Fig. 3 for details. John F. Kennedy spoke next."
    )
    assert sentences(text) == [
        "Mr. Smith met Dr. Jones at 9.30 in the U.S. embassy.",
        "They paid $3.50, e.g. for tea!",
        "Was it good?",
        '"Very good."',
        "She paused... and then left.",
        "It cost approx. 12 dollars, i.e. a lot.",
        "See Fig. 3 for details.",
        "John F. Kennedy spoke next.",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a citation after "et al." goes on with the sentence, in each form papers write it
        (
            "Davidson et al. BIBREF9 collected tweets. Zhang et al. [12] used a CNN.",
            ["Davidson et al. BIBREF9 collected tweets.", "Zhang et al. [12] used a CNN."],
        ),
        (
            "Wiegand et al. ( BIBREF11 ) followed. Waseem et. al. (2017) agreed. Luo et al. 2019 did too.",
            ["Wiegand et al. ( BIBREF11 ) followed.", "Waseem et. al. (2017) agreed.", "Luo et al. 2019 did too."],
        ),
        # an ordinary sentence still opens after "et al." as after any full stop
        (
            "This was shown by Smith et al. The results hold. So did Lee et al. A model failed.",
            ["This was shown by Smith et al.", "The results hold.", "So did Lee et al.", "A model failed."],
        ),
        # a paper's citation keys: one may open a sentence in lower case, and after "et al." it is a citation
        (
            "It uses VerbNet. garg2012unsupervised proposed a model. Davidson et al. davidson2017automated agreed.",
            ["It uses VerbNet.", "garg2012unsupervised proposed a model.", "Davidson et al. davidson2017automated agreed."],
        ),
        # a figure, equation or table reference: a number, a bracket or a paper's placeholder label
        (
            "As shown in Fig. FIGREF6 , it works. It is computed with Eq. ( EQREF15 ). See Tab. 2 and Sec. SECREF3 .",
            ["As shown in Fig. FIGREF6 , it works.", "It is computed with Eq. ( EQREF15 ).", "See Tab. 2 and Sec. SECREF3 ."],
        ),
        # "No." before an ordinary sentence ends it; "P." stays an initial before a capital
        ('"No. I shall die here." The P. E. Corps grew.', ['"No.', 'I shall die here."', "The P. E. Corps grew."]),
    ],
)
def test_split_keeps_citations_and_references_after_abbreviations(text, expected):
    """'Smith et al.' and 'Fig.' before a citation or a label are inside a sentence (the QASPER papers had
    30 such cuts); before an ordinary sentence they may end one."""
    assert sentences(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"What do you want with me?" Korvin said. He left.', ['"What do you want with me?" Korvin said.', "He left."]),
        ('"Wait!" Ninon said, pushing him\nback. It was late.', ['"Wait!" Ninon said, pushing him\nback.', "It was late."]),
        ("\u201cHow old are you?\u201d Miss Stoddart asked. \u201cNow, listen!\u201d I said bluntly.",
         ["\u201cHow old are you?\u201d Miss Stoddart asked.", "\u201cNow, listen!\u201d I said bluntly."]),
        # not a tag: a capitalised pronoun opens a sentence, a tag that opens a quotation of its own is a new one
        ('"Are we going fast?" He answered without turning.', ['"Are we going fast?"', "He answered without turning."]),
        ('"What do you mean?" Robert said, "You look old."', ['"What do you mean?"', 'Robert said, "You look old."']),
        # a statement's full stop ends it before a name, as before
        ('"I am going." Tom said nothing.', ['"I am going."', "Tom said nothing."]),
    ],
)
def test_split_keeps_a_speakers_tag_with_the_speech(text, expected):
    """'"Stop!" Tom said.' is one sentence: the tag cut off alone was a sentence of two words and the speech
    lost its speaker."""
    assert sentences(text) == expected


def test_split_gives_a_spaced_closing_quotation_mark_to_the_sentence_it_closes():
    """Some stories' texts set their quotation marks apart (' " Ivy! " Strike was beside her.'); the mark
    after the terminator closes the speech when the paragraph left one open, and opens one when not."""
    text = 'She fell. " Ivy! " Strike was beside her. " Now! " he said.\n\n" Kalis ," he began, "\nguna getal.\n"\n\nDone.'
    assert sentences(text) == [
        "She fell.",
        '" Ivy! "',
        "Strike was beside her.",
        '" Now! " he said.',
        '" Kalis ," he began, "\nguna getal.\n"',
        "Done.",
    ]
    opening = '"Which makes it even," he retorted. " You do not look like much."'
    assert sentences(opening) == ['"Which makes it even," he retorted.', '" You do not look like much."']
    assert sentences("She cried \u201cHelp! \u201d Then silence.") == ["She cried \u201cHelp! \u201d", "Then silence."]


def test_split_keeps_the_number_of_a_list_run_into_a_paragraph_with_its_item():
    """'... as follows: 1. We propose ... 2. When ...': each number opens its item (it was a sentence of its
    own, '2.'); a number that ends a sentence of prose still ends it."""
    text = "Our contributions: 1. We propose a net. 2. When classifying, we use users. 3. We add topics."
    assert sentences(text) == [
        "Our contributions: 1. We propose a net.",
        "2. When classifying, we use users.",
        "3. We add topics.",
    ]
    assert sentences("It rose to 2. Then it fell.") == ["It rose to 2.", "Then it fell."]


def test_split_keeps_a_wrapped_list_item_whole():
    """A list item's text may wrap onto a line without a marker, as in Markdown ('1) Too many people would\n
    know.'); a blank line, the next item or a capital still ends it."""
    text = (
        "Here is why:\n1) Too many people would\nknow. Kennedy hid nothing.\n2) The press would report\nit.\n"
        "- a bullet that\nwraps\n- a bullet\n\nlower case after a blank line."
    )
    assert sentences(text) == [
        "Here is why:",
        "1) Too many people would\nknow.",
        "Kennedy hid nothing.",
        "2) The press would report\nit.",
        "- a bullet that\nwraps",
        "- a bullet",
        "lower case after a blank line.",
    ]
    items = "- fill the lamp\n- trim the wick\nThe end."
    assert sentences(items) == ["- fill the lamp", "- trim the wick", "The end."]


def test_split_treats_paragraphs_headings_and_list_items_as_boundaries():
    text = (
        "## Keepers\nThe first keeper arrived\nin spring without a title\n\nNo full stop here\n\n"
        "Steps:\n- fill the lamp\n- trim the wick\n1. First line\n2. Second line"
    )
    assert sentences(text) == [
        "## Keepers",
        "The first keeper arrived\nin spring without a title",
        "No full stop here",
        "Steps:",
        "- fill the lamp",
        "- trim the wick",
        "1. First line",
        "2. Second line",
    ]


def test_split_ends_a_title_line_that_extracted_text_runs_into_the_prose():
    """A PDF's title comes out as a line of its own with nothing to end it; it is not the first words of
    the paragraph under it. Wrapped prose lines stay joined, also before a capitalised word."""
    text = (
        "The Millbrook Canal Company\n"
        "The canal was dug between 1794 and 1799 by a company of mill owners led by\n"
        "Josiah Penrose. It carried coal for almost a century.\n"
        "Chapter Two: The Railway Arrives\n"
        "In 1846 the railway reached Millbrook and the traffic fell by half, as\n"
        "The Times reported.\n"
        "A short line\nand its lower-case continuation stay one sentence."
    )
    assert sentences(text) == [
        "The Millbrook Canal Company",
        "The canal was dug between 1794 and 1799 by a company of mill owners led by\nJosiah Penrose.",
        "It carried coal for almost a century.",
        "Chapter Two: The Railway Arrives",
        "In 1846 the railway reached Millbrook and the traffic fell by half, as\nThe Times reported.",
        "A short line\nand its lower-case continuation stay one sentence.",
    ]


def test_split_joins_a_sentence_broken_by_a_page_break():
    text = "The lamp burned through the night and\n\ninto the morning. Then it went out."
    assert sentences(text) == [
        "The lamp burned through the night and\n\ninto the morning.",
        "Then it went out.",
    ]


def test_split_spans_are_trimmed_and_skip_blank_text():
    assert split_sentences("") == []
    assert split_sentences("  \n\n \t") == []
    assert sentences("  word  ") == ["word"]


# ----------------------------------------------------------------------------------------------- chunking


def test_split_is_remembered_by_text_and_each_call_gets_its_own_list():
    # A node is split for its stored sentences and again for its layer's summary: the second is a lookup.
    text = "A first sentence here. A second one follows.\n\n## Heading\nAnd a third."
    first = split_sentences(text)
    hits = chunk_module._remembered_spans.cache_info().hits
    first.append((0, 1))  # a caller's list is its own: changing it changes nothing remembered
    again = split_sentences(text)
    assert chunk_module._remembered_spans.cache_info().hits == hits + 1
    assert again == first[:-1] == [(0, 22), (23, 44), (46, 56), (57, 69)]


def test_sample_document_chunks_within_limit_with_sentences_intact(embedder):
    doc = load_document(SAMPLE.name, SAMPLE.read_bytes())
    chunks = chunk_document(
        doc, embedder.count_tokens, max_tokens=100, count_tokens_batch=embedder.count_tokens_batch
    )
    assert_well_formed(doc, chunks, 100, embedder.count_tokens)
    assert len(chunks) > 20
    assert sum(c.tokens for c in chunks) / len(chunks) > 50, "chunks are packed, not one sentence each"
    for a, b in split_sentences(doc.text):
        if embedder.count_tokens(doc.text[a:b]) <= 100:
            assert chunk_of(chunks, a).end >= b, f"sentence split across chunks: {doc.text[a:b]!r}"


def test_chunks_keep_punctuation(embedder):
    text = 'Wait, what? Yes: the keeper (Ada) said "no"; then she left... Really!'
    chunks = chunk_document(plain(text), embedder.count_tokens)
    assert [c.text for c in chunks] == [text]


def test_short_sections_merge_under_their_shared_heading(embedder):
    source = "# Light\n\nIntro sentence.\n\n## Keepers\n\nAda kept it.\n\n## Storms\n\nThe gale came."
    doc = load_document("h.md", source.encode())
    chunks = chunk_document(doc, embedder.count_tokens, max_tokens=100)
    assert [(c.text, c.heading) for c in chunks] == [(source, ("Light",))]


def test_a_section_that_does_not_fit_starts_a_chunk_once_the_chunk_is_half_full(embedder):
    keepers = " ".join(f"Keeper number {n} polished the great lens." for n in range(6))
    storms = " ".join(f"Storm number {n} broke the harbour wall." for n in range(6))
    source = f"# Light\n\n## Keepers\n\n{keepers}\n\n## Storms\n\n{storms}\n\n## Fog\n\nFog rolled in."
    doc = load_document("h.md", source.encode())
    chunks = chunk_document(doc, embedder.count_tokens, max_tokens=100)
    assert chunks[0].tokens >= 50
    assert [(c.text.split("\n")[0], c.heading) for c in chunks] == [
        ("# Light", ("Light",)),
        ("## Storms", ("Light",)),  # Fog fits whole after Storms, so it joins: the shared path is Light
    ]
    assert chunks[1].text.endswith("Fog rolled in.")


def test_many_tiny_sections_give_chunks_of_normal_size(embedder):
    """20,000 headings were 20,000 chunks: chunk count must follow the text's size, not its headings."""
    source = "\n".join(f"# Heading {n}\nShort line {n}." for n in range(2000))
    doc = load_document("many.md", source.encode())
    assert len(doc.sections) == 2000
    chunks = chunk_document(
        doc, embedder.count_tokens, max_tokens=100, count_tokens_batch=embedder.count_tokens_batch
    )
    assert_well_formed(doc, chunks, 100, embedder.count_tokens)
    total = sum(c.tokens for c in chunks)
    assert len(chunks) <= 2 * total / 100 + 1
    assert all(c.tokens >= 90 for c in chunks[:-1])  # sections that fit whole keep joining
    assert all(c.heading == () for c in chunks)  # top-level headings share no parent


def test_chunks_may_cross_pages_and_take_the_starting_page(embedder):
    text = "Page one says one thing.\n\nPage two says another.\n\nPage three ends it."
    sections = [Section(0, 26, page=1), Section(26, 50, page=2), Section(50, len(text), page=3)]
    doc = LoadedDocument(name="p.pdf", text=text, sections=sections, format="pdf")
    one = chunk_document(doc, embedder.count_tokens, max_tokens=100)
    assert [(c.text, c.page) for c in one] == [(text, 1)]
    small = chunk_document(doc, embedder.count_tokens, max_tokens=6)
    assert [(c.text, c.page) for c in small] == [
        ("Page one says one thing.", 1),
        ("Page two says another.", 2),
        ("Page three ends it.", 3),
    ]


def test_long_sentence_is_split_at_clause_boundaries(embedder):
    clauses = [f"the keeper polished lens number {n} until it shone" for n in range(12)]
    text = "; ".join(clauses) + "."
    assert embedder.count_tokens(text) > 60
    chunks = chunk_document(plain(text), embedder.count_tokens, max_tokens=30)
    assert_well_formed(plain(text), chunks, 30, embedder.count_tokens)
    assert len(chunks) > 1
    for chunk in chunks[:-1]:
        assert chunk.text.endswith(";"), chunk.text
    assert chunks[-1].text.endswith(".")


def test_sentence_without_clauses_is_split_at_words(embedder):
    text = " ".join(["lighthouse"] * 80) + "."
    chunks = chunk_document(plain(text), embedder.count_tokens, max_tokens=25)
    assert_well_formed(plain(text), chunks, 25, embedder.count_tokens)
    assert all(re.fullmatch(r"lighthouse( lighthouse)*\.?", c.text) for c in chunks)


def test_hard_limit_wins_over_max_tokens_even_for_one_giant_word(embedder):
    giant = "ab-" * 400  # no spaces, no clause breaks, ~800 tokens: only character splitting can fit it
    text = "Start. " + giant + " end."
    assert embedder.count_tokens(giant) > 500
    chunks = chunk_document(plain(text), embedder.count_tokens, max_tokens=100, hard_limit=40)
    assert_well_formed(plain(text), chunks, 40, embedder.count_tokens)
    assert len(chunks) >= 800 // 40


def test_hard_limit_holds_for_a_counter_that_is_not_additive():
    """Counting characters makes whitespace between sentences count, so packed sums undercount chunks."""
    text = " ".join(f"Sentence number {n:02d} is here." for n in range(40))  # each sentence 29 chars
    chunks = chunk_document(plain(text), len, max_tokens=87)  # three sentences sum to 87 but span 89
    assert_well_formed(plain(text), chunks, 87, len)
    assert max(c.tokens for c in chunks) <= 87


def test_tiny_inputs(embedder):
    assert [c.text for c in chunk_document(plain("Word"), embedder.count_tokens)] == ["Word"]
    one = chunk_document(plain("  One short sentence.  "), embedder.count_tokens)
    assert [(c.text, c.start, c.end, c.index) for c in one] == [("One short sentence.", 2, 21, 0)]
    assert chunk_document(plain(""), embedder.count_tokens) == []
    assert chunk_document(plain(" \n\n "), embedder.count_tokens) == []


def test_batch_and_single_counting_agree(embedder):
    doc = load_document(SAMPLE.name, SAMPLE.read_bytes())
    single = chunk_document(doc, embedder.count_tokens, max_tokens=80)
    batched = chunk_document(
        doc, embedder.count_tokens, max_tokens=80, count_tokens_batch=embedder.count_tokens_batch
    )
    assert [(c.start, c.end, c.tokens) for c in single] == [(c.start, c.end, c.tokens) for c in batched]


def test_limit_below_one_token_is_refused(embedder):
    with pytest.raises(ValueError):
        chunk_document(plain("text"), embedder.count_tokens, max_tokens=0)


# --------------------------------------------------------------------------------------------------- fuzz

_fuzz_text = st.lists(
    st.sampled_from(
        list("abc XYZ.,;:!?\"'…—-\n\t0123456789éß")
        + ["Mr.", "e.g.", "...", "\n\n", "# ", "word", "\n```\n", "\n~~~\n", "\n    "]
        + ["et al.", "Fig.", "[1]", "BIBREF2", " Tom said.", "\n1) ", ' " ', "!\u201d "]
    ),
    max_size=120,
).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_fuzz_text, limit=st.integers(min_value=1, max_value=40))
def test_fuzz_chunker_never_crashes_and_respects_limit(embedder, text, limit):
    doc = plain(text)
    chunks = chunk_document(
        doc, embedder.count_tokens, max_tokens=limit, count_tokens_batch=embedder.count_tokens_batch
    )
    assert_well_formed(doc, chunks, limit, embedder.count_tokens)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=st.text(max_size=400))
def test_fuzz_markdown_documents_chunk_cleanly(embedder, source):
    try:
        doc = load_document("f.md", source.encode("utf-8", "surrogatepass"))
    except IngestError:
        return
    chunks = chunk_document(doc, embedder.count_tokens, max_tokens=12)
    assert_well_formed(doc, chunks, 12, embedder.count_tokens)
    for chunk in chunks:
        touched = [s for s in doc.sections if s.start < chunk.end and chunk.start < s.end]
        assert all(s.heading[: len(chunk.heading)] == chunk.heading for s in touched)
        if len(touched) == 1:
            assert chunk.heading == touched[0].heading


def test_loaded_pdf_chunks_carry_pages(embedder):
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    for line in ["The first page talks about oil.", "The second page talks about wicks."]:
        pdf.drawString(72, 720, line)
        pdf.showPage()
    pdf.save()
    doc = load_document("two.pdf", buffer.getvalue())
    chunks = chunk_document(doc, embedder.count_tokens, max_tokens=8)
    assert [(c.text, c.page) for c in chunks] == [
        ("The first page talks about oil.", 1),
        ("The second page talks about wicks.", 2),
    ]


def test_split_keeps_each_table_row_a_line_of_its_own():
    text = "Costs were:\nItem | Cost\nLadders | £320\nGrafting knives | £85\nThe total was paid.\n| A | B |\n|---|---|"
    assert sentences(text) == [
        "Costs were:",
        "Item | Cost",
        "Ladders | £320",
        "Grafting knives | £85",
        "The total was paid.",
        "| A | B |",
        "|---|---|",
    ]


def test_a_table_row_before_a_blank_line_is_not_continued_by_a_lower_case_line():
    """A blank line before a lower-case line is a page break inside a sentence (a PDF's), except after a
    table row: 'Ann | Keeper' then 'code here' (an HTML table, then a <pre>) are two lines, not one."""
    assert sentences("Name | Role\n\nAnn | Keeper\n\ncode here") == ["Name | Role", "Ann | Keeper", "code here"]
    assert sentences("The keeper was\n\nann | keeper") == ["The keeper was", "ann | keeper"]
    assert sentences("The lamp was\n\nlit at dusk.") == ["The lamp was\n\nlit at dusk."]  # a page break


ZH = (
    "斯凯罗角灯塔建于1852年。第一任看守人是托马斯·哈尔贝克，他在灯塔工作了二十年。"
    "1887年的大风暴中，安布罗斯·基托救出了十二名渔民！灯塔的透镜每周清洗一次吗？"
    "他说：“灯亮了。”1921年，灯塔改用电力照明。"
)


def test_split_ends_chinese_and_japanese_sentences_at_their_full_stops():
    assert sentences(ZH) == [
        "斯凯罗角灯塔建于1852年。",
        "第一任看守人是托马斯·哈尔贝克，他在灯塔工作了二十年。",
        "1887年的大风暴中，安布罗斯·基托救出了十二名渔民！",
        "灯塔的透镜每周清洗一次吗？",
        "他说：“灯亮了。”",  # the closing quote stays with its sentence
        "1921年，灯塔改用电力照明。",
    ]
    assert sentences("灯台は1852年に建てられた。嵐は「すごい！」と彼は言った。") == [
        "灯台は1852年に建てられた。",
        "嵐は「すごい！」と彼は言った。",  # と: who said the quotation follows it
    ]
    assert sentences("透镜宽３．５米。") == ["透镜宽３．５米。"]  # a fullwidth decimal point is no full stop
    # text without those marks splits as it always did: no space, no sentence break
    spaced = "It cost 3.5 pounds.Then it rained. Done!"
    assert sentences(spaced) == ["It cost 3.5 pounds.Then it rained.", "Done!"]


def test_chinese_text_chunks_keep_whole_sentences_and_long_ones_break_at_clauses(embedder):
    text = ZH * 6
    chunks = chunk_document(plain(text), embedder.count_tokens, max_tokens=60)
    assert_well_formed(plain(text), chunks, 60, embedder.count_tokens)
    assert len(chunks) > 3
    assert all(c.text.endswith(("。", "！", "？", "”")) for c in chunks), [c.text[-5:] for c in chunks]
    long_sentence = "，".join(["看守人每天晚上把灯油提上楼梯"] * 12) + "。"
    pieces = chunk_document(plain(long_sentence), embedder.count_tokens, max_tokens=40)
    assert_well_formed(plain(long_sentence), pieces, 40, embedder.count_tokens)
    assert len(pieces) > 1 and all(p.text.endswith("，") for p in pieces[:-1])


@pytest.mark.parametrize("opening", ['"', "\u201c", "'", "\u00ab", "("])
def test_a_title_line_ends_before_a_sentence_that_opens_with_a_quotation_mark(opening):
    """A story's title over its first line of dialogue is a line of its own, not the dialogue's first
    words (a quote 'The Lamp on the Hill "I told you," she said ...' read as one sentence)."""
    line = f"{opening}I told you so,{opening} she said to the grocer's boy the next Saturday morning."
    assert sentences(f"The Lamp on the Hill\n{line}") == ["The Lamp on the Hill", line]
    # a wrapped line of prose before a quoted lower-case word stays one sentence
    wrapped = f"and she told the grocer's boy that the weather\n{opening}was{opening} going to turn by the evening."
    assert sentences(wrapped) == [wrapped]


def test_split_ends_a_chinese_title_line_that_runs_into_the_prose():
    """No capitals say where a Chinese sentence starts: a short unpunctuated line before a long one is a title."""
    text = "灯塔看守人的历史\n斯凯罗角灯塔建于1852年，第一任看守人是托马斯·哈尔贝克。"
    assert sentences(text) == ["灯塔看守人的历史", "斯凯罗角灯塔建于1852年，第一任看守人是托马斯·哈尔贝克。"]
    wrapped = "第一任看守人是托马斯·哈尔贝克，他在灯塔\n工作了二十年。"  # a line ending mid-sentence, not short
    assert sentences(wrapped) == [wrapped]


@settings(max_examples=150, deadline=None)
@given(text=_fuzz_text)
def test_fuzz_sentences_cover_the_text_and_never_split_a_line_of_code(text):
    """Every non-space character is in one sentence, and a line of code (`code_lines`) lies inside one."""
    from raptor_engine.ingest.chunk import code_lines

    spans = split_sentences(text)
    assert "".join("".join(text[a:b].split()) for a, b in spans) == "".join(text.split())
    for start, end in code_lines(text):
        line = text[start:end].strip()
        if line:
            assert any(text[a:b] == line for a, b in spans)


# One kind of fence a document (a bare '```' inside a '~~~' block is a line of its code, which a leaf
# that begins inside the block cannot tell from its closing fence: left, ROBUSTNESS.md).
_CODE_DOC_LINE = st.sampled_from(
    [
        "The keeper lit the lamp.",
        "It burned all night and the fog lifted at dawn.",
        "Call it:",
        "FENCE",
        "FENCE",
        "x = 1",
        "    y  = 2",
        "\tz = 3",
        "return settings",
        "",
        "",
        "# Heading",
        "- item",
        "    FENCE",
    ]
)


def _code_line_starts(text: str, spans, base: int = 0) -> set[int]:
    """Where each line of `text` that `code_lines` spans touch begins, as an offset past `base`."""
    return {base + text.rfind("\n", 0, a) + 1 for a, b in spans if text[a:b].strip()}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(_CODE_DOC_LINE, max_size=40),
    fence=st.sampled_from(["```", "~~~"]),
    limit=st.integers(min_value=24, max_value=40),
)
def test_fuzz_a_leaf_reads_its_code_as_the_document_does(lines, fence, limit):
    """Each leaf's `code_lines` agree with the whole text's about every line after the leaf's first,
    wherever the leaf begins: inside a long fenced block (its closing fence read as one), or outside. A
    leaf wholly inside a block, holding no fence, cannot be told from prose (left: ROBUSTNESS.md). The
    limit is over any sentence here, as a leaf's is over most, so a fence line can be held to its
    neighbour (one cut into words, or a neighbour filling a leaf, may not be: left)."""
    from raptor_engine.ingest.chunk import _FENCE_LINE, code_lines

    try:
        doc = load_document("f.md", "\n".join(lines).replace("FENCE", fence).encode())
    except IngestError:
        return
    if doc.text[:1].isspace():  # it opens with an indented fence line, which its first leaf trims (left)
        return
    whole = _code_line_starts(doc.text, code_lines(doc.text))
    for chunk in chunk_document(doc, lambda text: len(text.split()), max_tokens=limit):
        first_break = chunk.text.find("\n")
        if first_break < 0:
            continue
        later = chunk.start + first_break + 1  # the leaf's first line lost its indentation to trimming
        opens_in_code = doc.text.rfind("\n", 0, chunk.start) + 1 in whole
        if opens_in_code and not any(_FENCE_LINE.match(line) for line in chunk.text.split("\n")):
            continue
        own = {at for at in _code_line_starts(chunk.text, code_lines(chunk.text), chunk.start) if at >= later}
        starts = {chunk.start + i + 1 for i, ch in enumerate(chunk.text) if ch == "\n"}
        shown = {at for at in starts if doc.text[at : doc.text.find("\n", at) % (len(doc.text) + 1)].strip()}
        assert own == {at for at in whole if at in shown}, chunk.text


def test_a_leaf_that_begins_inside_a_fenced_block_reads_its_closing_fence_as_one():
    """A leaf cut from the end of a long block of code: its lines up to the closing fence are code and
    the prose after it is prose (the closing fence was read as an opening one: the prose became code and
    a summary took the code line before it for prose, 'yield float(row) The keeper runs it hourly.')."""
    from raptor_engine.ingest.chunk import code_lines

    leaf = 'key = line.partition("=")\n        settings[key] = value\n    return settings\n```\n\nThe keeper runs it hourly.'
    lines = [leaf[a:b] for a, b in code_lines(leaf)]
    assert lines == ['key = line.partition("=")', "        settings[key] = value", "    return settings", "```"]
    assert sentences(leaf)[-1] == "The keeper runs it hourly."
    # a leaf that opens on a block, and a chat message whose fence follows its first line, begin outside
    for text in ("Call it:\n\n```\nx = 1\n```\n\nAfter.", "Here:\n```\nx = 1\n```", "Here:\n```py\nx = 1\n```"):
        assert [text[a:b] for a, b in code_lines(text)][1] == "x = 1"


@pytest.mark.parametrize("intro", [3, 17])  # 17 words and the fence fill a chunk of 18
@pytest.mark.parametrize("values", [28, 29, 30])  # 28: a chunk full of code right before the closing fence
def test_no_leaf_ends_on_an_opening_fence_nor_begins_on_a_closing_one(intro, values):
    readme = " ".join(["Intro"] * intro) + ".\n\n```\n" + "\n".join(f"v{i} = {i}" for i in range(values))
    doc = load_document("readme.md", (readme + "\n```\n\nThe end.").encode())
    chunks = chunk_document(doc, lambda text: len(text.split()), max_tokens=18)
    assert len(chunks) > 3
    opening, closing = doc.text.index("```"), doc.text.rindex("```")
    assert not any(chunk.end == opening + 3 for chunk in chunks)  # the opening fence ends no leaf
    assert not any(chunk.start == closing for chunk in chunks)  # the closing fence begins none


def test_no_sentence_opens_with_a_fences_marks_inside_a_line():
    """'It was dawn. ```' (a paragraph's wrapped line that holds the marks, joined to it by the loader):
    a sentence opening with them would, at a leaf's start, pose as a fence; they stay with the one before."""
    assert sentences("It burned all night. ```\nThe keeper lit the lamp.") == [
        "It burned all night. ```\nThe keeper lit the lamp."
    ]
    assert sentences("Call it:\n\n```\nx = 1\n```\n\nAfter.") == ["Call it:", "```", "x = 1", "```", "After."]
