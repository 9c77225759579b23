"""The bot's commands are Cogs given the bot's services, and no module of the bot imports the client."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

from discord import app_commands

import bot
from bot.commands import AddFromMessageCog, AskCog, KnowledgeBaseCog
from bot.services import Services, services_of
from raptor_engine.engine import Engine

BOT_DIR = Path(bot.__file__).parent


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, relative ones as written ('.client'), type-only ones included."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_module_of_the_bot_imports_the_client():
    for path in sorted(BOT_DIR.glob("*.py")):
        if path.name in ("client.py", "__main__.py"):
            continue
        imported = imported_modules(path)
        assert not imported & {".client", "bot.client"}, f"{path.name} imports the client"


def test_the_engine_is_typed_in_the_services():
    hints = typing.get_type_hints(Services)
    assert hints["engine"] is Engine
    assert "bot" not in hints and "client" not in hints


async def test_setup_loads_the_commands_as_cogs_sharing_one_services_object(harness):
    client = harness.bot
    assert client.services is not None  # login ran setup_hook
    loaded = {type(cog) for cog in client.cogs.values()}
    assert loaded == {AskCog, KnowledgeBaseCog, AddFromMessageCog}
    assert all(cog.services is client.services for cog in client.cogs.values())
    assert services_of(client) is client.services and client.services.engine is harness.engine

    commands = {c.name: c for c in client.tree.get_commands()}
    assert set(commands) == {"ask", "kb", "Add to knowledge base"}
    kb = commands["kb"]
    assert isinstance(kb, app_commands.Group) and kb.guild_only
    assert {c.name for c in kb.commands} == {
        "add", "list", "remove", "clear", "tree", "status", "autoingest", "managers", "add-messages", "sync",
        "forget-me",
    }
    assert commands["ask"].guild_only and commands["Add to knowledge base"].guild_only

    await client.remove_cog(AddFromMessageCog.__cog_name__)  # unloading takes the context menu out
    assert "Add to knowledge base" not in {c.name for c in client.tree.get_commands()}
