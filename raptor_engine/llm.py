"""OpenAI-compatible summaries and answers: the backend real users run (OpenAI, Ollama, vLLM, llama.cpp).

One `LLMClient` per backend owns the transport: the `openai` client with its own retries switched off,
our retries (backoff with jitter, Retry-After honoured, on 429, 5xx, timeouts, dropped connections and
malformed replies) and a semaphore that bounds requests in flight. When retries run out it raises
`BackendError`; an error never becomes summary or answer text.

`OpenAISummarizer` uses the RAPTOR paper's prompt, runs a layer's clusters concurrently, bounds each
cluster's input, ends every summary on a complete sentence and caches summaries in SQLite.
`OpenAIAnswerer` numbers the context blocks, asks for [n] citations, takes the conversation history and
condenses follow-ups into standalone questions; `stream_answer` yields the answer as it is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import email.utils
import json
import logging
import math
import random
import re
import time
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import openai
import pydantic

from .config import Settings
from .errors import BackendError
from .llm_cache import SummaryCache, summary_cache_key
from .types import AnswerDraft, ContextNode, Summary, SummaryRequest, Turn

log = logging.getLogger(__name__)

# The RAPTOR paper's summarisation prompt (Sarthi et al. 2024, appendix), verbatim.
SUMMARY_SYSTEM = "You are a Summarizing Text Portal"
SUMMARY_USER = "Write a summary of the following, including as many key details as possible: {context}:"
PROMPT_VERSION = "raptor-summary-v1"  # part of the cache key: bump when the prompt or trimming changes

ANSWER_SYSTEM = (
    "You answer questions about a collection of documents. Use only the numbered context blocks "
    "given with the question, not outside knowledge. After each statement, cite the blocks that "
    "support it by their numbers in square brackets, for example [1] or [2][3]. Cite only numbers "
    "that appear in the context. If the context does not contain the answer, say so plainly."
)
CONDENSE_SYSTEM = (
    "You rewrite a follow-up question as a standalone question. Use the conversation to resolve "
    "pronouns and references so the question can be understood without it. Do not answer it. "
    "Reply with the standalone question only."
)

CHARS_PER_TOKEN = 4  # fallback estimate when no tokenizer is given
HISTORY_TURNS = 8  # the most recent turns sent with a question
HISTORY_TURN_CHARS = 2000

TokenCounter = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate (about four characters a token) for when no counter is given."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


# ---- naming --------------------------------------------------------------------------------


def _display_url(base_url: str) -> str:
    """The base URL without credentials or query, safe to show and log."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def backend_label(model: str, base_url: str) -> str:
    """What the CLI and the bot show, e.g. "openai:gpt-4o-mini @ http://127.0.0.1:8080/v1"."""
    return f"openai:{model} @ {_display_url(base_url)}" if base_url else f"openai:{model}"


# ---- transport with retries ----------------------------------------------------------------


@dataclass
class Completion:
    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int


class _MalformedReply(Exception):
    """The server answered 200 but not with a usable chat completion."""


@dataclass
class _Failure:
    retryable: bool
    reason: str  # a short phrase for the user-facing sentence
    retry_after: float | None = None


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date), if present."""
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _server_message(exc: openai.APIStatusError, limit: int = 160) -> str:
    """The server's own error message, shortened, for the one sentence the user sees."""
    body = exc.body
    message = body.get("message") if isinstance(body, dict) else None
    text = " ".join(str(message or exc.message).split()).rstrip(".")
    return text if len(text) <= limit else text[: limit - 1] + "…"


_UNSUPPORTED = re.compile(r"unsupported|not supported|unrecognized|unknown|not allowed|extra", re.I)
ADAPTABLE_PARAMS = ("max_tokens", "temperature", "stream_options")


