"""Audit the sentence splitter on real documents: count the boundaries that look wrong, by class.

Chunks and quotes are made of sentences (`chunk.split_sentences`), so a wrong boundary cuts a quote in
the middle of a sentence ("Smith et al." / "[12] showed that ...") or glues two into one long one. This
splits every document of the evaluation sets (each as `raptor eval` ingests it: a .txt file through the
loader) and counts each suspicious boundary once per class it belongs to; a class is a suspicion, not a
verdict, and `--show CLASS` prints its examples to read. These are the splitter's sentences, before
`sentences.sentences_of` joins the sentences of one quotation for quoting.

    RAPTOR_EVALDATA=/work/shared/evaldata python -m raptor_tools.sentence_audit   # every set, both splits
    python -m raptor_tools.sentence_audit --show start-citation --limit 20
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from raptor_engine.ingest.chunk import split_sentences
from raptor_engine.ingest.load import load_document
from raptor_tools.bench_ingest import evaldata_dir

LONG_SENTENCE_WORDS = 80  # a sentence this long has most likely swallowed a boundary

# The abbreviations the audit looks for at a sentence's end (the brief's list, and their plurals).
_ABBREVIATION_END = re.compile(
    r"(?:\bet\.? al|\be\.g|\bi\.e|\b[Ff]igs?|\b[Ee]qs?|\b[Tt]ab|\b[Tt]bl|\b[Ss]ecs?|\b[Nn]os?|\bvs|\bapprox"
    r"|\bcf|\bDr|\bMrs?|\bMs|\bSt|\bU\.S|\bU\.K|\bProf|\bJr|\bSr|\bresp|\betc)\.[\"'\u201d\u2019)\]]*$"
)
_INITIAL_END = re.compile(r"(?:^|\s)[A-Z]\.$")  # "J. R. R." / "John F."
_CITATION_START = re.compile(
    r"^(?:\[\d[\d,\s\u2013-]*\]|BIBREF\d+|\(\s*[A-Z][a-z]+.*?\d{4}[a-z]?\)|[a-z]+\d{4}[a-z]*\b)"
)
_CLOSING_START = re.compile(r"^[)\]}\u201d\u00bb]")
_STRAIGHT_START = re.compile(r"^\"(?=\s|[,.;:!?)]|$)")  # '" Ivy! "' opens one; it closes one left open
_NUMBER_END = re.compile(r"(?:^|[\s(v])\d+\.$")  # "... version 2." / "in 3." before "5 ..."
_ELLIPSIS_END = re.compile(r"(?:\.\.\.|\u2026)[\"'\u201d\u2019)\]]*$")
_WEB = re.compile(r"(?:https?://|www\.|\S@\S+\.\w)")
_WEB_CUT = re.compile(r"(?:https?://\S*|www\.\S*|\S+@\S+)$")
_LIST_NUMBER_ALONE = re.compile(r"^\(?\d{1,3}[.)]$")
_DIALOGUE_END = re.compile(r"[!?,][\"\u201d\u2019']$")
_SPEECH_VERB = re.compile(
    r"^(?:[A-Z][a-z]+|[Hh]e|[Ss]he|[Tt]hey|[Ii]|[Ww]e)\s+(?:\w+\s+)?(?:said|asked|cried|shouted|replied|"
    r"answered|whispered|called|muttered|exclaimed|added|went on|continued|began|demanded|snapped)\b"
)
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n")
_QUOTE_MARKS = "\"'\u201c\u2018(["


@dataclass(frozen=True)
class Boundary:
    """The sentence before a cut, the one after it (None at the end), and where they come from."""

    where: str
    before: str
    after: str | None
    quote_open: bool = False  # an odd number of straight quotation marks in the paragraph before the cut


def _first_word(text: str) -> str:
    return text.lstrip(_QUOTE_MARKS).split(" ", 1)[0]


def _opens_closed(quote_open: bool, after: str) -> bool:
    """Whether `after` opens with a mark that closes something: a closing bracket or typographic quotation
    mark, or a straight one written apart from the words after it while a quotation is open."""
    if _CLOSING_START.match(after):
        return True
    return bool(_STRAIGHT_START.match(after)) and quote_open


# Each class: a name, what it suspects, and its test on one boundary.
CLASSES: dict[str, tuple[str, Callable[[Boundary], bool]]] = {
    "end-abbreviation": (
        "ends in et al., e.g., i.e., Fig., Eq., Tab., Sec., No., vs., approx., cf., Dr., Mr., St., U.S., ...",
        lambda b: b.after is not None and bool(_ABBREVIATION_END.search(b.before)),
    ),
    "end-initial": (
        "ends in a single capital initial ('J. R. R.', 'John F.')",
        lambda b: b.after is not None and bool(_INITIAL_END.search(b.before)),
    ),
    "start-lowercase": (
        "the next opens with a lower-case word (not a citation key)",
        lambda b: (
            b.after is not None and _first_word(b.after)[:1].islower() and not _CITATION_START.match(b.after)
        ),
    ),
    "start-citation": (
        "the next opens with a citation ('[12]', 'BIBREF3', '(Smith, 2019)', 'garg2012unsupervised')",
        lambda b: b.after is not None and bool(_CITATION_START.match(b.after)),
    ),
    "start-closing": (
        "the next opens with a closing bracket or quotation mark (a straight one if the paragraph left one open)",
        lambda b: b.after is not None and _opens_closed(b.quote_open, b.after),
    ),
    "number-cut": (
        "ends in a number and a full stop, and the next opens with a digit ('3.' / '5 ...', 'v2.' / '1')",
        lambda b: b.after is not None and bool(_NUMBER_END.search(b.before)) and b.after[:1].isdigit(),
    ),
    "ellipsis": (
        "ends in an ellipsis ('...', '\u2026') before the next",
        lambda b: b.after is not None and bool(_ELLIPSIS_END.search(b.before)),
    ),
    "url-email": (
        "a URL or e-mail address at the cut",
        lambda b: b.after is not None and bool(_WEB_CUT.search(b.before.rstrip(".")) or _WEB.match(b.after)),
    ),
    "list-number-alone": (
        "a sentence that is only a list number ('1.', '(2)')",
        lambda b: bool(_LIST_NUMBER_ALONE.match(b.before)),
    ),
    "dialogue": (
        "a line of speech cut from its 'he said' ('\"Stop!\"' / 'Tom said.')",
        lambda b: (
            b.after is not None and bool(_DIALOGUE_END.search(b.before)) and bool(_SPEECH_VERB.match(b.after))
        ),
    ),
    "long": (
        f"a sentence of more than {LONG_SENTENCE_WORDS} words (a boundary missed)",
        lambda b: len(b.before.split()) > LONG_SENTENCE_WORDS,
    ),
}


def boundaries(name: str, text: str) -> list[Boundary]:
    """The document's sentences as `raptor eval` ingests it, each with the one after it."""
    loaded = load_document(f"{name}.txt", text.encode("utf-8"))
    spans = split_sentences(loaded.text)
    found = [" ".join(loaded.text[a:b].split()) for a, b in spans]
    return [
        Boundary(name, s, found[i + 1] if i + 1 < len(found) else None, _quote_open(loaded.text, spans[i][1]))
        for i, s in enumerate(found)
    ]


