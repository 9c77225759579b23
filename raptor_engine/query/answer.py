"""Answers from retrieved context, and the citation mapping every answerer shares.

The default `ExtractiveAnswerer` needs no model and no key: it quotes the context sentences that best
answer the question (embedding similarity by the embedder that built the tree, blended with the
question's terms, names and numbers), each followed by the [n] of the context block it came from,
never a heading and never the same sentence twice. An LLM answerer (llm.py) writes prose with the
same markers. `cite_pages` gives citations the page of what was quoted ("p. 4", "pp. 3-4").
"""

from __future__ import annotations

import asyncio
import functools
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np

from ..ingest.chunk import UNSPACED_LETTERS, in_code
from ..ingest.sentences import (
    STOPWORDS,
    THEMATIC,
    NewSentences,
    Sentence,
    content_terms,
    in_bigrams,
    is_heading,
    jaccard,
    labelled_row,
    sentence_key,
    sentences_of,
    stem,
    strip_bullet,
    table_cells,
    units,
    word_count,
    words,
)
from ..ingest.transcript import (
    STAMP,
    VOICE_END,
    is_filler,
    label_end,
    labelled_lines,
    reads_as_turns,
    speaker_of,
    spoken_lines,
)
from ..tree.embed import Embedder, embedded_alone
from ..types import AnswerDraft, Citation, ContextNode, Turn
from .asked import context_documents, named_files, what_is_asked, without_asides
from .code_answers import code_result_lines, is_setting, setting_keys
from .compared import MONTH_NAME, compared_times, holds_figures_of
from .followup import (
    DOCUMENT_ENDS,
    DOCUMENT_OPENS,
    MAX_PREVIOUS_ANSWER_CHARS,
    NOTHING_RELATED,
    OTHER_LANGUAGE,
    PERSON_PRONOUNS,
    PREVIOUS_ANSWERS,
    WEAK_MATCH,
    WHOLE_TEXT_VOCABULARY,
    Rewrite,
    in_quotes,
    names_in,
    onward_ask,
    onward_person,
    previous_answers,
    quotes_in,
    split_standalone,
    standalone_question,
    subject_terms,
)
from .grounding import (
    Grounding,
    GroundingModel,
    asks_a_negative,
    content_share,
    load_grounding,
    respellings,
    says_the_asked_negative,
    subject_is_a_pronoun,
)
from .language import other_language
from .onward import pick_onward
from .ranker import (
    CITATION_BRACKET,
    HAS_DIGIT,
    NARRATIVE,
    SENTENCE_FEATURES,
    Ranker,
    asks_short_fact,
    document_kind,
)
from .tables import (
    LISTS_COUNTED_ROWS,
    Row,
    TablePick,
    joined_rows,
    row_cells,
    said_too_big,
    table_pick,
    whole_documents,
)
from .verdict import CHECKS_LAST_ANSWER

MARKER = re.compile(r"\[(\d{1,4})\]")
QUOTE = re.compile(r"\u201c(.+?)\u201d")
QUOTES = 3  # sentences the extractive answer quotes
MAX_SENTENCES = 200  # sentences of context considered, best nodes first
MIN_WORDS = 4  # shorter sentences ("Yes.", "See below.") answer nothing on their own...
SHORT_MIN_WORDS, SHORT_MIN_TERMS = 3, 2  # ...unless two of three carry content ("The lamp failed.")
NOTHING_FOUND = "The documents hold nothing that answers this question."
FOUND = "From the documents:"
LEADS = {Grounding.ANSWERED: FOUND, Grounding.CLOSEST: WEAK_MATCH, Grounding.NOTHING: NOTHING_RELATED}

# Ranking (see ExtractiveAnswerer); similarities are cosines of normalised embeddings.
EMBED_WEIGHT = 0.6
LEXICAL_WEIGHT = 0.35  # share of the question's (weighted) terms the sentence holds
KIND_BONUS = 0.08  # the sentence holds what the question asks for: a year for "when", a reason for "why"
NUMBER_WEIGHT = 1.5  # a number or year of the question counts more than an ordinary term
CARRIED_WEIGHT = 0.3  # a term only the follow-up's carried context holds
# A name the rewrite put in place of a pronoun ("she" -> "Morwenna Kittow"): the answering sentence
# usually says "she" again, so what the follow-up asks ("final entry") must outweigh the name.
RESOLVED_NAME_WEIGHT = 0.4
CORE_SHARE = 0.75  # the follow-up's own words in the ranking query, when it has words of its own
ELLIPSIS_CORE_SHARE = 0.35  # ... and when it is a bare "why?" or "tell me more"
QUOTED_PENALTY = 0.3  # a sentence the last answers already quoted
ANSWERS_ANEW_SHARE = 0.5  # ... of it, when the sentence answers the follow-up in its answer's form
ASKED_FOR_MORE_PENALTY = 1.0  # ... when the follow-up asks for something else ("what else", "tell me more")
ASKS_FOR_MORE = re.compile(r"\b(?:else|more|other|others|another|besides|apart from|next)\b", re.IGNORECASE)
RELATIVE_FLOOR = 0.5  # a quote scoring under half the best one is left out
FRAGMENT_WORDS = 12  # a quote shorter than this ("'Naturally,' Korvin said.") is read with the next sentence
NEAR_DUPLICATE = 0.7  # term overlap (Jaccard) at which two sentences say the same
CONTAINED = 0.9  # share of the shorter sentence's terms found in the other
THEME_SIMILARITY = 0.15  # a thematic question's words ("document", "about") say little
THEME_CENTRALITY = 0.6  # cosine to the mean of the context's sentences
SUMMARY_BONUS = 0.1  # for the top layer of the context, less for lower ones
OPENING_BONUS = 0.15  # a document's opening usually says what it is about
LEAD_BONUS = 0.1  # ... and its first sentence most of all ("The prize is open to writers ...", a report's lead)
# a sentence that opens by pointing back ("It was drawn up by ...") says little when read alone, as a
# thematic answer's quotes are read
DANGLING_PENALTY = 0.1
OPENING_CHARS = 1500
# A sentence holding typesetting source a PDF or LaTeX conversion left in it (inline math "$k=20$",
# "\mathbf {r}", a label "tab:int-stats", an option "[leftmargin=4mm]") reads badly as a quote, and the
# sentence model scores such long sentences highly whatever they say; a price ("$5") or two shell
# variables ("$HOME and $PATH") are no markup.
MARKUP_RESIDUE = re.compile(
    r"\$(?![\d\s])[^$\n]{0,80}?(?<!\s)\$|\\[a-zA-Z]+\s*\{|\b(?:tab|fig|sec|eq):[a-z][\w-]*|\[[a-z]+=\d[^\]]*\]"
)
MARKUP_PENALTY = 0.1  # chosen on the training split (0.05 moved no reference into the quotes)
# A sentence that only points at a table, figure, equation or section ("Table 3 shows the results.",
# "Figure FIGREF10 illustrates the UTCNN model.", "The score is calculated as in (4).") says nothing itself:
# what answers is in the thing pointed at, which the text does not hold. One that also states something
# ("Table 2 shows that ...", "Table 4 shows: the 21% gain ...") is no mere pointer.
_POINTED_THING = r"(?:tables?|tab\.|figures?|figs?\.|equations?|eqs?\.|algorithms?|sections?|sec\.|appendix|appendices)"
_LABEL_WORD = r"(?:TABREF|FIGREF|SECREF|EQREF|DISPLAY_FORM)\d+"  # a converted paper's cross-reference labels
_POINTED = (
    rf"(?:{_POINTED_THING}\s+(?:\d+(?:\.\d+)*[a-z]?|\(\d+\)|[IVX]+\b|{_LABEL_WORD})|{_LABEL_WORD}"
    rf"|\(\s*(?:\d+|{_LABEL_WORD})\s*\))"
)
POINTS_AT_START = re.compile(
    rf"^\W*(?:the\s+)?{_POINTED}(?:\s*(?:,|and|&|-|\u2013)\s*(?:{_POINTED}|\d+))*\s+"
    r"(?:shows?|illustrates?|presents?|lists?|summari[sz]es?|gives?|reports?|depicts?|displays?|provides?"
    r"|describes?|compares?|contains?|details?)\b",
    re.IGNORECASE,
)
POINTS_AT_END = re.compile(
    r"\b(?:(?:shown|given|illustrated|listed|presented|defined|calculated|computed|described|summari[sz]ed|reported"
    rf"|depicted|formulated|detailed)\s+(?:as\s+)?in|as\s+in)\s+{_POINTED}\s*[.:;]?\s*$",
    re.IGNORECASE,
)
POINTED_LABEL = re.compile(rf"{_POINTED}(?:\s*(?:,|and|&|-|\u2013)\s*\d+\b)*", re.IGNORECASE)  # "Tables 2 and 3"
ASKS_ABOUT_A_POINTED = re.compile(rf"\b{_POINTED_THING}|{_LABEL_WORD}", re.IGNORECASE)
POINTER_PENALTY = MARKUP_PENALTY  # chosen on the training split: 0.05 gained less recall, 0.2 the same
# Transcripts (a context of speaker turns: `context_speakers`)
SPEAKER_BONUS = 0.2  # a sentence of the speaker the question names ("What did Marketing think ...?")
# A summary question about one topic ("Summarize the discussion about use cases", "... User Interface's
# opinions towards the object"): the topic, not the meeting's centre, says which turns answer it.
TOPIC_SIMILARITY, TOPIC_LEXICAL, TOPIC_CENTRALITY = 0.5, 0.3, 0.2
# A question about a meeting's discussion ("What did the group discuss about the object?", "What were
# the views on the price?") asks for a summary of it, as "Summarize the discussion about ..." does.
DISCUSSION = re.compile(
    r"\b(?:discuss(?:ed|es|ing|ion|ions)?|talk(?:ed|s)? about|debated?|opinions?|views? (?:on|of|about))\b",
    re.IGNORECASE,
)
# What a summary question about a meeting says without naming a topic
MEETING_VOCABULARY = frozenset(
    """meeting meetings discussion discussions discuss discussed discussing conversation session call
    transcript minutes group team everyone opinion opinions view views decision decisions decide decided
    talk talked propose proposed proposal proposals think thought towards toward regarding""".split()
)
_NUMBER_WORDS = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|"
    r"hundred|thousand|million|dozen|once|twice|half|several|every"
)
# Each kind's Chinese, Japanese and Korean words (after the `|`) match only text in those scripts: a year is
# written against its 年/년 ("1921年"), a count against its measure word ("十二名"), a foreign name with a
# middle dot ("安布罗斯·基托").
_CJK_YEAR = r"|(?:1[0-9]{3}|20[0-9]{2})(?=[年년])|世纪|世紀|年代"
_CJK_COUNT = rf"|(?<=[{UNSPACED_LETTERS}])\d|[一二三四五六七八九十百千万萬两兩]+(?=[名个個位次人件本只隻座])"
_CJK_NAME = rf"|[{UNSPACED_LETTERS}][\u00b7\u30fb][{UNSPACED_LETTERS}]"
# "What was the date / cost / cause / name of X?": the attribute asked for says the kind of answer, as a
# question word does ("When ...?", "How much ...?", "Why ...?", "Who ...?", "Where ...?")
_WHAT_IS_THE = r"\bwhat\s+(?:is|was|are|were|'s)\s+the\s+(?:[\w-]+\s+)?"
_DATE_ATTRIBUTES = r"date|day|year"
# A time told without a date: a season or time of day ("that winter", "on the evening tide"), a clock time
# ("at 09:05"), or one told from another ("two years later", "the following autumn", "shortly after")
_TIMES_OF_YEAR_AND_DAY = (
    r"spring|summer|autumn|winter|springtime|summertime|wintertime|morning|afternoon|evening|night|midnight|noon"
    r"|dawn|dusk"
)
_RELATIVE_TIME = (
    rf"\b(?:{_TIMES_OF_YEAR_AND_DAY}|later|earlier|afterwards|yesterday|tonight)\b"
    r"|\b(?:following|next|previous|same)\s+(?:day|week|month|year|season)\b|\b\d{1,2}:\d{2}\b"
    r"|\b(?:shortly|soon|just|not\s+long)\s+(?:after|before)\b"
)
_NUMBER_ATTRIBUTES = (
    r"size|number|amount|count|total|length|population|cost|price|fee|fare|value|height|width|depth|distance"
    r"|weight|duration|area|age"
)
_REASON_ATTRIBUTES = r"cause|reason|purpose|aim|goal|point|result|outcome|effect|consequence|motive"
_NAME_ATTRIBUTES = r"name|title"
_CAUSING = (
    r"caused|causes|led\s+to|leads\s+to|triggered|sparked|brought\s+about|set\s+off"
    r"|started(?=\s+(?:the|a|an|this|that|its|their|his|her)\b)"  # "What started the fire?", not "What started in 1990?"
)
_WHAT_FOR = r"^\W*what\s+(?:is|are|was|were)\s+[^?]+?\s+(?:used\s+)?for\s*[?.!]*\s*$"  # "What is the rope for?"
_PLACE_ATTRIBUTES = r"location|place|origin|site"
ATTRIBUTE_OF = re.compile(
    rf"{_WHAT_IS_THE}(?P<attribute>{_DATE_ATTRIBUTES}|{_NUMBER_ATTRIBUTES}|{_REASON_ATTRIBUTES}|{_NAME_ATTRIBUTES}"
    rf"|{_PLACE_ATTRIBUTES})s?\s+(?:of|for|behind)\b",
    re.IGNORECASE,
)
ANSWER_KINDS: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = (
    (
        re.compile(
            rf"\b(?:when|what year|which year|what date|since when)\b|{_WHAT_IS_THE}(?:{_DATE_ATTRIBUTES})s?\s+of\b"
            r"|什么时候|什麼時候|何时|何時|哪一?年|几时|幾時|いつ|何年|언제",
            re.I,
        ),
        re.compile(rf"\b(?:1[0-9]{{3}}|20[0-9]{{2}}|{MONTH_NAME}|century|decade|age of|aged)\b|{_RELATIVE_TIME}{_CJK_YEAR}", re.I),
    ),
    (
        re.compile(
            r"\bhow (?:many|much|long|often|far|big|large|tall|high|deep|heavy|old)\b"
            rf"|{_WHAT_IS_THE}(?:{_NUMBER_ATTRIBUTES})s?\b"
            r"|多少|几[个個名位次]|幾[個名位次]|いくつ|何人|몇",
            re.I,
        ),
        # a quantity: a number standing as a word, not a label's digits (BIBREF13, Table 3, [12]: QUANTITY_LABELS)
        re.compile(rf"(?<![\w.])\d|\b(?:{_NUMBER_WORDS})\b{_CJK_COUNT}", re.I),
    ),
    (
        re.compile(
            rf"\b(?:why|how come|for what reason|what for)\b|{_WHAT_IS_THE}(?:{_REASON_ATTRIBUTES})s?\s+(?:of|for|behind)\b"
            rf"|\bwhat\s+(?:{_CAUSING})\b|{_WHAT_FOR}"
            r"|为什么|為什麼|为何|為何|なぜ|どうして|왜",
            re.I,
        ),
        # a reason or a purpose; "since" only where no time follows ("since 2015" says when)
        re.compile(
            r"\b(?:because|so that|in order to|due to|as a result|therefore|caused|reason|so as to|on account of"
            r"|owing to|thanks to|in (?:honou?r|memory) of|to (?:avoid|prevent)|for fear|purpose)\b"
            # a purpose ("was built to measure", "put there to guide") and a cause ("started when a lamp fell")
            r"|\b(?:built|made|designed|used|intended|meant|put|placed|installed|founded|established|created|set up)"
            r"\s+(?:[\w'\u2019-]+\s+){0,2}?to\s+(?!(?:the|a|an|be|his|her|its|their|this|that)\b)[a-z]"
            r"|\b(?:started|began|broke out|arose)\s+(?:[\w'\u2019-]+\s+){0,3}?(?:when|after|because)\b"
            rf"|\bsince\b(?!\s+(?:\d|then|(?:early|late|last|the)\b|{MONTH_NAME}))|,\s+so\s+(?!that\b|far\b|much\b)"
            r"|因为|因為|由于|由於|所以|因此|ために|ので|때문",
            re.I,
        ),
    ),
    (
        re.compile(rf"\b(?:who|whom|whose)\b|{_WHAT_IS_THE}(?:{_NAME_ATTRIBUTES})s?\s+of\b|谁|誰|哪位|だれ|누구", re.I),
        # a name: two capitalised words, or one that something is called ("called Daniel Quill", "named Ossian")
        re.compile(
            r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+"
            r"|\b(?i:named|called|known\s+as|christened)\s+(?:the\s+)?[A-Z]" + _CJK_NAME
        ),
    ),
    (
        # "Where do they get the recipes from?", "Where does the story take place?"
        re.compile(
            rf"\bwhere\b|\b(?:what|which) (?:source|sources|place|location|planet|country|city)\b"
            rf"|{_WHAT_IS_THE}(?:{_PLACE_ATTRIBUTES})s?\s+of\b",
            re.I,
        ),
        # a place or source: a preposition before a name ("on Mars", "from Twitter") or a web domain
        re.compile(
            r"\b(?:in|at|on|from|near|to|into|onto|aboard|inside|outside|across|via)\s+(?:the\s+)?[A-Z][\w'-]"
            r"|\b[\w-]+\.(?:com|org|net|edu|gov|io)\b"
        ),
    ),
)
# What carries digits without being a quantity: a citation or cross-reference label ("BIBREF13",
# "INLINEFORM0", "Table 3", "Fig. 2", "Section 4.1", "[12]", "［2, 3］"); removed before a number is looked
# for, so "how many tags?" does not prefer a sentence that only points at Figure 16.
QUANTITY_LABELS = re.compile(
    r"\b[A-Za-z_]+\d[\w]*|\b(?:Table|Tab\.|Figure|Fig\.|Section|Sec\.|Eq\.|Equation|Appendix|Chapter)\s*\d+(?:\.\d+)*"
    rf"|{CITATION_BRACKET}"
)


# What carries digits without being a quantity either: a date ("in 1839", "between 1820 and 1836",
# "3 September 2024", "March 1962", "the 1950s"). "How many men were lost?" is not answered by the year
# the tower was built. A span followed by what it counts ("from 1500 to 2000 words", "1200 to 1800
# feet") is a quantity: a lower-case word after a span of years is one of the words that go on a
# sentence ("between 1820 and 1836 the tower ...", "1914-1918 when ...").
_YEAR = r"(?:1[0-9]{3}|20[0-9]{2})"
_DATE_WORDS = rf"in|since|until|till|between|before|after|during|circa|year|{MONTH_NAME}"
_AFTER_A_DATE = (
    r"and|or|but|when|while|where|which|who|whose|that|the|a|an|in|on|at|by|for|to|of|as|after|before|until|"
    r"during|with|from|he|she|it|they|we|i|you|his|her|its|their|there|this|these|was|were|is|are|had|has|have|"
    r"did|saw|brought|marked|followed|ended|began|passed"
)
COUNTED_SPAN_END = rf"(?!\s+(?!(?:{_AFTER_A_DATE})\b)(?-i:[a-z]))"
DATES = re.compile(
    rf"\b(?:(?:{_DATE_WORDS})\s+)?{_YEAR}\s*(?:and|to|until|-|\u2013)\s*{_YEAR}\b{COUNTED_SPAN_END}"  # "in 1839 to 1987"
    rf"|\b(?:{_DATE_WORDS})\s+(?:the\s+)?{_YEAR}s?\b"
    rf"|\b{_YEAR}s\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{MONTH_NAME})(?:,?\s+{_YEAR})?\b",
    re.IGNORECASE,
)
NUMBER_KIND = 1  # ANSWER_KINDS[1], "how many / how much"


REASON_KIND = 2  # ANSWER_KINDS[2], "why"


def _holds_reason(sentence: str) -> bool:
    return holds_kind(REASON_KIND, sentence)


def holds_kind(kind: int, sentence: str) -> bool:
    """Whether the sentence holds what ANSWER_KINDS[kind] asks for (a number read without its labels,
    and for a quantity without its dates)."""
    if HAS_DIGIT.search(sentence):  # every label and date holds a digit: the others are read as they are
        sentence = QUANTITY_LABELS.sub(" ", sentence)
        if kind == NUMBER_KIND:
            sentence = DATES.sub(" ", sentence)
    return bool(ANSWER_KINDS[kind][1].search(sentence))


# "Who was X?", "What is X?", "Tell me about X": the sentences that say what X is or was.
DEFINITION_QUESTION = re.compile(
    r"^\s*(?:(?:who|what)\s+(?:is|was|are|were)|tell me about|describe)\s+(?:the\s+|an?\s+)?"
    r"(?P<subject>[^?]+?)\s*[?.!]*\s*$",
    re.IGNORECASE,
)
# "What does X mean?", "What is meant by X?", "Define X": what X is, asked in other words.
MEANING_QUESTION = re.compile(
    r"^\s*(?:what\s+(?:does|do|did)\s+(?:the\s+(?:word|term|phrase|name|abbreviation)\s+)?(?:the\s+|an?\s+)?"
    r"(?P<means>[^?]+?)\s+(?:mean|stand\s+for|refer\s+to)"
    r"|what\s+is\s+(?:meant\s+by|the\s+meaning\s+of|the\s+definition\s+of)\s+(?:the\s+|an?\s+)?(?P<meant>[^?]+?)"
    r"|define\s+(?:the\s+|an?\s+)?(?P<define>[^?]+?))\s*[?.!]*\s*$",
    re.IGNORECASE,
)
DEFINITION_BONUS = 0.12
# A sentence that names the subject only as the owner of something else ("Ambrose Kittow's grandson,
# Peter Kittow, ...") is about that other thing: it loses what a describing sentence gains.
POSSESSIVE_PENALTY = DEFINITION_BONUS
_DESCRIBING = (
    r"(?:is|was|are|were|became|had been|has been|served|worked|remained|means|meant|refers to|stands for|denotes)"
)
_NAMING = r"(?:appointed|named|made|hired|engaged|elected|chose|called|known)"
# "When did the light close?": an end (or a start) is written with its own words and a year.
ASKS_END = re.compile(
    r"\b(?:end|ended|close|closed|stop|stopped|cease|ceased|finish|finished|shut|retire|retired|leave|left|die|died|"
    r"quit|abandon|abandoned|automate|automated|over)\b",
    re.I,
)
# a span's years say which end each is ("ran the press from 1902", "served from 1885 to 1903")
_SPAN_START = rf"\bfrom\s+(?:(?:early|late|mid)\s+)?{_YEAR}\b"
_SPAN_END = rf"\b(?:to|till|through)\s+(?:(?:early|late|mid)\s+)?{_YEAR}\b"
ENDS = re.compile(
    r"\b(?:last|final|finally|closed|ended|end|locked|retired|left|died|death|until|converted|automated|"
    rf"stopped|discontinued|abandoned|shut|handed over|no longer)\b|{_SPAN_END}",
    re.I,
)
ASKS_START = re.compile(
    r"\b(?:start|started|begin|began|open|opened|build|built|found|founded|establish|established|create|"
    r"created|first)\b",
    re.I,
)
STARTS = re.compile(
    rf"\b(?:first|began|begun|built|opened|founded|established|created|lit|started|introduced|installed)\b|{_SPAN_START}",
    re.I,
)
EVENT_BONUS = 0.1  # a year of the asked event (an ending for "when did it close?") over a year of another
# ... and as much again for the asked event in its own words ("until her death", "closed for good") over
# another ending ("took over ... in 1952", "undercut ... after 1880") when the time is told without a year
ASKED_EVENTS = (
    (r"die|died", r"died|death|dead|passed\s+away|killed|buried"),
    (r"close|closed|shut", r"closed|closure|closing|shut"),
    (r"stop|stopped|cease|ceased|end|ended|finish|finished|quit", r"stopped|ceased|last|final|ended|no\s+longer|finished"),
    (r"retire|retired", r"retired|retirement"),
    (r"leave|left", r"left|departed|departure|moved"),
    (r"open|opened", r"opened|opening"),
    (r"start|started|begin|began", r"started|began|begun|beginning|first"),
    (r"found|founded|establish|established", r"founded|foundation|established"),
    (r"build|built", r"built|construction|completed"),
)
# Ordinals say which one ("the last keeper", "the first lighting"): they count when ranking.
ORDINALS = frozenset("first second third fourth fifth last next previous final".split())
THEME_QUOTES = 5  # a thematic question gets a few more sentences, in the document's order
# Stories (contexts `ranker.document_kind` reads as a narrative). A question that is not after a short fact
# ("Who is Ivy and what happens to her?", "What is the relationship between ...?", "Why did ...?") is
# answered over several scenes, not in one sentence: it gets as many quotes as a question about the whole.
NARRATIVE_QUOTES = THEME_QUOTES
NARRATIVE_FRAGMENT_WORDS = 20  # a story's quote shorter than this (a line of dialogue) is read with its neighbour
# a thematic answer's quote from a story says something of it: not a byline ("By ALFRED COPPEL, JR."), a
# magazine's issue line or a bare line of dialogue ("Sit down, Retief," he said.)
NARRATIVE_THEME_MIN_WORDS = 12
# Words nearly every English question holds and no other common language writes alike (not "a", "in",
# "on", "do", "was", "is", "of", "to", "me", "will", which Spanish, French, German, Dutch, Italian or Polish
# write too): a question of three words or more with none of them is read as asked in another language.
ENGLISH_QUESTION_WORDS = frozenset(
    """the an are were does did what who whom whose which when where why how for and it you she they we
    can could should would has have this that there with from by about be been many much my your his
    her their its any some tell""".split()
)
# What every story has, whatever its words: "Describe the setting of the story." is answered by what the
# story gets; "Describe the dragon in the story." only where the story names a dragon.
STORY_ASPECTS = frozenset(
    """setting settings character characters protagonist protagonists narrator hero heroine villain tone
    mood atmosphere ending beginning opening conflict climax structure style world""".split()
)
# What a document writes that looks like a citation marker: [2], [ 2 ], [12], [2, 3], [2-4], [^2], 【2】,
# in any bracket pair a reader or a model might take for one, with any script's digits.
DOCUMENT_MARKER = re.compile(
    r"[\[【〔［〚⟦]\s*(\^?\s*\d+(?:\s*(?:[,;]|[-‐‑–—]|and|&)\s*\d+)*)\s*[\]】〕］〛⟧]"
)
DOCUMENTS_SHOWN = 3  # documents named for a cross-document summary; the rest are counted


