"""Does the extractive answer's first quote answer a plain factual question?

A small probe set written for this project (`tests/fixtures/answer_probes/`): short documents of
different kinds (a history, a manual, meeting notes, a story, a policy, a recipe, ...), each with
questions of the kinds a reader asks of them: "who was X?", "what is X?", "when ...?", "how many /
how much ...?", "where ...?", "how long / how often / how far / how much does X cost?" (`measure`),
"why ...?", "how do I ...?" (`how_to`), yes/no questions (`yes_no`), "which X / what kind of X?"
(`which`) and "who did X?" (`who_did`), and the sentence (or sentences) that answers each. Every document is
built into a knowledge base of its own in a temporary data folder (extractive summaries, no LLM),
each question is answered as `raptor ask` answers it without a model, and the report counts the
questions whose **first quote** holds an answering sentence, and those whose quotes hold one at all.

A second set (`--set kinds`, `tests/fixtures/answer_kinds/`) asks what the first barely does, of other
kinds of document (local histories, incident post-mortems, product comparisons, a biography dated in
prose, an FAQ): "what caused X? / what was the cause of X? / why did X fail?" (`cause`), "what was the
result of X? / what happened to X?" (`result`), "when ...?" answered without a year ("that winter",
"two years later"), "what is X for?" (`purpose`), "which was the largest / first X?" (`superlative`),
"is X bigger than Y? / which costs more?" (`comparison`), "how did X ...?" (`manner`), "which X was
not / cannot ...?" (`negative`) and "who was responsible for X?" (`responsible`).

Each set comes in two halves: `dev` (looked at while changing the ranking) and `heldout` (scored
only to check a change). Run:

    python -m raptor_tools.answer_probes [--set probes|kinds] [--split dev|heldout|all] [--show-misses]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

_ROOT = Path(__file__).resolve().parents[1]  # the checkout, for `python -m` from anywhere
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from raptor_engine.config import Settings  # noqa: E402
from raptor_engine.engine import Engine  # noqa: E402
from raptor_engine.ingest.sentences import sentence_key  # noqa: E402
from raptor_engine.query.answer import QUOTE  # noqa: E402
from raptor_engine.tree.embed import Embedder  # noqa: E402
from raptor_tools import say  # noqa: E402
from raptor_tools.evaluate import answer_extractively  # noqa: E402

PROBES = _ROOT / "tests" / "fixtures" / "answer_probes"
KINDS_SET = _ROOT / "tests" / "fixtures" / "answer_kinds"
SETS = {"probes": PROBES, "kinds": KINDS_SET}
SAMPLES = _ROOT / "raptor_tools" / "samples"
SPLITS = ("dev", "heldout")
BUDGET = 2000


@dataclass(frozen=True)
class Probe:
    """A question about one probe document and the words of the sentences that answer it."""

    split: str
    doc: str
    question: str
    # who / what / when / how_many / where / measure / why / how_to / yes_no / which / who_did / attribute
    # ("what was the date / cost / cause of X?") / pronoun (answered by a sentence opening with one) / theme;
    # the kinds set: cause / result / purpose / superlative / comparison / manner / negative / responsible
    kind: str
    answers: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    probe: Probe
    quotes: tuple[str, ...]

    @property
    def first_answers(self) -> bool:
        return bool(self.quotes) and holds_answer(self.quotes[0], self.probe.answers)

    @property
    def quotes_answer(self) -> bool:
        return any(holds_answer(quote, self.probe.answers) for quote in self.quotes)


def holds_answer(quote: str, answers: tuple[str, ...]) -> bool:
    """Whether the quote holds one of the answering passages (compared as `sentence_key` writes them:
    case, punctuation and spacing aside), so a quote read with its neighbour still counts."""
    held = f" {sentence_key(quote)} "
    return any(f" {sentence_key(answer)} " in held for answer in answers)


def load_probes(split: str = "all", root: Path = PROBES) -> list[Probe]:
    """The probes of one half of the set (`dev`, `heldout`) or of both (`all`)."""
    probes = []
    for name in SPLITS if split == "all" else (split,):
        for line in (root / name / "questions.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                probes.append(Probe(name, row["doc"], row["question"], row["kind"], tuple(row["answers"])))
    return probes


def kb_of(probe: Probe) -> str:
    return f"{probe.split}-{Path(probe.doc).stem}"


def document_path(split: str, doc: str, root: Path = PROBES) -> Path:
    """A probe document: one of the set's own, or ("samples/NAME.md") a packaged sample document."""
    return SAMPLES / doc.removeprefix("samples/") if doc.startswith("samples/") else root / split / doc


async def run_probes(
    probes: list[Probe], data_dir: Path, root: Path = PROBES, embedder: Embedder | None = None
) -> list[Outcome]:
    """Build each probe document into its own knowledge base and answer its questions without a model
    (with `embedder`, one already loaded)."""
    settings = dataclasses.replace(
        Settings.from_env(data_dir=data_dir), llm_api_key="", llm_base_url="", budget=BUDGET
    )
    engine = Engine(settings, embedder=embedder)
    try:
        for split, doc in dict.fromkeys((p.split, p.doc) for p in probes):
            path = document_path(split, doc, root)
            await engine.ingest(kb_of(Probe(split, doc, "", "", ())), path.name, path.read_bytes())
        outcomes = []
        for probe in probes:
            context = await asyncio.to_thread(engine.retrieve, kb_of(probe), probe.question, budget=BUDGET)
            answer = answer_extractively(engine, probe.question, context, [])
            outcomes.append(Outcome(probe, tuple(QUOTE.findall(answer))))
        return outcomes
    finally:
        engine.close()


def tally(outcomes: list[Outcome]) -> dict[str, tuple[int, int, int]]:
    """(questions, first quote answers, quotes answer) per question kind and over `all`."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for outcome in outcomes:
        for key in (outcome.probe.kind, "all"):
            counts[key][0] += 1
            counts[key][1] += outcome.first_answers
            counts[key][2] += outcome.quotes_answer
    return {key: (n, first, anywhere) for key, (n, first, anywhere) in sorted(counts.items())}


def render(outcomes: list[Outcome], show_misses: bool = False) -> str:
    lines = ["| kind | questions | first quote answers | answer in the quotes |", "|---|---|---|---|"]
    for kind, (n, first, anywhere) in tally(outcomes).items():
        lines.append(f"| {kind} | {n} | {first} ({first / n:.0%}) | {anywhere} ({anywhere / n:.0%}) |")
    if show_misses:
        for outcome in outcomes:
            if not outcome.first_answers:
                first = outcome.quotes[0] if outcome.quotes else "(nothing quoted)"
                lines.append(
                    f"\nMISS [{outcome.probe.split}/{outcome.probe.doc}] {outcome.probe.question}\n  first: {first}"
                )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=tuple(SETS), default="probes", help="which probe set to ask")
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="dev")
    parser.add_argument(
        "--show-misses", action="store_true", help="print each question whose first quote misses"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="raptor-probes-") as data_dir:
        root = SETS[args.set]
        outcomes = asyncio.run(run_probes(load_probes(args.split, root), Path(data_dir), root))
    say(f"Answer probes, {args.set} {args.split} ({len(outcomes)} questions, budget {BUDGET}, no LLM):\n")
    say(render(outcomes, args.show_misses))


if __name__ == "__main__":
    main()
