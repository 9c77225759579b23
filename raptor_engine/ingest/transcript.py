"""Transcripts: text written as speaker turns, one a line ("Project Manager: Okay . Right . Um well ...",
"SPEAKER_01 [00:03:12]: ...", "Mr. Smith: ...", "Grad F: Yeah ."), a play script's speeches
("HAMLET. To be, ..."), an export's header lines ("John Smith  10:32 AM" above the turn's text), a chat
log's lines ("[12:01] <bob> hi", "12:01 bob: hi", "bob: hi") and Chinese or Japanese labels with a full-width colon
("张三：我们下周开会。").

A meeting transcript is not prose: a turn line need not end with a full stop (so the next turn would be
glued to it as one sentence), a quoted sentence means little without who said it, and much of it is
backchannel ("Mm-hmm .", "Yeah .", "Okay .") that answers nothing. This module says where the turns of
such a text begin and who speaks in them, and which sentences are only fillers; the sentence splitter,
the chunker and the extractive answer read it. Prose is left alone: a text counts as turns only when at
least TURN_LINES of its lines, and at least half of them, open with a speaker's label, and its speakers
take turns (`reads_as_turns`).
"""

from __future__ import annotations

import re

_TIME = r"\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d{1,3})?"
STAMP = rf"(?:\[{_TIME}\]|\({_TIME}\)|{_TIME})"
_HONORIFIC = r"(?:Mr|Mrs|Ms|Mx|Dr|Prof|Sir|Dame|Lord|Lady|Rev|Cllr|Hon)\.?[ \t]+"
_LABEL_WORD = r"[A-Z][\w'\u2019.-]*"
# A speaker's label opening a line: one to four words, each capitalised (or a number: "Speaker 2"), with an
# honorific and a timestamp before or after ("[00:03:12] SPEAKER_01:", "SPEAKER_01 [00:03:12]:"), a role in
# brackets after the name ("Bob (Treasurer):", "Ana [interpreter]:"), and a dialogue dash before ("— Ana:").
_ROLE = r"(?:[ \t]*[(\[][^()\[\]\n:]{1,30}[)\]])"
SPEAKER_LABEL = re.compile(
    rf"[ \t]*(?:[\u2014\u2013][ \t]*)?(?:{STAMP}[ \t]+)?"
    rf"(?P<speaker>(?:{_HONORIFIC})?{_LABEL_WORD}(?:[ \t]+(?:{_LABEL_WORD}|\d+)){{0,3}})"
    rf"{_ROLE}?(?:[ \t]+{STAMP})?[ \t]*:[ \t]+(?=\S)"
)
# A deposition's or interview's turns: "Q." and "A." (question, answer) opening each line.
QA_LABEL = re.compile(r"[ \t]*(?P<speaker>Q|A)\.[ \t]+(?=\S)")
# A WebVTT cue's voice tag, as Teams and others export a speaker: "<v Roger Bingham>We are in New York"
VOICE_TAG = re.compile(r"[ \t]*<v(?:\.[\w.-]+)*[ \t]+(?P<speaker>[^<>\n]{1,60}?)[ \t]*>[ \t]*(?=\S)")
VOICE_END = "</v>"
_NAME = rf"(?:{_HONORIFIC})?{_LABEL_WORD}(?:[ \t]+(?:{_LABEL_WORD}|\d+)){{0,3}}"
# A Teams, Otter or Rev export's header: a name and a time alone on a line ("John Smith  10:32 AM",
# "John Smith 0:03", "Speaker 1 (00:01:02)"), the turn's text on the next lines; the label takes the line's
# end too.
HEADER_LABEL = re.compile(
    rf"[ \t]*(?P<speaker>{_NAME})[ \t]+{STAMP}(?:[ \t]*[AaPp]\.?[Mm]\.?)?[ \t]*(?:\r?\n\s*|\Z)"
)
_CAPS_WORD = r"[A-Z][A-Z'\u2019-]+"
# A play script's speech: the speaker's name in capitals and a full stop ("HAMLET. To be", "FIRST CLOWN.").
PLAY_LABEL = re.compile(rf"[ \t]*(?P<speaker>{_CAPS_WORD}(?:[ \t]+{_CAPS_WORD}){{0,2}})\.[ \t]+(?=\S)")
_ROMAN = re.compile(r"[IVXLCDM]+")
# A chat log's line: a nick in angle brackets ("[12:01] <bob> hi", "<bob> hi") or after a time ("12:01 bob:").
CHAT_LABEL = re.compile(rf"[ \t]*(?:{STAMP}[ \t]+)?<(?P<speaker>[\w.|^@-]{{1,32}})>[ \t]+(?=\S)")
CHAT_NICK = re.compile(rf"[ \t]*{STAMP}[ \t]+(?P<speaker>[a-z][\w.|^-]{{0,31}}):[ \t]+(?=\S)")
# A chat export's line with no time: a lower-case nick and a colon ("bob: hi", "maria_l: ok"). Alone it could
# open a line of prose too ("note: ..."); the text counts as turns only when such nicks take turns.
CHAT_BARE_NICK = re.compile(r"[ \t]*(?P<speaker>[a-z][\w.|^-]{0,31}):[ \t]+(?=\S)")
_CJK_NAME = r"[\u3400-\u9fff\u3040-\u30ff\uac00-\ud7af\u00b7\u30fb]{1,8}"
# A Chinese, Japanese or Korean name and a full-width colon, no space after ("张三：我们下周开会。").
CJK_LABEL = re.compile(
    rf"[ \t]*(?:{STAMP}[ \t]+)?(?P<speaker>{_CJK_NAME})[ \t]*\uff1a[ \t]*(?=\S)"
)
_LABELS = (
    SPEAKER_LABEL, VOICE_TAG, HEADER_LABEL, PLAY_LABEL, QA_LABEL, CHAT_LABEL, CHAT_NICK, CJK_LABEL, CHAT_BARE_NICK,
)  # fmt: skip
# A speech-to-text tool's speaker ("SPEAKER_01", pyannote's and WhisperX's): named as people read it, "Speaker 1".
_DIARIZED = re.compile(r"SPEAKER_0*(\d+)", re.IGNORECASE)
MAX_LABEL_CHARS = 40
# Words that open a labelled line of prose, not a speaker ("Note: ...", "Table 2: ...", "Answer: ...").
NOT_SPEAKERS = frozenset(
    """note notes nb warning caution important tip example examples table figure fig chapter section part
    step summary abstract keywords source sources date time subject from to re title author authors
    question answer result results conclusion definition input output error usage see update edit ps cc
    http https address phone email tel fax location venue agenda item sent act scene prologue epilogue enter
    exit exeunt the end finis ok okay no yes info debug warn trace fatal notice kernel
    注意 备注 说明 时间 日期 地点 主题 议题 标题 摘要 关键词 例如 参会人员 出席 注 日時 場所 件名 備考""".split()
)
TURN_LINES = 2  # labelled lines a text needs to count as turns (and at least half of its lines)

