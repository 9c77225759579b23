"""The tools' hook into the `raptor` CLI (entry point `raptor.commands`, see `raptor_engine/plugins.py`)."""

from __future__ import annotations

import click


def register_commands(cli: click.Group) -> None:
    """Add `raptor bench`, `raptor eval`, `raptor train-ranker` and `raptor robustness`."""
    from .bench import bench_command
    from .evaluate import eval_command
    from .robustness import robustness_command
    from .train_ranker import train_ranker_command

    for command in (bench_command, eval_command, train_ranker_command, robustness_command):
        cli.add_command(command)
