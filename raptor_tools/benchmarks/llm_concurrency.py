"""How concurrency pays off when summaries come from an LLM: a ~25k-token document built through the
engine with the OpenAI-compatible summariser against a test server that answers every request after
exactly one second.

With a limit of L requests in flight, a layer of C clusters should cost about ceil(C/L) seconds, so
the summarising part of a build should take close to the sum over layers of ceil(C/L), far below the
serial figure of one second per cluster. Run: `python -m benchmarks.llm_concurrency`.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

_ROOT = Path(__file__).resolve().parents[2]  # the checkout
if str(_ROOT) not in sys.path:  # so `tests.llm_server` imports when run as a script
    sys.path.insert(0, str(_ROOT))

from raptor_engine.config import Settings  # noqa: E402
from raptor_engine.types import Progress  # noqa: E402

TOPICS = {
    "lighthouses": "keeper lamp lens fog signal tower coast beacon storm shipwreck oil wick gallery",
    "beekeeping": "hive queen worker drone honey comb pollen nectar swarm smoker frame wax brood",
    "railways": "locomotive track gauge signal station timetable freight carriage boiler junction",
    "astronomy": "telescope orbit planet comet nebula eclipse star galaxy parallax meridian moon",
    "bread": "flour yeast dough oven crust starter knead proof loaf rye wheat baker",
    "glaciers": "ice moraine crevasse snowfield melt valley calving firn cirque terminus drift",
    "printing": "press type ink paper compositor forme platen serif broadside pamphlet bindery",
    "tides": "harbour ebb flood spring neap current estuary mooring chart pilot sandbar",
    "orchards": "apple pear graft blossom rootstock prune harvest cider frost ladder bough",
    "clocks": "pendulum escapement spring gear dial chime regulator balance wheel mainspring",
    "mapping": "survey triangulation theodolite baseline contour scale atlas chain bearing",
    "weaving": "loom warp weft shuttle heddle spindle wool linen dye pattern treadle",
}
NAMES = [
    "Ada",
    "Bram",
    "Celia",
    "Dmitri",
    "Edda",
    "Faisal",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Kaia",
    "Lorenz",
]
PLACES = ["Aldmouth", "Brackwater", "Carrow Point", "Dunmere", "Eastholm", "Fallowby", "Greyhaven", "Hollin"]


def topic_document(target_tokens: int = 25_000, seed: int = 7) -> str:
    """A deterministic Markdown document of sections on distinct topics, about `target_tokens` long
    (about 1.3 tokens a word), so clustering finds real groups."""
    rng = random.Random(seed)
    parts: list[str] = []
    words = 0
    section = 0
    topics = list(TOPICS.items())
    while words * 1.3 < target_tokens:
        topic, vocabulary = topics[section % len(topics)]
        terms = vocabulary.split()
        parts.append(f"## {topic.title()} in {rng.choice(PLACES)}, part {section // len(topics) + 1}\n")
        for _ in range(4):
            sentences = []
            for _ in range(6):
                a, b, c = rng.sample(terms, 3)
                year = rng.randint(1790, 1950)
                sentences.append(
                    f"In {year} {rng.choice(NAMES)} of {rng.choice(PLACES)} recorded how the {a} "
                    f"and the {b} changed the {c} of the {topic} trade."
                )
            paragraph = " ".join(sentences)
            words += len(paragraph.split())
            parts.append(paragraph + "\n")
        section += 1
    return "\n".join(parts)


@dataclass
class LayerTiming:
    layer: int
    clusters: int
    started: float
    seconds: float = 0.0


@dataclass
class SummarizeClock:
    """Times each layer's summarising from the build's progress reports (possibly from threads)."""

    layers: list[LayerTiming] = field(default_factory=list)

    def __call__(self, event: Progress) -> None:
        if event.stage != "summarise":
            return
        now = time.perf_counter()
        if event.done == 0:
            self.layers.append(LayerTiming(event.layer, event.total, now))
        elif self.layers:
            self.layers[-1].seconds = now - self.layers[-1].started


async def measure(
    tokens: int = 25_000, concurrency: int = 8, delay: float = 1.0, data_dir: Path | None = None
) -> dict[str, object]:
    """Build the document once through the engine against a fresh server and a fresh cache."""
    from raptor_engine.engine import Engine
    from raptor_engine.llm import OpenAISummarizer
    from raptor_engine.tree.embed import Embedder
    from tests.llm_server import FakeLLMServer

    with tempfile.TemporaryDirectory() as scratch:
        root = data_dir or Path(scratch)
        async with FakeLLMServer(delay=delay) as server:
            settings = Settings(
                data_dir=root,
                llm_base_url=server.base_url,
                llm_api_key="benchmark",
                llm_concurrency=concurrency,
                llm_timeout=30.0,
            )
            embedder = Embedder(settings.embed_model, batch_size=settings.embed_batch_size)
            summarizer = OpenAISummarizer(
                settings, db_path=settings.db_path, count_tokens=embedder.count_tokens
            )
            engine = Engine(settings, embedder=embedder, summarizer=summarizer)
            await asyncio.to_thread(engine.warm)  # model load and numba compilation are not measured
            text = topic_document(tokens)
            clock = SummarizeClock()
            started = time.perf_counter()
            result = await engine.ingest("bench", "topics.md", text.encode(), progress=clock)
            total = time.perf_counter() - started
            engine.close()
            doc_tokens = embedder.count_tokens(text)
            clusters = [t.clusters for t in clock.layers]
            return {
                "ideal_seconds": sum(math.ceil(c / concurrency) for c in clusters) * delay,
                "serial_seconds": sum(clusters) * delay,
                "summarise_seconds": sum(t.seconds for t in clock.layers),
                "server_seconds": sum(server_spans(server.requests, clusters)),
                "document_tokens": doc_tokens,
                "chunks": result.chunks,
                "layers": clock.layers,
                "build_seconds": total,
                "requests": len(server.requests),
                "server_spans": server_spans(server.requests, clusters),
                "max_in_flight": server.max_in_flight,
                "concurrency": concurrency,
                "delay": delay,
                "prompt_tokens": result.prompt_tokens,
                "completion_tokens": result.completion_tokens,
            }


def server_spans(requests: list, clusters_per_layer: list[int]) -> list[float]:
    """Seconds from each layer's first request arriving to its last reply, by the server's clock
    (layers run one after another, so the request log splits by the layers' cluster counts)."""
    spans, start = [], 0
    for count in clusters_per_layer:
        batch = requests[start : start + count]
        start += count
        finished = [r.finished_at for r in batch if r.finished_at is not None]
        spans.append(max(finished) - min(r.received_at for r in batch) if finished else 0.0)
    return spans


def report(figures: dict[str, object]) -> str:
    layers: list[LayerTiming] = figures["layers"]  # type: ignore[assignment]
    spans: list[float] = figures["server_spans"]  # type: ignore[assignment]
    limit = int(figures["concurrency"])  # type: ignore[arg-type]
    delay = float(figures["delay"])  # type: ignore[arg-type]
    row = "{:>5} {:>8} {:>11} {:>8} {:>10} {:>8}"
    lines = [
        f"LLM concurrency: {figures['document_tokens']} tokens, {figures['chunks']} chunks, "
        f"server delay {delay:g} s, limit {limit}",
        row.format("layer", "clusters", "ceil(C/L) s", "serial s", "measured s", "server s"),
    ]
    for t, span in zip(layers, spans, strict=True):
        ideal = math.ceil(t.clusters / limit) * delay
        lines.append(
            row.format(
                t.layer,
                t.clusters,
                f"{ideal:.1f}",
                f"{t.clusters * delay:.1f}",
                f"{t.seconds:.2f}",
                f"{span:.2f}",
            )
        )
    ideal_total = sum(math.ceil(t.clusters / limit) for t in layers) * delay
    serial_total = sum(t.clusters for t in layers) * delay
    measured = sum(t.seconds for t in layers)
    lines.append(
        row.format(
            "all",
            sum(t.clusters for t in layers),
            f"{ideal_total:.1f}",
            f"{serial_total:.1f}",
            f"{measured:.2f}",
            f"{sum(spans):.2f}",
        )
    )
    lines.append(
        "measured = a layer's summarising step in the build (requests, cache, embedding the summaries); "
        "server = first request in to last reply out, by the server's clock"
    )
    lines.append(
        f"whole build {figures['build_seconds']:.1f} s (embedding and clustering included); "
        f"{figures['requests']} requests, at most {figures['max_in_flight']} in flight; "
        f"usage {figures['prompt_tokens']} prompt + {figures['completion_tokens']} completion tokens"
    )
    return "\n".join(lines)


def run_llm_concurrency_benchmark(
    tokens: int = 25_000, concurrency: int = 8, delay: float = 1.0
) -> dict[str, object]:
    """Print and return the figures (for the project's benchmark command)."""
    figures = asyncio.run(measure(tokens, concurrency, delay))
    print(report(figures))
    return figures


if __name__ == "__main__":
    run_llm_concurrency_benchmark()
