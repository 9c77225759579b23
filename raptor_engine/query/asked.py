"""What a question asks: the words whether the quotes answer it is judged by, without the ones that ask nothing.

The grounding model (grounding.py) reads the share of the question's terms the quotes and the context
hold, and the question's cosine to them. Words that are not asks counted against quotes that answer:
a greeting or a "thanks!", a request's frame ("can you please tell me", "I was wondering if",
"quick question:"), the document it is asked of ("what does manual.md say about the tines?",
"according to the handbook, ...", "in report_2021.pdf, ..."), and the paragraph a long question pastes
before what it asks. So "what does manual.md say about the tines?" got the right sentence under
"Nothing in the documents clearly answers this".

`without_filler` takes off the request's frame and the politeness; `without_named_files` a file the
context's documents are named (the name, or its stem: "manual", "report_2021"), which is matched with the
quotes' sources instead (answer.py `_sources`); `what_is_asked` also the document a question is asked of by a
common noun ("according to the handbook", "in this report") and, of a question of several sentences,
all but its questions. None of them leaves a question without a word naming its subject: the question
comes back as it was, so a question the documents do not answer still reads so. Deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import PurePath

from ..ingest.sentences import sentence_key, sentences_of
from .followup import subject_terms

LONG_QUESTION_CHARS = 300  # a question longer than this pastes context (the evaluation sets' longest: 163)
_END = r"[\s,;:.!?\-\u2013\u2014]*"
_GREETING = (
    r"(?:hi|hello|hey|heya|hiya|howdy|greetings|good (?:morning|afternoon|evening|day)|dear (?:bot|raptor))"
    r"(?: there| all| everyone| folks| team)?"
)
_OPENER = r"(?:ok(?:ay)?|so|um+|uh+|sorry(?: to (?:bother|trouble) you)?|excuse me|apologies)"
_ASKS_A_QUESTION = r"(?:(?:a |one |another |one more |a quick |quick )?(?:question|q))"
# "quick question:" counts only before a mark: "question" may begin a real question
_LEADS = re.compile(rf"^(?:\W*(?:{_GREETING}|{_OPENER})\b{_END}|\W*{_ASKS_A_QUESTION}\s*[:,\-\u2013\u2014]{_END})+", re.I)
# a request's frame, before what it asks ("could you tell me who ...", "I was wondering whether ...")
_TELL = r"(?:tell|show|let)\s+me(?:\s+know)?"
_REQUEST = re.compile(
    r"^(?:"
    rf"(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+|kindly\s+|possibly\s+)?{_TELL}"
    rf"|(?:please\s+)?{_TELL}"
    rf"|i\s+(?:was|am|'m|’m)\s+(?:wondering|curious)(?:\s+(?:if|whether)\s+(?:you\s+(?:could|can|would)\s+(?:please\s+)?{_TELL}))?"
    r"|i\s+(?:would|'d|’d)\s+like\s+to\s+know|i\s+(?:want|need)\s+to\s+know|i\s+wonder"
    r"|do\s+you\s+(?:happen\s+to\s+)?know|(?:does\s+)?any(?:one|body)?\s+(?:idea|know)|(?:may|can|could)\s+i\s+ask"
    rf"){_END}(?=(?:who|whom|whose|what|which|when|where|why|how|if|whether|is|are|was|were|do|does|did|can|could|should|will|would|has|have|had)\b)",
    re.I,
)
_THANKS = (
    r"(?:thanks?(?: you)?(?: (?:so|very) much| a lot| a million| in advance| again)?|thank u|thx|thnx|ty|tysm|tyvm|cheers"
    r"|much appreciated|appreciated|appreciate it|please|pls|plz|if you (?:can|could|know)|if possible)"
)
_TRAILS = re.compile(rf"(?:[\s,;:.\-\u2013\u2014]*\b{_THANKS}\b[\s.!,;:)]*|\s*[\U0001F300-\U0001FAFF\u2600-\u27BF]+\s*)+$", re.I)
_PLEASE = re.compile(r"\b(?:please|pls|plz|kindly)\b,?\s*", re.I)

# common nouns for the document a question is asked of
DOCUMENT_NOUNS = (
    "handbook|manual|guide|guidebook|report|document|doc|file|paper|article|minutes|notes|policy|text|book"
    "|booklet|leaflet|brochure|pdf|spec|specification|contract|agreement|memo|letter|story|passage|essay"
    "|chapter|transcript|faq|readme|wiki|page|source|sources|documents|docs|files|documentation|instructions"
)
_OF = r"(?:the|this|that|these|those|your|our|my|its)"
_DOCUMENT = rf"{_OF}\s+(?:[\w'’-]+\s+){{0,2}}(?:{DOCUMENT_NOUNS})s?\b"
_SAY = r"(?:say|says|said|state|states|stated|mention|mentions|mentioned|tell\s+us|write|writes|wrote|note|notes|have\s+to\s+say)"
# the frames a document is asked of in, at the question's start: "according to X,", "in X,", and
# "what does X say about ..."; a file's name also at its end ("... in manual.md?") and before a verb of
# saying ("manual.md says ..."). A common noun there is often what is asked about ("in this story?",
# 'The text says "..." Why ...?'), so it counts only in the leading frames.
_LEADING_FRAMES = (
    r"\b(?:according\s+to|as\s+per|per|based\s+on)\s+{doc}{end}",
    r"(?:^|(?<=[,;:]))\s*(?:in|from|within)\s+{doc}\s*[,;:]\s*",
    r"\b(?<=what\s)(?:does|do|did)\s+{doc}\s+{say}\s*(?=about\b)",
    r"\b(?:does|do|did)\s+{doc}\s+{say}\s*(?:(?:that|if|whether)\s+)?",
)
_FILE_FRAMES = (
    *_LEADING_FRAMES,
    r"\s+(?:in|from|within)\s+{doc}(?=\s*[?.!]*\s*$)",
    r"\b{doc}\s+{say}\s*(?:that\s+)?",
)


def _frames(document: str, frames: tuple[str, ...] = _FILE_FRAMES) -> list[re.Pattern[str]]:
    return [re.compile(f.format(doc=document, say=_SAY, end=_END), re.I) for f in frames]


_COMMON_FRAMES = _frames(_DOCUMENT, _LEADING_FRAMES)


def _asks_something(text: str) -> bool:
    return bool(subject_terms(text))


def _tidy(text: str) -> str:
    text = " ".join(text.split())
    text = re.sub(r"\s+([,;:.!?])", r"\1", text)
    text = re.sub(r"^[\s,;:.\-\u2013\u2014]+", "", text)
    return text[:1].upper() + text[1:] if text else text


def _kept(question: str, shorter: str) -> str:
    """`shorter` when it still names a subject, else the question as it was (also when nothing went)."""
    if shorter.split() == question.split():
        return question
    shorter = _tidy(shorter)
    return shorter if shorter and _asks_something(shorter) else question


def without_filler(question: str) -> str:
    """The question without greetings, a request's frame and thanks: 'hi! can you please tell me who
    chaired the meeting? thanks!' -> 'Who chaired the meeting?'."""
    text = _LEADS.sub("", question.strip())
    text = _REQUEST.sub("", text)
    trailed = _TRAILS.sub("", text)
    if trailed != text and trailed.strip() and not trailed.rstrip().endswith(("?", ".", "!")):
        trailed = trailed.rstrip(" ,;:") + "?"  # 'who designed it, thanks!' asked 'who designed it?'
    text = _PLEASE.sub("", trailed)
    return _kept(question, text)