def only_points(sentence: str) -> bool:
    """Whether the sentence only points at a table, figure, equation or section (POINTS_AT_START,
    POINTS_AT_END) and states nothing of its own: no number, colon or 'that' clause once the labels are
    read out."""
    if not (POINTS_AT_START.search(sentence) or POINTS_AT_END.search(sentence)):
        return False
    return not re.search(r"\d|:|\bthat\b", POINTED_LABEL.sub(" ", sentence), re.IGNORECASE)


def neutralise_markers(text: str) -> str:
    """A document's own bracketed numbers in full-width brackets ("[2]" -> "［2］"): still visibly there
    for a reader, but never an answer's citation marker, whoever copies them (a quote or a model). Only
    the two brackets change, one character each, so offsets into the text (sentences, page marks) hold."""
    return DOCUMENT_MARKER.sub(lambda m: f"［{m.group(0)[1:-1]}］", text)


def neutralise_context(context: list[ContextNode]) -> list[ContextNode]:
    """The context with every node's text passed through `neutralise_markers`, for an answerer."""
    return [replace(node, text=neutralise_markers(node.text)) for node in context]


def describe_documents(
    drawn_from: tuple[tuple[str, int], ...], shown: int = DOCUMENTS_SHOWN, name: Callable[[str], str] = str
) -> str:
    """Where a cross-document summary comes from, e.g. "3 documents: a.pdf, b.md, c.txt" (most leaves
    first; "and 2 more" past `shown`), or just "a.pdf" when its cluster holds one document's tops.
    `name` formats each file name (the bot makes it inert)."""
    if not drawn_from:
        return "all documents"
    if len(drawn_from) == 1:
        return name(drawn_from[0][0])
    names = ", ".join(name(document) for document, _ in drawn_from[:shown])
    more = len(drawn_from) - shown
    return f"{len(drawn_from)} documents: {names}" + (f" and {more} more" if more > 0 else "")


# A model citing several blocks at once: "[2, 3]", "[2,3]", "[2-4]", "[2; 5]", "[2 and 3]". A document's
# own groups never get here as ASCII brackets (neutralise_markers), so these are the answerer's.
MARKER_GROUP = re.compile(r"\[\s*(\d{1,4}(?:\s*(?:[,;&]|and|[-‐‑–—])\s*\d{1,4})+)\s*\]")
_RANGE = re.compile(r"(\d{1,4})\s*[-‐‑–—]\s*(\d{1,4})")
MAX_RANGE = 20  # "[2-4]" is three blocks; "[1-900]" cites nothing in particular


def split_marker_groups(text: str) -> str:
    """ "[2, 3]" -> "[2][3]", "[2-4]" -> "[2][3][4]": one marker per block, so each is renumbered and
    cited like any other. A range backwards or wider than MAX_RANGE blocks is dropped."""

    def expand(match: re.Match[str]) -> str:
        positions: list[int] = []
        for part in re.split(r"\s*(?:[,;&]|\band\b)\s*", match.group(1)):
            span = _RANGE.fullmatch(part.strip())
            if span:
                first, last = int(span.group(1)), int(span.group(2))
                if first <= last <= first + MAX_RANGE:
                    positions.extend(range(first, last + 1))
            elif part.strip().isdigit():
                positions.append(int(part))
        return "".join(f"[{p}]" for p in dict.fromkeys(positions))

    return MARKER_GROUP.sub(expand, text)


def map_citations(text: str, context: list[ContextNode]) -> tuple[str, list[Citation]]:
    """Renumber valid [n] markers (1-based positions in `context`) in order of first use; drop the rest.

    A marker pointing at nothing ([0], [99]) is removed from the text rather than shown to a reader;
    a group ("[2, 3]", "[2-4]") counts as its markers.
    """
    text = split_marker_groups(text)
    renumber: dict[int, int] = {}
    citations: list[Citation] = []

    def replace(match: re.Match[str]) -> str:
        position = int(match.group(1))
        if not 1 <= position <= len(context):
            return ""
        if position not in renumber:
            renumber[position] = len(renumber) + 1
            node = context[position - 1]
            citations.append(
                Citation(
                    marker=renumber[position],
                    node_id=node.node_id,
                    layer=node.layer,
                    document=node.document,
                    score=node.score,
                    leaf_count=node.leaf_count,
                    page=node.page,
                    heading=node.heading,
                    drawn_from=node.drawn_from,
                    message=node.message,
                )
            )
        return f"[{renumber[position]}]"

    cleaned = MARKER.sub(replace, text)
    cleaned = re.sub(r"(\[\d+\])(?:\s*\1)+", r"\1", cleaned)  # "[1][1]" -> "[1]"
    cleaned = re.sub(r"[ \t]+([.,;:!?])", r"\1", cleaned)
    cleaned = re.sub(r"[ \t]{2,}", " ", cleaned).strip()
    return cleaned, citations


@dataclass
class _Candidate:
    """A sentence of the context the answer may quote, and where it came from."""

    position: int  # 1-based block in the context, the [n] it is quoted with
    node: ContextNode
    sentence: Sentence
    text: str  # what is quoted: whitespace collapsed, list marker removed
    terms: set[str]  # stemmed content terms
    score: float = 0.0
    similarity: float = 0.0  # cosine to the (rewritten) question
    lexical: float = 0.0  # weighted share of the question's terms it holds
    speaker: str | None = None  # in a transcript, who said it (its label is not part of `text`)
    transcript: bool = False  # it comes from a context of speaker turns (`context_speakers`)
    # for a sentence that opens by referring back ("It was made ...", "As a result ..."): the stemmed terms
    # of what it refers to (`_antecedent_terms`), and its share of the question's terms read with them
    antecedent: frozenset[str] = frozenset()
    referred: float = 0.0
    # for a sentence saying a finding: the stemmed terms of the event it may be on (`_antecedent_terms`)
    found_on: frozenset[str] = frozenset()
    # a leaf's sentence: the stemmed terms of the heading of the section it stands in (the last heading
    # line above it in its leaf, else the leaf's own section heading), and its share of the question's
    # terms read with them
    section: frozenset[str] = frozenset()
    sectioned: float = 0.0
    under: frozenset[str] = frozenset()  # that heading's stemmed terms, the sentence's own too ('1861')
    # a summary's copy of a sentence its leaf left out (`ContextNode.held_elsewhere`): the leaf's document
    # and the sentence's place in it, so the copy is read where the sentence stands
    placed: tuple[str | None, int] | None = None

    @property
    def key(self) -> str:
        return sentence_key(self.text)

    @property
    def shown(self) -> str:
        """What the answer quotes: the text, after its speaker's label in a transcript ("Marketing: ...")."""
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


def _candidates(context: list[ContextNode]) -> list[_Candidate]:
    """Quotable sentences, each once: no headings, title lines or bare labels, no second copy of a
    sentence (a leaf's copy is kept over a summary's, for its page), none cut short with an ellipsis,
    none only filler ("Mm-hmm .", "Yeah , okay ."). In a transcript each keeps its speaker apart
    (`_spoken`)."""
    held = NewSentences()
    found: list[_Candidate] = []
    sections: dict[int, frozenset[str]] = {}  # id(candidate) -> its whole section's terms
    unplaced: set[int] = set()  # candidates of a leaf spanning sections, before its first heading line
    speakers = context_speakers(context)
    labels = _labels(speakers) if speakers else None
    # a later file's copy of a sentence is kept over the copy of the earlier file of its name
    order = sorted(enumerate(context, start=1), key=lambda item: (item[1].layer, item[1].superseded, item[0]))
    for position, node in order:
        header: list[str] | None = None  # the first row of the table being read, if any
        section = _section_terms(node)
        placed = node.layer > 0 or len(node.heading) >= 2
        for whole in sentences_of(node.text, node.code):
            for sentence, speaker in _spoken(node, whole, speakers, labels):
                cells = table_cells(sentence.text)
                setting = False
                if cells is not None:
                    header, text = _table_row(cells, header)
                    if text is None:
                        continue
                else:
                    header = None
                    text = strip_bullet(sentence.text)
                    setting = in_code(node.text, sentence.start, node.code) and is_setting(sentence.text)
                    # a speaker's words are never a heading, however short and unpunctuated, nor a setting
                    heading = speaker is None and not setting and is_heading(sentence.text)
                    if heading and node.layer == 0 and not speakers and _opens_a_section(node.text, sentence):
                        section = frozenset(stem(t) for t in content_terms(sentence.text))
                        placed = True
                    if sentence.cut_short or heading or not (setting or _says_something(text)):
                        continue
                if held.is_copy(sentence):
                    continue
                held.add([sentence])
                terms = {stem(t) for t in content_terms(text)}
                own = section  # a setting's section: the keys it stands under too ('lamp' for 'fuel: paraffin')
                if setting:
                    own = section | {stem(t) for t in content_terms(setting_keys(node.text, sentence.start))}
                candidate = _Candidate(
                    position, node, sentence, text, terms, speaker=speaker, transcript=bool(speakers),
                    section=own - terms,
                )
                found.append(candidate)
                sections[id(candidate)] = own
                if not placed and not speakers:
                    unplaced.add(id(candidate))
    found.sort(key=lambda c: (c.position, c.sentence.start))
    found = _without_superseded(found)[:MAX_SENTENCES]
    _inherit_sections(found, sections, unplaced)
    for candidate in found:
        candidate.under = sections.get(id(candidate), frozenset())
    _antecedent_terms(found)
    _place_copies(found, context)
    return found


def _without_superseded(found: list[_Candidate]) -> list[_Candidate]:
    """The sentences of a file posted again since with new content, less those the later file says nearly
    alike ('Rehearsals are on Tuesday evenings' where it says 'Wednesday evenings'): both files answer, but
    of two versions of one statement only the later one is current. What only the earlier file says stays;
    a summary across documents drawing on the file (marked by the engine) is read as the earlier file."""
    current = [c for c in found if not c.node.superseded and c.node.document is not None]
    return [
        c
        for c in found
        if not c.node.superseded
        or not any(o.node.document in _documents_of(c.node) and _near_duplicate(c.terms, o.terms) for o in current)
    ]


def _documents_of(node: ContextNode) -> set[str | None]:
    """The document a node stands in, or those a summary across documents draws on."""
    return {node.document} if node.document is not None else {name for name, _ in node.drawn_from}


def _code_result(question: str, context: list[ContextNode], most: int) -> list[_Candidate]:
    """The lines of a function's code that answer what it returns, raises or yields (`code_result_lines`),
    as quotes; empty for any other question, or where the context holds no code of the function."""
    found: list[_Candidate] = []
    for line in code_result_lines(question, context, most):
        text = " ".join(line.node.text[line.start : line.end].split())
        sentence = Sentence(line.start, line.end, text, sentence_key(text))
        found.append(_Candidate(line.position, line.node, sentence, text, {stem(t) for t in content_terms(text)}))
    return found


def _inherit_sections(candidates: list[_Candidate], sections: dict[int, frozenset[str]], unplaced: set[int]) -> None:
    """Give the sentences of a leaf that spans sections (its heading path is the document's title alone)
    that stand before its first heading line the section the leaf before it in the document ends in, when
    that leaf is in the context: the chunker cut the section between them ("It was built to measure ..."
    still stands under "## The Great Refractor"). Leaves are read in the document's order, so a section
    carries on through a run of such leaves. `sections` holds each candidate's whole section."""
    last_of: dict[tuple[str | None, int], _Candidate] = {}  # (document, end) -> a leaf's last sentence
    for candidate in candidates:
        if candidate.node.layer == 0 and candidate.node.end is not None:
            last_of[(candidate.node.document, candidate.node.end)] = candidate
    waiting = [c for c in candidates if id(c) in unplaced and c.node.start is not None]
    for candidate in sorted(waiting, key=lambda c: (c.node.document or "", c.node.start or 0, c.sentence.start)):
        before = _leaf_before(last_of, candidate.node, candidate.node.start or 0)
        if before is not None:
            sections[id(candidate)] = sections.get(id(before), frozenset())
            candidate.section = sections[id(candidate)] - candidate.terms


def _place_copies(candidates: list[_Candidate], context: list[ContextNode]) -> None:
    """Give a summary's sentence that a context leaf left out because the summary holds it (the
    retrieval keeps new text only) that leaf's place for it: the document's opening sentence read from a
    summary is still the opening."""
    places = {
        key: (node.document, node.start + offset)
        for node in context
        if node.layer == 0 and node.start is not None
        for offset, key in node.held_elsewhere
    }
    if places:
        for candidate in candidates:
            if candidate.node.layer > 0:
                candidate.placed = places.get(candidate.key)


# A sentence that opens by pointing back ("It was made by Grubb in Dublin.", "They concluded that ...", "As a
# result the yards closed.") is about what the sentence before it named: read alone, it shares none of the
# words a question about that thing uses.
REFERS_BACK_AT_START = re.compile(
    # not the empty "it" of "It is important to ...", "It was not clear that ..."
    r"^\W*(?:(?:it|its|they|their|them|he|his|she|her|this|these|those|such)\b(?!\s+(?:is|was)\s+"
    r"(?:(?:very|also|quite|now|thus|therefore|not)\s+)?(?:to|that|possible|important|clear|likely|necessary|difficult|easy)\b)"
    r"|(?:as a result|consequently|for this reason|because of this|therefore|thus)\b"
    # ... or whose subject is a person's pronoun after a time it opens with ("In 1902 he left ...", "Two
    # years later she ...")
    r"|(?:(?:in|by|after|before|during|from|until|on|at)\s+(?:[\w'\u2019-]+\s+){0,3}?[\w'\u2019-]+"
    r"|(?:[\w-]+\s+){0,2}?(?:later|afterwards|then)),?\s+(?:he|she|they)\b)",
    re.IGNORECASE,
)


def _antecedent_terms(candidates: list[_Candidate]) -> None:
    """Give each leaf's candidate that opens by referring back (REFERS_BACK_AT_START) the terms of the
    sentence before it (and of what that one refers to, when it refers back too) and of its leaf's
    headings. The sentence before is the one before it in its leaf, or for a leaf's first sentence (no
    heading line above it) the last of the context leaf of the same document that ends where this leaf
    starts (leaves are stored in reading order: `ContextNode.start` and `end`). A summary's sentences
    get none: the sentence before one in a summary comes from anywhere. A leaf's sentence saying a finding
    ('An inquiry held that ...', SAYS_A_FINDING) gets the terms of the FINDING_REACH sentences before it in
    its leaf as what it may be a finding on (`found_on`). Candidates are in context order."""
    last_of: dict[tuple[str | None, int], _Candidate] = {}  # (document, end) -> a leaf's last sentence
    for candidate in candidates:
        node = candidate.node
        if node.layer == 0 and node.end is not None:
            last_of[(node.document, node.end)] = candidate  # the last one of a node wins
    previous: _Candidate | None = None
    leaf_so_far: list[_Candidate] = []  # the sentences of the current leaf before this one
    for candidate in candidates:
        before = previous if previous is not None and previous.position == candidate.position else None
        if before is None:
            leaf_so_far = []
        node = candidate.node
        # a leaf's first sentence after a heading line refers to the heading, not to the leaf before
        opens_node = not node.text[: candidate.sentence.start].strip()
        if before is None and opens_node and node.layer == 0 and node.start is not None:
            before = _leaf_before(last_of, node, node.start)
        # a summary strings together sentences of many leaves: the one before is no antecedent
        if REFERS_BACK_AT_START.search(candidate.text) and not candidate.transcript and node.layer == 0:
            headings = {stem(t) for h in node.heading for t in content_terms(h)}
            held = (before.terms | before.antecedent) if before is not None else set()
            candidate.antecedent = frozenset((held | headings) - candidate.terms)
        if SAYS_A_FINDING.search(candidate.text) and node.layer == 0:
            # a finding is on the event its paragraph tells, a sentence or two before it
            told = {t for c in leaf_so_far[-FINDING_REACH:] for t in c.terms | c.antecedent}
            candidate.found_on = frozenset(told | candidate.antecedent)
        leaf_so_far.append(candidate)
        previous = candidate


# A Markdown heading line ("## The fire of 1861"): what loaders keep of a document's headings inside a
# leaf's text. A chunk that spans sections carries only their common heading path (`ContextNode.heading`),
# so the section a sentence stands in is the last such line above it.
SECTION_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+\S")


def _opens_a_section(text: str, sentence: Sentence) -> bool:
    """Whether a heading line of a leaf's `text` opens a section: a Markdown heading ("## Error codes"), or
    a line that is a paragraph of its own and no list item, as an HTML, Word, PDF or plain-text document's
    headings stand in a leaf that spans sections ("Error codes" between two blank lines); the sentences
    after it are that section's ("- Code: E1; ..." under "Error codes")."""
    if SECTION_HEADING.match(sentence.text):
        return True
    if strip_bullet(sentence.text) != sentence.text.strip():
        return False
    before, after = text[: sentence.start], text[sentence.end :]
    return (not before.strip() or before.rstrip(" \t").endswith("\n\n")) and after.lstrip(" \t").startswith("\n\n")


def _section_terms(node: ContextNode) -> frozenset[str]:
    """The stemmed content terms of the deepest section heading of a leaf below the document's title (none
    for a summary, whose sentences come from many sections, or a leaf under the title alone)."""
    if node.layer > 0 or len(node.heading) < 2:
        return frozenset()
    return frozenset(stem(t) for t in content_terms(node.heading[-1]))


MAX_LEAF_GAP = 3  # characters between two leaves that follow each other (a line break, spaces)
# "Who was in the audience?": "He was in the audience ..." stands in for the person asked about without
# naming them, so for a 'who' question a sentence opening with a personal pronoun is read alone
PERSONAL_OPENING = re.compile(r"^\W*(?:he|him|his|she|her|they|them|their)\b", re.IGNORECASE)


def _leaf_before(
    last_of: dict[tuple[str | None, int], _Candidate], node: ContextNode, start: int
) -> _Candidate | None:
    """The last quotable sentence of the context leaf that ends where `node` (a leaf starting at `start`)
    starts, if any."""
    for gap in range(MAX_LEAF_GAP + 1):
        found = last_of.get((node.document, start - gap))
        if found is not None and found.node is not node:
            return found
    return None


def _says_something(text: str) -> bool:
    """Long enough to answer on its own: MIN_WORDS words, or three of which two are content words with
    letters (a terse log line: "Mill7 ground oats.", "The lamp failed."), not "See below.", "It was
    there." or "Thank you all."."""
    count = word_count(text)
    if is_filler(text):
        return False
    if count >= MIN_WORDS:
        return True
    lettered = [term for term in content_terms(text) if any(ch.isalpha() for ch in term)]
    return count >= SHORT_MIN_WORDS and len(lettered) >= SHORT_MIN_TERMS


MAX_LABEL_SEARCH = 120  # characters of a line read for its speaker's label
TRANSCRIPT_LINES = 3  # labelled lines a context needs to be read as a transcript (and half of its lines)


def context_speakers(context: list[ContextNode]) -> frozenset[str]:
    """The speakers of a context that reads as a transcript (its nodes' lines open with speakers' labels,
    `transcript.speaker_of`, as `transcript.reads_as_turns` asks, at least TRANSCRIPT_LINES of them);
    empty for any other."""
    found, lines = labelled_lines([line for node in context for line in spoken_lines(node.text)])
    named = [who for _, who in found]
    return frozenset(named) if reads_as_turns(named, lines, TRANSCRIPT_LINES) else frozenset()


def named_speakers(question: str, speakers: frozenset[str]) -> frozenset[str]:
    """The speakers a question names: by their whole label ("What did Marketing think ...?", "User
    Interface's opinions"), without a title after the name ("Lynne Neagle" of "Lynne Neagle AM"), or by
    the surname alone ("What did Smith say?" for "Mr. Smith"). A label of one word must be written as the
    label is ("Marketing", not the 'marketing plan' a question asks about), but for one in capitals of
    three letters or more ("Mary" or "mary" for "MARY")."""
    found = set()
    for speaker in speakers:
        parts = speaker.split()
        while len(parts) > 1 and parts[-1].isupper() and len(parts[-1]) > 1:  # "AM", "MP" after a name (not "Grad F")
            parts.pop()
        names = [speaker, " ".join(parts)]
        surname = parts[-1]
        if len(parts) > 1 and surname[:1].isupper() and surname[1:].islower() and len(surname) > 2:
            names.append(surname)
        for name in names:
            # a label in capitals ('MARY', 'INTERVIEWER') is a name in a script's style: any case names it
            flags = re.IGNORECASE if len(name.split()) > 1 or (name.isupper() and len(name) > 2) else 0
            if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", question, flags):
                found.add(speaker)
    return frozenset(found)


def _times_named(speaker: str, question: str) -> int:
    """How often the speaker's label stands in the question: 'What did the Marketing recommend when
    discussing marketing strategy?' names Marketing once as a speaker and once as a topic."""
    return len(re.findall(rf"(?<!\w){re.escape(speaker)}(?!\w)", question, re.IGNORECASE))


def topic_terms(question: str, speakers: frozenset[str]) -> list[str]:
    """What a summary question about a meeting asks about, beyond the meeting and its speakers: 'use',
    'cases' of 'Summarize the discussion about use cases'; nothing for 'Summarize the whole meeting'."""
    named = {
        word for speaker in named_speakers(question, speakers) if _times_named(speaker, question) == 1
        for word in words(speaker)
    }
    common = WHOLE_TEXT_VOCABULARY | MEETING_VOCABULARY
    return [t for t in subject_terms(question) if t not in common and t not in named]


def _labels(speakers: frozenset[str]) -> re.Pattern[str]:
    """A known speaker's label anywhere in a line ("..., Industrial Designer: Alima ."): a summary copies
    several turns' sentences into one line."""
    names = "|".join(re.escape(name) for name in sorted(speakers, key=len, reverse=True))
    return re.compile(
        rf"(?<!\S)(?:{STAMP}[ \t]+)?(?:{names})(?:[ \t]+{STAMP})?[ \t]*:[ \t]+(?=\S)"
        rf"|<v(?:\.[\w.-]+)*[ \t]+(?:{names})[ \t]*>"
    )


def _line_speaker(text: str, at: int) -> tuple[str | None, int]:
    """The speaker of the line holding `at` and where that line starts: its label's, else the nearest
    label above it (a turn that runs over several lines, or an export's header line "John Smith  10:32
    AM" above the turn's text): a turn lasts until the next speaker's label. A subtitle cue's number or
    timing line is nobody's words."""
    line_start = text.rfind("\n", 0, at) + 1
    line_end = text.find("\n", line_start)
    if not spoken_lines(text[line_start : None if line_end < 0 else line_end]):
        return None, line_start
    speaker = speaker_of(text[line_start : line_start + MAX_LABEL_SEARCH].lstrip())
    while speaker is None and line_start > 0:
        line_start = text.rfind("\n", 0, line_start - 1) + 1
        if (who := speaker_of(text[line_start : line_start + MAX_LABEL_SEARCH].lstrip())) is not None:
            return who, line_start
    return speaker, line_start


def _spoken(
    node: ContextNode, sentence: Sentence, speakers: frozenset[str], labels: re.Pattern[str] | None
) -> list[tuple[Sentence, str | None]]:
    """A sentence of a transcript's node as the turns it holds, each without its speaker's label and with
    the speaker: the label before it in the sentence, else (a leaf, whose lines are turns) its line's,
    else for a leaf's first line the speaker the chunker headed the leaf with. A summary's sentence
    without a label of its own has no known speaker (its line glues several turns). Any other text's
    sentence is returned as it is. `labels` is `_labels(speakers)`."""
    if not speakers or labels is None:
        return [(sentence, None)]
    text = node.text
    cuts = [m.start() for m in labels.finditer(text, sentence.start, sentence.end)]
    bounds = [sentence.start, *(c for c in cuts if c > sentence.start), sentence.end]
    pieces: list[tuple[Sentence, str | None]] = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        raw = text[start:end].rstrip()
        label = label_end(raw)
        speaker = speaker_of(raw) if label else None
        if speaker is None and node.layer == 0:
            speaker, line_start = _line_speaker(text, start)
            if speaker is None and line_start == 0 and node.heading[-1:] and node.heading[-1] in speakers:
                speaker = node.heading[-1]
        piece = " ".join(raw[label:].replace(VOICE_END, " ").split())
        if piece:
            pieces.append((Sentence(start + label, start + len(raw), piece, sentence_key(piece)), speaker))
    return pieces


def _table_row(cells: list[str], header: list[str] | None) -> tuple[list[str] | None, str | None]:
    """A table row's quotable text, labelled by its table's first row ('Item: Ladders; Cost: £320'), and
    the header for the rows after it. The first row itself, and separator rows, are not quoted."""
    if header is None:
        return (cells or None), None
    if not cells:
        return header, None
    text = labelled_row(cells, header)
    return header, (text if word_count(text) >= 2 else None)


