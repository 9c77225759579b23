"""A small HTTP server on 127.0.0.1 for bot tests that download (attachments, slow or hostile links)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web


@asynccontextmanager
async def server(routes: dict[str, object]) -> AsyncIterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.1 with `routes`; yields its origin and the paths it was asked for."""
    asked: list[str] = []

    @web.middleware
    async def count(request: web.Request, handler: object) -> web.StreamResponse:
        asked.append(request.path)
        return await handler(request)  # type: ignore[operator]

    app = web.Application(middlewares=[count])
    for path, handler in routes.items():
        app.router.add_get(path, handler)  # type: ignore[arg-type]
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", asked
    finally:
        await runner.cleanup()
