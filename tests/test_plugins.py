"""Tooling joins the CLI through the `raptor.commands` entry points; the library imports nothing of ours."""

from __future__ import annotations

import ast
import logging
from importlib.metadata import EntryPoint
from pathlib import Path

import click
import pytest

import raptor_engine
from raptor_engine import plugins

OURS_OUTSIDE_THE_LIBRARY = {"raptor_tools", "bot", "tests", "benchmarks"}


def test_the_library_imports_nothing_of_ours_outside_itself():
    for path in sorted(Path(raptor_engine.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                top = {node.module.split(".")[0]}
            elif isinstance(node, ast.Import):
                top = {alias.name.split(".")[0] for alias in node.names}
            else:
                continue
            assert not top & OURS_OUTSIDE_THE_LIBRARY, f"{path.name}:{node.lineno} imports {top}"


def fake_entry_points(*specs: tuple[str, str]):
    points = [EntryPoint(name, value, plugins.GROUP) for name, value in specs]
    return lambda group: [p for p in points if p.group == group]


def test_registered_plugins_add_their_commands(monkeypatch):
    monkeypatch.setattr(
        plugins, "entry_points", fake_entry_points(("tools", "raptor_tools.commands:register_commands"))
    )
    group = click.Group("raptor")
    assert plugins.load_plugins(group) == ["tools"]
    assert {"bench", "eval", "robustness"} <= set(group.commands)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("raptor_no_such_package.hooks:register_commands", "ModuleNotFoundError"),
        ("raptor_tools.commands:no_such_function", "AttributeError"),
        ("raptor_engine.plugins:GROUP", "TypeError"),  # not callable
    ],
)
def test_a_missing_or_broken_plugin_is_one_log_line_not_a_crash(monkeypatch, caplog, value, error):
    monkeypatch.setattr(
        plugins,
        "entry_points",
        fake_entry_points(("broken", value), ("tools", "raptor_tools.commands:register_commands")),
    )
    group = click.Group("raptor")
    with caplog.at_level(logging.WARNING, logger="raptor_engine.plugins"):
        assert plugins.load_plugins(group) == ["tools"]
    assert "bench" in group.commands
    [record] = caplog.records
    assert "'broken'" in record.message and value in record.message and error in record.message
    assert "\n" not in record.getMessage()


def _cli_in_a_new_process(*args: str) -> list[str]:
    """Run `raptor ARGS` in a fresh interpreter; the last line says whether raptor_tools was imported."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from raptor_engine.cli import cli\n"
        "try:\n"
        f"    cli({list(args)!r}, prog_name='raptor')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('raptor_tools' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()


def test_a_built_in_command_loads_no_plugin():
    """`raptor ingest` (a cold start) pays for neither the entry points nor raptor_tools' imports."""
    lines = _cli_in_a_new_process("ingest", "--help")
    assert any("Usage: raptor ingest" in line for line in lines)
    assert lines[-1] == "False"


def test_a_plugins_command_and_the_command_list_load_the_plugins():
    bench = _cli_in_a_new_process("bench", "--help")
    assert any("Usage: raptor bench" in line for line in bench) and bench[-1] == "True"
    listing = _cli_in_a_new_process("--help")
    assert any(line.split()[:1] == ["eval"] for line in listing) and listing[-1] == "True"


def test_the_group_loads_its_plugins_once(monkeypatch):
    from raptor_engine.cli import RaptorGroup

    calls: list[click.Group] = []
    monkeypatch.setattr("raptor_engine.cli.load_plugins", lambda group: calls.append(group))
    group = RaptorGroup("raptor")
    context = click.Context(group)
    assert group.get_command(context, "nothing") is None and group.list_commands(context) == []
    assert calls == [group]


@pytest.mark.parametrize("first", ["list", "unknown name"])
def test_a_plugin_never_replaces_a_built_in_command(monkeypatch, caplog, first):
    """Whichever way the plugins load, a plugin's `ingest` is refused with a log line and the library's stays."""
    from raptor_engine.cli import RaptorGroup

    @click.command("ingest")
    def impostor() -> None:
        """A plugin's command named like a built-in one."""

    @click.command("extra")
    def extra() -> None:
        """A plugin's own command."""

    def register(group: click.Group) -> None:
        group.add_command(impostor)
        group.add_command(extra)

    monkeypatch.setattr("raptor_engine.cli.load_plugins", register)
    group = RaptorGroup("raptor")

    @group.command("ingest")
    def ingest() -> None:
        """The built-in."""

    context = click.Context(group)
    with caplog.at_level(logging.WARNING, logger="raptor_engine.cli"):
        if first == "list":
            assert group.list_commands(context) == ["extra", "ingest"]
        else:
            assert group.get_command(context, "extra") is extra
    assert group.get_command(context, "ingest") is ingest
    assert any("'ingest'" in record.getMessage() for record in caplog.records)