def _query_weights(
    rewrite: Rewrite, candidates: list[_Candidate], conversation_names: set[str] = frozenset()
) -> dict[str, float]:
    """Stemmed terms of the question and, lightly, of its carried context, each weighted by how rare
    it is in the context (a follow-up's subject appears everywhere; what it asks about does not).
    Numbers and years count more: they pin an answer down. In a follow-up, words of names the
    conversation already gave count less than what the follow-up itself asks about."""
    weights: dict[str, float] = {}
    numbers = set(re.findall(r"\d+", rewrite.core))
    # in a transcript, a speaker the question names ("What did Project Manager say ...?") says whose
    # turns, not what about: 'project' is not a term a sentence should hold
    named = named_speakers(rewrite.core, _speakers(candidates))
    spoken = {word for speaker in named if _times_named(speaker, rewrite.core) == 1 for word in words(speaker)}
    terms = [
        t
        for t in subject_terms(rewrite.core) + [t for t in words(rewrite.core) if t in ORDINALS]
        if t not in spoken and t not in _time_asked_by(rewrite.core)
    ]
    asked = [t for t in terms if t not in conversation_names]
    for term in terms:
        if term in numbers:
            weights[stem(term)] = NUMBER_WEIGHT
        elif asked and term in conversation_names:
            weights[stem(term)] = RESOLVED_NAME_WEIGHT
        else:
            weights[stem(term)] = 1.0
    for term in subject_terms(rewrite.context):
        weights.setdefault(stem(term), CARRIED_WEIGHT)
    total = len(candidates)
    for term in weights:
        held_by = sum(term in c.terms for c in candidates)
        weights[term] *= math.log(1.0 + (1 + total) / (1 + held_by))
    return weights


@functools.lru_cache(maxsize=256)  # a function of the question alone
def _time_asked_by(question: str) -> frozenset[str]:
    """The word a question asks a time by ('year' of 'In what year was ...?', 'What date did ...?'): it names
    nothing a sentence should hold ("for eighteen years" does not date the asked event)."""
    match = re.match(r"^\W*(?:in\s+|on\s+)?(?:what|which)\s+(year|date|day|month|decade|century)\b", question, re.I)
    return frozenset({match.group(1).lower()}) if match else frozenset()


def _lexical_of(terms: set[str], weights: dict[str, float]) -> float:
    """The weighted share of the question's terms among `terms` (a sentence's)."""
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in terms) / total if total else 0.0


def _answers_kind(question: str, sentence: str) -> bool:
    """Whether the sentence holds the kind of thing the question asks for (a year, a number, a reason, a
    name, a place)."""
    for kind, (asks, _) in enumerate(ANSWER_KINDS):
        if asks.search(question):
            return holds_asked_kind(question, kind, sentence)
    return False


_CAPITALISED = re.compile(r"(?-i:[A-Z])[\w'\u2019-]+")


@functools.lru_cache(maxsize=256)  # a function of the question alone, asked once a candidate sentence
def _given_names(question: str) -> frozenset[str]:
    """The capitalised words a question gives past its first ("Helen", "Trevaskis" of "Who will succeed
    Helen Trevaskis?"): names the asker already knows."""
    return frozenset(word for word in _CAPITALISED.findall(question)[1:] if word.lower() not in ENGLISH_QUESTION_WORDS)


def holds_asked_kind(question: str, kind: int, sentence: str) -> bool:
    """`holds_kind`, where a 'who' question's name must be one the question does not give: "Who will
    succeed Helen Trevaskis?" is not answered by a sentence whose only name is Helen Trevaskis ("Our chair
    since 2019 has been Helen Trevaskis"), but by the one naming someone else ("Her successor ... is Ruth
    Pascoe"). "Who was X?" asks for a description, which `_describes` reads, not for a name. 'How many men
    ...?' is not answered by a number of something else ("their three children", `_counts_only_others`),
    nor 'what caused the fire?' by a 'because' of another thing (`_explains_another`)."""
    if kind == WHO_KIND:
        given = _given_names(question)
        if given:
            sentence = _CAPITALISED.sub(lambda m: "x" if m.group(0) in given else m.group(0), sentence)
    if kind == NUMBER_KIND and _counts_only_others(question, sentence):
        return False
    if kind == REASON_KIND and _explains_another(question, sentence):
        return False
    return holds_kind(kind, sentence)


WHO_KIND = 3  # ANSWER_KINDS[3]: "who" asks for a name, and "who was X?" for a description of X


def asks_a_fact_kind(question: str) -> bool:
    """Whether the question asks for a date, a number, a reason or a place ("What is the size of the
    dataset?", "What was the date of the flood?"): a 'what is ...' question of that kind wants the
    number or the date, not a description of its words."""
    return any(asks.search(question) for kind, (asks, _) in enumerate(ANSWER_KINDS) if kind != WHO_KIND)


@functools.lru_cache(maxsize=256)  # asked once a candidate sentence: a function of the question alone
def definition_subject(question: str) -> str | None:
    """What a 'who was X?' / 'what is X?' / 'tell me about X' question asks to be described (None for
    other questions, and for 'what is this about?'-style ones)."""
    meaning = MEANING_QUESTION.match(question)
    match = meaning or DEFINITION_QUESTION.match(question)
    if not match or THEMATIC.search(question) or asks_a_fact_kind(question) or ATTRIBUTE_OF.search(question):
        return None
    asked = next(group for group in match.groups() if group) if meaning else match.group("subject")
    # "Agnes Penrose's foreman" is a foreman: what follows the last possessive is what is asked about
    subject = re.split(r"['\u2019]s\s+", asked)[-1]
    return subject if subject_terms(subject) and len(words(subject)) <= 6 else None


def _describes(subject: str, sentence: str) -> bool:
    """Whether the sentence says what the subject is: 'X was ...', 'X, the son of ...', 'appointed X
    as ...' (X by any of its own words, so 'Kittow was thirty-four' describes Ambrose Kittow)."""
    own = _subject_words(subject)
    if not own:
        return False
    sentence = _without_namesakes(subject, sentence)
    name = rf"\b(?:{own})(?:\s+(?:{own}))*+\b(?!['\u2019]s)"  # 'X's son was ...' describes X's son, not X
    return bool(
        re.search(rf"{name}\s+(?:[\w'\u2019-]+\s+){{0,5}}?{_DESCRIBING}\b", sentence, re.I)
        # an appositive, past a parenthesis: "Mark Hunter (Slater), a student", "Halloran (1881-1959), the ..."
        or re.search(rf"{name}(?:\s*\([^)]*\))?,\s+(?:a|an|the|who|whose|then|aged|\d)", sentence, re.I)
        or re.search(rf"\b{_NAMING}\s+(?:\w+\s+){{0,3}}?{name}\b[^.]*?\bas\b", sentence, re.I)
        or re.search(
            rf"\b(?:a|an|the)\s+(?:\w+\s+){{0,3}}(?:named|called)\s+(?:\w+\s+)?{name}", sentence, re.I
        )
        # "stacked wooden boxes called supers" says what a super is
        or re.search(rf"\b(?:called|known as|termed)\s+(?:an?\s+|the\s+)?[\"\u201c]?(?:{own})(?:e?s)?\b", sentence, re.I)
    )


def _subject_words(subject: str) -> str:
    """The subject's own words (of three letters or more) as a regular expression's alternatives."""
    return "|".join(re.escape(w) for w in subject_terms(subject) if len(w) > 2)


def is_name(subject: str) -> bool:
    """Whether a definition question's subject is a proper name ("Ambrose Kittow", "Skerrow Ledge"):
    every word capitalised. A name's single word ("Kittow") stands for all of it; a common noun's
    ("model" of "the best performing model") does not."""
    own = words(subject)
    return bool(own) and all(word[:1].isupper() for word in subject.split() if word.lower() in own)


def _without_namesakes(subject: str, sentence: str) -> str:
    """The sentence with every other person's name that shares a word with the subject put out of
    reach ("Peter Kittow" for "Ambrose Kittow", "Hester Marrow" for "Elias Marrow"): a capitalised
    content word before one of the subject's words that is not the subject's own. A subject that is
    no name (`is_name`) is returned as it is."""
    if not is_name(subject):
        return sentence
    own = {w.lower() for w in subject_terms(subject)}

    def masked(match: re.Match[str]) -> str:
        first = match.group(1)
        if first.lower() in own or not subject_terms(first):
            return match.group(0)
        return f"{first} {'_' * len(match.group(2))}"

    return re.sub(rf"\b((?-i:[A-Z])[\w'\u2019-]*)\s+({_subject_words(subject)})\b", masked, sentence, flags=re.I)


def _names_only_its_own(subject: str, sentence: str) -> bool:
    """Whether every mention of the subject in the sentence is a possessive before another noun
    ("Ambrose Kittow's grandson"): the sentence is about what is X's, not about X. Where the sentence
    names a person in full, those mentions decide ("Ambrose Kittow's grandson ... the Kittow name")."""
    own = _subject_words(subject)
    if not own:
        return False
    sentence = _without_namesakes(subject, sentence)
    mentions = re.findall(rf"\b((?:{own})(?:\s+(?:{own}))*+)\b(['\u2019]s\s+[a-z])?", sentence, re.I)
    full = [possessive for name, possessive in mentions if len(name.split()) == len(subject.split())]
    if is_name(subject) and full:
        return all(full)
    return bool(mentions) and all(possessive for _, possessive in mentions)


ASKS_WHEN = re.compile(r"^\W*(?:when|(?:in\s+)?what\s+(?:year|date|day|month|time))\b", re.IGNORECASE)


def _names_the_asked_event(question: str, sentence: str) -> bool:
    """Whether a 'when did X die / close / stop / open ...?' sentence names that very event (ASKED_EVENTS)."""
    return any(re.search(rf"\b(?:{said})\b", sentence, re.I) for said in _asked_events(question))


@functools.lru_cache(maxsize=256)
def _asked_events(question: str) -> tuple[str, ...]:
    """The ASKED_EVENTS patterns a question asking when names, read once a question; none for a question
    that asks no time ("How do I return books when the library is shut?")."""
    if not ASKS_WHEN.match(question):
        return ()
    return tuple(said for asked, said in ASKED_EVENTS if re.search(rf"\b(?:{asked})\b", question, re.I))


def _event_bonus(question: str, sentence: str) -> float:
    """'When did X close/end/stop?' wants the year of an ending, 'when did X start/open?' of a start.
    A year of the other event ('first lit in 1839' for 'when did it close?') is the wrong year: it
    loses as much, or its closeness in wording ('light' and 'lit') could outrank the right one."""
    if not ANSWER_KINDS[0][0].search(question) or not holds_kind(0, sentence):
        return 0.0
    asks_end, asks_start = bool(ASKS_END.search(question)), bool(ASKS_START.search(question))
    if (asks_end and ENDS.search(sentence)) or (asks_start and STARTS.search(sentence)):
        named = EVENT_BONUS if _names_the_asked_event(question, sentence) else 0.0
        return EVENT_BONUS + named + (EVENT_BONUS if named and _event_said_of_the_asked(question, sentence) else 0.0)
    if asks_end != asks_start and (STARTS if asks_end else ENDS).search(sentence):
        return -EVENT_BONUS
    return 0.0


# "When did the tide mill stop grinding?", "When did the bakery close?", "When did Ada die?", "When did the
# light start?": the answer says the asked event of what the question asks about, next to it ("The last
# commercial grinding took place in 1907", "The bakery closed for good ...", "until her death the winter
# after", "The light was first lit in 1839"), where another sentence tells only of the activity ("about four
# hours of grinding") or of another's end or start ("The first keeper came in 1839")
ENDED_WITHIN = 3  # words between an end or start and what it is of ("the last commercial grinding", "the last slate")
_POSSESSIVES = frozenset("his her its their".split())


def _event_said_of_the_asked(question: str, sentence: str) -> bool:
    """Whether a 'when did X stop / close / die / open ...?' sentence names the asked event (ASKED_EVENTS) within
    ENDED_WITHIN words of one of the question's other words, in any of its forms ('stop cutting slate':
    "The last slate was cut"), or straight after a possessive ("until her death")."""
    events = _asked_events(question)
    if not events:
        return False
    asked = {_verb_stem(t) for t in content_terms(question) if not _is_an_event_word(t, question)}
    said = re.findall(r"[\w'\u2019-]+", sentence)
    ends = [i for i, word in enumerate(said) if any(re.fullmatch(e, word, re.I) for e in events)]
    if any(i > 0 and said[i - 1].lower() in _POSSESSIVES for i in ends):
        return True
    near = {j for i in ends for j in range(max(0, i - ENDED_WITHIN), min(len(said), i + ENDED_WITHIN + 1))}
    return any(_verb_stem(said[j]) in asked for j in near)


def _is_an_event_word(term: str, question: str) -> bool:
    """Whether a word of the question is the event it asks the time of ('stop' of 'When did X stop?')."""
    return any(re.fullmatch(asked, term, re.I) for asked, _ in ASKED_EVENTS) or bool(ASKS_WHEN.match(term))


def _verb_stem(word: str) -> str:
    """`stem`, with a doubled last consonant made single, so 'running' meets 'run' and 'cutting' 'cut'."""
    stemmed = stem(word.lower())
    return stemmed[:-1] if len(stemmed) > 2 and stemmed[-1] == stemmed[-2] else stemmed


_YEARS = re.compile(rf"\b{_YEAR}\b")


def _dated_by_its_heading(question: str, candidate: _Candidate) -> bool:
    """Whether a 'when / what year' question's sentence states the year its own section heading gives the
    asked event ('In March 1861 a spark ... set the roof alight.' under 'The fire of 1861' for 'What year was
    the fire?'): the heading ties that year to what the question names, which the sentence may not repeat.
    Without it, that sentence and one that names the event without any date ('The fire destroyed the upper
    floors') were within a hundredth of each other, ordered by the embedding's rounding."""
    if not ANSWER_KINDS[0][0].search(question):
        return False
    years = set(_YEARS.findall(candidate.text))
    return bool(years & candidate.under) and bool(question_terms(question) & candidate.under)


def _quoted_penalty(question: str, sentence: str, asks_for_more: bool) -> float:
    """What a sentence the last answers quoted loses: QUOTED_PENALTY (ASKED_FOR_MORE_PENALTY for 'what
    else?'), a share of it when the sentence says what the follow-up asks in the form its answer takes
    (`form_score`: "In 1902 he left ... and moved to Hobart" for "where did he go after that?", quoted
    before as the second answer to who he was): it is no repeat of what the follow-up already got."""
    if asks_for_more:
        return ASKED_FOR_MORE_PENALTY
    return QUOTED_PENALTY * (ANSWERS_ANEW_SHARE if form_score(question, sentence) > 0.0 else 1.0)


def _names_of(history: list[Turn]) -> set[str]:
    """Lower-cased words of the proper names in the last exchanges (what a pronoun can stand for)."""
    found: set[str] = set()
    for turn in history[-2 * PREVIOUS_ANSWERS :]:
        for name in names_in(MARKER.sub("", turn.content[:MAX_PREVIOUS_ANSWER_CHARS])):
            found.update(word.lower() for word in name.split())
    return found


def _quoted_before(history: list[Turn]) -> set[str]:
    """Keys of the sentences the last answers gave, so a follow-up brings something new."""
    keys: set[str] = set()
    for answer in previous_answers(history):
        quotes = quotes_in(answer) or [s.text for s in sentences_of(MARKER.sub("", answer))]
        keys.update(sentence_key(q) for q in quotes)
        keys.update(sentence_key(q[label_end(q) :]) for q in quotes)  # a transcript's quote, without its speaker
    return keys


def _document_place(candidate: _Candidate) -> tuple[str | None, int] | None:
    """The document of a leaf's sentence (or of a summary's copy of one, `placed`) and where it stands in
    it; None for a summary's own sentence."""
    node = candidate.node
    if node.layer == 0 and node.start is not None:
        return node.document, node.start + candidate.sentence.start
    return candidate.placed


def _in_opening(candidate: _Candidate) -> bool:
    """Whether a leaf's sentence (or a summary's copy of one) lies in the first OPENING_CHARS characters of
    its document."""
    place = _document_place(candidate)
    return place is not None and place[1] < OPENING_CHARS


def _leads(candidates: list[_Candidate]) -> set[int]:
    """The ids of the candidates that open their documents: each document's first quotable sentence in
    the context (a leaf's, or a summary's copy placed where its leaf left it out), within its opening."""
    first: dict[str | None, tuple[tuple[int, int], _Candidate]] = {}
    for candidate in candidates:
        place = _document_place(candidate)
        if place is None or place[1] >= OPENING_CHARS:
            continue
        order = (place[1], 0 if candidate.placed is None else -1)
        if place[0] not in first or order < first[place[0]][0]:
            first[place[0]] = (order, candidate)
    return {id(candidate) for _, candidate in first.values()}


def _reading_order(candidate: _Candidate) -> tuple[int, int, int]:
    """Leaves' sentences (and summaries' copies of them, before the leaf's sentence that followed them)
    by their place in the document; summaries' own sentences (no place) after them, higher layers first."""
    place = _document_place(candidate)
    if place is not None:
        return (0, place[1], 0 if candidate.placed is None else -1)
    return (1, -candidate.node.layer, candidate.position)


def _centrality(sentences: np.ndarray) -> np.ndarray:
    """Cosine of each sentence to the mean of all the context's sentences: what the context, and so
    the documents, keep coming back to."""
    return sentences @ _unit(sentences.mean(axis=0))


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


# Sentence vectors kept between questions: a channel's questions and follow-ups quote from overlapping
# context, and embedding its ~150 candidate sentences is nearly all of an extractive answer's time.
# 20,000 vectors of 384 float32 are 30 MB.
SENTENCE_CACHE_SIZE = 20_000


class SentenceVectors:
    """A bounded, thread-safe LRU of sentence -> unit vector, filled by the embedder on a miss, each
    sentence embedded alone (`embedded_alone`): a vector cached at first sight must be the same whatever
    question first needed it."""

    def __init__(self, embedder: Embedder, size: int = SENTENCE_CACHE_SIZE):
        self.embedder = embedder
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, texts: list[str]) -> np.ndarray:
        """The texts' vectors, in order: cached ones reused, the others embedded in one call."""
        with self._lock:
            known = {t: self._vectors[t] for t in texts if t in self._vectors}
            for text in known:
                self._vectors.move_to_end(text)
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            fresh = dict(zip(missing, embedded_alone(self.embedder, missing), strict=True))
            known.update(fresh)
            with self._lock:
                self._vectors.update(fresh)
                while len(self._vectors) > self.size:
                    self._vectors.popitem(last=False)
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([known[t] for t in texts])


def hand_score(question: str, candidate: _Candidate) -> float:
    """The hand-weighted score of a sentence for a question that is not about the whole: similarity
    and the question's terms, plus what the question asks for (a description for 'who/what is X?' or
    'what does X mean?', less for a sentence about what is X's; a year, a number, a reason, a name or a
    place; a number of what 'how many' counts, an age for 'how old', a unit of what 'how long / how far
    / how much does it cost' measures, a frequency for 'how often'; the year of the right event, or
    the year its section heading gives the asked event (`_dated_by_its_heading`); the asked verb for 'who / which X did it?', one X named for 'which X?'; an instruction for 'how do I?';
    the form a cause, purpose, comparison, negative or responsibility question's answer takes: `form_score`).
    Set `similarity` and `lexical` first."""
    defined = definition_subject(question)
    possessive = defined is not None and bool(re.search(r"['\u2019]s\s+" + re.escape(defined), question))
    score = EMBED_WEIGHT * candidate.similarity + LEXICAL_WEIGHT * _lexical(question, candidate)
    if defined is not None and _describes(defined, candidate.text):
        score += DEFINITION_BONUS
    elif defined is not None and _names_only_its_own(defined, candidate.text):
        score -= POSSESSIVE_PENALTY
    # "Who was Edith's assistant?" and "Who is the treasurer?" still ask for a name: only a name's
    # description is asked by "Who was Edith Vane?"
    if defined is None or possessive or (ANSWER_KINDS[WHO_KIND][0].search(question) and not is_name(defined)):
        score += _kind_bonus(question, candidate.text)
    if _counts_the_asked(question, candidate.text) or _measures_the_asked(question, candidate.text):
        score += COUNTED_BONUS
    score += ACTION_BONUS if _holds_the_asked_action(question, candidate.terms, candidate.text) else 0.0
    score += KIND_BONUS if _picks_out_the_asked(question, candidate.text) else 0.0
    score += _instruction_bonus(question, candidate.text)
    asked = how_to_task(question)
    score += PURPOSE_BONUS if asked and _continues_the_task(asked[0], candidate) else 0.0
    score += EVENT_BONUS if _dated_by_its_heading(question, candidate) else 0.0
    score += dated_event_score(question, candidate) + owner_of_another_score(question, candidate)
    return score + form_score(question, candidate.text) + _event_bonus(question, candidate.text)


# "How is a chunk defined?", "How was the dataset collected?", "How are the scores calculated?", "What does
# the encoder consist of?": the answer is a sentence about X itself, so X opens it ("Each chunk consists
# of ...", "The dataset was collected from ..."); the sentences that only use X ("We extract features from
# each chunk ...") hold the question's words as well, and more of them.
ASKS_HOW_X_IS = re.compile(
    r"^\W*(?:how|in\s+what\s+way)\s+(?:is|are|was|were)\s+(?P<subject>.+?)\s+"
    r"(?:[a-z]+ed|built|made|chosen|done|drawn|given|taken|set|split|run|found|got|gotten|shown|written|known)"
    r"(?:\s+(?:in|for|by|from|on|at|during|with)\s+[^?]*)?\s*[?.!]*\s*$"
    r"|^\W*what\s+(?:does|do|did)\s+(?P<whole>.+?)\s+(?:consist|comprise|contain|include)s?\b",
    re.IGNORECASE,
)
_OF_X = re.compile(r"\s+(?:of|in|for|from|with|that|which|who|used|on)\s+", re.IGNORECASE)
SUBJECT_OPENING_WORDS = 2  # words a sentence opens with, past a determiner ("Each chunk", "The final dataset")
_SUBJECT_DETERMINERS = frozenset("the a an this these that those its their our his her each every any all both".split())
SUBJECT_BONUS = KIND_BONUS  # chosen on the training split: 0.04 to 0.12 move the same reference in


@functools.lru_cache(maxsize=256)  # a function of the question alone, asked once a candidate sentence
def asked_subject(question: str) -> str | None:
    """The stemmed head of X in 'how is X done?' or 'what does X consist of?' ('chunk' for 'How is a "chunk of
    posts" defined?', 'score' for 'How are the supervised scores of the words calculated?'); None for other
    questions and for an X without a content word ('How is it done?')."""
    match = ASKS_HOW_X_IS.match(question)
    if not match:
        return None
    subject = _OF_X.split(match.group("subject") or match.group("whole"))[0]
    heads = content_terms(subject)
    return stem(heads[-1]) if heads else None


def _opens_with_the_asked(question: str, sentence: str) -> bool:
    """Whether X of 'how is X done?' (`asked_subject`) opens the sentence, past a determiner."""
    head = asked_subject(question)
    if head is None:
        return False
    opening = [word.lower() for word in units(sentence)[: SUBJECT_OPENING_WORDS + 2]]
    while opening and opening[0] in _SUBJECT_DETERMINERS:
        opening.pop(0)
    return any(stem(word) == head for word in opening[:SUBJECT_OPENING_WORDS])


def form_score(question: str, sentence: str) -> float:
    """What the hand score gives a sentence for answering in the form its question's kind takes: a reason
    or cause for 'why / what caused X?' (less for what X itself did), a place on the compared scale, a
    negative for a negative question, blame or charge for 'who was responsible?', what came of X for 'what
    was the result of / what happened to X?' (`_result_score`), a destination for 'where did X go?', where
    the money came from for 'how did X pay for Y?', less a price alone (`_means_score`), X as the sentence's
    opening for 'how is X done?' (`_opens_with_the_asked`)."""
    score = REASON_FORM_BONUS if _gives_the_asked_reason(question, sentence) else 0.0
    score -= EFFECT_PENALTY if _tells_what_the_asked_did(question, sentence) else 0.0
    score += GRADED_BONUS if _measures_the_compared(question, sentence) else 0.0
    score += NEGATIVE_BONUS if _asks_a_negative(question) and asks_a_negative(sentence) else 0.0
    score += _result_score(question, sentence)
    score += DESTINATION_BONUS if _tells_the_destination(question, sentence) else 0.0
    score += _means_score(question, sentence)
    score += SUBJECT_BONUS if _opens_with_the_asked(question, sentence) else 0.0
    return score + (ACTION_BONUS if _names_the_responsible(question, sentence) else 0.0)


def stated_form_score(question: str, sentence: str) -> float:
    """The part of `form_score` that reads an answer said in so many words, which seldom misleads: a stated
    cause, purpose or fault of the replaced thing (`_states_the_asked_reason`), less what X did for 'what
    caused X?', blame or charge for 'who was responsible?', what came of X (`_result_score`), a destination,
    where the money came from for 'how did X pay for Y?' (less a price alone), X opening the sentence for
    'how is X done?'.
    The sentence model never saw these rules (only
    the hand score's column holds them), so a blended score adds them again at the model's share
    (`ExtractiveAnswerer._score`); the looser rules (a reason clause near a question word, a negative, a
    compared scale) stay at the hand score's share."""
    score = REASON_FORM_BONUS if _states_the_asked_reason(question, sentence) else 0.0
    score -= EFFECT_PENALTY if _tells_what_the_asked_did(question, sentence) else 0.0
    score += _result_score(question, sentence)
    score += DESTINATION_BONUS if _tells_the_destination(question, sentence) else 0.0
    score += _means_score(question, sentence)
    score += SUBJECT_BONUS if _opens_with_the_asked(question, sentence) else 0.0
    return score + (ACTION_BONUS if _names_the_responsible(question, sentence) else 0.0)