# Sounds and words that only keep a conversation going; a sentence of nothing else answers nothing.
DISFLUENCIES = frozenset(
    "um umm uh uhh uh-huh uh-uh mm mmm mm-hmm mhm hmm hm hmmm er erm ah eh em huh oh ooh ow".split()
)
BACKCHANNEL = DISFLUENCIES | frozenset(
    """yeah yes yep yup no nope okay ok 'kay kay alright right sure well so and but or like cool great good
    fine excellent thanks thank you i mean know see oh wow really true exactly indeed totally absolutely
    gosh god dear sorry hello hi bye anyway actually just then now there it that's that so-so""".split()
)
_TOKEN = re.compile(r"[^\W_](?:[\w'\u2019-]*[^\W_])?|'[kK]ay")


def _label(line: str) -> re.Match[str] | None:
    """The speaker's label opening `line`: "Name: ", a WebVTT voice tag ("<v Roger Bingham>"), an export's
    header line, a play's "NAME. ", a chat log's nick, or a CJK name and "："."""
    return next((match for pattern in _LABELS if (match := pattern.match(line)) is not None), None)


def _speaker_label(line: str) -> tuple[str | None, int]:
    """The speaker whose label opens `line` and where the text after the label begins; (None, 0) when
    no label opens it, or the label is prose's ("Note: ...") or too long to be a name."""
    match = _label(line)
    if match is None:
        return None, 0
    speaker = " ".join(match.group("speaker").split())
    first = speaker.split()[0].rstrip(".")
    if len(speaker) > MAX_LABEL_CHARS or first.lower() in NOT_SPEAKERS:
        return None, 0
    if match.re is PLAY_LABEL:  # a play's names are set in capitals, not spoken so: "Ophelia"
        if _ROMAN.fullmatch(first):
            return None, 0
        speaker = speaker.title()
    if diarized := _DIARIZED.fullmatch(speaker):
        speaker = f"Speaker {int(diarized.group(1))}"
    return speaker, match.end()


