"""Text uploads in legacy encodings are read in the encoding their bytes make language in, and say so;
binary data and bytes that read as no language are still refused with one sentence."""

from __future__ import annotations

import pytest

from raptor_engine.errors import IngestError
from raptor_engine.ingest.load import load_document

MILL = (
    "The mill was built in 1820 by John Hale, who paid \u00a3400 for the land. His daughter called it "
    "\u201cthe finest mill in the county\u201d \u2014 and she was right; it didn\u2019t close until 1911."
)
WESTERN = "Caf\u00e9 cr\u00e8me, d\u00e9j\u00e0 vu \u00e0 la carte; Gr\u00f6\u00dfe und Ma\u00dfe der Br\u00fccke."


@pytest.mark.parametrize(
    ("text", "encoding", "named"),
    [
        (MILL, "cp1252", "Windows-1252"),  # curly quotes, pound sign, dash and apostrophe
        (MILL, "mac_roman", "Mac OS Roman"),  # the same bytes read as Windows-1252 put capitals mid-word
        (WESTERN, "latin-1", "Windows-1252"),  # browsers read Latin-1 as its superset
        (WESTERN, "mac_roman", "Mac OS Roman"),  # \u00df as Windows-1252 is '\u00a7' inside a word
        ("Za\u017c\u00f3\u0142\u0107 g\u0119\u015bl\u0105 ja\u017a\u0144, to jest test polskiego tekstu.", "cp1250", "Windows-1250"),
        ("\u041c\u0435\u043b\u044c\u043d\u0438\u0446\u0430 \u0432 \u042d\u0448\u0431\u0438 \u0431\u044b\u043b\u0430 \u043f\u043e\u0441\u0442\u0440\u043e\u0435\u043d\u0430 \u0432 1820 \u0433\u043e\u0434\u0443 \u0414\u0436\u043e\u043d\u043e\u043c \u0425\u0435\u0439\u043b\u043e\u043c.", "cp1251", "Windows-1251"),
        ("\u041c\u043e\u0441\u043a\u0432\u0430 - \u0441\u0442\u043e\u043b\u0438\u0446\u0430 \u0420\u043e\u0441\u0441\u0438\u0438, \u043a\u0440\u0443\u043f\u043d\u0435\u0439\u0448\u0438\u0439 \u0433\u043e\u0440\u043e\u0434 \u0441\u0442\u0440\u0430\u043d\u044b.", "koi8_r", "KOI8-R"),
        ("\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u03ba\u03b5\u03af\u03bc\u03b5\u03bd\u03b1 \u03b5\u03b4\u03ce \u03b3\u03b9\u03b1 \u03b4\u03bf\u03ba\u03b9\u03bc\u03ae.", "cp1253", "Windows-1253"),
        ("\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002\u3053\u308c\u306f\u30c6\u30b9\u30c8\u3067\u3059\u3002", "shift_jis", "Shift JIS"),
    ],
)
@pytest.mark.parametrize("name", ["notes.txt", "notes.md"])
def test_legacy_encodings_are_read_and_named(text, encoding, named, name):
    doc = load_document(name, text.encode(encoding))
    assert doc.text == text
    assert doc.notices == (f"read as {named} (it is not UTF-8)",)


def test_a_legacy_subtitle_file_is_read_and_says_so():
    srt = "1\n00:00:01,000 --> 00:00:03,000\nJos\u00e9: \u201cIt\u2019s \u00a35.\u201d\n"
    doc = load_document("film.srt", srt.encode("cp1252"))
    assert doc.text == "Jos\u00e9: \u201cIt\u2019s \u00a35.\u201d"
    assert doc.notices == ("read as Windows-1252 (it is not UTF-8)",)