def unsupported_param(exc: BaseException) -> str | None:
    """The request parameter a 400 says this model or server does not take, if any.

    Some models want `max_completion_tokens` instead of `max_tokens` or refuse `temperature`;
    some servers refuse `stream_options`."""
    if not isinstance(exc, openai.BadRequestError):
        return None
    message = _server_message(exc, limit=2000)
    if not _UNSUPPORTED.search(message):
        return None
    return next((p for p in ADAPTABLE_PARAMS if re.search(rf"\b{p}\b", message)), None)


def _classify(exc: BaseException, timeout: float) -> _Failure:
    """Whether a failed request is worth retrying, and how to describe it in one phrase."""
    if isinstance(exc, openai.APITimeoutError):
        return _Failure(True, f"requests timed out after {timeout:g} s")
    if isinstance(exc, openai.APIConnectionError):
        return _Failure(True, "the connection failed")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retry_after = parse_retry_after(exc.response.headers)
        if status == 429:
            return _Failure(True, "it kept rate-limiting requests (HTTP 429)", retry_after)
        if status >= 500 or status in (408, 409):
            return _Failure(True, f"it kept answering with HTTP {status}", retry_after)
        if status in (401, 403):
            return _Failure(False, f"it rejected the API key (HTTP {status})")
        if status == 404:
            return _Failure(False, "it does not know the model or the URL is wrong (HTTP 404)")
        return _Failure(False, f"it refused the request (HTTP {status}: {_server_message(exc)})")
    if isinstance(
        exc,
        (_MalformedReply, json.JSONDecodeError, pydantic.ValidationError, openai.APIResponseValidationError),
    ):
        return _Failure(True, "its replies were malformed")
    return _Failure(False, f"of an unexpected error ({type(exc).__name__})")