@lru_cache(maxsize=8192)
def _spellings(name: str, plain: bool) -> frozenset[str]:
    """How a question may write a document's name: as stored, and its stem, either with '_' or '-' as
    spaces. Without `plain`, only the ones no ordinary word is ('manual.md', 'report_2021', not
    'manual', 'minutes'): those name the document wherever they stand, the others only in a frame
    ('according to the minutes')."""
    path = PurePath(name)
    stem = path.stem if path.suffix else name
    found = {name, stem}
    found |= {s.replace("_", " ").replace("-", " ") for s in found}
    if not plain:
        found = {s for s in found if re.search(r"[\d._-]", s)}
    return frozenset(" ".join(s.lower().split()) for s in found if len(s) >= 3)


def _name_pattern(names: Iterable[str], plain: bool) -> str | None:
    spellings = sorted({s for name in names for s in _spellings(name, plain)}, key=len, reverse=True)
    if not spellings:
        return None
    either = "|".join(r"[\s_-]+".join(map(re.escape, s.split())) for s in spellings)
    return rf"(?<![\w.])(?:{either})(?![\w])"


def _mentioned(question: str, documents: Iterable[str]) -> list[str]:
    """The documents whose name or stem the question holds somewhere, cheaply: a knowledge base of
    thousands of documents builds its patterns from the few a question may name."""
    flat = " ".join(re.sub(r"[_-]", " ", question.lower()).split())
    return [name for name in set(documents) if any(s in flat for s in _spellings(name, plain=True))]


