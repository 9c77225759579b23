"""Follow-up conversations derived from an evaluation set's questions, and how to score them.

The sets hold standalone questions with reference answers. A conversation is built from them so the
last turn is a follow-up whose standalone form is a real question of the set (with its references):

- `pronoun`: a question about a person named in an earlier question of the same document is asked
  after it with the name replaced by a pronoun ("Who is Mark Hunter?" -> "Why does he ...?");
- `pronoun_chain`: the same, with a second question about that person (itself a pronoun follow-up)
  between them, so the answer just before the last turn usually names other people;
- `what_about`: the question is first asked about another person of the document, then "What about
  <the real person>?";
- `wh_ellipsis`: "Why/When/Where/How did X ...?" becomes "Did X ...?" then "And why?" ("When?", ...);
- `topic_switch`: a question that does not point back, asked after an unrelated one: it must be left
  as it is.

Each conversation's last turn is scored two ways: whether the rewrite recovers the subject (the
person's name, or for an ellipsis the question's own content words; for a topic switch, whether it
was left alone), and the answer's recall of the references against asking the standalone question
directly. Deterministic: the same set gives the same conversations.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from raptor_engine.ingest.sentences import stem, words
from raptor_engine.query.followup import _points_back, names_in, split_standalone, subject_terms

KINDS = ("pronoun", "pronoun_chain", "what_about", "wh_ellipsis", "topic_switch")
PER_KIND_PER_DOCUMENT = 6
_AUX = r"did|does|do|is|was|were|are|has|had|have|will|would|can|could|should"
_WH_AUX = re.compile(rf"^(why|when|where|how)\s+({_AUX})\s+(.+?)\s*\??\s*$", re.IGNORECASE)
_ELLIPSES = {
    "why": ("Why?", "And why?"),
    "when": ("When?", "And when?"),
    "where": ("Where?", "And where?"),
    "how": ("How?", "And how?"),
}


@dataclass(frozen=True)
class Conversation:
    kind: str
    doc_id: str
    question_id: str  # the set's question the last turn stands for
    turns: tuple[str, ...]  # user questions in order; the last one is scored
    standalone: str  # the set's question
    expect: tuple[str, ...]  # what the rewrite must contain (lower-case words); () for a topic switch


def _gender(name: str, text: str) -> str:
    """'he', 'she' or 'they' for a name, by the pronouns of the sentences that name it and the next one."""
    counts: Counter[str] = Counter()
    sentences = re.split(r"(?<=[.!?])\s+", text)
    for i, sentence in enumerate(sentences):
        if re.search(rf"\b{re.escape(name)}\b", sentence):
            for word in words(" ".join(sentences[i : i + 2])):
                if word in ("he", "him", "his", "himself"):
                    counts["he"] += 1
                elif word in ("she", "her", "hers", "herself"):
                    counts["she"] += 1
    if not counts:
        return "they"
    return counts.most_common(1)[0][0]


PRONOUNS = {
    "he": ("he", "him", "his"),
    "she": ("she", "her", "her"),
    "they": ("they", "them", "their"),
}
_SUBJECT_BEFORE = frozenset(
    "who what when where why how does did do is was were are has had will would can could".split()
)


def pronoun_for(question: str, name: str, gender: str) -> str | None:
    """The question with `name` replaced by a pronoun (possessive for "Name's"), or None if it is absent."""
    subject, obj, possessive = PRONOUNS[gender]
    out, found = question, False
    if re.search(rf"\b{re.escape(name)}['\u2019](?:s\b|(?=\s))", out):
        out = re.sub(rf"\b{re.escape(name)}['\u2019](?:s\b|(?=\s))", possessive, out)
        found = True
    match = re.search(rf"\b{re.escape(name)}\b", out)
    while match:
        before = words(out[: match.start()])
        pronoun = subject if not before or before[-1] in _SUBJECT_BEFORE or before[-1] == "and" else obj
        out = out[: match.start()] + pronoun + out[match.end() :]
        found = True
        match = re.search(rf"\b{re.escape(name)}\b", out)
    return out if found else None


def _people(question: str) -> list[str]:
    return [n for n in names_in(question) if len(n) > 2]


def build_conversations(questions: Iterable, documents: dict) -> list[Conversation]:
    """Conversations for every document of the questions (an `EvalQuestion` list), at most
    PER_KIND_PER_DOCUMENT of each kind per document."""
    by_doc: dict[str, list] = {}
    for q in questions:
        if q.answers:
            by_doc.setdefault(q.doc_id, []).append(q)
    out: list[Conversation] = []
    made: Counter[tuple[str, str]] = Counter()

    def add(conversation: Conversation) -> None:
        key = (conversation.doc_id, conversation.kind)
        if made[key] < PER_KIND_PER_DOCUMENT:
            made[key] += 1
            out.append(conversation)

    for doc_id, qs in by_doc.items():
        text = documents[doc_id].text

        all_people = list(dict.fromkeys(p for q in qs for p in _people(q.question)))
        for i, q in enumerate(qs):
            people = _people(q.question)
            for name in people[:1]:
                earlier = [e for e in qs[:i] if name in e.question and e.question != q.question]
                gender = _gender(name, text)
                follow = pronoun_for(q.question, name, gender) if gender != "they" else None
                if not earlier or not follow or _has_other_name(follow, name):
                    continue
                add(
                    Conversation(
                        "pronoun",
                        doc_id,
                        q.question_id,
                        (earlier[0].question, follow),
                        q.question,
                        (name.lower(),),
                    )
                )
                if len(earlier) >= 2:
                    middle = pronoun_for(earlier[-1].question, name, gender)
                    if middle and not _has_other_name(middle, name):
                        add(
                            Conversation(
                                "pronoun_chain",
                                doc_id,
                                q.question_id,
                                (earlier[0].question, middle, follow),
                                q.question,
                                (name.lower(),),
                            )
                        )
                others = [p for p in all_people if not set(words(p)) & set(words(name))]
                if others and len(people) == 1:
                    other = others[(i * 7) % len(others)]
                    first = re.sub(rf"\b{re.escape(name)}\b", other, q.question)
                    add(
                        Conversation(
                            "what_about",
                            doc_id,
                            q.question_id,
                            (first, f"What about {name}?"),
                            q.question,
                            (name.lower(),),
                        )
                    )
            match = _WH_AUX.match(q.question.strip())
            if match and not re.match(r"how\s+(many|much|long|often|old|far)\b", q.question, re.I):
                wh, aux, rest = match.groups()
                yes_no = f"{aux.capitalize()} {rest}?"
                phrasing = _ELLIPSES[wh.lower()][i % 2]
                terms = tuple(dict.fromkeys(subject_terms(rest)))
                if terms:
                    add(
                        Conversation(
                            "wh_ellipsis", doc_id, q.question_id, (yes_no, phrasing), q.question, terms
                        )
                    )
            if i and not _points_back(q.question) and not words(q.question)[:1] == ["and"]:
                previous = qs[(i * 5 + 3) % i]
                if not set(subject_terms(previous.question)) & set(subject_terms(q.question)):
                    add(
                        Conversation(
                            "topic_switch",
                            doc_id,
                            q.question_id,
                            (previous.question, q.question),
                            q.question,
                            (),
                        )
                    )
    return out


def _has_other_name(question: str, name: str) -> bool:
    return any(not set(words(n)) <= set(words(name)) for n in _people(question))


def subject_recovered(conversation: Conversation, rewrite: str) -> bool:
    """Whether a rewrite stands for the conversation's question: it names the person (in its own
    question, not only in the carried context), holds the ellipsis' content words, or for a topic
    switch is the question unchanged."""
    if conversation.kind == "topic_switch":
        return rewrite.strip() == conversation.turns[-1].strip()
    core = split_standalone(rewrite).core
    if conversation.kind == "wh_ellipsis":
        # the question itself must ask it: "Why did X ...", not "Why? (context: Did X ...?)"
        have = {stem(w) for w in words(core)}
        wh = words(conversation.standalone)[0]
        return all(stem(t) in have for t in conversation.expect) and wh in words(core)
    have = set(words(core))
    if conversation.kind == "what_about":
        # the name and what was asked about it: "What does Mark do?", not "What about Mark?"
        asked = {stem(t) for t in subject_terms(conversation.standalone)}
        return set(conversation.expect[0].split()) <= have and asked <= {stem(w) for w in have}
    return all(set(words(name)) <= have for name in conversation.expect)
