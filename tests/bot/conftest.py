"""A fake Discord API on 127.0.0.1 for testing the bot with real discord.py objects.

REST calls go to an aiohttp app (discord.py is pointed at it by patching `discord.http.Route.BASE`);
gateway events are fed through the client's connection state (`client._connection.parse_*`, private
API, hence discord.py's pinned minor version). The fake enforces what tests must not get wrong:
Discord's length limits (400), expired interactions (404 10062 / 10015), missing permissions
(403 50013), rate limits (429 with retry_after), and it hides message text from a bot without the
message-content intent the way Discord does. A CDN route serves attachments and counts downloads.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import re
import time
import urllib.parse
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import discord
import pytest
import pytest_asyncio
import yarl
from aiohttp import web

from raptor_engine.config import Settings
from tests.unhurried import patience, unhurried_settings

APP_ID = 901
BOT_ID = 900
GUILD = 300
CHAN_A = 400
CHAN_B = 401
FORUM = 402
ALICE = 100  # may manage (Manage Messages)
BOB = 101  # plain member
CAROL = 102  # has the manager role only
MANAGER_ROLE = 350
ALL_PERMISSIONS = str(discord.Permissions.all().value)
MEMBER_PERMISSIONS = str(
    discord.Permissions(send_messages=True, read_message_history=True, use_application_commands=True).value
)
BOT_PERMISSIONS = str(
    discord.Permissions(
        send_messages=True,
        send_messages_in_threads=True,
        create_public_threads=True,
        read_message_history=True,
        embed_links=True,
        attach_files=True,
        use_application_commands=True,
    ).value
)
NOW = "2026-01-01T00:00:00+00:00"
ATTACHMENT_LIMIT = 10 * 1024 * 1024  # what interactions announce as attachment_size_limit
UPLOADS = "_uploads"  # where the fake keeps a request's uploaded files beside its JSON body

_counter = itertools.count(1)


def snowflake() -> int:
    """A realistic, unique snowflake (discord.py derives created_at from it)."""
    return discord.utils.time_snowflake(datetime.now(UTC)) + next(_counter) % 4096


def user_payload(uid: int, name: str, bot: bool = False) -> dict:
    return {
        "id": str(uid),
        "username": name,
        "discriminator": "0",
        "avatar": None,
        "bot": bot,
        "global_name": name,
    }


def member_payload(
    uid: int, name: str, roles: list[int] | None = None, permissions: str | None = None
) -> dict:
    data = {
        "user": user_payload(uid, name),
        "roles": [str(r) for r in roles or []],
        "joined_at": NOW,
        "deaf": False,
        "mute": False,
        "flags": 0,
    }
    if permissions is not None:
        data["permissions"] = permissions
    return data


def thread_payload(tid: int, parent: int, name: str, owner: int = BOT_ID, guild: int = GUILD) -> dict:
    return {
        "id": str(tid),
        "type": 11,
        "parent_id": str(parent),
        "guild_id": str(guild),
        "name": name,
        "owner_id": str(owner),
        "message_count": 0,
        "member_count": 1,
        "rate_limit_per_user": 0,
        "flags": 0,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": NOW,
            "locked": False,
        },
    }


def J(data: Any, status: int = 200, headers: dict | None = None) -> web.Response:
    response = web.Response(body=json.dumps(data).encode(), status=status)
    response.headers["Content-Type"] = "application/json"  # discord.py wants exactly this
    for k, v in (headers or {}).items():
        response.headers[k] = v
    return response


def error(status: int, code: int, message: str) -> web.Response:
    return J({"code": code, "message": message}, status=status)


def embed_problems(embeds: list[dict]) -> list[str]:
    problems = []
    if len(embeds) > 10:
        problems.append("more than 10 embeds")
    total = 0
    for e in embeds:
        parts = {
            "title": (e.get("title") or "", 256),
            "description": (e.get("description") or "", 4096),
            "footer": ((e.get("footer") or {}).get("text") or "", 2048),
            "author": ((e.get("author") or {}).get("name") or "", 256),
        }
        for name, (text, limit) in parts.items():
            if len(text) > limit:
                problems.append(f"embed {name} {len(text)} > {limit}")
            total += len(text)
        fields = e.get("fields") or []
        if len(fields) > 25:
            problems.append("more than 25 fields")
        for f in fields:
            if len(f.get("name", "")) > 256 or len(f.get("value", "")) > 1024:
                problems.append("field too long")
            total += len(f.get("name", "")) + len(f.get("value", ""))
    if total > 6000:
        problems.append(f"embeds total {total} > 6000")
    return problems


def component_problems(rows: list[dict]) -> list[str]:
    problems = []
    if len(rows) > 5:
        problems.append("more than 5 rows")
    for row in rows:
        children = row.get("components", [])
        if len(children) > 5:
            problems.append("more than 5 buttons in a row")
        for c in children:
            if len(c.get("custom_id", "")) > 100:
                problems.append("custom_id > 100")
            if len(c.get("label", "") or "") > 80:
                problems.append("label > 80")
    return problems


def message_problems(body: dict, creating: bool) -> list[str]:
    problems = []
    content = body.get("content")
    if content is not None and len(content) > 2000:
        problems.append(f"content {len(content)} > 2000")
    problems += embed_problems(body.get("embeds") or [])
    problems += component_problems(body.get("components") or [])
    if creating and not (content or body.get("embeds") or body.get("attachments") or body.get("components")):
        problems.append("empty message")
    return problems


def guild_payload(guild: int = GUILD, channels: tuple[int, int, int] = (CHAN_A, CHAN_B, FORUM)) -> dict:
    """A test guild as GUILD_CREATE carries it: two text channels, a forum, a manager role."""
    chan_a, chan_b, forum = channels
    role = {
        "color": 0,
        "hoist": False,
        "managed": False,
        "mentionable": False,
        "permissions": MEMBER_PERMISSIONS,
    }
    return {
        "id": str(guild),
        "name": "guild",
        "unavailable": False,
        "member_count": 3,
        "roles": [
            dict(role, id=str(guild), name="@everyone", position=0),
            dict(role, id=str(MANAGER_ROLE), name="KB Managers", position=1),
        ],
        "emojis": [],
        "members": [],
        "channels": [
            {"id": str(chan_a), "type": 0, "name": "docs-a", "position": 0, "permission_overwrites": []},
            {"id": str(chan_b), "type": 0, "name": "docs-b", "position": 1, "permission_overwrites": []},
            {
                "id": str(forum),
                "type": 15,
                "name": "forum",
                "position": 2,
                "permission_overwrites": [],
                "available_tags": [],
                "flags": 0,
            },
        ],
        "threads": [],
        "features": [],
        "owner_id": "1",
    }


@dataclass
class Call:
    method: str
    path: str
    body: dict
    status: int
    at: float = field(default_factory=time.monotonic)  # when the fake answered it


@dataclass
class TokenInfo:
    interaction_id: int
    channel_id: int
    responded: bool = False
    original_id: int | None = None
    component_message_id: int | None = None
    followups: list[int] = field(default_factory=list)
    autocomplete: list[dict] | None = None


class FakeDiscord:
    """The REST side of Discord, in memory. Messages keep every version their content went through."""

    def __init__(self) -> None:
        self.base = ""
        self.calls: list[Call] = []
        self.messages: dict[int, dict] = {}
        self.versions: dict[int, list[str]] = {}
        self.files: dict[str, bytes] = {}
        self.cdn_hits: list[str] = []
        self.tokens: dict[str, TokenInfo] = {}
        self.expired: set[str] = set()
        self.expire_after_callback: set[str] = set()
        self.forbidden: list[tuple[str, re.Pattern[str]]] = []
        self.rate_limits: list[tuple[str, re.Pattern[str]]] = []
        self.rejections: list[tuple[str, str, list[str]]] = []
        self.synced: dict[str, list[dict]] = {}
        self.on_thread_created: Any = None
        self.identify: dict | None = None  # what the bot sent to the gateway (the last IDENTIFY)
        self.gateway_closed: int | None = None  # the close code the bot used
        self.refuse_privileged = False  # close with 4014, as Discord does for intents not enabled
        # sharding: what GET /gateway/bot recommends, the guilds, one connection per shard
        self.recommended_shards = 1
        self.max_concurrency = 1
        self.guilds: dict[int, dict] = {GUILD: guild_payload()}
        self.shards: dict[int, tuple[web.WebSocketResponse, itertools.count]] = {}  # shard id -> socket, seq
        self.shard_count: int | None = None  # as the bots identified
        self.identifies: list[tuple[float, int]] = []  # (time, shard id) of every IDENTIFY
        self.identify_too_fast: list[str] = []  # IDENTIFYs Discord would refuse: same bucket within 5 s
        self.resumes: list[int] = []  # shards that resumed their session (RESUME, op 6)
        self.deleted_channels: set[int] = set()  # channels and threads that answer 404 Unknown Channel
        self.archived_threads: dict[int, list[dict]] = {}  # forum id -> its archived posts (threads)
        self.threads_made: dict[int, dict] = {}  # threads the bot opened, as GET channels/{id} answers
        self.held: set[str] = set()  # CDN keys whose download stalls (no byte sent) until release_held is set
        self.release_held = asyncio.Event()

    # ------------------------------------------------------------------ test-side helpers

    def add_file(
        self, name: str, data: bytes, *, size: int | None = None, content_type: str = "text/plain"
    ) -> dict:
        key = f"{len(self.files)}-{name}"
        self.files[key] = data
        return {
            "id": str(snowflake()),
            "filename": name,
            "size": len(data) if size is None else size,
            "content_type": content_type,
            "url": f"{self.base}/cdn/{urllib.parse.quote(key)}",
            "proxy_url": f"{self.base}/cdn/{urllib.parse.quote(key)}",
        }

    def forbid(self, method: str, path_regex: str) -> None:
        self.forbidden.append((method, re.compile(path_regex)))

    def rate_limit_once(self, method: str, path_regex: str) -> None:
        self.rate_limits.append((method, re.compile(path_regex)))

    def channel_messages(self, channel_id: int) -> list[dict]:
        return [m for m in self.messages.values() if int(m["channel_id"]) == channel_id]

    def original(self, token: str) -> dict | None:
        info = self.tokens[token]
        return self.messages.get(info.original_id) if info.original_id else None

    def followups(self, token: str) -> list[dict]:
        return [self.messages[i] for i in self.tokens[token].followups]

    def replies(self, token: str) -> list[dict]:
        """The original response then the follow-ups of one interaction."""
        first = self.original(token)
        return ([first] if first else []) + self.followups(token)

    def calls_to(self, method: str, pattern: str) -> list[Call]:
        rx = re.compile(pattern)
        return [c for c in self.calls if c.method == method and rx.search(c.path)]

    async def wait_for(self, predicate: Any, timeout: float = 90.0, what: str = "condition") -> Any:
        """Poll until `predicate()` (plain or async) is truthy; fail the test with `what` after `timeout`
        seconds of an idle machine: a guard against a hang, so on a busy one it waits `patience()` times
        longer (read again at each poll)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        while True:
            value = predicate()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            if loop.time() - started > timeout * patience():
                raise AssertionError(f"timed out waiting for {what}; last calls: {self.calls[-5:]}")
            await asyncio.sleep(0.02)

    async def replies_done(self, token: str, predicate: Any = None, what: str = "replies") -> list[dict]:
        """Wait until the interaction's original response is no longer 'thinking' (and `predicate` holds)."""

        def ready() -> Any:
            info = self.tokens[token]
            original = self.original(token)
            if not info.responded:
                return None
            if original is not None and original["flags"] & 128:
                return None
            if original is None and info.original_id and not info.followups:
                return None  # a public 'thinking…' withdrawn for a private sentence that is on its way
            replies = self.replies(token)
            if predicate is not None and not predicate(replies):
                return None
            return replies or [{}]

        return await self.wait_for(ready, what=what)

    def interaction(
        self,
        itype: int,
        data: dict,
        channel: dict,
        user: int,
        *,
        guild: int = GUILD,
        permissions: str | None = None,
        roles: list[int] | None = None,
        app_permissions: str = BOT_PERMISSIONS,
        message: dict | None = None,
    ) -> tuple[str, dict]:
        """An INTERACTION_CREATE payload whose token this fake will answer; (token, payload)."""
        iid = snowflake()
        token = f"tok-{iid}"
        self.tokens[token] = TokenInfo(iid, int(channel["id"]))
        if message is not None:
            self.tokens[token].component_message_id = int(message["id"])
        names = {ALICE: "alice", BOB: "bob", CAROL: "carol"}
        if permissions is None:
            permissions = ALL_PERMISSIONS if user == ALICE else MEMBER_PERMISSIONS
        payload = {
            "id": str(iid),
            "application_id": str(APP_ID),
            "type": itype,
            "token": token,
            "version": 1,
            "guild_id": str(guild),
            "channel_id": channel["id"],
            "channel": channel,
            "member": member_payload(user, names.get(user, f"user{user}"), roles, permissions),
            "locale": "en-US",
            "guild_locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {},
            "app_permissions": app_permissions,
            "attachment_size_limit": ATTACHMENT_LIMIT,
            "data": data,
        }
        if message is not None:
            payload["message"] = message
        return token, payload

    # ------------------------------------------------------------------ message store

    def _store(
        self, channel_id: int, body: dict, *, author: dict | None = None, flags: int = 0, **extra: Any
    ) -> dict:
        mid = snowflake()
        message = {
            "id": str(mid),
            "channel_id": str(channel_id),
            "guild_id": str(self.guild_of_channel(channel_id)),
            "author": author or user_payload(BOT_ID, "raptor", True),
            "content": body.get("content") or "",
            "timestamp": NOW,
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": self._attachments(body.get(UPLOADS) or []),
            "embeds": body.get("embeds") or [],
            "components": body.get("components") or [],
            "pinned": False,
            "type": 0,
            "flags": flags | (body.get("flags") or 0),
            "allowed_mentions": body.get("allowed_mentions"),
        }
        message.update(extra)
        self.messages[mid] = message
        self.versions[mid] = [message["content"]]
        return message

    def _edit(self, mid: int, body: dict) -> dict:
        message = self.messages[mid]
        for key in ("content", "embeds", "components"):
            if key in body:
                message[key] = body[key] if body[key] is not None else ([] if key != "content" else "")
        if "attachments" in body:  # kept ones are named by id; new uploads come as files[n]
            kept = {str(a.get("id")) for a in body["attachments"] or []}
            message["attachments"] = [a for a in message["attachments"] if a["id"] in kept]
            message["attachments"] += self._attachments(body.get(UPLOADS) or [])
        message["flags"] = message["flags"] & ~128  # no longer 'thinking'
        message["edited_timestamp"] = NOW
        message["allowed_mentions"] = body.get("allowed_mentions", message.get("allowed_mentions"))
        self.versions[mid].append(message["content"])
        return message

    # ------------------------------------------------------------------ HTTP

    async def handle(self, request: web.Request) -> web.Response:
        body: dict = {}
        uploads: list[dict] = []
        if request.can_read_body:
            if request.content_type.startswith("multipart"):
                async for part in await request.multipart():
                    if part.name == "payload_json":
                        body = json.loads(await part.text())
                    elif part.filename:  # files[n], as discord.py sends attachments
                        uploads.append({"filename": part.filename, "data": bytes(await part.read())})
            else:
                text = await request.text()
                body = json.loads(text) if text else {}
        path = request.match_info["tail"]
        if uploads:
            body[UPLOADS] = uploads
        response = (
            self._injected(request.method, path)
            or self._too_large(uploads)
            or await self._route(request.method, path, body, request.query)
        )
        self.calls.append(Call(request.method, path, body, response.status))
        return response

    def _too_large(self, uploads: list[dict]) -> web.Response | None:
        """Discord refuses a file over the attachment limit (the interactions' attachment_size_limit)."""
        if any(len(u["data"]) > ATTACHMENT_LIMIT for u in uploads):
            self.rejections.append(("POST", "upload", [f"attachment over {ATTACHMENT_LIMIT} bytes"]))
            return error(413, 40005, "Request entity too large")
        return None

    def _attachments(self, uploads: list[dict]) -> list[dict]:
        """Uploaded files as message attachments, served by the fake CDN like any other file."""
        out = []
        for upload in uploads:
            key = f"{len(self.files)}-{upload['filename']}"
            self.files[key] = upload["data"]
            out.append(
                {
                    "id": str(snowflake()),
                    "filename": upload["filename"],
                    "size": len(upload["data"]),
                    "content_type": "image/png"
                    if upload["filename"].endswith(".png")
                    else "application/octet-stream",
                    "url": f"{self.base}/cdn/{key}",
                    "proxy_url": f"{self.base}/cdn/{key}",
                }
            )
        return out

    def attachment_bytes(self, message: dict) -> dict[str, bytes]:
        """A message's attachments by file name, read back from the fake CDN's store."""
        return {
            a["filename"]: self.files[a["url"].rsplit("/cdn/", 1)[1]]
            for a in message.get("attachments") or []
        }

    def _injected(self, method: str, path: str) -> web.Response | None:
        for rule in list(self.rate_limits):
            if rule[0] == method and rule[1].search(path):
                self.rate_limits.remove(rule)
                return J(
                    {"message": "You are being rate limited.", "retry_after": 0.05, "global": False},
                    status=429,
                    headers={"Via": "1.1 google", "X-RateLimit-Scope": "user"},
                )
        for m, rx in self.forbidden:
            if m == method and rx.search(path):
                return error(403, 50013, "Missing Permissions")
        return None

    def _invalid(self, method: str, path: str, body: dict, creating: bool) -> web.Response | None:
        problems = message_problems(body, creating)
        if path.endswith("/threads") and len(body.get("name", "")) > 100:
            problems.append("thread name > 100")
        if problems:
            self.rejections.append((method, path, problems))
            return error(400, 50035, "Invalid Form Body: " + "; ".join(problems))
        return None

    async def _route(self, method: str, path: str, body: dict, query: Any = None) -> web.Response:
        seg = path.split("/")
        if path == "gateway/bot":
            return J(self.gateway_bot())
        if path == "users/@me":
            return J(user_payload(BOT_ID, "raptor", True))
        if path == "oauth2/applications/@me":
            return J(
                {
                    "id": str(APP_ID),
                    "name": "raptor",
                    "icon": None,
                    "description": "",
                    "bot_public": True,
                    "bot_require_code_grant": False,
                    "verify_key": "k",
                    "flags": 0,
                    "owner": user_payload(1, "owner"),
                }
            )
        if seg[0] == "applications" and seg[-1] == "commands" and method == "PUT":
            scope = "global" if len(seg) == 3 else f"guild-{seg[3]}"
            synced = [
                {
                    "description": "",
                    **c,
                    "id": str(snowflake()),
                    "application_id": str(APP_ID),
                    "version": "1",
                }
                for c in body
            ]
            self.synced[scope] = synced
            return J(synced)
        if seg[0] == "interactions":
            return self._interaction_callback(seg[1], seg[2], body)
        if seg[0] == "webhooks":
            return self._webhook(method, seg[2], seg[3:], body)
        if seg[0] == "channels":
            return self._channel(method, int(seg[1]), seg[2:], body, query)
        return error(404, 0, f"fake Discord has no route {method} {path}")

    def _interaction_callback(self, iid: str, token: str, body: dict) -> web.Response:
        info = self.tokens.get(token)
        if info is None or token in self.expired:
            return error(404, 10062, "Unknown interaction")
        if info.responded:
            return error(400, 40060, "Interaction has already been acknowledged.")
        kind = body.get("type")
        data = dict(body.get("data") or {}, **({UPLOADS: body[UPLOADS]} if UPLOADS in body else {}))
        ephemeral = bool((data.get("flags") or 0) & 64)
        message = None
        if kind in (4, 5):
            if kind == 4 and (bad := self._invalid("POST", "callback", data, True)):
                return bad
            message = self._store(
                info.channel_id,
                data if kind == 4 else {},
                flags=(64 if ephemeral else 0) | (128 if kind == 5 else 0),
                webhook_id=str(APP_ID),
            )
            info.original_id = int(message["id"])
        elif kind == 7:
            if bad := self._invalid("PATCH", "callback", data, False):
                return bad
            assert info.component_message_id is not None
            message = self._edit(info.component_message_id, data)
            info.original_id = info.component_message_id  # @original now means the clicked message
        elif kind == 6:
            info.original_id = info.component_message_id
        elif kind == 8:
            info.autocomplete = data.get("choices", [])
        info.responded = True
        if token in self.expire_after_callback:
            self.expired.add(token)
        interaction = {
            "id": iid,
            "type": 2,
            "response_message_loading": kind == 5,
            "response_message_ephemeral": ephemeral,
        }
        if message is not None:
            interaction["response_message_id"] = message["id"]
        resource: dict = {"type": kind}
        if message is not None:
            resource["message"] = message
        return J({"interaction": interaction, "resource": resource})

    def _webhook(self, method: str, token: str, rest: list[str], body: dict) -> web.Response:
        info = self.tokens.get(token)
        if info is None or token in self.expired:
            return error(404, 10015, "Unknown Webhook")
        if not rest and method == "POST":
            if bad := self._invalid(method, "webhook", body, True):
                return bad
            original = self.messages.get(info.original_id or 0)
            if original is not None and original["flags"] & 128:  # the first follow-up fills 'thinking…'
                return J(self._edit(info.original_id, body))
            message = self._store(info.channel_id, body, webhook_id=str(APP_ID))
            info.followups.append(int(message["id"]))
            return J(message)
        if len(rest) == 2 and rest[0] == "messages":
            mid = info.original_id if rest[1] == "@original" else int(rest[1])
            if mid is None or mid not in self.messages:
                return error(404, 10008, "Unknown Message")
            if method == "GET":
                return J(self.messages[mid])
            if method == "PATCH":
                if bad := self._invalid(method, "webhook", body, False):
                    return bad
                return J(self._edit(mid, body))
            if method == "DELETE":
                del self.messages[mid]
                return web.Response(status=204)
        return error(404, 0, f"fake Discord has no webhook route {method} {rest}")

    # ------------------------------------------------------------------ channel history (members' messages)

    def post(
        self,
        channel_id: int,
        content: str,
        *,
        user: int = ALICE,
        name: str | None = None,
        when: datetime | None = None,
        bot: bool = False,
        pinned: bool = False,
        attachments: list[dict] | None = None,
        mtype: int = 0,
        guild: int = GUILD,
    ) -> dict:
        """A member's message already in a channel's history (no gateway event: see Harness.say)."""
        moment = when or datetime.now(UTC)
        mid = discord.utils.time_snowflake(moment) + next(_counter) % 4096
        names = {ALICE: "alice", BOB: "bob", CAROL: "carol"}
        message = {
            "id": str(mid),
            "channel_id": str(channel_id),
            "guild_id": str(guild),
            "author": user_payload(user, name or names.get(user, f"user{user}"), bot),
            "member": {"roles": [], "joined_at": NOW, "deaf": False, "mute": False, "flags": 0},
            "content": content,
            "timestamp": moment.isoformat(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": attachments or [],
            "embeds": [],
            "components": [],
            "pinned": pinned,
            "type": mtype,
            "flags": 0,
        }
        self.messages[mid] = message
        self.versions[mid] = [content]
        return message

    def history(self, channel_id: int, query: Any) -> list[dict]:
        """GET /channels/{id}/messages as Discord answers it: at most `limit` (100) messages, newest first;
        with `after`, the ones right after it; with `before`, the ones right before it."""
        limit = min(int(query.get("limit", 50)), 100)
        ordered = sorted(self.channel_messages(channel_id), key=lambda m: int(m["id"]))
        if "after" in query:
            return list(reversed([m for m in ordered if int(m["id"]) > int(query["after"])][:limit]))
        if "before" in query:
            ordered = [m for m in ordered if int(m["id"]) < int(query["before"])]
        return list(reversed(ordered[-limit:]))

    def pins(self, channel_id: int) -> dict:
        pinned = [m for m in self.channel_messages(channel_id) if m.get("pinned")]
        items = [{"pinned_at": NOW, "message": m} for m in sorted(pinned, key=lambda m: -int(m["id"]))]
        return {"items": items, "has_more": False}

    def _channel(
        self, method: str, channel_id: int, rest: list[str], body: dict, query: Any = None
    ) -> web.Response:
        if rest == ["typing"]:
            return web.Response(status=204)
        if channel_id in self.deleted_channels:
            return error(404, 10003, "Unknown Channel")
        if not rest and method == "GET" and channel_id in self.threads_made:
            return J(self.threads_made[channel_id])
        if rest == ["messages"] and method == "GET":
            return J(self.history(channel_id, query or {}))
        if rest == ["messages", "pins"] and method == "GET":
            return J(self.pins(channel_id))
        if rest == ["threads", "archived", "public"] and method == "GET":
            threads = self.archived_threads.get(channel_id, [])
            return J({"threads": threads, "members": [], "has_more": False})
        if rest == ["messages"] and method == "POST":
            if bad := self._invalid(method, "channel", body, True):
                return bad
            extra = {}
            if body.get("message_reference"):
                extra["message_reference"] = body["message_reference"]
            return J(self._store(channel_id, body, **extra))
        if len(rest) == 2 and rest[0] == "messages":
            mid = int(rest[1])
            if mid not in self.messages:
                return error(404, 10008, "Unknown Message")
            if method == "PATCH":
                if bad := self._invalid(method, "channel", body, False):
                    return bad
                return J(self._edit(mid, body))
            if method == "GET":
                return J(self.messages[mid])
            if method == "DELETE":
                del self.messages[mid]
                return web.Response(status=204)
        if rest and rest[-1] == "threads" and method == "POST":
            if bad := self._invalid(method, "/threads", {"name": body.get("name", "")}, False):
                return bad
            # a thread started from a message has that message's id, as on Discord
            tid = int(rest[1]) if len(rest) == 3 and rest[0] == "messages" else snowflake()
            thread = thread_payload(tid, channel_id, body["name"], guild=self.guild_of_channel(channel_id))
            self.threads_made[int(thread["id"])] = thread
            if self.on_thread_created is not None:
                self.on_thread_created(dict(thread, newly_created=True))
            return J(thread)
        return error(404, 0, f"fake Discord has no channel route {method} {rest}")

    # ------------------------------------------------------------------ gateway (sharded)

    def guild_of_channel(self, channel_id: int) -> int:
        for gid, guild in self.guilds.items():
            if any(int(c["id"]) == channel_id for c in guild["channels"]):
                return gid
        return GUILD

    def shard_of(self, guild_id: int) -> int:
        """Discord's routing: a guild's events go to shard (guild_id >> 22) % shard_count."""
        return (guild_id >> 22) % (self.shard_count or 1)

    def gateway_bot(self) -> dict:
        """GET /gateway/bot: the gateway URL, the recommended shard count and the session start limits."""
        return {
            "url": self.base.replace("http://", "ws://") + "/gateway/",
            "shards": self.recommended_shards,
            "session_start_limit": {
                "total": 1000,
                "remaining": 999,
                "reset_after": 14_400_000,
                "max_concurrency": self.max_concurrency,
            },
        }

    def _check_identify_rate(self, shard_id: int) -> None:
        """Discord allows one IDENTIFY per 5 s per bucket (shard_id % max_concurrency)."""
        now = time.monotonic()
        bucket = shard_id % self.max_concurrency
        for at, other in self.identifies:
            if other % self.max_concurrency == bucket and now - at < 5.0:
                self.identify_too_fast.append(f"shard {shard_id} {now - at:.2f} s after shard {other}")
        self.identifies.append((now, shard_id))

    async def ask_to_reconnect(self, shard_id: int = 0) -> None:
        """Discord's RECONNECT (op 7): the shard closes its connection and resumes its session on a new
        one; events sent meanwhile wait for it (the shard is gone from `shards` until it resumes)."""
        ws, _ = self.shards.pop(shard_id)
        await ws.send_json({"op": 7, "d": None})

    async def dispatch(self, guild_id: int, event: str, data: dict) -> None:
        """Send a gateway event on the connection of the shard that owns the guild, as Discord does."""
        ws, seq = self.shards[self.shard_of(guild_id)]
        await ws.send_json({"op": 0, "t": event, "s": next(seq), "d": data})

    async def gateway(self, request: web.Request) -> web.WebSocketResponse:
        """Enough of the gateway for a shard to connect, identify, get READY and its guilds, and close."""
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_json({"op": 10, "d": {"heartbeat_interval": 45_000}})
        seq = itertools.count(1)
        shard_id: int | None = None
        async for frame in ws:
            payload = json.loads(frame.data)
            if payload["op"] == 1:
                await ws.send_json({"op": 11})
            elif payload["op"] == 2:
                self.identify = payload["d"]
                if self.refuse_privileged and payload["d"]["intents"] & (1 << 15):
                    await ws.close(code=4014, message=b"Disallowed intent(s).")
                    break
                shard_id, self.shard_count = payload["d"].get("shard") or [0, 1]
                if shard_id in self.shards:  # Discord closes a second session of one shard
                    await ws.close(code=4010, message=b"Invalid shard.")
                    break
                self._check_identify_rate(shard_id)
                self.shards[shard_id] = (ws, seq)
                owned = [g for gid, g in self.guilds.items() if self.shard_of(gid) == shard_id]
                ready = {
                    "v": 10,
                    "user": user_payload(BOT_ID, "raptor", True),
                    "guilds": [{"id": g["id"], "unavailable": True} for g in owned],
                    "session_id": f"session-{shard_id}",
                    "resume_gateway_url": str(request.url),
                    "shard": [shard_id, self.shard_count],
                    "application": {"id": str(APP_ID), "flags": 0},
                }
                for event, data in [("READY", ready)] + [("GUILD_CREATE", g) for g in owned]:
                    await ws.send_json({"op": 0, "t": event, "s": next(seq), "d": data})
            elif payload["op"] == 6:  # RESUME: the session goes on on this connection, as Discord does
                shard_id = int(payload["d"]["session_id"].removeprefix("session-"))
                self.resumes.append(shard_id)
                seq = itertools.count(int(payload["d"].get("seq") or 0) + 1)
                self.shards[shard_id] = (ws, seq)
                await ws.send_json({"op": 0, "t": "RESUMED", "s": next(seq), "d": {}})
        if shard_id is not None and self.shards.get(shard_id, (None,))[0] is ws:
            del self.shards[shard_id]
        self.gateway_closed = ws.close_code
        return ws

    async def cdn(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self.cdn_hits.append(name)
        if name in self.held:
            await self.release_held.wait()
        if name not in self.files:
            return web.Response(status=404)
        return web.Response(body=self.files[name], content_type="application/octet-stream")


# ---------------------------------------------------------------------------------------------- the harness


class Harness:
    """The bot under test, the fake API and helpers that play users and Discord's gateway."""

    def __init__(self, bot: Any, fake: FakeDiscord, engine: Any):
        self.bot = bot
        self.fake = fake
        self.engine = engine
        self.state = bot._connection
        self.completed: set[int] = set()  # interactions whose command handler has returned
        logged = bot.on_app_command_completion

        async def on_completion(interaction: discord.Interaction, command: Any) -> None:
            self.completed.add(interaction.id)
            await logged(interaction, command)

        bot.on_app_command_completion = on_completion  # discord.py dispatches to the instance attribute

    async def finished(self, token: str) -> None:
        """Wait until the command behind `token` has run to its end (threads opened, turns stored)."""
        interaction_id = self.fake.tokens[token].interaction_id
        await self.fake.wait_for(lambda: interaction_id in self.completed, what="the command to finish")

    # ------------------------------------------------------------------ guild set-up

    def create_guild(self) -> None:
        self.state.parse_guild_create(guild_payload())

    # ------------------------------------------------------------------ interactions

    def _interaction(
        self,
        itype: int,
        data: dict,
        channel_id: int,
        user: int,
        *,
        permissions: str | None = None,
        roles: list[int] | None = None,
        app_permissions: str = BOT_PERMISSIONS,
        message: dict | None = None,
    ) -> str:
        token, payload = self.fake.interaction(
            itype,
            data,
            self._channel_payload(channel_id),
            user,
            permissions=permissions,
            roles=roles,
            app_permissions=app_permissions,
            message=message,
        )
        self.state.parse_interaction_create(payload)
        return token

    def _channel_payload(self, channel_id: int) -> dict:
        guild = self.bot.get_guild(GUILD)
        channel = guild.get_channel_or_thread(channel_id) if guild else None
        if isinstance(channel, discord.Thread):
            return thread_payload(channel.id, channel.parent_id, channel.name, channel.owner_id or BOT_ID)
        ctype = 15 if channel_id == FORUM else 0
        return {"id": str(channel_id), "type": ctype, "guild_id": str(GUILD), "name": "chan"}

    def slash(
        self,
        name: str,
        options: list[dict] | None = None,
        *,
        sub: str | None = None,
        channel: int = CHAN_A,
        user: int = ALICE,
        attachments: list[dict] | None = None,
        itype: int = 2,
        **kwargs: Any,
    ) -> str:
        """Dispatch a slash command (`sub` for /kb subcommands); returns the interaction token."""
        options = list(options or [])
        if sub is not None:
            options = [{"name": sub, "type": 1, "options": options}]
        data: dict = {"id": str(snowflake()), "name": name, "type": 1, "options": options}
        if attachments:
            data["resolved"] = {"attachments": {a["id"]: a for a in attachments}}
        return self._interaction(itype, data, channel, user, **kwargs)

    def kb_add(self, *attachments: dict, channel: int = CHAN_A, user: int = ALICE, **kwargs: Any) -> str:
        names = ["file", "file2", "file3", "file4", "file5"]
        options = [
            {"name": n, "type": 11, "value": a["id"]} for n, a in zip(names, attachments, strict=False)
        ]
        return self.slash(
            "kb", options, sub="add", channel=channel, user=user, attachments=list(attachments), **kwargs
        )

    def ask(
        self,
        question: str,
        *,
        channel: int = CHAN_A,
        user: int = ALICE,
        private: bool = False,
        mode: str | None = None,
        **kwargs: Any,
    ) -> str:
        options = [{"name": "question", "type": 3, "value": question}]
        if private:
            options.append({"name": "private", "type": 5, "value": True})
        if mode:
            options.append({"name": "mode", "type": 3, "value": mode})
        return self.slash("ask", options, channel=channel, user=user, **kwargs)

    def add_messages(
        self,
        source: int | None = None,
        *,
        limit: int | None = None,
        after: str | None = None,
        channel: int = CHAN_A,
        user: int = ALICE,
        **kwargs: Any,
    ) -> str:
        """/kb add-messages [channel] [limit] [after], the channel option resolved as Discord sends it."""
        options: list[dict] = []
        resolved: dict = {}
        if source is not None:
            ctype = 15 if source == FORUM else 0
            options.append({"name": "channel", "type": 7, "value": str(source)})
            resolved["channels"] = {
                str(source): {"id": str(source), "type": ctype, "name": "src", "permissions": "0"}
            }
        if limit is not None:
            options.append({"name": "limit", "type": 4, "value": limit})
        if after is not None:
            options.append({"name": "after", "type": 3, "value": after})
        data: dict = {
            "id": str(snowflake()),
            "name": "kb",
            "type": 1,
            "options": [{"name": "add-messages", "type": 1, "options": options}],
        }
        if resolved:
            data["resolved"] = resolved
        return self._interaction(2, data, channel, user, **kwargs)

    def context_menu(self, message: dict, *, channel: int = CHAN_A, user: int = ALICE, **kwargs: Any) -> str:
        data = {
            "id": str(snowflake()),
            "name": "Add to knowledge base",
            "type": 3,
            "target_id": message["id"],
            "resolved": {"messages": {message["id"]: message}},
        }
        return self._interaction(2, data, channel, user, **kwargs)

    def click(self, message: dict, custom_id: str, *, user: int = ALICE, channel: int | None = None) -> str:
        data = {"custom_id": custom_id, "component_type": 2}
        channel_id = channel if channel is not None else int(message["channel_id"])
        return self._interaction(3, data, channel_id, user, message=message)

    def autocomplete(
        self, sub: str, option: str, value: str, *, channel: int = CHAN_A, user: int = ALICE
    ) -> str:
        options = [{"name": option, "type": 3, "value": value, "focused": True}]
        return self.slash("kb", options, sub=sub, channel=channel, user=user, itype=4)

    # ------------------------------------------------------------------ gateway messages

    def user_message(
        self,
        channel_id: int,
        content: str,
        *,
        user: int = ALICE,
        mention_bot: bool = False,
        attachments: list[dict] | None = None,
        reply_to: int | None = None,
    ) -> dict:
        """A member's message as the gateway delivers it: text and files hidden without the intent;
        `reply_to` makes it a Discord reply to that message of the channel."""
        if mention_bot:
            content = f"<@{BOT_ID}> {content}"
        visible = self.bot.intents.message_content or mention_bot
        names = {ALICE: "alice", BOB: "bob", CAROL: "carol"}
        payload = {
            "id": str(snowflake()),
            "channel_id": str(channel_id),
            "guild_id": str(GUILD),
            "author": user_payload(user, names.get(user, "user")),
            "member": {"roles": [], "joined_at": NOW, "deaf": False, "mute": False, "flags": 0},
            "content": content if visible else "",
            "timestamp": NOW,
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [user_payload(BOT_ID, "raptor", True)] if mention_bot else [],
            "mention_roles": [],
            "attachments": (attachments or []) if visible else [],
            "embeds": [],
            "pinned": False,
            "type": 0,
            "flags": 0,
            "components": [],
        }
        if reply_to is not None:
            payload["type"] = 19  # a reply
            payload["message_reference"] = {
                "message_id": str(reply_to), "channel_id": str(channel_id), "guild_id": str(GUILD)
            }
        self.state.parse_message_create(payload)
        return payload

    def full_message(self, channel_id: int, content: str, attachments: list[dict], user: int = ALICE) -> dict:
        """A message as an interaction's resolved data carries it (never stripped)."""
        return {
            "id": str(snowflake()),
            "channel_id": str(channel_id),
            "author": user_payload(user, "alice"),
            "content": content,
            "timestamp": NOW,
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": attachments,
            "embeds": [],
            "pinned": False,
            "type": 0,
            "flags": 0,
            "components": [],
        }

    def direct_message(self, content: str, user: int = ALICE) -> dict:
        """A member's direct message to the bot, as the gateway delivers it: a message of a channel of no
        guild (DMs carry their text whatever the intents)."""
        payload = self.full_message(snowflake(), content, [], user)
        self.state.parse_message_create(payload)
        return payload

    # ------------------------------------------------------------------ channel history and its events

    def say(self, channel_id: int, content: str, **kwargs: Any) -> dict:
        """A member posts a message: it joins the history and MESSAGE_CREATE reaches the bot."""
        message = self.fake.post(channel_id, content, **kwargs)
        payload = dict(message)
        if not self.bot.intents.message_content:
            payload["content"] = ""
        self.state.parse_message_create(payload)
        return message

    def edit(self, message: dict, content: str) -> None:
        """A member edits a message: MESSAGE_UPDATE (the full message, as Discord sends it now)."""
        message["content"] = content
        message["edited_timestamp"] = datetime.now(UTC).isoformat()
        self.fake.versions[int(message["id"])].append(content)
        self.state.parse_message_update(dict(message))

    def delete(self, *messages: dict, dispatch: bool = True) -> None:
        """Members delete messages: one MESSAGE_DELETE, or MESSAGE_DELETE_BULK for several. With
        `dispatch` False the bot is not told (it was down)."""
        for message in messages:
            del self.fake.messages[int(message["id"])]
        if not dispatch:
            return
        channel_id, ids = messages[0]["channel_id"], [m["id"] for m in messages]
        if len(ids) == 1:
            self.state.parse_message_delete({"id": ids[0], "channel_id": channel_id, "guild_id": str(GUILD)})
        else:
            self.state.parse_message_delete_bulk(
                {"ids": ids, "channel_id": channel_id, "guild_id": str(GUILD)}
            )

    def open_thread(self, parent: int, name: str, *, owner: int = ALICE, archived: bool = False) -> int:
        """A thread (a forum post when `parent` is the forum) the bot knows: active ones are cached, as
        GUILD_CREATE and THREAD_CREATE deliver them; archived ones are listed by the archive route."""
        tid = snowflake()
        payload = thread_payload(tid, parent, name, owner=owner)
        if archived:
            payload["thread_metadata"]["archived"] = True
            self.fake.archived_threads.setdefault(parent, []).append(payload)
        else:
            self.state.parse_thread_create(dict(payload, newly_created=True))
        return tid

    def delete_thread(self, thread_id: int, parent: int, *, dispatch: bool = True) -> None:
        self.fake.deleted_channels.add(thread_id)
        if dispatch:
            self.state.parse_thread_delete(
                {"id": str(thread_id), "guild_id": str(GUILD), "parent_id": str(parent), "type": 11}
            )

    def delete_channel(self, channel_id: int, *, dispatch: bool = True) -> None:
        self.fake.deleted_channels.add(channel_id)
        if dispatch:
            self.state.parse_channel_delete(
                {"id": str(channel_id), "guild_id": str(GUILD), "type": 0, "name": "gone", "position": 0}
            )

    # ------------------------------------------------------------------ reading results

    async def replies_done(self, token: str, predicate: Any = None, what: str = "replies") -> list[dict]:
        return await self.fake.replies_done(token, predicate, what)


def text_of(message: dict) -> str:
    """Content plus embed titles, descriptions and footers, for assertions."""
    parts = [message.get("content") or ""]
    for e in message.get("embeds") or []:
        parts += [e.get("title") or "", e.get("description") or "", (e.get("footer") or {}).get("text") or ""]
    return "\n".join(parts)


FINISHED = ("Done", "Already here:", "Nothing added:")  # how a finished upload's header opens (done_header)


def upload_finished(message: dict) -> bool:
    """Whether an upload's status message is its final one, whatever became of its files."""
    return text_of(message).startswith(FINISHED)


def custom_ids(message: dict) -> list[str]:
    return [
        c["custom_id"]
        for row in message.get("components") or []
        for c in row.get("components", [])
        if "custom_id" in c
    ]


@pytest.fixture
def bot_settings(tmp_path):
    return unhurried_settings(
        data_dir=tmp_path / "data",
        ask_cooldown_seconds=0,
        max_file_bytes=100_000,
        max_concurrent_builds=2,
        build_workers=0,  # builds in the test's process; tests/bot/test_bot_workers.py uses a LocalCluster
    )


@pytest_asyncio.fixture
async def fake_api(monkeypatch):
    fake = FakeDiscord()
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/api/v10/{tail:.*}", fake.handle)
    app.router.add_get("/cdn/{name}", fake.cdn)
    app.router.add_get("/gateway/", fake.gateway)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    fake.base = f"http://127.0.0.1:{port}"
    monkeypatch.setattr(discord.http.Route, "BASE", fake.base + "/api/v10")
    monkeypatch.setattr(
        discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(f"ws://127.0.0.1:{port}/gateway/")
    )
    yield fake
    await runner.cleanup()


@pytest_asyncio.fixture
async def make_harness(fake_api, bot_settings, embedder):
    """Build a logged-in bot over a real Engine (real embedder, SQLite in tmp_path) against the fake API."""
    from bot.client import RaptorBot
    from raptor_engine.engine import Engine

    made: list[Harness] = []

    async def make(
        *, message_content: bool = False, settings: Settings | None = None, **engine_kwargs: Any
    ) -> Harness:
        settings = settings or bot_settings
        engine = Engine(settings, embedder=embedder, **engine_kwargs)
        bot = RaptorBot(settings, engine=engine, message_content=message_content, warm=False)
        await bot.login("fake-token")
        harness = Harness(bot, fake_api, engine)
        fake_api.on_thread_created = harness.state.parse_thread_create
        harness.create_guild()
        made.append(harness)
        return harness

    yield make
    for harness in made:
        if not harness.bot.is_closed():
            await harness.bot.close()
    problems = [c for c in fake_api.calls if c.status == 400]
    assert not fake_api.rejections, f"the bot sent messages Discord would refuse: {fake_api.rejections}"
    assert not problems, problems
    for call in fake_api.calls:  # AllowedMentions.none() on everything that carries text
        body = call.body if isinstance(call.body, dict) else {}
        if call.path.startswith("interactions/"):
            body = body.get("data") or {}
        if call.method in ("POST", "PATCH") and ("content" in body or "embeds" in body):
            mentions = body.get("allowed_mentions")
            assert mentions is not None and mentions.get("parse") == [], f"mentions not suppressed in {call}"


@pytest_asyncio.fixture
async def harness(make_harness):
    return await make_harness()
