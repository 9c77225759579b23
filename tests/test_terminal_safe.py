"""No command writes a stored text's control characters to the terminal: a store the loaders did not
write (a copied data directory, an older version's store, a database edited by hand) can hold escape
sequences, and `raptor docs`, `ask`, `chat`, `tree`, `forget`, `doctor` and `guilds list` print what it holds."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from raptor_engine.cli import TerminalAnswer, _json_text, terminal_safe
from raptor_engine.ingest.load import load_document
from raptor_engine.storage.spaces import DB_NAME, SPACES_DIR
from tests.test_cli import files, run  # noqa: F401  (fixtures)

# A colour, a cleared screen, an OSC 52 clipboard write ended by BEL, a backspace, a carriage return,
# DEL, a one-byte C1 CSI, a right-to-left override and an isolate
PLANTED = "\x1b[31m\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07\x08\r\x7f\x9b6n\u202egnp.exe\u2066"
# What must never reach the terminal raw (newline and tab may)
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
GUILD = "4242"
ROOT = Path(__file__).resolve().parent.parent


def test_each_unsafe_character_is_shown_as_its_escape_and_newlines_and_tabs_stay():
    shown = terminal_safe(f"a{PLANTED}\tb\nc")
    assert not UNSAFE.search(shown)
    assert shown.startswith("a\\x1b[31m\\x1b[2J\\x1b]52;c;") and "\\x07\\x08\\r\\x7f\\x9b6n\\u202e" in shown
    assert shown.endswith("\\u2066\tb\nc")
    assert terminal_safe("plain text, ünïcode — fine") == "plain text, ünïcode — fine"


def test_json_output_escapes_what_json_dumps_writes_raw_and_reads_back_the_same():
    """json.dumps with ensure_ascii=False escapes C0 controls but writes DEL, C1 and bidi controls raw."""
    value = {"name": PLANTED, "nested": [PLANTED, 1]}
    assert UNSAFE.search(json.dumps(value, ensure_ascii=False))
    for indent in (None, 2):
        text = _json_text(value, indent)
        assert not UNSAFE.search(text) and json.loads(text) == value


def test_an_answer_streamed_to_a_terminal_shows_escapes_and_erases_with_its_own_sequence(capsys):
    shown = TerminalAnswer()
    asyncio.run(shown.show(f"The lamp{PLANTED}"))
    shown.finish("The lamp was lit.")
    written = capsys.readouterr().out
    assert "The lamp\\x1b[31m" in written and "\x07" not in written and "\u202e" not in written
    # the erase is the CLI's own carriage return (click drops its ESC [ J off a terminal), not the text's
    assert written.count("\r") == 1 and written.endswith("\rThe lamp was lit.\n")


@pytest.mark.parametrize("name", ["notes.txt", "notes.md", "notes.html"])
def test_the_loaders_drop_control_characters_from_the_text_and_the_headings(name):
    filler = " ".join(["The keeper trimmed the lamp every evening before dusk."] * 12)
    heading = f"Lamp{PLANTED}room"
    if name.endswith(".html"):
        body = f"<html><body><h1>{heading}</h1><p>{filler} Oil{PLANTED} store.</p></body></html>"
    else:
        body = f"# {heading}\n\n{filler} Oil{PLANTED} store.\n"
    document = load_document(name, body.encode())
    assert not UNSAFE.search(document.text) and "Oil" in document.text
    headings = [part for section in document.sections for part in section.heading]
    assert not any(UNSAFE.search(part) for part in headings)
    if not name.endswith(".txt"):
        assert headings and headings[0].startswith("Lamp")


def _plant(data_dir) -> str:
    """Write PLANTED into the store's node texts and headings, a document's name and who added it, and
    a knowledge base's name, as an older version or a hand edit could have; return the document's sha."""
    (db_path,) = [p for p in data_dir.rglob(DB_NAME)]
    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute("UPDATE nodes SET text = text || ?, heading = ?", (PLANTED, json.dumps([f"Part{PLANTED}"])))
        conn.execute("UPDATE documents SET name = ?, added_by = ?", (f"railway{PLANTED}.md", f"me{PLANTED}"))
        conn.execute("INSERT INTO kbs (name, created_at) VALUES (?, '2026-01-01T00:00:00')", (f"kb{PLANTED}",))
        sha = conn.execute("SELECT sha256 FROM documents").fetchone()[0]
    conn.close()
    guild = data_dir / SPACES_DIR / GUILD  # the same store, copied in as a server's
    guild.mkdir(parents=True)
    shutil.copy(db_path, guild / DB_NAME)
    return sha


def test_no_printing_command_writes_a_planted_control_character(run, files, tmp_path):  # noqa: F811
    railway, _, _ = files
    assert run("ingest", str(railway), "--kb", "t", "--quiet").exit_code == 0
    sha = _plant(tmp_path / "data")
    question = "Who surveyed the railway?"
    commands = {
        "docs": ["docs", "--kb", "t"],
        "docs --json": ["docs", "--kb", "t", "--json"],
        "tree": ["tree", "--kb", "t"],
        "tree --json": ["tree", "--kb", "t", "--json"],
        "ask": ["ask", question, "--kb", "t"],
        "ask --json": ["ask", question, "--kb", "t", "--json"],
        "ask --document": ["ask", question, "--kb", "t", "--document", "nothing such"],
        "doctor": ["doctor", "--no-repair"],
        "guilds list": ["guilds", "list"],
        "guilds list --json": ["guilds", "list", "--json"],
    }
    outputs = {label: run(*args) for label, args in commands.items()}
    outputs["chat"] = run("chat", "--kb", "t", input=f"{question}\nAnd who paid for it?\n\n")
    outputs["chat --json"] = run("chat", "--kb", "t", "--json", input=f"{question}\n\n")
    outputs["forget"] = run("forget", sha[:12], "--kb", "t")
    for label, result in outputs.items():
        assert not UNSAFE.search(result.stdout + result.stderr), (label, result.stdout, result.stderr)
    assert "railway\\x1b[31m" in outputs["ask"].stdout  # the cited document, shown as its escapes
    assert "railway\\x1b[31m" in outputs["docs"].stdout and "me\\x1b[31m" in outputs["docs"].stdout
    assert json.loads(outputs["docs --json"].stdout)[0]["name"] == f"railway{PLANTED}.md"
    listed = json.loads(outputs["guilds list --json"].stdout)
    assert f"kb{PLANTED}" in listed[0]["knowledge_bases"]
    assert outputs["forget"].stdout.startswith("Removed railway\\x1b[31m")


def test_error_lines_show_the_escapes_of_a_path_they_quote(run, tmp_path):  # noqa: F811
    """A usage error (click's) and a command's own error sentence quote the path they were given."""
    folder = tmp_path / f"pictures{PLANTED}"
    folder.mkdir()
    refused = {
        "gone": run("ingest", str(tmp_path / f"gone{PLANTED}.md"), "--kb", "t"),
        "pictures": run("tree", "--kb", "t", "--png", str(folder)),
    }
    for name, result in refused.items():
        assert result.exit_code in (1, 2) and f"{name}\\x1b[31m" in result.stderr, result.stderr
        assert not UNSAFE.search(result.stderr), result.stderr


def test_verbose_log_lines_show_the_escapes_of_what_they_quote(files, tmp_path):  # noqa: F811
    """`raptor -v` printed its log records raw: a record quoting a path (filelock's, of the data
    directory's lock files) or a stored name wrote its escape sequences to the terminal. Run as a
    process, so the CLI sets up logging as a user's run does."""
    railway, _, _ = files
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    data = tmp_path / "data\x1b[31m\u202ex"
    done = subprocess.run(
        [sys.executable, "-m", "raptor_engine.cli", "-vv", "--data-dir", str(data), "ingest", str(railway), "--kb", "t"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "data\\x1b[31m\\u202ex" in done.stderr, done.stderr  # a log line quoted the path, as escapes
    assert not UNSAFE.search(done.stdout + done.stderr)


def test_a_verbose_traceback_and_every_log_handler_escape_unsafe_characters():
    """Handlers set up before the CLI's (Dask's own) print with escapes too, tracebacks kept under -v."""
    from raptor_engine.cli import SafeFormatter, one_line_logs

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("raptor_engine.tests.safe_logs")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        one_line_logs(1)
        assert isinstance(handler.formatter, SafeFormatter)
        try:
            raise ValueError(f"bad {PLANTED}")
        except ValueError:
            logger.error("quoting %s", f"a node's text {PLANTED}", exc_info=True)
    finally:
        logger.removeHandler(handler)
    shown = stream.getvalue()
    assert "Traceback" in shown and "\\x1b]52;c;" in shown and "\\u202egnp.exe" in shown
    assert not UNSAFE.search(shown)


def test_the_tools_reports_show_escapes(capsys):
    """`raptor eval`, `robustness`, `bench` and the probes print documents' and evaluation sets' text."""
    from raptor_tools import say

    say(f"MISS quote: {PLANTED}")
    out = capsys.readouterr().out
    assert "\\x1b[31m" in out and not UNSAFE.search(out)
