"""Messages that are not questions: "thanks!", "ok", "hello", "?", "what can you do?".

In a thread every message reaches the engine as a follow-up. Searched and answered, "thanks!" got
three unrelated quotes, and became the context the next real follow-up leaned on ("Searched as: Ok
(context: Thanks!)"). `small_talk_act` recognises a message made only of greetings, thanks,
acknowledgements, farewells, requests for help or a bare "what?"; `REPLIES` holds the one-sentence
reply each calls for, which the engine gives without searching, and `without_small_talk` keeps such
exchanges out of the history a follow-up is rewritten from. `strip_small_talk` takes such words off
the front of a real question ("ok thanks, and who replaced him?" -> "and who replaced him?").

Only whole messages count: a message with one word of its own is a question. Deterministic, no model.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from enum import Enum

from ..ingest.sentences import THEMATIC, content_terms
from ..types import Citation, Turn


class Act(Enum):
    """What a message that is not a question does, in the order a reply is chosen (the last wins)."""

    UNCLEAR = "unclear"
    ACKNOWLEDGE = "acknowledge"
    GREET = "greet"
    HELP = "help"
    THANK = "thank"
    FAREWELL = "farewell"
    DOCUMENTS = "documents"  # "what documents do you have?": answered with the list, not by searching
    SOURCES = "sources"  # "where does it say that?": where the last answer's quotes come from
    VAGUE = "vague"  # "what is the?", "who is he?" with no conversation before it: nothing to look for
    TRANSLATE = "translate"  # "in French please", "translate that into German": asks no question of its own
    REWORD = "reword"  # "say that shorter", "simpler please", "in bullet points": reshape the last answer


REPLIES = {  # DOCUMENTS has none: the engine lists the documents
    Act.SOURCES: "Ask me a question first: every answer names the document, page and section of each "
    "passage it quotes.",  # 'where does it say that?' before any answer
    Act.UNCLEAR: "I didn't catch a question there: ask me about something in the documents, "
    "for example a name, a date or an event, or “what is this about?”.",
    Act.VAGUE: "Your question names nothing to look for: ask about something specific in the documents, "
    "for example a name, a date or an event.",
    Act.ACKNOWLEDGE: "Ask me another question about the documents whenever you like.",
    Act.GREET: "Hello! Ask me anything about the documents here, for example “what is this about?” "
    "or a question about a name, a date or an event.",
    Act.HELP: "I answer questions about the documents added here by quoting the passages that answer "
    "them, each cited [n] with its place in the tree; ask “what is this about?” for an overview or "
    "ask about a name, a date or an event, and follow-up questions keep the conversation.",
    Act.THANK: "You're welcome! Ask another question about the documents whenever you like.",
    Act.FAREWELL: "Goodbye! The documents will be here when you have another question.",
    Act.TRANSLATE: "I can't translate an earlier answer; ask your question in the language you want, "
    "and I will answer it from the documents.",
    Act.REWORD: "I can't reshape an earlier answer (shorter, simpler, in other words or as a list); ask "
    "about the part you need and I will answer just that from the documents.",
}

# Agreeing with or confirming what was said: "yes that's right", "that's what I thought" (botqa24). Asked
# with a question mark ("that's right?", "what sounds good?") they ask, and are searched.
_AGREEING = (
    "that's right",
    "thats right",
    "that is right",
    "that's correct",
    "thats correct",
    "that is correct",
    "correct",
    "you're right",
    "youre right",
    "that's true",
    "thats true",
    "that's what i thought",
    "thats what i thought",
    "that's what i figured",
    "thats what i figured",
    "i thought so",
    "thought so",
    "as i thought",
    "sounds good",
    "sounds great",
    "sounds right",
    "fair enough",
    "all good",
    "that works",
    "will do",
    "i get it",
    "that answers it",
    "that answers my question",
    "that's what i needed",
    "thats what i needed",
    "exactly what i needed",
    "that's exactly what i needed",
    "thats exactly what i needed",
    "just what i needed",
    "spot on",
    "that clears it up",
    "that's clear",
    "thats clear",
    "good stuff",
    "ok then",
)

_PHRASES: dict[Act, tuple[str, ...]] = {
    Act.GREET: (
        "hi",
        "hello",
        "hey",
        "heya",
        "hiya",
        "howdy",
        "yo",
        "greetings",
        "good morning",
        "good afternoon",
        "good evening",
        "morning",
        "evening",
        "hi there",
        "hello there",
        "hey there",
        "sup",
        "whats up",
        "what's up",
        "how are you",
        "how are you doing",
        "how's it going",
        "hows it going",
    ),
    Act.THANK: (
        "thanks",
        "thank you",
        "thank u",
        "thankyou",
        "thx",
        "thnx",
        "ty",
        "tysm",
        "tyvm",
        "cheers",
        "many thanks",
        "thanks a lot",
        "thanks so much",
        "thank you so much",
        "thank you very much",
        "thanks very much",
        "much appreciated",
        "appreciated",
        "appreciate it",
        "i appreciate it",
        "thanks again",
        "ta",
        # in the languages a member may write in (language.py): "merci" was searched (botqa25)
        "merci",
        "merci beaucoup",
        "merci bien",
        "danke",
        "danke schön",
        "danke schon",
        "vielen dank",
        "gracias",
        "muchas gracias",
        "grazie",
        "grazie mille",
        "obrigado",
        "obrigada",
        "muito obrigado",
        "muito obrigada",
        "dank je",
        "dank je wel",
        "dank u",
        "dank u wel",
        "bedankt",
        "dziękuję",
        "dziekuje",
        "tack",
        "takk",
        "kiitos",
    ),
    Act.ACKNOWLEDGE: (
        "ok",
        "okay",
        "k",
        "kk",
        "okey",
        "okie",
        "oki",
        "cool",
        "great",
        "nice",
        "good",
        "perfect",
        "awesome",
        "excellent",
        "brilliant",
        "amazing",
        "wonderful",
        "fantastic",
        "splendid",
        "lovely",
        "got it",
        "gotcha",
        "i see",
        "makes sense",
        "that makes sense",
        "understood",
        "noted",
        "alright",
        "all right",
        "fine",
        "sure",
        "yes",
        "yeah",
        "yep",
        "yup",
        "no",
        "nope",
        "nah",
        "lol",
        "lmao",
        "haha",
        "hahaha",
        "heh",
        "wow",
        "interesting",
        "neat",
        "good to know",
        "that helps",
        "that helped",
        "helpful",
        "very helpful",
        "that's helpful",
        "thats helpful",
        "that's great",
        "thats great",
        "that's it",
        "that is all",
        "that's all",
        "thats all",
        "nice one",
        "good job",
        "well done",
        "good bot",
        "right",
        "oh",
        "ah",
        "aha",
        "oh ok",
        "ah ok",
        "i know",
        "exactly",
        "indeed",
        "true",
        "agreed",
        "same",
        "never mind",
        "nevermind",
        "nvm",
        "no worries",
        "np",
        *_AGREEING,
    ),
    Act.FAREWELL: (
        "bye",
        "goodbye",
        "good bye",
        "bye bye",
        "see you",
        "see ya",
        "cya",
        "later",
        "see you later",
        "good night",
        "goodnight",
        "take care",
        "have a good day",
        "have a nice day",
    ),
    Act.HELP: (
        "help",
        "help me",
        "what can you do",
        "what do you do",
        "how do i use you",
        "how do i use this",
        "how does this work",
        "how do you work",
        "what are you",
        "who are you",
        "commands",
        "what can i ask",
        "what can i ask you",
        "what should i ask",
        "usage",
        "instructions",
    ),
    Act.UNCLEAR: (
        "what",
        "huh",
        "eh",
        "hmm",
        "hm",
        "um",
        "umm",
        "uh",
        "sorry",
        "pardon",
        "come again",
        "what do you mean",
        "i don't understand",
        "i dont understand",
        "test",
        "testing",
    ),
}
# Words that may ride along without changing what the message does ("thanks bot", "ok so").
_FILLER = frozenset(
    "bot raptor so well very much really just then again all a lot guys man mate please now".split()
)
# After thanks, a greeting or a farewell, the name of whom it is said to ("thanks Bob", "cheers Alice
# Smith", "bye @amy"): written with a capital or an @, at most two words. After an acknowledgement a
# capitalised word is a name to search ("Great Storm").
_ADDRESSED_BY_NAME = frozenset({Act.THANK, Act.GREET, Act.FAREWELL})
_NAME_WORD = re.compile(r"(@?)([^\W\d_]+(?:'[^\W\d_]+)?)")


def _names_written(text: str) -> frozenset[str]:
    """The words of `text` written as names: with a capital first letter or after an @ (lower-cased)."""
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'")
    return frozenset(word.lower() for at, word in _NAME_WORD.findall(text) if at or word[0].isupper())


_BY_PHRASE: dict[tuple[str, ...], Act] = {
    tuple(phrase.split()): act for act, phrases in _PHRASES.items() for phrase in phrases
}
_LONGEST = max(len(words) for words in _BY_PHRASE)
# Letters of any script: a question in Chinese, Arabic or Russian is made of words, not of symbols.
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
MAX_SMALL_TALK_CHARS = 80  # longer than this, a message is a question whatever it starts with


def _normalised_words(text: str) -> list[str]:
    """Lower-case words, with curly apostrophes made straight and every symbol and emoji dropped."""
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'").lower()
    return _WORD.findall(text)


_AGREEMENTS = frozenset(tuple(phrase.split()) for phrase in _AGREEING)
# Acknowledgements that, with a question mark, ask the bot to confirm its last answer ("right?", "true?")
_CONFIRMING = frozenset(("right", "correct", "true", "exactly", "indeed"))


def _agrees(tokens: list[str]) -> bool:
    """Whether the words hold a phrase of agreeing ('that's right', 'sounds good')."""
    return any(
        tuple(tokens[i : i + size]) in _AGREEMENTS for i in range(len(tokens)) for size in range(1, _LONGEST + 1)
    )


def _acts(tokens: list[str], names: frozenset[str] = frozenset()) -> list[Act] | None:
    """The acts a message is made of, or None if any word is not part of a small-talk phrase; `names`:
    the words written as names, which may follow thanks, a greeting or a farewell ("thanks Bob")."""
    acts: list[Act] = []
    i = 0
    named = 0  # name words since the last phrase
    while i < len(tokens):
        for size in range(min(_LONGEST, len(tokens) - i), 0, -1):
            act = _BY_PHRASE.get(tuple(tokens[i : i + size]))
            if act is not None:
                acts.append(act)
                i += size
                named = 0
                break
        else:
            if acts and acts[-1] in _ADDRESSED_BY_NAME and tokens[i] in names and named < 2:
                named += 1
            elif tokens[i] not in _FILLER:
                return None
            i += 1
    return acts


# "What documents do you have?", "which files are in this channel?", "how many files are there?",
# "list the documents": every word one of these, a plural word for the documents among them.
_COLLECTION = frozenset(
    "documents docs files texts papers uploads sources pdfs materials articles reports".split()
)
_ABOUT_THE_COLLECTION = _COLLECTION | frozenset(
    """what which whats list show name names how many number of do does did you have has got are is there
    here in on this these the channel server knowledge base kb all been were was added uploaded stored
    available can could i ask about me tell your my we our currently so far loaded read know a any see
    please give""".split()
)
_ASKS_WHICH = frozenset("what whats which list show name names many number".split())


def asks_for_the_documents(tokens: list[str]) -> bool:
    """A question about which documents there are, not about what is in them ('what are these documents
    about?' and 'what is this document about?' are questions about their content)."""
    return (
        bool(tokens)
        and all(t in _ABOUT_THE_COLLECTION for t in tokens)
        and any(t in _COLLECTION for t in tokens)
        and any(t in _ASKS_WHICH for t in tokens)
        and ("about" not in tokens or "ask" in tokens)
        and not _inside_the_documents(tokens)
    )


def _inside_the_documents(tokens: list[str]) -> bool:
    """'what is in the files?' asks what they say."""
    return any(
        t == "in" and any(after in _COLLECTION for after in tokens[i + 1 : i + 3])
        for i, t in enumerate(tokens)
    )


# "Where does it say that?", "which page is that on?", "source?", "where did you get that from?": a
# question about the last answer's sources, not about the documents.
_SOURCE_NOUNS = frozenset("source sources page pages citation citations cite reference references quote".split())
# "which document is that from?" asks for a source; "what is this document?" asks what the text is.
_PLACE_NOUNS = frozenset("document file section".split())
_SOURCE_VERBS = frozenset("say says said from get got find found come comes read".split())
_POINTERS = frozenset("that this it those these answer so".split())  # 'where does it say so?'
_ANSWER_POINTERS = frozenset("that it those answer".split())
_ABOUT_THE_ANSWER = (
    _SOURCE_NOUNS
    | _PLACE_NOUNS
    | _SOURCE_VERBS
    | _POINTERS
    | frozenset(
        """what whats which where is was are the your you did does do on in of can could me show give please
        exactly a its it's what's where's that's i is there for""".split()
    )
)


def asks_for_the_sources(tokens: list[str]) -> bool:
    """'Where does it say that?', 'which page?', 'source?' (not 'where?', which asks where something happened)."""
    return (
        bool(tokens)
        and all(t in _ABOUT_THE_ANSWER for t in tokens)
        and (
            any(t in _SOURCE_NOUNS for t in tokens)
            or (any(t in _PLACE_NOUNS for t in tokens) and any(t in _ANSWER_POINTERS for t in tokens))
            or (any(t in _SOURCE_VERBS for t in tokens) and any(t in _POINTERS for t in tokens))
        )
    )


# '[2]?', 'and [3]', 'source 2?', 'what is citation #1?', 'the second source', 'show me the last quote': one
# of the last answer's citations asked for by its number or its place
_MARKER_NAMED = re.compile(r"\[\s*(\d{1,3})\s*\]|#\s*(\d{1,3})\b")
_SOURCE_WORD = r"(?:source|citation|cite|reference|ref|quote|passage|footnote)s?"
_NUMBERED_SOURCE = re.compile(rf"\b{_SOURCE_WORD}\s+(?:number\s+|no\.?\s*)?(\d{{1,3}})\b", re.IGNORECASE)
_SOURCE_ORDINALS = {
    "first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "fifth": 5, "5th": 5,
    "last": -1, "final": -1,
}
_ORDINAL_SOURCE = re.compile(rf"\b({'|'.join(_SOURCE_ORDINALS)})\s+{_SOURCE_WORD}\b", re.IGNORECASE)
LAST_CITATION = -1
# the words a message naming a citation may have besides it ('what does [2] say?', 'and source 3 please')
_AROUND_A_MARKER = _ABOUT_THE_ANSWER | frozenset(
    "and about show me open tell more see one please pls number no again then ok okay so full whole".split()
)


def cited_marker(message: str) -> int | None:
    """The citation a message asks for by its number ('[2]?', 'source 2', 'citation #2') or its place ('the
    second source', 'the last quote'; `LAST_CITATION` for the last), when every other word is one of
    asking for it; None otherwise ('what did [2] say about the rent?' asks something of its own)."""
    if len(message) > MAX_SMALL_TALK_CHARS:
        return None
    for pattern in (_MARKER_NAMED, _NUMBERED_SOURCE, _ORDINAL_SOURCE):
        found = pattern.search(message)
        if found is None:
            continue
        named = next(group for group in found.groups() if group is not None)
        rest = message[: found.start()] + " " + message[found.end() :]
        if re.search(r"\d", rest) or not all(t in _AROUND_A_MARKER for t in _normalised_words(rest)):
            return None
        marker = _SOURCE_ORDINALS.get(named.lower()) if not named.isdigit() else int(named)
        return marker if marker else None
    return None


def small_talk_act(message: str) -> Act | None:
    """What a message does when it is not a question about the documents' content (None for such a
    question, however short: 'why?')."""
    message = message.strip()
    if len(message) > MAX_SMALL_TALK_CHARS:
        return None
    if asks_for_the_documents(_normalised_words(message.replace("'s", ""))):
        return Act.DOCUMENTS
    # "got it" is an acknowledgement, though "where did you get it?" asks for the sources
    said = _normalised_words(message)
    if (asks_for_the_sources(said) and tuple(said) not in _BY_PHRASE) or cited_marker(message) is not None:
        return Act.SOURCES
    tokens = _normalised_words(message)
    if not tokens and any(ch.isdigit() for ch in message):
        return None  # "1887", "12.5%": a number alone looks for where the documents give it
    if not tokens:
        # Only punctuation, emoji or symbols: "?" is a question without words, "👍" an acknowledgement.
        asks = "?" in unicodedata.normalize("NFKC", message)  # the full-width '？' too
        return Act.UNCLEAR if asks or not message else Act.ACKNOWLEDGE
    if asks_for_a_language(tokens):
        return Act.TRANSLATE
    if asks_to_reword(unicodedata.normalize("NFKC", message)):
        return Act.REWORD
    asked = asks_by_mark(message)
    acts = _acts(tokens, frozenset() if asked else _names_written(message))
    if not acts or (asked and (_agrees(tokens) or _CONFIRMING.intersection(tokens))):
        return None  # "that's right?", "right?", "exactly?": asked to confirm the last answer (Onward.CHECK)
    return max(acts, key=lambda act: list(Act).index(act))


# Languages a member may ask an answer in, by their English names and their own.
_LANGUAGES = frozenset(
    """english french spanish german italian portuguese dutch polish russian chinese japanese korean greek
    arabic hebrew hindi thai turkish swedish danish norwegian finnish czech ukrainian welsh irish français
    francais español espanol deutsch italiano português portugues nederlands polski""".split()
)
_TRANSLATION_WORDS = frozenset(
    """in into to please pls plz can could you say write give put it that this answer the again translate
    translated translation en auf in s'il vous plait plaît por favor bitte per favore""".split()
)


def asks_for_a_language(tokens: list[str]) -> bool:
    """'in French please', 'can you say that in German?', 'translate it into Spanish', 'en français': a
    language named, every other word one of asking for it (not 'what did the French king do?')."""
    languages = [t for t in tokens if t in _LANGUAGES]
    if len(languages) != 1 or len(tokens) > 10:
        return False
    asks = {"in", "into", "translate", "en", "auf"} & set(tokens) or not set(tokens) - {*languages, "please"}
    return bool(asks) and all(t in _LANGUAGES or t in _TRANSLATION_WORDS for t in tokens)


# "say that shorter", "can you simplify it?", "in bullet points please", "explain it like I'm 5", "too long",
# "in one sentence", "briefly?", "in a nutshell":
# a word that reshapes an answer (or two that do together), every other word one of asking for it. Not
# "summarise that" or "tl;dr", which the documents can answer (their summaries), nor "is it shorter?".
_RESHAPES = frozenset(
    """shorter shorten shortened briefer concise concisely simpler simplify simplified rephrase rephrased reword
    reworded paraphrase eli5 bullet bullets bulleted plainer briefly nutshell""".split()
)
_RESHAPING_PAIRS = (
    ("too", "long"), ("like", "five"), ("eli", "five"), ("plain", "english"), ("plain", "words"), ("plain", "terms"),
    ("plain", "language"), ("simple", "words"), ("simple", "terms"), ("simple", "english"), ("fewer", "words"),
    ("less", "words"), ("other", "words"), ("own", "words"), ("layman's", "terms"), ("laymans", "terms"),
    ("more", "simply"), ("more", "briefly"),
    # "in one sentence", "in a few words", "one line please", "in two sentences": a length asked of it
    ("one", "sentence"), ("a", "sentence"), ("single", "sentence"), ("two", "sentences"), ("one", "line"),
    ("a", "line"), ("one", "liner"), ("few", "words"), ("few", "sentences"),
)
_ASKING_TO_RESHAPE = _RESHAPES | {word for pair in _RESHAPING_PAIRS for word in pair} | frozenset(
    """can could would you please pls plz say said put write make give explain tell it that this the answer your
    last again in into as a an me bit little lot much way so i i'm im for version one form of it's that's
    do to try using use briefly short points list words""".split()
)


def asks_to_reword(message: str) -> bool:
    """'say that shorter', 'simpler please', 'in bullet points', 'explain it like I'm 5': a request to
    reshape the last answer, asking nothing of the documents (answered again, "can you make it shorter?"
    was searched as "Can you make the new shed shorter?")."""
    tokens = _normalised_words(re.sub(r"(?<![\d.])5(?![\d.])", " five ", message))
    if not tokens or len(tokens) > 12 or not all(t in _ASKING_TO_RESHAPE for t in tokens):
        return False
    said = set(tokens)
    return bool(said & _RESHAPES) or any(first in said and second in said for first, second in _RESHAPING_PAIRS)


def names_nothing(question: str) -> bool:
    """A question with no content word and no number that is not about the whole text: "what is the?",
    "who is he?", "why?". Searched, any three sentences would do as well as any other; after an answer
    it is a follow-up ("why?") and the conversation names what it asks about, so the engine asks this
    only of a question with no conversation before it."""
    return not content_terms(question) and not THEMATIC.search(question)


def documents_reply(names: list[str], shown: int = 20) -> str:
    """The answer to 'what documents do you have?': each document's name, the first `shown` of them."""
    if not names:
        return "There are no documents here yet."
    lines = [f"- {name}" for name in names[:shown]]
    if len(names) > shown:
        lines.append(f"- and {len(names) - shown} more")
    counted = "1 document" if len(names) == 1 else f"{len(names)} documents"
    return f"I can answer from {counted}:\n" + "\n".join(lines)


def strip_small_talk(question: str) -> str:
    """A question without the greetings and thanks in front of it: 'ok thanks, who replaced him?' ->
    'who replaced him?'. The question itself when nothing precedes it, or when nothing would be left."""
    parts = re.split(r"(?<=[,;:.!])\s+|\s+[-\u2013\u2014]\s+", question.strip())
    kept = list(parts)
    while len(kept) > 1 and small_talk_act(kept[0]) not in (None, Act.UNCLEAR):  # "What, exactly, ..." stays
        kept.pop(0)
    return " ".join(kept) if len(kept) < len(parts) else question


def without_small_talk(history: list[Turn]) -> list[Turn]:
    """The conversation without the exchanges that were small talk ('thanks!' and its reply), and each
    question without the small talk in front of it, so a follow-up leans on the last real question."""
    kept: list[Turn] = []
    skipping = False
    for turn in history:
        if turn.role == "user":
            skipping = small_talk_act(turn.content) is not None
            turn = Turn("user", strip_small_talk(turn.content))
        if not skipping:
            kept.append(turn)
    return kept


SOURCES_INTRO = "The last answer quoted:"
# 'Where does it say that?' when the last question, answered again, no longer gives the answer the
# conversation holds (a document added or removed since, or a model that now writes it otherwise).
SOURCES_CHANGED = (
    "That answer can no longer be traced to its passages: the documents have changed since, or the "
    "answer would now be written differently; ask the question again for an answer with its sources."
)


def same_answer(said: str, again: str) -> bool:
    """Whether an answer given again is the one the conversation holds (whitespace aside)."""
    return " ".join(said.split()) == " ".join(again.split())


def sources_reply(text: str, citations: list[Citation], only: int | None = None) -> str:
    """Where each passage of an answer (`text`, with its `citations`) comes from, one line per citation
    with its [n] and, for a quoting answer, the sentences quoted from it; `only` (`cited_marker`): that one
    citation, or a sentence saying which the answer has when it has no such one."""
    if not citations:
        return "The last answer quoted no passage."
    if only is not None:
        chosen = chosen_citations(citations, only)
        if not chosen:
            markers = sorted(c.marker for c in citations)
            has = f"only [{markers[0]}]" if len(markers) == 1 else f"[{markers[0]}] to [{markers[-1]}]"
            return f"The last answer has no [{only}]; it cites {has}."
        citations = chosen
    quoted: dict[int, list[str]] = {}
    for quote, marker in _QUOTED.findall(text):
        quoted.setdefault(int(marker), []).append(f"\u201c{quote}\u201d")
    lines = [
        f"- [{c.marker}] {_place(c)}" + (": " + " ".join(quoted[c.marker]) if c.marker in quoted else "")
        for c in citations
    ]
    return SOURCES_INTRO + "\n" + "\n".join(lines)


# 'who said so?', 'according to whom?', 'who says that?', 'who told you that?', 'whose words are those?': who
# the last answer's passage says said it
_WHO_SAID = re.compile(
    r"^(?:(?:and|so|but|ok|okay|well|sorry|hmm+)\b[\s,.!]*)*(?:"
    r"who\s+(?:said|says|say|told\s+(?:you|us)|claimed|claims|stated|is\s+saying)"
    r"(?:\s+(?:so|that|this))?(?:\s+(?:then|exactly))?"
    r"|according\s+to\s+(?:whom|who)(?:\s+(?:exactly|then))?"
    r"|whose\s+(?:words|claim|view|statement)\s+(?:is|was|are|were)\s+(?:that|this|these|those|it))\s*[?.!]*$",
    re.IGNORECASE,
)
_SAYING = (
    r"said|says|reported|replied|told|wrote|stated|claimed|argued|explained|announced|confirmed|noted|added"
    r"|warned|insisted|answered|complained|estimated|recommended|suggested|believed|thought"
)
# 'The loss adjuster, Martin Cole, said ...', 'Harriet Blake said ...', 'The council replied that ...'
_SAID_BY = re.compile(
    r"(?P<who>(?:\b[Tt]he\s+(?:[a-z][\w'-]*\s+){0,2}[a-z][\w'-]*|\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,3})"
    rf"(?:,\s+[^,]{{1,60}},)?)\s+(?:had\s+|has\s+)?(?:{_SAYING})\b"
)
_ACCORDING_TO = re.compile(r"\b[Aa]ccording\s+to\s+(?P<who>[^,.;:]{1,80})")
_QUOTE_LINE = re.compile(r"^- (?:(?P<speaker>[^\u201c\n]{1,80}?):\s*)?\u201c(?P<quote>.+?)\u201d \[(?P<marker>\d+)\]", re.M)
SAID_BY_NOBODY = "The passage the last answer quoted first names no one who said it; it comes from {place}:"
# 'who said so?' after an answer that found only the closest passages: they said nothing of what was asked
SAID_OF_NOTHING = "The last answer found nothing in the documents that answers it, so there is no one who said so."


def asks_who_said(message: str) -> bool:
    """Whether a message asks who said what the last answer quoted ('who said so?', 'according to whom?')."""
    return len(message) <= MAX_SMALL_TALK_CHARS and _WHO_SAID.match(message.strip()) is not None


def said_by(quote: str) -> str | None:
    """Who a quoted sentence says said it ('The loss adjuster, Martin Cole, said ...' -> 'the loss adjuster,
    Martin Cole'; 'according to the survey, ...' -> 'the survey'); None when it names no one."""
    found = _ACCORDING_TO.search(quote) or _SAID_BY.search(quote)
    if found is None:
        return None
    who = found.group("who").strip(" ,")
    return "the" + who[3:] if who.startswith("The ") else who


def who_said_reply(text: str, citations: list[Citation], passage: Callable[[str], str] = lambda quote: "") -> tuple[str, list[Citation]]:
    """Who said what the last answer (`text`) quoted first, and that quote: its speaker in a transcript, else
    the one its sentence says said it, else where it comes from; with the citation it shows. `passage`: the
    text a quote was taken from, where a quote cut to its reason ('…because the loft was unheated') finds
    the start of its sentence ('The loss adjuster, Martin Cole, said the pipe had frozen ...')."""
    line = _QUOTE_LINE.search(text)
    if line is None or not citations:
        return "The last answer quoted no passage.", []
    marker = int(line.group("marker"))
    cited = [c for c in citations if c.marker == marker] or citations[:1]
    quote = line.group("quote")
    whole = _whole_sentence(quote, passage(quote.strip("\u2026 "))) if quote.startswith("\u2026") else quote
    who = line.group("speaker") or said_by(whole)
    shown = f"- \u201c{whole}\u201d [{marker}]"
    if who:
        who = f"{who}," if "," in who else who  # 'the treasurer, Colin Ashworth, said so'
        return f"From the documents: {who} said so:\n{shown}", cited
    return SAID_BY_NOBODY.format(place=_place(cited[0])) + "\n" + shown, cited


def _whole_sentence(quote: str, passage: str) -> str:
    """The sentence of `passage` a quote cut at its start ('…because ...') ends, from its start; the quote
    itself when the passage does not hold it."""
    cut = quote.strip("\u2026 ")
    at = passage.find(cut)
    if at < 0:
        return quote
    starts = [m.end() for m in re.finditer(r"[.!?]\s+", passage[:at])]
    return passage[(starts[-1] if starts else 0) : at + len(cut)].strip()


def chosen_citations(citations: list[Citation], only: int | None) -> list[Citation]:
    """The citations a sources reply shows: all of them, or the one `only` names (`cited_marker`; [] when
    the answer has no such one)."""
    if only is None:
        return citations
    if only == LAST_CITATION:
        return citations[-1:]
    return [c for c in citations if c.marker == only]


_QUOTED = re.compile(r"\u201c(.+?)\u201d \[(\d+)\]")


def _place(citation: Citation) -> str:
    """'lighthouse.md, p. 3, History > The gale' for a leaf; 'a summary of 10 passages of lighthouse.md'."""
    document = citation.document or ", ".join(name for name, _ in citation.drawn_from) or "all documents"
    if citation.layer > 0:
        return f"a summary of {citation.leaf_count} passages of {document} (layer {citation.layer}, node {citation.node_id})"
    parts = [document, citation.pages_label or "", " > ".join(citation.heading)]
    return ", ".join(p for p in parts if p) + f" (node {citation.node_id})"


# How a message asks in words when it has no question mark: a question's opening word, or a request's.
_ASKING_OPENERS = frozenset(
    """who whom whose what when where which why how is are was were am do does did can could should would
    will shall may might has have had tell explain list show describe give summarise summarize compare
    define find name""".split()
)
_QUESTION_MARKS = "?\u037e\u061f\uff1f\u00bf"  # and the Greek, Arabic, full-width and Spanish opening marks


def asks_by_mark(message: str) -> bool:
    """Whether a message has a question mark, of any script."""
    text = unicodedata.normalize("NFKC", message)
    return any(mark in text for mark in _QUESTION_MARKS)


def asks(message: str) -> bool:
    """Whether a message asks something: it has a question mark (of any script), or opens with a
    question's or a request's word ("who ...", "is it ...", "tell me ...", "explain ..."). "Margaret Hale
    trained in Edinburgh." asks nothing; an answer to a question edited into it stays (bot/answering.py)."""
    if asks_by_mark(message):
        return True
    words = _normalised_words(unicodedata.normalize("NFKC", message))
    return bool(words) and words[0] in _ASKING_OPENERS


_CONJUNCTIONS = frozenset({"and", "or", "but", "so", "also", "then"})
_ENDED = re.compile("[?!.\u2026\uff1f\uff01\u3002\u061f;:][\"'\u201d\u2019)\\]]*$")


def continues(previous: str, message: str) -> bool:
    """Whether `message` finishes the question `previous` began, sent too early with Enter ("who was the
    keeper" then "after Thomas Reid?"): `previous` asks and has no end mark, and `message` is no
    question or request of its own (`asks`' opening words, also after "and", "but", ...) and no small
    talk. The bot joins them only for one member's two messages sent moments apart."""
    if not asks(previous) or _ENDED.search(previous.strip()) or small_talk_act(message) is not None:
        return False
    words = _normalised_words(message)
    while words and words[0] in _CONJUNCTIONS:
        words = words[1:]
    return bool(words) and words[0] not in _ASKING_OPENERS