def speaker_of(line: str) -> str | None:
    """The speaker whose label opens `line` ("Project Manager" of "Project Manager: Okay ."), or None."""
    return _speaker_label(line)[0]


def label_end(line: str) -> int:
    """Where the text after a speaker's label begins in `line` (0 when no label opens it)."""
    return _speaker_label(line)[1]


# A subtitle export's lines around its cues (WebVTT, SRT): the header, a cue's number, its timing line.
_CUE_LINE = re.compile(rf"(?:WEBVTT\b.*|\d+|{_TIME}\s*-->\s*{_TIME}.*)\s*")


def spoken_lines(text: str) -> list[tuple[int, str]]:
    """Each line of `text` that holds words, leading blanks removed, with its offset: not blank, and not
    a subtitle cue's number or timing line ("12", "00:01:02,500 --> 00:01:04,000"), so an SRT or WebVTT
    export's turns count as a plain transcript's."""
    found, start = [], 0
    for line in text.split("\n"):
        kept = line.lstrip()
        if kept and not _CUE_LINE.fullmatch(kept):
            found.append((start + len(line) - len(kept), kept))
        start += len(line) + 1
    return found


def turns(text: str) -> list[tuple[int, str]]:
    """(offset, speaker) of each line that opens a speaker's turn, when `text` is written as turns
    (`reads_as_turns`); else empty."""
    if text.count(":") + text.count("\uff1a") + text.count(">") < TURN_LINES and not _COLONLESS_HINT.search(text):
        return []  # most prose is skipped at C speed
    found, lines = labelled_lines(spoken_lines(text))
    return found if reads_as_turns([who for _, who in found], lines, TURN_LINES) else []


# A line opening with a label that has no colon (a play's "HAMLET. ", a deposition's "Q. ").
_COLONLESS_HINT = re.compile(
    "^(?:" + "|".join(p.pattern.replace("?P<speaker>", "?:") for p in (PLAY_LABEL, QA_LABEL)) + ")", re.MULTILINE
)


def labelled_lines(lines: list[tuple[int, str]]) -> tuple[list[tuple[int, str]], int]:
    """(offset, speaker) of each of these lines that opens with a speaker's label, and how many lines
    count as the text's: an export's turn, whose text lies on the lines under its header line ("John
    Smith  10:32 AM"), counts as one line, as a turn of one labelled line does. A header line with no
    text under it (a timetable's "Departure 10:32 AM") is no speaker's."""
    labels = [_speaker_label(line) for _, line in lines]
    speakers = [who for who, _ in labels]
    headers = [
        who is not None and end >= len(line.rstrip()) for (who, end), (_, line) in zip(labels, lines, strict=True)
    ]
    found: list[tuple[int, str]] = []
    counted, under_header = 0, False
    for at, ((start, _), who) in enumerate(zip(lines, speakers, strict=True)):
        if who is not None and headers[at] and (at + 1 == len(lines) or speakers[at + 1] is not None):
            who = None
        if who is not None:
            found.append((start, who))
            under_header = headers[at]
        counted += who is not None or not under_header
    return found, counted


def reads_as_turns(speakers: list[str], lines: int, least: int) -> bool:
    """Whether labelled lines by these `speakers` (in order) make a text of `lines` lines a transcript: at
    least `least` of them, at least half of the lines, and speakers taking turns (at most one more speaker
    than half the labelled lines), so a paper's run of "Encoder: ...", "Decoder: ...", "Attention: ..."
    labels, each used once, is not read as speakers."""
    return (
        len(speakers) >= least and 2 * len(speakers) >= lines and 2 * len(set(speakers)) <= len(speakers) + 2
    )


def is_filler(text: str) -> bool:
    """Whether a sentence is only backchannel and disfluency ("Mm-hmm .", "Yeah , okay .", "Um ."):
    nothing a quote or a summary should carry. Read word by word, so most sentences are decided by
    their first word."""
    for token in _TOKEN.finditer(text):
        if token.group().lower().replace("\u2019", "'") not in BACKCHANNEL:
            return False
    return True
