"""Which language a question and the documents are written in, so an answer that found only the
closest passages can say why they may look unrelated: the documents are in one language and the
question in another (the default embedder and the grounding model are English-trained, so a Spanish
question over English documents gets passages that share none of its words).

Read off each language's most frequent short words (articles, pronouns, question words) and, for the
scripts that only one language writes, the script. A script that several write (Cyrillic, Arabic,
Devanagari) names a language only when that language's own letters and words lead ('ї' is Ukrainian,
'ў' Belarusian), and otherwise reads as "a language written in Cyrillic": a Ukrainian question is not
called Russian. A text too short or too mixed to tell reads as None, and the answer says nothing of
languages then.
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
    ("Cyrillic", re.compile(r"[\u0400-\u04ff]")),
    ("Greek", re.compile(r"[\u0370-\u03ff]")),
    ("Arabic", re.compile(r"[\u0600-\u06ff\u0750-\u077f]")),
    ("Hebrew", re.compile(r"[\u0590-\u05ff]")),
    ("Devanagari", re.compile(r"[\u0900-\u097f]")),
    ("Thai", re.compile(r"[\u0e00-\u0e7f]")),
)


class _Written:
    """One language of a script that several write: the letters only it (or it and a near neighbour)
    writes, and its frequent short words; each letter and each word it holds is a vote."""

    def __init__(self, letters: str, words: str) -> None:
        self.letters = re.compile(f"[{letters}]") if letters else None
        self.words = frozenset(words.split())

    def votes(self, text: str, words: list[str]) -> int:
        letters = len(self.letters.findall(text)) if self.letters else 0
        return letters + sum(1 for word in words if word in self.words)


# The languages of the scripts several languages write (Ukrainian is not Russian because both are
# Cyrillic): a text is named for the one with the most votes, or else only for its script.
SHARED_SCRIPTS: dict[str, dict[str, _Written]] = {
    "Cyrillic": {
        "Russian": _Written("ыэё", "что кто когда почему сколько такое это был была были есть который которая"),
        "Ukrainian": _Written("іїєґ", "що хто коли чому скільки це був була були є який яка"),
        "Belarusian": _Written("ўі", "што хто калі чаму колькі гэта быў была былі ёсць які якая"),
        "Bulgarian": _Written("ъ", "какво кой къде защо колко са това този тази които беше бяха"),
        "Serbian": _Written("ђћјљњџ", "шта ко када зашто колико је су био била ово који која"),
        "Macedonian": _Written("ѓќѕјљњџ", "што кој каде зошто колку ова оваа кои беа"),
        "Kazakh": _Written("әғқңөұүһі", "не кім қашан қайда неге қанша бұл және болды"),
    },
    "Arabic": {
        "Arabic": _Written("ةيكى", "في من على إلى عن هذا هذه التي الذي كان ما متى أين لماذا كم هل"),
        "Persian": _Written("ژ", "است که در را این آن چه کی کجا چرا چند بود هست برای"),
        "Urdu": _Written("ٹڈڑںےۓھہ", "ہے ہیں کے کی میں کیا کون کب کہاں کیوں کتنے تھا تھی"),
        "Pashto": _Written("ټډړږښځڅڼې", "دی ده چې په د څه څوک کله ولې"),
        "Kurdish": _Written("ێۆڵڕ", "لە بۆ ئەو ئەم چی کێ کەی بۆچی"),
    },
    "Devanagari": {
        "Hindi": _Written("", "है हैं के की में क्या कौन किसने किसको किसका कब कहाँ कहां क्यों कितने कितना था थी थे"),
        "Marathi": _Written("", "आहे आहेत काय कोण कोणी कोणता कोणती कधी कुठे होता होती होते आणि"),
        "Nepali": _Written("", "छ छन् हो को कसले कहिले किन कति थियो गर्छ र"),
    },
}
_SCRIPT_WORD = re.compile(r"[\u0900-\u097f]+|[^\s\d\W]+")  # Devanagari vowel signs are no \w


def _unnamed(script: str) -> str:
    """How a text is named when only its script can be told."""
    return f"a language written in {script}"


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
            return _language_of_shared_script(language, text) if language in SHARED_SCRIPTS else language
    return None


def _language_of_shared_script(script: str, text: str) -> str:
    """Which of the languages writing `script` the text is in, by its letters and frequent words;
    the script's own name when none leads (a short Serbian or Macedonian question, say)."""
    lower = text.lower()
    words = _SCRIPT_WORD.findall(lower)
    votes = Counter({name: written.votes(lower, words) for name, written in SHARED_SCRIPTS[script].items()})
    return _leader(votes, 1) or _unnamed(script)


def is_named(language: str) -> bool:
    """False for a text told only by its script ("a language written in Cyrillic")."""
    return language not in {_unnamed(script) for script in SHARED_SCRIPTS}


def _script_of(language: str) -> str | None:
    """The shared script a language name (or an unnamed one) belongs to, None for the others."""
    for script, languages in SHARED_SCRIPTS.items():
        if language in languages or language == _unnamed(script):
            return script
    return None


def _same_language(one: str, other: str) -> bool:
    """Equal names, or one text told only by its script and the other written in it: no reason to say
    the two differ."""
    if one == other:
        return True
    script = _script_of(one)
    return script is not None and script == _script_of(other) and _unnamed(script) in (one, other)


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
    if held is None or _same_language(held, asked):
        return None
    return held, asked
