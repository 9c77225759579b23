"""The `raptor` command line as a script reads it: the exit status and `--json` of every command that works
on one knowledge base agree on an empty or unknown one, `ask --tree-png` never loses the answer to the
picture, and `forget` says at once when it waits for another process's upload."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import raptor_engine.cli as cli_module
from raptor_engine.engine import Engine
from raptor_engine.storage.writers import WriterGate
from tests.sample_texts import RAILWAY

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "Who surveyed the railway?"


@pytest.fixture
def run(tmp_path, embedder, monkeypatch):
    """`raptor ARGS` in-process (stdout and stderr apart) on a data directory holding 'Railway'."""
    monkeypatch.setattr(cli_module, "Engine", lambda settings: Engine(settings, embedder=embedder))

    def invoke(*args: str, **options):
        return CliRunner().invoke(cli_module.cli, ["--data-dir", str(tmp_path / "data"), *args], **options)

    railway = tmp_path / "railway.md"
    railway.write_text(RAILWAY)
    assert invoke("ingest", str(railway), "--kb", "Railway", "--quiet").exit_code == 0
    return invoke


COMMANDS = {
    "ask": ("ask", QUESTION),
    "chat": ("chat",),
    "docs": ("docs",),
    "tree": ("tree",),
    "tree --png": ("tree", "--png", "{tmp}/t.png"),
    "forget": ("forget", "railway.md"),
}


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("kb", ["nope", "railway"], ids=["unknown", "mistyped"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_on_a_knowledge_base_without_documents_exits_1_with_one_sentence(
    run, tmp_path, command, kb, as_json
):
    """Before, `docs` and `tree` printed 'No documents in ...' (and `docs --json` `[]`) with status 0,
    where `ask`, `chat` and `forget` exited 1: a script could not tell a mistyped --kb from an empty list."""
    args = [a.format(tmp=tmp_path) for a in COMMANDS[command]]
    done = run(*args, "--kb", kb, *(["--json"] if as_json else []), input="Who?\n\n")
    sentence = f"The knowledge base {kb!r} has no documents yet; add one with: raptor ingest FILE --kb {kb}"
    sentence += " Did you mean 'Railway'?" if kb == "railway" else " The knowledge bases here: 'Railway'."
    assert done.exit_code == 1, done.output
    assert done.stderr == f"Error: {sentence}\n"
    assert done.stdout == (json.dumps({"error": sentence, "status": 1}) + "\n" if as_json else "")
    assert not (tmp_path / "t.png").exists()


def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_ask_prints_the_answer_when_the_picture_cannot_be_written(run, tmp_path, monkeypatch, as_json):
    """The picture is written after the answer is made (an LLM call, seconds): a full disk then lost the
    answer, the command printing only the picture's error."""
    monkeypatch.setattr(cli_module, "create_new", _disk_full)
    picture = tmp_path / "answer.png"
    done = run("ask", QUESTION, "--kb", "Railway", "--tree-png", str(picture), *(["--json"] if as_json else []))
    sentence = f"Cannot write {picture}: No space left on device."
    assert done.exit_code == 1
    assert done.stderr == f"Error: {sentence}\n"
    if as_json:
        out = json.loads(done.stdout)
        assert out["answer"] and out["citations"] and out["tree_png_error"] == sentence
        assert out["tree_png"] == str(picture)
    else:
        plain = run("ask", QUESTION, "--kb", "Railway").stdout  # the same answer, without a picture
        assert plain.strip() and done.stdout == plain
    assert not picture.exists() and [p.name for p in tmp_path.glob(".answer.png.*")] == []


def test_ask_with_a_picture_it_wrote_exits_0_without_an_error(run, tmp_path):
    picture = tmp_path / "answer.png"
    done = run("ask", QUESTION, "--kb", "Railway", "--tree-png", str(picture), "--json")
    assert done.exit_code == 0 and done.stderr == ""
    assert "tree_png_error" not in json.loads(done.stdout) and picture.stat().st_size > 0


def test_forget_says_at_once_that_it_waits_for_another_processs_upload(tmp_path, embedder):
    """A removal takes the knowledge base's writer turn, which an upload in another process holds for its
    whole build (minutes for a large file): before, `raptor forget` waited silently up to RAPTOR_WRITER_WAIT
    and then said 'Nothing was stored: other uploads kept ...', which is an upload's sentence."""
    data = tmp_path / "data"
    engine = Engine(cli_module.Settings.from_env(data_dir=data), embedder=embedder)
    asyncio.run(engine.ingest("notes", "railway.md", RAILWAY.encode()))
    engine.close()
    held = WriterGate(data / "locks", "notes", wait_s=5)
    asyncio.run(held.enter())
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "RAPTOR_WRITER_WAIT": "2"}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "raptor_engine.cli", "--data-dir", str(data), "forget", "railway.md",
             "--kb", "notes", "--json"],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
        )  # fmt: skip
    finally:
        held.leave()
    sentence = (
        "Nothing was removed: another process's upload to 'notes' kept it busy for 2 seconds (RAPTOR_WRITER_WAIT); "
        "try again."
    )
    assert done.returncode == 1
    assert done.stderr == (
        "Waiting for another process's upload to 'notes' to finish (at most 2 s, RAPTOR_WRITER_WAIT).\n"
        f"Error: {sentence}\n"
    )
    assert json.loads(done.stdout) == {"error": sentence, "status": 1}


@pytest.mark.parametrize("command", ["export", "delete"])
def test_guilds_export_and_delete_say_alike_that_a_guild_has_no_store(run, tmp_path, command):
    args = ("export", "999", str(tmp_path / "g.tar")) if command == "export" else ("delete", "999", "--yes")
    done = run("guilds", *args, "--json")
    sentence = "There is no store for 999 in this data directory."
    assert done.exit_code == 1 and done.stderr == f"Error: {sentence}\n"
    assert json.loads(done.stdout) == {"error": sentence, "status": 1} and not (tmp_path / "g.tar").exists()
