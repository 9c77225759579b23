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
WORD = re.compile(r"[^\W\d_]+")
# The words a question is built of, whatever the documents say: a word no vocabulary holds ("teh",
# "aftr", "whne") one slip from one of these is that word, at any length, unless the documents use it.
QUESTION_WORDS = frozenset(
    """the what when where which who whom whose why how after before because about with without they them
    their there then than this that these those does did was were have has had from into during until
    since while also other another again against around through could would should said and but
    he she him his her hers it its""".split()
)


def respellable_words(question: str) -> list[str]:
    """The question's words that could be respelled: letters only, long enough or one slip from a
    question word ('teh'), each once."""
    return list(
        dict.fromkeys(w for w in WORD.findall(question) if len(w) >= MIN_RESPELLED_CHARS or question_word(w))
    )


def question_word(typed: str) -> str | None:
    """The one question word (`QUESTION_WORDS`) `typed` is a slip of, with its first letter or with its
    first two letters swapped: 'teh' -> 'the', 'aftr' -> 'after', 'becuase' -> 'because', 'hte' -> 'the',
    'hsi' -> 'his'. Of several, the one a dropped letter or two swapped letters give ('wat': 'what', not
    'was'; 'hte': 'the', not 'he'); None for none ('hwo': 'how' or 'who'), or several alike, or a question word itself."""
    lowered = typed.lower()
    if lowered in QUESTION_WORDS:
        return None
    # 'hte' -> 'the': the one slip that moves the first letter, in a word of three letters or more ('ti')
    swapped = lowered[1::-1] + lowered[2:] if len(lowered) > 2 else lowered
    near = [w for w in QUESTION_WORDS if w == swapped or w[:1] == lowered[:1] and one_slip_apart(lowered, w)]
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
        return None
    near = [w for w in forms.near(typed) if one_slip_apart(typed, w)]
    return forms.forms[min(near, key=lambda w: (-sum(forms.forms[w].values()), w))] if near else None


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
