"""Commands from other packages join the `raptor` CLI through entry points (how llm and sqlite-utils
take plugins), so the library never imports its tooling.

The hook, like llm's `hookspecs.py`: a package declares, in its pyproject,

    [project.entry-points."raptor.commands"]
    NAME = "package.module:register_commands"

where `register_commands(cli: click.Group) -> None` adds its commands to the group. The CLI loads every
registered plugin when first needed (`RaptorGroup.load_plugins` in cli.py: listing the commands, or a name
the library does not define); one that is missing or broken costs one log line, never the CLI.
"""

from __future__ import annotations

import logging
from importlib.metadata import EntryPoint, entry_points

import click

log = logging.getLogger(__name__)

GROUP = "raptor.commands"


def load_plugins(cli: click.Group, *, group: str = GROUP) -> list[str]:
    """Call each registered plugin's `register_commands(cli)`; return the names of those that loaded."""
    loaded = []
    for entry_point in sorted(entry_points(group=group), key=lambda ep: ep.name):
        if _register(entry_point, cli):
            loaded.append(entry_point.name)
    return loaded


def _register(entry_point: EntryPoint, cli: click.Group) -> bool:
    try:
        register = entry_point.load()
        register(cli)
    except Exception as exc:  # a plugin's failure must not take the CLI's own commands with it
        log.warning(
            "raptor plugin %r (%s) could not be loaded and is skipped: %s: %s",
            entry_point.name,
            entry_point.value,
            type(exc).__name__,
            exc,
        )
        return False
    return True