# "Why did the library close?", "Why was the refractor built?", "What was the result / purpose / cause of X?":
# the answer says it in a form of its own, as a description answers "what is X?": a reason or purpose
# straight after the asked verb ("closed in March 2022 when inspectors found asbestos", "was built to
# measure ..."), a consequence opened by its connective ("As a result the yards closed"), a cause
# ("was caused by a spring tide", "started when a lamp fell over").
REASON_FORM_BONUS = DEFINITION_BONUS
REASON_WITHIN = 4  # words between the asked verb and its reason ("closed in March 2022 when")
_REASON_AFTER_VERB = re.compile(
    r"^(?:because|as|since|when|after|so that|so as|in order|due to|owing to|for fear|following)\b"
    r"|^to\s+(?!(?:the|a|an|be|his|her|its|their|this|that|my|our|your|them|him|me|us|it)\b)[a-z]",
    re.IGNORECASE,
)
RESULT_FORM = re.compile(
    r"^\W*(?:as a (?:result|consequence)|consequently|because of this|therefore|thus|so|in the end)\b"
    r"|\b(?:resulted in|led to|meant that)\b",
    re.IGNORECASE,
)
# a cause named as one ("The cause of the breach was a culvert ...", "The root cause was ...", "blamed the
# company for ...") answers a 'why did X fail?' question as well as a 'what caused X?' one
# a finding is a stated cause: "An inquiry held that the boat had been overloaded", "the coroner found that ...",
# "The fire was put down to / attributed to a faulty flue", "it was found that the bolts had sheared"
FINDING = (
    r"\b(?:inquiry|inquest|investigation|investigators?|report|court|coroner|jury|panel|board|review|tribunal"
    r"|committee|judge|experts?|engineers?|surveyors?|auditors?)\s+(?:[\w'\u2019-]+\s+){0,3}?"
    r"(?:held|found|concluded|ruled|decided|determined|established|judged)\s+that\b"
    r"|\bit\s+was\s+(?:found|concluded|ruled|established|determined|held)\s+that\b"
    r"|\b(?:put\s+down|attributed|ascribed|traced)\s+to\b|\b(?:was|were)\s+blamed\s+on\b"
)
# a sentence opening with a finding is a finding on what the sentence before it tells ('... the Grace Pellow
# capsized ... An inquiry held that the boat had been overloaded'): `_antecedent_terms`
FINDING_REACH = 3  # the sentences before a finding in its leaf whose event it may be on
OPENS_WITH_A_FINDING = re.compile(
    rf"^\W*(?:(?:an?|the|its|their|his|her)\s+)?(?:[\w'\u2019-]+\s+){{0,2}}?(?:{FINDING})", re.IGNORECASE
)
SAYS_A_FINDING = re.compile(FINDING, re.IGNORECASE)
STATED_CAUSE = re.compile(
    r"\bcauses?\s+(?:of\s+[^.;]{1,60}?\s+)?(?:was|were|is|are)\b|\bcaused\s+by\b|\bblamed\b|\bbecause\s+of\b"
    rf"|{FINDING}",
    re.IGNORECASE,
)
CAUSE_FORM = re.compile(
    r"\b(?:caused|started|begun|began|triggered|sparked)\s+(?:by|when|after|because)\b|\bbecause\b|\bdue to\b"
    rf"|{STATED_CAUSE.pattern}",
    re.IGNORECASE,
)
ASKS_RESULT = re.compile(rf"{_WHAT_IS_THE}(?:result|outcome|effect|consequence)s?\s+of\b(?P<of>[^?]*)", re.IGNORECASE)
# "What was the (root) cause of X?", "What caused X?", "What led to X?": X is what follows
ASKS_CAUSE = re.compile(
    rf"{_WHAT_IS_THE}(?:cause|reason)s?\s+(?:of|for|behind)\b(?P<of>[^?]*)|^\W*what\s+(?:{_CAUSING})\b(?P<caused>[^?]*)",
    re.IGNORECASE,
)
PURPOSE_QUESTION = re.compile(rf"{_WHAT_IS_THE}(?:purpose|aim|goal|point|use|function)s?\s+of\b|{_WHAT_FOR}", re.IGNORECASE)
WHY = re.compile(rf"^\W*why\b|{PURPOSE_QUESTION.pattern}", re.IGNORECASE)
# what a thing is for, in the form a purpose takes: "It was built to measure ...", "a switch, which lets it
# run on ...", "installed so that ...", "in order to ..."
PURPOSE_FORM = re.compile(
    r"\b(?:built|made|designed|used|intended|meant|installed|placed|put|set\s+up|founded|created|there)\s+"
    r"(?:[\w'\u2019-]+\s+){0,2}?to\s+(?!(?:the|a|an|be|his|her|its|their|this|that)\b)[a-z]"
    r"|\bused\s+for\s+\w+ing\b|\b(?:so\s+that|in\s+order\s+to|so\s+as\s+to)\b|\bwhich\s+(?:lets|allows|enables)\b",
    re.IGNORECASE,
)


# "Why is a new water tank needed?": a replacement is explained by what is wrong with what it replaces,
# a sentence about the old one ("The old tank by the shed is cracked and loses water.")
NEW_THING = re.compile(
    r"\bnew\s+(?:[\w-]+\s+){0,2}?(?P<noun>[a-z][\w-]+)\s+(?:is|are|was|were|be)?\s*"
    r"(?:needed|required|necessary|wanted|being|planned|bought|ordered|built|proposed)\b",
    re.IGNORECASE,
)
_REPLACED = r"old|existing|current|present|original|previous|former"


def _faults_the_replaced(question: str, sentence: str) -> bool:
    """Whether a 'why is a new X needed?' question's sentence is about the X it replaces ('the old X')."""
    new = NEW_THING.search(question)
    if not new:
        return False
    noun = re.escape(new.group("noun"))
    return bool(re.search(rf"\b(?:{_REPLACED})\s+(?:[\w-]+\s+){{0,2}}?{noun}(?:e?s)?\b", sentence, re.I))


def _gives_the_asked_reason(question: str, sentence: str) -> bool:
    """Whether the sentence says what a 'why / what was the purpose of X?' question asks in the form it
    takes (`_states_the_asked_reason`, or a reason or purpose clause straight after one of the question's
    words), or what a 'what was the result / cause of X?' question asks (RESULT_FORM, CAUSE_FORM)."""
    asks = _reason_asked(question)
    if asks == "result":  # `_result_score`
        return False
    if asks == "cause":
        return _states_the_asked_reason(question, sentence) or (
            bool(CAUSE_FORM.search(sentence)) and _names_the_asked_subject(question, sentence)
        )
    if asks != "why":
        return False
    if _states_the_asked_reason(question, sentence):
        return True
    asked = question_terms(question)
    said = re.findall(r"[\w'\u2019-]+", sentence)
    for i, word in enumerate(said):
        if stem(word.lower()) in asked:
            for gap in range(1, REASON_WITHIN + 2):
                if i + gap < len(said) and _REASON_AFTER_VERB.match(" ".join(said[i + gap : i + gap + 2])):
                    return True
    return False


# "What caused the fire?": a sentence that opens with the fire doing something ("The fire destroyed the upper
# floors") tells what it did, an effect; its cause is told elsewhere ("a spark ... set the roof alight").
EFFECT_PENALTY = REASON_FORM_BONUS
SUBJECT_WITHIN = 4  # words that open a sentence whose subject is the asked thing ("The great fire of ...")


def _states_the_asked_reason(question: str, sentence: str) -> bool:
    """Whether a why, cause or purpose question's sentence says its answer in so many words: a cause named
    as one (STATED_CAUSE), a purpose in its form for 'what is X for?' (PURPOSE_FORM) or straight after the
    asked verb for 'why was X built?' (`_purpose_after_the_asked_verb`), the fault of what a new thing
    replaces for 'why is a new X needed?'. Unlike a reason clause near one of the question's words
    ("recognition system W as the ..."), these seldom mislead, so they count in full under the blend."""
    if _reason_asked(question) not in ("why", "cause"):
        return False
    if STATED_CAUSE.search(sentence) or _faults_the_replaced(question, sentence):
        return True
    if _purpose_after_the_asked_verb(question, sentence) or _names_what_caused_the_asked(question, sentence):
        return True
    return _asks_purpose(question) and bool(PURPOSE_FORM.search(sentence))


# "Why was the Great Refractor built?", "Why was the college founded?", "Why did the council install the
# gates?": the purpose follows the asked verb, a few words on ("was built to measure ...", "was founded in
# 1868 to train ...", "installed the gates so that ..."); a reason clause ("as", "when") there may only say when
ASKS_WHY_DONE = re.compile(
    r"^\W*why\s+(?:(?:was|were|is|are|(?:has|have|had)\s+been)\s+.+?\s+(?P<done>[a-z][\w-]+)"
    r"(?:\s+(?:in|on|at|by|for|from|with|during|after|before|near|across|over)\b[^?]*)?"
    r"|(?:did|does|do|will|would)\s+(?:the\s+|a\s+|an\s+)?[\w'\u2019-]+(?:\s+(?-i:[A-Z])[\w'\u2019-]*)*\s+(?P<do>[a-z][\w-]+)\b[^?]*)"
    r"\s*[?.!]*\s*$",
    re.IGNORECASE,
)
PURPOSE_AFTER_VERB = re.compile(
    r"^(?:so\s+that|so\s+as\s+to|in\s+order\s+(?:to|that)|for\s+the\s+purpose\s+of)\b"
    # "founded in 1620 for the relief of poor widows", "built for storing grain"
    r"|^for\s+the\s+(?:relief|use|benefit|care|defen[cs]e|protection|[a-z]+(?:ing|ion|ment))\s+of\b|^for\s+[a-z]+ing\b"
    r"|^to\s+(?!(?:the|a|an|be|his|her|its|their|this|that|my|our|your|them|him|me|us|it)\b)[a-z]",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=256)
def _why_verb(question: str) -> str | None:
    """The stemmed verb a 'why was X done? / why did Y do X?' question asks the purpose of ('build' of
    'Why was the Great Refractor built?'); None for other questions and for a verb that names no deed."""
    match = ASKS_WHY_DONE.match(question)
    verb = (match.group("done") or match.group("do")) if match else None
    return None if verb is None or verb.lower() in STOPWORDS | _NO_ACTION else stem(verb.lower())


def _purpose_after_the_asked_verb(question: str, sentence: str) -> bool:
    """Whether the sentence states a purpose (PURPOSE_AFTER_VERB) within REASON_WITHIN words after the
    verb a 'why was X done?' question asks about (`_why_verb`), in any of its forms."""
    verb = _why_verb(question)
    if verb is None:
        return False
    said = re.findall(r"[\w'\u2019-]+", sentence)
    for i, word in enumerate(said):
        if stem(word.lower()) == verb:
            for gap in range(1, min(REASON_WITHIN + 2, len(said) - i)):
                if gap > 1 and said[i + gap - 1].lower() in _CLAUSE_BREAKS:
                    break  # "commits suicide after Harry attempts to reason": another verb's purpose
                if PURPOSE_AFTER_VERB.match(" ".join(said[i + gap : i + gap + 4])):
                    return True
    return False


# Words that open another clause between the asked verb and a purpose: what follows is another verb's.
_CLAUSE_BREAKS = frozenset(
    "after before when whenever while until till and but or as because since if although though where which who "
    "whom whose that then so".split()
)


# what a question asks is read once, not once a candidate sentence: a long question costs its regexes once
@functools.lru_cache(maxsize=256)
def _reason_asked(question: str) -> str:
    """'result' (ASKS_RESULT), 'cause' (ASKS_CAUSE), 'why' (WHY, a purpose included) or ''."""
    if ASKS_RESULT.search(question):
        return "result"
    if ASKS_CAUSE.search(question):
        return "cause"
    return "why" if WHY.search(question) else ""


@functools.lru_cache(maxsize=256)
def _asks_purpose(question: str) -> bool:
    return bool(PURPOSE_QUESTION.search(question))


# "Which kettle does not switch off?", "What is not allowed?", "Where is diving not allowed?": the negative
# is what the question asks, close after its question word; "what does he promise by not telling ...?"
# asks something else
NEGATIVE_QUESTION = re.compile(
    r"^\W*(?:which|what|who|whom|where)\b(?:\s+[\w'\u2019-]+){0,4}?\s+(?:not|never|no|cannot|can['\u2019]t"
    r"|(?:does|do|did|is|are|was|were|has|have|had|could|would|will)n['\u2019]t)\b",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=256)
def _asks_a_negative(question: str) -> bool:
    return bool(NEGATIVE_QUESTION.search(question))


@functools.lru_cache(maxsize=256)
def _cause_subject(question: str) -> str | None:
    """The stemmed last content word of what a 'what caused X / what was the cause of X?' question asks
    about ('fire' of 'What caused the fire?'); None for other questions."""
    asked = ASKS_CAUSE.search(question)
    subject = content_terms((asked.group("of") or asked.group("caused") or "") if asked else "")
    return stem(subject[-1]) if subject else None


# "What caused the outage?": its cause is the doer of a verb of causing whose object is X ("a maintenance
# job triggered the outage", "a lamp started the fire"); a fire's, of a verb of setting alight ("a spark
# from the kiln set the roof alight"), whose object is what burned
CAUSING = re.compile(
    r"\b(?:caused|causes|started|starts|triggered|triggers|sparked|sparks|ignited|provoked|set\s+off|touched\s+off"
    r"|brought\s+about|led\s+to|leads\s+to)\s+(?P<what>(?:[\w'\u2019-]+\s*){1,4})",
    re.IGNORECASE,
)
SETTING_ALIGHT = re.compile(
    r"\bset\s+(?:[\w'\u2019-]+\s+){1,5}?(?:alight|ablaze|afire|on\s+fire)\b|\bignited\b", re.IGNORECASE
)
FIRES = frozenset(stem(word) for word in ("fire", "fires", "blaze", "flames", "inferno"))
# "What caused the flood / collapse / outage / crash?": something else giving way ("a culvert gave way and
# the embankment burst", "the brakes failed", "a disk failed"), in a sentence that does not name X (one
# that does says what X did or was, `_tells_what_the_asked_did`); a fire is set, not given way to
GIVING_WAY = re.compile(
    r"\b(?:gave\s+way|burst|breached|collapsed|failed|broke(?:\s+down)?|cracked|snapped|overtopped|overflowed"
    r"|rusted\s+through|ran\s+out\s+of|blew\s+(?:out|up))\b",
    re.IGNORECASE,
)


def _names_what_caused_the_asked(question: str, sentence: str) -> bool:
    """Whether, for a 'what caused X?' question, the sentence tells what did it: a verb of causing with X its
    object (CAUSING), for a fire a verb of setting alight (SETTING_ALIGHT), for anything else another thing
    giving way (GIVING_WAY)."""
    subject = _cause_subject(question)
    if subject is None:
        return False
    if subject in FIRES:
        if SETTING_ALIGHT.search(sentence):
            return True
    elif GIVING_WAY.search(sentence) and not _names_the_asked_subject(question, sentence):
        return True
    return any(subject in {stem(word) for word in words(m.group("what"))} for m in CAUSING.finditer(sentence))


FINDING_LEAD = 1e-3  # how far the finding's score is put above the best other's


def _finding_first(question: str, candidates: list[_Candidate]) -> None:
    """A finding on the asked event (`_finding_on_the_asked`) is its stated cause, the answer to 'why did the
    boat capsize?' even where the sentence telling the capsize holds every word of the question and the
    finding none: the best-scored one is put first."""
    findings = [c for c in candidates if _finding_on_the_asked(question, c)]
    if not findings:
        return
    best = max(findings, key=lambda c: c.score)
    top = max(c.score for c in candidates)
    if best.score < top:
        best.score = top + FINDING_LEAD


# the words of a cause question that ask for the cause, not what it is of ('caused', 'led to', 'happen')
_CAUSE_ASKING = frozenset(stem(w) for w in "cause caused reason led lead happen happened come about".split())


def _finding_on_the_asked(question: str, candidate: _Candidate) -> bool:
    """Whether a why or cause question's quote is a finding on the asked event: it says one (SAYS_A_FINDING:
    'An inquiry held that the boat had been overloaded', 'Its closure was blamed on the cost'), and every word
    of what the question asks about is in it or in the sentences its paragraph told the event in
    (`found_on`)."""
    if _reason_asked(question) not in ("why", "cause") or not SAYS_A_FINDING.search(candidate.text):
        return False
    asked = question_terms(question) - _CAUSE_ASKING
    return bool(asked) and asked <= candidate.terms | candidate.found_on


def _explains_another(question: str, sentence: str) -> bool:
    """Whether, for a 'what caused X?' question, the sentence's reason is another thing's: it neither names X
    nor speaks of a cause ("rebuilt the mill with a slate roof, because the insurers refused" for the fire)."""
    if _reason_asked(question) != "cause" or _cause_subject(question) is None:
        return False  # "What caused it?" names no X to look for
    if _names_the_asked_subject(question, sentence):
        return False
    return not re.search(r"\bcaus(?:e[sd]?|ing)\b", sentence, re.IGNORECASE)


def _names_the_asked_subject(question: str, sentence: str) -> bool:
    """Whether the sentence names what a cause question asks about: its 'because' may be another thing's
    ("rebuilt the mill with a slate roof, because the insurers refused thatch" for the fire's cause)."""
    subject = _cause_subject(question)
    return subject is not None and subject in {stem(word.lower()) for word in re.findall(r"[\w'\u2019-]+", sentence)}


def _tells_what_the_asked_did(question: str, sentence: str) -> bool:
    """Whether, for a 'what caused X / what was the cause of X?' question, the sentence opens with X (its
    last content word, stemmed) as its subject and names no cause (CAUSE_FORM): it says what X did."""
    subject = _cause_subject(question)
    if subject is None:
        return False
    opening = {stem(word.lower()) for word in re.findall(r"[\w'\u2019-]+", sentence)[:SUBJECT_WITHIN]}
    return subject in opening and not CAUSE_FORM.search(sentence)


# "What was the result of X?", "What happened to X?", "What happened after X?": what came of X is told as a
# change to something ("The blast cracked the main oven", "The ovens were sold", "left 4,000 homes without
# power"), or by a connective of consequence (RESULT_FORM). A sentence telling X itself without one ("In
# 1941 a bomb fell on the street") or naming X's cause ("The main cause of the grounding was ...") says
# what X was, not what came of it.
ASKS_HAPPENED = re.compile(
    r"^\W*what\s+(?:then\s+|else\s+)?(?:has\s+|had\s+|will\s+|would\s+)?happen(?:ed|s)?\s+(?P<how>to|after|following|because\s+of)\s+"
    r"(?P<x>[^?]+?)(?:\s+(?:after|when|during|following|once|before)\b[^?]*)?\s*[?.!]*\s*$",
    re.IGNORECASE,
)
_CHANGES = (
    r"sold|bought|withdr[ae]wn?|closed|shut|destroyed|damaged|ruined|flooded|demolished|abandoned|scrapped"
    r"|broken\s+up|broke\s+up|sank|sunk|burn(?:ed|t)(?:\s+down)?|fined|cleared|acquitted|convicted|jailed|imprisoned"
    r"|arrested|executed|sentenced|dismissed|sacked|resigned|replaced|removed|lost|died|drowned|killed|hurt|injured"
    r"|wounded|dented|bent|cracked|wrecked|collapsed|t[ao]ok(?:en)?\s+over|towed|rescued|moved|renamed|converted"
    r"|merged|cancelled|canceled|postponed|delayed|evacuated|rehoused|stood\s+idle|out\s+of\s+service"
    r"|left\s+(?:[\w,.-]+\s+){1,4}?without"
)
CHANGE_FORM = re.compile(
    rf"\b(?:{_CHANGES})\b|\b(?:was|were|had\s+been|got)\s+(?:\w+ly\s+)?(?!(?:used|based|called|named|born|"
    r"supposed|interested|pleased|known)\b)[a-z]+(?:ed|en)\b",
    re.IGNORECASE,
)
RESULT_BONUS = REASON_FORM_BONUS + KIND_BONUS  # what came of X is what the question asks for, in its form
TELLS_ONLY_X_PENALTY = REASON_FORM_BONUS


STANDS_FOR_ANOTHER = ORDINALS | frozenset("one ones other others thing things".split())
X_ENDS = re.compile(r"\s+(?:that|which|who|whom|whose|where|in|on|at|during|after|when|before|following|once)\b", re.I)


@functools.lru_cache(maxsize=256)
def _result_subject(question: str) -> tuple[str, bool, bool] | None:
    """For a result question ('what was the result of X?', 'what happened to / after X?'): X's last content
    word, stemmed, whether the answer must name it ('what happened to X?' asks what was done to X; a
    result may be told of other things: 'The blast cracked the main oven' for the bomb) and whether X is
    a name (which 'he' or 'she' may stand for). None otherwise."""
    result, happened = ASKS_RESULT.search(question), ASKS_HAPPENED.search(question)
    asked = result.group("of") if result else happened.group("x") if happened else ""
    # "the eleven boats that sank", "the bridge in 1921": X is what the clause or phrase after it is about
    head = X_ENDS.split(asked, maxsplit=1)[0]
    terms = [term for term in content_terms(head) if not any(ch.isdigit() for ch in term)]
    if not terms or terms[-1] in STANDS_FOR_ANOTHER:  # "the first one" is for the follow-up rewrite to name
        return None
    person = bool(re.search(r"\b[A-Z]", head))  # a name may be told as 'he' or 'she', a thing as 'it' or 'they'
    return stem(terms[-1]), bool(happened) and happened.group("how").lower() == "to", person


def _tells_the_asked_result(question: str, sentence: str) -> bool:
    """Whether a result question's sentence says what came of X in the form a result takes: a consequence
    connective (RESULT_FORM) or a change (CHANGE_FORM), naming X for 'what happened to X?', and no cause."""
    subject = _result_subject(question)
    if subject is None or STATED_CAUSE.search(sentence):
        return False
    # a change the question names is X itself ("the boats that sank", "the result of the boats sinking")
    changes = [c for c in CHANGE_FORM.finditer(sentence) if not _names_a_word_of(question, c.group(0))]
    if subject[1]:
        return any(_near_the_change(subject, sentence, change) for change in changes)
    return bool(RESULT_FORM.search(sentence) or changes)


def _skeleton(word: str) -> str:
    """A stemmed word's consonants: one verb's forms that change their vowel share it ('sank', 'sink')."""
    return re.sub(r"[aeiouy]", "", stem(word.lower()))


def _names_a_word_of(text: str, words: str) -> bool:
    """Whether `text` holds one of `words`' words, in any form (the same stem, or the same consonants)."""
    said = {_skeleton(word) for word in re.findall(r"[\w'\u2019-]+", text)}
    return any(len(_skeleton(word)) >= 2 and _skeleton(word) in said for word in re.findall(r"[\w'\u2019-]+", words))


CHANGE_WITHIN = 4  # words between X and what was done to it ("withdrew the software update", "The ovens were sold")


def _near_the_change(subject: tuple[str, bool, bool], sentence: str, change: re.Match[str]) -> bool:
    """Whether X (stemmed) is named within CHANGE_WITHIN words of a change: what was done to X, not to
    another thing X's sentence names ("A software update ... stopped the display when it lost its signal")."""
    # a clause set off by commas says more of X: "The old village, which stood in the basin, was flooded"
    opening = re.findall(r"[\w'\u2019-]+", ASIDE.sub(" ", sentence[: change.start()]))
    pronoun = PRONOUN_OPENING.match(sentence)
    if pronoun and len(opening) <= CHANGE_WITHIN and (subject[2] or not pronoun.group("person")):
        return True  # "They were never replaced"
    after = re.findall(r"[\w'\u2019-]+", sentence[change.end() :])[:CHANGE_WITHIN]
    return subject[0] in {stem(word.lower()) for word in opening[-CHANGE_WITHIN - 1 :] + after}


ASIDE = re.compile(r",\s*(?:which|who|whose|where|whom)\b[^,]*,", re.IGNORECASE)
PRONOUN_OPENING = re.compile(r"^\W*(?:(?P<person>he|his|she|her)|they|their|it|its)\b", re.IGNORECASE)


def _tells_only_the_asked(question: str, sentence: str) -> bool:
    """Whether a result question's sentence names X (or X's cause) and says nothing that came of it."""
    subject = _result_subject(question)
    if subject is None or _tells_the_asked_result(question, sentence):
        return False
    return bool(STATED_CAUSE.search(sentence)) or _names_a_word_of(sentence, subject[0])


# "Where did he go after that?", "Where did the family move?": a destination is told by a verb of going and
# where to ("moved to Hobart", "sailed for Lisbon", "settled in Ohio", "left the town for the coast")
ASKS_DESTINATION = re.compile(
    r"^\W*where\s+(?:did|does|do|has|have|had|will|would)\s+[^?]+?\s+(?:go|move|travel|head|flee|sail|emigrate"
    r"|retire|settle|end\s+up|relocate|return|shelter|hide|escape|take\s+refuge|stay|sleep|wait|gather|land)\b",
    re.IGNORECASE,
)
DESTINATION = re.compile(
    r"\b(?:moved|went|gone|travell?ed|sailed|emigrated|fled|retired|settled|headed|returned|relocated|ended\s+up)"
    r"\s+(?:back\s+|abroad\s+|away\s+)?(?:to|for|in|into)\b|\bleft\s+(?:[\w'\u2019-]+\s+){1,3}?for\b"
    # where others took them ("led the passengers to the chapel"), or where they stayed ("sheltered in the barn")
    r"|\b(?:led|took|brought|guided|carried|rowed|ferried|evacuated)\s+(?:[\w'\u2019-]+\s+){1,3}?(?:to|into)\s+"
    r"(?:the|a|an|their|his|her)\b"
    r"|\b(?:sheltered|hid|hidden|stayed|slept|waited|gathered|landed|took\s+refuge)\s+(?:in|at|inside|under|on|into)\b",
    re.IGNORECASE,
)
DESTINATION_BONUS = REASON_FORM_BONUS


def _tells_the_destination(question: str, sentence: str) -> bool:
    """Whether a 'where did X go / move / settle / shelter?' question's sentence tells where to, or where they
    were taken or stayed (DESTINATION)."""
    return _asks_destination(question) and bool(DESTINATION.search(sentence))


@functools.lru_cache(maxsize=256)
def _asks_destination(question: str) -> bool:
    return bool(ASKS_DESTINATION.search(question))