class LLMClient:
    """The `openai` client plus our retry policy and a bound on requests in flight.

    HTTP clients are opened per operation (a layer of summaries, one answer) and closed when it ends,
    so none outlives the event loop it was made on; the semaphore is one per event loop (the engine
    may run builds on worker-thread loops).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        backoff_base: float = 0.5,
        backoff_cap: float = 20.0,
        max_retry_after: float = 60.0,
        rng: random.Random | None = None,
    ):
        self.base_url = settings.llm_base_url
        self.api_key = settings.llm_api_key or "not-needed"  # local servers ignore it; the client wants one
        self.timeout = settings.llm_timeout
        self.concurrency = max(1, settings.llm_concurrency)
        self.attempts = max(1, settings.llm_max_retries + 1)
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_retry_after = max_retry_after
        self._rng = rng or random.Random()
        self._dropped: set[str] = set()  # parameters this server refused (see unsupported_param)
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def where(self) -> str:
        return _display_url(self.base_url) if self.base_url else "api.openai.com"

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.concurrency)
        return semaphore

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[openai.AsyncOpenAI]:
        """An `openai` client with its own retries off, closed when the operation ends."""
        client = openai.AsyncOpenAI(
            api_key=self.api_key, base_url=self.base_url or None, timeout=self.timeout, max_retries=0
        )
        try:
            yield client
        finally:
            await client.close()

    def backoff_delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter; never shorter than the server's Retry-After."""
        ceiling = min(self.backoff_cap, self.backoff_base * (2**attempt))
        delay = self._rng.uniform(ceiling / 2, ceiling)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_retry_after))
        return delay

    def _give_up(self, failure: _Failure, attempts: int, what: str) -> BackendError:
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        return BackendError(
            f"The LLM backend at {self.where} could not {what}{tries} because {failure.reason}."
        )

    def request_params(self, max_tokens: int, stream: bool = False) -> dict[str, Any]:
        """Sampling and length parameters, without the ones this server has refused."""
        length_key = "max_completion_tokens" if "max_tokens" in self._dropped else "max_tokens"
        params: dict[str, Any] = {length_key: max_tokens}
        if "temperature" not in self._dropped:
            params["temperature"] = 0
        if stream:
            params["stream"] = True
            if "stream_options" not in self._dropped:
                params["stream_options"] = {"include_usage": True}
        return params

    def _adapted_to(self, exc: BaseException) -> bool:
        """Stop sending a parameter the server refused; True when the request should be sent again."""
        param = unsupported_param(exc)
        if param is None:
            return False
        if param not in self._dropped:  # concurrent requests sent before the first refusal also land here
            log.info("the LLM server refused %s; sending requests without it", param)
            self._dropped.add(param)
        return True

    async def _retrying(self, what: str, attempt_once: Callable[[], Any]) -> Any:
        """Run `attempt_once` under the semaphore until it succeeds or the retries run out."""
        semaphore = self._semaphore()
        attempt = adaptations = 0
        while True:
            try:
                async with semaphore:
                    return await attempt_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # classified below; anything unknown is not retried
                if adaptations < len(ADAPTABLE_PARAMS) and self._adapted_to(exc):
                    adaptations += 1  # not the server failing: send again at once without the parameter
                    continue
                failure = _classify(exc, self.timeout)
                last = attempt + 1 == self.attempts
                if not failure.retryable or last:
                    log.warning("LLM %s failed for good (attempt %d): %r", what, attempt + 1, exc)
                    raise self._give_up(failure, attempt + 1, what) from exc
                delay = self.backoff_delay(attempt, failure.retry_after)
                log.info("LLM %s failed (attempt %d, %s); retrying in %.2f s", what, attempt + 1, exc, delay)
                await asyncio.sleep(delay)
                attempt += 1

    async def complete(
        self,
        messages: list[dict[str, str]],
        model: str,
        max_tokens: int,
        what: str = "answer",
        *,
        client: openai.AsyncOpenAI | None = None,
    ) -> Completion:
        """One chat completion, retried; the reply must carry non-empty text.

        Pass `client` (from `session()`) to share connections between many requests."""
        if client is None:
            async with self.session() as own_client:
                return await self.complete(messages, model, max_tokens, what, client=own_client)

        async def attempt_once() -> Completion:
            response = await client.chat.completions.create(
                model=model, messages=messages, **self.request_params(max_tokens)
            )
            return _completion_from(response)

        return await self._retrying(what, attempt_once)

    async def stream(
        self, messages: list[dict[str, str]], model: str, max_tokens: int, sink: _StreamSink
    ) -> AsyncIterator[str]:
        """Yield text deltas. Failures before the first delta are retried; after it, they end the
        answer with BackendError (what was shown cannot be taken back)."""
        async with self.session() as client:
            async for delta in self._stream_with(client, messages, model, max_tokens, sink):
                yield delta

    async def _stream_with(
        self,
        client: openai.AsyncOpenAI,
        messages: list[dict[str, str]],
        model: str,
        max_tokens: int,
        sink: _StreamSink,
    ) -> AsyncIterator[str]:
        semaphore = self._semaphore()
        attempt = adaptations = 0
        while True:
            yielded = False
            try:
                async with semaphore:
                    stream = await client.chat.completions.create(
                        model=model, messages=messages, **self.request_params(max_tokens, stream=True)
                    )
                    async for chunk in stream:
                        delta = sink.take(chunk)
                        if delta:
                            yielded = True
                            yield delta
                if not yielded:
                    raise _MalformedReply("the stream ended without text")
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not yielded and adaptations < len(ADAPTABLE_PARAMS) and self._adapted_to(exc):
                    adaptations += 1
                    continue
                failure = _classify(exc, self.timeout)
                if yielded:
                    log.warning("LLM stream broke off after text was sent: %r", exc)
                    raise BackendError(
                        f"The LLM backend at {self.where} broke off while writing the answer."
                    ) from exc
                if not failure.retryable or attempt + 1 == self.attempts:
                    log.warning("LLM stream failed for good (attempt %d): %r", attempt + 1, exc)
                    raise self._give_up(failure, attempt + 1, "answer") from exc
                delay = self.backoff_delay(attempt, failure.retry_after)
                log.info("LLM stream failed (attempt %d, %s); retrying in %.2f s", attempt + 1, exc, delay)
                sink.reset()
                await asyncio.sleep(delay)
                attempt += 1


