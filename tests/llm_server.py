"""An OpenAI-protocol chat-completions server that tests and benchmarks start in-process on 127.0.0.1.

It speaks enough of `POST /v1/chat/completions` (plain JSON and SSE streaming) for the real `openai`
client, and has knobs for the faults a real backend shows: a fixed delay, scripted 429s with
Retry-After, 500s, hangs, malformed JSON, empty choices and truncated streams. It counts requests in
flight (and the most at once) and logs every request with server-side timestamps, so tests assert on
what the server saw rather than on wall-clock time.

Use it on the test's event loop (`async with FakeLLMServer() as server: server.base_url`) or, for
synchronous callers such as benchmarks, on its own thread (`with FakeLLMServer().running_in_thread()`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

FAULTS = ("429", "500", "503", "401", "hang", "malformed", "empty", "truncated")
# Faults that only a streamed request (`stream: true`) shows; a plain request is answered normally:
# "cut_early" breaks the stream before any text, "stall" stops sending half-way (for `hang_seconds`),
# "no_stream" refuses `stream` with a 400 as some servers do, "plain" ignores it and sends a JSON body.
STREAM_FAULTS = ("cut_early", "stall", "no_stream", "plain")

Responder = Callable[[dict[str, Any]], str]


@dataclass
class RecordedRequest:
    """One request as the server saw it. Times are `time.monotonic()` seconds."""

    index: int
    received_at: float
    body: dict[str, Any]
    stream: bool
    outcome: str = "pending"  # "ok" or one of FAULTS
    finished_at: float | None = None
    retry_count: int = 0  # the openai client's own count of retries of this request (its retry header)
    first_token_at: float | None = None  # when a streamed reply sent its first piece of text

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def max_tokens(self) -> int | None:
        return self.body.get("max_tokens") or self.body.get("max_completion_tokens")

    def text(self) -> str:
        """All message contents joined, for asserting that something reached the server."""
        return "\n".join(str(m.get("content", "")) for m in self.messages)


@dataclass
class _Fault:
    kind: str
    retry_after: float | None = None


def _first_sentences(text: str, count: int, max_chars: int) -> str:
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(text.split()))
    picked = " ".join(s for s in sentences[:count] if s).strip()
    if len(picked) > max_chars:
        picked = picked[:max_chars].rsplit(" ", 1)[0]
    if picked and picked[-1] not in ".!?":
        picked += "."
    return picked


def default_responder(body: dict[str, Any]) -> str:
    """A deterministic reply that depends on the prompt, shaped like what a model would write.

    Summaries repeat the first sentences of the cluster text, answers quote the first context block
    and cite it as [1], and condensation echoes the follow-up with the first question of the history.
    """
    messages = body.get("messages") or []
    system = " ".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    last_user = next((str(m.get("content", "")) for m in reversed(messages) if m.get("role") == "user"), "")
    max_chars = 4 * int(body.get("max_tokens") or body.get("max_completion_tokens") or 200)
    if "Summarizing Text Portal" in system:
        context = last_user.split("as many key details as possible:", 1)[-1].rstrip(":")
        return _first_sentences(context, 2, max_chars) or "Nothing to summarise."
    if "standalone question" in system.lower():
        follow_up = last_user.rsplit("Follow-up question:", 1)[-1].split("\n")[0].strip()
        first_question = re.search(r"User: (.*)", last_user)
        about = first_question.group(1).strip() if first_question else ""
        return f"{follow_up} (regarding: {about})" if about else follow_up
    block = re.search(r"\[1\][^\n]*\n(.*?)(?:\n\n\[\d+\]|\Z)", last_user, flags=re.S)
    quoted = _first_sentences(block.group(1), 1, max_chars) if block else "The context does not say."
    return f"{quoted} [1]"


@dataclass
class FakeLLMServer:
    """An OpenAI-compatible test server. All knobs may be changed while it runs."""

    delay: float = 0.0  # seconds before every reply
    responder: Responder = default_responder
    finish_reason: str = "stop"
    include_usage: bool = True
    hang_seconds: float = 30.0  # how long a "hang" lasts (ended early by stop())
    stream_chunk_delay: float = 0.0  # seconds before each streamed piece (a word and its space)
    always_fail: str | None = None  # a FAULTS kind applied to every request while set
    unsupported_params: set[str] = field(default_factory=set)  # answered with 400, as some models do
    pause_after: int | None = None  # a streamed reply waits after this many pieces until release()
    host: str = "127.0.0.1"

    requests: list[RecordedRequest] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0

    def __post_init__(self) -> None:
        self._faults: deque[_Fault] = deque()
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None
        self._lock = threading.Lock()
        self._released = threading.Event()  # a threading.Event: released from any thread or loop
        self.port: int | None = None

    # ---- scripting -------------------------------------------------------------------------

    def fail_next(self, kind: str, times: int = 1, retry_after: float | None = None) -> None:
        """Make the next `times` requests fail with `kind` (one of FAULTS), then behave normally."""
        if kind not in FAULTS + STREAM_FAULTS:
            raise ValueError(f"unknown fault {kind!r}; expected one of {FAULTS + STREAM_FAULTS}")
        with self._lock:
            self._faults.extend(_Fault(kind, retry_after) for _ in range(times))

    def reset(self) -> None:
        """Forget the request log, counters and scripted faults (knobs stay)."""
        with self._lock:
            self._faults.clear()
            self.requests.clear()
            self.in_flight = 0
            self.max_in_flight = 0
        self.always_fail = None

    def stream_at(self, tokens_per_second: float) -> None:
        """Stream replies at this many pieces (about a token each) a second; 0 sends them at once."""
        self.stream_chunk_delay = 1 / tokens_per_second if tokens_per_second > 0 else 0.0

    def release(self) -> None:
        """Let streamed replies paused by `pause_after` go on (see `pause_after`)."""
        self._released.set()

    def outcomes(self) -> list[str]:
        return [r.outcome for r in self.requests]

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("the server is not running")
        return f"http://{self.host}:{self.port}/v1"

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self) -> str:
        """Listen on a free port of 127.0.0.1; returns the base URL (ending in /v1)."""
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle_chat)
        app.router.add_get("/v1/models", self._handle_models)
        self._stopping = asyncio.Event()
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.2)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self.base_url

    async def stop(self) -> None:
        if self._stopping is not None:
            self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeLLMServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @contextlib.contextmanager
    def running_in_thread(self) -> Iterator[FakeLLMServer]:
        """Run the server on its own event loop in a daemon thread, for synchronous callers."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="fake-llm-server", daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.start(), loop).result(timeout=10)
            yield self
        finally:
            asyncio.run_coroutine_threadsafe(self.stop(), loop).result(timeout=10)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)
            loop.close()

    # ---- handlers --------------------------------------------------------------------------

    async def _handle_models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

    def _next_fault(self) -> _Fault | None:
        with self._lock:
            if self._faults:
                return self._faults.popleft()
        return _Fault(self.always_fail) if self.always_fail else None

    def _record(self, body: dict[str, Any], retry_count: int = 0) -> RecordedRequest:
        with self._lock:
            record = RecordedRequest(
                index=len(self.requests),
                received_at=time.monotonic(),
                body=body,
                stream=bool(body.get("stream")),
                retry_count=retry_count,
            )
            self.requests.append(record)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        return record

    def _finish(self, record: RecordedRequest, outcome: str) -> None:
        with self._lock:
            record.outcome = outcome
            record.finished_at = time.monotonic()
            self.in_flight -= 1

    async def _handle_chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return web.json_response({"error": {"message": "request body is not JSON"}}, status=400)
        record = self._record(body, int(request.headers.get("x-stainless-retry-count", 0)))
        outcome = "ok"
        refused = next((p for p in sorted(self.unsupported_params) if p in body), None)
        if refused is not None:
            self._finish(record, "400")
            message = f"Unsupported parameter: '{refused}' is not supported with this model."
            error = {"error": {"message": message, "type": "invalid_request_error", "param": refused}}
            return web.json_response(error, status=400)
        try:
            fault = self._next_fault()
            if self.delay:
                await asyncio.sleep(self.delay)
            if fault is not None:
                outcome = fault.kind
                response = await self._fault_response(request, record, fault)
                if response is not None:
                    return response
            return await self._reply(request, record, truncate=outcome == "truncated", fault=outcome)
        finally:
            self._finish(record, outcome)

    async def _fault_response(
        self, request: web.Request, record: RecordedRequest, fault: _Fault
    ) -> web.StreamResponse | None:
        """The response for a scripted fault, or None when the fault shapes the normal reply."""
        if fault.kind in STREAM_FAULTS:
            return await self._stream_fault(request, record, fault)
        if fault.kind == "429":
            headers = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
            error = {"error": {"message": "Rate limit reached.", "type": "rate_limit_exceeded"}}
            return web.json_response(error, status=429, headers=headers)
        if fault.kind in ("500", "503"):
            error = {"error": {"message": "The server had an error.", "type": "server_error"}}
            return web.json_response(error, status=int(fault.kind))
        if fault.kind == "401":
            error = {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error"}}
            return web.json_response(error, status=401)
        if fault.kind == "hang":
            assert self._stopping is not None
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.hang_seconds)
            return web.json_response({"error": {"message": "hung"}}, status=504)
        if fault.kind == "malformed":
            return web.Response(
                text='{"id": "chatcmpl-x", "choices": [{"mess', content_type="application/json"
            )
        if fault.kind == "empty":
            return web.json_response({"id": "chatcmpl-x", "object": "chat.completion", "choices": []})
        return None  # "truncated": the reply starts normally and is cut off

    async def _stream_fault(
        self, request: web.Request, record: RecordedRequest, fault: _Fault
    ) -> web.StreamResponse | None:
        """A streamed request's fault; None (a normal reply) for a plain request or a fault shaping the stream."""
        if not record.stream or fault.kind in ("cut_early", "stall"):
            return None
        if fault.kind == "no_stream":
            message = "Streaming is not supported by this server."
            return web.json_response({"error": {"message": message, "param": "stream"}}, status=400)
        record.stream = False  # "plain": the whole reply as one JSON body, `stream` ignored
        return await self._reply(request, record, truncate=False)

    def _usage(self, body: dict[str, Any], text: str) -> dict[str, int]:
        prompt = sum(len(str(m.get("content", ""))) for m in body.get("messages") or []) // 4 + 1
        completion = len(text) // 4 + 1
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    async def _reply(
        self, request: web.Request, record: RecordedRequest, truncate: bool, fault: str = "ok"
    ) -> web.StreamResponse:
        text = self.responder(record.body)
        model = record.model or "fake-model"
        if record.stream:
            return await self._stream_reply(request, record, text, model, truncate, fault)
        if truncate:  # a body cut off mid-way: the connection closes before the JSON ends
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            response.content_length = 400
            await response.prepare(request)
            await response.write(b'{"id": "chatcmpl-x", "object": "chat.completion", "cho')
            if request.transport is not None:
                request.transport.close()
            return response
        payload: dict[str, Any] = {
            "id": f"chatcmpl-{record.index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": self.finish_reason,
                }
            ],
        }
        if self.include_usage:
            payload["usage"] = self._usage(record.body, text)
        return web.json_response(payload)

    async def _stream_reply(
        self,
        request: web.Request,
        record: RecordedRequest,
        text: str,
        model: str,
        truncate: bool,
        fault: str = "ok",
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        pieces = re.findall(r"\S+\s*", text) or [text]
        if truncate or fault == "stall":
            pieces = pieces[: max(1, len(pieces) // 2)]
        if fault == "cut_early":
            pieces = []

        def event(delta: dict[str, Any], finish: str | None) -> bytes:
            chunk = {
                "id": f"chatcmpl-{record.index}",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return f"data: {json.dumps(chunk)}\n\n".encode()

        await response.write(event({"role": "assistant", "content": ""}, None))
        for sent, piece in enumerate(pieces):
            if sent == self.pause_after:
                await asyncio.to_thread(self._released.wait, self.hang_seconds)
            if self.stream_chunk_delay:
                await asyncio.sleep(self.stream_chunk_delay)
            if record.first_token_at is None:
                record.first_token_at = time.monotonic()
            await response.write(event({"content": piece}, None))
        if fault == "stall":  # stops sending without closing, until `hang_seconds` pass or the server stops
            assert self._stopping is not None
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.hang_seconds)
            truncate = True
        if truncate or fault == "cut_early":
            if request.transport is not None:
                request.transport.close()
            return response
        await response.write(event({}, self.finish_reason))
        if self.include_usage and (record.body.get("stream_options") or {}).get("include_usage"):
            usage_chunk = {
                "id": f"chatcmpl-{record.index}",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [],
                "usage": self._usage(record.body, text),
            }
            await response.write(f"data: {json.dumps(usage_chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response
