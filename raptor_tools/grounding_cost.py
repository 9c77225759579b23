"""What the lead line costs a question: `python raptor_tools/grounding_cost.py [--repeat 5]`.

Builds the three sample documents (raptor_tools/samples) into one knowledge base in a temporary folder,
retrieves a context for each of QUESTIONS (spelt right, misspelt, pronoun-only, negated, off-topic)
once, then times, over `--repeat` rounds, the extractive answer from that context (choosing the quotes
and the lead line: `ExtractiveAnswerer._answer_sync`) and the grounding features alone (from the
quotes already chosen: what the lead line adds to a question). It prints the
median milliseconds a question of each. This file imports only what the engine has had since the
grounding model first shipped, so an older checkout can be timed beside a newer one on the same machine:
`PYTHONPATH=/path/to/old python raptor_tools/grounding_cost.py`, alternating the two.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

from raptor_engine.config import Settings
from raptor_engine.engine import Engine
from raptor_engine.query.answer import ExtractiveAnswerer, grounding_features, neutralise_context
from raptor_engine.query.ranker import ranker_for

SAMPLES = Path(__file__).resolve().parent / "samples"
QUESTIONS = (
    "Who kept the light in 1887?",
    "who kept the lighthose in 1887?",
    "wat did Elias Marow write?",
    "how do bess make hony?",
    "who designed it?",
    "when was it built?",
    "what did they carry?",
    "who did NOT keep the light?",
    "which keeper never married?",
    "What is the capital of France?",
    "How do I bake sourdough bread?",
)


def median_ms(run, rounds: int) -> float:
    """The median of `rounds` timings of `run()`, in milliseconds."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def measure(rounds: int) -> tuple[float, float]:
    """The median over QUESTIONS of each question's median answer time and feature time (ms)."""
    with tempfile.TemporaryDirectory() as folder:
        engine = Engine(dataclasses.replace(Settings.from_env(), data_dir=Path(folder)))
        try:
            for sample in sorted(SAMPLES.glob("*.md")):
                await engine.ingest("kb", sample.name, sample.read_bytes())
            answerer = ExtractiveAnswerer(engine.embedder, ranker=ranker_for(engine.settings.ranking))
            contexts = {q: neutralise_context(engine.retrieve("kb", q, budget=2000).nodes) for q in QUESTIONS}
            answerer._answer_sync(QUESTIONS[0], contexts[QUESTIONS[0]], [])  # warm the sentence vectors
            answers = [median_ms(lambda q=q: answerer._answer_sync(q, contexts[q], []), rounds) for q in QUESTIONS]
            quoted = {q: answerer._quotes(q, contexts[q], []) for q in QUESTIONS}
            features = [
                median_ms(lambda q=q: grounding_features(q, quoted[q].candidates, quoted[q].picked, contexts[q]), rounds)
                for q in QUESTIONS
            ]
        finally:
            engine.close()
    return statistics.median(answers), statistics.median(features)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds each question is timed")
    args = parser.parse_args(argv)
    answer, features = asyncio.run(measure(args.repeat))
    print(f"answer from a context: median {answer:.2f} ms a question; grounding features: {features:.2f} ms")


if __name__ == "__main__":
    main()