def _completion_from(response: Any) -> Completion:
    """Check a chat completion's shape; anything unusable is a malformed reply (retried)."""
    choices = getattr(response, "choices", None)
    if not choices:
        raise _MalformedReply("no choices in the reply")
    choice = choices[0]
    message = getattr(choice, "message", None)
    text = getattr(message, "content", None)
    if not isinstance(text, str) or not text.strip():
        raise _MalformedReply("the reply has no text")
    usage = getattr(response, "usage", None)
    return Completion(
        text=text.strip(),
        finish_reason=getattr(choice, "finish_reason", None),
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
    )


class _StreamSink:
    """Collects a stream's text, finish reason and usage while deltas pass through."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.parts: list[str] = []
        self.finish_reason: str | None = None
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def take(self, chunk: Any) -> str:
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
            self.completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        choices = getattr(chunk, "choices", None) or []
        if not choices:
            return ""
        choice = choices[0]
        if getattr(choice, "finish_reason", None):
            self.finish_reason = choice.finish_reason
        delta = getattr(getattr(choice, "delta", None), "content", None) or ""
        if delta:
            self.parts.append(delta)
        return delta

    @property
    def text(self) -> str:
        return "".join(self.parts)


# ---- text shaping --------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"[.!?…][\"'’”)\]]*(?=\s|$)")


def complete_sentences(text: str, finish_reason: str | None = None) -> str:
    """Cut a trailing partial sentence so the text ends on a complete one.

    The official RAPTOR code cuts summaries mid-sentence at 100 tokens; here a summary stopped by
    the token limit (or ending in a fragment) loses the fragment. Text with no sentence end at all
    is kept whole rather than lost, marked with an ellipsis when the limit cut it.
    """
    text = text.strip()
    if not text:
        return text
    ends = list(_SENTENCE_END.finditer(text))
    if ends and ends[-1].end() == len(text):
        return text
    if ends:
        return text[: ends[-1].end()]
    return text + ("…" if finish_reason == "length" else ".")


def _cut_to_chars(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary where possible."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + " …"


def fit_to_budget(texts: Sequence[str], budget: int, count_tokens: TokenCounter) -> list[str]:
    """Shorten the children's texts by the same proportion until together they fit the budget.

    Proportional rather than dropping whole children, so every child still speaks in the summary.
    """
    texts = list(texts)
    total = sum(count_tokens(t) for t in texts)
    if total <= budget or not texts:
        return texts
    scale = budget / total
    fitted = texts
    for _ in range(6):
        fitted = [_cut_to_chars(t, max(1, int(len(t) * scale))) for t in texts]
        total = sum(count_tokens(t) for t in fitted)
        if total <= budget:
            return fitted
        scale *= 0.9 * budget / total
    return fitted


def format_context(context: Sequence[ContextNode]) -> str:
    """Number the blocks 1..n with what they are, e.g. `[1] (node 123, layer 2, doc.pdf, page 4)`."""
    blocks = []
    for position, node in enumerate(context, start=1):
        label = [f"node {node.node_id}", f"layer {node.layer}", node.document or "knowledge-base summary"]
        pages = node.pages()
        if pages is not None:
            label.append(f"page {pages[0]}" if pages[0] == pages[1] else f"pages {pages[0]}-{pages[1]}")
        if node.heading:
            label.append(" > ".join(node.heading))
        blocks.append(f"[{position}] ({', '.join(label)})\n{node.text.strip()}")
    return "\n\n".join(blocks)


# ---- citations a model forgot ---------------------------------------------------------------

_MARKER = re.compile(r"\[(\d{1,4})\]")
_ECHOED_LABEL = re.compile(r"(\[\d{1,4}\])[ \t]*\(node \d+, layer \d+[^)\n]*\)")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]+")
_SENTENCE_OR_BREAK = re.compile(r"((?<=[.!?])[ \t]+|\n+)")
STOPWORDS = frozenset(
    "the and but for with from that this these those was were are been being has have had not "
    "its his her their they them she him you your our who whom whose which what when where why how "
    "than then there here into onto over under after before about also only very more most such "
    "each every some any all one can could would should will shall may might must did does".split()
)
MIN_SHARED_WORDS = 2
MIN_SHARED_FRACTION = 0.4


def _content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if len(w) > 2 and w.lower() not in STOPWORDS}


def _has_valid_marker(text: str, blocks: int) -> bool:
    return any(1 <= int(m.group(1)) <= blocks for m in _MARKER.finditer(text))


def _mark_sentence(sentence: str, block_words: list[set[str]]) -> str:
    """Append the marker of the block this sentence shares most content words with, if enough."""
    words = _content_words(sentence)
    if len(words) < MIN_SHARED_WORDS:
        return sentence
    shared = [len(words & block) for block in block_words]
    best = max(range(len(shared)), key=lambda i: (shared[i], -i))  # ties go to the better-ranked block
    if shared[best] < MIN_SHARED_WORDS or shared[best] < MIN_SHARED_FRACTION * len(words):
        return sentence
    body = sentence.rstrip()
    end = len(body) - len(body.rstrip(".!?"))
    return f"{body[: len(body) - end]} [{best + 1}]{body[len(body) - end :]}"


def attribute_citations(text: str, context: Sequence[ContextNode]) -> str:
    """Tidy what a model wrote about its sources, and supply markers when it gave none.

    Small local models often copy block labels into the answer or ignore the instruction to cite.
    Copied labels are removed (the marker stays). An answer with no valid marker gets, after each
    sentence, the marker of the context block it shares the most content words with, when that is
    at least two words and 40% of the sentence's; sentences that match no block stay unmarked.
    """
    text = _ECHOED_LABEL.sub(r"\1", text)
    if not context or _has_valid_marker(text, len(context)):
        return text
    block_words = [_content_words(node.text) for node in context]
    parts = _SENTENCE_OR_BREAK.split(text)
    return "".join(part if i % 2 else _mark_sentence(part, block_words) for i, part in enumerate(parts))


_OLD_MARKER = re.compile(r"[ \t]*\[\d{1,4}\]")


def _recent_history(history: Sequence[Turn]) -> list[Turn]:
    """The last turns, shortened. Earlier answers lose their [n] markers: those numbered another
    context, and left in they invite the model to cite blocks that are not the ones it now sees."""
    recent = [t for t in history if t.role in ("user", "assistant") and t.content.strip()]
    turns = []
    for turn in recent[-HISTORY_TURNS:]:
        content = _OLD_MARKER.sub("", turn.content) if turn.role == "assistant" else turn.content
        turns.append(Turn(turn.role, _cut_to_chars(content.strip(), HISTORY_TURN_CHARS)))
    return turns


def answer_messages(
    question: str, context: Sequence[ContextNode], history: Sequence[Turn]
) -> list[dict[str, str]]:
    """System instructions, the conversation so far as prior messages, then the blocks and the question."""
    messages = [{"role": "system", "content": ANSWER_SYSTEM}]
    messages += [{"role": t.role, "content": t.content} for t in _recent_history(history)]
    blocks = format_context(context) if context else "(no context was found)"
    user = (
        f"Context blocks:\n\n{blocks}\n\n"
        f"Question: {question.strip()}\n\n"
        "Answer from the context blocks only and cite them as [n]."
    )
    messages.append({"role": "user", "content": user})
    return messages


def condense_messages(question: str, history: Sequence[Turn]) -> list[dict[str, str]]:
    lines = [f"{'User' if t.role == 'user' else 'Assistant'}: {t.content}" for t in _recent_history(history)]
    user = (
        "Conversation:\n"
        + "\n".join(lines)
        + f"\n\nFollow-up question: {question.strip()}\n\nStandalone question:"
    )
    return [{"role": "system", "content": CONDENSE_SYSTEM}, {"role": "user", "content": user}]


def _clean_condensed(reply: str, question: str) -> str:
    """The model's rewrite without labels or quotes; the original question if nothing usable came back."""
    line = next((ln.strip() for ln in reply.strip().splitlines() if ln.strip()), "")
    line = re.sub(r"^(standalone question|question)\s*:\s*", "", line, flags=re.I).strip().strip("\"'“”")
    return line or question