def _named_frames(names: Iterable[str]) -> list[re.Pattern[str]]:
    """The frames a document is asked of in ('according to ...'), for these documents' names."""
    pattern = _name_pattern(names, plain=True)
    if pattern is None:
        return []
    named = rf"(?:{_OF}\s+)?(?:(?:[\w'’-]+\s+){{0,2}}?(?:{pattern})(?:\s+(?:{DOCUMENT_NOUNS})s?\b)?)"
    return _frames(named)


def named_files(question: str, documents: Iterable[str]) -> set[str]:
    """The documents among `documents` the question names: by a file name or stem no word is
    ('manual.md', 'report_2021') anywhere, by any ('the manual') in a frame ('what does the manual say')."""
    found = set()
    for name in _mentioned(question, documents):
        distinct = _name_pattern([name], plain=False)
        if (distinct is not None and re.search(distinct, question, re.I)) or any(
            frame.search(question) for frame in _named_frames([name])
        ):
            found.add(name)
    return found


def without_named_files(question: str, documents: Iterable[str]) -> str:
    """The question without the documents of `documents` it names (`named_files`) and their frames:
    'according to minutes.md, who chaired?' -> 'Who chaired?'; a file name the documents are not called,
    and an ordinary word outside a frame ('who took the minutes?'), stay."""
    documents = _mentioned(question, documents)
    if not documents:
        return question
    text = question
    for frame in _named_frames(documents):
        text = frame.sub(" ", text)
    distinct = _name_pattern(documents, plain=False)
    if distinct is not None:
        text = re.sub(distinct, " ", text, flags=re.I)
    return question if text == question else _kept(question, text)


def question_sentences(question: str) -> str:
    """Of a long question of several sentences ('We bought a rotavator in May. ... How often should the
    tines be cleaned?'), its questions, each once: the paragraph pasted before them is no ask. The text
    as it is when it is shorter than LONG_QUESTION_CHARS (a short one's other sentence may hold what it
    asks about: 'The text says "The expert frowned." Why?'), has one sentence, or no question."""
    sentences = [s.text for s in sentences_of(question)] if len(question) > LONG_QUESTION_CHARS else []
    if len(sentences) < 2:
        return question
    asked = [s for s in sentences if s.rstrip(" \"'”’)").endswith("?")]
    if not asked:
        return question
    unique = list({sentence_key(s): s for s in asked}.values())
    return _kept(question, " ".join(unique))


# a question that leans on the text pasted with it for its subject: "what does this mean?", "is that
# right?", "was that the year?" ("that" only as a pronoun: "the room that holds the maps" names its own)
_POINTS_AT_PASTE = re.compile(
    r"\b(?:it|its|this|these|those|they|them|above|here"
    r"|that(?=\s*(?:[?.!,;:]|$|\s+(?:is|was|are|were|means?|meant|says?|said|refers?|does|did|do|true|right|correct|wrong|the|a|an)\b)))\b",
    re.I,
)


def searched_part(question: str) -> str:
    """What a long message is searched with: its questions (`question_sentences`) when they name their
    subject, so a pasted paragraph about something near it cannot crowd the answer's passages out
    ("<3,000 characters about the team's review> When was the reading room added?" found the review);
    the whole text when its questions lean on the paste ("<a quote> What does this mean?": the paste is
    the subject), when it asks no question, and for a short question."""
    asked = question_sentences(question)
    if asked == question or _POINTS_AT_PASTE.search(asked):
        return question
    return asked


def without_document_words(question: str) -> str:
    """The question without the document it is asked of by a common noun: 'according to the handbook,
    how often is the lens cleaned?' -> 'How often is the lens cleaned?'; 'what does the report say
    about revenue?' -> 'what about revenue?'. 'Who wrote the report?' and 'What happens in the
    story?' keep it: it is what is asked."""
    text = question
    for frame in _COMMON_FRAMES:
        text = frame.sub(" ", text)
    return _kept(question, text)


def _without_asides(question: str, documents: Iterable[str], document_words: bool) -> str:
    """The one order both readings of a question strip in: a long one's questions, the filler, the files
    of `documents` it names, with `document_words` the document it is asked of by a common noun, then
    the filler again: a request's frame after a document's ('according to minutes.md, can you tell me
    who ...?') only opens the question once the document is off."""
    text = without_named_files(without_filler(question_sentences(question)), documents)
    if document_words:
        text = without_document_words(text)
    return without_filler(text)