def test_utf8_with_stray_windows_1252_bytes_keeps_its_utf8():
    """Text pasted together from two editors: read as Windows-1252 whole, its UTF-8 would be mojibake."""
    data = "Prix: 5 \u20ac \u2014 tr\u00e8s bien. ".encode() + b"Then \x93quoted\x94 here."
    doc = load_document("mixed.txt", data)
    assert doc.text == "Prix: 5 \u20ac \u2014 tr\u00e8s bien. Then \u201cquoted\u201d here."
    assert doc.notices == ("read as UTF-8, with the bytes that are not UTF-8 read as Windows-1252",)


def test_utf8_is_read_without_a_notice():
    assert load_document("mill.txt", MILL.encode()).notices == ()


@pytest.mark.parametrize(
    "data",
    [
        bytes(range(0x80, 0x100)) * 40,  # every high byte: decodes in some code page, reads in none
        bytes(range(0xC0, 0x100)) * 40,  # all accented letters, no ASCII: not Western text
    ],
)
def test_high_bytes_that_read_as_no_language_are_refused_in_one_sentence(data):
    with pytest.raises(IngestError) as info:
        load_document("garbage.txt", data)
    assert info.value.reason == (
        "is not UTF-8 and does not read as text in any encoding we recognise; please save it as UTF-8."
    )


def test_binary_data_is_still_refused_as_binary():
    with pytest.raises(IngestError) as info:
        load_document("noise.txt", bytes(range(256)) * 20)
    assert info.value.reason == "contains binary data, not text."


# Real sentences in the Latin-script code pages whose bytes beyond ASCII are letters in Windows-1252 too:
# each must be read in its own code page, where one language writes all its letters.
LATIN_CODE_PAGES = [
    ("cp1254", "Windows-1254", "Türkiye'nin başkenti Ankara'dır. Işık ılık bir öğleden sonra ağaçların arasından süzülüyordu."),
    ("cp1254", "Windows-1254", "İstanbul'da yaşayan öğrenciler sınavlara hazırlanıyor. Şehir çok kalabalık."),
    ("cp1254", "Windows-1254", "Ağaç dalında kuş ötüyor."),
    # only ı and ş: as Windows-1252 'ý' and 'þ', Icelandic letters, but with none of Icelandic's common ones
    ("cp1254", "Windows-1254", "Öğretmen kızı okula gitti."),  # ö and ğ: as Windows-1252, Icelandic's ö and ð
    ("cp1254", "Windows-1254", "Holm adasına giden feribot 1931'de başladı. Feribot 1947'de fırtınada battı ve kimse yaralanmadı."),
    ("cp1250", "Windows-1250", "Příliš žluťoučký kůň úpěl ďábelské ódy. Praha je hlavní město České republiky."),
    ("cp1250", "Windows-1250", "Árvíztűrő tükörfúrógép. Budapest Magyarország fővárosa és legnépesebb települése."),
    ("cp1250", "Windows-1250", "Zagreb je glavni grad Hrvatske. Đurđevak je cvijet, a čaša je na stolu; šuma je lijepa."),
    ("cp1250", "Windows-1250", "Bratislava je hlavné mesto Slovenska. Ďateľ ťukal do stromu a kôň sa pásol."),
    ("cp1250", "Windows-1250", "Bucureşti este capitala României. Ştiinţa şi ţara sunt frumoase."),
    ("cp1257", "Windows-1257", "Įlinkdama fechtuotojo špaga sublykčiojusi pragręžė apvalų arbūzą. Lietuvos sostinė yra Vilnius."),
    ("cp1257", "Windows-1257", "Glāžšķūņa rūķīši dzērumā čiepj Baha koncertflīģeļu vākus. Latvijas galvaspilsēta ir Rīga."),
    ("iso8859_2", "ISO-8859-2", "Zażółć gęślą jaźń. Śląsk i Łódź są w Polsce."),
    ("cp1251", "Windows-1251", "Київ є столицею України. Їжак і ґанок."),
    ("koi8_r", "KOI8-R", "Съешь же ещё этих мягких французских булок, да выпей чаю."),
    ("cp1253", "Windows-1253", "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας. Ξεσκεπάζω την ψυχοφθόρα βδελυγμία."),
    ("gb18030", "GB18030", "中华人民共和国的首都是北京。今天天气很好，我们去公园散步吧。"),
    ("shift_jis", "Shift JIS", "東京は日本の首都です。今日はいい天気ですね。"),
]  # fmt: skip


