"""Tooling around the RAPTOR pipeline: benchmarks, robustness checks, retrieval evaluation and metrics."""


def say(text: str = "", *, err: bool = False) -> None:
    """Print a report's text with its terminal-unsafe characters shown as escapes, as the `raptor` CLI
    prints stored text (`raptor_engine.cli.terminal_safe`): the tools' reports quote documents, questions
    and answers of evaluation sets nobody here wrote, and file names a hostile corpus chose."""
    import click

    from raptor_engine.cli import terminal_safe

    click.echo(terminal_safe(text), err=err)