def what_is_asked(question: str, documents: Iterable[str] = ()) -> str:
    """What whether the quotes answer a question is judged by: its questions, without filler, the files
    of `documents` it names and the document it is asked of (module docstring)."""
    return _without_asides(question, documents, document_words=True)


def without_asides(question: str, documents: Iterable[str] = ()) -> str:
    """What a question is ranked by: `what_is_asked` but for a common noun for the document, which stays
    ('in the story' helps find the story's sentences)."""
    return _without_asides(question, documents, document_words=False)


def context_documents(names: Iterable[str | None], drawn: Iterable[tuple[tuple[str, int], ...]] = ()) -> set[str]:
    """The documents a context's nodes come from, a summary's by the documents it draws on."""
    return {n for n in names if n} | {name for d in drawn for name, _ in d}


def in_brief(question: str, limit: int = LONG_QUESTION_CHARS) -> str:
    """A question as a later follow-up reads it for context: as it is up to `limit` characters; a longer
    one (a pasted paragraph, a sentence pasted over and over) as what it asks, within `limit`: its
    questions without filler (`question_sentences`, `without_filler`), each clause once, failing that its
    last sentence, cut at a word. A follow-up after a 3,600-character question otherwise searched with
    all of it as its context."""
    if len(question) <= limit:
        return question
    asked = _clauses_once(without_filler(question_sentences(question)))
    if len(asked) > limit and (sentences := sentences_of(asked)):
        asked = sentences[-1].text  # no question among them: the last sentence is what is asked
    return _cut_keeping_mark(asked, limit) if len(asked) > limit else asked


_END_MARK = re.compile("[?!.\u2026\uff1f\uff01\u3002\u061f]+[\"'\u201d\u2019)\\]]*$")
CUT = "\u2026"  # where a question too long to ask whole was cut


def _at_word(text: str, limit: int) -> str:
    """`text`'s opening of at most `limit` characters, ended at a clause's end (a comma, a semicolon) in its
    last fifth, else at a space in its second half (a word is not cut in two), without the comma or
    colon before the cut."""
    if len(text) <= limit:
        return text
    clause = max(text.rfind(", ", limit * 4 // 5, limit + 1), text.rfind("; ", limit * 4 // 5, limit + 1))
    space = clause if clause > 0 else text.rfind(" ", limit // 2, limit + 1)
    return text[: space if space > 0 else limit].rstrip(" ,;:-\u2013\u2014")


def fit_question(question: str, limit: int) -> str:
    """A question within `limit` characters, still asking what it asked: whole when it fits; else, when
    what it asks (its questions, `question_sentences`, failing that its last sentence) fits in half the
    limit, the opening cut at a word, "…", and that; else what it asks cut at a word, "…" and its end
    mark ("?"). Cutting the first `limit` characters lost the question at the end of a pasted paragraph,
    and the "?" that makes a brief form (`in_brief`) of it."""
    text = question.strip()
    if len(text) <= limit:
        return text
    asks = question_sentences(text)
    if asks == text and (sentences := sentences_of(text)):
        asks = sentences[-1].text.strip()
    if len(asks) <= limit // 2:
        opening = _at_word(text, limit - len(CUT))
        if asks in opening:  # asked first, before what it pastes
            return opening + CUT
        return f"{_at_word(text, limit - len(asks) - 3)} {CUT} {asks}"
    return _cut_keeping_mark(asks, limit)


def _cut_keeping_mark(text: str, limit: int) -> str:
    """`text` cut at a word (`_at_word`) to end "…" and its end mark ("…?"): still read as a question."""
    found = _END_MARK.search(text)
    mark = (found.group(0).lstrip(".\u2026\u3002") or found.group(0)[-1]) if found else ""
    return _at_word(text, limit - len(mark) - len(CUT)) + CUT + mark


def _clauses_once(text: str) -> str:
    """`text` with each comma- or semicolon-separated clause kept once ('how do I start it, how do I
    start it, ...' -> 'how do I start it')."""
    clauses = re.split(r"(?<=[,;])\s+", text)
    kept: dict[str, str] = {}
    for clause in clauses:  # each in its first place; as said with a question mark, if it was so once
        key = sentence_key(clause)
        if key not in kept or clause.rstrip().endswith("?"):
            kept[key] = clause
    if len(kept) == len(clauses):
        return text
    return _tidy(" ".join(kept.values()).rstrip(",;… "))  # a question cut to its limit ends "…"
