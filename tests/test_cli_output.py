"""What `raptor` prints besides answers: usage errors in one line, no log lines without -v, chat as JSON."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

import raptor_engine.cli as cli_module
from raptor_engine.engine import Engine
from tests.test_cli import files, run  # noqa: F401  (fixtures)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["ingest", "/nonexistent.md", "--kb", "t"],
            "File '/nonexistent.md' does not exist. See 'raptor ingest --help'.",
        ),
        (["guilds", "delete", "1"], "Missing option '--yes'. See 'raptor guilds delete --help'."),
        (["ask", "anything?"], "Missing option '--kb'. See 'raptor ask --help'."),
        (
            ["ask", "q", "--kb", "t", "--mode", "sideways"],
            "'sideways' is not one of 'collapsed', 'traversal'.",
        ),
        (["--no-such-option", "docs"], "No such option '--no-such-option'"),
        (["nosuch"], "No such command 'nosuch'. See 'raptor --help'."),
    ],
    ids=[
        "missing file",
        "guilds delete without --yes",
        "missing option",
        "bad choice",
        "group option",
        "command",
    ],
)
def test_usage_errors_are_one_line_on_stderr(tmp_path, args, says):
    result = CliRunner().invoke(cli_module.cli, ["--data-dir", str(tmp_path), *args], prog_name="raptor")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    assert says in result.stderr


def test_a_group_alone_still_prints_its_help(tmp_path):
    result = CliRunner().invoke(cli_module.cli, ["--data-dir", str(tmp_path), "guilds"], prog_name="raptor")
    assert "Usage: raptor guilds" in result.output and "delete" in result.output


WARN_AFTER = (
    "import logging, sys; from raptor_engine.cli import cli; "
    "cli(sys.argv[1:], prog_name='raptor', standalone_mode=False); "
    "logging.getLogger('raptor_engine.engine').warning('a question ran past its time')"
)


@pytest.mark.parametrize(("flags", "logged"), [([], False), (["-v"], True)])
def test_warnings_are_logged_only_with_v(tmp_path, flags, logged):
    """The engine's warnings (a question given up at its timeout) are detail for -v: without it, the
    error line is all that reaches stderr. In a fresh process, where the CLI sets up logging."""
    args = [*flags, "--data-dir", str(tmp_path), "guilds", "list"]
    process = subprocess.run(
        [sys.executable, "-c", WARN_AFTER, *args], capture_output=True, text=True, timeout=300
    )
    assert process.returncode == 0, process.stderr
    assert ("a question ran past its time" in process.stderr) is logged, process.stderr


def test_chat_json_prints_one_object_per_turn(run, files):  # noqa: F811
    railway, _, _ = files
    assert run("ingest", str(railway), "--kb", "t", "--quiet").exit_code == 0
    talk = "Tell me about the great flood of 1903.\nWho led the passengers to safety then?\n\n"
    result = CliRunner().invoke(
        cli_module.cli,
        ["--data-dir", str(railway.parent / "data"), "chat", "--kb", "t", "--json"],
        input=talk,
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result.stdout  # no banner, no prompt: only the answers
    first, second = (json.loads(line) for line in lines)
    assert first["question"] == "Tell me about the great flood of 1903." and first["rewritten"] is False
    assert second["rewritten"] is True and second["query"].startswith(
        "Who led the passengers to safety in 1903?"
    )
    assert "Wren" in second["answer"] and second["citations"]
    assert {"tokens_used", "budget", "nodes"} <= second["context"].keys()


def test_ingest_loads_the_model_before_any_build_deadline_starts(run, files, monkeypatch):  # noqa: F811
    """A machine's first `raptor ingest` exports the model to ONNX and compiles UMAP's code: minutes on a
    slow machine, which must not count against the first file's RAPTOR_BUILD_TIMEOUT."""
    from raptor_engine.ingest.budget import current_budget

    warmed, ingested = [], []
    original_warm, original_ingest = Engine.warm, Engine.ingest

    def warm(self, **options):
        warmed.append((current_budget(), len(ingested), options))
        original_warm(self, **options)

    async def ingest(self, *args, **kwargs):
        ingested.append(args[1])
        return await original_ingest(self, *args, **kwargs)

    monkeypatch.setattr(Engine, "warm", warm)
    monkeypatch.setattr(Engine, "ingest", ingest)
    railway, bees, _ = files
    assert run("ingest", str(railway), str(bees), "--kb", "t", "--quiet").exit_code == 0
    assert warmed == [(None, 0, {"load_clustering": False})] and ingested == ["railway.md", "bees.md"]
