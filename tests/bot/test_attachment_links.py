"""The bot fetches only Discord's attachment links, follows no redirect, and stops at the size cap.

An attachment's link comes from a gateway event, or from the upload log (uploads.db) a restart resumes.
Whatever put another link there, the bot must not fetch 127.0.0.1 or a machine of its own network (what it
answers would be stored and quoted in answers). `from_discord` allows Discord's CDN over https and the
origin of the REST API the bot talks to (the tests' fake Discord serves its attachments there).
"""

from __future__ import annotations

import aiohttp
import pytest
from aiohttp import web

from bot.jobs import download, from_discord
from raptor_engine.errors import IngestError
from tests.bot.local_http import server

DISCORD_REST = "https://discord.com/api/v10"


async def secret(_: web.Request) -> web.Response:
    return web.Response(text="internal service: admin token 1234")


@pytest.mark.parametrize(
    "url",
    [
        "https://cdn.discordapp.com/attachments/1/2/a.md",
        "https://media.discordapp.net/attachments/1/2/a.md",
        "https://CDN.discordapp.com:443/attachments/1/2/a.md",
        "https://discord.com/api/v10/whatever",  # the REST origin the bot talks to
    ],
)
def test_discords_links_are_fetched(url):
    assert from_discord(url, DISCORD_REST)


@pytest.mark.parametrize(
    "url",
    [
        "http://cdn.discordapp.com/attachments/1/2/a.md",  # not https
        "https://cdn.discordapp.com:8443/attachments/1/2/a.md",
        "https://cdn.discordapp.com.evil.example/a.md",
        "https://evil.example/cdn.discordapp.com/a.md",
        "https://user@evil.example/a.md",
        "https://cdn.discordapp.com@127.0.0.1/a.md",
        "https://x@cdn.discordapp.com/a.md",
        "http://127.0.0.1:8080/a.md",
        "http://[::1]/a.md",
        "http://10.200.0.2:9000/a.md",
        "http://169.254.169.254/latest/meta-data/",
        "file:///etc/passwd",
        "https://discord.com:444/api",
        "https://cdn.discordapp.com:99999/a.md",
        "",
    ],
)
def test_other_links_are_not(url):
    assert not from_discord(url, DISCORD_REST)


async def test_a_link_to_a_local_service_is_not_fetched():
    async with server({"/secret": secret}) as (origin, asked):
        async with aiohttp.ClientSession() as session:
            with pytest.raises(IngestError, match="has a link that is not Discord's, so it was not downloaded"):
                await download(session, f"{origin}/secret", "notes.md", 10**6, DISCORD_REST)
    assert asked == []


async def test_a_redirect_from_discords_origin_is_not_followed():
    """The allowed origin answers with a redirect to a local service: the bot does not follow it."""
    async with server({"/secret": secret}) as (inside, inside_asked):

        async def moved(_: web.Request) -> web.Response:
            raise web.HTTPFound(f"{inside}/secret")

        async with server({"/cdn/a.md": moved}) as (origin, asked):
            async with aiohttp.ClientSession() as session:
                with pytest.raises(IngestError, match=r"could not be downloaded from Discord \(HTTP 302\)"):
                    await download(session, f"{origin}/cdn/a.md", "a.md", 10**6, origin)
    assert asked == ["/cdn/a.md"] and inside_asked == []


async def test_reading_stops_at_the_size_cap_whatever_the_server_says():
    """A server that streams 8 MB (no length given) to a 1 MB cap: refused once past the cap."""
    sent = []

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        try:
            for _ in range(128):
                await response.write(b"x" * 65536)
                sent.append(65536)
        except (ConnectionResetError, aiohttp.ClientConnectionResetError):
            pass
        return response

    async with server({"/cdn/big.md": endless}) as (origin, _):
        async with aiohttp.ClientSession() as session:
            with pytest.raises(IngestError, match="is larger than the 1.0 MB limit"):
                await download(session, f"{origin}/cdn/big.md", "big.md", 1 << 20, origin)
    print(f"server wrote {sum(sent) / 1048576:.1f} MB before the bot stopped reading")
