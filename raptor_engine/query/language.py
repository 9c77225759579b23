"""Which language a question and the documents are written in, so an answer that found only the
closest passages can say why they may look unrelated: the documents are in one language and the
question in another (the default embedder and the grounding model are English-trained, so a Spanish
question over English documents gets passages that share none of its words).

Read off each language's most frequent short words (articles, pronouns, question words) and, for the
scripts that only one or a few languages write, the script. A text too short or too mixed to tell reads
as None, and the answer says nothing of languages then.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

# Words frequent in each language and rare in the others (accents written and left off: "que", "qué").
# English keeps the words that other languages also write ('in', 'a', 'is') out, so they count for none.
LANGUAGE_WORDS: dict[str, frozenset[str]] = {
    language: frozenset(text.split())
    for language, text in {
        "English": """the and of to that with for were are this from they which have has had been would
            what who when where why how does did it its their there could should about than them these you
            your my tell many much""",
        "Spanish": """el los las del una por con para está están son fue qué quién quiénes cuándo dónde cómo
            cuántos cuántas cuánto cuál cuáles porque pero más muy también puedo puede hay sus desde hasta
            como cuantos cuantas cuanto cual quien donde cuando este esta estos entre sobre""",
        "French": """le les des est une dans pour qui que sont pas avec sur aux du au ce cette ces il elle
            ils elles nous vous je quoi quand où comment pourquoi combien quel quelle quels quelles puis
            peut être était été leur mais plus très""",
        "German": """der die das und ist nicht ein eine einen mit den dem von zu wie wer wann wo warum
            welche welcher welches wieviel wieviele viele ich sie wir ihr sich auch auf für war sind
            kann können noch nach bei aus""",
        "Italian": """il gli da della delle dei che è di per una con sono non chi cosa quando dove perché
            quanto quanti quante quale quali posso può nel nella degli anche più molto questo questa""",
        "Portuguese": """os da do das dos não uma com para é são quem quando onde como porque quanto
            quantos quantas qual quais posso pode mais muito também uma ele ela eles elas isso este esta""",
        "Dutch": """het een en van niet met dat op voor zijn wat wie wanneer waar hoe waarom welke hoeveel ik
            jij wij zij ook bij naar heeft hebben kan kunnen deze dit""",
        "Polish": """nie się jest że na do jak co kto kiedy gdzie dlaczego ile który która które mogę
            może są był była było oraz przez dla czy jego jej""",
    }.items()
}
# Scripts that name their language (or a few), by a character range each.
SCRIPTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Japanese", re.compile(r"[\u3040-\u30ff]")),  # kana: Japanese even among kanji
    ("Korean", re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")),
    ("Chinese", re.compile(r"[\u4e00-\u9fff]")),
    ("Russian", re.compile(r"[\u0400-\u04ff]")),
    ("Greek", re.compile(r"[\u0370-\u03ff]")),
    ("Arabic", re.compile(r"[\u0600-\u06ff]")),
    ("Hebrew", re.compile(r"[\u0590-\u05ff]")),
    ("Hindi", re.compile(r"[\u0900-\u097f]")),
    ("Thai", re.compile(r"[\u0e00-\u0e7f]")),
)
SCRIPT_SHARE = 0.3  # a text whose letters are this much of one script is in its language
MIN_QUESTION_WORDS = 3  # a shorter question ('Quién?') cannot be told
MIN_TEXT_HITS = 5  # the documents' sample must hold this many frequent words of its language
_WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)*")  # 'puis-je' is two words
_LETTER = re.compile(r"[^\W\d_]")


def _plain(word: str) -> str:
    """The word in lower case without its accents ('Cuántos' -> 'cuantos'), to match either spelling."""
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


_PLAIN_WORDS = {language: frozenset(_plain(w) for w in words) for language, words in LANGUAGE_WORDS.items()}


def _by_script(text: str) -> str | None:
    letters = _LETTER.findall(text)
    if not letters:
        return None
    for language, script in SCRIPTS:
        if len(script.findall(text)) >= SCRIPT_SHARE * len(letters):
            return language
    return None


def _word_counts(text: str) -> Counter[str]:
    """How many of each language's frequent words the text holds."""
    counts: Counter[str] = Counter()
    for word in _WORD.findall(text):
        lower, plain = word.lower(), _plain(word)
        for language, words in LANGUAGE_WORDS.items():
            if lower in words or plain in _PLAIN_WORDS[language]:
                counts[language] += 1
    return counts


def _leader(counts: Counter[str], least: int) -> str | None:
    """The language with the most hits, at least `least` of them and more than any other has."""
    ranked = counts.most_common(2)
    if not ranked or ranked[0][1] < least or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
        return None
    return ranked[0][0]


def question_language(question: str) -> str | None:
    """The language a question is written in; None when it is too short or too mixed to tell. A
    question holding one English frequent word reads as English whatever else it holds ('Was ist ...'
    has none: 'was' is German as much as English, so it is no English word here)."""
    script = _by_script(question)
    if script is not None:
        return script
    if len(_WORD.findall(question)) < MIN_QUESTION_WORDS:
        return None
    counts = _word_counts(question)
    if counts["English"]:
        return "English"
    return _leader(counts, 1)


def documents_language(texts: Iterable[str]) -> str | None:
    """The language of the documents' passages (the context's sentences); None when it cannot be told."""
    joined = "\n".join(texts)
    return _by_script(joined) or _leader(_word_counts(joined), MIN_TEXT_HITS)


def other_language(question: str, texts: Iterable[str]) -> tuple[str, str] | None:
    """(the documents' language, the question's) when both can be told and differ, else None."""
    asked = question_language(question)
    if asked is None:
        return None
    held = documents_language(texts)
    if held is None or held == asked:
        return None
    return held, asked