def _quote_open(text: str, cut: int) -> bool:
    """Whether the paragraph before `cut` leaves a straight quotation mark open."""
    starts = [m.end() for m in _BLANK_LINE.finditer(text, 0, cut)]
    return text.count('"', starts[-1] if starts else 0, cut) % 2 == 1


def classify(items: Iterable[Boundary]) -> dict[str, list[Boundary]]:
    """Each class's boundaries (one boundary may be in several classes)."""
    out: dict[str, list[Boundary]] = defaultdict(list)
    for item in items:
        for name, (_, test) in CLASSES.items():
            if test(item):
                out[name].append(item)
    return out


def documents(data: Path) -> Iterable[tuple[str, str, str]]:
    """(set, doc_id, text) for every document of every set under `data` (both splits)."""
    from raptor_tools.evaluate import load_eval_set

    for folder in sorted(p for p in data.iterdir() if (p / "documents.jsonl").is_file()):
        for doc in load_eval_set(folder).documents.values():
            yield folder.name, doc.doc_id, doc.text


def audit(data: Path) -> tuple[Counter[str], dict[str, dict[str, list[Boundary]]]]:
    """Sentences per set and each set's suspicious boundaries by class."""
    sentences: Counter[str] = Counter()
    by_set: dict[str, dict[str, list[Boundary]]] = {}
    for set_name, doc_id, text in documents(data):
        found = boundaries(f"{set_name}/{doc_id}", text)
        sentences[set_name] += len(found)
        for name, items in classify(found).items():
            by_set.setdefault(set_name, {}).setdefault(name, []).extend(items)
    return sentences, by_set


def table(sentences: Counter[str], by_set: dict[str, dict[str, list[Boundary]]]) -> str:
    """A Markdown table: each class's count per set and in all."""
    sets = sorted(sentences)
    lines = [
        "| class | " + " | ".join(sets) + " | all |",
        "|---|" + "---|" * (len(sets) + 1),
        "| sentences | " + " | ".join(str(sentences[s]) for s in sets) + f" | {sum(sentences.values())} |",
    ]
    for name in CLASSES:
        counts = [len(by_set.get(s, {}).get(name, [])) for s in sets]
        lines.append(f"| {name} | " + " | ".join(map(str, counts)) + f" | {sum(counts)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=evaldata_dir(),
        help="the evaluation sets' folder (RAPTOR_EVALDATA, ../shared/evaldata)",
    )
    parser.add_argument("--show", choices=sorted(CLASSES), help="print this class's boundaries")
    parser.add_argument("--limit", type=int, default=30, help="how many to print with --show")
    args = parser.parse_args(argv)
    if args.data is None or not args.data.is_dir():
        print(f"{args.data} is not a folder of evaluation sets.", file=sys.stderr)
        return 2
    sentences, by_set = audit(args.data)
    print(table(sentences, by_set))
    for name, (meaning, _) in CLASSES.items():
        print(f"- {name}: {meaning}")
    if args.show:
        shown = [b for found in by_set.values() for b in found.get(args.show, [])][: args.limit]
        for item in shown:
            after = "(end)" if item.after is None else item.after[:90]
            print(f"\n[{item.where}] ...{item.before[-90:]!r}\n    | {after!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
