"""A question's mistyped words, read as its knowledge base's documents write them ("who kept the
lighthose?" -> "who kept the lighthouse?"), before anything is searched: the vector search, the full-text
index and the quotes then all meet the documents' words.

Only a word that is no word at all is respelled: one of MIN_RESPELLED_CHARS letters or more that the
documents never use in any form and the embedding model's vocabulary does not hold whole, nor its stem
(the caller asks it: "faulted" is "fault" and "ed"), one
typing slip from a word of the documents (a letter dropped, doubled or changed, or two swapped:
`one_slip_apart`), never at its first letter (a reader rarely mistypes the first, and "boil" is not
"oil"). A real word the documents do not use ("large", "quantity") is left as asked. A word of any
length that is no word and that the documents never use, one slip from a word questions are built of
("teh", "aftr", "whne", "becuase": `QUESTION_WORDS`), is that word, so "whne did he leave?" reads as
a when-question. A follow-up is respelled before it is read against the conversation, against the
documents' words and then the words of the conversation's questions (`respelled(conversation=...)`:
"how many memebers attended the meetting?" after "Who chaired the Q2 meeting?", where no document says
"meeting"), so a slip does not make it read as a new topic; a pronoun ("hsi", "seh") and the conjunctions ("adn") count as question words,
and two first letters swapped ("hte", "hwen") are a slip of a question word too.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..ingest.sentences import one_slip_apart, stem
from ..storage.text_index import WordForms, word_forms_of

MIN_RESPELLED_CHARS = 5  # a shorter word is one slip from too many others ("cup", "cut", "cap")
MIN_SWAPPED_CHARS = 3  # a shorter one is respelled by two swapped letters only ('lsit' -> 'list', `_swapped_near`)
WORD = re.compile(r"[^\W\d_]+")
# The words a question is built of, whatever the documents say: a word no vocabulary holds ("teh",
# "aftr", "whne") one slip from one of these is that word, at any length, unless the documents use it.
QUESTION_WORDS = frozenset(
    """the what when where which who whom whose why how after before because about with without they them
    their there then than this that these those does did was were have has had from into during until
    since while also other another again against around through could would should said and but
    he she him his her hers it its list name show tell give many much""".split()
)
# 'hwo' is 'how' or 'who' (`question_word` leaves it): the word after it tells which ('hwo many', 'hwo chaired')
_HOW_AFTER = frozenset("many much long far often old soon big large tall high wide deep come".split())
_HOW_OR_WHO = re.compile(r"\b([Hh])wo\b(?=\s+([^\W\d_]+))")


def respellable_words(question: str) -> list[str]:
    """The question's words that could be respelled: letters only, long enough, one slip from a
    question word ('teh'), or of MIN_SWAPPED_CHARS letters or more and no name (`_may_be_a_name`: 'lsit',
    not 'Ulf' mid-question nor 'NHS'), each once."""
    return list(
        dict.fromkeys(
            match.group(0)
            for match in WORD.finditer(question)
            if len(match.group(0)) >= MIN_RESPELLED_CHARS
            or question_word(match.group(0))
            or (len(match.group(0)) >= MIN_SWAPPED_CHARS and not _may_be_a_name(question, match))
        )
    )


def _may_be_a_name(question: str, match: re.Match[str]) -> bool:
    """A short word in capitals ('NHS'), or capitalised anywhere but where the question or a sentence of
    it opens ('what did Ulf say?'): never respelled, since a name or an acronym may be spelled anyhow."""
    word = match.group(0)
    if word.isupper() and len(word) > 1:
        return True
    opens = not question[: match.start()].strip() or question[: match.start()].rstrip()[-1:] in ".!?"
    return word[:1].isupper() and not opens


def how_or_who(question: str) -> str:
    """'hwo many members attended?' -> 'how many …', 'hwo chaired it?' -> 'who chaired it?': the word after
    'hwo' says which it is (a measure word: how; a verb in the past: who); left as typed otherwise
    ('hwo was he?')."""

    def meant(match: re.Match[str]) -> str:
        after = match.group(2).lower()
        if after in _HOW_AFTER:
            word = "how"
        elif after.endswith("ed") and after not in QUESTION_WORDS:
            word = "who"
        else:
            return match.group(0)
        return word.capitalize() if match.group(1).isupper() else word

    return _HOW_OR_WHO.sub(meant, question)


def question_word(typed: str) -> str | None:
    """The one question word (`QUESTION_WORDS`) `typed` is a slip of, with its first letter or with its
    first two letters swapped: 'teh' -> 'the', 'aftr' -> 'after', 'becuase' -> 'because', 'hte' -> 'the',
    'hsi' -> 'his'. Of several, the one a dropped letter or two swapped letters give ('wat': 'what', not
    'was'; 'hte': 'the', not 'he'); None for none ('hwo': 'how' or 'who'), or several alike, or a question word itself."""
    lowered = typed.lower()
    if lowered in QUESTION_WORDS:
        return None
    # 'hte' -> 'the': the one slip that moves the first letter, in a word of three letters or more ('ti')
    near = _question_word_slips(lowered)
    likely = [w for w in near if len(w) > len(lowered) or sorted(w) == sorted(lowered)] or near
    return likely[0] if len(likely) == 1 else None


def respellings(words: list[str], forms: WordForms, spoken: WordForms | None = None) -> dict[str, str]:
    """For each word the documents never use in any form (nor with another ending: 'experiment' where
    they write 'experiments'), nor the conversation (`spoken`), their word one slip from it, as they
    write it: of several, the one written most often (then the first alphabetically); else the
    conversation's word one slip from it; else the question word it is a slip of ('whne': 'when',
    `question_word`)."""
    found = {}
    for word in words:
        typed = word.lower()
        if any(typed in held.forms or stem(typed) in held.stems for held in (forms, spoken) if held is not None):
            continue
        meant = _nearest(typed, forms) or (_nearest(typed, spoken) if spoken is not None else None)
        if meant is not None:
            found[word] = written_as(word, meant)
        elif (asked := question_word(typed)) is not None:
            found[word] = written_as(word, {asked: 1})
    return found


def _nearest(typed: str, forms: WordForms) -> dict[str, int] | None:
    """How `forms` write their word one slip from `typed` (of several, the one written most often, then
    the first alphabetically); None for none, or a word too short to respell."""
    if len(typed) < MIN_RESPELLED_CHARS:
        return _swapped_near(typed, forms)
    near = [w for w in forms.near(typed) if one_slip_apart(typed, w)]
    return forms.forms[min(near, key=lambda w: (-sum(forms.forms[w].values()), w))] if near else None


def _swapped_near(typed: str, forms: WordForms) -> dict[str, int] | None:
    """How `forms` write the one word a short `typed` is with two neighbouring letters swapped back
    ('lsit' -> 'list', 'lmap' -> 'lamp', 'rnet' -> 'rent'), when no question word is one slip from it
    ('hwo': how or who, `question_word`) and only one such word exists; None otherwise. A short word is one
    letter dropped, added or changed from too many others to guess ('cpa': cap, cup, cop?); a swap rarely
    leaves two readings."""
    if len(typed) < MIN_SWAPPED_CHARS or _question_word_slips(typed):
        return None
    near = [w for w in forms.near(typed) if len(w) == len(typed) and _swapped(typed, w)]
    return forms.forms[near[0]] if len(near) == 1 else None


def _swapped(typed: str, word: str) -> bool:
    """Whether `word` is `typed` with two neighbouring letters swapped back (and nothing else changed)."""
    differ = [at for at, (a, b) in enumerate(zip(typed, word, strict=True)) if a != b]
    return len(differ) == 2 and differ[1] == differ[0] + 1 and typed[differ[0]] == word[differ[1]] and typed[differ[1]] == word[differ[0]]


def _question_word_slips(typed: str) -> list[str]:
    """The question words one slip from `typed`, also by its first two letters swapped ('hwo': how, who)."""
    swapped = typed[1::-1] + typed[2:] if len(typed) > 2 else typed
    return [w for w in QUESTION_WORDS if w == swapped or w[:1] == typed[:1] and one_slip_apart(typed, w)]


def written_as(typed: str, ways: dict[str, int]) -> str:
    """How to write the documents' word in place of `typed`: in capitals or capitalised as the question
    wrote it, else in lowercase unless the documents always capitalise it (a name)."""
    commonest = max(ways, key=lambda way: (ways[way], way))
    if typed.isupper():  # "LIGHTHOSE" in a question written in capitals
        return commonest.upper()
    if typed[:1].isupper():
        return commonest[:1].upper() + commonest[1:]
    return commonest.lower() if any(way.islower() for way in ways) else commonest


def respelled(
    question: str,
    known: Callable[[list[str]], list[bool]],
    forms: Callable[[], WordForms],
    *,
    conversation: str = "",
) -> str:
    """`question` with its mistyped words respelled. `known` says which words the embedding model holds
    whole (real words, never respelled); `forms` reads the documents' words, only when a word is left; a
    follow-up's `conversation` (its questions so far) holds words a slip may be of that no document uses."""
    question = how_or_who(question)
    words = respellable_words(question)
    if not words:
        return question
    # a real word, or one ending a real word with a suffix ("faulted": "fault"), is never a slip
    real = [a or b for a, b in zip(known(words), known([stem(w.lower()) for w in words]), strict=True)]
    unknown = [w for w, is_real in zip(words, real, strict=True) if not is_real]
    spoken = word_forms_of(conversation) if conversation and unknown else None
    fixes = respellings(unknown, forms(), spoken) if unknown else {}
    if not fixes:
        return question
    return WORD.sub(lambda match: fixes.get(match.group(0), match.group(0)), question)