@pytest.mark.parametrize(("encoding", "named", "text"), LATIN_CODE_PAGES)
def test_each_code_page_family_is_read_as_its_language(encoding, named, text):
    doc = load_document("notes.txt", text.encode(encoding))
    assert doc.text == text
    assert doc.notices == (f"read as {named} (it is not UTF-8)",)


# Western text whose letters other code pages would also decode: Windows-1252 keeps it, Icelandic's ð þ ý
# (Turkish ğ ş ı in Windows-1254) included, and names of several languages in one English sentence.
WESTERN_SENTENCES = [
    "Þetta er íslenskur texti. Við fórum í ferðalag og sáum fjöllin á Þingvöllum.",
    "Hvað er þetta? Það er bók sem þú skrifaðir.",
    "Søren bor i København og spiser rødgrød med fløde på en kold dag.",
    "Het café in België was geëxploiteerd door een ingenieur; coördinatie is één ding.",
    "The naïve café owner offered a résumé to Zoë at the soirée; Müller and Søren laughed.",
    "El señor García llegó mañana por la tarde. ¿Dónde está la estación? ¡Qué bien!",
    "Hyvää päivää, mitä kuuluu? Tämä on älykäs järjestelmä.",
]


@pytest.mark.parametrize("text", WESTERN_SENTENCES)
def test_western_text_stays_windows_1252(text):
    doc = load_document("notes.txt", text.encode("cp1252"))
    assert doc.text == text
    assert doc.notices == ("read as Windows-1252 (it is not UTF-8)",)


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le"])
def test_a_utf8_bom_in_front_of_a_utf16_or_utf32_bom_is_read_as_the_inner_encoding(encoding):
    """A UTF-16 file a tool 'saved as UTF-8' by adding its BOM in front: not binary data."""
    data = b"\xef\xbb\xbf" + ("\ufeff" + MILL).encode(encoding)
    assert load_document("mill.txt", data).text == MILL


# Short texts, and long ones, in every legacy reading met in uploads: each read back exactly. A wrong
# code page turns letters into symbols ('ni\u2013o', 'yad\u02dd') or into letters of several languages.
SHORT_LEGACY = [
    ("K\u0131\u015f\u0131n kar ya\u011fd\u0131.", "cp1254", "Windows-1254"),  # Mac OS Roman read it as symbols
    ("K\u0131\u015f\u0131n kar ya\u011fd\u0131.", "iso8859_9", "Windows-1254"),
    ("El ni\u00f1o comi\u00f3 pi\u00f1as en Espa\u00f1a. \u00bfD\u00f3nde est\u00e1?", "mac_roman", "Mac OS Roman"),
    ("Ma\u00f1ana.", "mac_roman", "Mac OS Roman"),  # Windows-1252 read 'Ma\u2013ana'
    ("Le prix est de 5 \u20ac par personne.", "iso8859_15", "ISO-8859-15"),  # Windows-1252 read '5 \u00a4'
    ("Le c\u0153ur de No\u00ebl co\u00fbte 5 \u20ac, dit \u0178ves.", "iso8859_15", "ISO-8859-15"),
    ("Die Gr\u00f6\u00dfe der B\u00e4ume \u00fcberrascht J\u00fcrgen.", "cp850", "DOS code page 850"),
    ("\u00c9l\u00e8ve tr\u00e8s s\u00e9rieux, il pr\u00e9f\u00e8re la for\u00eat.", "cp850", "DOS code page 850"),
    ("P\u0159\u00edli\u0161 \u017elu\u0165ou\u010dk\u00fd k\u016f\u0148 \u00fap\u011bl \u010f\u00e1belsk\u00e9 \u00f3dy.", "cp1250", "Windows-1250"),
    ("\u00c1rv\u00edzt\u0171r\u0151 t\u00fck\u00f6rf\u00far\u00f3g\u00e9p.", "iso8859_2", "Windows-1250"),  # the same bytes
    ("Bl\u00e5b\u00e6rgr\u00f8d med fl\u00f8de er godt p\u00e5 \u00f8en.", "cp1252", "Windows-1252"),
]


