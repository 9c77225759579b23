"""Follow-ups that go on from the last answer ("what happened before that?", "who else?", "what else?"),
asked of the engine (no model) after three opening questions over each of four texts: the harbour's
three documents (`followup_chains`), a tale written here, the lighthouse history (raptor_tools/samples)
and Grimm's Cinderella (from ../shared/evaldata, left out where this machine has none). For each kind it
counts the answers that quote a sentence of the last answer again, and for "before" the answers that
quote only sentences before the last answer's first quote in its document (docs/BOT.md has the figures).

Run: `python -m raptor_tools.followup_onward [--show]` (`--show`: each "before" answer that quoted a
later sentence).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

_ROOT = Path(__file__).resolve().parents[1]  # the checkout, for `python -m` from anywhere
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from raptor_engine import Engine, Turn  # noqa: E402
from raptor_engine.config import Settings  # noqa: E402
from raptor_engine.query.followup import quotes_in  # noqa: E402
from raptor_tools.bench_ingest import evaldata_dir  # noqa: E402
from raptor_tools.followup_chains import DOCUMENTS as HARBOUR  # noqa: E402

# A tale told in order, one event a sentence, with people who come and go.
TALE = """# The Miller's Daughter

Long ago a miller named Oswin lived by the river Tamsk with his daughter Brenna. One spring the river
flooded and carried away the miller's wheel. Oswin walked to the town of Kell to borrow money for a new
wheel. The moneylender Garrick lent him forty crowns at a cruel rate. Oswin built the new wheel before
midsummer. In autumn Garrick came to the mill and demanded twice the sum. Oswin could not pay, so Garrick
took the mill. Brenna went to the castle and told the old countess what the moneylender had done. The
countess sent her steward Haldor to read Garrick's papers. Haldor found that the papers were forged. Garrick
was driven out of Kell, and the mill was given back to Oswin. Brenna married Haldor the next summer.
"""

OPENINGS = {
    "harbour": ["What happened to the bridge in 1921?", "Who was Rowan Pike?", "When was the Wren broken up?"],
    "tale": ["Who took the mill?", "What did Haldor find?", "Who lent Oswin the money?"],
    "lighthouse": [
        "What did Ambrose Kittow do in the Great Gale?",
        "When was the light electrified?",
        "Who was Walter Dunstan?",
    ],
    "cinderella": [
        "What did the stepsisters do to fit the shoe?",
        "Who took the dish of lentils?",
        "What did the king's son do with the slipper?",
    ],
}
FOLLOW_UPS = {
    "before": ["what happened before that?", "and before that?", "what came before?", "earlier?", "what led up to that?"],
    "who else": ["who else?", "anyone else?", "anybody else involved?"],
    "what else": ["what else?", "what else happened?", "anything else?", "what else did he do?", "any others?"],
}


def texts() -> dict[str, dict[str, str]]:
    """Each knowledge base's documents; Cinderella only where the evaluation sets are here."""
    kbs = {
        "harbour": HARBOUR,
        "tale": {"tale.md": TALE},
        "lighthouse": {"lighthouse.md": (_ROOT / "raptor_tools" / "samples" / "lighthouse_keepers.md").read_text()},
    }
    root = evaldata_dir()
    rows = root / "raptor_cinderella" / "documents.jsonl" if root else None
    if rows is not None and rows.is_file():
        kbs["cinderella"] = {"cinderella.txt": json.loads(rows.read_text().splitlines()[0])["doc_text"]}
    return kbs


def flat(text: str) -> str:
    return " ".join(text.split())


def sentences(answer: str) -> list[str]:
    """The sentences an answer's quotes hold, in its order (a quote cut to its reason without its '…')."""
    return [s.lstrip("\u2026") for q in quotes_in(answer) for s in re.split(r"(?<=[.!?])\s+", flat(q)) if s]


def tally(counts: Counter, kind: str, first: str, answer: str, whole: str) -> bool | None:
    """Count one follow-up's answer; for 'before', whether it quoted only earlier sentences (None when
    a sentence cannot be placed in the text)."""
    said, new = set(sentences(first)), sentences(answer)
    counts[kind, "asked"] += 1
    counts[kind, "repeats"] += bool(set(new) & said)
    if kind != "before" or not new or not said:
        return None
    places = [whole.find(s) for s in [sentences(first)[0], *new]]
    if -1 in places:
        return None
    earlier = all(place < places[0] for place in places[1:])
    counts[kind, "only earlier"] += earlier
    return earlier


async def run(data_dir: Path, show: bool) -> Counter:
    """Ask every follow-up after every opening; the counts by (kind, what)."""
    counts: Counter = Counter()
    engine = Engine(Settings(data_dir=data_dir))
    try:
        kbs = texts()
        for kb, documents in kbs.items():
            for name, text in documents.items():
                await engine.ingest(kb, name, text.encode())
        for kb, documents in kbs.items():
            whole = flat("\n".join(documents.values()))
            for opening in OPENINGS[kb]:
                first = await engine.ask(kb, opening)
                history = [Turn("user", opening), Turn("assistant", first.text)]
                for kind, phrasings in FOLLOW_UPS.items():
                    for phrasing in phrasings:
                        answer = await engine.ask(kb, phrasing, history=list(history))
                        if tally(counts, kind, first.text, answer.text, whole) is False and show:
                            print(f"{kb}: {opening} | {phrasing}\n  {answer.text.replace(chr(10), chr(10) + '  ')}")
    finally:
        engine.close()
    return counts


def report(counts: Counter) -> str:
    """One line a kind: how many were asked, repeated a quote, and (before) quoted only earlier text."""
    lines = ["| follow-up | asked | repeat a quote | only earlier sentences |", "|---|---|---|---|"]
    for kind in FOLLOW_UPS:
        earlier = counts[kind, "only earlier"] if kind == "before" else "-"
        lines.append(f"| {kind} | {counts[kind, 'asked']} | {counts[kind, 'repeats']} | {earlier} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", action="store_true", help="print each 'before' answer that quoted later text")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        print(report(asyncio.run(run(Path(folder) / "data", args.show))))


if __name__ == "__main__":
    main()
