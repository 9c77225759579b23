"""How the answer's lead line reads misspelt, pronoun-only and negated questions: a held-out check.

`python raptor_tools/grounding_variants.py ../shared/evaldata --cache DIR --out FILE.json`

Each question of ../shared/evaldata (with a reference, on a held-out document: `evaluate.split_of`) is
rewritten three ways, deterministically (`variants`):

- **misspelt**: its longest content word, and its second longest when it has three or more, get one
  typing slip each (a doubled letter, a dropped letter or a swapped pair, chosen by a hash of the word);
- **pronoun**: the names it asks about become "they" ("their" for "Mark's"), or, naming nobody, its
  first "the/this/that ..." phrase becomes "it" ("they" when plural);
- **negated**: its first auxiliary negated ("Who didn't keep the light?"), or "never" after its
  question word when it has none ("Who never commits suicide?").

Each variant, and the question as written, is asked as `raptor ask` asks it (collapsed tree, 2,000
tokens, the shipped ranker) against its own document, another held-out document of its set and one of
another set (the pairs `raptor_tools.grounding` fits on), and its lead line is read off the answer:
"From the documents:" (answered), the closest passages, or "say nothing". An own-document row whose
quotes hold the reference (ROUGE-1 recall >= 0.5) is *answerable*; the other documents' rows are true
negatives. A variant that names nothing of its own is not judged (it always reads "From the
documents:") and is left out, as the fitting tool leaves such questions out.

This file imports only what the engine has had since the grounding model first shipped, so the same
check runs on an older checkout for the figures before a change:
`PYTHONPATH=/path/to/old python raptor_tools/grounding_variants.py ...` (trees are cached per set as
`raptor eval --data-dir` keeps them; give each checkout its own copy of the cache).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

from raptor_engine.config import Settings
from raptor_engine.engine import Engine
from raptor_engine.ingest.sentences import STOPWORDS, THEMATIC
from raptor_engine.query.answer import FOUND, NOTHING_RELATED, ExtractiveAnswerer, neutralise_context
from raptor_engine.query.followup import names_in, split_standalone, subject_terms
from raptor_engine.query.ranker import ranker_for
from raptor_tools import metrics, say
from raptor_tools.evaluate import EvalQuestion, build_trees, load_eval_set, quoted_text, split_of

SETS = ("qasper", "quality", "squality", "narrativeqa_summaries")
VARIANTS = ("original", "misspelt", "pronoun", "negated")
BUDGET = 2000
POSITIVE_RECALL = 0.5
MIN_SLIP_LETTERS = 4  # a shorter word is left as written
NEGATED_AUXILIARY = {
    "does": "doesn't", "do": "don't", "did": "didn't", "is": "isn't", "are": "aren't", "was": "wasn't",
    "were": "weren't", "can": "can't", "could": "couldn't", "will": "won't", "would": "wouldn't",
    "has": "hasn't", "have": "haven't", "had": "hadn't", "should": "shouldn't",
}
AUXILIARY = re.compile(rf"\b({'|'.join(NEGATED_AUXILIARY)})\b(?!\s+not\b)", re.IGNORECASE)
QUESTION_WORD = re.compile(r"^\s*(who|what|which|where|when|why|how)\b", re.IGNORECASE)
DETERMINER_PHRASE = re.compile(r"\b(?:the|this|that|these|those)\s+([A-Za-z-]+)(?:\s+([A-Za-z-]+))?", re.IGNORECASE)


def stable_number(key: str) -> int:
    """A number fixed by the key across runs and machines (Python's hash() is salted)."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big")


def slip(word: str) -> str:
    """`word` with one typing slip inside it (never its first letter): a doubled letter, a dropped one
    or two neighbours swapped, chosen by a hash of the word."""
    n = stable_number(word)
    at = 1 + n % (len(word) - 2)  # a letter between the first and the last
    kind = (n // 7) % 3
    if kind == 0:
        return word[: at + 1] + word[at] + word[at + 1 :]
    if kind == 1:
        return word[:at] + word[at + 1 :]
    if word[at] == word[at + 1]:  # swapping two equal letters changes nothing: drop one instead
        return word[:at] + word[at + 1 :]
    return word[:at] + word[at + 1] + word[at] + word[at + 2 :]


def misspelt(question: str) -> str | None:
    """The question with its longest content word (and its second longest when it has three or more)
    mistyped; None when no word is long enough."""
    found = [w for w in re.findall(r"[A-Za-z]+", question) if len(w) >= MIN_SLIP_LETTERS and w.lower() not in STOPWORDS]
    longest = sorted(dict.fromkeys(found), key=lambda w: (-len(w), found.index(w)))
    chosen = longest[: 2 if len(longest) >= 3 else 1]
    if not chosen:
        return None
    for word in chosen:
        question = re.sub(rf"\b{word}\b", slip(word), question, count=1)
    return question


def pronoun(question: str) -> str | None:
    """The question asking about "they" instead of the names it asks about ("their" for a possessive),
    or, naming nobody, "it" ("they") instead of its first "the ..." phrase; None when it has neither."""
    names = names_in(question)
    if names:
        for name in sorted(names, key=len, reverse=True):
            question = re.sub(rf"\b(?:the\s+)?{re.escape(name)}'s\b", "their", question)
            question = re.sub(rf"\b(?:the\s+)?{re.escape(name)}\b", "they", question)
        return question
    phrase = DETERMINER_PHRASE.search(question)
    if phrase is None:
        return None
    first, second = phrase.group(1), phrase.group(2)
    # "the radio show": two words; "the authors compare", "the dataset used", "the tower in": one
    compound = bool(second) and not first.lower().endswith("s") and not second.lower().endswith("ed")
    compound = compound and second.lower() not in STOPWORDS
    noun, end = (second, phrase.end(2)) if compound else (first, phrase.end(1))
    replacement = "they" if noun.lower().endswith("s") and not noun.lower().endswith("ss") else "it"
    return question[: phrase.start()] + replacement + question[end:]


def negated(question: str) -> str | None:
    """The question asking the opposite: its first auxiliary negated ("did" -> "didn't"), else "never"
    after its question word; None when it has neither."""
    auxiliary = AUXILIARY.search(question)
    if auxiliary:
        said = NEGATED_AUXILIARY[auxiliary.group(1).lower()]
        if auxiliary.group(1)[0].isupper():
            said = said.capitalize()
        return question[: auxiliary.start()] + said + question[auxiliary.end() :]
    asked = QUESTION_WORD.search(question)
    if asked:
        return question[: asked.end()] + " never" + question[asked.end() :]
    return None


def variants(question: str) -> dict[str, str]:
    """The question as written and each variant it has, by name (VARIANTS)."""
    made = {"original": question, "misspelt": misspelt(question), "pronoun": pronoun(question), "negated": negated(question)}
    return {name: text for name, text in made.items() if name == "original" or text not in (None, question)}


def judged(question: str) -> bool:
    """Whether the lead line is decided by the model: not for a question about the whole, nor for one
    that names nothing of its own (both always read 'From the documents:')."""
    core = split_standalone(question).core
    return not THEMATIC.search(core) and bool(subject_terms(core))


def partner(doc_ids: list[str], doc_id: str) -> str | None:
    """The next document of the same list, the first after the last (None when there is no other)."""
    if len(doc_ids) < 2:
        return None
    return doc_ids[(doc_ids.index(doc_id) + 1) % len(doc_ids)]


def hash_index(key: str, size: int) -> int:
    """A stable index into a list of `size` for a key (Python's hash() changes between runs)."""
    return sum(key.encode()) % size


def lead_of(text: str) -> str:
    """'answered', 'nothing' or 'closest': what an extractive answer's first line says."""
    if text.startswith(FOUND):
        return "answered"
    return "nothing" if text.startswith(NOTHING_RELATED) else "closest"


def pairs_for(question: EvalQuestion, own: list[str], foreign: list[str]) -> list[tuple[str, str]]:
    """(kind, document) the question is asked against: its own, the next of its set's held-out
    documents, and one of another set's (chosen by the question's id)."""
    pairs = [("own", question.doc_id)]
    same = partner(own, question.doc_id)
    if same is not None:
        pairs.append(("same_set", same))
    if foreign:
        pairs.append(("other_set", foreign[hash_index(question.question_id, len(foreign))]))
    return pairs


def ask(engine: Engine, answerer: ExtractiveAnswerer, kb: str, question: str) -> tuple[str, str]:
    """The lead line and the quotes of the extractive answer `raptor ask` gives."""
    context = engine.retrieve(kb, question, budget=BUDGET)
    text = answerer._answer_sync(question, neutralise_context(context.nodes), []).text
    return lead_of(text), quoted_text(text)


async def check_set(evaldata: Path, name: str, other: str, cache_root: Path, base: Settings) -> list[dict[str, Any]]:
    """The rows of one set's held-out questions and their variants."""
    eval_set, foreign = load_eval_set(evaldata / name), load_eval_set(evaldata / other)
    held = {s.name: sorted(d for d in s.documents if split_of(s.name, d) == "heldout") for s in (eval_set, foreign)}
    questions = [q for q in eval_set.questions if q.answers and q.doc_id in held[name]]
    engines: dict[str, Engine] = {}
    try:
        trees, answerers = {}, {}
        for target in (eval_set, foreign):
            engine = engines[target.name] = Engine(dataclasses.replace(base, data_dir=cache_root / target.name))
            documents = [target.documents[d] for d in held[target.name]]
            trees[target.name] = await build_trees(engine, documents, progress=False)
            answerers[target.name] = ExtractiveAnswerer(engine.embedder, ranker=ranker_for(engine.settings.ranking))
        rows = []
        for q in questions:
            for kind, doc_id in pairs_for(q, held[name], held[other]):
                target = name if kind != "other_set" else other
                engine, kb, answerer = engines[target], trees[target][doc_id]["kb"], answerers[target]
                for variant, text in variants(q.question).items():
                    if not judged(text):
                        continue
                    lead, quotes = await asyncio.to_thread(ask, engine, answerer, kb, text)
                    recall = metrics.best_over(q.answers, metrics.rouge1_recall, quotes)
                    rows.append(
                        {"set": name, "question_id": q.question_id, "kind": kind, "variant": variant,
                         "question": text, "lead": lead, "recall": round(float(recall), 4)}
                    )
        return rows
    finally:
        for engine in engines.values():
            engine.close()


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per variant: answerable rows and how many read 'closest' or 'say nothing'; negatives and how many
    are caught (not 'From the documents:') and read 'say nothing'."""
    out = []
    for variant in VARIANTS:
        chosen = [r for r in rows if r["variant"] == variant]
        answerable = [r for r in chosen if r["kind"] == "own" and r["recall"] >= POSITIVE_RECALL]
        negatives = [r for r in chosen if r["kind"] != "own"]
        out.append(
            {
                "variant": variant,
                "answerable": len(answerable),
                "answerable_answered": sum(r["lead"] == "answered" for r in answerable),
                "answerable_closest": sum(r["lead"] == "closest" for r in answerable),
                "answerable_nothing": sum(r["lead"] == "nothing" for r in answerable),
                "negatives": len(negatives),
                "negatives_caught": sum(r["lead"] != "answered" for r in negatives),
                "negatives_nothing": sum(r["lead"] == "nothing" for r in negatives),
            }
        )
    return out


COLUMNS = {  # the summary's keys and their headings
    "variant": "variant",
    "answerable": "answerable",
    "answerable_answered": "'From the documents:'",
    "answerable_closest": "closest",
    "answerable_nothing": "'say nothing'",
    "negatives": "negatives",
    "negatives_caught": "caught",
    "negatives_nothing": "of which 'say nothing'",
}


def render(found: list[dict[str, Any]]) -> str:
    """The summary as a Markdown table."""
    lines = ["| " + " | ".join(COLUMNS.values()) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(s[key]) for key in COLUMNS) + " |" for s in found]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("evaldata", type=Path, help="../shared/evaldata")
    parser.add_argument("--cache", type=Path, default=Path(".eval-cache"), help="the sets' cached trees, a folder per set")
    parser.add_argument("--out", type=Path, help="write every row here (JSON)")
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for i, name in enumerate(SETS):
        print(f"checking {name}", file=sys.stderr)
        rows += asyncio.run(check_set(args.evaldata, name, SETS[(i + 1) % len(SETS)], args.cache, Settings.from_env()))
    if args.out:
        args.out.write_text(json.dumps(rows) + "\n", encoding="utf-8")
    say(render(summary(rows)))


if __name__ == "__main__":
    main()