# "How did the trust pay for the restoration?", "How was the new roof funded?", "How could they afford it?":
# the answer tells where the money came from ("most of it raised by public appeal", "paid for by a grant
# from the council", "financed with a loan"), which a sentence giving only the price ("cost 180,000
# pounds", "bought the mill for 4,000 pounds") does not
ASKS_MEANS_OF_PAYING = re.compile(
    r"^\W*how\s+(?:did|does|do|will|would|could|can|was|were|is|are|has|have|had)\s+(?:[^?]+?\s+)?"
    r"(?:pay|paid|fund|funded|finance|financed|afford|afforded|bankroll|bankrolled"
    r"|(?:raise|raised)\s+(?:the\s+|this\s+|that\s+|enough\s+)?(?:money|funds|cash|capital|sum))\b",  # not children
    re.IGNORECASE,
)
MEANS_OF_PAYING = re.compile(
    r"\b(?:raised|funded|financed|paid\s+for|met|covered|bankrolled|sponsored|underwritten|subsidi[sz]ed)\s+"
    r"(?:[\w'\u2019-]+\s+){0,2}?(?:by|through|from|with|out\s+of)\b"
    r"|\b(?:grants?|donations?|appeals?|loans?|mortgages?|subscriptions?|fund-?rais\w*|sponsorship|bequests?"
    r"|crowdfund\w*|savings|endowment|levy|bonds?)\b",
    re.IGNORECASE,
)
MEANS_BONUS = REASON_FORM_BONUS
PRICE_ONLY_PENALTY = MEANS_BONUS  # what it cost, as what X did for 'what caused X?' (EFFECT_PENALTY)


def _means_score(question: str, sentence: str) -> float:
    """For a 'how did X pay for / fund / afford Y?' question: MEANS_BONUS for a sentence saying where the
    money came from, PRICE_ONLY_PENALTY off one giving a price and no means ("bought the mill for 4,000
    pounds"), which shares the question's words and its sense of money but not what it asks."""
    if not _asks_means_of_paying(question):
        return 0.0
    if MEANS_OF_PAYING.search(sentence):
        return MEANS_BONUS
    return -PRICE_ONLY_PENALTY if _gives_a_price(sentence) else 0.0


def _gives_a_price(sentence: str) -> bool:
    """Whether the sentence gives a sum of money: a currency sign before a number, or a money unit after one."""
    if re.search(_CURRENCY, sentence):
        return True
    return any(UNITS["money"].match(word) for following in _after_numbers(sentence, MEASURED_WITHIN) for word in following)


@functools.lru_cache(maxsize=256)
def _asks_means_of_paying(question: str) -> bool:
    return bool(ASKS_MEANS_OF_PAYING.search(question))


def _result_score(question: str, sentence: str) -> float:
    """RESULT_BONUS for a sentence telling what came of a result question's X, less TELLS_ONLY_X_PENALTY
    for one telling only X itself or its cause."""
    if _tells_the_asked_result(question, sentence):
        return RESULT_BONUS
    return -TELLS_ONLY_X_PENALTY if _tells_only_the_asked(question, sentence) else 0.0


# "Which kettle is the fastest?", "Is the Alpen Mini lighter than the Brisk 500?", "Which costs more, X or
# Y?": a comparison is answered by where each thing stands on the asked scale: one of the scale's adjectives
# in any degree ("the fastest of the three", "the slowest", "light enough") or a number with a unit of its
# dimension ("weighs 310 grams"). Each scale: its adjectives and the dimensions (UNITS) it is measured in.
GRADED_BONUS = DEFINITION_BONUS + KIND_BONUS
SCALES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("light", "heavy"), ("weight",)),
    (("fast", "slow", "quick"), ("time",)),
    (("cheap", "expensive", "costly", "dear"), ("money",)),
    (("long", "short"), ("time", "length")),
    (("tall", "high", "low", "deep", "shallow", "wide", "narrow", "far", "near", "close"), ("length",)),
    (("old", "young", "early", "late", "new"), ("time",)),
    (("big", "large", "small", "little", "tiny", "great"), ()),
    (("strong", "weak", "powerful"), ()),
    (("good", "bad", "popular"), ()),
)
_IRREGULAR = {"good": "better|best", "bad": "worse|worst", "far": "farther|further|farthest|furthest", "little": "less|least"}
# "costs more", "paid less", "the most expensive": a comparison by its verb or by more/most
COMPARED_MONEY = re.compile(r"\b(?:costs?|paid|pay|pays|price[sd]?)\s+(?:more|less)\b|\b(?:more|less)\s+(?:to\s+)?(?:buy|cost)\b", re.I)


def _degrees(adjective: str) -> str:
    """A pattern of the adjective's comparative and superlative ('heavier|heaviest', 'bigger|biggest')."""
    if adjective in _IRREGULAR:
        return _IRREGULAR[adjective]
    if adjective.endswith("y"):
        return f"{adjective[:-1]}ier|{adjective[:-1]}iest"
    if adjective.endswith("e"):
        return f"{adjective}r|{adjective}st"
    doubled = adjective + adjective[-1] if re.search(r"[^aeiou][aeiou][bdgmnpt]$", adjective) else adjective
    return f"{doubled}er|{doubled}est"


# "X outperforms Y", "surpasses", "is superior to": a verb that says one thing does better than
# another places both on the good-bad scale as 'better' does ("Which model performs best?" is answered by
# "UTCNN significantly outperforms these models", a paper's usual way of saying which is best)
BETTER_THAN = r"outperform(?:s|ed|ing)?|surpass(?:es|ed|ing)?|superior|inferior|underperform(?:s|ed|ing)?"
SCALE_VERBS = {"good": BETTER_THAN}


def _scale_verbs(adjectives: tuple[str, ...]) -> str:
    """The verbs that place things on the scale of these adjectives (`SCALE_VERBS`), as alternatives."""
    return "".join(f"|{SCALE_VERBS[a]}" for a in adjectives if a in SCALE_VERBS)


GRADED_QUESTION = tuple(
    re.compile(
        r"\b(?:" + "|".join(_degrees(a) for a in adjectives) + _scale_verbs(adjectives) + r")\b"
        r"|\b(?:more|most|less|least)\s+(?:" + "|".join(adjectives) + r")\b",
        re.IGNORECASE,
    )
    for adjectives, _ in SCALES
)
GRADED_SENTENCE = tuple(
    re.compile(
        r"\b(?:" + "|".join(f"{a}|{_degrees(a)}" for a in adjectives) + _scale_verbs(adjectives) + r")\b",
        re.IGNORECASE,
    )
    for adjectives, _ in SCALES
)


# "What are their results on the new dataset?", "How well does the model perform?", "What is the performance
# of X?": a paper answers by saying how well one thing did against another ("AutoJudge significantly
# outperforms all the baselines"), a place on the good-bad scale, not by naming the dataset again
ASKS_RESULTS = re.compile(
    r"\bwhat\s+(?:are|were)\s+(?:the|their|its|our|his|her)\s+(?:\w+\s+)?results\b(?!\s+of\b)"
    r"|\bwhat\s+results\b|\bhow\s+well\s+(?:does|did|do|is|was|are|were)\b"
    r"|\bwhat\s+(?:is|was|are|were)\s+(?:the|their|its|our|his|her)\s+(?:\w+\s+)?performance\b",
    re.IGNORECASE,
)
GOOD_SCALE = next(i for i, (adjectives, _) in enumerate(SCALES) if "good" in adjectives)


@functools.lru_cache(maxsize=256)  # asked once a candidate sentence: a function of the question alone
def compared_scales(question: str) -> tuple[int, ...]:
    """The SCALES a comparison or superlative question asks along (none for other questions); a question
    after results or performance asks along the good-bad one (ASKS_RESULTS)."""
    asked = [i for i, pattern in enumerate(GRADED_QUESTION) if pattern.search(question)]
    if COMPARED_MONEY.search(question):
        asked.append(next(i for i, (_, dimensions) in enumerate(SCALES) if dimensions == ("money",)))
    if ASKS_RESULTS.search(question):
        asked.append(GOOD_SCALE)
    return tuple(dict.fromkeys(asked))


def _measures_the_compared(question: str, sentence: str) -> bool:
    """Whether the sentence places something on a scale the question compares along: an adjective of
    the scale in any degree, or a number with a unit of its dimension (a price also by its currency sign)."""
    for scale in compared_scales(question):
        dimensions = SCALES[scale][1]
        if GRADED_SENTENCE[scale].search(sentence) or ("money" in dimensions and re.search(_CURRENCY, sentence)):
            return True
        following = [word for words_after in _after_numbers(sentence, MEASURED_WITHIN) for word in words_after]
        if any(UNITS[d].match(word) for word in following for d in dimensions):
            return True
    return False


# "Which kettle does not switch off by itself?", "Which drill cannot drill into brick?": what is asked is a
# negative, and the sentence that answers says one ("the Alpen Mini does not switch off"); the sentences that
# say which do are the rest of the comparison
NEGATIVE_BONUS = DEFINITION_BONUS

# "Who was responsible for the breach?", "Who is in charge of the jobs?": the answer may say so in other
# words than the question's ("An inquiry blamed the company", "the team, led by Owen Hale")
ASKS_RESPONSIBLE = re.compile(
    r"^\W*who\s+(?:is|was|are|were|will\s+be)\s+(?:responsible|to\s+blame|in\s+charge|accountable|liable)\b",
    re.IGNORECASE,
)
RESPONSIBLE = re.compile(
    r"\b(?:responsible|responsibility|blamed?|at\s+fault|in\s+charge|accountable|liable|led\s+by|run\s+by)\b",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=256)
def _asks_responsible(question: str) -> bool:
    return bool(ASKS_RESPONSIBLE.search(question))


def _names_the_responsible(question: str, sentence: str) -> bool:
    """Whether a 'who was responsible for X?' sentence says who answers for something in words other than
    the question's verb (which `_holds_the_asked_action` rewards already)."""
    return (
        _asks_responsible(question)
        and bool(RESPONSIBLE.search(sentence))
        and not re.search(r"\bresponsib", sentence, re.IGNORECASE)
    )


# "How many men were lost?", "How much water does it hold?": what is counted follows the question word,
# and the answer writes a number just before it ("forty-three men"), not a number of something else
# ("three children"). "How old was Ilka?" is answered by an age ("was twelve", "aged 34", "ten years old").
COUNTED_BONUS = 0.08
HOW_MANY_OF = re.compile(r"\bhow\s+(?:many|much)\s+((?:[\w'\u2019-]+\s*){1,3})", re.IGNORECASE)
_NOT_COUNTED = frozenset("do does did is are was were have has had can could will would should may might must".split())
# a number word with its hyphened units ("twenty-four"); the word after any other hyphen is what it measures or
# counts ("a two-year warranty", "a five-mile walk"), as after a digit ("a 2-year warranty")
_NUMBER_WORD = rf"(?:{_NUMBER_WORDS}|\w+teen|\w+ty)"
NUMBER_TOKEN = re.compile(rf"(?<![\w.])\d[\d,.]*|\b{_NUMBER_WORD}(?:-{_NUMBER_WORD})?\b", re.IGNORECASE)
COUNTED_WITHIN = 3  # a number and what it counts, no function word between ("four thousand vehicles", "nine chart types")
ASKS_AGE = re.compile(r"\bhow\s+old\b", re.IGNORECASE)
AGE = re.compile(
    rf"\b(?:aged|age of|was|is|were|turned)\s+(?:about\s+|nearly\s+|almost\s+|only\s+|just\s+)?"
    rf"(?:\d{{1,3}}|(?:{_NUMBER_WORDS}|\w+teen|\w+ty)(?:-\w+)?)\b(?!\s+[a-z]+s\b)"
    rf"|\b(?:\d{{1,3}}|\w+)[- ]years?[- ]old\b",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=256)  # asked once a candidate sentence: a function of the question alone
def counted_terms(question: str) -> frozenset[str]:
    """The stemmed content words of what a 'how many / how much' question counts ('men' of 'How many
    men were lost?', 'kind', 'chart' of 'How many kinds of chart ...?'); empty when a verb follows
    ('How much did it cost?')."""
    match = HOW_MANY_OF.search(question)
    if not match:
        return frozenset()
    counted: list[str] = []
    for word in words(match.group(1)):
        if word in _NOT_COUNTED:
            break
        counted.append(word)
    return frozenset(stem(t) for t in content_terms(" ".join(counted)))


def _after_numbers(sentence: str, within: int) -> Iterator[list[str]]:
    """The first `within` words after each number of the sentence (what it counts or measures); labels
    and dates hold digits but no quantity, and are removed first."""
    if HAS_DIGIT.search(sentence):
        sentence = DATES.sub(" ", QUANTITY_LABELS.sub(" ", sentence))
    for number in NUMBER_TOKEN.finditer(sentence):
        yield words(sentence[number.end() : number.end() + 80])[:within]


def _counts_the_asked(question: str, sentence: str) -> bool:
    """Whether the sentence gives the number the question asks for: a number just before what a 'how
    many / how much' question counts, or an age for 'how old'. Labels and dates are no numbers."""
    if ASKS_AGE.search(question):
        return bool(AGE.search(sentence))
    counted = counted_terms(question)
    if not counted:
        return False
    for following in _after_numbers(sentence, COUNTED_WITHIN):
        for word in following:
            if stem(word) in counted:
                return True
            if word in STOPWORDS:  # "one to generate tags", "three types of tag" count something else
                break
    return False


ASKS_HOW_MANY = re.compile(r"\bhow\s+many\b", re.IGNORECASE)
# a plural noun straight after a number is what it counts: "three children", "two fingers", "four hours"
_IRREGULAR_PLURALS = frozenset("men women children people feet teeth geese mice oxen".split())


# what a number of anything of its kind may count: "twelve miners" are people, "three ferries" things
GENERIC_COUNTED = frozenset(stem(word) for word in "people persons individuals lives things items ones times".split())


def _plural_noun(word: str) -> bool:
    return word in _IRREGULAR_PLURALS or (len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")))


def _counts_only_others(question: str, sentence: str) -> bool:
    """Whether every number of the sentence counts a thing other than what a 'how many X?' question counts:
    a plural noun that is not X straight after it ("He arrived with their three children" for 'How many men
    were lost?'). A number followed by anything else ("twelve died", "seven of the crew") may count X."""
    counted = counted_terms(question)
    if not counted or counted & GENERIC_COUNTED or not ASKS_HOW_MANY.search(question):
        return False  # 'How many people died?' is answered by "thirty passengers" too
    following = [after[0] if after else "" for after in _after_numbers(sentence, 1)]
    return bool(following) and all(_plural_noun(word) and stem(word) not in counted for word in following)


MULTIPLIERS = re.compile(r"\b(?:double|twice|triple|treble|half)\b", re.IGNORECASE)


def _gives_the_asked_figure(question: str, sentence: str) -> bool:
    """Whether the sentence gives a number a 'how many / how much / how long / how often / how old' question
    may be answered by: one of what it counts or measures (`_counts_the_asked`, `_measures_the_asked`), or
    any other number but a date or a label ("500 ml of dark ale", "on 9 occasions", "double the normal
    rate"), except that a 'how many' question is not answered by a measure ("for seven months")."""
    if _counts_the_asked(question, sentence) or _measures_the_asked(question, sentence):
        return True
    many = bool(ASKS_HOW_MANY.search(question))
    if not many and MULTIPLIERS.search(sentence):
        return True
    units = tuple(UNITS.values())
    return any(
        not (many and any(unit.match(word) for word in following[:MEASURED_WITHIN] for unit in units))
        for following in _after_numbers(sentence, MEASURED_WITHIN)
    )


def asks_a_figure(question: str) -> bool:
    """Whether the question asks for a number: a count, a measure, a frequency or an age."""
    return bool(counted_terms(question) or asked_dimensions(question) or asks_frequency(question) or ASKS_AGE.search(question))


def gives_no_asked_figure(question: str, picked: list[_Candidate]) -> bool:
    """Whether quotes of a question asking for a number give none of the thing asked about: the first quote
    (the one nearest the question) gives no such number, and no other quote that does holds the question's
    words the first one holds. 'How many people died in the 1836 flood?' over "In 1836 a flood broke the
    weir ..." and "By 1860 it employed 310 people" asks a count the documents do not give; 'What did the
    trial cost?' is not answered by what a garden would cost."""
    if not picked or not asks_a_figure(question):
        return False
    if _gives_the_asked_figure(question, picked[0].text):
        return False
    topic = (question_terms(question) & picked[0].terms) - counted_terms(question)
    return not any(topic <= c.terms and _gives_the_asked_figure(question, c.text) for c in picked[1:])


# "Is there an app for it?", "Are there any showers?", "Does the company pay for gym membership?", "Do they
# offer refunds?": whether a thing exists or is given, which a passage can answer only by naming the thing
ASKS_WHETHER_THERE_IS = re.compile(
    r"^\W*(?:is|are|was|were)\s+there\s+(?P<there>[^?.!]+)"
    r"|^\W*(?:does|do|did|will|would|can)\s+[\w'\u2019 -]+?\s+(?:pay|provide|offer|have|include|give|sell|supply)\s+"
    r"(?:for\s+)?(?P<given>[^?.!]+)",
    re.IGNORECASE,
)
_THING_ENDS = re.compile(r"\s+(?:for|at|in|on|of|with|to|from|by|near|during|when|if|after|before)\s+.*$", re.IGNORECASE)


def asked_thing(question: str) -> frozenset[str]:
    """The stemmed words of the thing an 'is there X? / does it pay for X?' question asks after, before
    any preposition ('app' of 'Is there an app for the weather station?', 'gym', 'membership' of 'Does the
    company pay for gym membership?'); empty for other questions."""
    match = ASKS_WHETHER_THERE_IS.match(question)
    if not match:
        return frozenset()
    thing = _THING_ENDS.sub("", match.group("there") or match.group("given"))
    return frozenset(stem(t) for t in content_terms(thing))


def names_no_asked_thing(question: str, picked: list[_Candidate]) -> bool:
    """Whether no quote names the thing an 'is there X? / does it pay for X?' question asks after: quotes
    about the company's pay or the station's parts cannot say whether it pays for gym membership or has an
    app."""
    thing = asked_thing(question)
    return bool(thing) and not any(thing & c.terms for c in picked)


# "Who is the secretary?" over "Present: Joan Petrie (chair), Amit Shah (treasurer), eleven members." or
# "Chair: Joan Petrie; Treasurer: Amit Shah": the quote gives its names their roles, none the asked one.
_ROLE_IN_BRACKETS = re.compile(r"(?-i:[A-Z])[\w'\u2019-]+\s*\((?P<role>[A-Za-z][\w -]{1,30})\)")
_ROLE_LABEL = re.compile(r"(?:^|[;,.]\s+)(?P<role>[A-Z][a-z]+(?:\s[a-z]+)?):\s*(?-i:[A-Z])")
_ROLE_OF = re.compile(r"\s+(?:of|for|at|in|on)\s+", re.IGNORECASE)


def gives_other_roles(question: str, picked: list[_Candidate]) -> bool:
    """Whether a 'who is the <role>?' question's first quote names people by their roles, the asked role
    not among them: it tells who holds other posts, not who holds the asked one."""
    if not picked or not ANSWER_KINDS[WHO_KIND][0].search(question):
        return False
    defined = definition_subject(question)
    if defined is None or is_name(defined):
        return False
    asked = {stem(t) for t in content_terms(_ROLE_OF.split(defined)[0])}
    text = picked[0].text
    roles = [m.group("role") for m in (*_ROLE_IN_BRACKETS.finditer(text), *_ROLE_LABEL.finditer(text))]
    return bool(asked and roles) and not asked & {stem(w) for w in words(text)}


# "How long / how often / how far ...?", "How much does it cost / weigh?": a measure of one dimension,
# answered by a number with a unit of it ("for two and a half hours", "every ninety minutes", "six
# miles", "costs 24 pounds", "1.9 kilograms"), not by a number of something else.
_UNIT_WORDS = {
    "time": r"seconds?|minutes?|hours?|days?|nights?|weeks?|fortnights?|months?|years?|seasons?|decades?|centuries|century",
    "length": r"millimet(?:re|er)s?|centimet(?:re|er)s?|met(?:re|er)s?|kilomet(?:re|er)s?|km|cm|mm|m|miles?|yards?|f(?:oo|ee)t|inch(?:es)?"
    r"|paces?"
    r"|words|pages|lines",  # a text's length ("from 1500 to 2000 words long")
    "money": r"pounds?|pence|dollars?|cents?|euros?|francs?|yen|crowns?|shillings?|guineas?|coins?",
    "weight": r"grams?|kilograms?|kilos?|kg|g|mg|tonnes?|tons?|ounces?|oz|lbs?|stones?",
}
_CURRENCY = r"[£$€¥]\s?\d"
# every dimension a question word asks for ("how long" is a duration or a length)
MEASURE_QUESTIONS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r"\bhow\s+long\b", re.I), ("time", "length")),
    (
        re.compile(
            r"\bhow\s+(?:far|wide|tall|high|deep)\b|\bwhat\s+distance\b"
            rf"|{_WHAT_IS_THE}(?:length|height|width|depth|distance)\b",
            re.I,
        ),
        ("length",),
    ),
    (re.compile(rf"{_WHAT_IS_THE}duration\b", re.I), ("time",)),
    (
        re.compile(
            r"\bhow\s+much\b.*\b(?:cost|costs|charge|charged|pay|paid|spend|spent|price|fare|fee)\b"
            r"|\bhow\s+much\s+(?:is|are|was|were)\s+(?:an?|the)\b"
            r"|\bwhat\s+(?:is|was|are|were|does|did)\s+(?:the\s+|an?\s+)?(?:[\w-]+\s+)?(?:price|cost|fare|fee)s?\b",
            re.I,
        ),
        ("money",),
    ),
    (re.compile(r"\bhow\s+(?:heavy|much\b.*\bweighs?)\b|\bwhat\s+(?:is|was)\s+the\s+weight\b", re.I), ("weight",)),
)
ASKS_FREQUENCY = re.compile(r"\bhow\s+(?:often|frequently)\b|\bhow\s+many\s+times\b", re.I)
FREQUENCY = re.compile(
    r"\b(?:every|each)\s+(?:\w+\s+){0,2}?(?:second|minute|hour|day|night|week|fortnight|month|year|season|"
    r"morning|evening|spring|summer|autumn|winter|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    rf"{MONTH_NAME})s?\b|\b(?:once|twice|\w+\s+times)\s+(?:a|an|per|each|every)\b|\b(?:daily|nightly|weekly|"
    r"fortnightly|monthly|yearly|annually|hourly)\b|\b(?:a|per)\s+(?:day|week|month|year)\b",
    re.I,
)
MEASURED_WITHIN = 3  # a number and its unit: "two and a half hours", "a little under one kilometre"


UNITS = {dimension: re.compile(rf"^(?:{words_of})$", re.I) for dimension, words_of in _UNIT_WORDS.items()}


@functools.lru_cache(maxsize=256)  # asked once a candidate sentence: a function of the question alone
def asked_dimensions(question: str) -> tuple[str, ...]:
    """What a 'how long / how far / how much does it cost / weigh' question measures ('time', 'length',
    'money', 'weight'; none for other questions)."""
    return tuple(dict.fromkeys(d for asks, dims in MEASURE_QUESTIONS if asks.search(question) for d in dims))


@functools.lru_cache(maxsize=256)  # asked once a candidate sentence: a function of the question alone
def asks_frequency(question: str) -> bool:
    """Whether the question asks how often ('How often ...?', 'How many times ...?')."""
    return bool(ASKS_FREQUENCY.search(question))


def _measures_the_asked(question: str, sentence: str) -> bool:
    """Whether the sentence gives the measure the question asks for: a frequency for 'how often', a
    number with a unit of the asked dimension for 'how long / how far / how much does it cost' (a price
    also by its currency sign). Labels and dates are no measures."""
    if asks_frequency(question):
        return bool(FREQUENCY.search(sentence))
    dimensions = asked_dimensions(question)
    if not dimensions:
        return False
    if "money" in dimensions and re.search(_CURRENCY, sentence):
        return True
    return any(
        UNITS[d].match(word)
        for following in _after_numbers(sentence, MEASURED_WITHIN)
        for word in following
        for d in dimensions
    )


# "Who rebuilt the ramp?", "Which yard built the ship?", "Who will fit the new tank?": the answer is
# whoever did the asked action, written in a sentence that holds its verb ("Engineers from Corran Marine
# rebuilt the ramp", "was built at the Appledore yard", "who has offered to fit the tank"). A sentence
# that only shares the action's object ("the new tank", "the Maid of Hamm") is about something else.
ACTION_BONUS = DEFINITION_BONUS
_AUXILIARIES = r"will|would|did|does|do|has|have|had|can|could|should|might|may|must|first|once|finally|later"
# the verb as written: in lower case, so "Who does Maskull realize ...?" asks about no action of 'Maskull'
WHO_DID = re.compile(rf"^\s*(?i:who)\s+(?:(?i:{_AUXILIARIES})\s+)?(?P<verb>[a-z][\w-]+)\b")
# "What did the surveyors conclude?", "What did Margaret Lowry buy?": the answer holds the subject's verb
_SUBJECT = (
    r"(?:(?i:the|a|an|his|her|its|their|this|that)\s+[\w'\u2019-]+|(?:[A-Z][\w'\u2019-]*\s+)*[A-Z][\w'\u2019-]*"
    r"|he|she|it|they|we|you|i)"
)
WHAT_DID = re.compile(rf"^\s*(?i:what)\s+(?i:did|does|do|will|would|has|have|had)\s+{_SUBJECT}\s+(?P<verb>[a-z][\w-]+)\b")
_NO_ACTION = frozenset("is are was were be been being am get got mean stand refer happen".split())
# "How long does the stew cook?", "Why did the library close?": the question's verb, after its subject and
# ending the question (with an object after it, "How do I claim expenses?", "your claim" is what is asked)
QUESTION_VERB = re.compile(
    r"^\s*(?i:why|when|where|how(?:\s+(?:long|often|far|much|many|well|fast|soon))?)\s+"
    rf"(?i:did|does|do|will|would|should|can|could|must)\s+{_SUBJECT}\s+(?P<verb>[a-z][\w-]+)\s*[?.!]*\s*$"
)
_NOUN_BEFORE = r"a|an|the|this|that|his|her|their|its|my|our|your|every|each"


