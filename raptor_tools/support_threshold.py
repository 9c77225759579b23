"""Choose the support check's weight and threshold on data: `python -m raptor_tools.support_threshold`.

The check (raptor_engine/query/support.py) decides which context node supports each sentence of a
written answer, and flags the sentences none supports. This builds answers whose truth is known, from
the real documents of ../shared/evaldata (or `--data DIR`): for each document, four contexts of
consecutive ~100-word nodes (a retrieval's 2,000-token budget), each with an answer of 10 sentences:
6 from the context (copied, or paraphrased by program: clauses reordered, words dropped, synonyms
swapped, two sentences merged; numbers kept), 2 from the same document outside the context and 2 from
other documents, paraphrased the same way. Every (weight, threshold) pair is scored on half of the
documents; the pair chosen is the blend of both signals (weight strictly between 0 and 1) with the best
matched-node recall plus flagging recall among those with matched-node precision >= 0.9, matched recall
>= 0.8 and flagging precision >= 0.8; the other half reports it. Copies with one number changed are
reported on their own (they must be flagged). Last, the time of one check of a 10-sentence answer: with
the context embedded while the model wrote (the engine does that), with the answer's sentences embedded
too (as they streamed), and from cold. Seeded: the same data give the same table.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from raptor_engine.config import Settings
from raptor_engine.ingest.sentences import sentences_of, words
from raptor_engine.query.answer import SentenceVectors
from raptor_engine.query.support import (
    EMBED_SHARE,
    SUPPORT_THRESHOLD,
    SupportIndex,
    best_node,
    check_answer,
    claim_text,
    states_something,
)
from raptor_engine.tree.embed import Embedder
from raptor_engine.types import ContextNode

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "evaldata"
SETS = ("quality", "qasper", "squality", "narrativeqa_summaries")
NODE_WORDS = 75  # ~100 tokens
CONTEXT_NODES = 20  # ~2,000 tokens
ANSWERS_PER_DOCUMENT = 4
SUPPORTED, ELSEWHERE, OTHER = 6, 2, 2  # sentences from the context, the document outside it, other documents
MIN_WORDS = 6
SHARES = (0.0, 0.25, 0.4, 0.5, 0.6, 0.75, 1.0)
THRESHOLDS = tuple(round(0.3 + 0.025 * i, 3) for i in range(27))  # 0.30 .. 0.95
GOALS = {"precision": 0.9, "recall": 0.8, "flag_precision": 0.8}
# A small list of swaps a paraphrase makes; both directions.
SYNONYMS = dict(
    pair
    for a, b in (
        ("said", "stated"),
        ("big", "large"),
        ("began", "started"),
        ("small", "little"),
        ("quickly", "rapidly"),
        ("house", "home"),
        ("ship", "vessel"),
        ("man", "person"),
        ("woman", "lady"),
        ("city", "town"),
        ("help", "assist"),
        ("show", "demonstrate"),
        ("use", "employ"),
        ("used", "employed"),
        ("find", "discover"),
        ("found", "discovered"),
        ("want", "wish"),
        ("wanted", "wished"),
        ("told", "informed"),
        ("asked", "enquired"),
        ("very", "extremely"),
        ("often", "frequently"),
        ("method", "approach"),
        ("results", "findings"),
        ("model", "system"),
        ("paper", "work"),
        ("shows", "demonstrates"),
        ("improve", "enhance"),
        ("important", "significant"),
        ("people", "persons"),
        ("looked", "glanced"),
        ("went", "travelled"),
        ("got", "obtained"),
        ("job", "work"),
        ("car", "vehicle"),
        ("however", "but"),
        ("because", "since"),
        ("before", "prior to"),
        ("after", "following"),
    )
    for pair in ((a, b), (b, a))
)
_CLAUSE = re.compile(r",\s+|\s+and\s+|\s+but\s+|;\s+")


@dataclass
class Case:
    claim: str
    gold: frozenset[int]  # positions of the nodes that hold the source sentence; empty: unsupported
    kind: str  # copy | reordered | dropped | synonyms | paraphrased | merged | other | number


@dataclass
class Built:
    document: str
    split: str  # dev | test
    nodes: list[ContextNode]
    cases: list[Case]


# ---- paraphrases ------------------------------------------------------------------------------


def reorder(text: str) -> str:
    """The sentence's two halves around a clause break swapped ("A, B." -> "B, A.")."""
    body = text.rstrip(".!?")
    parts = [m for m in _CLAUSE.finditer(body) if 3 <= len(body[: m.start()].split())]
    parts = [m for m in parts if len(body[m.end() :].split()) >= 3]
    if not parts:
        return text
    cut = parts[len(parts) // 2]
    first, second = body[: cut.start()], body[cut.end() :]
    return f"{second[:1].upper()}{second[1:]}, {first[:1].lower()}{first[1:]}."


def drop_words(text: str, rng: random.Random, share: float = 0.2) -> str:
    """About `share` of the words left out, never a number."""
    tokens = text.split()
    droppable = [i for i, t in enumerate(tokens) if not re.search(r"\d", t) and i > 0]
    gone = set(rng.sample(droppable, k=min(len(droppable), max(1, int(share * len(tokens))))))
    return " ".join(t for i, t in enumerate(tokens) if i not in gone)


def swap_synonyms(text: str) -> str:
    return re.sub(r"[A-Za-z]+", lambda m: SYNONYMS.get(m.group(0), m.group(0)), text)


def paraphrase(text: str, kind: str, rng: random.Random) -> str:
    if kind == "reordered":
        return reorder(text)
    if kind == "dropped":
        return drop_words(text, rng)
    if kind == "synonyms":
        return swap_synonyms(text)
    if kind == "paraphrased":
        return drop_words(swap_synonyms(reorder(text)), rng, share=0.15)
    return text


def merge(first: str, second: str) -> str:
    """The first half of one sentence and the second half of the next: a model joining two."""
    a, b = first.rstrip(".!?").split(), second.rstrip(".!?").split()
    return " ".join(a[: max(3, len(a) // 2 + 1)] + ["and"] + b[len(b) // 2 :]) + "."


def change_number(text: str, rng: random.Random) -> str | None:
    numbers = list(re.finditer(r"\b\d{1,4}\b", text))
    if not numbers:
        return None
    m = rng.choice(numbers)
    return text[: m.start()] + str(int(m.group(0)) + rng.randint(1, 9)) + text[m.end() :]


# ---- the data set --------------------------------------------------------------------------------


def load_documents(data: Path) -> list[tuple[str, str]]:
    """(name, text) of every document of the sets present."""
    found = []
    for name in SETS:
        path = data / name / "documents.jsonl"
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                found.append((f"{name}/{row['doc_id']}", row["doc_text"]))
    return found


def claims_of(text: str) -> list[str]:
    return [
        s.text for s in sentences_of(text) if len(words(s.text)) >= MIN_WORDS and states_something(s.text)
    ]


def nodes_of(text: str) -> list[str]:
    """Consecutive sentences grouped into nodes of about NODE_WORDS words."""
    nodes, current, count = [], [], 0
    for sentence in sentences_of(text):
        current.append(sentence.text)
        count += len(sentence.text.split())
        if count >= NODE_WORDS:
            nodes.append(" ".join(current))
            current, count = [], 0
    if current:
        nodes.append(" ".join(current))
    return nodes


def build_answer(name: str, split: str, text: str, others: list[str], rng: random.Random) -> Built | None:
    """One context window of a document and a 10-sentence answer of known truth."""
    all_nodes = nodes_of(text)
    if len(all_nodes) < 2:
        return None
    start = rng.randrange(max(1, len(all_nodes) - CONTEXT_NODES + 1))
    window = all_nodes[start : start + CONTEXT_NODES]
    outside = [s for node in all_nodes[:start] + all_nodes[start + CONTEXT_NODES :] for s in claims_of(node)]
    return _answer_for(name, split, window, outside, others, rng)


def _answer_for(
    name: str, split: str, window: list[str], outside: list[str], others: list[str], rng: random.Random
) -> Built | None:
    rng.shuffle(window)  # a retrieval's order is by score, not the document's
    nodes = [ContextNode(i, 0, name, 1.0, t, len(t.split()), 1) for i, t in enumerate(window)]
    held = [(p, s) for p, node in enumerate(window, start=1) for s in claims_of(node)]
    if len(held) < SUPPORTED:
        return None
    where: dict[str, set[int]] = {}
    for position, sentence in held:
        where.setdefault(sentence, set()).add(position)
    cases = []
    kinds = ["copy", "reordered", "dropped", "synonyms", "paraphrased", "merged"]
    for kind in kinds[:SUPPORTED]:
        position, sentence = rng.choice(held)
        if kind == "merged":
            mates = [s for p, s in held if p == position and s != sentence]
            claim = merge(sentence, rng.choice(mates)) if mates else paraphrase(sentence, "paraphrased", rng)
            gold = {position}
        else:
            claim, gold = paraphrase(sentence, kind, rng), where[sentence]
        cases.append(Case(claim, frozenset(gold), kind))
    outside = [s for s in outside if s not in where]  # a sentence the document repeats is in the context
    for count, pool, kind in ((ELSEWHERE, outside, "elsewhere"), (OTHER, others, "other")):
        for _ in range(count if pool else 0):
            sentence = rng.choice(pool)
            cases.append(Case(paraphrase(sentence, rng.choice(kinds[:5]), rng), frozenset(), kind))
    numbered = [s for _, s in held if re.search(r"\b\d{1,4}\b", s)]
    if numbered:
        changed = change_number(rng.choice(numbered), rng)
        if changed is not None:
            cases.append(Case(changed, frozenset(), "number"))
    return Built(name, split, nodes, cases)


def build_set(data: Path, seed: int) -> list[Built]:
    rng = random.Random(seed)
    documents = load_documents(data)
    sentences = {name: claims_of(text) for name, text in documents}
    built = []
    for i, (name, text) in enumerate(documents):
        others = [s for other, found in sentences.items() if other != name for s in found]
        for _ in range(ANSWERS_PER_DOCUMENT):
            answer = build_answer(name, "dev" if i % 2 == 0 else "test", text, others, rng)
            if answer is not None:
                built.append(answer)
    return built


# ---- scoring ---------------------------------------------------------------------------------------


@dataclass
class Scored:
    split: str
    kind: str
    gold: frozenset[int]
    scores: dict[float, np.ndarray]  # weight -> node scores


def score_all(built: list[Built], vectors: SentenceVectors) -> list[Scored]:
    scored = []
    for answer in built:
        index = SupportIndex(answer.nodes, vectors)
        claims = [claim_text(c.claim) for c in answer.cases]
        cosine, lexical = index.similarities(claims)
        per_share = {share: index.node_scores(claims, cosine, lexical, share) for share in SHARES}
        for i, case in enumerate(answer.cases):
            scored.append(Scored(answer.split, case.kind, case.gold, {s: per_share[s][i] for s in SHARES}))
    return scored


def metrics(scored: list[Scored], share: float, threshold: float) -> dict[str, float]:
    """Matched-node precision and recall over supported sentences, flagging precision and recall over
    the sentences from outside the context (numbers changed are counted apart)."""
    predicted = correct = supported = flagged = flagged_right = unsupported = 0
    for case in scored:
        if case.kind == "number":
            continue
        node = best_node(case.scores[share], threshold)
        if case.gold:
            supported += 1
            predicted += node is not None
            correct += node in case.gold
        else:
            unsupported += 1
        if node is None:
            flagged += 1
            flagged_right += not case.gold
    numbers = [c for c in scored if c.kind == "number"]
    caught = sum(best_node(c.scores[share], threshold) is None for c in numbers)
    return {
        "precision": correct / predicted if predicted else 1.0,
        "recall": correct / supported if supported else 0.0,
        "flag_precision": flagged_right / flagged if flagged else 1.0,
        "flag_recall": flagged_right / unsupported if unsupported else 0.0,
        "numbers_flagged": caught / len(numbers) if numbers else 0.0,
        "sentences": supported + unsupported,
    }


def meets(m: dict[str, float]) -> bool:
    return all(m[key] >= goal for key, goal in GOALS.items())


def best_threshold(dev: list[Scored], share: float) -> tuple[float, dict[str, float]] | None:
    """The threshold meeting the goals with the best recall of both kinds, for one weight."""
    best = None
    for threshold in THRESHOLDS:
        m = metrics(dev, share, threshold)
        if meets(m) and (
            best is None or m["recall"] + m["flag_recall"] > best[1]["recall"] + best[1]["flag_recall"]
        ):
            best = (threshold, m)
    return best


def choose(scored: list[Scored]) -> tuple[float, float, dict[str, float]] | None:
    """The (weight, threshold) meeting the goals on the dev half with the best recall of both kinds,
    among the blends of both signals (a single signal's rows are printed for comparison); ties go to
    the lighter embedding weight."""
    dev = [c for c in scored if c.split == "dev"]
    blends = [share for share in SHARES if 0 < share < 1]
    found = [(share, *best) for share in blends if (best := best_threshold(dev, share)) is not None]
    return max(found, key=lambda f: f[2]["recall"] + f[2]["flag_recall"], default=None)


def by_kind(scored: list[Scored], share: float, threshold: float) -> dict[str, float]:
    """Per kind of sentence: the share judged right (matched to its node, or flagged)."""
    out: dict[str, list[bool]] = {}
    for case in scored:
        node = best_node(case.scores[share], threshold)
        right = node in case.gold if case.gold else node is None
        out.setdefault(case.kind, []).append(right)
    return {kind: sum(v) / len(v) for kind, v in sorted(out.items())}


# ---- timing ------------------------------------------------------------------------------------------


def time_checks(built: list[Built], embedder: Embedder, repeats: int = 2) -> dict[str, float]:
    """Median milliseconds of one check of a 10-sentence answer: context embedded before (while the model
    wrote) with the answer's sentences new; everything embedded before (sentences embedded as they
    streamed); from cold (context and answer embedded in the check)."""
    answers = [b for b in built if b.split == "test"][:20]
    timings: dict[str, list[float]] = {"context ready": [], "all embedded (streamed)": [], "cold": []}
    for _ in range(repeats):
        for answer in answers:
            text = " ".join(
                c.claim.rstrip() if c.claim.rstrip().endswith(".") else c.claim + "."
                for c in answer.cases[:10]
            )
            vectors = SentenceVectors(embedder)
            index = SupportIndex(answer.nodes, vectors)
            started = time.perf_counter()
            check_answer(text, index)
            timings["cold"].append(time.perf_counter() - started)
            index = SupportIndex(answer.nodes, vectors := SentenceVectors(embedder))
            index.prepare()
            started = time.perf_counter()
            check_answer(text, index)
            timings["context ready"].append(time.perf_counter() - started)
            started = time.perf_counter()
            check_answer(text, index)
            timings["all embedded (streamed)"].append(time.perf_counter() - started)
    return {k: 1000 * statistics.median(v) for k, v in timings.items() if v}


# ---- report -------------------------------------------------------------------------------------------


def table(scored: list[Scored], share: float, thresholds: tuple[float, ...]) -> list[str]:
    lines = [
        "| weight | threshold | split | matched precision | matched recall | flag precision | flag recall "
        "| changed numbers flagged |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for threshold in thresholds:
        for split in ("dev", "test"):
            m = metrics([c for c in scored if c.split == split], share, threshold)
            lines.append(
                f"| {share:g} | {threshold:.3f} | {split} | {m['precision']:.3f} | {m['recall']:.3f} "
                f"| {m['flag_precision']:.3f} | {m['flag_recall']:.3f} | {m['numbers_flagged']:.3f} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="evaldata folder (default ../shared/evaldata)"
    )
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--no-timing", action="store_true", help="skip the timing of checks")
    args = parser.parse_args(argv)
    built = build_set(args.data.resolve(), args.seed)
    if not built:
        print(f"no documents under {args.data} (expected {', '.join(SETS)})", file=sys.stderr)
        return 1
    settings = Settings.from_env()
    embedder = Embedder(settings.embed_model, backend=settings.embed_backend, cache_dir=settings.cache_dir)
    vectors = SentenceVectors(embedder, size=200_000)
    scored = score_all(built, vectors)
    total = {split: sum(c.split == split for c in scored) for split in ("dev", "test")}
    print(
        f"{len(built)} answers, {len(scored)} sentences (dev {total['dev']}, test {total['test']}); "
        f"embedder {settings.embed_model} ({settings.embed_backend})\n"
    )
    print("Best recall (matched + flagged) meeting the goals on dev, per weight of the embedding cosine:\n")
    print(
        "| weight | threshold | dev P | dev R | dev flag P | dev flag R | test P | test R | test flag P | test flag R |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    dev = [c for c in scored if c.split == "dev"]
    for share in SHARES:
        found = best_threshold(dev, share)
        if found is None:
            print(f"| {share:g} | none meets the goals | | | | | | | | |")
            continue
        threshold, m = found
        t = metrics([c for c in scored if c.split == "test"], share, threshold)
        print(
            f"| {share:g} | {threshold:.3f} | {m['precision']:.3f} | {m['recall']:.3f} | {m['flag_precision']:.3f} "
            f"| {m['flag_recall']:.3f} | {t['precision']:.3f} | {t['recall']:.3f} | {t['flag_precision']:.3f} "
            f"| {t['flag_recall']:.3f} |"
        )
    chosen = choose(scored)
    if chosen is None:
        print("\nno weight and threshold meet the goals on dev")
        return 1
    share, threshold, _ = chosen
    print(
        f"\nChosen: weight {share:g}, threshold {threshold:.3f} (shipped: {EMBED_SHARE:g}, {SUPPORT_THRESHOLD:g})\n"
    )
    near = tuple(t for t in THRESHOLDS if abs(t - threshold) <= 0.1 + 1e-9)
    print("\n".join(table(scored, share, near)))
    test = [c for c in scored if c.split == "test"]
    print(
        "\nShare judged right per kind of sentence (test half):", json.dumps(by_kind(test, share, threshold))
    )
    if not args.no_timing:
        ms = time_checks(built, embedder)
        print(
            "\nOne check of a 10-sentence answer, median ms: "
            + ", ".join(f"{k} {v:.1f}" for k, v in ms.items())
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