# ---- summariser ----------------------------------------------------------------------------


class OpenAISummarizer:
    """RAPTOR summaries from an OpenAI-compatible model, a layer at a time and concurrently."""

    def __init__(
        self,
        settings: Settings,
        *,
        db_path: str | Path | None = None,
        count_tokens: TokenCounter | None = None,
        client: LLMClient | None = None,
        backoff_base: float = 0.5,
    ):
        self.model = settings.llm_summary_model
        self.client = client or LLMClient(settings, backoff_base=backoff_base)
        self.name = backend_label(self.model, settings.llm_base_url)
        self.input_budget = settings.cluster_input_budget
        self.count_tokens: TokenCounter = count_tokens or estimate_tokens
        self.cache = SummaryCache(db_path) if db_path is not None else None

    async def summarize_many(self, requests: list[SummaryRequest]) -> list[Summary]:
        """All requests at once (the client's semaphore bounds them); the first failure cancels the
        rest and is raised. Summaries finished before it stay cached, so a retry does not pay twice."""
        if not requests:
            return []
        async with self.client.session() as client:
            return await self._summarize_all(requests, client)

    async def _summarize_all(
        self, requests: list[SummaryRequest], client: openai.AsyncOpenAI
    ) -> list[Summary]:
        tasks = [asyncio.ensure_future(self._summarize(r, client)) for r in requests]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            failed = next((t for t in tasks if t.done() and not t.cancelled() and t.exception()), None)
            if failed is not None:
                raise failed.exception()  # type: ignore[misc]
            return [task.result() for task in tasks]
        finally:
            unfinished = [t for t in tasks if not t.done()]
            for task in unfinished:
                task.cancel()
            await asyncio.gather(*unfinished, return_exceptions=True)

    def prompt_for(self, request: SummaryRequest) -> str:
        """The user prompt for one cluster, its children's texts bounded by the input budget."""
        texts = fit_to_budget([t.strip() for t in request.texts], self.input_budget, self.count_tokens)
        return SUMMARY_USER.format(context="\n\n".join(texts))

    async def _summarize(self, request: SummaryRequest, client: openai.AsyncOpenAI) -> Summary:
        prompt = self.prompt_for(request)
        key = summary_cache_key(self.model, PROMPT_VERSION, prompt, request.max_tokens)
        if self.cache is not None:
            hit = await asyncio.to_thread(self.cache.get, key)
            if hit is not None:
                return Summary(text=hit.text, cached=True)
        messages = [{"role": "system", "content": SUMMARY_SYSTEM}, {"role": "user", "content": prompt}]
        completion = await self.client.complete(
            messages, self.model, request.max_tokens, what="summarise", client=client
        )
        text = complete_sentences(completion.text, completion.finish_reason)
        if self.cache is not None:
            await asyncio.to_thread(
                self.cache.put, key, self.model, text, completion.prompt_tokens, completion.completion_tokens
            )
        return Summary(
            text=text, prompt_tokens=completion.prompt_tokens, completion_tokens=completion.completion_tokens
        )


