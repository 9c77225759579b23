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