@functools.lru_cache(maxsize=256)  # asked once a candidate list: a function of the question alone
def question_verb(question: str) -> str | None:
    """The stemmed verb that ends a 'how long / why / when ... does X verb?' question ('cook' of 'How long
    does the stew cook?'); None for other questions."""
    match = QUESTION_VERB.match(question)
    verb = match.group("verb") if match else None
    return None if verb is None or verb in STOPWORDS | _NO_ACTION else stem(verb)


def _only_as_a_noun(term: str, sentence: str) -> bool:
    """Whether every word of the sentence whose stem is `term` stands after an article or possessive
    ('was a cook'): the sentence names the thing, not the action a question asks about."""
    said = re.findall(r"[\w'\u2019-]+", sentence)
    uses = [i for i, word in enumerate(said) if stem(word.lower()) == term]
    return bool(uses) and all(i > 0 and said[i - 1].lower() in _NOUN_BEFORE.split("|") for i in uses)


@functools.lru_cache(maxsize=256)  # asked once a candidate sentence: a function of the question alone
def asked_action(question: str) -> str | None:
    """The stemmed verb of a 'who did X / which Y did X' question ('rebuilt', 'build' of 'Which yard
    built the ship?'); None for other questions and for 'who was X' (a description, `definition_subject`)."""
    match = WHO_DID.match(question) or WHAT_DID.match(question)
    if match:
        verb = match.group("verb")
        return None if verb in STOPWORDS | _NO_ACTION else stem(verb)
    return asked_which(question)[1]


def _holds_the_asked_action(question: str, terms: set[str], sentence: str = "") -> bool:
    """Whether a sentence's stemmed terms hold the verb a 'who did X' question asks about, or the
    sentence names the doer or the deed by a noun made from it (`_names_the_deed`)."""
    action = asked_action(question)
    return action is not None and (action in terms or _names_the_deed(action, sentence))


# The nouns a verb makes for who does it and what is done ("successor", "succession" of "succeed";
# "founder", "foundation"; "replacement"; "appointment"): "Who will succeed Helen Trevaskis?" is answered
# by "Her successor ... is Ruth Pascoe", which holds no form of the verb itself.
_DEED_SUFFIX = r"(?:ors?|ers?|ions?|ments?|ants?|ents?)"
DEED_STEM_LETTERS = 4  # letters of the verb's stem a noun made from it keeps at least ("succ" of "succeed")


def _names_the_deed(action: str, sentence: str) -> bool:
    """Whether the sentence holds a noun made from the stemmed verb `action` (`_DEED_SUFFIX`): a word
    opening with the stem, less up to three final letters that derivation changes, and ending in a
    doer's or a deed's suffix."""
    if not sentence or len(action) < DEED_STEM_LETTERS:
        return False
    opening = re.escape(action[: max(DEED_STEM_LETTERS, len(action) - 3)])
    return bool(re.search(rf"\b{opening}[a-z]*{_DEED_SUFFIX}\b", sentence, re.IGNORECASE))


# "Which lifeboats served the station?", "What boats did it have?", "Name the lifeboats", "List the keepers":
# a question after several things of a kind (a plural noun, the last of up to three words)
LISTS_THINGS = re.compile(
    r"^\W*(?:which|what|(?:please\s+)?(?:name|list)(?:\s+(?:all|each\s+of|every\s+one\s+of))?"
    r"(?:\s+(?:the|its|their|his|her))?)\s+(?!of\b)"
    r"(?:[a-z][\w'\u2019-]*\s+){0,2}?(?P<noun>(?-i:[a-z][\w'\u2019-]*[^\Wsu]s))\b(?!\s+(?:is|was|doing|like)\b)",
    re.IGNORECASE,
)
# verbs a list question's plural noun may be ('What normally happens ...?', 'What best describes ...?')
_VERBS_IN_S = frozenset(
    """happens makes causes means goes comes remains follows helps needs takes seems does says matters describes
    explains shows suggests involves requires includes contains uses gives keeps leads runs stops starts ends
    costs wants""".split()
)
LIST_QUOTES = 6  # the most sentences a list question quotes, each naming one or more of the things asked
LIST_SPAN = 800  # characters either side of the first one, in its document, where the others are looked for


def listed_noun(question: str) -> str | None:
    """The stemmed noun a list question asks for ('lifeboat' of 'Which lifeboats served the station?'), a
    plural in lower case; None for any other question ('Which boat capsized?' asks for one, 'What do the
    Piruts want?' names a people, 'What normally happens ...?' asks with a verb)."""
    found = LISTS_THINGS.match(question)
    if found is None or found.group("noun") in STOPWORDS or found.group("noun") in _VERBS_IN_S:
        return None
    return stem(found.group("noun").lower())


def _holds_noun(noun: str, candidate: _Candidate) -> bool:
    """Whether the sentence names the noun, or its last part ('boat' for 'lifeboat'), or a longer word
    ending in it ('lifeboat' for 'boat')."""
    return any(
        term == noun
        or (len(term) >= MIN_HEAD and noun.endswith(term))
        or (len(noun) >= MIN_HEAD and term.endswith(noun))
        for term in candidate.terms
    )


def _heading_at(leaves: list[ContextNode], at: int) -> tuple[str, ...] | None:
    """The heading path of the context's leaf that starts last at or before the document's character `at`
    (a summary's copy of a sentence is read where its leaf stands, whose text the context may have trimmed);
    None when no leaf starts there or before."""
    before = [leaf for leaf in leaves if leaf.start is not None and leaf.start <= at]
    return max(before, key=lambda leaf: leaf.start).heading if before else None


def listed_items(question: str, candidates: list[_Candidate]) -> list[_Candidate]:
    """For a list question, the sentences that name the things it asks for, in their document's order: the
    sentences naming the noun ('Three lifeboats served the station.', 'The Mary Trelawny was a pulling boat',
    'The Grace Pellow, a sailing lifeboat', 'the motor lifeboat Kernow') in the one document section, within
    LIST_SPAN characters, that names it most often (of equals, the one with the best-scored such sentence), at
    most LIST_QUOTES, with the sentences between them; none when no section names it twice (a question whose
    things the documents do not list)."""
    noun = listed_noun(question)
    if noun is None:
        return []
    naming = [c for c in candidates if _document_place(c) is not None and _holds_noun(noun, c)]
    groups = [_named_near(first, naming, candidates) for first in sorted(naming, key=lambda c: -c.score)]
    items = max(groups, key=len, default=[])  # the section naming most of them; of equals, the best-scored
    if len(items) < 2:
        return []
    # and what stands between them: 'Walter Dunstan kept the light from 1868' between two sentences of keepers
    document = _document_place(items[0])[0]
    places = [_document_place(c)[1] for c in items]
    between = [
        c
        for c in candidates
        if c not in items
        and (place := _document_place(c)) is not None
        and place[0] == document
        and min(places) < place[1] < max(places)
    ]
    return sorted([*items, *between], key=_reading_order)[:LIST_QUOTES]


def _named_near(first: _Candidate, naming: list[_Candidate], candidates: list[_Candidate]) -> list[_Candidate]:
    """The sentences of `naming` in `first`'s document section, within LIST_SPAN characters of it."""
    document, at = _document_place(first)
    leaves = [c.node for c in candidates if c.node.layer == 0 and c.node.document == document]
    heading = _heading_at(leaves, at)
    return [
        c
        for c, (name, place) in ((c, _document_place(c)) for c in naming)
        if name == document and abs(place - at) <= LIST_SPAN and _heading_at(leaves, place) == heading
    ]


# "Which yard built the ship?", "What kind of grind does it need?", "Which class should I book?": the
# answer picks out one of the asked things by a word of its own before it ("the Appledore yard", "a
# coarse grind", "standard class"); a compound asked for is written by its last part ("shipyard": "yard").
WHICH_OF = re.compile(
    r"^\s*(?:(?:which|what)\s+(?:kinds?|sorts?|types?)\s+of\s+(?:an?\s+)?|which\s+)(?P<rest>[^?]*)", re.IGNORECASE
)
MAX_ASKED_WORDS = 3  # "which additional latent variables ..."
_DETERMINERS = frozenset("the a an his her its their this these that those my our your".split())
MIN_HEAD = 4  # letters of a compound's last part ("yard" of "shipyard")


@functools.lru_cache(maxsize=256)  # asked once a candidate sentence: a function of the question alone
def asked_which(question: str) -> tuple[str | None, str | None]:
    """The stemmed noun a 'which X / what kind of X' question asks about (the last word of X: 'corpora' of
    'Which parallel corpora are used?') and the stemmed verb that follows X when an object follows the
    verb ('built' of 'Which shipyard built the ship?'); (None, None) for other questions."""
    match = WHICH_OF.match(question)
    if not match:
        return None, None
    said = re.findall(r"[\w'\u2019-]+", match.group("rest"))
    phrase: list[str] = []
    for word in said[:MAX_ASKED_WORDS]:
        if word.lower() in STOPWORDS:
            break
        phrase.append(word)
    following = said[len(phrase)].lower() if len(said) > len(phrase) else ""
    verb = None
    if len(phrase) > 1 and following in _DETERMINERS and phrase[-1].islower():
        verb = stem(phrase.pop().lower())
    return (stem(phrase[-1].lower()), verb) if phrase else (None, None)


def _picks_out_the_asked(question: str, sentence: str) -> bool:
    """Whether the sentence names one of what a 'which X' question asks about: X (or X's last part) after
    a content word the question does not hold, and not an owner's name or a verb's '-ing' form."""
    noun = asked_which(question)[0]
    if noun is None:
        return False
    asked = question_terms(question)
    said = re.findall(r"[\w'\u2019-]+", sentence)
    for before, word in zip(said, said[1:], strict=False):
        head = stem(word.lower())
        if head == noun or (len(head) >= MIN_HEAD and noun.endswith(head)):
            modifier = before.lower()
            # "the club's boats" says whose, and "annotating datasets" what is done to them, not which
            if modifier.endswith(("'s", "\u2019s", "ing")):
                continue
            if modifier not in STOPWORDS and stem(modifier) not in asked and not HAS_DIGIT.search(modifier):
                return True
    return False


# "How do I descale the kettle?", "How to pitch the tent?": a manual answers with an instruction, a
# sentence that tells the reader what to do ("Fill the jug ...", "Submit your claim ...", "To use it,
# press the button ..."), not one that says what the thing is. An instruction whose verb is the asked
# task itself ("Descale the kettle every four weeks") says when, not how; one whose purpose is the asked
# task ("To grind beans, fill the hopper ...") answers it in so many words.
HOW_TO = re.compile(
    r"^\s*(?:how\s+(?:do|can|should|must|shall)\s+(?:i|we|you|one)|how\s+to"
    r"|what(?:'s|\s+is)\s+the\s+(?:best\s+|right\s+)?way\s+to)\s+(?P<task>[a-z][\w-]*)"
    r"(?:\s+(?:the\s+|an?\s+|my\s+|our\s+)?(?P<object>[^?]+?))?\s*[?.!]*\s*$",
    re.IGNORECASE,
)
INSTRUCTION_BONUS = DEFINITION_BONUS  # the form the question asks for, as a description is for 'what is X?'
PURPOSE_BONUS = KIND_BONUS
# "To use it, press ...": the pronoun stands for what the sentence before named, the question's object
REFERS_TO_THE_TASK = re.compile(r"^\W*to\s+(?P<task>[\w-]+)\s+(?:it|them|this|these|one)\s*,", re.IGNORECASE)
_OBJECT_START = r"the|a|an|your|it|them|this|these|those|each|every|both|all|its|their|any|some|out|up|off|down|back"
_LEAD_IN = r"(?:(?:to|if|when|once|after|before)\s+[^,;]{1,80},|first,|then,|next,|finally,)"
INSTRUCTION = re.compile(
    rf"^\W*(?:(?P<lead>{_LEAD_IN})\s*)?(?:(?:please|always|also|then|now)\s+)?(?P<verb>[A-Za-z][\w-]*)\s+(?:{_OBJECT_START})\b",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=256)  # asked once a candidate sentence: a function of the question alone
def how_to_task(question: str) -> tuple[str, str | None] | None:
    """The stemmed task of a question that asks how to do something, and its object as written
    ('How do I use keep warm?': 'use', 'keep warm'); None for other questions (also for 'How would
    you compare ...?', which asks for a judgement)."""
    asked = HOW_TO.match(question)
    return (stem(asked.group("task").lower()), asked.group("object")) if asked else None


def asks_how_to(question: str) -> bool:
    """Whether the question asks how to do something (`how_to_task`)."""
    return how_to_task(question) is not None


# A sentence that refers back holds what it refers to less surely than what it names itself
ANTECEDENT_SHARE = 0.6
# A sentence is about what its section's heading names ("In March 1861 a spark set the roof alight" under
# "## The fire of 1861" for "When did the fire happen?"), nearly as surely as if it named it
SECTION_SHARE = 1.0


def _lexical(question: str, candidate: _Candidate) -> float:
    """The candidate's share of the question's terms, those of what it refers back to counting
    ANTECEDENT_SHARE of theirs (`_antecedent_terms`); all of them for the step of a 'how do I X?'
    question that names its task by a pronoun ("To use it, press ..." for "How do I use keep warm?")."""
    asked = how_to_task(question)
    refers = REFERS_TO_THE_TASK.match(candidate.text) if asked else None
    if asked and refers and stem(refers.group("task").lower()) == asked[0]:
        return 1.0
    if asked and _continues_the_task(asked[0], candidate):
        return 1.0
    referred = candidate.lexical + ANTECEDENT_SHARE * (candidate.referred - candidate.lexical)
    return max(candidate.lexical, referred, candidate.lexical + SECTION_SHARE * (candidate.sectioned - candidate.lexical))


def _continues_the_task(task: str, candidate: _Candidate) -> bool:
    """Whether a leaf's instruction is a step of the asked task (stemmed) without naming it: a heading of
    its leaf below the document's title names the task ("Cleaning and descaling" over "Fill the jug ...
    with vinegar"). An instruction that is the task itself is no step of it. (The sentence before it is no
    sign: "Soak the beans overnight. Fry the soffritto ..." is the next task, not a step of soaking.)"""
    instruction = INSTRUCTION.match(candidate.text)
    if candidate.node.layer > 0 or not instruction or stem(instruction.group("verb").lower()) == task:
        return False
    return any(task in {stem(t) for t in content_terms(heading)} for heading in candidate.node.heading[1:])


def _instruction_bonus(question: str, sentence: str) -> float:
    """For a 'how do I X?' question: INSTRUCTION_BONUS for an instruction (an imperative, after a lead-in
    such as 'To use it,' or 'If it is wet,') that is not 'X ...' itself, and PURPOSE_BONUS more when its
    lead-in is 'To X'; as much less for a sentence that says what X's object is."""
    asked = how_to_task(question)
    if not asked:
        return 0.0
    task, topic = asked
    if topic and _describes(topic, sentence):  # "Keep warm is a mode ..." says what it is, not how to use it
        return -INSTRUCTION_BONUS
    instruction = INSTRUCTION.match(sentence)
    if not instruction or instruction.group("verb").lower() in STOPWORDS:
        return 0.0
    if stem(instruction.group("verb").lower()) == task:
        return 0.0
    lead = instruction.group("lead") or ""
    purpose = re.match(r"to\s+([\w-]+)", lead, re.IGNORECASE)
    if purpose and stem(purpose.group(1).lower()) == task:
        return INSTRUCTION_BONUS + PURPOSE_BONUS
    return INSTRUCTION_BONUS


# "When did X happen?", "When was X built?": one past event, answered by a year or a day's date; a
# month or season alone ("every June", "in the spring") more often says when something recurs.
PAST_WHEN = re.compile(r"\bwhen\s+(?:did|was|were|had)\b", re.IGNORECASE)
PRECISE_DATE = re.compile(
    rf"\b{_YEAR}\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{MONTH_NAME})\b|\b(?:{MONTH_NAME})\s+\d{{1,2}}\b",
    re.IGNORECASE,
)


# "What was the year of the fire?", "What date ...?": a year or a day's date, not "that night"
ASKS_A_DATE = re.compile(rf"\b(?:what|which)\s+(?:year|date)\b|{_WHAT_IS_THE}(?:date|year)s?\s+of\b", re.IGNORECASE)


def _kind_bonus(question: str, sentence: str) -> float:
    """KIND_BONUS when the sentence holds what the question asks for (`_answers_kind`); half of it for
    a past 'when' question answered without a year or a day's date, none for a question asking for a
    year or a date."""
    if not _answers_kind(question, sentence):
        return 0.0
    if ASKS_A_DATE.search(question) and not PRECISE_DATE.search(sentence):
        return 0.0
    if PAST_WHEN.search(question) and not PRECISE_DATE.search(sentence):
        return KIND_BONUS / 2
    return KIND_BONUS


# "When was the light automated?", "In what year was the viaduct finished?", "What year did the line close?",
# "When did the flood happen?": the answer dates the asked event, written by its verb in any form or by the
# noun made from it ("was scheduled for automation in 1985 ... converted in the spring of 1987"); for
# 'happen / take place / occur' the event is what the question names ("the flood"). A sentence that only
# repeats the asked verb without any time ("Across the country lighthouses were being automated ...")
# shares the question's words and says nothing of when: it loses the credit the verb gave its wording.
_ASKS_WHEN_OF = (
    r"^\W*(?i:when|(?:in\s+)?(?:what|which)\s+(?:year|date|day|month|decade|century))\s+"
    r"(?i:was|were|did|does|do|had|has|have|is|are|will|would)\s+"
)
_WHEN_ADVERBS = r"(?:(?i:first|last|finally|eventually|actually|officially)\s+)?"
# a named subject or a pronoun is followed by its verb ("When did Hester keep the light?"); another ends at the
# verb that ends the question or comes before its object or place ("When did the great flood happen?",
# "When was the light automated?", "What year did the line close to passengers?")
ASKS_WHEN_DONE = (
    re.compile(
        rf"{_ASKS_WHEN_OF}(?P<subject>(?:(?-i:[A-Z])[\w'\u2019-]*\s+)*(?-i:[A-Z])[\w'\u2019-]*"
        r"|(?i:he|she|it|they|we|you))(?<!['\u2019]s)"  # not an owner: "When was Hester's son born?"
        rf"\s+{_WHEN_ADVERBS}(?P<verb>(?-i:[a-z])[\w-]+)\b"
    ),
    re.compile(
        rf"{_ASKS_WHEN_OF}(?P<subject>.+?)\s+{_WHEN_ADVERBS}(?P<verb>(?-i:[a-z])[\w-]+)"
        r"(?:\s+(?i:in|on|at|for|by|from|to|into|up|down|over|out|off|with|as|place|the|a|an|his|her|its|their)"
        r"\b[^?]*)?"
        r"\s*[?.!]*\s*$"
    ),
)
_TIME_ASKED = frozenset("year years date day month decade century time".split())  # 'in what year' asks, names nothing
_HAPPENING = frozenset("happen happened occur occurred take took place".split())
_LINKING = frozenset("become became get got come came go went".split())  # the event is what follows them
DATED_EVENT_BONUS = EVENT_BONUS  # the asked event with a date, over a date of something else


@functools.lru_cache(maxsize=256)  # asked once a candidate sentence: a function of the question alone
def asked_event(question: str) -> tuple[frozenset[str], str | None]:
    """What a 'when was X done / when did X happen?' question asks the time of: the stemmed words of X for
    'happen / take place / occur', else no words and the stemmed verb ('automat' of 'When was the light
    automated?'). Empty and None for other questions."""
    match = ASKS_WHEN_DONE[0].match(question) or ASKS_WHEN_DONE[1].match(question)
    if not match or match.group("verb") in STOPWORDS | _LINKING | _NO_ACTION - {"happen"}:
        return frozenset(), None
    if _LINKING & {word.lower() for word in match.group("subject").split()}:  # "... son become harbour master?"
        return frozenset(), None
    if match.group("verb") in _HAPPENING:
        return frozenset(stem(t) for t in subject_terms(match.group("subject"))), None
    activity = _phase_of_an_activity(question, match)
    return frozenset(), _verb_stem(activity[1] if activity else match.group("verb"))


# "When did Hester start keeping the light?", "What year did the mill stop grinding?": the event is the
# activity, and the answer dates its start or end ("Hester kept the light from 1861 to 1874")
_PHASES = {"start": "start", "started": "start", "begin": "start", "began": "start", "stop": "end", "stopped": "end"}
_PHASES |= {"cease": "end", "ceased": "end", "finish": "end", "finished": "end", "quit": "end"}
_GERUND = re.compile(r"\s+(?P<activity>[a-z]+ing)\b")
# the past forms a stem does not reach ("Hester kept the light" for "When did Hester start keeping ...?")
_IRREGULAR_PAST = {
    past: base
    for base, pasts in (
        ("keep", "kept"), ("grind", "ground"), ("lead", "led"), ("build", "built"), ("leave", "left"), ("begin", "began begun"),
        ("hold", "held"), ("run", "ran"), ("take", "took taken"), ("give", "gave given"), ("buy", "bought"),
        ("sell", "sold"), ("make", "made"), ("find", "found"), ("win", "won"), ("lose", "lost"),
        ("write", "wrote written"), ("teach", "taught"), ("fight", "fought"), ("rise", "rose risen"),
        ("fall", "fell fallen"), ("sink", "sank sunk"), ("break", "broke broken"), ("send", "sent"),
        ("spend", "spent"), ("light", "lit"), ("meet", "met"), ("bring", "brought"), ("think", "thought"),
    )
    for past in pasts.split()
}


def _phase_of_an_activity(question: str, match: re.Match[str]) -> tuple[str, str] | None:
    """('start' or 'end', the activity) of 'when did X start / stop <doing> ...?'; None for other questions."""
    phase = _PHASES.get(match.group("verb").lower())
    gerund = _GERUND.match(question, match.end("verb")) if phase else None
    return (phase, gerund.group("activity")) if phase and gerund else None


def _asked_phase(question: str) -> str | None:
    """'start' or 'end' where a when-question asks when an activity started or stopped (`_phase_of_an_activity`)."""
    match = ASKS_WHEN_DONE[0].match(question) or ASKS_WHEN_DONE[1].match(question)
    activity = _phase_of_an_activity(question, match) if match else None
    return activity[0] if activity else None


def _verb_stems(sentence: str) -> set[str]:
    """The sentence's words as `_verb_stem` and `_IRREGULAR_PAST` read them ('kept': 'keep', 'automated': 'automat')."""
    said = [word.lower() for word in re.findall(r"[\w'\u2019-]+", sentence)]
    return {_verb_stem(word) for word in said} | {_verb_stem(_IRREGULAR_PAST[w]) for w in said if w in _IRREGULAR_PAST}


def _says_the_asked_event(question: str, candidate: _Candidate) -> bool:
    """Whether the sentence names what `asked_event` reads: the verb in any form ('automated', 'automating')
    or the act's noun ('automation', `_names_the_event_noun`), or a word of the happening ('the flood')."""
    things, verb = asked_event(question)
    if verb is not None:
        return verb in _verb_stems(candidate.text) or _names_the_event_noun(verb, candidate.text)
    return bool(things & (candidate.terms | candidate.antecedent))  # "It came in March 1947" after "The flood"


_EVENT_NOUN_SUFFIX = r"(?:ions?|ments?|als?|ures?)"  # what is done, not who does it ("keeper" dates no keeping)


def _names_the_event_noun(verb: str, sentence: str) -> bool:
    """Whether the sentence holds a noun of the act the stemmed verb names ('automation', 'retirement',
    'closure', 'arrival'), by `_names_the_deed`'s reading of a stem, less the doer's nouns."""
    if len(verb) < DEED_STEM_LETTERS:
        return False
    opening = re.escape(verb[: max(DEED_STEM_LETTERS, len(verb) - 3)])
    return bool(re.search(rf"\b{opening}[a-z]*{_EVENT_NOUN_SUFFIX}\b", sentence, re.IGNORECASE))


def _asked_event_share(question: str) -> float:
    """The share of the question's terms the asked verb (or the happening's words) is, the words asking the
    time ('year' of 'In what year ...?') left out: what its wording gives a sentence repeating it."""
    terms = {_verb_stem(t) for t in subject_terms(question) if t not in _TIME_ASKED}
    things, verb = asked_event(question)
    event = {verb} if verb is not None else {_verb_stem(t) for t in things}
    return len(event & terms) / len(terms) if terms else 0.0


def dated_event_score(question: str, candidate: _Candidate) -> float:
    """A 'when was X done?' sentence's gain for dating the asked event (`_says_the_asked_event` and a year or a
    day's date): DATED_EVENT_BONUS, and the lexical credit of the verb where it says it by its noun only (of the
    happening where a pronoun tells it); its loss for naming the asked verb with no time at all: the lexical
    credit the repeated verb gave it."""
    things, verb = asked_event(question)
    if (not things and verb is None) or not _says_the_asked_event(question, candidate):
        return 0.0
    credit = LEXICAL_WEIGHT * _asked_event_share(question)
    if PRECISE_DATE.search(candidate.text):
        if verb is None:  # "It came in March 1947": the happening told by a pronoun gets its words' credit
            return DATED_EVENT_BONUS + (0.0 if things & candidate.terms else credit)
        by_noun_only = verb not in {_verb_stem(t) for t in candidate.terms}
        return DATED_EVENT_BONUS + (credit if by_noun_only else 0.0) + _phase_bonus(question, candidate.text)
    # a happening named without a time is often the time of another thing ("After the flood the company ...")
    return 0.0 if verb is None or holds_kind(0, candidate.text) else -credit


def _phase_bonus(question: str, sentence: str) -> float:
    """DATED_EVENT_BONUS for a sentence dating the asked activity's asked start or end ("kept the light from
    1861", "stopped grinding in 1907"), as `_event_bonus` gives a start or end of the thing asked."""
    phase = _asked_phase(question)
    if phase is None:
        return 0.0
    return DATED_EVENT_BONUS if (STARTS if phase == "start" else ENDS).search(sentence) else 0.0


