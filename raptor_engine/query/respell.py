"""A question's mistyped words, read as its knowledge base's documents write them ("who kept the
lighthose?" -> "who kept the lighthouse?"), before anything is searched: the vector search, the full-text
index and the quotes then all meet the documents' words.

Only a word that is no word at all is respelled: one of MIN_RESPELLED_CHARS letters or more that the
documents never use in any form and the embedding model's vocabulary does not hold whole, nor its stem
(the caller asks it: "faulted" is "fault" and "ed"), one
typing slip from a word of the documents (a letter dropped, doubled or changed, or two swapped:
`one_slip_apart`), never at its first letter (a reader rarely mistypes the first, and "boil" is not
"oil"). A real word the documents do not use ("large", "quantity") is left as asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..ingest.sentences import one_slip_apart, stem
from ..storage.text_index import WordForms

MIN_RESPELLED_CHARS = 5  # a shorter word is one slip from too many others ("cup", "cut", "cap")
WORD = re.compile(r"[^\W\d_]+")


def respellable_words(question: str) -> list[str]:
    """The question's words that could be respelled: letters only, long enough, each once."""
    return list(dict.fromkeys(w for w in WORD.findall(question) if len(w) >= MIN_RESPELLED_CHARS))


def respellings(words: list[str], forms: WordForms) -> dict[str, str]:
    """For each word the documents never use in any form (nor with another ending: 'experiment' where
    they write 'experiments'), their word one slip from it, as they write it: of several, the one
    written most often (then the first alphabetically)."""
    found = {}
    for word in words:
        typed = word.lower()
        if typed in forms.forms or stem(typed) in forms.stems:
            continue
        near = [w for w in forms.near(typed) if one_slip_apart(typed, w)]
        if near:
            meant = min(near, key=lambda w: (-sum(forms.forms[w].values()), w))
            found[word] = written_as(word, forms.forms[meant])
    return found


def written_as(typed: str, ways: dict[str, int]) -> str:
    """How to write the documents' word in place of `typed`: in capitals or capitalised as the question
    wrote it, else in lowercase unless the documents always capitalise it (a name)."""
    commonest = max(ways, key=lambda way: (ways[way], way))
    if typed.isupper():  # "LIGHTHOSE" in a question written in capitals
        return commonest.upper()
    if typed[:1].isupper():
        return commonest[:1].upper() + commonest[1:]
    return commonest.lower() if any(way.islower() for way in ways) else commonest


def respelled(question: str, known: Callable[[list[str]], list[bool]], forms: Callable[[], WordForms]) -> str:
    """`question` with its mistyped words respelled. `known` says which words the embedding model holds
    whole (real words, never respelled); `forms` reads the documents' words, only when a word is left."""
    words = respellable_words(question)
    # a real word, or one ending a real word with a suffix ("faulted": "fault"), is never a slip
    real = [a or b for a, b in zip(known(words), known([stem(w.lower()) for w in words]), strict=True)]
    unknown = [w for w, is_real in zip(words, real, strict=True) if not is_real]
    fixes = respellings(unknown, forms()) if unknown else {}
    if not fixes:
        return question
    return WORD.sub(lambda match: fixes.get(match.group(0), match.group(0)), question)