# ---- answerer ------------------------------------------------------------------------------


# Tokens a `condense` call spent, carried to the `answer` of the same question (same task), so the
# question's accounting includes them although `condense` returns only a string.
_condense_usage: contextvars.ContextVar[tuple[int, int]] = contextvars.ContextVar(
    "raptor_condense_usage", default=(0, 0)
)


def _take_condense_usage() -> tuple[int, int]:
    usage = _condense_usage.get()
    _condense_usage.set((0, 0))
    return usage


class AnswerStream:
    """Async iterator of an answer's text deltas; afterwards `draft()` gives the whole AnswerDraft."""

    def __init__(
        self,
        client: LLMClient,
        messages: list[dict[str, str]],
        model: str,
        max_tokens: int,
        context: Sequence[ContextNode] = (),
    ):
        self._context = list(context)
        self._condense_usage = _take_condense_usage()
        self._sink = _StreamSink()
        self._deltas = client.stream(messages, model, max_tokens, self._sink)

    def __aiter__(self) -> AsyncIterator[str]:
        return self._deltas

    @property
    def text(self) -> str:
        return self._sink.text

    @property
    def finish_reason(self) -> str | None:
        return self._sink.finish_reason

    def draft(self) -> AnswerDraft:
        text = self._sink.text.strip()
        if self._sink.finish_reason == "length":
            text = complete_sentences(text, "length")
        text = attribute_citations(text, self._context)
        condense_prompt, condense_completion = self._condense_usage
        return AnswerDraft(
            text,
            self._sink.prompt_tokens + condense_prompt,
            self._sink.completion_tokens + condense_completion,
        )