# "Who was Ambrose Kittow's assistant?", "Who was Edith's deputy / partner / successor?", "Who assisted
# Ambrose Kittow?": the answer names X's <role>. A sentence naming X only as the owner of another relation
# ("His assistant from 1911 was Ambrose Kittow's grandson, Peter Kittow") is about X's grandson: X's words
# give it no credit, and it loses what a sentence about X's other possessions loses.
_OWNER = r"(?P<owner>(?:(?-i:[A-Z])[\w'\u2019-]*\s+)*(?-i:[A-Z])[\w-]*)"
# asked of the relation itself ('Who was X's R?'), not of a thing of X's a deed is done to ('Who is called in
# to investigate Mark's radio station?': the FCC, named in a sentence without Mark)
ASKS_OWNERS = re.compile(
    r"^\s*(?i:who)\s+(?i:is|was|are|were|has\s+been|had\s+been|became|becomes)\s+"
    rf"{_OWNER}['\u2019]s\s+(?:(?-i:[a-z])[\w-]+\s+){{0,2}}?(?P<role>(?-i:[a-z])[\w-]+)\s*[?.!]*\s*$"
)
ASKS_WHO_DID_TO = re.compile(
    rf"^\s*(?i:who)\s+(?:(?i:{_AUXILIARIES})\s+)?(?P<verb>(?-i:[a-z])[\w-]+)\s+{_OWNER}\s*[?.!]*\s*$"
)


@functools.lru_cache(maxsize=256)  # asked once a candidate sentence: a function of the question alone
def asked_relation(question: str) -> tuple[str, str] | None:
    """The owner and the stemmed relation of "Who was X's R?" ('Ambrose Kittow', 'assistant') or of "Who
    R-ed X?" ('Ambrose Kittow', 'assist'); None for other questions."""
    match = ASKS_OWNERS.search(question) if ANSWER_KINDS[WHO_KIND][0].search(question) else None
    if match:
        return match.group("owner"), stem(match.group("role"))
    match = ASKS_WHO_DID_TO.match(question)
    if match and match.group("verb") not in STOPWORDS | _NO_ACTION:
        return match.group("owner"), stem(match.group("verb"))
    return None


def _owns_another(owner: str, relation: str, sentence: str) -> bool:
    """Whether every mention of the owner in the sentence (in full where it names them in full; namesakes put
    aside) is a possessive before a noun that is not the asked relation nor a noun made from it
    ('grandson' for 'assistant' or 'assist')."""
    own = _subject_words(owner)
    if not own:
        return False
    sentence = _without_namesakes(owner, sentence)
    mentions = re.findall(
        rf"\b((?:{own})(?:\s+(?:{own}))*+)\b(?:['\u2019]s\s+([a-z][\w-]*))?", sentence, re.I
    )
    full = [noun for name, noun in mentions if len(name.split()) == len(owner.split())]
    nouns = full if is_name(owner) and full else [noun for _, noun in mentions]
    return bool(nouns) and all(noun and not _is_the_relation(relation, noun) for noun in nouns)


def _is_the_relation(relation: str, noun: str) -> bool:
    """Whether a noun is the asked relation or a noun made from its verb ('assistant' of 'assist')."""
    return (
        stem(noun.lower()) == relation
        or _names_the_deed(relation, noun)
        or _names_the_deed(stem(noun.lower()), relation)
    )


def _holds_the_relation(owner: str, relation: str, sentence: str) -> bool:
    """Whether the sentence names the owner as the one who holds the asked relation to someone else ("His
    assistant ... was Walter Dunstan", "Walter Dunstan, Kittow's former assistant", "with Walter Dunstan as
    his assistant keeper" for "Who was Walter Dunstan's assistant?"): it answers whose assistant X was."""
    own = _subject_words(owner)
    if not own or len(relation) < DEED_STEM_LETTERS:
        return False
    sentence = _without_namesakes(owner, sentence)
    name = rf"\b(?:{own})(?:\s+(?:{own}))*+\b(?!['\u2019]s)"
    held = rf"\b{re.escape(relation[: max(DEED_STEM_LETTERS, len(relation) - 3)])}[a-z]*"
    return bool(
        re.search(
            rf"{held}(?:\s+[\w'\u2019-]+){{0,6}}?\s+(?:was|is|were|became|remained)\s+(?:[^,.;]{{1,40}},\s+)?{name}",
            sentence,
            re.I,
        )
        or re.search(
            rf"{name},?\s+(?:(?:was|is|became|served\s+as|as)\s+)?(?:[\w'\u2019-]+\s+){{0,3}}?{held}",
            sentence,
            re.I,
        )
    )


OWNER_PRONOUN = re.compile(r"^\W*(?:his|her|their)\s+(?:[\w-]+\s+)??(?P<noun>[\w-]+)", re.IGNORECASE)


def owner_by_pronoun(question: str, sentence: str) -> bool:
    """Whether a "Who was X's R?" / "Who R-ed X?" sentence opens with the relation after a possessive pronoun
    ("Her assistant for most of that time was Arthur Pell"): the pronoun stands for X, the one asked about, so
    the sentence is read with the words of the one before, as a sentence opening with 'It' is."""
    asked = asked_relation(question)
    opening = OWNER_PRONOUN.match(sentence)
    return asked is not None and opening is not None and _is_the_relation(asked[1], opening.group("noun"))


def owner_of_another_score(question: str, candidate: _Candidate) -> float:
    """What a sentence naming the asked relation's owner only as the owner of another (`_owns_another`) loses:
    the lexical credit of the owner's words and POSSESSIVE_PENALTY, as much as one naming the owner as the
    holder of that relation to another (`_holds_the_relation`); POSSESSIVE_PENALTY for one naming the relation
    in no form; 0 for others and other questions."""
    asked = asked_relation(question)
    if asked is None:
        return 0.0
    # one naming no R at all says nothing of X's R
    said = any(_is_the_relation(asked[1], word) for word in re.findall(r"[A-Za-z][\w-]+", candidate.text))
    penalty = 0.0 if said else POSSESSIVE_PENALTY
    if not (_owns_another(*asked, candidate.text) or _holds_the_relation(*asked, candidate.text)):
        return -penalty
    terms = {stem(t) for t in subject_terms(question)}
    owners = {stem(t) for t in subject_terms(asked[0])} & terms
    return -(penalty + POSSESSIVE_PENALTY + (LEXICAL_WEIGHT * len(owners) / len(terms) if terms else 0.0))


BM25_K1, BM25_B = 1.2, 0.75


def bm25_scores(query: set[str], documents: list[set[str]], lengths: list[int]) -> np.ndarray:
    """BM25 of each document (a set of stemmed terms) for the query's terms, the documents themselves
    the collection; over the best document's score, so a question's scores lie in [0, 1]."""
    count = len(documents)
    if not count or not query:
        return np.zeros(count)
    average = max(1.0, sum(lengths) / count)
    scores = np.zeros(count)
    for term in query:
        held = [term in terms for terms in documents]
        frequency = sum(held)
        if not frequency:
            continue
        idf = math.log(1.0 + (count - frequency + 0.5) / (frequency + 0.5))
        for i, has in enumerate(held):
            if has:
                norm = 1.0 - BM25_B + BM25_B * lengths[i] / average
                scores[i] += idf * (BM25_K1 + 1) / (1.0 + BM25_K1 * norm)
    best = scores.max()
    return scores / best if best > 0 else scores


def proximity(query: set[str], sentence: str) -> float:
    """How close together the question's terms stand in the sentence: distinct terms held over the
    span of words from the first to the last (0 when fewer than two are held)."""
    positions: dict[str, int] = {}
    first = last = -1
    for i, word in enumerate(units(sentence)):
        term = stem(word)
        if term in query:
            positions.setdefault(term, i)
            first = i if first < 0 else first
            last = i
    return len(positions) / (last - first + 1) if len(positions) >= 2 else 0.0


def _neighbour_similarity(candidates: list[_Candidate], similarity: np.ndarray) -> np.ndarray:
    """Mean cosine of the quotable sentences just before and after each one in the same node (its
    own cosine when it stands alone): an answer's neighbours usually speak of the same thing."""
    out = np.array(similarity, dtype=np.float64)
    for i, candidate in enumerate(candidates):
        around = [
            similarity[j]
            for j in (i - 1, i + 1)
            if 0 <= j < len(candidates) and candidates[j].position == candidate.position
        ]
        if around:
            out[i] = float(np.mean(around))
    return out


def sentence_features(
    question: str,
    candidates: list[_Candidate],
    similarity: np.ndarray,
    sentences: np.ndarray,
    weights: dict[str, float],
) -> np.ndarray:
    """The sentence model's rows, one per candidate (names and meaning: ranker.SENTENCE_FEATURES).
    `candidates` are in context order (block, then place in the block), `similarity` their cosines to
    the question, `sentences` their unit vectors, `weights` the question's weighted terms."""
    count = len(candidates)
    terms = set(weights)
    order = np.argsort(-similarity, kind="stable")
    similarity_rank = np.empty(count)
    similarity_rank[order] = np.arange(count) / max(1, count - 1)
    blocks = max(c.position for c in candidates)
    block_terms: dict[int, set[str]] = {}
    for candidate in candidates:
        block_terms.setdefault(candidate.position, set()).update(candidate.terms)
    positions = sorted(block_terms)
    node_bm25 = dict(
        zip(
            positions,
            bm25_scores(terms, [block_terms[p] for p in positions], [len(block_terms[p]) for p in positions]),
            strict=True,
        )
    )
    bm25 = bm25_scores(terms, [c.terms for c in candidates], [len(c.terms) for c in candidates])
    neighbours = _neighbour_similarity(candidates, similarity)
    centrality = _centrality(sentences) if count else np.zeros(0)
    defined = definition_subject(question)
    kinds = [bool(asks.search(question)) for asks, _ in ANSWER_KINDS]
    rows = np.zeros((count, len(SENTENCE_FEATURES)))
    for i, c in enumerate(candidates):
        heading_terms = {stem(t) for h in c.node.heading for t in content_terms(h)}
        event = _event_bonus(question, c.text) / EVENT_BONUS
        rows[i] = [
            similarity[i],
            similarity[i] - similarity[order[0]],
            similarity_rank[i],
            c.node.score,
            (c.position - 1) / max(1, blocks - 1),
            c.node.layer,
            c.lexical,
            bm25[i],
            node_bm25[c.position],
            proximity(terms, c.text),
            *(float(asked and holds_asked_kind(question, kind, c.text)) for kind, asked in enumerate(kinds)),
            float(defined is not None and _describes(defined, c.text)),
            event,
            math.log1p(word_count(c.text)),
            c.sentence.start / max(1, len(c.node.text)),
            float(_in_opening(c)),
            neighbours[i],
            centrality[i],
            len(terms & heading_terms) / len(terms) if terms else 0.0,
            hand_score(question, c),
        ]
    return rows


@dataclass
class _Quoted:
    """What the extractive answer quotes, and what it was chosen from."""

    rewrite: Rewrite
    thematic: bool
    candidates: list[_Candidate]
    picked: list[_Candidate]  # best first; never empty when the context has a quotable sentence
    settled: bool | None = None  # a follow-up naming nothing ('why?'): whether `onward` found what it asked
    kind: str | None = None  # the context's kind of document (`ranker.document_kind`)
    # asked as a question about the whole ("Describe the setting of the story."), though ranked as one about
    # its topic: like a question about the whole, it is not judged (`_grounding`)
    themed: bool = False
    edge: tuple[str, str] | None = None  # 'and then?' after a document's last passage (`OnwardPick.edge`)
    named: frozenset[str] = frozenset()  # the context's documents the question names ('what does manual.md say ...')
    table_lead: str | None = None  # a question over a table's rows: the line stating its count or order (tables.py)


def _row_place(candidate: _Candidate) -> tuple[str | None, int]:
    """A row's document and place in it: a summary's copy of a row its leaf left out stands where the leaf
    had it (`_place_copies`), so the rows of one table are read together and in their order."""
    if candidate.node.layer > 0 and candidate.placed is not None and candidate.placed[0] is not None:
        return candidate.placed
    return candidate.node.document, (candidate.node.start or 0) + candidate.sentence.start


def _table_pick(
    rewrite: Rewrite, candidates: list[_Candidate], context: list[ContextNode], history: list[Turn], ranked: list[int],
    quotes: int,
) -> TablePick | None:
    """The rows a question over a table's rows quotes, and its lead (`tables.table_pick`); None for any other
    question, or a context without labelled rows. A follow-up leans on the question it follows."""
    rows = joined_rows([
        Row(index, *_row_place(candidate), cells)
        for index, candidate in enumerate(candidates)
        if (cells := row_cells(candidate.text)) is not None
    ])
    if len(rows) < 2:
        return None
    asked = [turn.content for turn in reversed(history) if turn.role == "user"]
    carried = [rewrite.context] if rewrite.context else []
    # a check of the last answer ('is that more than £10?') is of the last question as it was asked ('and
    # the second?'), which the rewrite's context may pass over for the one before it
    earlier = asked + carried if asked and CHECKS_LAST_ANSWER.match(rewrite.core) else carried + asked
    # more sentences than are read (MAX_SENTENCES): some rows may be left out, so no count is stated
    whole = whole_documents(context) if len(candidates) < MAX_SENTENCES else set()
    too_big = frozenset(node.document for node in context if node.table_too_big)
    return said_too_big(table_pick(rewrite.core, rows, ranked, whole, quotes, earlier), too_big)


def _terms_of(candidates: list[_Candidate]) -> set[str]:
    """Every stemmed content term the candidates hold."""
    return set().union(*(c.terms for c in candidates))


def _pronoun_means(rewrite: Rewrite, history: list[Turn]) -> set[str]:
    """Who a follow-up's person pronoun means: 'what else did he do?' kept as asked after 'What did
    Haldor find?' -> {'Haldor', 'he'} (the name `onward_person` resolves, and the pronoun as a subject);
    empty without such a pronoun or when whom it means is unclear."""
    pronouns = PERSON_PRONOUNS.intersection(words(rewrite.core))
    person = onward_person(rewrite.core, history) if pronouns else None
    if person is None:
        return set()
    subject = {"he": "he", "him": "he", "his": "he", "she": "she", "her": "she", "hers": "she"}
    return {person} | {subject.get(p, "they") for p in pronouns}


def _texts(quoted: _Quoted) -> list[str]:
    """The context's sentences, for telling the documents' language."""
    return [c.text for c in quoted.candidates]


def _asked_in_another_language(question: str, candidates: list[_Candidate]) -> bool:
    """A question in another language than the context's ('¿Cuántos días puedo trabajar desde casa?' over
    English documents): three words or more, none an English question word (ENGLISH_QUESTION_WORDS), and
    none of its terms in the context. The grounding model was fitted on English questions and the
    default embedder is English-trained, so neither can tell that such documents say nothing of it."""
    asked = words(question)
    if len(asked) < 3 or in_bigrams(question) or ENGLISH_QUESTION_WORDS.intersection(asked):
        return False
    held = _terms_of(candidates)
    return not question_terms(question) & held


def _story_holds_topic(question: str, candidates: list[_Candidate]) -> bool:
    """Whether a story has what "Describe the X in the story." asks about: an aspect every story has
    (STORY_ASPECTS), or a thing its sentences name."""
    named = _terms_of(candidates)
    return all(t in STORY_ASPECTS or stem(t) in named for t in topic_terms(question, frozenset()))


def _speakers(candidates: list[_Candidate]) -> frozenset[str]:
    """The transcript speakers the candidate sentences are shown with (none outside a transcript)."""
    return frozenset(c.speaker for c in candidates if c.speaker)


def _named_speaker_terms(question: str, candidates: list[_Candidate]) -> set[str]:
    """The terms of the transcript speakers a question names ('Jane Doe' of 'What did Jane Doe say about
    the crane?'): they pick whose turns to quote, and a quote shows them in its label, not in its words,
    so whether the quotes answer is judged on the rest of the question."""
    speakers = _speakers(candidates)
    if not speakers:
        return set()
    return {stem(t) for name in named_speakers(question, speakers) for t in content_terms(name)}