@pytest.mark.parametrize(("text", "encoding", "named"), SHORT_LEGACY)
@pytest.mark.parametrize("lines", [1, 40])
def test_short_and_long_legacy_texts_are_read_exactly(text, encoding, named, lines):
    doc = load_document("notes.txt", "\n".join([text] * lines).encode(encoding))
    assert doc.text.split("\n")[0] == text
    assert doc.notices[0].startswith(f"read as {named} (it is not UTF-8)")


def test_dense_polish_in_a_long_file_is_read_not_refused():
    """Letters beyond ASCII a third of the letters, as in Cyrillic read as Latin: read as Polish, since
    Windows-1250's reading fits Polish wholly (it was refused at 30 lines)."""
    text = "Za\u017c\u00f3\u0142\u0107 g\u0119\u015bl\u0105 ja\u017a\u0144. \u0141\u00f3d\u017a jest du\u017cym miastem."
    doc = load_document("pl.txt", "\n".join([text] * 30).encode("cp1250"))
    assert doc.text.split("\n")[0] == text


def test_a_text_two_code_pages_read_as_plausibly_names_the_other_reading():
    """'Dzi\u0119kuj\u0119' in Windows-1250 is 'Dzi\u00eakuj\u00ea' in Windows-1252, whose letters French and
    Portuguese write: the preferred reading is taken, and the notice says what the other would read."""
    doc = load_document("pl.txt", "Dzi\u0119kuj\u0119 bardzo za pomoc.".encode("cp1250"))
    assert doc.notices == (
        "read as Windows-1252 (it is not UTF-8); as Windows-1250 it would read 'Dzi\u0119kuj\u0119' where this "
        "reads 'Dzi\u00eakuj\u00ea', and as Windows-1257 it would read 'Dzi\u017akuj\u017a' where this reads "
        "'Dzi\u00eakuj\u00ea'",
    )


@pytest.mark.parametrize("text", [MILL, "It\u2019s fine.", "He said \u201cdon\u2019t go\u201d \u2013 and left\u2026"])
def test_windows_1252_punctuation_names_no_rival_reading(text):
    """Mac OS Roman reads Windows-1252's curly quotes as letters ('It\u00eds'): no rival worth naming."""
    assert load_document("a.txt", text.encode("cp1252")).notices == ("read as Windows-1252 (it is not UTF-8)",)


def test_cyrillic_read_in_a_latin_code_page_is_still_no_latin_text():
    text = "\u041c\u043e\u0441\u043a\u0432\u0430 \u0441\u0442\u043e\u043b\u0438\u0446\u0430 \u0420\u043e\u0441\u0441\u0438\u0438. " * 30
    doc = load_document("ru.txt", text.encode("cp1251"))
    assert doc.text.startswith(text.split(". ")[0])


@pytest.mark.parametrize("lines", [1, 30])
def test_mac_cyrillic_is_not_taken_for_windows_1251(lines):
    """The guesser took Mac OS Cyrillic for Windows-1251, whose reading of its capitals is Serbian letters
    among Russian ones ('Њосква'); the Cyrillic reading whose letters fit one language wholly is kept."""
    text = "\u041c\u043e\u0441\u043a\u0432\u0430 \u2014 \u0441\u0442\u043e\u043b\u0438\u0446\u0430 \u0420\u043e\u0441\u0441\u0438\u0438. \u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!"
    doc = load_document("ru.txt", "\n".join([text] * lines).encode("mac_cyrillic"))
    assert doc.text.split("\n")[0] == text
    assert doc.notices == ("read as MAC-CYRILLIC (it is not UTF-8)",)
