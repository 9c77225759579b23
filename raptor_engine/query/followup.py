"""Follow-up questions without a model: the standalone question a follow-up stands for.

In a thread people ask "and when did she leave?", "why?", "what about the second one?". Searched
bare, such a question finds nothing it means. `standalone_question` rewrites it from the last turns:
- a person pronoun (she, he, her, him, his...) becomes the person the conversation is about: the
  first person named in the previous question, else the subject carried from the questions before
  it, else its context; a name the previous answer quoted only when that question asked for someone
  new ("Who replaced Ambrose Kittow?", "Who was appointed?") and the follow-up does not keep the
  pronoun the user was using, or when no question named anyone. A name right after in/at/to/from is
  a place, one written with "the" a thing or a people (unless asked "who was the Dalai Lama?"), one
  whose words say so a place, a body or an event ("Halbeck Cove", "Kestrel Optics", "Storm Eunice"),
  and none of them is "he" or "she": after "How is the Kestrel lens cleaned?" a name its answer quotes
  is "his" only where the answer shows that person as a "he" (not "his daughter, Morwenna Kittow") or
  by a title ("Captain Henry Ashcroft"), else "his" is left to the context;
- a he/she never means someone the conversation shows as the other gender (a title, "his wife Anne",
  "Walter Dunstan, a young man", the he/she right after the name; else a common first name) nor a
  name it asked about as a thing ("How is Kestrel cleaned?"): the next candidate is taken, then a
  person asked about before the last question, else the pronoun stays as asked; nor someone the user's
  own pronoun called the other gender in an earlier question ("who killed him?"); a he and a she in one
  question ("who is he to her?") each get their own person, or stay as asked;
- "and the brother?" / "what about the mother?" asks about that relative of the person the conversation
  is about ("What about Lisbeth's brother?");
- "they"/"them"/"their" becomes a family or people the previous question named with "the" (the Marrows);
- "it"/"its" becomes the one thing the previous question asked about by a noun phrase or a named thing
  ("Who built the railway?" -> "when did it close?" -> "When did the railway close?"; "its" -> "the
  railway's"), and "they"/"their" a plural one ("the bees"); the rewrite then carries no context. It is
  left as asked when unsure: that question named two or more things or a person ("Who was the first
  keeper?"), the "it" is a dummy ("is it true that", "how long did it take"), or it may be the answer to
  a what-question ("What did the keeper find?" -> "what was it?");
- "there" becomes the place last named after in/at/to/from; a final "then" becomes the year the
  previous question named, or the year its answer gave first when it asked "when";
- "what about X?" asks the previous question again about X when both name someone, and is a new
  question when X names a thing of its own ("what about the last keeper?");
- a correction that names someone ("no, I meant Daniel Kittow") is read as "what about Daniel Kittow?";
- a choice ("the second one?", "which of them is older?") picks among what the last list named: the names
  its quotes open with; when they name fewer than two, the things its question named (two or more), else
  the names opening the sentences of the passage its first quote was cited from (`cited`), in reading order;
- after a comparison with another thing ("is that less than the Alder?"), "it" is still the thing compared;
- a bare "why?"/"when?"/"where?"/"how?" after "did ...?" or "when did ...?" is that question with the
  new wh-word: "Why did Margaret Hale leave?"; a bare "when?"/"where?"/"who?"/"how many?"/"how much?"/
  "what year?" after any other question carries its subject: "Who founded Marrow's Bakery?" -> "When
  was Marrow's Bakery founded?", "What hurt the ferry?" -> "How many hurt the ferry?";
- a wh-word after an "and then?" that found only the closest passages leans on what that "and then?"
  leaned on, not on those passages;
- whatever is still implied (an unsure it, that, an ellipsis such as "why?" or "and in 1975?") is carried by
  appending the previous question as context: "When did Margaret Hale leave? (context: Who was
  appointed keeper of the archive in 1962?)".
A question with no pronoun or ellipsis that names something the conversation's questions have not
mentioned (names quoted in answers do not count), or asks about two or more things none of which
they mentioned, is a fresh question and is left as it is, so old terms do not pollute its answer.
Rewrites chain: the previous question is itself first made standalone from the turns before it.

`split_standalone` takes a rewrite apart again, so the extractive answerer can rank sentences by
the question itself first and the carried context second. `onward_ask` says what a follow-up that
names nothing asks of the last answer (a reason, what came next, more, an example, a check: onward.py
and verify.py answer it), and `through_exchange` cuts a history at the exchange a reply follows up.
Deterministic and cheap (no model).
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from enum import Enum

from ..ingest.load import chat_plain
from ..ingest.sentences import IRREGULAR, STOPWORDS, THEMATIC, content_terms, stem, words
from ..types import Turn
from .compared import (
    CANNOT_CHOOSE,
    MONTH_NAME,
    MONTH_NAMES,
    MONTH_NUMBERS,
    MONTH_WORD,
    PERIOD,
    compared_times,
    period_kind,
    period_name,
    periods,
    superlative_alone,
    which_more,
)
from .given_names import gender_of_first_name
from .verdict import NOT_SAID_LEAD

CONTEXT_OPEN = " (context: "
CONTEXT_CLOSE = ")"
# how an extractive answer opens when its quotes do not answer (answer.py's leads): a follow-up does not
# lean on such quotes
WEAK_MATCH = "Nothing in the documents clearly answers this; the closest passages are:"
NOTHING_RELATED = "The documents say nothing about this; the nearest passages are:"
# Instead of either lead when the question is in another language than the documents (language.py)
OTHER_LANGUAGE_OPENING = "The documents are in "
OTHER_LANGUAGE = OTHER_LANGUAGE_OPENING + "{documents} and the question seems to be in {asked}, so these are only the closest passages:"
# A language's name is a few words ('a language written in Cyrillic'): bounded, so that a long text of
# words (an earlier answer of 100 KB) is not searched from each of its 'and the question seems to be in'.
_LANGUAGE_NAME = r"[\w ]{1,60}?"
_OTHER_LANGUAGE_LEAD = re.compile(
    re.escape(OTHER_LANGUAGE).replace(re.escape("{documents}"), _LANGUAGE_NAME).replace(re.escape("{asked}"), _LANGUAGE_NAME)
)
# Instead of WEAK_MATCH when 'and then?' follows a document's last passage, or 'before that?' its first
DOCUMENT_ENDS = "The document {document} ends with that passage, so nothing in it comes after; the closest other passages are:"
DOCUMENT_OPENS = "The document {document} opens with that passage, so nothing in it comes before; the closest other passages are:"
_DOCUMENT_EDGE_LEAD = re.compile(
    "The document .+? (?:ends|opens) with that passage, so nothing in it comes (?:after|before); the closest other"
)


def unanswered_lead(text: str) -> bool:
    """Whether an answer opens with an extractive lead for quotes that do not answer (the closest or
    nearest passages, those of a question in another language, or those after a document's end): not an LLM's 'The documents are in
    agreement ...'."""
    return text.startswith((WEAK_MATCH, NOTHING_RELATED)) or bool(
        _OTHER_LANGUAGE_LEAD.match(text)
        or _DOCUMENT_EDGE_LEAD.match(text)
        or CANNOT_CHOOSE.match(text)
        or NOT_SAID_LEAD.match(text)
    )
TURNS_CONSIDERED = 6  # the last user questions looked at when chaining rewrites
MAX_CONTEXT_CHARS = 200
# What bounds a rewrite's cost whatever the history holds: it reads the first MAX_TURN_CHARS characters
# of each of the last TURNS_CONSIDERED questions and answers (the engine's question limit; an answer
# names the people and places a follow-up points back to in its first quotes), and a name is at most
# MAX_NAME_WORDS words of at most MAX_NAME_WORD_CHARS characters.
MAX_TURN_CHARS = 2000
# An earlier answer is read this far for its quotes and names: a few of the longest quotes, so whatever
# the history holds (the engine API takes any), ranking reads a bounded amount of it.
MAX_PREVIOUS_ANSWER_CHARS = 4 * MAX_TURN_CHARS
PREVIOUS_ANSWERS = 2  # the last answers whose quotes a follow-up does not quote again


def previous_answers(history: list[Turn], count: int = PREVIOUS_ANSWERS) -> list[str]:
    """The conversation's last `count` answers, oldest first, each read up to MAX_PREVIOUS_ANSWER_CHARS."""
    return [t.content[:MAX_PREVIOUS_ANSWER_CHARS] for t in history if t.role == "assistant"][-count:]
MAX_NAME_WORDS = 6
MAX_NAME_WORD_CHARS = 40
MAX_NAME_CHARS = MAX_NAME_WORDS * (MAX_NAME_WORD_CHARS + 1)

PERSON_PRONOUNS = frozenset("he she him her his hers they them their theirs himself herself".split())
OTHER_ANAPHORA = frozenset("it its itself there then that this these those former latter same".split())
CONTINUATIONS = (
    "and",
    "but",
    "also",
    "so",
    "or",
    "what about",
    "how about",
    "what else",
    "anything else",
    "tell me more",
    "more",
    "go on",
    "why",
    "how come",
    "really",
)
# Words a question is made of that say nothing about its subject ("how long", "tell me more").
QUESTION_VOCABULARY = frozenset(
    """tell more else about long many much often one ones first second third fourth last next previous
    other another happen happened happens happening mean means meant explain elaborate detail details
    exactly please again kind sort thing things way ways reason reasons know say said go went
    summarise summarize summary recap tldr describe expand clarify repeat rephrase simplify continue
    give""".split()  # the last two lines: requests about the last answer ('summarise that', 'expand on it')
)
TITLES = frozenset(
    """mr mrs ms miss dr prof sir lady lord king queen prince princess captain capt general colonel
    major lieutenant sergeant father mother sister brother uncle aunt saint st president professor
    doctor judge officer keeper""".split()
)
PLACE_PREPOSITIONS = frozenset("in at to from near on into".split())
EXISTENTIAL_AFTER_THERE = frozenset("is are was were be been has have had will would 's".split())
NAME_JOINERS = frozenset("of de la le du van von der den da di bin al".split())
# Words that open a sentence with a capital but never a name ('Since Anne left', 'Unless Morwenna
# returns', 'Meanwhile Ambrose slept'), besides the stop words and the question's own words.
NOT_NAME_OPENERS = frozenset(
    """since although though unless whereas whether whenever wherever however meanwhile yet thus therefore
    hence besides despite toward towards upon within without across along among amongst around behind
    beside beyond onto past per throughout till via whilst instead otherwise still even ever never always
    sometimes later soon today yesterday tomorrow tonight perhaps maybe finally eventually afterwards whose
    nobody everyone everybody someone somebody anyone anybody nothing everything something every many
    several yes yeah okay ok thanks hi hello hey please let list show name find""".split()
)

_TOKEN = re.compile(r"[A-Za-z\u00c0-\u024f][\w'\u2019.-]*|\d+|[^\w\s]")
ASKS_WHEN = re.compile(r"\b(?:when|what year|which year|since when)\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")


@dataclass(frozen=True)
class Rewrite:
    """A question made standalone: `core` is the question with pronouns resolved, `context` what it
    still leans on ("" for a question that stands alone). `person`/`pronoun` remember who a person
    pronoun was taken to mean, so a later 'he' after a 'she' looks for someone else."""

    core: str
    context: str = ""
    person: str | None = None
    pronoun: str | None = None
    subject: str | None = None  # the person the conversation has been asking about, carried along
    earlier: tuple[str, ...] = ()  # the people it asked about before `subject`, the latest first
    it: str | None = None  # what 'it' still means when the core asks about another thing (a comparison)
    called: tuple[tuple[str, str], ...] = ()  # whom earlier questions' pronouns meant, with its gender
    asked_before: str = ""  # the same question of another time, which 'and in 2020?' swapped for this one

    @property
    def text(self) -> str:
        return f"{self.core}{CONTEXT_OPEN}{self.context}{CONTEXT_CLOSE}" if self.context else self.core


Cited = Callable[[str], str]  # a quote -> the text of the passage it was quoted from ('' when not found)
# a name -> the documents' sentences that hold it, each with the sentence after it, one a line ('' when
# none): where a follow-up's he/she learns the gender of a name the table does not know ('Frankie')
Said = Callable[[str], str]
Labelled = Callable[[], "Rewrite"]  # the last question with the time of its answer's figure (`_labelled`)


def split_standalone(query: str) -> Rewrite:
    """Take `Rewrite.text` apart again (any other text is all core)."""
    if query.endswith(CONTEXT_CLOSE) and CONTEXT_OPEN in query:
        core, _, context = query[: -len(CONTEXT_CLOSE)].partition(CONTEXT_OPEN)
        if core.strip() and context.strip():
            return Rewrite(core.strip(), context.strip())
    return Rewrite(query)


def standalone_question(
    question: str,
    history: list[Turn],
    cited: Cited | None = None,
    said: Said | None = None,
    titled: Cited | None = None,
) -> str:
    """The question a follow-up stands for, given the conversation so far (the question itself if fresh)."""
    return rewrite(question, history, cited, said, titled).text


def rewrite(
    question: str,
    history: list[Turn],
    cited: Cited | None = None,
    said: Said | None = None,
    titled: Cited | None = None,
) -> Rewrite:
    """Rewrite each of the last questions against the ones before it, then this one against them.
    `cited` gives the passage a quote was taken from, for a choice among what an answer's quotes name
    too few of (`_cited_list`); `said` what the documents say around a name whose gender neither the
    conversation nor the names table shows (`_with_documents`); `titled` the title of the document a
    quote was taken from, where 'the year before' finds the year of a figure no question named
    (`_labelled`)."""
    exchanges = _exchanges(history[-4 * TURNS_CONSIDERED :])[-TURNS_CONSIDERED:]
    question = question[:MAX_TURN_CHARS]
    told = _told(exchanges, question)
    if said is not None and _asks_of_a_person(exchanges, question):
        told = _with_documents(told, said)
    previous: Rewrite | None = None
    previous_answer = ""
    listed: tuple[str, ...] = ()
    following = [asked for asked, _ in exchanges[1:]] + [question][: len(exchanges)]  # each question's next
    for (asked, answered), then in zip(exchanges, following, strict=True):
        if onward_ask(asked) is Onward.CHECK:
            continue  # 'is that true?' asks nothing new: what follows it leans on what it checked
        before = previous
        previous = _bounded(
            _followed(_rewrite_one(asked, previous, previous_answer, told, listed, titled), previous)
        )
        previous_answer = answered
        listed = (
            _listed(previous, answered)
            or _cited_list(previous, answered, then, cited)
            or _swap_pair(before, previous)
            or listed
        )
    return _bounded(_followed(_rewrite_one(question, previous, previous_answer, told, listed, titled), previous))


def onward_person(question: str, history: list[Turn]) -> str | None:
    """Whom the person pronoun of a follow-up kept as asked means ('what else did he do?' after 'Who lent
    Oswin the money?' -> Garrick, whom the answer introduced), else None: what its answer's sentences
    should tell of."""
    return rewrite(question, history).person


def through_exchange(history: list[Turn], index: int) -> list[Turn]:
    """The turns up to and including exchange `index` (0: the first question and its answer; -1 the last,
    as Python counts): what a follow-up replying to that exchange is read against. IndexError when the
    history has no such exchange."""
    starts = [i for i, turn in enumerate(history) if turn.role == "user"]
    position = range(len(starts))[index]  # IndexError outside it
    end = starts[position + 1] if position + 1 < len(starts) else len(history)
    return history[:end]


def _told(exchanges: list[tuple[str, str]], question: str) -> str:
    """What the conversation says about its people, one question or answer statement a line: where a
    follow-up's he/she looks for whom the turns show as a man or a woman."""
    lines = [line for asked, answered in exchanges for line in (asked, _statements(answered))]
    return "\n".join([*lines, question])


MAX_NAMES_LOOKED_UP = 6  # the most names of one conversation whose gender the documents are asked for
_HE_OR_SHE = frozenset("he she him her his hers himself herself".split())


def _asks_of_a_person(exchanges: list[tuple[str, str]], question: str) -> bool:
    """Whether a question of the conversation says he/she/him/her...: only then can a name's gender
    change the rewrite, so only then are the documents asked."""
    return any(
        _HE_OR_SHE & set(words(asked.lower())) for asked in [*(asked for asked, _ in exchanges), question]
    )


def _with_documents(told: str, said: Said) -> str:
    """The conversation's text followed by what the documents say around each person in it whose gender
    it does not show and the names table does not know, looked up by its given name ('Jude Penhallow':
    '... Jude climbed the tower, and she relit the lamp'), so `_kind` reads the documents' own titles,
    relatives' words and pronouns for that name (`_learned_gender`) as it reads the conversation's:
    one-sided evidence gives a gender, evidence both ways none. Nothing is stored: `said` looks the name
    up in the knowledge base's full-text index at question time."""
    unknown = [_given_name(name) for name in _people_of(told) if _kind(name, told) is None]
    looked_up = list(dict.fromkeys(unknown))[:MAX_NAMES_LOOKED_UP]
    found = [text for name in looked_up if (text := said(name).strip())]
    return "\n".join([told, *found]) if found else told


def _followed(rewrite: Rewrite, previous: Rewrite | None) -> Rewrite:
    """The rewrite remembering the people asked about before its own subject, the latest first."""
    if previous is None:
        return rewrite
    before = [previous.subject] if previous.subject else []
    earlier = [name for name in dict.fromkeys([*before, *previous.earlier]) if name != rewrite.subject]
    # 'who killed him?' (Tex Barton) -> ... -> 'what about her?': the user's own 'him' says he is no 'she'
    called = dict(previous.called)
    if previous.person and previous.pronoun:
        called.pop(previous.person, None)
        called[previous.person] = GENDER[previous.pronoun]
    return replace(
        rewrite, earlier=tuple(earlier[:TURNS_CONSIDERED]), called=tuple(called.items())[-TURNS_CONSIDERED:]
    )


def _bounded(rewrite: Rewrite) -> Rewrite:
    """A rewrite no longer than a question may be (one that puts a long name for every pronoun of a long
    question would otherwise grow with each)."""
    return replace(rewrite, core=_cut(rewrite.core, MAX_TURN_CHARS))


# A Markdown table's delimiter cells ('|---|:--:|'), and the bars between its cells
_TABLE_RULE = re.compile(r"(?<=\|)[ \t]*:?-{3,}:?[ \t]*(?=\|)")
_BARS = re.compile(r"(?<!\\)\|+")


def plain_words(question: str) -> str:
    """An earlier question as plain words, as the context a follow-up carries from it: a Markdown table's
    rule rows and bars, code fences, block quotes, spoilers and emphasis left out ('Searched as: and plot
    5? (context: | plot | holder | …)' showed the table's markup)."""
    text = chat_plain(_TABLE_RULE.sub(" ", question), fences=False)
    return " ".join(_BARS.sub(" ", text).split())


def _exchanges(history: list[Turn]) -> list[tuple[str, str]]:
    """(question, answer) pairs in order; an unanswered question gets an empty answer."""
    pairs: list[tuple[str, str]] = []
    for turn in history:
        if not turn.content.strip():
            continue
        if turn.role == "user":
            pairs.append((plain_words(turn.content[:MAX_TURN_CHARS]), ""))
        elif turn.role == "assistant" and pairs and not pairs[-1][1]:
            pairs[-1] = (pairs[-1][0], turn.content[:MAX_TURN_CHARS])
    return pairs


def _rewrite_one(
    question: str,
    previous: Rewrite | None,
    previous_answer: str,
    told: str,
    listed: tuple[str, ...] = (),
    titled: Cited | None = None,
) -> Rewrite:
    """One question made standalone against the previous one (itself standalone) and its answer;
    `listed`: what the conversation's last list named ('the Alder', 'the Wren'), for 'the second one';
    `titled`: a quote's document's title (`rewrite`)."""
    question = " ".join(question.split())
    if previous is None:
        question = _in_full(question)
        return Rewrite(question, subject=_named_person(question, []))
    known = _known_people(previous, previous_answer)
    if _shouted(question):  # 'WHERE WAS HE FROM?' reads as typed in lower case; its names are spelled below
        question = question.lower()
    question = _spelled_as_named(question, known, f"{previous.core}\n{previous.context}\n{previous_answer}")
    question = _same_for(_in_full(question))
    returned = _back_to(question)
    if isinstance(returned, Rewrite):
        return replace(returned, subject=previous.subject)
    question = returned
    excluded = _excluding(question, previous)
    if excluded is not None:
        return excluded
    placed = _corrected_place(question, previous)
    if placed is not None:
        return placed
    labelled = functools.partial(_labelled, previous, previous_answer, titled)  # read only when asked
    time = _another_time(question, previous, labelled)
    if time is not None:
        return time
    question = _as_what_about(_and_the(_and_name(question, previous)))
    if _stands_alone(question):
        return Rewrite(_capitalised(question), subject=_named_person(question, known) or previous.subject)
    compared = _compared(question, previous, labelled)
    if compared is not None:
        return compared
    which = _which_of_two(question, previous, previous_answer)
    if which is not None:
        return which
    superlative = _as_which(question, previous.core)  # 'the highest?' after the bar and the gate receipts
    if superlative is not None:
        which = _which_of_two(superlative, previous, previous_answer)
        chosen = _chosen(superlative, listed, previous.core)
        if which is not None or chosen is not None:
            return which or Rewrite(chosen or "", subject=previous.subject)
    reordered = _reordered(question, previous)
    if reordered is not None:
        return Rewrite(reordered, subject=previous.subject)
    chosen = _chosen(question, listed, previous.core) or _all_of_those(question, listed, previous.core)
    if chosen is not None:
        return Rewrite(chosen, subject=previous.subject)
    other = _the_other(question, previous)
    if other is not None:
        return Rewrite(other, subject=previous.subject)
    kin = _kin_of_subject(question, previous)
    if kin is not None:
        return kin
    # Only the questions decide whether a question is new: answers quote many names in passing.
    if is_fresh(question, f"{previous.core}\n{previous.context}"):
        # a new topic that names nobody ('what happened in April 1941?') leaves 'he' to mean whom it did
        subject = (
            _named_person(question, known)
            or previous.subject
            or _person(previous, previous_answer, None, told)
        )
        return Rewrite(question, subject=subject)
    bare = _without_conjunction(question)
    swapped = _what_about(bare, previous)
    if swapped is not None:
        return swapped
    asked = _wh_ellipsis(bare, previous)
    if asked is not None:
        return Rewrite(asked, subject=previous.subject)
    doer = _of_who_answered(question, previous, previous_answer)
    if doer is not None:  # 'when?' after 'Who was elected treasurer?': when was the one answered elected
        return doer
    carried = _carried_wh(question, previous)
    if carried is not None:  # it names its subject: no context, so the answer may quote the last one again
        return Rewrite(carried, subject=previous.subject)
    event = _event_of_that(bare, previous, previous_answer)
    if event is not None:
        return Rewrite(_capitalised(bare), _cut(event), subject=previous.subject)
    core, person, pronoun, thing = _resolve(bare, previous, previous_answer, told)
    kept = onward_ask(core) is None and onward_ask(bare) in KEPT_AS_ASKED
    if kept:
        # 'what else did he do?', 'what did she do before that?' ask of the last answer's passage: kept as
        # asked, so the answer reads on from that passage instead of ranking the name afresh ('what did
        # she do next?' is still spelled out, and 'what happened then?' asks about the year answered);
        # `person` still says whom the pronoun means (`onward_person`)
        core, thing = bare, False
    # 'and Jacob?' names him mid-sentence; without its 'and' he would open the question
    subject = (
        person
        or _named_person(question, known)
        or _named_person(core, known)
        or previous.subject
        or _answered_who(previous, previous_answer)
    )
    # 'what did it carry?' -> 'What did the railway carry?' stands alone: the last question ('When did the
    # railway close?') would only pull its own answer back in
    alone = not kept and ((person and _went_back_to(person, previous)) or (thing and not person and not _points_back(core)))
    context = "" if alone else _cut(_carried_context(previous, previous_answer))
    return Rewrite(_capitalised(core), context, person, pronoun, subject)


# 'back to the rent, when is it paid?', 'going back to the deposit: how much is it?', 'ok, back to the rent',
# 'returning to the boiler - who fixes it?': a topic the conversation left, named again, and what is asked of it
_BACK_TO = re.compile(
    r"^(?:(?:ok|okay|so|and|but|now|right|anyway|alright|also)\b[\s,.!]*)*"
    r"(?:(?:(?:let'?s\s+)?(?:going|go|coming|come|getting|get|turning|turn|switching|switch)\s+)?back\s+to"
    r"|returning\s+to|(?:let'?s\s+)?return\s+to)"
    r"\s+(?P<topic>[^,:;?!.\u2013\u2014]+?)(?:\s+(?:again|please|for\s+a\s+(?:moment|sec|second)))*"
    r"(?:\s*(?:[,:;.!?\u2013\u2014]|\s-)\s*(?P<question>\S.*?))?\s*[?.!]*$",
    re.IGNORECASE,
)
_IT_WORD = re.compile(r"\b(?:it|its|it's)\b", re.IGNORECASE)


def _back_to(question: str) -> Rewrite | str:
    """'back to the rent, when is it paid?' -> 'When is the rent paid?': a question after 'back to X' asks
    of X, its 'it' (or 'its') is X, whatever the last question asked about (the deposit); without a
    pronoun it is asked with X as its context. 'back to the rent' alone is 'What about the rent?' (a
    str: the rewrite goes on with it, so it takes the last question's place as 'what about' does).
    A question without such a pronoun names the topic after it ('..., the 9 December match?').
    The question itself (a str) when it returns to no topic, or the topic runs past `SWAPPED_WORDS`
    words."""
    match = _BACK_TO.match(question.strip())
    if match is None or len(match.group("topic").split()) > SWAPPED_WORDS + 1:
        return question
    topic, asked = match.group("topic").strip(), (match.group("question") or "").strip()
    if not asked:
        return f"What about {topic}?"
    asked = _capitalised(_in_full(asked.rstrip(" ?.!")) + "?")
    # a name ('back to Hester, who did she marry?') is what its he/she means; a thing is what 'it' means
    pronoun = _PERSON_WORD if topic[:1].isupper() and not topic.lower().startswith("the ") else _IT_WORD
    if pronoun.search(asked):
        return Rewrite(_capitalised(pronoun.sub(lambda it: _put(it, topic), asked, count=1)))
    # the topic is what is asked about: in the question, not in its context, which ranks less
    # ('Who did they play? (context: the 9 December match)' quoted November's match first)
    return Rewrite(f"{asked.rstrip(' ?.!')}, {topic}?")


_PERSON_WORD = re.compile(r"\b(?:he|she|him|his|her)\b(?P<then>\s+\w+)?", re.IGNORECASE)
_OBJECT_AFTER = frozenset("to in on at for from about with by of and or".split())


def _put(pronoun: re.Match[str], topic: str) -> str:
    """`topic` in place of a pronoun: 'its' and 'his' as its possessive, 'her' too before a noun."""
    word = pronoun.group(0).split()[0].lower()
    then = pronoun.groupdict().get("then") or ""
    owns = word in ("its", "his") or (word == "her" and then and then.split()[0].lower() not in _OBJECT_AFTER)
    said = {"it's": f"{topic} is"}.get(word, f"{topic}'s" if owns else topic)
    return said + then


# 'apart from council tax?', 'anyone besides Joan?', 'and other than the rent?', 'what else, except the
# boiler?': the last question again, leaving out what it names
_EXCLUDING = re.compile(
    r"^(?:(?:and|but|so|ok|okay|then)\b[\s,]*)*"
    r"(?:(?:anyone|anybody|anything|someone|somebody|something|who|what|which|any\s+others?|others?)"
    r"(?:\s+else)?[\s,]*)?"
    r"(?P<except>apart\s+from|aside\s+from|except(?:\s+for)?|besides|other\s+than|excluding|not\s+counting"
    r"|not\s+including|leaving\s+out)\s+(?P<thing>[^,;:?!]{1,80}?)\s*[?.!]*$",
    re.IGNORECASE,
)


def _excluding(question: str, previous: Rewrite) -> Rewrite | None:
    """'What does the tenant pay for?' then 'apart from council tax?' -> 'What does the tenant pay for
    apart from council tax?': a follow-up that only leaves something out asks the last question without
    it (searched alone, 'council tax' found the one sentence the last answer quoted, as a new question).
    None for any other follow-up."""
    match = _EXCLUDING.match(question.strip())
    if match is None:
        return None
    leaving = " ".join(match.group("except").lower().split())
    core = f"{previous.core.rstrip(' ?.!')} {leaving} {match.group('thing').strip()}?"
    return Rewrite(core, subject=previous.subject)


_PAST = re.compile(r"\b(?:was|were|did|had)\b|\w{3,}ed\b", re.IGNORECASE)


def _as_which(question: str, core: str) -> str | None:
    """'the highest?' -> 'which was higher?' ('is' when the last question asked in the present): the
    which-question a choice between two things or two times reads (`_chosen`, `_which_of_two`)."""
    comparative = superlative_alone(question)
    if comparative is None:
        return None
    verb = "was" if _PAST.search(core) else "is"
    return f"which {verb} {comparative}?"


# "when was that?", "and where did that happen?", "who did this?", "who approves that?", "why was that?": a
# wh-word asked of "that" alone, which means what the last answer told (not "who was that?", which asks
# who someone is).
_OF_THAT = re.compile(
    r"^(?:(?:and|so|but|ok|okay|hmm+|um+|well|then|oh|right)\b[\s,.!]*)*"
    r"(when|where|who|why|how)\s+(?:(was|is|were|did|does|had|has)\s+|(?<=who\s)(?!was\b|is\b|are\b|were\b)"
    r"[a-z]+(?:s|ed|ote|id|ade|ave)\s+)?(?:that|this)"
    r"(?:\s+(happen|happened|occur|occurred|take place|took place|start|started|begin|began|end|ended))?"
    r"(?:\s+(?:exactly|again|then))?\s*[?.!]*$",
    re.IGNORECASE,
)


def _asks_of_that(question: str) -> bool:
    match = _OF_THAT.match(question)
    if match is None:
        return False
    wh, aux, verb = (match.group(i) for i in (1, 2, 3))
    return not (wh.lower() == "who" and (aux or "").lower() in ("was", "is") and not verb)


# A clause that dates the event asked about by another one: "rebuilt after the fire" asks of the rebuild.
_TIME_CLAUSE = re.compile(r"\s+\b(?:after|before|since|until|till|following|during)\b", re.IGNORECASE)


def _main_clause(question: str) -> str:
    """The question without a time clause that follows its event ('Was the town hall rebuilt after the
    fire?' -> 'Was the town hall rebuilt'), unless that leaves it naming nothing."""
    cut = _TIME_CLAUSE.split(question, maxsplit=1)[0]
    return cut if subject_terms(cut) else question


def _event_of_that(question: str, previous: Rewrite, previous_answer: str) -> str | None:
    """'Was the town hall rebuilt after the fire?' answered 'The new town hall was rebuilt in stone and
    opened in 1891.', then 'and when was that?': 'that' is what the answer told, the rebuild, not the
    fire the question also named. The context is one of the answer's statements (below); after another
    such question, the event it asked about. None for other questions, and after an answer that found only the closest passages.

    The answer's first statement (its best) is the event when it shares a word of the question's main
    clause and none only of its time clause ('When did Angus stop lighting the lamp?': 'Angus kept it
    lit until 1958' before 'Angus took over the lamp'); otherwise the statement that shares most."""
    if not _asks_of_that(question) or _unanswered(previous_answer):
        return None
    if _asks_of_that(previous.core) and previous.context:
        return previous.context
    statements = [re.sub(r"\s*\[\d+\]", "", q).strip() for q in quotes_in(previous_answer)]
    if not statements:
        statements = [s for s in re.split(r"(?<=[.!?])\s+", previous_answer.strip()) if s]
    if not statements:
        return None
    main = _main_clause(previous.core)
    asked = {stem(t) for t in subject_terms(main)}
    dating = {stem(t) for t in subject_terms(previous.core[len(main) :])} - asked

    def score(statement: str) -> int:
        said = {stem(w) for w in words(statement)}
        return len(asked & said) - len(dating & said)

    best = max(statements, key=lambda statement: (score(statement), -statements.index(statement)))
    return statements[0] if score(statements[0]) > 0 else best


def _answered_who(previous: Rewrite, previous_answer: str) -> str | None:
    """The person a who-question that named nobody was answered with ('Who was appointed keeper?' ->
    Margaret Hale): what the conversation is about from then on, so a 'she' after 'say more' or 'how
    so?' still means her once that answer is no longer the last."""
    if not ASKS_WHO.search(previous.core) or _people_in(previous.core):
        return None
    people = _people_in(_statements(previous_answer))
    return people[0] if people else None


def _went_back_to(person: str, previous: Rewrite) -> bool:
    """The pronoun meant someone asked about before the last question, which was about someone else:
    that question is no context for this one (it would find the other person again)."""
    return person in previous.earlier and person != previous.subject and person not in previous.text


_CORRECTION = re.compile(r"^(?:(?:no|nope|sorry|oops)\b[\s,.!]*)*i\s+(?:meant|mean)\s+(.+)$", re.IGNORECASE)


# A correction that is a question of its own ('I meant when did Elsie marry', 'I mean how much was it').
_ASKS_ITSELF = re.compile(
    r"^(?:who|whom|whose|what|which|where|when|why|how)\s+(?:did|does|do|is|was|were|are|has|had|have|will|"
    r"would|can|could|should|much|many|long|old|often|far)\b",
    re.IGNORECASE,
)


def _as_what_about(question: str) -> str:
    """'no, I meant Daniel Kittow' -> 'what about Daniel Kittow', 'no, I meant the bridge' -> 'what about
    the bridge'; 'no, I meant when did Elsie marry' -> 'When did Elsie marry?' (a question of its own,
    whose pronouns are read as any question's). A correction that names someone or something asks the last question again about them
    (`_what_about`). One that names neither ('I mean closed after the barge') is searched as it is."""
    match = _CORRECTION.match(question)
    if not match:
        return question
    meant = match.group(1)
    if _ASKS_ITSELF.match(meant):  # 'no, I meant when did Elsie marry': that question, as it is
        return _capitalised(meant.rstrip(" ?.!")) + "?"
    if not names_in(f"about {meant}") and not re.match(r"(?i:the|a|an)\s+\w", meant):
        return question
    return f"what about {meant}"


_PLACED = re.compile(rf"^({'|'.join(PLACE_PREPOSITIONS)})\s+(.+?)\s*[?.!]*$", re.IGNORECASE)


def _corrected_place(question: str, previous: Rewrite) -> Rewrite | None:
    """'What did Rowan Pike do in Hobart?' then 'no, I meant in Port Lenning' -> 'What did Rowan Pike do
    in Port Lenning?': a correction that gives a place with its preposition puts it in place of the one
    the last question gave with that preposition. None for any other message."""
    match = _CORRECTION.match(question)
    placed = _PLACED.match(match.group(1)) if match else None
    return _placed_again(placed, previous) if placed is not None else None


def _placed_again(placed: re.Match[str], previous: Rewrite) -> Rewrite | None:
    """The last question with the place `placed` ('in Port Lenning', 'from abroad') in place of the one it
    gave with that preposition; None when it gave none."""
    preposition = placed.group(1).lower()
    old = re.search(rf"\b{preposition}\s+((?:the\s+)?(?:{_CAPITALISED_RUN}|\d+|\w+))", previous.core)
    if old is None:  # 'in Gloucester' corrected as 'at Ashby': the place with its own preposition
        old = re.search(rf"\b((?i:{'|'.join(PLACE_PREPOSITIONS)})\s+{_CAPITALISED_RUN})", previous.core)
        place = placed.group(0).rstrip(" ?.!")
    else:
        place = placed.group(2)
    if old is None:
        return None
    core = previous.core[: old.start(1)] + place + previous.core[old.end(1) :]
    return Rewrite(core, subject=previous.subject)


def _shouted(question: str) -> bool:
    """Written all in capitals (two words or more), where capitals no longer mark names."""
    letters = _LETTERS.findall(question)
    return len(letters) >= 2 and all(word.isupper() for word in letters)


def _carried_context(previous: Rewrite, previous_answer: str = "") -> str:
    """What a follow-up still leans on: the previous question; after a bare "why?" the one before it,
    and after one that named nothing of its own ("how many were lost?") both, so the subject named two
    turns back ("What happened to the Margaret Ellen?") is not lost; a year alone ("and in 1890?") names
    no subject either, so "who else?" after it keeps the question the year was asked of. After "and
    then?" or "for example?" the conversation has moved on to what that answer quoted: its first quote
    is what a "when?" or "why?" now asks about; when that answer found only the closest passages (it ran
    past the end of the document), what it leaned on still is."""
    if onward_ask(previous.core) in MOVED_ON and previous.context and _unanswered(previous_answer):
        return previous.context
    if onward_ask(previous.core) in MOVED_ON and _first_statement(previous_answer).strip():
        return _first_statement(previous_answer)
    if not previous.context:
        return previous.core
    terms = subject_terms(previous.core)
    if not terms:
        return previous.context
    if names_in(previous.core) or (_numbers(previous.core) and not all(t.isdigit() for t in terms)):
        return previous.core
    return f"{previous.core} {previous.context}"


def _unanswered(answer: str) -> bool:
    """An extractive answer whose quotes are only the closest or nearest passages."""
    return unanswered_lead(answer.lstrip())


def _known_people(previous: Rewrite, previous_answer: str) -> list[str]:
    """The people the conversation has named: in its questions, then in the last answer's statements."""
    texts = (previous.core, previous.context, _statements(previous_answer))
    known = [previous.subject] if previous.subject else []
    return known + [name for text in texts for name in _people_in(text)]


def _name_words(known: list[str]) -> dict[str, str]:
    """Each word of a known name that is no common word, lower-cased -> as the name writes it."""
    spelling: dict[str, str] = {}
    for name in known:
        for word in name.split():
            lower = word.lower()
            if lower not in STOPWORDS and lower not in NAME_JOINERS and lower not in QUESTION_VOCABULARY:
                spelling.setdefault(lower, word)
    return spelling


_LETTERS = re.compile(r"[A-Za-z\u00c0-\u024f]+")


def _spelled_as_named(question: str, known: list[str], conversation: str) -> str:
    """'and jacob?' -> 'and Jacob?': a word written in lower case that the conversation wrote only as
    part of a name is that name (people type names in lower case; the rules below read capitals)."""
    spelling = _name_words(known)
    if not spelling:
        return question
    lower_case = set(re.findall(r"\b[a-z\u00df-\u00ff]+\b", conversation))  # written as a common word too

    def spelled(match: re.Match[str]) -> str:
        word = match.group(0)
        return spelling.get(word, word) if word.islower() and word not in lower_case else word

    return _LETTERS.sub(spelled, question)


def _named_person(question: str, known: list[str]) -> str | None:
    """The first person the question names: a name it writes as one (never a place or a month after
    in/at/to/from, a thing named with 'the' only when the question asks who it is: 'Who was the Dalai
    Lama?'), else the known name one of its words belongs to ('Jacob?' after an answer that named Jacob
    Marrow: Jacob Marrow), the fullest first."""
    own = _people_in(question) or _asked_who_is(question)
    if own:
        return own[0]
    spelling = _name_words(known)
    for word in words(question):
        if word not in spelling:
            continue
        matches = [name for name in known if word in words(name)]
        return max(matches, key=lambda name: len(name.split()))
    return None


_WH_ONLY = re.compile(r"^(why|when|where|how|how come)\s*[?.!]*$", re.IGNORECASE)
_AUX = r"did|does|do|is|was|were|are|has|had|have|will|would|can|could|should"
_STARTS_WITH_AUX = re.compile(rf"^(?:{_AUX})\b", re.IGNORECASE)
_STARTS_WITH_WH_AUX = re.compile(rf"^(?:why|when|where|how)\s+(?=(?:{_AUX})\b)", re.IGNORECASE)
_WHAT_ABOUT = re.compile(r"^(?:what|how)\s+about\s+(.+?)\s*[?.!]*$", re.IGNORECASE)


def _wh_ellipsis(question: str, previous: Rewrite) -> str | None:
    """'Did Kittow get a medal?' then 'why?' -> 'Why did Kittow get a medal?'; 'When did she
    leave?' then 'where?' -> 'Where did she leave?'. None when the previous question asked 'what' or
    'who' (its wh-word is an argument: 'why did he do in 1887?' means nothing)."""
    match = _WH_ONLY.match(question)
    if not match:
        return None
    wh = match.group(1).lower()
    core = previous.core.rstrip(" ?.!")
    if not subject_terms(core):  # 'can you summarise that?' asked for nothing a 'why' could ask again
        return None
    if _STARTS_WITH_AUX.match(core):
        return f"{wh.capitalize()} {core[:1].lower()}{core[1:]}?"
    if _STARTS_WITH_WH_AUX.match(core):
        return _STARTS_WITH_WH_AUX.sub(f"{wh.capitalize()} ", core) + "?"
    return None


# 'Who was elected treasurer?', 'Who became the first woman on the board?': a who-question whose wh-word
# is the doer of a past verb (or the subject of a passive), the verb and what follows it
_WHO_DID_PAST = re.compile(
    r"^\s*who\s+(?:(?P<aux>was|were|had\s+been|has\s+been)\s+)?(?P<verb>[a-z]+(?:-[a-z]+)?)\b(?P<rest>[^?.!]*?)\s*[?.!]*$",
    re.IGNORECASE,
)
# 'how old?' after such a question: the age of the one answered when it happened
_HOW_OLD = re.compile(r"^(?:(?:and|so|but|ok|okay|then)\b[\s,.!]*)*how\s+old(?:\s+then)?\s*[?.!]*$", re.IGNORECASE)
# between a name and its verb: 'Joan Pryce was elected', 'Clara Pike, his daughter, became', 'X had first joined'
_TO_VERB = r"(?:,[^,.;]{1,60},|,)?\s+(?:(?:was|were|had|has|have|been|then|later|also|first|finally|eventually)\s+){0,3}"


def _of_who_answered(question: str, previous: Rewrite, previous_answer: str) -> Rewrite | None:
    """'when?', 'where?', 'what year?' or 'how old?' after a who-question the last answer answered with a
    name: asked of that person ('Who was elected treasurer?' -> 'When was Joan Pryce elected treasurer?';
    'Who became the first woman on the harbour board?' -> 'When did Clara Pike become ...?'). The person
    is the one a quote names as doing what was asked ('Colin Ashworth stood down as treasurer and Joan
    Pryce was elected in his place': Joan Pryce, not the first name quoted). None when the question is of
    another kind ('Who is the chair?' has no event to date), or no quote names who did it."""
    bare = _BARE_WH.match(question)
    old = _HOW_OLD.match(question)
    asked = _WHO_DID_PAST.match(previous.core)
    if (bare is None and old is None) or asked is None or _unanswered(previous_answer) or _people_in(previous.core):
        return None
    wh = "how old" if old is not None else bare.group(1).lower()
    if wh not in _ASKS_TIME_OR_PLACE and wh != "how old":
        return None
    aux, verb, rest = asked.group("aux"), asked.group("verb"), asked.group("rest")
    passive = aux is not None and _participle_next(verb, 0)
    if not passive and not (_past_verb(verb) or verb.lower() in _LINKING_VERBS):
        return None
    person = _doer(verb, previous_answer)
    if person is None:
        return None
    if wh == "how old":
        pronoun = {"m": "he", "f": "she"}.get(_gender_of(person, _statements(previous_answer)) or "", "")
        when = f"{pronoun} {aux} {verb}" if passive and pronoun else verb if passive else f"{pronoun or 'they'} {verb}"
        return Rewrite(f"How old was {person} when {when}{rest}?", subject=person)
    opening = wh.capitalize()
    if passive:
        return Rewrite(f"{opening} {aux.lower()} {person} {verb}{rest}?", subject=person)
    base = IRREGULAR.get(verb.lower())
    if base is not None:
        return Rewrite(f"{opening} did {person} {base}{rest}?", subject=person)
    return Rewrite(f"{opening} was it that {person} {verb}{rest}?", subject=person)  # no base form at hand


def _doer(verb: str, answer: str) -> str | None:
    """The first person the answer's quotes name right before `verb` ('Joan Pryce was elected', 'Clara
    Pike, became'), in any of its forms; None when none is."""
    wanted = stem(verb.lower())
    for quote in quotes_in(answer) or [answer]:
        text = re.sub(r"\s*\[\d+\]", "", quote)
        for person in _people_in(text):
            for found in re.finditer(rf"\b{re.escape(person)}{_TO_VERB}([a-z]+(?:-[a-z]+)?)\b", text):
                if stem(found.group(1)) == wanted:
                    return person
    return None


# A bare wh-word after an answer ("when?", "and where?", "how many?", "what year?") asks the last
# question's subject again with this wh-word; a filler may open it ("ok when?", "hmm, where exactly?").
# Not "how long?" or "how old?": they ask about the answer ("how long was she keeper?"), which the
# carried context leaves to the answer's words.
_BARE_WH = re.compile(
    r"^(?:(?:and|so|but|ok|okay|hmm+|um+|well|then|oh|right)\b[\s,.!]*)*"
    r"(when|where|who|whom|how many|how much|what year|which year|what date|what time)"
    r"(?:\s+(?:exactly|then|precisely))?\s*[?.!]*$",
    re.IGNORECASE,
)


def _carried_wh(question: str, previous: Rewrite) -> str | None:
    """'When did she leave?' then 'where?' -> 'Where did she leave?': the last question's words with the new
    wh-word in place of its own, so the question searched and ranked names its subject ('When?' alone
    names nothing, and its carried context counts only lightly); a who-question's object is asked of as a
    passive ('Who founded Marrow's Bakery?' then 'when?' -> "When was Marrow's Bakery founded?"). None for
    anything but a bare wh-word, when the last question names nothing ('tell me more'), or when the new
    wh-word cannot take the old one's place (`_wh_rest`)."""
    match = _BARE_WH.match(question)
    if not match or not subject_terms(previous.core) or onward_ask(previous.core) is not None:
        return None  # after 'what came next?' a 'when?' asks about what that answer quoted
    wh = match.group(1).lower()
    passive = _as_passive(wh, previous.core)
    if passive is not None:
        return passive
    rest = _wh_rest(wh, previous.core)
    if not rest:
        return None
    if not names_in(rest) or not rest.startswith(names_in(rest)[0]):
        rest = rest[:1].lower() + rest[1:]
    return f"{wh.capitalize()} {rest}?"


# The last question's wh-word, a noun it may take ('which trip', 'how many goals') and the word after them:
# 'What pays ...' (the wh-word is the subject: 'when?' cannot take its place), 'When is ...', 'How many
# goals did ...' (an aux follows: another wh-word can take the place of all before it)
_WH_THEN = re.compile(
    r"^\s*(who|whom|whose|what|which|where|when|why|how(?:\s+(?:many|much|long|old|often|far))?)"
    rf"(?:\s+(?!(?:{_AUX})\b)[a-z]+(?=\s+(?:{_AUX})\b))?\s+([a-z']+)\b",
    re.IGNORECASE,
)
_BE = frozenset("is was are were be been 's".split())
_HAVE = frozenset("has have had".split())
# 'What year did Hester leave?' -> 'where?': a wh-word's noun that asks for a time, not for the verb's object
_TIMES = frozenset("year time date day month week century decade season hour age".split())
_HAPPENED = frozenset("happened happens happen occurred occurs occur went goes go came comes changed changes remained".split())
_DO = frozenset("do does did".split())


def _wh_rest(wh: str, core: str) -> str | None:
    """What follows the last question's wh-word when `wh` can take its place and still ask something:
    'When did she leave?' -> 'where?' ('did she leave'), 'How many goals did Wilk score?' -> 'when?' ('did
    Wilk score'), 'What did she see?' -> 'who?', 'What was the premium?' -> 'how much?', 'What pays for the
    timber?' -> 'who?'. None when the old wh-word is the question's subject ('What pays for the timber?'
    -> 'when?' would read 'When pays for the timber?'; 'Who was elected treasurer?' -> 'When was elected
    treasurer?'; 'What happened in March?' -> 'who?' would read 'Who happened ...'), for 'how much?' of a
    person ('Who is the chair?'), or for 'who?' of a time, a place or a thing that is ('When is the next meeting?' -> 'Who
    is the next meeting?'): those are asked with the last question as context instead."""
    found = _WH_THEN.match(core)
    if found is None:  # a yes/no question: 'Did she marry?' -> 'who?' -> 'Who did she marry?'
        return core.rstrip(" ?.!") if _STARTS_WITH_AUX.match(core) else None
    old, after = found.group(1).lower(), found.group(2).lower()
    if after in _HAVE and not _participle_next(core, found.end()):
        return None  # 'Who has plot 14?', 'How many members have plots?': 'have' owns, the wh-words are its subject
    aux = re.fullmatch(_AUX, after) is not None
    rest = core[found.start(2) :].rstrip(" ?.!")
    noun = core[found.end(1) : found.start(2)].strip().lower()
    if wh in _ASKS_TIME_OR_PLACE and old in ("what", "which", "who", "whom") and after in _DO and noun not in _TIMES:
        return None  # the old wh-words are the verb's object: 'Which plot does Lena have?' -> not 'When does Lena have?'
    if old in ("who", "whom", "what", "which", "whose") and found.end(1) == found.start(2) - 1:
        if not aux or (after in _BE | _HAVE and _participle_next(core, found.end())):
            # the wh-word is the subject ('What pays ...', 'Who was elected ...'): only 'who?' of a thing's
            # doer takes its place ('What pays for the timber?' -> 'Who pays for the timber?'; not 'Who happened')
            doer = wh in ("who", "whom") and old == "what" and not aux and after not in _HAPPENED
            return rest if doer else None
    if wh in ("who", "whom"):  # a person as the object: 'What did she see?' -> 'Who did she see?'
        return rest if aux and after in _DO and old in ("what", "which", "who", "whom") else None
    if wh in ("how many", "how much") and old in ("who", "whom", "whose"):
        return None  # 'Who is the chair?' -> 'how much?' asks of nothing a person is
    return rest if aux else None


def _participle_next(core: str, at: int) -> bool:
    """'Who was elected ...': a past participle right after the wh-word's 'was' makes it a passive whose
    subject the wh-word is ('What was the premium?' is no passive)."""
    following = core[at:].split()
    word = following[0].strip("?.!,").lower() if following else ""
    return _past_verb(word) or (len(word) > 3 and word.endswith(("en", "wn", "one")))  # done, known, taken


_WHO_DID = re.compile(r"^\s*who\s+([a-z]+)\s+(.+?)\s*[?.!]*$", re.IGNORECASE)
_ASKS_TIME_OR_PLACE = frozenset(("when", "where", "what year", "which year", "what date", "what time"))


_WHEN_DONE = re.compile(r"^\s*(?:when|where)\s+(?:was|were)\s+(.+?)\s+([a-z]+)\s*[?.!]*$", re.IGNORECASE)


def _as_passive(wh: str, core: str) -> str | None:
    """'Who founded Marrow's Bakery?' then 'when?' -> "When was Marrow's Bakery founded?": a who-question
    with a past verb, asked again for a time or a place, reads as a question about its object; one whose
    verb has no object ('Who joined most recently?', a table's rows ranked) asks both ('Who joined most
    recently and when?'); and back ('When was the catalogue computerised?' then 'who?' -> 'Who
    computerised the catalogue?')."""
    if wh in _ASKS_TIME_OR_PLACE:
        match = _WHO_DID.match(core)
        verb, thing = (match.group(1), match.group(2)) if match else ("", "")
        if not match or not _past_verb(verb):
            return None
        if _no_thing(thing):  # 'Who joined most recently?' -> 'Who joined most recently and when?'
            return f"{_capitalised(core.rstrip(' ?.!'))} and {wh}?"
        return f"{wh.capitalize()} was {thing} {verb}?"
    if wh == "who":
        match = _WHEN_DONE.match(core)
        thing, verb = (match.group(1), match.group(2)) if match else ("", "")
        return f"Who {verb} {thing}?" if match and _past_verb(verb) else None
    return None


# 'Who joined most recently?', 'Who left in 1975?': what follows the verb tells when or how, and is no
# object to ask of ('When was most recently joined?')
_NOT_A_THING = frozenset(
    """most least more less first last recently earliest latest earlier later in on at by for from to with
    before after since during about into over under then there here ago again once twice""".split()
)


def _no_thing(words: str) -> bool:
    """Whether the words after a who-question's verb are no object (an adverb or a time or place)."""
    first = words.split()[0].lower() if words.split() else ""
    return not first or first in _NOT_A_THING or (first.endswith("ly") and len(words.split()) == 1)


def _past_verb(word: str) -> bool:
    lower = word.lower()
    past = lower in IRREGULAR or (lower.endswith("ed") and len(lower) > 3)
    return past and lower not in _STOP_VERBS and lower not in _LINKING_VERBS


# 'Who became the first woman on the board?' then 'when?': no 'When was the first woman ... became?'
_LINKING_VERBS = frozenset("became become seemed remained stayed grew".split())


# 'what about the varroa mites and chalkbrood that spread between colonies?': what a 'what about' names
# with a clause of its own, or in five words or more, is a question of its own; put in the last question's
# place it was garbled ('What oil does the spark plug gap and the air filter cleaning schedule ... take?').
_CLAUSE_WORD = re.compile(r"\b(?:that|which|who|whom|whose|where|when|while|because|if|since|so)\b", re.IGNORECASE)
_ARTICLE = frozenset("the a an".split())
STANDALONE_WORDS = 5


def _stands_alone(question: str) -> bool:
    """Whether a 'what about X?' names X in a clause or at a length that asks a question of its own."""
    match = _WHAT_ABOUT.match(question)
    if not match:
        return False
    words = [w for w in re.findall(r"[\w'-]+", match.group(1)) if w.lower() not in _ARTICLE]
    return len(words) >= STANDALONE_WORDS or (len(words) >= 3 and _CLAUSE_WORD.search(match.group(1)) is not None)


def _what_about(question: str, previous: Rewrite) -> Rewrite | None:
    """'What about X?' asks the last question again about X when X is a name and the last question
    named someone ('What did Hester earn?' -> 'What about Elias?' -> 'What did Elias earn?'); it is a
    new topic when X names something of its own ('what about the last keeper?'). None otherwise
    ('what about his wife?', 'what about 1975?', 'what about the second one?' lean on the last turn)."""
    match = _WHAT_ABOUT.match(question)
    if not match or _points_back(match.group(1)):
        return None
    target = match.group(1)
    placed = _PLACED.match(target)  # 'what about from abroad?' after 'can I work from home?'
    moved = _placed_again(placed, previous) if placed is not None else None
    if moved is not None:
        return moved
    if _of_another_kind(target, previous):
        return Rewrite(_capitalised(question), _cut(_carried_context(previous)), subject=previous.subject)
    new_names = names_in(question)
    old_names = names_in(previous.core)
    if new_names and old_names and new_names[0].lower() != old_names[0].lower() and _alike(new_names[0], old_names[0]):
        old = old_names[0]
        core = re.sub(rf"\b{re.escape(old)}\b", new_names[0], previous.core, count=1)
        return Rewrite(core, subject=new_names[0])
    swapped = _swapped_thing(target, previous)
    if swapped is not None:
        return Rewrite(swapped, subject=previous.subject)
    if any(not t.isdigit() for t in subject_terms(target)):
        return Rewrite(_capitalised(question), subject=new_names[0] if new_names else None)
    return None


# Words for relatives of either gender, and plurals, for 'and the parents?' (RELATIVES says a gender)
_KIN = (
    "parents parent children child siblings sibling cousins cousin family twins twin "
    "wives husbands mothers fathers daughters sons sisters brothers aunts uncles grandparents grandchildren"
).split()


def _kin_of_subject(question: str, previous: Rewrite) -> Rewrite | None:
    """'Who is Lisbeth?' -> 'and the brother?' / 'what about the mother?' -> 'What about Lisbeth's
    brother?': a relative named with 'the' alone is the relative of the person the conversation is
    about (the last question's first person, else whom its pronoun meant, else the carried subject).
    None for any other question, or when the conversation is about nobody."""
    match = _WHAT_ABOUT.match(question)
    kin_words = "|".join([*RELATIVES, *_KIN])
    the_relative = rf"(?i:the\s+((?:eldest|elder|youngest|younger|older|late|first|second)\s+)?({kin_words}))"
    kin = re.fullmatch(the_relative, match.group(1).strip()) if match else None
    if kin is None:
        return None
    people = [_POSSESSIVE.sub("", name) for name in _people_in(previous.core)]
    person = next(iter(people), None) or previous.person or previous.subject
    relative = kin.group(2).lower()
    spouse = relative in ("wife", "husband", "widow", "widower")
    gender = (dict(previous.called).get(person) or _first_name_gender(person)) if person else None
    if person is None or spouse and gender == RELATIVES.get(relative):
        return None  # not "Rita's wife"
    return Rewrite(f"What about {person}'s {(kin.group(1) or '').lower()}{kin.group(2).lower()}?", subject=person)


def _swapped_thing(target: str, previous: Rewrite) -> str | None:
    """'When did the Wren stop running?' then 'what about the Alder?' -> 'When did the Alder stop
    running?': the last question again about `target`, when that question asked about one thing and no
    one ('What did Hester Marrow earn?' then 'what about the last keeper?' starts a new topic) and the
    target is a thing named with 'the'/'a' or by a name. None otherwise."""
    target = target.strip()
    if _NUMBERED_ONE.match(target) and _NUMBERED_THING.search(previous.core):
        return _renumbered(target, previous.core)  # 'the 2019 one' stands for that numbered thing, or nothing
    if _NUMBERED_ONE.match(target) and not previous.core.rstrip(" ?.!").count(" ") and _NUMBERED_THING.search(previous.context):
        return _renumbered(target, previous.context)  # after 'why?': the question it leaned on, again
    article = re.match(r"(?i:the|a|an)\s+", target)
    if (article is None and not names_in(f"about {target}")) or _ORDINAL.search(target):
        return None  # 'the other one', 'the second one' choose from a list (`_chosen`)
    if article is None and _first_name_gender(target):
        return None  # 'Was it before or after the shooting?' then 'what about Jeff?': a person, no event
    if _people_in(previous.core) or _asked_who_is(previous.core) or previous.person:
        return None
    things = [thing for thing in _things_in(previous.core) or [] if not thing.person]
    if len(things) != 1 or things[0].phrase.lower() == target.lower():
        return None
    phrase = things[0].phrase
    at = previous.core.find(phrase)
    if at < 0:
        return None
    written = target[:1].lower() + target[1:] if article is not None and at > 0 else target
    return _capitalised(previous.core[:at] + written + previous.core[at + len(phrase) :])


def _of_another_kind(target: str, previous: Rewrite) -> bool:
    """'How many members attended the Q2 meeting?' then 'what about the budget?' (or 'the treasurer', 'the
    minutes from March'): a thing named by a common noun that is not the kind the last question asked about,
    so it replaces none of its words: no 'budget meeting', no 'How many members attended the budget?'. It is
    asked as typed with the last question as context, which keeps the Q2 meeting in view. The kind differs when
    the last question's one thing is labelled ('the Q2 meeting', 'the 2021 survey') and the new head noun is
    another ('budget', not 'meeting': 'the budget meeting' is that kind), or is a bare label or name ('in Q2'),
    or one is a person and the other not ('the treasurer'). A thing of the same plain kind is swapped as before
    ('When did the railway close?' then 'what about the canal?', `_swapped_thing`)."""
    head = _common_head(target)
    if head is None or _ORDINAL.search(target):
        return False
    if _people_in(previous.core) or _asked_who_is(previous.core) or previous.person:
        return False  # 'What did Hester Marrow earn?' then 'what about the last keeper?': a new topic already
    things = [thing for thing in _things_in(previous.core) or [] if not thing.person]
    if len(things) != 1:
        return False
    phrase = things[0].phrase
    old_head = _head_word(phrase)
    if stem(head) == stem(old_head):
        return False
    labelled = phrase.split()[0].lower() in _ARTICLES and len(phrase.split()) > 2
    bare = phrase.split()[0].lower() not in _ARTICLES
    return labelled or bare or (head in PERSON_NOUNS) != (old_head in PERSON_NOUNS)


def _alike(new: str, old: str) -> bool:
    """Whether a name may stand in another's place: a label with a number ('Q2', 'Form 7') only for
    another such, so 'what about Joan?' after 'Who chaired the Q2 meeting?' is no 'Joan meeting'."""
    return any(ch.isdigit() for ch in new) == any(ch.isdigit() for ch in old)


def _common_head(target: str) -> str | None:
    """The head noun of a thing named by a common noun after an article: 'the budget' -> 'budget', 'the
    minutes from March' -> 'minutes', 'the water pump' -> 'pump'; None for a name or a number ('the Alder',
    'the 2019 one', 'Q1')."""
    tokens = target.strip().rstrip("?.!").split()
    if len(tokens) < 2 or tokens[0].lower() not in _ARTICLES:
        return None
    run: list[str] = []
    for token in tokens[1:]:
        if not re.fullmatch(r"[a-z][a-z'-]*", token) or token in STOPWORDS:
            break
        run.append(token)
    rest = tokens[1 + len(run) :]  # what follows the noun phrase: nothing, or a word like 'from' ('the minutes from March')
    if not run or (rest and rest[0].lower() not in STOPWORDS):
        return None
    return _head_word(run[-1])


def _head_word(phrase: str) -> str:
    """A noun phrase's last word, lower case and without a possessive: 'the Q2 meeting' -> 'meeting'."""
    return _POSSESSIVE.sub("", phrase.split()[-1]).lower()


_NUMBERED_ONE = re.compile(r"^the\s+(\d[\d,.]*)\s+ones?\s*[?.!]*$", re.IGNORECASE)
_NUMBERED_THING = re.compile(r"\bthe\s+(\d[\d,.]*)(?=\s+[^\W\d])", re.IGNORECASE)


def _renumbered(target: str, core: str) -> str | None:
    """'What did the 2021 report recommend?' then 'no, I meant the 2019 one' (or 'what about the 2019
    one?', 'and the 2019 one?') -> 'What did the 2019 report recommend?': the last question's numbered
    thing ('the 2021 report', 'the 3 pm ferry') with the new number. None when the target is no numbered
    'one', or the last question numbers nothing."""
    match = _NUMBERED_ONE.match(target)
    old = _NUMBERED_THING.search(core) if match else None
    if match is None or old is None or old.group(1) == match.group(1):
        return None
    return _capitalised(core[: old.start(1)] + match.group(1) + core[old.end(1) :])


_CHAT_SPELLINGS = {
    **dict.fromkeys("wat wot wht waht whta".split(), "what"),
    **dict.fromkeys("wen wehn whn".split(), "when"),
    **dict.fromkeys("wher whre wehre".split(), "where"),
    **dict.fromkeys("hw hwo".split(), "how"),
    **dict.fromkeys("happend hapened hapend happenned".split(), "happened"),
    **dict.fromkeys("abt abut".split(), "about"),
    "u": "you",
    "r": "are",
    "ur": "your",
}


_CHAT_SPELLED = re.compile(rf"\b(?:{'|'.join(_CHAT_SPELLINGS)})\b")  # lower case only: 'U-boat' is no 'you'


def _in_full(question: str) -> str:
    """'wat did he do there' -> 'what did he do there': the question words chat writes short or misspelt
    (the documents' own words are respelled against the documents afterwards)."""
    return _CHAT_SPELLED.sub(lambda m: _CHAT_SPELLINGS[m.group(0)], question)


# 'and the Wren?'; 'and in the 2019 one?' (a numbered 'one' is the thing itself, whatever its preposition)
_AND_THE = re.compile(
    r"^(?:and|or|but)\s+(?:(?:in|for|of|from)\s+(?=the\s+\d[\d,.]*\s+ones?\b))?((?:the|a|an)\s+[^?.!]+?)\s*[?.!]*$",
    re.IGNORECASE,
)


_AND_NAME = re.compile(r"^(?:and|or)\s+(?:what\s+of\s+)?([A-Z][^?.!,]*?)\s*[?.!]*$")


def _and_name(question: str, previous: Rewrite) -> str:
    """'and Ellery?' -> 'what about Ellery?' when the last question asked about a person by name ('How many
    goals did Wilk score?'): another person's name alone asks it of them. After a question about no named
    person ('Who chaired the Q2 meeting?') it stays as typed: there the name is no one to put in its place."""
    match = _AND_NAME.match(question)
    if match is None:
        return question
    named = names_in(previous.core)
    # a person's name: not a label's word ('Year 5', 'the Q2 meeting') nor a thing's ('the Harbour Committee')
    person = len(named) == 1 and re.search(rf"(?<!\bthe\s)(?<!\bThe\s)\b{re.escape(named[0])}\b(?!\s*\d)", previous.core)
    name = match.group(1)
    if not person or names_in(question) != [name] or name.lower() == named[0].lower() or not _alike(name, named[0]):
        return question
    return f"what about {name}?"


def _and_the(question: str) -> str:
    """'and the Wren?' -> 'what about the Wren?': a thing named alone after 'and' asks the last question
    about it; the rewrite is a question, so it ends with '?' (a new topic is searched as it reads)."""
    match = _AND_THE.match(question)
    return f"what about {match.group(1)}?" if match else question


_COMPARISON = re.compile(
    r"^(?:(?:is|was|are|were)\s+(?:that|this|it|those|these|they)\s+)?(?:any\s+|much\s+|a\s+lot\s+)?"
    r"(more|less|fewer|[a-z]{3,}er)\s+than\s+(.+?)\s*[?.!]*$",
    re.IGNORECASE,
)


def _compared(question: str, previous: Rewrite, labelled: Labelled | None = None) -> Rewrite | None:
    """'How long is the Kessel Bridge?' then 'is that more than 200 metres?' -> the last question again
    (the answer quotes the figure to compare, though the last answer quoted it); 'is that more than the
    Wren?' -> the last question about the Wren, the last question as context (the answer quotes the
    Wren's figure). 'was that more than in 2019?', 'is that higher than last year?', 'how does that
    compare with the Q2 figure?' ask the last question of that year or quarter the same way
    (`_at_another_time`), so the answer quotes both figures; when the last question named no time,
    `labelled` is it with the time of the figure its answer quoted ('How many units were sold after the
    dry summer in Q3?', `_labelled`). None for anything but such a comparison, or when the last question
    named nothing."""
    bare = _without_conjunction(question)
    match = _COMPARISON.match(bare)
    if match is not None and match.group(1).lower() in _NOT_COMPARATIVES:
        match = None
    target = match.group(2) if match is not None else _compared_with(bare)
    if target is None or not subject_terms(previous.core):
        return None
    other = _at_another_time(target, previous.core)
    if other is None and labelled is not None and _counted_from(target):
        counted = labelled()
        other = _at_another_time(target, counted.core)
        previous = counted if other is not None else previous
    if other is None and not _another_of_something_else(target, previous.core):
        other = _swapped_thing(target, previous)
    if other is not None:  # 'it' is still what was compared ('why was it smaller?'), not the other thing
        kept = previous.it or _thing(previous, "", plural=False)
        return Rewrite(other, _cut(previous.core), subject=previous.subject, it=kept)
    # no context: the figure the last answer quoted is what is compared, so it may be quoted again
    return Rewrite(previous.core, subject=previous.subject)


# 'how does that compare with 2019?', 'compared to the other site?': what the last answer is compared with
_COMPARED_WITH = re.compile(
    r"^(?:(?:how|what)\s+(?:does|did|do|is|was)\s+(?:that|this|it|those|these|they)\s+compare"
    r"|(?:and\s+)?(?:how\s+is\s+that\s+)?compared)\s+(?:with|to|against)\s+(.+?)\s*[?.!]*$",
    re.IGNORECASE,
)


def _compared_with(question: str) -> str | None:
    """What 'how does that compare with X?' compares the last answer with (X), else None."""
    match = _COMPARED_WITH.match(question)
    return match.group(1) if match else None


def _another_of_something_else(target: str, core: str) -> bool:
    """'the other site' after a question that names no site: not the thing that question asked about."""
    other = re.match(r"(?i:the\s+other\s+)(\w+)$", target.strip())
    return other is not None and other.group(1).lower() not in words(core)


# 'in 2019', 'the 2019 figure', 'Q2', 'last year', 'the previous quarter': a time the comparison names
_A_TIME = re.compile(
    r"^(?:(?:in|for|during|of|that\s+of|that\s+in)\s+)?(?:the\s+)?(?:(?P<period>(?:q[1-4]\s+)?(?:1[0-9]{3}|20[0-9]{2})"
    r"(?:\s?[-/\u2013]\s?\d{2,4})?|fy\s?\d{2,4}(?:\s?[-/\u2013]\s?\d{2,4})?|q[1-4])"
    r"|(?P<year_before>(?:last|previous|prior|preceding)\s+year|year\s+(?:before|prior)(?:\s+that)?"
    r"|a\s+year\s+(?:earlier|before))"
    r"|(?P<year_after>(?:next|following|subsequent)\s+year|year\s+after(?:\s+that)?|a\s+year\s+later)"
    r"|(?P<quarter_before>(?:last|previous|prior|preceding)\s+quarter|quarter\s+(?:before|prior)(?:\s+that)?)"
    r"|(?P<quarter_after>(?:next|following|subsequent)\s+quarter|quarter\s+after(?:\s+that)?))"
    r"(?:['\u2019]s)?(?:\s+(?:one|figure|figures|number|numbers|total|count|amount|level|report|survey))?$",
    re.IGNORECASE,
)


def _at_another_time(target: str, core: str) -> str | None:
    """'How many moorings did the 2021 survey count?' compared with 'in 2019' (or 'last year') -> 'How many
    moorings did the 2019 (2020) survey count?': the last question with its one period put back to the one
    the comparison names: a year, a quarter ('Q3'), a quarter of a year ('Q3 2021'), a financial year
    ('FY24') or a split year ('2022-23'; 'the year before' it is '2021-22'); the year of 'Q3 2021' for a
    year, its quarter for a quarter. None when it names no time, or the question has no one such period
    to replace (after 'What did the report recommend?', 'and in 2019?' may mean the 2019 report)."""
    match = _A_TIME.match(target.strip())
    if match is None:
        return None
    named = PERIOD.fullmatch(match.group("period").strip()) if match.group("period") else None
    if match.group("period") and (named is None or period_name(named) is None):
        return None
    new_kind = period_kind(named) if named is not None else ""
    quarterly = new_kind == "quarter" or match.group("quarter_before") or match.group("quarter_after")
    slots = _period_slots(core, "qy" if new_kind == "qy" else "quarter" if quarterly else "year")
    if len({core[start:end].lower() for start, end in slots}) != 1:
        return None
    old = core[slots[0][0] : slots[0][1]]
    if named is not None:
        new = period_name(named) or ""
    else:
        step = -1 if match.group("year_before") or match.group("quarter_before") else 1
        new = _stepped(old, step) or ""
    if not new or new.lower() == old.lower():
        return None
    for start, end in reversed(slots):
        core = core[:start] + new + core[end:]
    return core


def _period_slots(core: str, kind: str) -> list[tuple[int, int]]:
    """Where in the last question a period of `kind` may be put: for a year (or a financial or split year)
    its years, financial and split years and the year of a quarter of a year; for a quarter its quarters and
    the quarter of a quarter of a year; for a quarter of a year those, else its quarters or its years."""
    found = [(period_kind(m), m) for m in PERIOD.finditer(core)]
    if kind == "qy":
        whole = [(m.start(), m.end()) for k, m in found if k == "qy"]
        return whole or _period_slots(core, "quarter") or _period_slots(core, "year")
    slots = []
    for k, m in found:
        if k == "qy":
            quarter, _, year = m.group(0).partition(" ")
            slots.append((m.start(), m.start() + len(quarter)) if kind == "quarter" else (m.end() - len(year), m.end()))
        elif (k == "quarter") == (kind == "quarter"):
            slots.append((m.start(), m.end()))
    return slots


def _stepped(period: str, step: int) -> str | None:
    """The period `step` years or quarters on ('2021' -1 -> '2020', 'Q2' +1 -> 'Q3', '2022-23' -1 ->
    '2021-22', 'FY24' +1 -> 'FY25'); None past a year's last quarter or before its first."""
    if re.fullmatch(r"[Qq][1-4]", period):
        quarter = int(period[1]) + step
        return f"Q{quarter}" if 1 <= quarter <= 4 else None
    numbers = re.findall(r"\d+", period)
    if len(numbers) == 2:
        first = int(numbers[0]) + step
        return f"{first}-{(first + 1) % 100:02d}"
    digits = numbers[0] if numbers else ""
    moved = str(int(digits) + step).zfill(len(digits)) if digits else ""
    return period[: period.index(digits)] + moved if digits else None


def _labelled(previous: Rewrite, previous_answer: str, titled: Cited | None) -> Rewrite:
    """The last question with the time of the figure its answer quoted first, when it named none
    ('How many units were sold after the dry summer?' -> '... after the dry summer in Q3?'): the one year
    or quarter of the quote's document title (`titled`), else the first its text gives. What 'was that
    more than the year before?' or 'and the previous quarter?' counts from; `previous` itself when it
    names a time, or the quote gives none."""
    if PERIOD.search(previous.core):
        return previous
    quotes = quotes_in(previous_answer)
    if not quotes or unanswered_lead(previous_answer):
        return previous
    title = titled(quotes[0]) if titled is not None else ""
    in_title = _times_in(title)  # 'q3.md Sales review, Q3': one time
    times = in_title if len(in_title) == 1 else _times_in(quotes[0])
    if not times:
        return previous
    return replace(previous, core=f"{previous.core.rstrip(' ?.!')} in {times[0]}?")


def _times_in(text: str) -> list[str]:
    """The periods `text` names, each once, in its order, as questions write them ('Q3', '2022-23')."""
    return periods(text)


_NOT_COMPARATIVES = frozenset("other rather either neither whether never ever after under over water".split())
# 'the second one', 'and the first?', 'the other one': an ordinal standing for a thing, not 'the first woman'
_ORDINAL = re.compile(
    r"\b(?:the\s+)?(first|second|third|fourth|fifth|last|other|former|latter|1st|2nd|3rd|4th|5th)"
    r"(?:\s+one\b|(?=\s*(?:[?.!,;]|$)))",
    re.IGNORECASE,
)
_ORDINAL_INDEX = {"first": 0, "1st": 0, "former": 0, "second": 1, "2nd": 1, "latter": 1, "third": 2, "3rd": 2,
                  "fourth": 3, "4th": 3, "fifth": 4, "5th": 4, "last": -1}
# 'which of those is older?', 'which one burned less coal', 'which is bigger?' (not 'which engineer
# designed the bridge?', a question of its own)
_WHICH_OF = re.compile(
    r"^which(?:\s+one|\s+of\s+(?:those|these|them|the\s+two|both|the\s+three)"
    r"|(?=\s+(?:is|was|are|were)\s+\w+\s*[?.!]*$))\s+(.+?)\s*[?.!]*$",
    re.IGNORECASE,
)
_OPENING_NAME = re.compile(r"^(?:(The)\s+)?([A-Z][\w'\u2019-]*(?:\s+(?:of\s+)?[A-Z][\w'\u2019-]*)*)")
# an answer's quote and the number of the context block it was taken from ("…" [2])
QUOTE_AND_BLOCK = re.compile(r"\u201c(.+?)\u201d\s*\[(\d{1,4})\]")


def _listed(asked: Rewrite, answer: str) -> tuple[str, ...]:
    """What an answer lists, in its order, when it names two or more: the names its quoted sentences open
    with ('The Alder was ...', 'The Wren was ...'), in the quotes from its first quote's block, leaving
    out what the question named. () when it names fewer."""
    quoted = QUOTE_AND_BLOCK.findall(answer[:MAX_PREVIOUS_ANSWER_CHARS])
    if not quoted:
        return ()
    block = quoted[0][1]
    return _opening_names(asked, " ".join(quote for quote, position in quoted if position == block))


def _opening_names(asked: Rewrite, text: str) -> tuple[str, ...]:
    """The names the text's sentences open with, in reading order, but those the question named; () for
    fewer than two."""
    real = set(names_in(text))
    asked_names = {name.lower() for name in names_in(asked.core)}
    items: dict[str, str] = {}
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        match = _OPENING_NAME.match(sentence.strip())
        if match is None or match.group(2) not in real or match.group(2).lower() in asked_names:
            continue
        items.setdefault(match.group(2), f"the {match.group(2)}" if match.group(1) else match.group(2))
    return tuple(items.values()) if len(items) >= 2 else ()


def _cited_list(asked: Rewrite, answer: str, then: str, cited: Cited | None) -> tuple[str, ...]:
    """What a choice that follows an answer whose quotes named fewer than two things chooses among: the
    things its question named, when two or more ('Is the Alder older than the Wren?'); else the names
    opening the sentences of the passage its first quote was cited from ('Which ferries crossed the
    Ambry?' quoted only 'The Alder was ...', its passage goes on 'The Wren was ...'), in reading order.
    Looked up only when the next question makes a choice."""
    if cited is None or not _makes_choice(then):
        return ()
    named = [name for name in names_in(asked.core) if name.lower() not in MONTH_NAMES]  # 'in December' is no choice
    if len(named) >= 2:
        return tuple(f"the {name}" if re.search(rf"\bthe\s+{re.escape(name)}\b", asked.core) else name for name in named)
    quotes = quotes_in(answer[:MAX_PREVIOUS_ANSWER_CHARS])
    return _opening_names(asked, cited(quotes[0])) if quotes else ()


def _makes_choice(question: str) -> bool:
    """'the second one?', 'which of those is older?': a choice among what the last answer listed; 'what
    happened to those?' takes all of it."""
    bare = _without_conjunction(" ".join(question.split()))
    ordinal = _ORDINAL.search(bare)
    first = bool(ordinal and (ordinal.group(0).lower().startswith("the") or ordinal.start() == 0))
    return bool(_WHICH_OF.match(bare) or first or _THOSE.search(bare) or _THEY.search(bare))


def chooses(question: str, history: list[Turn]) -> bool:
    """Whether the question or one of the last ones the rewrite reads makes a choice ('the second one?')."""
    asked = [turn.content for turn in history[-4 * TURNS_CONSIDERED :] if turn.role == "user"]
    return any(_makes_choice(text[:MAX_TURN_CHARS]) for text in [*asked[-TURNS_CONSIDERED:], question])


def _chosen(question: str, listed: tuple[str, ...], previous_core: str) -> str | None:
    """'the second one?' -> 'Tell me about the Wren.', 'which of those is older?' -> 'Which is older, the
    Alder or the Wren?': a choice among what the conversation's last list named (`listed`). 'the other
    one' is the one the question before did not name. None when nothing was listed, or the question
    makes no such choice."""
    if not listed:
        return None
    bare = _without_conjunction(question)
    which = _WHICH_OF.match(bare)
    # 'which is older?', and 'which was first?' (an ordinal alone compares too)
    compares = which is not None and (subject_terms(which.group(1)) or _FIRST_OR_LAST.match(which.group(1)))
    if which is not None and compares and not names_in(bare):
        return _capitalised(f"which {which.group(1)}, {', '.join(listed[:-1])} or {listed[-1]}?")
    match = _ORDINAL.search(bare)
    if match is None or not (match.group(0).lower().startswith("the") or match.start() == 0):
        return None  # 'the second one', 'second one?'; not 'who came second?'
    word = match.group(1).lower()
    if word == "other":  # the one the question before did not name
        others = [item for item in listed if item.split()[-1].lower() not in words(previous_core)]
        if len(others) != 1:
            return None
        index = listed.index(others[0])
    else:
        index = _ORDINAL_INDEX[word]
    if index >= len(listed):
        return None
    chosen = listed[index]
    rest = (bare[: match.start()] + bare[match.end() :]).strip(" ?.!")
    if not rest or re.fullmatch(r"(?i:what|how)\s+about", rest):
        return f"Tell me about {chosen}."
    return _capitalised(bare[: match.start()] + chosen + bare[match.end() :])


# 'what happened to those?', 'were these ever sold?', 'did those carry cattle?': 'those' standing alone
# (at the end, or before a verb), not a determiner ('those ferries')
_THOSE = re.compile(
    r"\b(?:those|these)\b(?=\s*(?:[?.!,]|$)|\s+(?:were|are|was|is|did|do|does|have|had|ever|still|all|both|"
    r"carried|carry|sold|built|launched|used)\b)",
    re.IGNORECASE,
)


# 'Which ferries crossed the Ambry?', 'What ferries were there?': a question asking for several things
_ASKS_FOR_SEVERAL = re.compile(
    r"^(?:which|what)\s+(?:(?!(?:is|was|does|has)\b)[a-z]+\s+)?(?!(?:is|was|does|has)\b)[a-z]+s\b", re.IGNORECASE
)
_THEY = re.compile(r"\b(?:they|them)\b", re.IGNORECASE)


def _all_of_those(question: str, listed: tuple[str, ...], previous_core: str = "") -> str | None:
    """'Which ferries crossed the Ambry?' then 'what happened to those?' -> 'What happened to the Alder
    and the Wren?': a 'those'/'these' standing alone means everything the last list named, and so does
    'they'/'them' right after a question asking for several things ('when were they launched?'). None
    without a list of two or more, or without such a word."""
    bare = _without_conjunction(question)
    match = _THOSE.search(bare) or (_THEY.search(bare) if _ASKS_FOR_SEVERAL.match(previous_core) else None)
    if len(listed) < 2 or match is None:
        return None
    every = f"{', '.join(listed[:-1])} and {listed[-1]}"
    return _capitalised(bare[: match.start()] + every + bare[match.end() :])


_THE_OTHER = re.compile(
    r"^(?:(?:no|nope|sorry|oops|ok|okay)\b[\s,.!]*)*(?:i\s+meant?\s+)?(?:(?:and|or|but|now)\s+)?"
    r"(?:(?:can|could)\s+you\s+)?(?:please\s+)?(?:(?:check|try|search|see|look\s+(?:in|at|through))\s+)?"
    r"(?:(?:what|how)\s+about\s+)?(?:(?:in|from|for|of|with)\s+)?the\s+"
    r"(other|first|second|third|fourth|fifth|last|1st|2nd|3rd|4th|5th)\s+([a-z]+)\s*[?.!]*$",
    re.IGNORECASE,
)
# 'the other file' after 'What did the 2019 report recommend?': a word for any document is that report
_A_DOCUMENT = {"one", "file", "document", "doc", "pdf"}
# the words for a document a question may name one by ('the second report', 'the other survey')
DOCUMENT_NOUNS = ("report", "document", "file", "paper", "survey", "study", "book", "article", "version", "edition")
# 'same for the 2019 report', 'the same question for 2019?': the last question about another thing
_SAME_FOR = re.compile(
    r"^(?:(?:and|or|but|so)\s+)?(?:the\s+)?same\s+(?:question\s+|thing\s+)?(?:for|about|with|in|of)\s+(.+?)\s*[?.!]*$",
    re.IGNORECASE,
)


def _same_for(question: str) -> str:
    """'same for the 2019 report' -> 'what about the 2019 report?': read as the 'what about' it means, so
    the last question is asked again of that thing (another year, 'the other report', a numbered one)."""
    match = _SAME_FOR.match(question)
    return f"what about {match.group(1)}?" if match else question


_IT = re.compile(r"\b(?:it|this|that)(?=\s*[?.!]*$)", re.IGNORECASE)


_PLACE_WORD = r"first|second|third|fourth|fifth|last|1st|2nd|3rd|4th|5th|\d[\d,.]*"
# 'and the second one?', 'no, I meant the 1902 one' (as `_as_what_about` leaves them): a thing by its place
_PLACED_ONE = re.compile(rf"^(?:what\s+about\s+)?the\s+({_PLACE_WORD})\s+one\s*[?.!]*$", re.IGNORECASE)
# 'the first bridge', 'the 1888 bridge': the last question's thing by its place or number
_PLACED_THING = re.compile(rf"\bthe\s+({_PLACE_WORD})\s+(?=[a-z])(?!one\b)", re.IGNORECASE)


def _reordered(question: str, previous: Rewrite) -> str | None:
    """'Who built the first bridge?' then 'and the second one?' (or 'no, I meant the 1902 one') -> 'Who
    built the second bridge?': the last question with its placed or numbered thing placed anew; after 'Who
    designed it?' leaning on 'When was the first bridge built?', its 'it' becomes 'the second bridge'.
    Before, 'the second one' was searched as 'What about the second one?' and quoted the first bridge.
    None when the question is no such 'one', or nothing before it was placed or numbered."""
    asked = _PLACED_ONE.match(question)
    if asked is None:
        return None
    place = asked.group(1)
    old = _PLACED_THING.search(previous.core)
    if old is not None:
        if old.group(1).lower() == place.lower():
            return None
        return _capitalised(previous.core[: old.start(1)] + place + previous.core[old.end(1) :])
    earlier = _PLACED_THING.search(previous.context)
    it = _IT.search(previous.core)
    if earlier is None or it is None:
        return None
    head = re.match(r"[a-z]+", previous.context[earlier.end() :], re.IGNORECASE)
    if head is None:
        return None
    return _capitalised(f"{previous.core[: it.start()]}the {place} {head.group(0)}{previous.core[it.end() :]}")


def _the_other(question: str, previous: Rewrite) -> str | None:
    """'What did the 2019 report recommend?' then 'no, the other report' (or 'the other one', 'and the
    other one?') -> 'What did the other report recommend?'; after 'Who wrote it?' about that report ->
    'Who wrote the other report?': the last question with its numbered thing ('the 2019 report'), or its
    closing 'it' when the question before numbered one, called 'the other' ('the other one', 'in the
    other file': any word for a document is that thing); 'and the first one?' after a numbered document
    is 'What did the first report recommend?'. The engine then asks 'the other report' of the documents
    the last answer did not quote and 'the first report' of that document (`Engine._nth_document`), as
    'What did it recommend?' (`Engine._followed_document`). None when no list is being chosen from and
    the questions number nothing."""
    match = _THE_OTHER.match(question)
    if match is None:
        return _the_other_inside(question, previous)
    which, word = match.group(1).lower(), match.group(2).lower()
    numbered = _NUMBERED_THING.search(previous.core)
    if numbered is not None:
        head = re.match(r"\s*([a-z]+)", previous.core[numbered.end() :], re.IGNORECASE)
        if head is None or not _names_the_document(which, word, head.group(1).lower()):
            return None
        end = numbered.end() + head.end()
        before = previous.core[: numbered.start()]
        return _capitalised(f"{before}the {which} {head.group(1)}{previous.core[end:]}")
    earlier = _NUMBERED_THING.search(previous.context)
    it = _IT.search(previous.core)
    head = re.match(r"\s*([a-z]+)", previous.context[earlier.end() :], re.IGNORECASE) if earlier else None
    if it is None or head is None or not _names_the_document(which, word, head.group(1).lower()):
        return _in_the_other(which, word, previous) if earlier is None else None
    return _capitalised(f"{previous.core[: it.start()]}the {which} {head.group(1)}{previous.core[it.end() :]}")


def _in_the_other(which: str, word: str, previous: Rewrite) -> str | None:
    """'What did Ines Calloway recommend?' then 'and what about the other report?' -> 'What did Ines
    Calloway recommend in the other report?': the last question, which numbered no document, asked again
    of the document 'the other report' (or 'the second file') means; the engine moves it there and reads
    a name only the last answer's document holds as that document ('What did it recommend?',
    `Engine._followed_document`). None for 'the other one' (the other person or thing as well) or a word
    for no document."""
    noun = "document" if word in ("doc", "pdf") else word
    if noun not in (*DOCUMENT_NOUNS, "document") or not subject_terms(previous.core):
        return None
    bare = previous.core.rstrip(" ?.!")
    return f"{_capitalised(bare)} in the {which} {noun}?"


_OTHER_INSIDE = re.compile(r"\bthe\s+other\s+([a-z]+)\b", re.IGNORECASE)
# 'and the other one?', 'the other?', 'what does the other one say?', 'check the other upload': 'the other'
# with no word for what it is, or a word for any upload; the engine reads it as 'the other document' when
# the last answer quoted one of the knowledge base's documents (`Engine._other_one`)
_OTHER_ONE = re.compile(r"\bthe\s+other(?:\s+(?:one|upload|attachment|source|text|link))?\b", re.IGNORECASE)
_AROUND_THE_OTHER = frozenset(
    """and or but so ok okay no i meant mean what about how in from of for with does do did say says said
    tell me check try look at through see search please the there it then""".split()
)


def says_the_other(text: str) -> bool:
    """Whether a rewrite still says 'the other (one)': it found no other one among what was listed."""
    return _OTHER_ONE.search(text) is not None


def other_one_as_document(question: str) -> str | None:
    """'and the other one?' -> 'and the other document?': a follow-up that asks only after 'the other' (one,
    upload, attachment; every other word one of asking: 'what does the other one say?'), with 'the other
    document' in its place, which the rewrite asks the last question of (`_in_the_other`); None for any
    other question ('the other keeper', 'who was the other one elected with?')."""
    match = _OTHER_ONE.search(question)
    if match is None:
        return None
    rest = re.findall(r"[a-z']+", (question[: match.start()] + " " + question[match.end() :]).lower())
    if not set(rest) <= _AROUND_THE_OTHER:
        return None
    return f"{question[: match.start()]}the other document{question[match.end() :]}"


def _the_other_inside(question: str, previous: Rewrite) -> str | None:
    """'What did the 2023 report recommend?' then 'and what did the other one say?' -> 'What did the other
    report say?': a question of its own whose 'the other one' (or 'the other file') stands for the
    document the last question, or the question it leaned on, numbered. None when it has no such words
    or nothing was numbered."""
    inside = _OTHER_INSIDE.search(question)
    numbered = _NUMBERED_THING.search(previous.core) or _NUMBERED_THING.search(previous.context)
    if inside is None or numbered is None:
        return None
    head = re.match(r"\s*([a-z]+)", numbered.string[numbered.end() :], re.IGNORECASE)
    if head is None or head.group(1).lower() not in DOCUMENT_NOUNS:
        return None  # 'the other one' after 'When did the 3 pm ferry leave?' is the context's to say
    if inside.group(1).lower() not in (*_A_DOCUMENT, head.group(1).lower()):
        return None
    bare = _without_conjunction(question)
    return _capitalised(_OTHER_INSIDE.sub(f"the other {head.group(1)}", bare, count=1))


def _names_the_document(which: str, word: str, head: str) -> bool:
    """Whether 'the other one' / 'the second file' stands for the last question's numbered `head` ('the
    2019 report'): its word is that head or any word for a document; an ordinal ('the first one') only
    for a document, whose place the engine knows ('the first ferry' is no such place)."""
    return word in (*_A_DOCUMENT, head) and (which == "other" or head in DOCUMENT_NOUNS)


# 'and in 2019?', 'what about Q1?', 'no, I meant in 2019', 'and the year before?': the last question
# again for another time
_ANOTHER_TIME = re.compile(r"^(?:(?:and|or|but|so)\s+)?(?:(?:what|how)\s+about\s+)?(.+?)\s*[?.!]*$", re.IGNORECASE)


# 'in January', 'and march', 'on 26 December', 'what about Dec', 'for version 3.1.0', 'v2.4': the label a
# follow-up gives alone ('May' only with a preposition or a day: 'and May?' may be a person)
_A_LABEL = re.compile(
    r"^(?:(?:(?:in|for|during|of|from|on)\s+)?(?:the\s+)?(?:(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?)?"
    rf"(?:(?P<month>{MONTH_WORD})\b\.?"
    r"(?:\s+(?P<day_after>\d{1,2})(?:st|nd|rd|th)?\b)?"
    r"|(?:(?:version|release|v)\s*\.?\s*)?(?P<version>\d+(?:\.\d+)+)))$",
    re.IGNORECASE,
)
# a month in the last question, with the day and year that go with it ('on 2 September', 'March 3rd, 2024')
_MONTH_IN_CORE = re.compile(
    rf"\b(?:(?:on|in|during)\s+)?(?:the\s+)?(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?)?(?P<month>{MONTH_NAME})"
    rf"(?:\s+\d{{1,2}}(?:st|nd|rd|th)?\b)?(?P<year>,?\s+(?:1[0-9]{{3}}|20[0-9]{{2}})\b)?",
    re.IGNORECASE,
)
# a version number the last question names: after 'version', 'release' or 'v', or with two dots ('3.0.0')
_VERSION_IN_CORE = re.compile(
    r"(?:\b(?:version|release|v)\s*\.?\s*)(\d+(?:\.\d+)+)\b|(?<![\d.])(\d+\.\d+\.\d+(?:\.\d+)*)(?![\d.])",
    re.IGNORECASE,
)


def _at_another_label(target: str, core: str) -> str | None:
    """'How did the Rovers do in October?' then 'and in January?' -> 'How did the Rovers do in January?';
    'What changed in version 3.0.0?' then 'and 3.1.0?' -> 'What changed in version 3.1.0?': the last
    question with its one month (its day and year with it: 'on 2 September' -> 'in December') or its one
    version number put back to the one the follow-up gives. None when the follow-up gives neither, or the
    last question has no one such label to replace (a month after a question of a year alone is a new
    question). 'May' counts only after a preposition: 'and May?' may ask about a person."""
    match = _A_LABEL.match(target.strip())
    if match is None:
        return None
    if match.group("version"):
        versions = list(_VERSION_IN_CORE.finditer(core))
        if len({found.group(1) or found.group(2) for found in versions}) != 1:
            return None
        new = match.group("version")
        return _VERSION_IN_CORE.sub(lambda found: found.group(0).replace(found.group(1) or found.group(2), new), core)
    asked = match.group("month").lower().rstrip(".")
    day = match.group("day") or match.group("day_after")
    if asked == "may" and not (day or match.group(0).split()[0].lower() in ("in", "for", "during", "of", "from", "on")):
        return None  # 'and May?' may be a person
    month = MONTH_NAMES[MONTH_NUMBERS[asked[:3]] - 1].capitalize()
    # 'may' of 'the tenant may keep a cat' is no month: only with a preposition, a day or a year
    months = [found for found in _MONTH_IN_CORE.finditer(core) if not _verb_may(found)]
    if len({found.group("month").lower() for found in months}) != 1:
        return None
    if not day and months[0].group("month").lower() == month.lower():
        return None  # 'and in December?' after '9 December' asks nothing new: a question of its own
    put = _MONTH_IN_CORE.sub(lambda found: _month_put(found, f"{day} {month}" if day else month, bool(day)), core)
    return put if put != core else None


def _month_put(found: re.Match[str], month: str, dated: bool = False) -> str:
    """The new month (or day and month, `dated`) in place of a date ('on 2 September' -> 'in December' or
    'on 26 December', 'October' -> 'January'); a 'may' that is a verb stays."""
    if _verb_may(found):
        return found.group(0)
    year = found.group("year") or ""  # 'in March 2024' -> 'in May 2024'
    placed = found.group(0).split()[0].lower() in ("on", "in", "during")
    return (f"{'on' if dated else 'in'} {month}" if placed else month) + year


def _verb_may(found: re.Match[str]) -> bool:
    """'may' alone, with no preposition, day or year: the verb ('the tenant may keep a cat')."""
    return found.group(0).lower() == "may"


def _another_time(question: str, previous: Rewrite, labelled: Labelled | None = None) -> Rewrite | None:
    """'What did the 2021 report recommend?' then 'and in 2019?' -> 'What did the 2019 report
    recommend?': a follow-up that gives only a year or a quarter ('and Q1?'), or the one before ('and
    the previous quarter?', 'what about the year before?'), after 'and', 'what about', a correction,
    'in' or 'for', asks the last question again with that time in place of the one year or quarter it
    named (`_at_another_time`); a time counted from another ('the year before') counts from `labelled`'s
    when the last question named none (`_labelled`). None when neither names one such time."""
    corrected = _CORRECTION.match(question)
    match = _ANOTHER_TIME.match(corrected.group(1) if corrected else question)
    if match is None:
        return None
    if _A_TIME.match(match.group(1)) is None:
        core = _at_another_label(match.group(1), previous.core)
        return Rewrite(core, subject=previous.subject) if core is not None else None
    before = previous
    core = _at_another_time(match.group(1), previous.core)
    if core is None and labelled is not None and _counted_from(match.group(1)):
        before = labelled()
        core = _at_another_time(match.group(1), before.core)  # 'and the year before?' of the figure's year
    return Rewrite(core, subject=previous.subject, asked_before=before.core) if core is not None else None


def _which_of_two(question: str, previous: Rewrite, previous_answer: str) -> Rewrite | None:
    """'which year was higher?' after the figures of two years or quarters: the last question of one time,
    with the same question of the other as its context, as 'was that more than in 2020?' is searched, so
    the answer quotes both figures and names the higher (`compared.chosen`). The two times are the last
    comparison's ('was that more than in Q1?'), the last question's and the one 'and in 2020?' swapped it
    for, or two the last answer's first quote gives ('Revenue in 2021 was 4.2 million, against 3.6 million
    in 2020'). None for any other question, or when no two times are at hand."""
    if which_more(question) is None:
        return None
    for other in (previous.context, previous.asked_before):
        if other and compared_times(previous.core, other) is not None:
            return Rewrite(previous.core, _cut(other), subject=previous.subject)
    quotes = quotes_in(previous_answer)
    given = _times_in(quotes[0]) if quotes else []
    asked = periods(previous.core)
    if len(given) < 2 or len(asked) > 1 or (asked and asked[0] not in given[:2]):
        return None
    first, second = (asked[0], next(t for t in given[:2] if t != asked[0])) if asked else given[:2]
    bare = PERIOD.sub(first, previous.core) if asked else f"{previous.core.rstrip(' ?.!')} in {first}?"
    return Rewrite(bare, PERIOD.sub(second, bare), subject=previous.subject)


def _counted_from(target: str) -> bool:
    """Whether a time is counted from another ('the year before', 'next quarter'), not named ('2019')."""
    match = _A_TIME.match(target.strip())
    return match is not None and not match.group("period")


SWAPPED_WORDS = 4  # the most words of a thing one question puts in place of the last one's


_QUESTION_OPENERS = frozenset("who whom whose what which when where why how is are was were do does did can could".split())


def _swap_pair(before: Rewrite | None, after: Rewrite) -> tuple[str, ...]:
    """'When did the Alder launch?' then 'and the Wren?' (searched as 'When did the Wren launch?'): the
    two things the same question was asked of, for a choice after them ('which was first?' -> 'Which was
    first, the Alder or the Wren?'); () when the two questions differ in more than one thing, or in a
    number, a pronoun, or words that are no thing (neither after an article nor a name)."""
    if before is None:
        return ()
    old, new = before.core.rstrip(" ?.!").split(), after.core.rstrip(" ?.!").split()
    opcodes = [op for op in SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(opcodes) != 1 or opcodes[0][0] != "replace":
        return ()
    _, i1, i2, j1, j2 = opcodes[0]
    if i2 - i1 > SWAPPED_WORDS or j2 - j1 > SWAPPED_WORDS:
        return ()
    pair = []
    for tokens, start, end in ((old, i1, i2), (new, j1, j2)):
        span = tokens[start:end]
        if any(word.isdigit() or word.lower() in PERSON_PRONOUNS | OTHER_ANAPHORA for word in span):
            return ()
        article = tokens[start - 1] if start and tokens[start - 1].lower() in ("the", "a", "an") else ""
        if not article and not span[0][:1].isupper():
            return ()  # 'When did the Alder sink?' after '... launch?': a verb, no thing
        if not article and start == 0 and not _opens_with_name(tokens):
            return ()  # 'In one sentence' after 'Say more': a question's first word has its capital anyway
        if span[0].lower() in _QUESTION_OPENERS:
            return ()  # 'How many goals?' after 'Who was top scorer?': another question, no thing swapped
        pair.append(" ".join([article.lower(), *span] if article else span))
    return tuple(pair)


def _opens_with_name(tokens: list[str]) -> bool:
    """Whether a question's first word opens a proper name ('Margaret Hale left when?'), not a word
    capitalised only for opening it ('Say more')."""
    return any(name.split()[0] == tokens[0] for name in names_in(" ".join(tokens)))


_FIRST_OR_LAST = re.compile(
    r"^(?:(?:is|was|are|were|came)\s+)?(?:the\s+)?(?:first|last|earliest|latest)$", re.IGNORECASE
)


def _without_conjunction(question: str) -> str:
    """'and when did she leave?' -> 'when did she leave?' (the conjunction only tied it to the last turn)."""
    stripped = re.sub(r"^(?:and|but|so|also|or)\b[\s,]*", "", question, flags=re.IGNORECASE)
    return stripped or question


class Onward(Enum):
    """What a follow-up that names nothing asks of the last answer ("why?", "and then?", "tell me more",
    "for example?", "is that true?"): new material about the same passage, never its quote again."""

    REASON = "reason"  # why it was so: a sentence giving a cause or a purpose
    NEXT = "next"  # what happened after: the sentences that follow the quote in its document
    BEFORE = "before"  # what happened before: the sentences just before the quote in its document
    MORE = "more"  # more of the same: sentences near the quote not quoted yet
    OTHERS = "others"  # who else: sentences on the same subject naming someone the last answer did not
    EXAMPLE = "example"  # an instance: a sentence giving an example
    CHECK = "check"  # whether it is so: the last answer checked against the documents


# An answer to these quotes a later (or earlier) event or an instance: the conversation goes on from it
# (after a reason, more of the same, other people or a check it is still about the question before them).
MOVED_ON = frozenset((Onward.NEXT, Onward.BEFORE, Onward.EXAMPLE))
# These keep their pronouns ('what else did he do?'): spelled out, they would no longer read as asked of
# the last answer's passage
KEPT_AS_ASKED = frozenset((Onward.BEFORE, Onward.MORE, Onward.OTHERS))
_ONWARD_FILLER = re.compile(
    r"^(?:(?:and|so|but|ok|okay|hmm+|um+|uh+|well|oh|right|sorry|wait|please|pls)\b[\s,.!]*)+(?=\w)"
    r"|\s(?:please|pls|plz)\s*$",
)
_THAT = r"(?:that|this|it)"
_THEN = r"(?:that|this|it|then|all that|all this)"
# Each request's phrasings, white space written as a space (read as any run of it).
_ONWARD_PHRASES: dict[Onward, tuple[str, ...]] = {
    Onward.CHECK: (
        rf"(?:is|was|isn't|wasn't) {_THAT} (?:really )?(?:true|right|correct|accurate|so|a fact)",
        rf"(?:(?:are|r) )?(?:you|u) (?:really )?(?:sure|certain)(?: about {_THAT})?",
        r"really|true|for real|seriously|says who|is that really so",
        rf"how do you know(?: {_THAT})?",
        rf"(?:can|could) you (?:confirm|verify|check|double check)(?: {_THAT})?",
        r"(?:is|are) (?:that|this|these|those) (?:facts?|right|correct)",
        # asked of the last answer with a question mark ("that's right?", "right?", "correct?"); without
        # one they agree (smalltalk._AGREEING), and the mark is what `small_talk_act` tells them apart by
        rf"(?:so )?(?:{_THAT} ?'?s|{_THAT} (?:is|was)|thats|its|{_THAT}) (?:really |actually |definitely )?"
        r"(?:true|right|correct|accurate|so|the case|a fact)",
        r"right|correct|accurate|exactly|indeed|true or (?:false|not)|is it|was it|is it (?:really )?so",
        rf"(?:is|was) {_THAT} (?:really )?the case|(?:isn't|wasn't) (?:it|that|this)(?: (?:so|right|true|correct))?",
        rf"(?:is|was) {_THAT} not (?:so|right|true|correct|the case)|(?:right|correct|true),? (?:isn't|is) (?:it|that)",
    ),
    Onward.REASON: (
        r"why|why (?:so|not|is that|was that|'s that)|why's that",
        rf"why did {_THAT} happen|how so|how come|for what reason|what (?:is|was|'s) the reason",
        rf"what (?:caused|made) {_THAT}(?: happen)?",
        r"in what way|in which way|on what grounds|what for|because of what|(?:the |what )?reasons?",
    ),
    # before NEXT: 'what happened before that?' is no 'what happened?'
    Onward.BEFORE: (
        rf"before(?: {_THEN})?(?: what(?: happened)?)?|earlier(?: on)?|previously|prior to {_THEN}|and before(?: {_THEN})?",
        rf"what (?:happened|came|comes|happens|went on|had happened|was there|occurred|did (?:he|she|they|it|we|you)"
        rf" do)(?: just)? (?:before|earlier|previously|prior to)(?: {_THEN})?",
        rf"what (?:preceded|led up to|came before) {_THEN}|what (?:preceded|came before)",
        rf"(?:what|how) about (?:before|earlier)(?: {_THEN})?|(?:and )?what (?:was|happened) (?:before|earlier)(?: {_THEN})?",
    ),
    Onward.NEXT: (
        r"then(?: what(?: happened)?)?|what then|what next|next|after|after that|afterwards|and after(?: that)?",
        r"what (?:happened|came|comes|happens|followed)(?: (?:next|then|after(?: that| this)?|afterwards|later))?",
        r"what did (?:he|she|they|it|we|you) do (?:next|then|after that|afterwards|later)",
        r"and what happened(?: (?:next|then))?|what happened to (?:him|her|them|it) (?:next|then|after)",
        rf"later(?: on)?|and later|and next|what now|and after {_THEN}|what (?:comes|came|happened) after {_THEN}",
        rf"(?:what|how) about after(?: {_THEN})?|what (?:happens|happened) (?:later|later on|after)",
    ),
    Onward.EXAMPLE: (
        r"such as|for (?:example|instance)|like what|like|e\.?\s*g\.?|examples?|an example|any examples?",
        r"(?:(?:can|could) you )?give (?:me )?(?:an? |some )?examples?",
        r"what (?:kind|sort) of things?|which ones",
    ),
    Onward.MORE: (
        r"(?:(?:can|could|would|will) you )?(?:tell me more|say more|elaborate|expand|explain|go on|continue"
        r"|keep going|go ahead|give (?:me )?more(?: details?)?)(?: (?:on|about))?"
        r"(?: (?:that|this|it|them|him|her|more|further|please))*",
        r"more|more (?:details?|info|information|please)|(?:any )?(?:more )?details?|in detail",
        rf"what do you mean(?: by that)?|what does {_THAT} mean|meaning|and|what else|anything else",
        r"(?:and )?(?:what|anything|something) else(?: (?:happened|is there|was there|is known|to know|worth knowing"
        r"|(?:does|did) (?:it|that|this|the (?:document|text|story|book)|(?:the )?documents?) say|do (?:they|the documents) say"
        r"|can you tell me|do you know|did (?:he|she|they|it|we|you) do|did (?:he|she|they) say|(?:he|she|they) did))?",
        r"where else|when else|how else|is that all|is that it|that's all|(?:is there )?anything more|is there more",
        r"(?:any |what |which )?others|(?:any|what|which) other (?:ones?|things?|places?|events?)|(?:any )?more of (?:that|those|them)",
    ),
    Onward.OTHERS: (
        r"(?:and )?who else(?: (?:was there|was involved|is there|was|is|did|does|do|has|had|could|can))?",
        r"(?:and )?(?:any|some) ?(?:one|body) else(?: (?:involved|there|at all|mentioned|named))?",
        r"(?:any|what|which) other (?:people|persons?|characters?|names?|ones? involved)|who other",
    ),
}
# The same requests in the languages `language.py` tells by their words, written without accents (a
# follow-up is matched with its accents left off: 'después', 'despues'), each after an optional 'and'.
_AND = r"(?:(?:et|y|e|und|en|i|a|oraz) )?"
_ONWARD_ELSEWHERE: dict[Onward, tuple[str, ...]] = {
    Onward.REASON: (
        rf"{_AND}(?:pourquoi(?: (?:ca|cela))?|por ?que|porque|warum|wieso|weshalb|perche|waarom|dlaczego)",
    ),
    Onward.BEFORE: (
        rf"{_AND}(?:avant(?: (?:ca|cela))?|antes(?: de (?:eso|esto))?|antes disso|davor|vorher|zuvor|prima"
        rf"(?: di (?:questo|allora|cio))?|daarvoor|ervoor|wczesniej|przedtem)",
        r"(?:que s'est-il passe|qu'est-ce qui s'est passe|que paso|was (?:geschah|passierte)|cosa e successo"
        r"|che cosa e successo|o que aconteceu|wat gebeurde er) (?:avant|antes|davor|vorher|prima|daarvoor)",
    ),
    Onward.NEXT: (
        rf"{_AND}(?:ensuite|apres(?: (?:ca|cela))?|puis|alors|despues(?: de (?:eso|esto))?|luego|entonces"
        rf"|dann|danach|weiter|poi|dopo(?: di che)?|quindi|allora|depois(?: disso)?|entao|toen|daarna"
        rf"|potem|i co dalej|co dalej)",
        r"(?:que s'est-il passe|qu'est-ce qui s'est passe|que paso|y que paso|was (?:geschah|passierte)"
        r"|cosa e successo|che cosa e successo|o que aconteceu|wat gebeurde er)"
        r" (?:ensuite|apres|despues|luego|dann|danach|poi|dopo|depois|daarna|toen|potem)",
    ),
    Onward.OTHERS: (
        rf"{_AND}(?:qui d'autre|quelqu'un d'autre|quien mas|alguien mas|wer (?:noch|sonst|sonst noch|noch alles)"
        rf"|noch jemand|sonst noch jemand|chi altro|chi altri|qualcun altro|quem mais|mais alguem"
        rf"|wie (?:nog|nog meer|anders)|iemand anders|kto jeszcze|ktos jeszcze)",
    ),
    Onward.MORE: (
        rf"{_AND}(?:quoi d'autre|autre chose|quoi encore|que mas|algo mas|was (?:noch|sonst|sonst noch|noch alles)"
        rf"|sonst noch etwas|sonst noch was|mehr|cos'altro|cosa altro|che altro|qualcos'altro|altro|o que mais"
        rf"|que mais|mais alguma coisa|wat (?:nog|nog meer|anders)|verder|co jeszcze|cos jeszcze)",
    ),
}
_ONWARD_PATTERNS = tuple(
    (kind, re.compile("^(?:" + "|".join(phrases).replace(" ?", r"\s*").replace(" ", r"\s+") + ")$"))
    for phrasings in (_ONWARD_PHRASES, _ONWARD_ELSEWHERE)
    for kind, phrases in phrasings.items()
)
# Words of these requests, so a typo ('elabroate', 'exmaple', 'hapened') still reads as the request.
_ONWARD_WORDS = frozenset(
    """tell more elaborate explain example examples instance happened happen next true sure really reason
    expand details detail continue certain correct afterwards meaning confirm verify before earlier else
    previously""".split()
)
_ONWARD_BY_LETTER: dict[str, tuple[str, ...]] = {
    letter: tuple(sorted(word for word in _ONWARD_WORDS if word[0] == letter)) for letter in {w[0] for w in _ONWARD_WORDS}
}
ONWARD_MAX_WORDS = 8
SAME_WORD_SIMILARITY = 0.8


@functools.lru_cache(maxsize=256)
def onward_ask(question: str) -> Onward | None:
    """What a follow-up naming nothing of its own asks of the last answer, or None (a question with a
    subject of its own, 'why did the Heron sink?', is a question). Lower case, no question mark, a
    filler before it ('ok so why?') and a typo in its key word all read the same. Remembered: a
    rewrite asks it of each earlier question of the conversation again."""
    text = re.sub(r"[?!.…,;:¿¡]+", " ", _without_accents(question.lower().replace("’", "'")))
    tokens = text.split()
    if not tokens or len(tokens) > ONWARD_MAX_WORDS:
        return None
    found = _onward_of(" ".join(tokens))
    if found is None:
        respelled = [_as_onward_word(token) for token in tokens]
        found = _onward_of(" ".join(respelled)) if respelled != tokens else None
    return found


def _without_accents(text: str) -> str:
    """'después' -> 'despues', 'perché' -> 'perche': a follow-up reads the same typed either way."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def _onward_of(text: str) -> Onward | None:
    text = _ONWARD_FILLER.sub("", text).strip() or text
    return next((kind for kind, pattern in _ONWARD_PATTERNS if pattern.match(text)), None)


def _as_onward_word(token: str) -> str:
    """The request word a token misspells ('elabroate' -> 'elaborate'), else the token. A typo keeps the
    word's first letter here, which keeps this to a few comparisons a word."""
    if len(token) < 4 or token in _ONWARD_WORDS or token in STOPWORDS:
        return token
    for word in _ONWARD_BY_LETTER.get(token[0], ()):
        close = abs(len(word) - len(token)) <= 2
        if sorted(token) == sorted(word) or (close and SequenceMatcher(None, token, word).ratio() >= SAME_WORD_SIMILARITY):
            return word  # two letters swapped, or one or two letters off
    return token


def is_fresh(question: str, conversation: str) -> bool:
    """Stands on its own: no pronoun pointing back, no leading 'and/what about', not a bare 'why?';
    and it names something (a name, a year, a number) the conversation has not, or asks about two or
    more things none of which the conversation mentions ('How long are the loaves baked?')."""
    tokens = words(question)
    if not tokens or _continues(tokens) or _points_back(question) or onward_ask(question) is not None:
        return False
    mentioned = set(words(conversation))
    own = [name.lower() for name in names_in(question)] + _numbers(question)
    if any(not set(words(name)) <= mentioned for name in own):
        return True
    subject = {stem(t) for t in subject_terms(question)}
    return len(subject) >= 2 and not subject & {stem(t) for t in mentioned}


# A question that opens with these leans on the last turn only when it names nothing itself:
# "why?", "really?", but not "Why do more students tune into Mark's show?".
WEAK_CONTINUATIONS = frozenset(("why", "how come", "really"))


def _continues(tokens: list[str]) -> bool:
    text = " ".join(tokens)
    for c in CONTINUATIONS:
        if text == c or text.startswith(c + " "):
            return c not in WEAK_CONTINUATIONS or not subject_terms(text)
    return False


def subject_terms(question: str) -> list[str]:
    """The question's content words that name its subject (not "how long", "tell me more")."""
    return [t for t in content_terms(question) if t not in QUESTION_VOCABULARY]


# Words a question about a whole text uses without naming anything in it.
WHOLE_TEXT_VOCABULARY = frozenset(
    """whole entire document documents text texts file files book books story stories paper papers article
    articles report reports chapter chapters essay piece content contents material upload overview
    overviews summary summaries summarize summarise summarizing summarising summarized summarised gist
    theme themes main key central overall major general idea ideas point points message messages topic
    topics subject plot moral argument arguments cover covers covered describe outline brief short
    nutshell give tl dr tldr""".split()
)


def asks_about_the_whole(question: str) -> bool:
    """A thematic question that names nothing in particular: 'what is this document about?', 'give me an
    overview', 'what is the plot of the story?' (not 'summarise the viaduct's cost'). A rewritten
    follow-up counts when it and the question it leans on name nothing ('tell me more' after 'what is
    this document about?')."""
    standalone = split_standalone(question)
    parts = [standalone.core, standalone.context] if standalone.context else [standalone.core]
    if not any(THEMATIC.search(part) for part in parts):
        return False
    return not any(t not in WHOLE_TEXT_VOCABULARY for part in parts for t in subject_terms(part))


def _points_back(question: str) -> bool:
    """A pronoun or demonstrative that needs an antecedent ('this station' names its own subject; 'the
    meeting ... and who chaired it?' names what its 'it' means)."""
    tokens = words(question)
    for i, token in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token in ("it", "its", "itself") and _named_before(tokens[:i]):
            continue
        if token in PERSON_PRONOUNS or token in ("it", "its", "itself", "former", "latter"):
            return True
        if token == "there" and not _existential(tokens[i - 1] if i else "", following):
            return True
        if token in ("that", "this", "these", "those", "then", "same") and (
            not following or following in STOPWORDS
        ):
            return True
    return False


_CLAUSE_JOINS = frozenset(("and", "but", "or"))


def _named_before(tokens: list[str]) -> bool:
    """Whether an earlier clause of the same question names a thing ('the meeting', 'a shed') that an
    'it' after 'and'/'but'/'or' can mean: 'How many were at the meeting and who chaired it?' asks of the
    meeting, not of the last answer."""
    joins = [j for j, token in enumerate(tokens) if token in _CLAUSE_JOINS]
    if not joins:
        return False
    before = tokens[: joins[-1]]
    return any(
        token in ("the", "a", "an") and j + 1 < len(before) and before[j + 1] not in STOPWORDS
        for j, token in enumerate(before)
    )


def _numbers(text: str) -> list[str]:
    return re.findall(r"\b\d+\b", text)


def names_in(text: str) -> list[str]:
    """Proper names in order of appearance: runs of capitalised words ('Margaret Hale', 'Bay of Fundy').

    A run never starts with a common word ('The', 'Who', 'In'), and a one-word name counts only if
    it is capitalised somewhere mid-sentence, where capitals mean a name rather than a sentence start.
    One pass over the text: a word over MAX_NAME_WORD_CHARS characters is no name, and a run is cut
    after MAX_NAME_WORDS words, so a flood of capitals costs no more than ordinary prose.
    """
    return [name.text for name in _scan_names(text)]


@dataclass(frozen=True)
class _Name:
    text: str
    after_the: bool  # written right after a lower-case 'the' ('the Margaret Ellen'): a thing or a people


@functools.lru_cache(maxsize=64)
def _scan_names(text: str, named: frozenset[str] = frozenset()) -> tuple[_Name, ...]:
    """`names_in`'s names, each with what the word before it says about it; linear in the text, and
    remembered, as one rewrite reads each question and answer several times. `named`: words the rest of
    the conversation uses as names (`used_as_names`), so one opening a sentence here is a name too."""
    found, mid_sentence = _scan(text)
    return tuple(_real_names(list(found), mid_sentence | named))


def used_as_names(text: str) -> frozenset[str]:
    """The capitalised words `text` writes where a capital means a name: mid-sentence ('met Thornton'),
    or after a title ('Mr. Thornton'); never a word that only opens sentences ('However', 'Later')."""
    return _scan(text)[1]


@functools.lru_cache(maxsize=64)
def _scan(text: str) -> tuple[tuple[_Name, ...], frozenset[str]]:
    """The capitalised runs of `text`, and the words it capitalises where a capital means a name."""
    found: list[_Name] = []
    run: list[str] = []
    mid_sentence: set[str] = set()  # words capitalised where a capital means a name
    run_after_the = False
    previous = ""  # the token before the current one

    def close() -> None:
        while run and run[-1].lower() in NAME_JOINERS:
            run.pop()
        if run:  # a possessive inside a name is the name's ('Queen Anne's Revenge'), one ending it is not
            run[-1] = _POSSESSIVE.sub("", run[-1])
            found.append(_Name(" ".join(run), run_after_the))
        run.clear()

    for match in _TOKEN.finditer(text):
        tok = match.group(0)
        if tok[:1].isupper() and tok[0].isalpha() and len(tok) <= MAX_NAME_WORD_CHARS:
            word = _POSSESSIVE.sub("", tok).rstrip(".'\u2019")
            if _mid_sentence(text, match.start()) or (run and run[-1].lower().rstrip(".") in TITLES):
                mid_sentence.add(word)  # 'Mr. Thornton': the title's full stop ends no sentence
            if not run and _never_opens_a_name(word.lower()):
                previous = tok
                continue
            if len(run) == MAX_NAME_WORDS:
                close()
            if not run:
                run_after_the = previous.lower() == "the"  # 'The Board' opening a sentence too
            run.append(tok if _POSSESSIVE.search(tok) else word)
            if tok.endswith(".") and word.lower() not in TITLES:
                close()  # "Watson." ends the sentence (and the name); "Dr." does not
        elif run and tok.lower() in NAME_JOINERS and len(run) < MAX_NAME_WORDS:
            run.append(tok)
        else:
            close()
        previous = tok
    close()
    return tuple(found), frozenset(mid_sentence)


_POSSESSIVE = re.compile(r"['\u2019]s$")


def _never_opens_a_name(word: str) -> bool:
    """A lower-cased word that is no name's first word, however it is capitalised ('The', 'Since')."""
    return word in STOPWORDS or word in QUESTION_VOCABULARY or word in NOT_NAME_OPENERS


_SENTENCE_OPENERS = frozenset(".!?\u201c\"'(:\n")


def _mid_sentence(text: str, start: int) -> bool:
    """Whether the word at `start` follows white space after a character that does not open a
    sentence (so its capital marks a name). Looks back over that white space only: linear in all."""
    i = start - 1
    while i >= 0 and text[i].isspace():
        i -= 1
    return i < start - 1 and i >= 0 and text[i] not in _SENTENCE_OPENERS


def _real_names(names: list[_Name], mid_sentence: set[str]) -> list[_Name]:
    """Drop a lone sentence-initial word that is never capitalised mid-sentence, keep first occurrences
    (each marked as written after 'the' when any of its occurrences was)."""
    after_the = {name.text for name in names if name.after_the}
    seen: set[str] = set()
    out = []
    for name in names:
        if " " not in name.text and name.text not in mid_sentence:
            continue
        if name.text.lower() not in seen:
            seen.add(name.text.lower())
            out.append(_Name(name.text, name.text in after_the))
    return out


GENDER = {
    "she": "f",
    "her": "f",
    "hers": "f",
    "herself": "f",
    "he": "m",
    "him": "m",
    "his": "m",
    "himself": "m",
}


_AUX_WORDS = r"(?:did|does|do|is|was|were|are|has|had|have|will|would|can|could|should)"
# 'Who replaced him?', 'Who was appointed keeper?': the answer introduces the person asked for. Not
# 'Who was Ambrose Kittow?', 'Who was the Dalai Lama?' or 'Who does Maskull meet?': that question is
# about the one it names.
ASKS_WHO = re.compile(rf"\b(?i:who)\s+(?:{_AUX_WORDS}\s+(?!(?:the\s+)?[A-Z])|(?!{_AUX_WORDS}\b)[a-z])")


def _person(previous: Rewrite, previous_answer: str, pronoun: str | None, told: str = "") -> str | None:
    """Who 'she'/'he' most likely means: the person the conversation is about (named in the previous
    question, else the subject carried from the questions before it, else its carried context), not a
    name the previous answer quoted in passing; the answer's first person only when the previous
    question asked 'who' (its answer introduced them) or the questions name nobody. Within one source
    the first person `told` (the conversation) shows as the pronoun's gender comes first, else a name
    with a title or of two or more words; a name the text puts after in/at/to/from is a place. Someone
    the previous question called by the other gender's pronoun is passed over, and so is anyone `told`
    shows as the other gender or as a thing (`_kind`); when nobody is left, a person asked about
    earlier whom it shows as that gender, else None (the pronoun stays as asked). None too when a source
    leaves two or more people whose gender nothing shows: the pronoun may mean any of them. After a question that named only things ('How is the Kestrel lens cleaned?'), its answer's
    people count only as `_may_mean` allows."""
    relative = _relative(previous.core, GENDER[pronoun], previous_answer) if pronoun else None
    if relative:  # 'What was Ambrose Kittow's wife's name?' then 'she'
        return relative
    told = told or "\n".join((previous.core, previous.context, _statements(previous_answer)))
    wanted = GENDER[pronoun] if pronoun else None
    places = _places_told(told)  # 'harbour master of Port Lenning' where an answer says 'at Port Lenning'

    # 'What did the king's son do with the slipper?' names him without a capital: he is whom it is about,
    # and 'son' says his gender whatever a quote says next to it ('the king's son, who gave her the shoe')
    phrase = _person_phrase(previous.core, wanted) if not _people_in(previous.core) else None

    # 'Elias Marrow ... his left hand' is no 'she'; 'How is Kestrel cleaned?' no 'he'
    called = dict(previous.called)  # whom the user's own pronouns called a he or a she before

    def fits(name: str) -> bool:
        if name == phrase:
            return True  # `_person_phrase` checked its gender word
        if wanted and called.get(name, wanted) != wanted:
            return False
        return name not in places and (wanted is None or _kind(name, told) in (None, wanted))

    named = used_as_names(told)  # 'Thornton met Margaret' after an answer that said 'John Thornton'
    answer_names = [name for name in _people_in(_statements(previous_answer), named) if fits(name)]
    sources = [
        _people_in(previous.core, named) or ([phrase] if phrase else []),
        [previous.subject] if previous.subject else [],
        _people_in(previous.context, named),
        answer_names,
    ]
    introduced = [name for name in answer_names if name not in sources[0]]
    # 'How is the Kestrel lens cleaned?' names a thing and no one: a name its answer quotes in passing is
    # 'his' only where the answer shows that person as a 'he' ('Walter Dunstan ... his') or a title.
    about_a_thing = not any(sources[:3]) and bool(names_in(previous.core))
    # "Who was appointed?" / "Who replaced Ambrose Kittow?": the answer introduced someone new. Not
    # when the who-question is about someone it names further on ("Who sat in the audience while
    # Rita sang?"), nor when the user keeps the same pronoun for the person they have been following
    # ("Who replaced him?" -> "what happened to his wife?": still him).
    same_pronoun = bool(previous.pronoun and pronoun and GENDER[previous.pronoun] == GENDER[pronoun])
    if (
        ASKS_WHO.search(previous.core)
        and introduced
        and not same_pronoun
        and (not sources[0] or _asks_who_did_to(previous.core, sources[0][0]))
    ):
        sources.insert(0, introduced)
        about_a_thing = False
    skip = None
    if pronoun and previous.person and previous.pronoun and GENDER[previous.pronoun] != GENDER[pronoun]:
        skip = previous.person
    lead = f"{previous.core}\n{_first_statement(previous_answer)}"  # what the answer leads with
    # 'Who was Walter Dunstan?' -> 'Who was Morwenna Kittow?' -> 'he': the man asked about before her
    sources.append([name for name in previous.earlier if wanted and _kind(name, told) == wanted])
    for source in sources:
        candidates = [c for c in source if c != skip and _may_mean(c, wanted, lead, about_a_thing) and fits(c)]
        if not candidates:
            continue
        if wanted and source in (answer_names, introduced) and not any(_kind(c, told) for c in _first_quoted(candidates, previous_answer)):
            # 'how much can he approve?' after 'What about the finance officer?': Gareth Lowe, whom the
            # first quote names as the one asked about, though only a later quote's Mark is a known 'he'
            candidates = [c for c in candidates if c in _first_quoted(candidates, previous_answer)]
            if len(candidates) == 1:
                return candidates[0]
        known = [c for c in candidates if wanted and _kind(c, told) == wanted]
        if known:  # 'her eldest son Jacob' is a 'he' before a name a later quote gives in passing
            return known[0]
        likely = [c for c in candidates if len(c.split()) >= 2 or c.split()[0].lower() in TITLES] or candidates
        if wanted and len(likely) > 1 and source is introduced:
            # 'Who lent Oswin the money?': whom the first quote that names anyone new brings in answers it;
            # a later quote names others in passing
            likely = _first_quoted(likely, previous_answer)
        if wanted and len(likely) > 1:  # 'Chidi Okonkwo and Aiko Tanaka': 'she' may be either, so neither
            return None
        return likely[0]
    return None


def _first_quoted(people: list[str], answer: str) -> list[str]:
    """Those of `people` that the answer's first quote naming any of them names (all of them when none
    does)."""
    for quote in quotes_in(answer) or [answer]:
        named = [person for person in people if re.search(rf"\b{re.escape(person)}\b", quote)]
        if named:
            return named
    return people


# Words naming one person without a capital ('the keeper', 'the old miller', 'the king's son'): a
# follow-up's 'he'/'she' can mean the question's phrase ending in one (PERSON_NOUNS, for a thing's head
# word, holds plurals too)
ONE_PERSON_NOUNS = frozenset(
    """man woman boy girl child person son daughter father mother brother sister husband wife widow widower
    king queen prince princess stepmother stepfather stepsister stepbrother maiden lady gentleman lord
    knight soldier captain sailor fisherman fisherwoman keeper miller baker farmer shepherd hunter smith
    blacksmith carpenter merchant trader moneylender lender steward servant maid cook gardener priest monk
    nun bishop doctor nurse teacher student engineer architect builder owner landlord tenant mayor judge
    clerk master mistress lighthouse-keeper stranger traveller traveler guard witch wizard giant
    dwarf huntsman woodcutter tailor shoemaker innkeeper pilot skipper mate surgeon inventor founder""".split()
)
_DETERMINER = re.compile(r"\b(?:the|his|her|their|that|this)\s+", re.IGNORECASE)
PHRASE_WORDS = 4  # the most words a person phrase holds after its article ('the king's eldest son')


def _person_phrase(question: str, gender: str | None) -> str | None:
    """The first lower-case phrase of the question that names one person ('the king's son', 'the old
    miller', 'the keeper'), with 'the' for its article, when its word for the person (son, queen) does not
    say the other gender than the pronoun's; None without one."""
    for article in _DETERMINER.finditer(question):
        phrase: list[str] = []
        for word in question[article.end() :].split()[:PHRASE_WORDS]:
            bare = word.rstrip("?!.,;:")
            if not re.fullmatch(r"[a-z][\w-]*(?:['\u2019]s)?", bare) or bare in STOPWORDS:
                break
            phrase.append(bare)
            if bare in ONE_PERSON_NOUNS or bare in GENDERED_WORDS:  # 'the countess', 'the widow'
                said = GENDERED_WORDS.get(bare)
                if gender is None or said is None or said == gender:
                    return "the " + " ".join(phrase)
                break
            if bare != word:  # the phrase ends at punctuation
                break
    return None


def _may_mean(name: str, gender: str | None, told: str, strict: bool) -> bool:
    """Whether a 'he' or 'she' of `gender` can mean `name`. When `strict` (the last question named only
    things), only a person `told` (the question and the answer's lead statement, not a quote that
    names someone in passing) shows as that gender, or one called by a title
    ('Captain Henry Ashcroft'). Otherwise anyone `_kind` does not rule out: a person the questions named
    whose gender the conversation does not show is who the user follows."""
    if gender is None or not strict:
        return True
    shown = _gender_of(name, told)
    return shown == gender or (shown is None and name.split()[0].lower() in TITLES)


MALE_TITLES = frozenset("mr sir lord king prince father brother uncle".split())
FEMALE_TITLES = frozenset("mrs ms miss lady queen princess mother sister aunt".split())
_GENDERED = re.compile(r"\b(?i:he|him|his|himself|she|her|hers|herself)\b")
_SENTENCE_END = re.compile(r"[.!?;\n]")
MAX_CLAUSE_CHARS = 300  # how far after a name its pronoun is looked for

RELATIVES = {
    **dict.fromkeys("wife mother daughter sister widow aunt niece granddaughter grandmother".split(), "f"),
    **dict.fromkeys("husband father son brother widower uncle nephew grandson grandfather".split(), "m"),
}
# Words that say a person's gender right before their name ('his wife Anne', 'Mrs Penrose') or in
# apposition after it ('Walter Dunstan, a young man from Trewin').
GENDERED_WORDS = {
    **RELATIVES,
    **dict.fromkeys(MALE_TITLES, "m"),
    **dict.fromkeys(FEMALE_TITLES, "f"),
    **dict.fromkeys("man gentleman boy lad duke earl monk bridegroom stepson stepfather".split(), "m"),
    **dict.fromkeys(
        "woman lady girl lass duchess countess nun bride maid maiden actress heiress stepdaughter stepmother".split(),
        "f",
    ),
}
_GENDERED_WORD = "|".join(sorted(GENDERED_WORDS, key=len, reverse=True))
_GENDERED_BEFORE = re.compile(rf"\b({_GENDERED_WORD})\.?,?\s+$", re.IGNORECASE)
# ', a young man from', ', the son of'; not ', his wife Hester' (the word before someone else's name)
_GENDERED_AFTER = re.compile(
    rf",?\s+(?:(?:a|an|the|his|her|their|[a-z]+['\u2019]s)\s+)?(?:[a-z-]+\s+)?({_GENDERED_WORD})\b(?!,?\s+(?-i:[A-Z]))",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=512)  # asked of the same names and conversation at each chained rewrite
def _gender_of(name: str, text: str) -> str | None:
    """'m' or 'f' where the text shows it: a title ('Mrs Kittow'), a gendered word right before the name
    ('his daughter, Morwenna Kittow', 'Mrs Anne Penrose') or in apposition after it ('Walter Dunstan, a
    young man'), or the first he/she after it before the sentence's end or the next person's name
    ('Hester ... beside her husband'; 'Elias Marrow, a bosun in the Royal Navy who lost his ...'); None
    when it does not, or shows both."""
    first = name.split()[0].lower()
    if first in MALE_TITLES or first in FEMALE_TITLES:
        return "m" if first in MALE_TITLES else "f"
    said: set[str | None] = set()  # by a word for a man or a woman: 'his wife Anne', 'a young man'
    by_pronoun: set[tuple[str | None, bool]] = set()  # by the he/she of its clause; whether it opens it
    starts = _person_starts(text)
    for match in re.finditer(rf"\b{re.escape(name)}\b", text):
        before = _GENDERED_BEFORE.search(text, max(0, match.start() - MAX_NAME_WORD_CHARS), match.start())
        if before:
            said.add(GENDERED_WORDS[before.group(1).lower()])
        elif not _ends_a_longer_name(text, match.start()):
            apposition = _GENDERED_AFTER.match(text, match.end(), match.end() + MAX_NAME_CHARS)
            if apposition:
                said.add(GENDERED_WORDS[apposition.group(1).lower()])
            else:
                by_pronoun.add((_pronoun_after(text, match, starts), _opens_sentence(text, match.start())))
    said.discard(None)
    if said:
        return said.pop() if len(said) == 1 else None
    # 'Paul Pell kept the light until she retired': the pronoun of the clause a name opens outweighs the
    # first-name list; not one after a name that is no subject ('Thornton met Margaret, and he fell in love')
    named = _first_name_gender(name)
    shown = {gender for gender, opens in by_pronoun if gender and (opens or named in (None, gender))}
    return shown.pop() if len(shown) == 1 else None


def _opens_sentence(text: str, start: int) -> bool:
    """Whether only words that call a person come before `start` in its sentence ('The old miller',
    'Captain', 'Her brother'): the name is the subject its clause's pronoun tells of."""
    window = max(0, start - MAX_CLAUSE_CHARS)
    opened = max((m.end() for m in _SENTENCE_END.finditer(text, window, start)), default=window)
    before = [word.strip(",\u201c\u201d\"").lower() for word in text[opened:start].split()]
    return len(before) <= PHRASE_WORDS and all(word in _CALLS_A_PERSON for word in before)


_CALLS_A_PERSON = (
    TITLES | ONE_PERSON_NOUNS | frozenset(GENDERED_WORDS) | frozenset("the a an his her their old young".split())
)


def _ends_a_longer_name(text: str, start: int) -> bool:
    """A name word comes right before ('Penrose' in 'Jory Penrose, a young man': what follows is said of
    Jory, not of every Penrose); a sentence's opening word ('When Hester ...') is none."""
    word = _NAME_WORD_BEFORE.search(text, max(0, start - MAX_NAME_WORD_CHARS - 1), start)
    # 'Captain Rowan Pike. He ...': a title before the name calls the same person
    return bool(word) and not _never_opens_a_name(word.group(1).lower()) and word.group(1).lower().rstrip(".") not in TITLES


def _pronoun_after(text: str, name: re.Match[str], person_starts: list[int]) -> str | None:
    """The gender of the first he/she/his/himself (or a possessive 'her') in a name's clause ('Hester ...
    beside her husband'), not an object 'him'/'her', which is someone else's ('Nora tracks him down');
    else, when the name is the only person its sentence names, of the he/she opening the next sentence
    ('... a cowboy singer, Tex Barton. He was in the audience')."""
    end = _clause_end(text, name, person_starts)
    for pronoun in _GENDERED.finditer(text, name.end(), end):
        word = pronoun.group(0).lower()
        if word == "him" or word == "her" and not _her_owns(text, pronoun.end()):
            continue
        return GENDER[word]
    past = _past_the_others(text, name, end, person_starts)
    if past:
        return past
    if end < len(text) and _SENTENCE_END.match(text, end) and _alone_in_sentence(text, name, person_starts):
        opening = _NEXT_SENTENCE_PRONOUN.match(text, end + 1)
        if opening:
            return GENDER[opening.group(1).lower()]
    return None


def _past_the_others(text: str, name: re.Match[str], end: int, person_starts: list[int]) -> str | None:
    """'Thornton met Margaret at the mill, and he fell in love', 'At the mill, Thornton met Margaret, and
    he ...', 'Margaret met Thornton and Mrs Hale, and he ...', '... met Margaret; he ...': the he/she
    later in a name's sentence, or opening the next, is that name's when every other person the
    sentence names before it, on either side of the name, is known as the other gender (a title, or a
    first name the table knows): nobody else named can be the he. None otherwise, and for 'Thornton's
    father' (the father is the subject)."""
    if _POSSESSIVE_AFTER.match(text, name.end()):
        return None
    stop = _SENTENCE_END.search(text, name.end())
    sentence_end = stop.start() if stop else len(text)
    found = re.compile(r"\b(?i:he|she)\b").search(text, end, sentence_end) if end < sentence_end else None
    if found is None and stop is not None:
        found = _NEXT_CLAUSE_PRONOUN.match(text, sentence_end + 1)
    if found is None:
        return None
    pronoun = found.group(found.lastindex or 0)
    opened = _sentence_start(text, name.start())
    first = bisect.bisect_left(person_starts, opened)
    others = [
        start
        for start in person_starts[first : bisect.bisect_left(person_starts, min(found.start(), sentence_end))]
        if not name.start() <= start < name.end() and not (start < name.start() and _titles_only(text[start : name.start()]))
    ]
    gender = GENDER[pronoun.lower()]
    genders = {_title_or_first_name_gender(_name_at(text, start)) for start in others}
    return gender if others and genders == {"f" if gender == "m" else "m"} else None


# the he/she opening the next sentence, or the clause after a semicolon ('...; he fell in love')
_NEXT_CLAUSE_PRONOUN = re.compile(r"[\s\u201d\u201c\"]*(?:\[\d+\]\s*)?((?i:he|she))\b")
_POSSESSIVE_AFTER = re.compile(r"['\u2019]s\b")


def _name_at(text: str, start: int) -> str:
    """The longest name of the text's people written at `start` ('Mrs Hale', 'Margaret')."""
    found = [person for person in _people_of(text) if text.startswith(person, start)]
    if found:
        return max(found, key=len)
    word = _CAPITAL_WORD.match(text, start)
    return word.group(0) if word else ""


def _title_or_first_name_gender(name: str) -> str | None:
    """The gender a name's title says ('Mrs Hale'), else its first name's (`given_names`)."""
    first = name.split()[0].lower().rstrip(".") if name.split() else ""
    if first in MALE_TITLES or first in FEMALE_TITLES:
        return "m" if first in MALE_TITLES else "f"
    return _first_name_gender(name)


_NEXT_SENTENCE_PRONOUN = re.compile(r"[\s\u201d\u201c\"]*(?:\[\d+\]\s*)?(He|She|His|Her)\b")


def _her_owns(text: str, end: int) -> bool:
    """Whether the 'her' ending at `end` owns the word after it ('her husband', not 'saw her')."""
    following = re.match(r"\s+([A-Za-z][\w'-]*)(\s+[A-Za-z][\w'-]*)?", text[end : end + 80])
    if not following:
        return False
    second = (following.group(2) or "").strip().lower()
    word = following.group(1).lower()
    return word == "own" or _possessive_her("", word, second, "")  # 'in her own right'


def _alone_in_sentence(text: str, name: re.Match[str], person_starts: list[int]) -> bool:
    """No other person's name opens between the sentence's start and this name."""
    opened = _sentence_start(text, name.start())
    first = bisect.bisect_left(person_starts, opened)
    others = person_starts[first : bisect.bisect_left(person_starts, name.start())]
    # 'Captain Rowan Pike' opens at its title: the same person
    return all(_titles_only(text[start : name.start()]) for start in others)


def _sentence_start(text: str, at: int) -> int:
    """Where the sentence holding `at` opens: after the last sentence end before it, else the text's start."""
    return max((m.end() for m in _SENTENCE_END.finditer(text, 0, at)), default=0)


def _titles_only(text: str) -> bool:
    return all(word.lower().rstrip(".") in TITLES for word in text.split())


def _clause_end(text: str, name: re.Match[str], person_starts: list[int]) -> int:
    """Where what is said about a name ends: the sentence's end, the next person's name, or
    MAX_CLAUSE_CHARS on, whichever comes first."""
    end = min(name.end() + MAX_CLAUSE_CHARS, len(text))
    sentence_end = _SENTENCE_END.search(text, name.end(), end)
    # the next name after this one's end: 'Kittow' inside 'Loveday Kittow' is no next person
    following = bisect.bisect_left(person_starts, name.end())
    if following < len(person_starts):
        end = min(end, person_starts[following])
    return min(end, sentence_end.start()) if sentence_end else end


_NAME_WORD_BEFORE = re.compile(r"([A-Z\u00c0-\u00de][\w'\u2019-]*)\s+$")
_CAPITAL_WORD = re.compile(r"\b[A-Z\u00c0-\u00de][\w'\u2019-]*")


@functools.lru_cache(maxsize=16)
def _person_starts(text: str) -> list[int]:
    """Where each person's name starts in the text, in order (where a clause about the one before ends).
    One pass: each capitalised word is looked up among the first words of the text's people."""
    by_first: dict[str, list[str]] = {}
    for person in _people_of(text):
        by_first.setdefault(person.split()[0], []).append(person)
    starts = []
    for match in _CAPITAL_WORD.finditer(text):
        first = _POSSESSIVE.sub("", match.group(0)).rstrip(".'\u2019")
        if any(text.startswith(person, match.start()) for person in by_first.get(first, ())):
            starts.append(match.start())
    return starts


@functools.lru_cache(maxsize=512)
def _kind(name: str, told: str) -> str | None:
    """What a name is, as far as the conversation shows: 'm' or 'f' (`_gender_of`; a surname alone as
    the one person the conversation named with it: 'Pennick' after 'Ada Pennick'), 'n' for a thing a
    question asked what it is ('What is Kestrel?', 'What is Mary Rose?'), else the gender of its first
    name, else 'n' for one a question asked how it is handled ('How is Kestrel cleaned?'; not 'How was
    Hester chosen?': Hester is a woman's name), else None."""
    shown = _gender_of(name, told)
    if shown:
        return shown
    if " " not in name:
        family = {_person_gender(person, told) for person in _people_of(told) if person.endswith(f" {name}")}
        if len(family) == 1 and None not in family:
            return family.pop()
    if name in _asked_as_things(told, handled=False):  # 'What is Mary Rose?': a thing, whatever Mary is
        return "n"
    learned = _first_name_gender(name) or _learned_gender(name, told)
    return learned or ("n" if name in _asked_as_things(told) else None)


def _given_name(name: str) -> str:
    """A name's first word after any title ('Captain Rowan Pike': Rowan)."""
    parts = [part for part in name.split() if part.lower().rstrip(".") not in TITLES]
    return parts[0] if parts else name


def _learned_gender(name: str, told: str) -> str | None:
    """The gender the text shows for a name's given name wherever it is written ('Jude Penhallow' after
    'Jude climbed the tower, and she relit the lamp'; 'his sister Frankie'), for a given name the table
    does not know: a name's gender learned from the conversation and the documents' sentences
    `_with_documents` added to it. None for a one-word name (`_gender_of` read it already)."""
    given = _given_name(name)
    if given == name or gender_of_first_name(given):
        return None
    return _gender_of(given, told)


@functools.lru_cache(maxsize=16)
def _people_of(text: str) -> tuple[str, ...]:
    """`_people_in`, remembered: a rewrite asks it of the same conversation for each name."""
    return tuple(_people_in(text))


def _person_gender(name: str, told: str) -> str | None:
    """`_gender_of`, else by the first name after any title ('Captain Henry Ashcroft': Henry)."""
    return _gender_of(name, told) or _first_name_gender(name) or _learned_gender(name, told)


def _first_name_gender(name: str) -> str | None:
    """The gender of a name's first name after any title (`given_names`), else None."""
    parts = [part for part in name.split() if part.lower().rstrip(".") not in TITLES]
    return gender_of_first_name(parts[0]) if parts else None


_PARTICIPLE = (
    r"[a-z]+(?:ed|en)|built|made|kept|lit|run|sold|bought|found|held|shown|done|set|put|cut|sent|fed|paid"
)
_ASKED_AS_A_THING = re.compile(
    rf"^\s*(?i:what\s+(?:is|was)\s+(.+?)\s*[?.!]*|how\s+(?:is|was|are|were)\s+(.+?)\s+(?-i:{_PARTICIPLE})\b.*)$",
    re.MULTILINE,
)


@functools.lru_cache(maxsize=16)
def _asked_as_things(told: str, *, handled: bool = True) -> frozenset[str]:
    """What a question of the conversation asks about as a thing: what it is, or (`handled`) how it is
    handled ('What is Kestrel?', 'How is Kestrel cleaned?', 'How was Merrow Queen restored?'; a person is
    asked 'who')."""
    groups = (1, 2) if handled else (1,)
    return frozenset(
        name for match in _ASKED_AS_A_THING.finditer(told) for group in groups if (name := match.group(group))
    )


_RELATIVE = re.compile(rf"['\u2019]s\s+({'|'.join(RELATIVES)})\b", re.IGNORECASE)


def _relative(question: str, gender: str, answer: str) -> str | None:
    """'What was Ambrose Kittow's wife's name?' then 'she': his wife, as the answer names her right after
    the word ('his wife Loveday', 'his daughter, Morwenna Kittow'), else 'Ambrose Kittow's wife'."""
    for name in names_in(question):
        match = re.search(rf"\b{re.escape(name)}{_RELATIVE.pattern}", question, re.IGNORECASE)
        if not match or RELATIVES[match.group(1).lower()] != gender:
            continue
        named = re.search(rf"\b{match.group(1)},?\s+({_CAPITALISED_RUN})", _statements(answer), re.IGNORECASE)
        return named.group(1) if named else f"{name}'s {match.group(1).lower()}"
    return None


_CAPITALISED_RUN = r"(?-i:[A-Z][\w'\u2019-]*(?:\s+[A-Z][\w'\u2019-]*)*)"


def _asks_who_did_to(question: str, person: str) -> bool:
    """'Who replaced Ambrose Kittow?', 'Who was married to Hester?': the person is the object of the
    who-question's own verb, so its answer is someone else."""
    return bool(re.match(rf"\s*(?i:who)\s+(?:[\w'-]+\s+){{1,3}}?{re.escape(person)}\b", question))


_INNER_QUOTES = str.maketrans({"\u201c": "\u2018", "\u201d": "\u2019"})


def in_quotes(text: str) -> str:
    """`text` between curly double quotes, as an answer quotes a sentence; double quotes inside it become
    single ones ('He called it ‘the finest mill’.'), as nested quotes are written, so the quote reads
    right and `quotes_in` finds where it ends."""
    return f"\u201c{text.translate(_INNER_QUOTES)}\u201d"


def quotes_in(text: str) -> list[str]:
    """What an answer quotes: the text from each \u201c to the next \u201d on its line (at least one
    character), as the regex \u201c(.+?)\u201d finds it, but in one pass: a line of opening marks that
    never close is read once, not once per mark."""
    found: list[str] = []
    for line in text.split("\n"):
        start = line.find("\u201c")
        while start != -1:
            end = line.find("\u201d", start + 2)
            if end == -1:
                break  # no later opening mark on this line can close either
            found.append(line[start + 1 : end])
            start = line.find("\u201c", end + 1)
    return found


def _statements(answer: str) -> str:
    """An answer's quotes (extractive), else the answer itself; without its [n] markers."""
    quotes = quotes_in(answer)
    return re.sub(r"\[\d+\]", "", "\n".join(quotes) if quotes else answer)


def _people_in(text: str, named: frozenset[str] = frozenset()) -> list[str]:
    """Names in the text that can be a person: not a place (a name right after in/at/to/from/near),
    not a thing or a group named with 'the' ('the Margaret Ellen', 'the Kestrel lens', 'The Board';
    'the Captain' is a title, so a person), not one whose words say it is a place, a body or an event
    ('Halbeck Cove', 'Kestrel Optics', 'Storm Eunice'). A word opening a sentence is a name when `text`
    or `named` uses it as one (`used_as_names`)."""
    not_people = _places_in(text) | _dates_in(text)
    return [
        name.text
        for name in _scan_names(text, named)
        if name.text not in not_people
        and (name.text.split()[0].lower() in TITLES or not name.after_the)
        and not _names_a_thing(name.text)
        and not _ACRONYM.fullmatch(name.text)
    ]


_ACRONYM = re.compile(r"[A-Z]{2,5}s?")  # 'FM', 'BBC', 'NASA': an initialism names no person


def people_in(text: str) -> list[str]:
    """The names in `text` that can be a person (`_people_in`), for `onward`'s 'who else?'."""
    return _people_in(text)


_CAPITALISED_MONTH = "|".join(name.capitalize() for name in MONTH_NAMES)
_DATE = re.compile(rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+({_CAPITALISED_MONTH})\b|\b({_CAPITALISED_MONTH})\s+\d{{1,4}}\b")


def _dates_in(text: str) -> set[str]:
    """The months the text writes as dates ('14 October 1887', 'May 1885'), which are no person even
    where no preposition comes before them ('the night of 14 October'); 'April' alone may be a name."""
    return {month for match in _DATE.finditer(text) for month in match.groups() if month}


# The word that makes a name of two or more words a place, a body, a vessel or an event: its last
# ('Halbeck Cove', 'Kestrel Optics', 'Skerrow Point Trust') or its first ('Storm Eunice', 'HMS Victory').
# Words that are also common surnames (Hall, Hill, Mills, Banks, Church) are left out.
THING_LAST_WORDS = frozenset(
    """cove bay point headland island isle islands ledge reef rocks cape harbour harbor port river lake
    sea ocean channel strait sound mountain mountains valley road lane avenue square bridge tower
    lighthouse light lightship museum school college university hospital station quarry farm company
    co corporation corp ltd limited inc plc llc trust board council committee society association
    club navy army ministry department office works optics industries gale storm hurricane war act
    treaty town city village county district park street estate railway line castle palace abbey manor
    cathedral""".split()
)
THING_FIRST_WORDS = frozenset(
    "storm hurricane typhoon cyclone mount lake cape fort hms ss rms uss hmas loch port isle glen".split()
)


def _names_a_thing(name: str) -> bool:
    """A name of two or more words whose last or first word is a place's, a body's or an event's."""
    parts = name.lower().split()
    return len(parts) >= 2 and (parts[-1] in THING_LAST_WORDS or parts[0] in THING_FIRST_WORDS)


def _asked_who_is(question: str) -> list[str]:
    """'Who was the Dalai Lama?': the one name a who-is question asks about, even written with 'the' (a
    title or an office held by a person), unless its words say it is a thing ('Who is the Kestrel
    Company?' asks about no person)."""
    match = _WHO_IS.match(question)
    if not match:
        return []
    name = match.group(1)
    return [name] if names_in(name) == [name] and not _names_a_thing(name) else []


_WHO_IS = re.compile(
    r"^\s*(?i:who)\s+(?i:is|was|are|were)\s+(?i:the\s+)?([A-Z][\w'\u2019-]*(?:\s[\w'\u2019-]+)*)\s*[?.!]*$"
)


def _places_in(text: str) -> set[str]:
    """What the text names right after in/at/to/from/near, 'the town of' or 'the river' (a place, or a
    month: 'in April 1941')."""
    return {prefix for place in _PLACE_BEFORE.findall(text) for prefix in _name_prefixes(place)}


_AT_PLACE = re.compile(rf"\b(?i:in|at|near)\s+(?:the\s+)?({_CAPITALISED_RUN})")


_OWNER = re.compile(r"\b([A-Z][\w-]*)['\u2019]s\b")


@functools.lru_cache(maxsize=16)
def _places_told(told: str) -> frozenset[str]:
    """The names the conversation puts right after in/at/near ('at Port Lenning'), each a place in every
    turn: not after to/from/on, which also take people ('a promise to Lisbeth'), and never a name it
    writes as an owner ('Lisbeth's mother'), which is someone. Remembered: a rewrite asks it once per
    earlier question, of the same conversation."""
    owners = set(_OWNER.findall(told))
    places = {prefix for match in _AT_PLACE.finditer(told) for prefix in _name_prefixes(match.group(1))}
    return frozenset(place for place in places if place.split()[-1] not in owners)


def _name_prefixes(following: str) -> list[str]:
    """The ways a name can open `following`: its first one to MAX_NAME_WORDS words, the last word also
    without its trailing punctuation or possessive ('Halifax's' names Halifax)."""
    tokens = following.split(maxsplit=MAX_NAME_WORDS)[:MAX_NAME_WORDS]
    prefixes = []
    for i in range(1, len(tokens) + 1):
        head, last = " ".join(tokens[: i - 1]), _TRAILING_NON_WORD.sub("", tokens[i - 1])
        for word in {tokens[i - 1], last, _POSSESSIVE.sub("", last)}:
            if word:
                prefixes.append(f"{head} {word}" if head else word)
    return prefixes


_TRAILING_NON_WORD = re.compile(r"\W+$")


_PLACE_BEFORE = re.compile(
    r"\b(?i:in|at|to|from|near|into|(?:bound|sailed|left|headed|departed|set\s+out|made)\s+for"
    r"|(?:town|city|village|county|parish|island|isle|kingdom|realm|province|land|port|hamlet|suburb)\s+of"
    r"|(?-i:river|lake|mount|mountain|island|village|town|city|valley|forest|planet|moor|farm))\s+(?:the\s+)?"
    r"([A-Z][\w'\u2019-]*(?:\s+(?:of\s+)?[A-Z][\w'\u2019-]*)*)"
)


def _place(previous: Rewrite, previous_answer: str) -> str | None:
    """The place last named after in/at/to/from, as 'in Halifax' (with its own preposition, but 'in' for
    one gone to or come from)."""
    for text in (previous.core, previous_answer, previous.context):
        after: dict[str, str] = {}  # what follows a preposition -> its first preposition
        for match in _PREPOSITION.finditer(text):
            following = text[match.end() : match.end() + MAX_NAME_CHARS]
            for prefix in _name_prefixes(following):
                after.setdefault(prefix, match.group(1))
        for name in names_in(text):
            if name in after:  # 'moved to Hobart' then 'what did he do there?': in Hobart
                return f"{_AT_REST.get(after[name], after[name])} {name}"
    return None


_AT_REST = {"to": "in", "into": "in", "from": "in"}  # where one went or came from is where one was


_PREPOSITION = re.compile(rf"\b({'|'.join(PLACE_PREPOSITIONS)})\s+(?:the\s+)?")


def _year(previous: Rewrite, previous_answer: str) -> str | None:
    """The year a final 'then' means: the one the previous answer gave first when the previous
    question asked 'when', else the one the previous question named (None when unsure)."""
    texts = [previous.core, previous.context]
    if ASKS_WHEN.search(previous.core):
        texts.insert(0, _first_statement(previous_answer))
    for text in texts:
        found = _YEAR.findall(text)
        if found:
            return found[0]
    return None


def _first_statement(answer: str) -> str:
    """An answer's first quote (extractive) or first sentence (prose): its best-ranked statement."""
    quotes = quotes_in(answer)
    if quotes:
        return quotes[0]
    return re.split(r"(?<=[.!?])\s", answer.strip(), maxsplit=1)[0]


def _resolve(
    question: str, previous: Rewrite, previous_answer: str, told: str = ""
) -> tuple[str, str | None, str | None, bool]:
    """Replace the pronouns that have a clear antecedent; leave the rest to the carried context.

    `told` is the conversation's text (`_told`; the last turn alone when empty). Returns the question,
    the person and pronoun resolved (None, None when no person was), and whether a thing was put in for
    'it'/'its'/'they' (`_thing`)."""
    pronoun = next((w for w in words(question) if w in GENDER), None)
    person = _as_the_answer_spells(_person(previous, previous_answer, pronoun, told), previous_answer)
    people = _people_by_gender(question, pronoun, person, previous, previous_answer, told)
    group = _group(previous, listed=pronoun is None) or _answered_together(previous, previous_answer)
    things = _thing(previous, question, plural=True)
    thing = _thing(previous, question, plural=False)
    put_in = False
    place = _place(previous, previous_answer)
    # '(and) then?', 'then what?' ask what came next ('what happened then?' asks about that year)
    sequence = words(question)[:1] == ["then"]
    year = None if sequence else _year(previous, previous_answer)
    tokens = re.split(r"(\s+)", question)
    plain = [_NON_WORD.sub("", token).lower() for token in tokens]
    befores, followings = _neighbours(plain)
    out: list[str] = []
    subjects: set[str] = set()  # the people a 'she'/'he' of this question was replaced by
    for i, token in enumerate(tokens):
        word = plain[i]
        tail = token[len(token.rstrip("?!.,;:")) :]
        following, before = followings[i], befores[i]
        meant = people.get(GENDER.get(word, ""))
        if meant and word in ("him", "her", "his") and meant in subjects:
            # 'did she meet her?', 'was she her sister?': an object her/him after the she/he, or a her/his
            # said of the she/he, is another woman/man; 'did she tell her sister?' is her own sister
            second = _second_word_after(plain, i)
            owns = word == "his" or word == "her" and _possessive_her(before, following, second, tail)
            said_of = owns and _said_of_the_subject(plain[:i])
            other = _other_person(meant, GENDER[word], previous, previous_answer, told) if said_of or not owns else None
            if owns and not said_of:
                out.append(f"{meant}'s{tail}")
            else:
                out.append((f"{other}'s" if owns else other) + tail if other else token)
        elif meant and word in ("himself", "herself") and meant in subjects:
            out.append(token)  # 'What did Hester Marrow call herself?', not '... call Hester Marrow?'
        elif meant and word in ("she", "he", "him", "himself", "herself"):
            out.append(meant + tail)
            if word in ("she", "he"):
                subjects.add(meant)
        elif meant and word in ("his", "hers"):
            out.append(f"{meant}'s" + tail)
        elif meant and word == "her":
            owns = _possessive_her(before, following, _second_word_after(plain, i), tail)
            out.append((f"{meant}'s" if owns else meant) + tail)
        elif thing and word in ("it", "its") and _IT.match(token):
            out.append((thing if word == "it" else f"{thing}'s") + tail)
            put_in = True
        elif (group or things) and word in ("they", "them", "their"):
            owner = group or things or ""
            out.append((owner if word != "their" else _possessive(owner)) + tail)
            put_in = put_in or not group
        elif place and word == "there" and not _existential(before, following):
            out.append(place + tail)
        elif year and word == "then" and not following:
            out.append(f"in {year}" + tail)
        else:
            out.append(token)
    return "".join(out), (person if pronoun else None), (pronoun if person else None), put_in


def _people_by_gender(
    question: str, pronoun: str | None, person: str | None, previous: Rewrite, previous_answer: str, told: str
) -> dict[str, str]:
    """Whom each gender's pronouns mean: `person` for the first pronoun's, and for the other gender's
    ('who is he to her?') the person `_person` finds for it, when that is someone else, whether or not
    the first was found; a pronoun of a gender nobody was found for stays as asked (never 'Who is Elias
    to Elias?')."""
    if not pronoun:
        return {}
    people = {GENDER[pronoun]: person} if person else {}
    other = next((w for w in words(question) if w in GENDER and GENDER[w] != GENDER[pronoun]), None)
    if other:
        found = _as_the_answer_spells(_person(previous, previous_answer, other, told), previous_answer)
        if found and found != person:
            people[GENDER[other]] = found
    return people


def _said_of_the_subject(before: list[str]) -> bool:
    """Whether the words before a her/his end 'was she' or 'she was' ('was she her sister?', 'is he his
    heir?'): what follows is said of the she/he, so it is someone else's."""
    last = [word for word in before if word][-2:]
    return len(last) == 2 and bool({"she", "he"} & set(last)) and bool(_COPULAS & set(last))


def _other_person(person: str, gender: str, previous: Rewrite, previous_answer: str, told: str) -> str | None:
    """The one person other than `person` the last question, its context or its answer names whom the
    conversation shows as `gender` ('Anna Holt met Clara Brand': Clara Brand for the 'her' of 'did she
    meet her?'); None when there is none or more than one (the pronoun stays as asked)."""
    texts = (previous.core, previous.context, _statements(previous_answer))
    mine = set(person.split())
    others = {
        name: None
        for text in texts
        for name in _people_in(text, used_as_names(told))
        if not mine & set(name.split()) and _kind(name, told) == gender
    }
    return next(iter(others)) if len(others) == 1 else None


_IT = re.compile(r"(?i:its?)\b(?!['\u2019])")  # 'it', 'its'; not "it's" (it is)

# Words that follow an object "her" ('who met her later?', 'did they send her away?') rather than a
# noun she owns ('her father'); a word in -ly is one too ('did he marry her eventually?') unless it is
# one of the nouns spelt so ('her family'). Each can also stand before a noun ('her later years', 'her
# early life', 'her first husband'), and the place words after a preposition are nouns ('in her home').
_TIME_AFTER_HER = frozenset(
    """later earlier afterwards afterward today tonight yesterday tomorrow ago soon instead anyway though
    either neither ever never already still yet anymore together apart alone well forever""".split()
)
_PLACE_AFTER_HER = frozenset(
    """away back home inside outside upstairs downstairs abroad overseas anywhere somewhere everywhere
    nowhere elsewhere first last next""".split()
)
_NOUNS_IN_LY = frozenset(
    """family ally reply supply belly lily holly jelly bully rally assembly anomaly monopoly folly fly
    butterfly dragonfly melancholy italy july""".split()
)
_COPULAS = frozenset("is was are were be been being become became".split())
_PLACE_PREPOSITIONS = frozenset("in at from into behind of on near by under over through within around".split())


def _possessive_her(before: str, following: str, second: str, tail: str) -> bool:
    """Whether 'her' owns the word after it ('her father', 'was her home', 'her first husband') rather
    than being the verb's object ('saw her', 'saw her later', 'brought her home', 'saw her, then').
    `second` is the word after the following one ('' at the end)."""
    if tail or not following or following in STOPWORDS:
        return False
    if before in _COPULAS:
        return True
    ends_phrase = not second or second in STOPWORDS
    if following in _TIME_AFTER_HER or (following.endswith("ly") and following not in _NOUNS_IN_LY):
        return not ends_phrase
    if following in _PLACE_AFTER_HER:
        return before in _PLACE_PREPOSITIONS or not ends_phrase
    return True


def _second_word_after(plain: list[str], i: int) -> str:
    """The second word after token `i` ('' when there is none): whether a word after 'her' ends the phrase."""
    found = [word for word in plain[i + 1 :] if word][:2]
    return found[1] if len(found) == 2 else ""


SAME_NAME_SIMILARITY = 0.8  # each word of a misspelt name this close to the answer's ('Kitow', 'Kittow')


def _as_the_answer_spells(name: str | None, answer: str) -> str | None:
    """'Morwena Kitow' -> 'Morwenna Kittow': a person the user misspelt is searched by the spelling the
    last answer quoted for them (as many words, each close), since the misspelling finds nothing."""
    if name is None or name in answer:
        return name
    words_of_name = name.lower().split()
    for candidate in _people_in(_statements(answer)):
        spelled = candidate.lower().split()
        if len(spelled) == len(words_of_name) and all(
            SequenceMatcher(None, typed, quoted).ratio() >= SAME_NAME_SIMILARITY
            for typed, quoted in zip(words_of_name, spelled, strict=True)
        ):
            return candidate
    return name


def _group(previous: Rewrite, *, listed: bool = True) -> str | None:
    """Who 'they' means: a family or people the previous question named with 'the' and a plural ('When
    did the Marrows arrive?': the Marrows), else, when `listed`, people it named together ('Who were Elias
    and Hester Marrow?'; not in a question whose 'she' is one of them: 'Where did she sell them?');
    None when it named none (then the context carries it)."""
    places = _places_in(previous.core)  # 'in the Hebrides' is where, not who
    for name in _scan_names(previous.core):
        if (
            name.after_the
            and name.text.endswith("s")
            and not name.text.endswith("ss")
            and name.text not in places
        ):
            return f"the {name.text}"
    return _named_together(previous.core) if listed else None


def _answered_together(previous: Rewrite, previous_answer: str) -> str | None:
    """Who 'they' means after a who-question whose answer's first quote names people together ('Who kept
    the Skerry light?' -> 'Jude Penhallow and Ansel Trask kept ...'): all of them, as the quote names
    them. None after any other question, or an answer naming fewer than two together."""
    if not ASKS_WHO.search(previous.core):
        return None
    return _named_together(_first_statement(previous_answer))


def _named_together(text: str) -> str | None:
    """Two or more people the text names in one list: 'Elias and Hester Marrow', 'Jacob, Hester and
    Elias' (not 'Did Hester outlive Elias?')."""
    people = _people_in(text)
    if len(people) < 2:
        return None
    name = "|".join(re.escape(person) for person in sorted(people, key=len, reverse=True))
    together = re.search(rf"\b(?:{name})(?:,\s+(?:{name}))*,?\s+and\s+(?:{name})\b", text)
    return together.group(0) if together else None


# Verbs a question writes right after the thing it asks about ('When did the railway close?', 'How many
# arches does the viaduct have?'): where the thing's words end when no stop word marks it. Past forms
# ('-ed', 'built', 'made') end it too ('When was the harbour crane built?').
QUESTION_VERBS = frozenset(
    set(IRREGULAR.values())
    | set(
        """be have do carry close open reopen cost start end stop finish happen use need work last reach
        lay live die fail sink hit cross connect join serve replace protect prevent contain show change look
        weigh measure move turn flash shine sound burn light arrive sail land fall rise grow eat feed produce
        store lift hang mean look seem become belong sell buy pull push help cause kill save hold keep want
        include involve require take play stay return travel visit flood swarm survive collapse burst open
        operate stand run shut attract collect hatch""".split()
    )
    # irregular past forms the stemmer's list leaves out ('When is the lamp lit?')
    | set("lit laid hung dug fed swept spun wound bent dealt".split())
)
# Head words of a phrase that names people, not a thing ('who was the first keeper?', 'the engineer').
PERSON_NOUNS = (
    TITLES
    | frozenset(RELATIVES)
    | frozenset(GENDERED_WORDS)
    | frozenset(
        """keepers engineer engineers assistant assistants stationmaster master builder builders owner owners
        founder founders surveyor pilot pilots crew crews navvies passengers passenger volunteers volunteer
        people person family families children child men women workers worker author writer beekeeper
        beekeepers farmers farmer fishermen fisherman sailor sailors superintendent vicar curate survivors
        survivor members member treasurer treasurers secretary secretaries chair chairman chairwoman
        chairperson clerk clerks manager managers director directors officer officers""".split()
    )
)
# Words of a request about the last answer, whose 'it' is that answer ('summarise it', 'explain it').
ANSWER_REQUESTS = frozenset(
    "summarise summarize recap describe expand clarify repeat rephrase simplify continue explain elaborate".split()
)
# Words that end a thing's phrase as its verbs do ('When was the light last lit?').
PHRASE_ADVERBS = frozenset(
    """still ever first last already usually often always never originally finally really actually mainly
    mostly typically normally generally ever since later soon""".split()
)
NOUNS_IN_ING = frozenset(
    """building ceiling landing clothing wedding morning evening painting railing meeting hearing briefing
    gathering funding housing spending crossing""".split()
)
# Words ending in 's' that name one thing ('the lens', 'the glass').
SINGULAR_IN_S = frozenset("lens gas bus news series species canvas atlas chaos apparatus".split())
_ARTICLES = frozenset(("the", "a", "an"))
_DO_OR_MODAL = re.compile(r"\b(?i:did|does|do|can|could|will|would|should|might|must)\b")
# 'it' that points at nothing: 'is it true that', 'how long did it take', 'what made it possible',
# 'it was raining', 'why is it that', 'what was it like to'.
_DUMMY_COMPLEMENT = (
    r"(?:true|possible|impossible|likely|unlikely|known|said|believed|thought|reported|claimed|rumou?red"
    r"|necessary|important|hard|easy|difficult|common|usual|rare|the\s+case|worth|time|late|early|dark"
    r"|cold|warm|hot|windy|foggy|stormy|raining|snowing|sunny|like\s+to|that|who)\b"
)
_DUMMY_IT = re.compile(
    r"\bit\s+(?:takes?|took|taken|taking)\b"
    rf"|\b(?:is|was|isn'?t|wasn'?t)\s+it\s+(?:not\s+)?{_DUMMY_COMPLEMENT}"
    rf"|\bit(?:\s+is|\s+was|'s|\u2019s|\s+seems?|\s+seemed)\s+(?:not\s+)?{_DUMMY_COMPLEMENT}"
    r"|\b(?:make|makes|made|making)\s+it\s+(?:possible|impossible|hard|harder|easy|easier|difficult"
    r"|necessary|likely|unlikely|worse|better)\b"
    r"|\bit\s+(?:rained|snowed|rains|snows|rain|snow)\b|\bwhat\s+time\s+(?:is|was)\s+it\b",
    re.IGNORECASE,
)
# A what/which question whose answer is itself a thing ('What did the keeper find?', 'Which ship sank?'):
# a following 'it' may be that answer. Not one asking what something is or was, what happened, or when.
_ASKS_FOR_A_THING = re.compile(
    r"^\s*(?i:what|which)\b(?!\s+(?i:is|was|are|were|happened|happens|year|time|date|day|month)\b)"
    r"(?!.*\b(?i:do|doing|done)\s*[?.!]*$)"
)
_PHRASE_TOKEN = re.compile(r"[A-Za-z\u00c0-\u024f][\w'\u2019-]*|\d\w*|[^\w\s]")


@dataclass(frozen=True)
class _Thing:
    phrase: str  # as the question wrote it, with its article ('the railway', 'the Margaret Ellen')
    plural: bool
    person: bool  # 'the first keeper', 'the engineer': a person, never 'it'


def _thing(previous: Rewrite, question: str, *, plural: bool) -> str | None:
    """What 'it' (or, `plural`, 'they') means: the one thing the previous question asked about, by a
    common noun phrase or a named thing ('When did the railway close?': 'the railway'). None when unsure:
    that question named two or more things, or a person; 'it' is a dummy ('how long did it take', 'is it
    true that'); or it may be the answer to a what-question ('What did the keeper find?' -> 'what was it?')."""
    if not plural and _DUMMY_IT.search(question) or ANSWER_REQUESTS & set(words(question)):
        return None  # 'summarise it', 'explain it': the last answer
    if previous.it and not plural:
        return previous.it
    core = previous.core
    if plural and re.match(r"\s*(?i:who)\b", core):
        return None  # 'Who lived in the Hebrides?' -> 'what did they grow?': they are the answer
    if _points_back(core) or _people_in(core) or _asked_who_is(core) or previous.person:
        return None
    if _ASKS_FOR_A_THING.match(core):
        return None
    things = _things_in(core)
    if things is None or len(things) != 1:
        return None
    thing = things[0]
    if thing.person or thing.plural != plural or _is_subject(thing, core):
        return None
    return thing.phrase


def _is_subject(thing: _Thing, core: str) -> bool:
    """'Who was the first keeper?': the who-question asks who the thing is (a person after all)."""
    return bool(re.match(rf"\s*(?:who)\s+(?:is|was|are|were)\s+{re.escape(thing.phrase)}\b", core, re.IGNORECASE))


def _things_in(question: str) -> list[_Thing] | None:
    """The things a question names: each phrase opened by the/a/an ('the harbour crane'), and each name
    not inside one (a place, 'Kestrel Optics'). None when a phrase's end cannot be told ('Did the railway
    electrify lines?')."""
    tokens = _PHRASE_TOKEN.findall(question)
    do_question = bool(_DO_OR_MODAL.search(question))
    found: list[_Thing] = []
    covered: set[str] = set()
    i = 0
    while i < len(tokens):
        if tokens[i].lower() not in _ARTICLES:
            i += 1
            continue
        run = _phrase_run(tokens, i + 1)
        if not run:
            i += 1
            continue
        following = tokens[i + 1 + len(run)].lower() if i + 1 + len(run) < len(tokens) else ""
        phrase = _phrase_words(run, do_question=do_question, following=following)
        if phrase is None:
            return None
        covered.update(_POSSESSIVE.sub("", word) for word in phrase)
        found += _phrase_things(tokens[i].lower(), phrase)
        i += 1 + len(phrase)
    found += [
        _Thing(name, False, False)
        for name in names_in(question)
        if not set(name.split()) <= covered and not _after_a_number(name, question)
    ]
    found += [_Thing(m.group(0), False, False) for m in _NUMBERED_LABEL.finditer(question)]
    return found


# a thing named by a noun and its number: 'version 2.0', 'plot 7', 'room 4B' ('what did it add?' -> 'What did
# version 2.0 add?')
_NUMBERED_LABEL = re.compile(
    r"\b(?:version|release|plot|room|ward|route|platform|gate|chapter|section|phase|level|block|floor|unit|"
    r"bay|pitch|court|flat|stage|lot|case)\s+v?\d+(?:\.\d+)*(?:\.x|[a-z])?(?![\w.]*\d)",
    re.IGNORECASE,
)


def _after_a_number(name: str, question: str) -> bool:
    """'GB' of 'more than 2 GB of memory', 'MB' of '20 MB': a unit, no thing 'it' may stand for."""
    return re.search(rf"\d\s*{re.escape(name)}\b", question) is not None


def _phrase_run(tokens: list[str], start: int) -> list[str]:
    """The words after an article up to the next stop word, number or punctuation (at most MAX_NAME_WORDS)."""
    run: list[str] = []
    for at, token in enumerate(tokens[start : start + MAX_NAME_WORDS]):
        # a year or number right after the article is part of the name ('the 2021 report', 'the 1887 bridge')
        numbered = at == 0 and token.isdigit() and start + 1 < len(tokens) and tokens[start + 1][:1].isalpha()
        if (not token[:1].isalpha() and not numbered) or token.lower() in STOPWORDS:
            break
        run.append(token)
    return run


def _phrase_words(run: list[str], *, do_question: bool, following: str) -> list[str] | None:
    """The run's words that name the thing: up to the first verb after its first word ('railway close').
    In a did/does question whose run holds no known verb: all of it when a verb that is a stop word
    follows ('does the queen excluder do?'), all but the last when the clause ends there or a
    preposition follows ('did the railway electrify?'), else None (the verb cannot be told)."""
    for j, word in enumerate(run[1:], start=1):
        if _looks_like_a_verb(word) and not _noun_before_a_verb(word, run[j + 1 : j + 2]):
            return run[:j]
    if not do_question or len(run) == 1 or following in _STOP_VERBS:
        return run
    return run[:-1] if not following[:1].isalpha() or following in STOPWORDS else None


_STOP_VERBS = frozenset("do does did doing have has had having be been being is was are were".split())


def _noun_before_a_verb(word: str, after: list[str]) -> bool:
    """Whether a word that can be a verb is the thing's noun, the verb after it being the question's ('lift'
    of 'How much will the new lift cost?', 'store' of 'When was the village store opened?'): a bare verb
    that is no adverb, right before another verb of the run that is no -ing form (the verb's own object
    in 'When did the Wren stop running?')."""
    lower, following = word.lower(), after[0].lower() if after else ""
    if not following or following.endswith("ing") or lower not in QUESTION_VERBS or lower in PHRASE_ADVERBS:
        return False
    return _looks_like_a_verb(following)


def _looks_like_a_verb(word: str) -> bool:
    """A word after a thing's first one that ends its phrase: a verb, a past or -ing form, or an adverb
    ('Is the railway still running?')."""
    lower = word.lower()
    if word[:1].isupper() or lower in NOUNS_IN_ING:
        return False
    return (
        lower in QUESTION_VERBS
        or lower in IRREGULAR
        or lower in PHRASE_ADVERBS
        or (lower.endswith(("ed", "ing")) and len(lower) > 4)
    )


def _phrase_things(article: str, phrase: list[str]) -> list[_Thing]:
    """The thing an article's phrase names; two for a possessive ('the railway's cargo')."""
    owner = next((i for i, word in enumerate(phrase[:-1]) if _POSSESSIVE.search(word)), None)
    if owner is None:
        return [_phrase_thing(f"{article} {' '.join(phrase)}")]
    return [_phrase_thing(f"{article} {' '.join(phrase[: owner + 1])}"), _phrase_thing(" ".join(phrase[owner + 1 :]))]


def _phrase_thing(phrase: str) -> _Thing:
    head = _POSSESSIVE.sub("", phrase.split()[-1]).lower()
    plural = head.endswith("s") and not head.endswith(("ss", "us", "is")) and head not in SINGULAR_IN_S
    return _Thing(phrase, plural=plural, person=head in PERSON_NOUNS or head.rstrip("s") in PERSON_NOUNS)


def _possessive(owner: str) -> str:
    """'the Marrows' -> "the Marrows'", 'the bees' -> "the bees'"."""
    return f"{owner}'" + ("" if owner.endswith("s") else "s")


def _existential(before: str, following: str) -> bool:
    """'there is', 'is there', 'were there' do not point at a place."""
    return following in EXISTENTIAL_AFTER_THERE or before in EXISTENTIAL_AFTER_THERE


_NON_WORD = re.compile(r"\W")


def _neighbours(plain: list[str]) -> tuple[list[str], list[str]]:
    """For each token, the nearest word before it and after it ('' at either end), skipping tokens that
    hold no word ('?', white space): two passes, so a flood of question marks costs no more than words."""
    befores, last = [], ""
    for word in plain:
        befores.append(last)
        last = word or last
    followings, last = [""] * len(plain), ""
    for i in range(len(plain) - 1, -1, -1):
        followings[i] = last
        last = plain[i] or last
    return befores, followings


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def _cut(text: str, limit: int = MAX_CONTEXT_CHARS) -> str:
    """The text within `limit` characters, an ellipsis marking a cut."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"