def grounding_features(
    question: str, candidates: list[_Candidate], picked: list[_Candidate], context: list[ContextNode]
) -> list[float]:
    """GROUNDING_FEATURES (grounding.py) of a question's quotes, from what ranking already computed:
    the candidates' cosines (`similarity`) and weighted term shares (`lexical`), their terms."""
    similarities = sorted(c.similarity for c in candidates)
    speaker_terms = _named_speaker_terms(question, candidates)
    held = _terms_of(candidates)
    # a term the context holds only one slip away ("lighthose") counts as that term
    respelled = respellings(question_terms(question) - speaker_terms, held)
    asked = {respelled.get(t, t) for t in question_terms(question) - speaker_terms}
    quoted = _terms_of(picked)
    pinned = {stem(t) for name in names_in(question) for t in content_terms(name)} - speaker_terms
    pinned = {respelled.get(t, t) for t in pinned} | set(re.findall(r"\d+", question))
    return [
        picked[0].similarity,
        similarities[-1],
        similarities[len(similarities) // 2],
        picked[0].lexical,
        len(asked & quoted) / len(asked) if asked else 1.0,
        len(asked & held) / len(asked) if asked else 1.0,
        len(pinned - held) / len(pinned) if pinned else 0.0,
        max(node.score for node in context),
        len(respelled) / len(asked) if asked else 0.0,
        content_share(len(subject_terms(question)), len(words(question))),
    ]


def _without_asides(rewrite: Rewrite, context: list[ContextNode]) -> tuple[Rewrite, frozenset[str]]:
    """A question as it is ranked: a long one's questions without the paragraph before them, without
    greetings, a request's frame and thanks, and without the context's documents it names ('according
    to minutes.md, who chaired?' -> 'Who chaired?'); and the documents it named, which the quotes'
    sources must then include for the quotes to answer."""
    documents = context_documents((n.document for n in context), (n.drawn_from for n in context))
    named = frozenset(named_files(rewrite.core, documents))
    core = without_asides(rewrite.core, documents)
    return (replace(rewrite, core=core) if core != rewrite.core else rewrite), named


def _title_of(candidate: _Candidate) -> str:
    """The names (and a leaf's headings) of the documents a quote may stand in: a leaf's document, the
    leaf's document of a summary's copy of its sentence, else every document the summary draws on."""
    if candidate.placed is not None:
        return candidate.placed[0] or ""
    if candidate.node.document is None:
        return " ".join(name for name, _ in candidate.node.drawn_from)
    return " ".join([candidate.node.document, *candidate.node.heading])


def _sources(picked: list[_Candidate]) -> set[str]:
    """The documents quotes were taken from (a summary's: the documents it draws on)."""
    return context_documents((c.node.document for c in picked), (c.node.drawn_from for c in picked))


def _asks_only_a_speaker(question: str, candidates: list[_Candidate], picked: list[_Candidate]) -> bool:
    """Whether a transcript's question names speakers and nothing else to look for ('What did Marketing
    say?', 'What did Jane Doe propose?'), and the first quote is one of theirs: any of their turns answers
    it, however little its words resemble the question's."""
    speakers = _speakers(candidates)
    if not speakers or picked[0].speaker is None:
        return False
    return picked[0].speaker in named_speakers(question, speakers) and not topic_terms(question, speakers)


class ExtractiveAnswerer:
    """Quotes the context sentences that best answer the question, each with its block's [n].

    Ranking blends the embedding similarity of each sentence to the question with how many of the
    question's own terms, names and numbers it holds, and whether it holds what the question asks
    for (a year for 'when', a reason for 'why'). A follow-up's carried context counts lightly, and
    sentences the last answer already quoted are pushed down. 'Who/what was X?' prefers sentences
    that say what X is, 'when did X end/start?' the year of an ending/start, a cause, purpose,
    comparison, negative or 'who was responsible?' question an answer in its form (`form_score`). Thematic questions
    ('what is this about?', 'central theme') prefer the sentences closest to the summaries' centre,
    the higher layers' first, and get THEME_QUOTES of them in reading order. The first line says
    whether the quotes answer (FOUND), are only the closest passages (WEAK_MATCH) or are about
    something else (NOTHING_RELATED), as the grounding model (grounding.py) reads the question, the
    quotes and the context; the quotes are the same whatever it says.
    """

    name = "extractive"

    def __init__(
        self,
        embedder: Embedder,
        quotes: int = QUOTES,
        ranker: Ranker | None = None,
        grounding: GroundingModel | None = None,
    ):
        """With a `ranker` (the shipped one: `load_ranker()`), its sentence model orders the quotes of
        a standalone question that is not about the whole (it was fitted on such questions); a
        follow-up, a question about the whole, a 'how do I ...?' question, or any question without a
        ranker is ranked by the hand weights below."""
        self.embedder = embedder
        self.quotes = quotes
        self.ranker = ranker
        self.grounding = grounding or load_grounding()
        self.sentence_vectors = SentenceVectors(embedder)

    def _answer_sync(self, question: str, context: list[ContextNode], history: list[Turn]) -> AnswerDraft:
        quoted = self._quotes(question, context, history)
        if quoted is None:
            return AnswerDraft(NOTHING_FOUND)
        # a follow-up's new sentences are quoted alone: a neighbour joined to one may be the last answer's
        picked = quoted.picked
        if quoted.settled is None:
            words = NARRATIVE_FRAGMENT_WORDS if quoted.kind == NARRATIVE else FRAGMENT_WORDS
            follows = _document_next(context, quoted.candidates)
            picked = [
                joined
                for c in quoted.picked
                for joined in _with_next_sentence_of_its_document(c, quoted.picked, follows, words)
            ]
        lines = "\n".join(f"- {in_quotes(c.shown)} [{c.position}]" for c in picked)
        return AnswerDraft(f"{self._lead(quoted, context)}\n{lines}", pages=_quoted_pages(picked))

    def _lead(self, quoted: _Quoted, context: list[ContextNode]) -> str:
        """The answer's first line (LEADS); quotes that do not answer a question asked in another language
        than the documents' say so, so the user knows why they may look unrelated."""
        if quoted.table_lead is not None:
            return quoted.table_lead
        grounding = self._grounding(quoted, context)
        if quoted.edge is not None and grounding is Grounding.CLOSEST:
            side, document = quoted.edge
            return (DOCUMENT_ENDS if side == "end" else DOCUMENT_OPENS).format(document=document)
        languages = None if grounding is Grounding.ANSWERED else other_language(quoted.rewrite.core, _texts(quoted))
        if languages is not None:
            return OTHER_LANGUAGE.format(documents=languages[0], asked=languages[1])
        return LEADS[grounding]

    def _quotes(self, question: str, context: list[ContextNode], history: list[Turn]) -> _Quoted | None:
        """The sentences to quote, best first (a thematic answer's in reading order), each as ranked,
        before a short one is joined to its neighbour; None when the context has nothing quotable."""
        candidates = _candidates(context)
        rewrite, named = _without_asides(split_standalone(question), context)
        code = _code_result(rewrite.core, context, self.quotes)
        if code:  # what a function returns, raises or yields: the lines of its body that do, not its `def`
            return _Quoted(rewrite, False, candidates or code, code, settled=True)
        if not candidates:
            return None
        thematic = bool(THEMATIC.search(rewrite.core)) or (
            any(c.speaker for c in candidates) and bool(DISCUSSION.search(rewrite.core))
        )
        follow_up = bool(rewrite.context)
        kind = document_kind([c.shown for c in candidates])
        themed = False
        if thematic and not follow_up and kind == NARRATIVE and topic_terms(rewrite.core, frozenset()):
            thematic = False  # "Describe the Martians in the story." asks about them, not the whole story
            themed = True
        # a comparison of two times wants the last answer's figure again beside the other time's
        compares = compared_times(rewrite.core, rewrite.context) is not None
        self._score(
            rewrite,
            candidates,
            _quoted_before(history) if follow_up and not compares else set(),
            thematic,
            _names_of(history) if follow_up else set(),
            kind,
        )
        ask = onward_ask(rewrite.core) if follow_up and not thematic else None
        onward = None
        if ask is not None and LISTS_COUNTED_ROWS.match(rewrite.core):
            # 'which ones?' after 'how many products are in Power tools?': the rows counted, not examples
            order = self._order(rewrite, candidates, kind, 0.0)
            table = _table_pick(rewrite, candidates, context, history, order, self.quotes)
            if table is not None:
                picked = [candidates[i] for i in table.picked]
                return _Quoted(rewrite, thematic, candidates, picked, kind=kind, named=named, table_lead=table.lead)
        if ask is not None:
            asked = question_terms(rewrite.core) or question_terms(rewrite.context)
            about = _pronoun_means(rewrite, history)
            onward = pick_onward(ask, candidates, history, self.quotes, _holds_reason, asked, about)
        if onward is not None:  # 'why?', 'and then?', 'tell me more': new sentences around the last quote
            return _Quoted(rewrite, thematic, candidates, onward.picked, onward.settled, kind, edge=onward.edge)
        if thematic:
            least = NARRATIVE_THEME_MIN_WORDS if kind == NARRATIVE else 0
            picked = self._pick_spread(candidates, max(self.quotes, THEME_QUOTES), least)
            # what a text is about reads best in the text's own order: its opening first
            picked.sort(key=_reading_order)
        else:
            # the repeat penalty was chosen with the blend: only where the model orders the quotes
            penalty = self.ranker.blend.repeat_penalty if self.ranker is not None and not follow_up else 0.0
            order = self._order(rewrite, candidates, kind, penalty)
            picked = [candidates[i] for i in order]
            # not in a paper or a story, whose lists the ranker was fitted on ('What baselines do they compare to?')
            items = listed_items(rewrite.core, candidates) if not follow_up and kind is None else []
            if items:  # 'Which lifeboats served the station?': each one named, in order, before anything else
                picked = [*items, *(c for c in picked if c not in items)][: max(len(items), self.quotes)]
            table = _table_pick(rewrite, candidates, context, history, order, self.quotes)
            if table is not None:  # 'who joined most recently?': the rows by the asked column's values
                picked = [candidates[i] for i in table.picked]
                return _Quoted(rewrite, thematic, candidates, picked, kind=kind, named=named, table_lead=table.lead)
        return _Quoted(rewrite, thematic, candidates, picked, kind=kind, themed=themed, named=named)

    def _order(self, rewrite: Rewrite, candidates: list[_Candidate], kind: str | None, penalty: float) -> list[int]:
        """The candidates to quote, best first, by their scores (`pick_quotes`)."""
        return pick_quotes(
            [c.score for c in candidates],
            [c.terms for c in candidates],
            self._quote_count(rewrite, kind),
            question_terms(rewrite.core),
            penalty,
        )

    def _quote_count(self, rewrite: Rewrite, kind: str | None) -> int:
        """How many sentences a question that is not about the whole gets: NARRATIVE_QUOTES for a
        standalone question about a story that is not after a short fact, `quotes` for any other."""
        if kind == NARRATIVE and not rewrite.context and not asks_short_fact(rewrite.core):
            return max(self.quotes, NARRATIVE_QUOTES)
        return self.quotes

    def _grounding(self, quoted: _Quoted, context: list[ContextNode]) -> Grounding:
        """Whether the quotes answer: a question about the whole (or asked as one: "Describe the setting
        of the story."), or one that names nothing of its own (a bare "why?" after an answer), is
        answered by what it gets; any other is judged by the
        grounding model. A Chinese, Japanese or Korean question whose first quote shares none of its
        terms gets the closest passages at best (the model was fitted on English questions, and the
        default embedder is English-trained); so does a question in another language whose terms the
        context does not hold (`_asked_in_another_language`), which the model would tell "say nothing".
        A question asking a negative ('who did not keep the light?')
        gets the closest passages at best unless the first quote says a negative too, of what the question
        negates (`says_the_asked_negative`): a quote that says who did, or says nothing of who did not, or
        a negative of something else, does not settle it. A question naming its subject only by a
        pronoun ('who designed it?') gets the closest passages at worst. A question about what a transcript's
        speaker said, naming no topic ('What did Jane Doe say?'), is answered when the first quote is that
        speaker's. A comparison with another year or quarter, judged as searched ('How many plots were
        vacant in Q1? (context: ... in Q2?)'), is answered when the quotes hold a figure of each time
        (compared.py), else gets the closest passages."""
        core = quoted.rewrite.core
        if quoted.settled is not None:
            return Grounding.ANSWERED if quoted.settled else Grounding.CLOSEST
        if quoted.thematic or not subject_terms(core) or (quoted.themed and _story_holds_topic(core, quoted.candidates)):
            return Grounding.ANSWERED
        if _asks_only_a_speaker(core, quoted.candidates, quoted.picked):
            return Grounding.ANSWERED
        times = compared_times(core, quoted.rewrite.context)
        if times is not None:  # 'was that more than in Q1?': both figures, each of its own time
            # a quote counts for a time when it shares a word of what is asked ('moorings'): 'Income in 2020 was
            # 275,000 pounds' gives no figure for the waiting list of 2020
            asked = question_terms(core) - {time.lower() for time in times}
            titled = [(c.text, _title_of(c)) for c in quoted.picked if not asked or asked & c.terms]
            return Grounding.ANSWERED if holds_figures_of(times, titled) else Grounding.CLOSEST
        core = what_is_asked(core)
        verdict = self.grounding.verdict(self._asked_features(quoted, core, context))
        if verdict is Grounding.ANSWERED and quoted.named and not quoted.named & _sources(quoted.picked):
            return Grounding.CLOSEST
        if verdict is Grounding.ANSWERED and in_bigrams(core) and quoted.picked[0].lexical == 0:
            return Grounding.CLOSEST
        if verdict is Grounding.ANSWERED and asks_a_negative(core) and not says_the_asked_negative(core, quoted.picked[0].text):
            return Grounding.CLOSEST
        if verdict is Grounding.ANSWERED and (
            gives_no_asked_figure(core, quoted.picked)
            or names_no_asked_thing(core, quoted.picked)
            or gives_other_roles(core, quoted.picked)
        ):
            return Grounding.CLOSEST
        if verdict is not Grounding.ANSWERED and _finding_on_the_asked(core, quoted.picked[0]):
            return Grounding.ANSWERED  # 'An inquiry held that the boat had been overloaded' for 'what caused the capsize?'
        if verdict is Grounding.NOTHING and subject_is_a_pronoun(core, len(subject_terms(core)), len(names_in(core))):
            return Grounding.CLOSEST
        if verdict is Grounding.NOTHING and _asked_in_another_language(core, quoted.candidates):
            return Grounding.CLOSEST
        return verdict

    def grounding_features(self, question: str, context: list[ContextNode]) -> list[float] | None:
        """The grounding model's features for a question without history, as answering computes them
        (what `python -m raptor_tools.grounding` fits the model on); None when nothing is quotable."""
        quoted = self._quotes(question, context, [])
        if quoted is None:
            return None
        return self._asked_features(quoted, what_is_asked(quoted.rewrite.core), context)

    def _asked_features(self, quoted: _Quoted, asked: str, context: list[ContextNode]) -> list[float]:
        """`grounding_features` of what a question asks (`what_is_asked`): when that is shorter than the
        question ranked, the candidates' cosines and term shares are read again for it, on copies (the
        quotes stay as ranked)."""
        if asked == quoted.rewrite.core:
            return grounding_features(asked, quoted.candidates, quoted.picked, context)
        copies = {id(c): replace(c) for c in quoted.candidates}
        if any(id(c) not in copies for c in quoted.picked):
            return grounding_features(quoted.rewrite.core, quoted.candidates, quoted.picked, context)
        candidates = list(copies.values())
        self._similarities(replace(quoted.rewrite, core=asked), candidates, set())
        return grounding_features(asked, candidates, [copies[id(c)] for c in quoted.picked], context)

    def _similarities(
        self, rewrite: Rewrite, candidates: list[_Candidate], conversation_names: set[str]
    ) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
        """Each candidate's cosine to the question (a follow-up's carried context blended in), the
        candidates' unit vectors and the question's weighted terms; sets `similarity` and `lexical`."""
        # each alone: the question's vector must not depend on what the follow-up leans on
        queries = embedded_alone(self.embedder, [rewrite.core, rewrite.context] if rewrite.context else [rewrite.core])
        if len(queries) == 1:
            return self._similarities_to(_unit(queries[0]), rewrite, candidates, conversation_names)
        core_share = CORE_SHARE if subject_terms(rewrite.core) else ELLIPSIS_CORE_SHARE
        query = _unit(core_share * queries[0] + (1 - core_share) * queries[1])
        return self._similarities_to(query, rewrite, candidates, conversation_names)

    def _similarities_to(
        self, query: np.ndarray, rewrite: Rewrite, candidates: list[_Candidate], conversation_names: set[str]
    ) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
        """`_similarities` for a question vector already at hand (retrieval embedded the question)."""
        sentences = self.sentence_vectors([c.text for c in candidates])
        weights = _query_weights(rewrite, candidates, conversation_names)
        similarity = sentences @ query
        defined = definition_subject(rewrite.core)
        subject = {stem(t) for t in content_terms(defined)} if defined is not None and is_name(defined) else set()
        verb = question_verb(rewrite.core)
        asks_who = bool(ANSWER_KINDS[WHO_KIND][0].search(rewrite.core))
        for i, candidate in enumerate(candidates):
            candidate.similarity = float(similarity[i])
            held = candidate.terms
            if subject and not subject <= held and _describes(defined, candidate.text):
                held = held | subject  # a person by one name: "Kittow was thirty-four" holds "Ambrose Kittow"
            if verb is not None and verb in held and _only_as_a_noun(verb, candidate.text):
                held = held - {verb}  # "How long does the stew cook?" is not answered by "was a cook"
            candidate.lexical = _lexical_of(held, weights)
            if candidate.antecedent and not (
                asks_who
                and PERSONAL_OPENING.match(candidate.text)
                and not owner_by_pronoun(rewrite.core, candidate.text)
            ):
                candidate.referred = _lexical_of(held | candidate.antecedent, weights)
            if candidate.section:
                candidate.sectioned = _lexical_of(held | candidate.section, weights)
        return similarity, sentences, weights

    def feature_rows(self, question: str, context: list[ContextNode]) -> tuple[list[str], np.ndarray]:
        """The quotable sentences of a context and their sentence-model rows, as ranking sees them for a
        question without history (what `raptor train-ranker` fits the model on)."""
        candidates = _candidates(context)
        if not candidates:
            return [], np.zeros((0, len(SENTENCE_FEATURES)))
        rewrite = split_standalone(question)
        similarity, sentences, weights = self._similarities(rewrite, candidates, set())
        return [c.text for c in candidates], sentence_features(rewrite.core, candidates, similarity, sentences, weights)

    def node_scores(self, question: str, query_vector: np.ndarray, nodes: list[ContextNode]) -> list[list[float]]:
        """How well each node's sentences answer the question, as the quotes would judge them: the
        blended quote scores (sentence model and hand weights, as `_score` ranks a standalone
        question's quotes) of its quotable sentences, best first, the nodes read as one context in the
        given order. A sentence a node shares with another (a summary copies its leaves') counts for
        both. Empty for a node with no quotable sentence (a heading alone, a table's first row), and for
        every node without a ranker. The quote model knows what a question asks for (a number for "how
        many", a place for "where"), which the two searches' order does not (docs/EVALUATION.md, "Small
        budgets": measured as an order of the context, it is not the engine's)."""
        scored = self.sentence_scores(question, query_vector, nodes)
        return [sorted(found.values(), reverse=True) for found in scored]

    def sentence_scores(
        self, question: str, query_vector: np.ndarray, nodes: list[ContextNode]
    ) -> list[dict[str, float]]:
        """Per node, each quotable sentence's blended quote score by its `sentence_key` (see
        `node_scores`): what a small budget keeps of a node (`retrieve.trimmed`). Empty for a node with
        no quotable sentence and for every node without a ranker."""
        candidates = _candidates(nodes)
        if self.ranker is None or not candidates:
            return [{} for _ in nodes]
        rewrite = split_standalone(question)
        similarity, sentences, weights = self._similarities_to(
            _unit(np.asarray(query_vector, dtype=np.float32)), rewrite, candidates, set()
        )
        features = sentence_features(rewrite.core, candidates, similarity, sentences, weights)
        kind = document_kind([c.shown for c in candidates]) if self.ranker.blend.by_kind else None
        scores = [float(score) for score in self.ranker.quote_scores(rewrite.core, features, kind)]
        by_key = {c.key: score for c, score in zip(candidates, scores, strict=True)}
        held: list[dict[str, float]] = [{} for _ in nodes]
        for c, score in zip(candidates, scores, strict=True):
            held[c.position - 1][c.key] = score
        for i, node in enumerate(nodes):
            for s in sentences_of(node.text, node.code):
                key = sentence_key(strip_bullet(s.text))
                if key in by_key:
                    held[i].setdefault(key, by_key[key])
        return held

    def _score(
        self,
        rewrite: Rewrite,
        candidates: list[_Candidate],
        quoted: set[str],
        thematic: bool,
        conversation_names: set[str],
        kind: str | None = None,
    ) -> None:
        similarity, sentences, weights = self._similarities(rewrite, candidates, conversation_names)
        centrality = _centrality(sentences) if thematic else None
        learned = None
        # a 'how do I' question is ranked by the hand weights' instruction rule: the model was fitted on
        # questions about papers and stories, which never ask for a step to take
        if self.ranker is not None and not thematic and not rewrite.context and not asks_how_to(rewrite.core):
            features = sentence_features(rewrite.core, candidates, similarity, sentences, weights)
            # the kind counts only where the ranker has weights for one
            blend_kind = kind if self.ranker.blend.by_kind else None
            learned = self.ranker.quote_scores(rewrite.core, features, blend_kind)
            share = self.ranker.blend.weight(rewrite.core, blend_kind)
            if share > 0.0:
                learned = learned + share * np.array([stated_form_score(rewrite.core, c.text) for c in candidates])
        top_layer = max(c.node.layer for c in candidates) or 1
        asks_for_more = bool(ASKS_FOR_MORE.search(rewrite.core))
        speakers = _speakers(candidates)
        named = named_speakers(rewrite.core, speakers)
        topical = thematic and bool(speakers) and bool(topic_terms(rewrite.core, speakers))
        leads = _leads(candidates) if thematic and not speakers else set()
        # "What does Table 3 show?" is answered by the sentence that points at it
        pointers_count_less = not thematic and not rewrite.context and not ASKS_ABOUT_A_POINTED.search(rewrite.core)
        for i, candidate in enumerate(candidates):
            if learned is not None:
                score = learned[i]
            elif centrality is not None and topical:
                score = TOPIC_SIMILARITY * similarity[i] + TOPIC_LEXICAL * candidate.lexical
                score += TOPIC_CENTRALITY * centrality[i]
            elif centrality is not None:
                score = THEME_SIMILARITY * similarity[i] + THEME_CENTRALITY * centrality[i]
                score += SUMMARY_BONUS * candidate.node.layer / top_layer
                # a meeting opens with greetings and the agenda, not with what it settled
                score += OPENING_BONUS if _in_opening(candidate) and not speakers else 0.0
                score += LEAD_BONUS if id(candidate) in leads else 0.0
                score -= DANGLING_PENALTY if REFERS_BACK_AT_START.search(candidate.text) else 0.0
            else:
                score = hand_score(rewrite.core, candidate)
            if not thematic and not rewrite.context and MARKUP_RESIDUE.search(candidate.text):
                score -= MARKUP_PENALTY
            if pointers_count_less and only_points(candidate.text):
                score -= POINTER_PENALTY
            if candidate.key in quoted:
                score -= _quoted_penalty(rewrite.core, candidate.text, asks_for_more)
            score += SPEAKER_BONUS if candidate.speaker in named else 0.0
            candidate.score = float(score)
        if not thematic:
            _finding_first(rewrite.core, candidates)

    def _pick_spread(self, candidates: list[_Candidate], quotes: int, least: int = 0) -> list[_Candidate]:
        """A question about the whole: the best sentences, one per context block first, so the quotes
        cover the text rather than one passage of it; no two saying nearly the same, weak ones left
        out once one is strong, and none of under `least` words while a longer one is quotable."""
        ranked = sorted(candidates, key=lambda c: (-c.score, c.position, c.sentence.start))
        ranked = [c for c in ranked if word_count(c.text) >= least] or ranked
        picked: list[_Candidate] = []
        for one_per_block in (True, False):
            for candidate in ranked:
                if len(picked) == quotes:
                    break
                if picked and candidate.score < RELATIVE_FLOOR * picked[0].score:
                    break
                if any(c is candidate for c in picked) or (
                    one_per_block and any(c.position == candidate.position for c in picked)
                ):
                    continue
                if any(_near_duplicate(candidate.terms, other.terms) for other in picked):
                    continue
                picked.append(candidate)
        return picked

    async def answer(self, question: str, context: list[ContextNode], history: list[Turn]) -> AnswerDraft:
        """`Engine.ask` hands over the context with the document's bracketed numbers already neutralised
        (`neutralise_context`), so only the [n] written here are markers."""
        return await asyncio.to_thread(self._answer_sync, question, context, history)

    async def condense(self, question: str, history: list[Turn]) -> str:
        """Without a model, a follow-up is rewritten from the last turns (see followup.py)."""
        return await asyncio.to_thread(standalone_question, question, history)


def question_terms(question: str) -> set[str]:
    """The question's stemmed content terms, as a candidate's `terms` are written."""
    return {stem(t) for t in content_terms(question)}


def pick_quotes(
    scores: list[float],
    terms: list[set[str]],
    quotes: int,
    asked: set[str],
    repeat_penalty: float = 0.0,
) -> list[int]:
    """Indices of the sentences to quote, best first (candidates are in context order, so a tie goes
    to the earlier one). Greedy: each next quote is the best by its score less `repeat_penalty` times
    the share of the question's terms (`asked`) it holds that the quotes before it already hold, so
    three quotes answer different parts of the question rather than repeat one; never a near
    duplicate of a quote already taken; and none once a score falls under RELATIVE_FLOOR times the
    first quote's."""
    picked: list[int] = []
    covered: set[str] = set()
    while len(picked) < quotes:
        best, best_value = -1, -math.inf
        for i, score in enumerate(scores):
            if i in picked or any(_near_duplicate(terms[i], terms[j]) for j in picked):
                continue
            repeated = len(terms[i] & asked & covered) / len(asked) if asked else 0.0
            value = score - repeat_penalty * repeated
            if value > best_value:
                best, best_value = i, value
        if best < 0 or (picked and scores[best] < RELATIVE_FLOOR * scores[picked[0]]):
            break
        picked.append(best)
        covered |= terms[best] & asked
    return picked


# A short quote that names what the sentence before it described ("We denote this property of a model
# as its sensitivity.", "This is called beam search.", "It was Korvin's.") says what it refers to there.
REFERS_BACK = re.compile(
    r"^\W*(?:this|these|that|those|such|it|they)\b"
    r"|\b(?:call|calls|called|denote|denotes|term|terms|name|names|refer to)\s+(?:this|these|that|it|them)\b",
    re.IGNORECASE,
)


def _with_next_sentence(
    candidate: _Candidate, picked: list[_Candidate], fragment_words: int = FRAGMENT_WORDS
) -> _Candidate:
    """A quote of under `fragment_words` words says little alone (a line of dialogue, a bare claim): it
    is quoted with a neighbouring sentence of the same paragraph of its node, the one after it, or the
    one before it when it refers back to that one (REFERS_BACK); never a neighbour that is a quote
    already, a heading, cut short, or missing. A transcript's question turn, whatever its length, is
    quoted with the reply after it (`_with_reply`)."""
    with_reply = _with_reply(candidate, picked)
    if with_reply is not None:
        return with_reply
    if word_count(candidate.text) >= fragment_words or table_cells(candidate.sentence.text) is not None:
        return candidate
    if candidate.transcript and candidate.node.layer > 0:  # a summary's neighbours are other turns
        return candidate
    text, own, code = candidate.node.text, candidate.sentence, candidate.node.code
    sentences = sentences_of(text, code)
    if REFERS_BACK.search(candidate.text):
        before = [s for s in sentences if s.end <= own.start]
        if before and _joinable(text, before[-1], own, before[-1], picked, candidate.transcript, code):
            earlier = before[-1].text[label_end(before[-1].text) :] if candidate.transcript else before[-1].text
            return _joined(candidate, before[-1].start, own.end, f"{earlier} {candidate.text}")
    following = [s for s in sentences if s.start >= own.end]
    if following and _joinable(text, own, following[0], following[0], picked, candidate.transcript, code):
        return _joined(candidate, own.start, following[0].end, f"{candidate.text} {following[0].text}")
    return candidate


# What follows a summary's copy of a document's sentence in the document (`_document_next`): the next copy
# the same leaf left out (by its key, so the summary's own neighbour is that sentence), or the leaf's
# candidate sentence right after where the copy stood; None when the leaf goes on past a trimmed run or
# a paragraph's end.
_DocumentNext = dict[str, "str | _Candidate | None"]


def _document_next(context: list[ContextNode], candidates: list[_Candidate]) -> _DocumentNext:
    """For each sentence a context leaf left out because a summary holds it (`ContextNode.held_elsewhere`),
    what follows it in the document: an extractive summary copies sentences from all over its cluster, so
    its own next sentence is seldom the document's ("Two ferries crossed the Ambry ... The Wren carried
    only passengers" skips the Alder)."""
    by_node: dict[int, list[_Candidate]] = {}
    for candidate in candidates:
        if candidate.node.layer == 0:
            by_node.setdefault(id(candidate.node), []).append(candidate)
    follows: _DocumentNext = {}
    for node in context:
        if node.layer > 0 or not node.held_elsewhere:
            continue
        held = node.held_elsewhere
        for i, (offset, key) in enumerate(held):
            if i + 1 < len(held) and held[i + 1][0] == offset:
                follows[key] = held[i + 1][1]
                continue
            after = [c for c in by_node.get(id(node), ()) if c.sentence.start >= offset]
            first = min(after, key=lambda c: c.sentence.start, default=None)
            gap = node.text[offset : first.sentence.start] if first is not None else ""
            joinable = first is not None and not gap.strip() and "\n\n" not in gap
            follows[key] = first if joinable else None
    return follows


def _with_next_sentence_of_its_document(
    candidate: _Candidate, picked: list[_Candidate], follows: _DocumentNext, fragment_words: int = FRAGMENT_WORDS
) -> list[_Candidate]:
    """`_with_next_sentence`, for a summary's copy of a document's sentence what follows it in the document
    (`_document_next`): the summary's neighbour only when that is the document's next sentence too, else
    the leaf's next sentence quoted after it from the leaf; nothing for a copy the document continues
    past a trimmed run. Any other sentence: `_with_next_sentence`."""
    copy = candidate.node.layer > 0 and not candidate.transcript and candidate.key in follows
    if not copy or word_count(candidate.text) >= fragment_words:
        return [_with_next_sentence(candidate, picked, fragment_words)]
    following = follows[candidate.key]
    if isinstance(following, str):  # the summary's own next sentence, if it is that one
        joined = _with_next_sentence(candidate, picked, fragment_words)
        added = joined.text[len(candidate.text) :] if joined.text.startswith(candidate.text) else ""
        return [joined if added.strip() and sentence_key(added) == following else candidate]
    if following is None or not _addable(following.sentence, picked):
        return [candidate]
    return [candidate, following]


def _with_reply(candidate: _Candidate, picked: list[_Candidate]) -> _Candidate | None:
    """A leaf's question turn ('Q: How were the keepers rescued?', 'Interviewer: And your father?') with
    the next turn's reply, its label kept and up to its first sentence that is not filler ('A: Yes. We
    saw the smoke.'): an interview's question holds the user's question's words and answers nothing
    alone. None for any other sentence, a question that ends no line, and a reply that is only filler,
    quoted already, or not a labelled turn on the next line that holds words (a subtitle export's cue
    number and timing lines are passed over)."""
    own, text = candidate.sentence, candidate.node.text
    if not candidate.transcript or candidate.node.layer > 0 or not candidate.text.endswith("?"):
        return None
    line_end = text.find("\n", own.end)
    if line_end < 0 or text[own.end : line_end].strip():
        return None
    following = spoken_lines(text[line_end + 1 :])  # past a subtitle cue's number and timing lines
    if not following or speaker_of(following[0][1]) is None:
        return None
    reply_start = line_end + 1 + following[0][0]
    # the reply runs to the next turn's label (a subtitle cue's text may wrap onto a second line)
    reply_end = next((line_end + 1 + at for at, line in following[1:] if speaker_of(line)), len(text))
    reply = [s for s in sentences_of(text) if reply_start <= s.start < reply_end]
    spoken = [s.text[label_end(s.text) :] for s in reply]  # a picked quote's key is of its text without a label
    answer = next((i for i, said in enumerate(spoken) if not is_filler(said)), None)
    quoted = {other.key for other in picked}
    if answer is None or any(sentence_key(said) in quoted for said in spoken[: answer + 1]):
        return None
    end = reply[answer].end
    return _joined(candidate, own.start, end, f"{candidate.text} {' '.join(text[reply[0].start : end].split())}")


def _joinable(
    text: str,
    first: Sentence,
    second: Sentence,
    added: Sentence,
    picked: list[_Candidate],
    transcript: bool = False,
    code: bool = False,
) -> bool:
    """Whether two neighbouring sentences of a node read as one quote: the same paragraph (in a
    `transcript`, the same turn: the same line of a leaf), the one `added` to the quote neither cut
    short, a heading, a list item, nor quoted already, nor in a transcript only filler (in a story
    "Indeed?" is a line of dialogue). `code`: the node is a leaf wholly of code (`Chunk.code`)."""
    between = text[first.end : second.start]
    if "\n\n" in between or (transcript and "\n" in between):
        return False
    if "\n" in between and (in_code(text, first.start, code) or in_code(text, second.start, code)):
        return False  # a line of code is quoted alone: joined to the next it is other code
    return _addable(added, picked, transcript)


def _addable(added: Sentence, picked: list[_Candidate], transcript: bool = False) -> bool:
    """Whether a sentence may be quoted after its neighbour (joined to it, or after a summary's copy of it):
    neither cut short, a heading, a list item, nor quoted already, nor in a transcript only filler."""
    said = added.text[label_end(added.text) :] if transcript else added.text  # a picked quote's key has no label
    if added.cut_short or is_heading(added.text) or (transcript and is_filler(said)):
        return False
    if strip_bullet(added.text) != added.text:  # the next list item is a statement of its own
        return False
    return not any(sentence_key(strip_bullet(said)) == other.key for other in picked)


def _joined(candidate: _Candidate, start: int, end: int, text: str) -> _Candidate:
    return replace(candidate, sentence=Sentence(start, end, text, sentence_key(text)), text=text)


def _near_duplicate(a: set[str], b: set[str]) -> bool:
    """Nearly the same statement: most terms shared, or one sentence's terms inside the other's."""
    if not a or not b:
        return a == b
    return jaccard(a, b) >= NEAR_DUPLICATE or len(a & b) >= CONTAINED * min(len(a), len(b))


def _quoted_pages(picked: list[_Candidate]) -> dict[int, tuple[int, int]]:
    """Node id -> first and last page of the sentences quoted from it (nodes with pages only)."""
    pages: dict[int, tuple[int, int]] = {}
    for candidate in picked:
        found = candidate.node.pages(candidate.sentence.start, candidate.sentence.end)
        if found is None:
            continue
        first, last = pages.get(candidate.node.node_id, found)
        pages[candidate.node.node_id] = (min(first, found[0]), max(last, found[1]))
    return pages


def cite_pages(
    citations: list[Citation], context: list[ContextNode], quoted: dict[int, tuple[int, int]]
) -> None:
    """Give each citation the pages it stands for: the quoted sentences' when the answerer says which,
    else the whole node's, so a chunk crossing a page break reads 'pp. 3-4', not its first page."""
    nodes = {node.node_id: node for node in context}
    for citation in citations:
        node = nodes.get(citation.node_id)
        found = quoted.get(citation.node_id) or (node.pages() if node is not None else None)
        if found is not None:
            citation.page, citation.page_end = found
