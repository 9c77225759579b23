"""Does a question that names a rare term find the node holding it? Vector, hybrid and learned ranking.

For every document of the evaluation sets, the terms that occur in exactly one leaf (a name written
with a capital inside a sentence, or a token with digits: a year, a code, a figure) become questions
"What does the text say about TERM?", and the context at a 500-token budget is checked for a node
that holds the term. The trees are the ones `raptor eval` caches (.eval-cache/<set>), built if missing.

Run: `python -m raptor_tools.benchmarks.rare_terms ../shared/evaldata [--per-document 10]`.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import random
import re
import sys
from collections import Counter
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]  # the checkout, for `python -m` from anywhere
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from raptor_engine.config import Settings  # noqa: E402
from raptor_engine.engine import Engine  # noqa: E402
from raptor_engine.ingest.sentences import STOPWORDS  # noqa: E402
from raptor_tools.evaluate import build_trees, load_eval_set  # noqa: E402

SETS = ("qasper", "quality", "squality", "narrativeqa_summaries")
RANKINGS = ("vector", "hybrid", "learned")
BUDGET = 500
# A capitalised word not opening a sentence, or a token with a digit in it
RARE = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{3,}\b|\b[A-Za-z]*\d[\w-]*\b")


def rare_terms(leaves: list[str]) -> list[str]:
    """Terms found in exactly one leaf (and there as a whole word), sorted for a fixed sample."""
    counts: Counter[str] = Counter()
    for text in leaves:
        counts.update({t for t in RARE.findall(text) if t.lower() not in STOPWORDS and len(t) >= 4})
    return sorted(t for t, n in counts.items() if n == 1)


async def measure(
    evaldata: Path, cache_root: Path, per_document: int, seed: int
) -> dict[str, dict[str, int]]:
    """Questions found per ranking, per set."""
    found: dict[str, dict[str, int]] = {}
    for name in SETS:
        eval_set = load_eval_set(evaldata / name)
        counts = dict.fromkeys(RANKINGS, 0) | {"questions": 0}
        for ranking in RANKINGS:
            settings = dataclasses.replace(Settings.from_env(), data_dir=cache_root / name, ranking=ranking)
            engine = Engine(settings)
            try:
                trees = await build_trees(engine, list(eval_set.documents.values()), progress=False)
                rng = random.Random(seed)
                for doc_id in sorted(trees):
                    kb = trees[doc_id]["kb"]
                    kb_id = engine.store.require_kb(kb)
                    leaves = [n.text for n in engine.store.nodes_of_kb(kb_id) if n.layer == 0]
                    terms = rare_terms(leaves)
                    for term in rng.sample(terms, min(per_document, len(terms))):
                        context = engine.retrieve(kb, f"What does the text say about {term}?", budget=BUDGET)
                        counts[ranking] += any(
                            re.search(rf"\b{re.escape(term)}\b", n.text) for n in context.nodes
                        )
                        counts["questions"] += ranking == RANKINGS[0]
            finally:
                engine.close()
        found[name] = counts
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("evaldata", type=Path)
    parser.add_argument("--cache", type=Path, default=Path(".eval-cache"))
    parser.add_argument("--per-document", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    found = asyncio.run(measure(args.evaldata, args.cache, args.per_document, args.seed))
    print("| set | questions | " + " | ".join(RANKINGS) + " |")
    print("|---|---|" + "---|" * len(RANKINGS))
    for name, counts in found.items():
        total = counts["questions"] or 1
        shares = " | ".join(f"{counts[r] / total:.0%}" for r in RANKINGS)
        print(f"| {name} | {counts['questions']} | {shares} |")


if __name__ == "__main__":
    main()