class OpenAIAnswerer:
    """Answers with [n] citations into the given context, and standalone rewrites of follow-ups."""

    def __init__(
        self,
        settings: Settings,
        *,
        client: LLMClient | None = None,
        max_tokens: int = 800,
        condense_max_tokens: int = 120,
        backoff_base: float = 0.5,
    ):
        self.model = settings.llm_answer_model
        self.client = client or LLMClient(settings, backoff_base=backoff_base)
        self.name = backend_label(self.model, settings.llm_base_url)
        self.max_tokens = max_tokens
        self.condense_max_tokens = condense_max_tokens

    async def answer(self, question: str, context: list[ContextNode], history: list[Turn]) -> AnswerDraft:
        messages = answer_messages(question, context, history)
        completion = await self.client.complete(messages, self.model, self.max_tokens, what="answer")
        text = completion.text
        if completion.finish_reason == "length":
            text = complete_sentences(text, "length")
        text = attribute_citations(text, context)
        condense_prompt, condense_completion = _take_condense_usage()
        return AnswerDraft(
            text,
            completion.prompt_tokens + condense_prompt,
            completion.completion_tokens + condense_completion,
        )

    def stream_answer(self, question: str, context: list[ContextNode], history: list[Turn]) -> AnswerStream:
        """`async for delta in answerer.stream_answer(...)`, then `stream.draft()` for the AnswerDraft
        (whose text may carry markers the model left out; see `attribute_citations`)."""
        return AnswerStream(
            self.client, answer_messages(question, context, history), self.model, self.max_tokens, context
        )

    async def condense(self, question: str, history: list[Turn]) -> str:
        """A standalone question for retrieval; with no history the question is already standalone.

        Its token usage is added to the next `answer` (or `stream_answer`) in the same task."""
        if not _recent_history(history):
            return question
        messages = condense_messages(question, history)
        completion = await self.client.complete(
            messages, self.model, self.condense_max_tokens, what="condense the follow-up question"
        )
        _condense_usage.set((completion.prompt_tokens, completion.completion_tokens))
        return _clean_condensed(completion.text, question)


# ---- choosing a backend ----------------------------------------------------------------------


def make_backends(
    settings: Settings, db_path: str | Path | None = None, *, count_tokens: TokenCounter | None = None
) -> tuple[OpenAISummarizer | None, OpenAIAnswerer | None]:
    """The LLM summariser and answerer when an API key or base URL is configured; (None, None) means
    the engine uses its extractive defaults. Each gets its own bound on requests in flight, so a
    question does not queue behind a build's summaries."""
    if not settings.llm_configured:
        return None, None
    summarizer = OpenAISummarizer(
        settings, db_path=db_path if db_path is not None else settings.db_path, count_tokens=count_tokens
    )
    return summarizer, OpenAIAnswerer(settings)
