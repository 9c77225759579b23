"""The `raptor` command line, run in-process against a real data directory."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

import raptor_engine.cli as cli_module
from raptor_engine.engine import Engine
from raptor_engine.query.smalltalk import REPLIES, Act
from tests.sample_texts import BEEKEEPING, RAILWAY


@pytest.fixture
def run(tmp_path, embedder, monkeypatch):
    """Invoke `raptor ARGS` with a data dir under tmp_path, sharing the session's embedder."""
    monkeypatch.setattr(cli_module, "Engine", lambda settings: Engine(settings, embedder=embedder))
    runner = CliRunner()
    data_dir = tmp_path / "data"

    def invoke(*args: str, **options):
        return runner.invoke(cli_module.cli, ["--data-dir", str(data_dir), *args], catch_exceptions=False, **options)

    return invoke


@pytest.fixture
def files(tmp_path):
    railway = tmp_path / "railway.md"
    railway.write_text(RAILWAY)
    bees = tmp_path / "bees.md"
    bees.write_text(BEEKEEPING)
    bad = tmp_path / "scan.pdf"
    bad.write_bytes(b"%PDF-1.4 truncated")
    return railway, bees, bad


def test_ingest_ask_docs_tree_forget(run, files):
    railway, bees, _ = files
    result = run("ingest", str(railway), str(bees), "--kb", "t", "--quiet")
    assert result.exit_code == 0, result.output
    assert "railway.md:" in result.output and "bees.md:" in result.output

    again = run("ingest", str(railway), "--kb", "t", "--quiet")
    assert again.output == "railway.md: already in the knowledge base (same content), nothing to do.\n"
    renamed = railway.with_name("railway copy.md")
    renamed.write_bytes(railway.read_bytes())
    copy = run("ingest", str(renamed), "--kb", "t", "--quiet")  # the name given, and the one to look for
    assert copy.output == (
        "railway copy.md: already in the knowledge base as railway.md (same content), nothing to do.\n"
    )

    asked = run("ask", "Who surveyed the railway?", "--kb", "t", "--json")
    assert asked.exit_code == 0
    data = json.loads(asked.output)
    assert "Pennick" in data["answer"]
    assert data["citations"] and {"node_id", "layer", "document"} <= data["citations"][0].keys()
    assert data["context"]["tokens_used"] <= data["context"]["budget"] == 2000
    assert sum(data["context"]["nodes_per_layer"].values()) == len(data["context"]["nodes"])

    readable = run("ask", "Who surveyed the railway?", "--kb", "t", "--mode", "traversal", "--budget", "500")
    assert readable.exit_code == 0 and "Sources" in readable.output and "[1] L" in readable.output
    assert "/500 tokens" in readable.output

    docs = run("docs", "--kb", "t")
    assert "railway.md" in docs.output and "bees.md" in docs.output and "added by cli" in docs.output

    tree = run("tree", "--kb", "t")
    assert "L0" in tree.output and "leaves" in tree.output and "cross-document" in tree.output

    forgotten = run("forget", "railway.md", "--kb", "t")
    assert forgotten.exit_code == 0 and "Removed railway.md" in forgotten.output
    assert "railway.md" not in run("docs", "--kb", "t").output
    alone = run("tree", "--kb", "t").output  # one document left: singular words, no cross-document layer
    assert "t: 1 document," in alone and "cross-document" not in alone
    assert "1 top summary of the knowledge base" in alone or "1 leaf " in alone

    assert run("doctor").output.strip() == "healthy"


def test_errors_are_one_line_and_nonzero(run, files):
    _, _, bad = files
    result = run("ingest", str(bad), "--kb", "t", "--quiet")
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and "scan.pdf" in result.output

    missing = run("ask", "anything?", "--kb", "nothing-here")
    assert missing.exit_code == 1
    assert "no documents" in missing.output and "Traceback" not in missing.output

    unknown = run("forget", "ghost.md", "--kb", "nothing-here")
    assert unknown.exit_code == 1 and "nothing-here" in unknown.output


def test_forget_and_doctor_print_json(run, files, tmp_path):
    railway, bees, _ = files
    assert run("ingest", str(railway), str(bees), "--kb", "t", "--quiet").exit_code == 0

    forgotten = run("forget", "railway.md", "--kb", "t", "--json")
    assert forgotten.exit_code == 0, forgotten.output
    removed = json.loads(forgotten.output)["removed"]
    assert removed["name"] == "railway.md" and removed["nodes"] > 0 and len(removed["sha256"]) == 64

    healthy = run("doctor", "--json")
    assert healthy.exit_code == 0 and json.loads(healthy.output) == {
        "healthy": True,
        "problems": [],
        "repaired": [],
    }
    for index in (tmp_path / "data" / "indices").iterdir():  # a lost derived index: found, then rebuilt
        index.unlink()
    report = json.loads(run("doctor", "--json", "--no-repair").output)
    assert report["problems"] and not report["repaired"] and report["healthy"] is False
    repaired = run("doctor", "--json")
    assert repaired.exit_code == 0 and json.loads(repaired.output)["repaired"]


@pytest.mark.parametrize("command", [("ingest", "{file}"), ("ask", "Who?"), ("docs",), ("tree",), ("forget", "x.md")])
def test_an_empty_knowledge_base_name_is_a_wrong_command_line(run, files, command):
    """`--kb "$KB"` with KB unset ingested into a knowledge base named ''."""
    railway, _, _ = files
    args = [a.format(file=railway) for a in command]
    for empty in ("", "  "):
        done = run(*args, "--kb", empty)
        assert done.exit_code == 2
        assert "Invalid value for '--kb': the knowledge base name is empty." in done.output
    assert "The knowledge base 't' has no documents yet" in run("docs", "--kb", "t").output


def test_version_and_shared_options_read_the_same_everywhere(run):
    from raptor_engine import __version__

    version = run("--version")
    assert version.exit_code == 0 and version.output.strip() == f"raptor {__version__}"
    commands = cli_module.cli.commands
    for name in ("ingest", "ask", "chat", "docs", "forget", "tree"):
        kb = next(p for p in commands[name].params if p.name == "kb")
        assert kb.required and kb.help == "Knowledge base name.", name
    for name in ("ingest", "ask", "docs", "forget", "tree", "doctor"):
        as_json = next(p for p in commands[name].params if p.name == "as_json")
        assert as_json.opts == ["--json"] and as_json.help == "Print the result as JSON.", name


def chat_in_railway(run, files, talk: str):
    """`raptor chat` over the railway document, fed `talk` (one question a line, an empty line to stop)."""
    railway, _, _ = files
    assert run("ingest", str(railway), "--kb", "t", "--quiet").exit_code == 0
    result = CliRunner().invoke(
        cli_module.cli, ["--data-dir", str(railway.parent / "data"), "chat", "--kb", "t"], input=talk
    )
    assert result.exit_code == 0, result.output
    return result


def test_chat_answers_a_follow_up_as_the_question_it_stands_for(run, files):
    result = chat_in_railway(run, files, "Tell me about the great flood of 1903.\nWho led the passengers to safety then?\n\n")
    searched = (
        "Searched as: Who led the passengers to safety in 1903? (context: Tell me about the great flood"
    )
    assert result.output.count("Searched as:") == 1 and searched in result.output
    assert "Wren" in result.output.split(searched, 1)[1]
    asked = json.loads(run("ask", "Who led the passengers to safety?", "--kb", "t", "--json").output)
    assert asked["query"] == asked["question"] and asked["rewritten"] is False


def test_chat_shows_the_claims_a_check_looked_for_not_a_searched_question(run, files):
    result = chat_in_railway(run, files, "Tell me about the great flood of 1903.\nr u sure?\n\n")
    assert "Checked against the documents: \u201c" in result.output, result.output
    assert "Searched as:" not in result.output and "Yes: the documents say so." in result.output


def test_ask_with_a_question_that_names_nothing_asks_for_something_specific(run, files):
    railway, _, _ = files
    assert run("ingest", str(railway), "--kb", "t", "--quiet").exit_code == 0
    result = run("ask", "what is the?", "--kb", "t")
    assert result.exit_code == 0 and result.output.strip() == REPLIES[Act.VAGUE], result.output


def test_chat_answers_thanks_with_a_line_and_the_next_follow_up_leans_on_the_question(run, files):
    result = chat_in_railway(run, files, "Tell me about the great flood of 1903.\nthanks!\nWho led the passengers to safety then?\n\n")
    reply = result.output.split("You're welcome", 1)[1].split("> ", 1)[0]
    assert "Sources" not in reply and "Context:" not in reply  # nothing was searched
    assert "Searched as: Who led the passengers to safety in 1903? (context: Tell me about the great flood" in (
        result.output
    )


def test_ingest_of_a_device_or_pipe_is_one_line_and_the_next_file_still_goes_in(run, files, tmp_path):
    """`raptor ingest /dev/zero` once read until memory ran out; a FIFO waited forever."""
    import os

    railway, _, _ = files
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    result = run("ingest", "/dev/zero", str(fifo), str(railway), "--kb", "t", "--quiet")
    assert result.exit_code == 1
    assert "zero: is not a regular file" in result.output
    assert "pipe.md: is not a regular file" in result.output
    assert "railway.md:" in result.output and "Traceback" not in result.output


def test_ask_filters_that_match_nothing_in_the_tree_are_refused_in_one_sentence(run, files):
    """A mistyped --document or a --layer above the top is a wrong filter, not 'nothing answers this'."""
    railway, bees, _ = files
    assert run("ingest", str(railway), str(bees), "--kb", "t", "--quiet").exit_code == 0
    top = max(layer["layer"] for layer in json.loads(run("tree", "--kb", "t", "--json").output)["layers"])

    typo = run("ask", "Who surveyed the railway?", "--kb", "t", "--document", "railways.md")
    assert typo.exit_code == 1
    assert typo.output == "Error: No document named 'railways.md' in this knowledge base. Did you mean 'railway.md'?\n"
    above = run("ask", "Who surveyed the railway?", "--kb", "t", "--layer", "0", "--layer", str(top + 1))
    assert above.exit_code == 1
    assert above.output == f"Error: This knowledge base's layers are 0 to {top}; there is no layer {top + 1}.\n"
    negative = run("ask", "Who surveyed the railway?", "--kb", "t", "--layer", "-1")
    assert negative.exit_code == 2 and "-1" in negative.output

    sha = json.loads(run("docs", "--kb", "t", "--json").output)[0]["sha256"]
    for name in ("railway.md", sha[:12]):  # a name, or a sha256 prefix as `raptor forget` takes
        found = json.loads(run("ask", "Who surveyed the railway?", "--kb", "t", "--document", name, "--json").output)
        assert {c["document"] for c in found["citations"]} == {"railway.md"}
    short = run("forget", sha[:4], "--kb", "t")  # 'No document named ...' said nothing of the prefix's length
    assert short.exit_code == 1
    assert short.output == (
        f"Error: {sha[:4]!r} is too short a sha256 prefix to name a document; give at least 8 characters.\n"
    )
    assert [d["name"] for d in json.loads(run("docs", "--kb", "t", "--json").output)] == ["railway.md", "bees.md"]


@pytest.mark.parametrize("as_json", [False, True])
def test_chat_with_a_knowledge_base_that_has_no_documents_stops_at_once(run, tmp_path, as_json):
    """A mistyped --kb is one sentence and exit 1 before the first prompt, as for `raptor ask`, not an
    error after every question of a conversation that cannot be had."""
    result = CliRunner().invoke(
        cli_module.cli,
        ["--data-dir", str(tmp_path / "data"), "chat", "--kb", "nope", *(["--json"] if as_json else [])],
        input="Who surveyed the railway?\nwhy?\n\n",
    )
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: The knowledge base 'nope' has no documents yet; add one with: raptor ingest FILE --kb nope\n"
    )
    error = "The knowledge base 'nope' has no documents yet; add one with: raptor ingest FILE --kb nope"
    assert result.stdout == (json.dumps({"error": error, "status": 1}) + "\n" if as_json else "")


def test_a_budget_that_holds_no_passage_or_filters_that_exclude_each_other_say_so(run, files):
    """'The documents hold nothing that answers this question' would blame the documents for a context
    that was empty because of the budget or the filters."""
    railway, bees, _ = files
    added = run("ingest", str(railway), str(bees), "--kb", "t", "--quiet")
    assert added.exit_code == 0, added.output
    for mode in ("collapsed", "traversal"):
        tiny = run("ask", "Who surveyed the railway?", "--kb", "t", "--budget", "1", "--mode", mode)
        assert tiny.exit_code == 1
        assert tiny.output == "Error: No passage fits in a context budget of 1 token; use a larger budget.\n"
    huge = run("ask", "Who surveyed the railway?", "--kb", "t", "--budget", "99999999999999999999")
    assert huge.exit_code == 1  # was answered, "1374/99999999999999999999 tokens": with an LLM, a prompt of everything
    assert huge.output == (
        "Error: A context budget of 99,999,999,999,999,999,999 tokens is more than a knowledge base may hold "
        "(2,000,000); use a smaller budget.\n"
    )
    tree = json.loads(run("tree", "--kb", "t", "--json").output)
    top = max(layer["layer"] for layer in tree["layers"])  # the cross-document layer: no one document's
    apart = run("ask", "Who surveyed the railway?", "--kb", "t", "--document", "railway.md", "--layer", str(top))
    assert apart.exit_code == 1
    assert apart.output == f"Error: The chosen documents have no nodes in layer {top}.\n"


def test_a_new_version_under_a_stored_name_says_the_earlier_one_is_still_there(run, files):
    """Both versions answer, cited under one name: the line says so and how to remove the earlier one."""
    railway, _, _ = files
    assert run("ingest", str(railway), "--kb", "t", "--quiet").exit_code == 0
    earlier = json.loads(run("docs", "--kb", "t", "--json").output)[0]
    newer = railway.parent / "v2" / "railway.md"
    newer.parent.mkdir()
    newer.write_text("The railway was surveyed again in 1990 by Ada Moss. The new line opened in 1994.\n")
    added = run("ingest", str(newer), "--kb", "t", "--quiet")
    assert added.exit_code == 0
    lines = added.output.splitlines()
    assert lines[0].startswith("railway.md: 1 chunk, 1 layer, 1 node, ") and len(lines) == 2  # counts in words
    assert lines[1] == (
        f"  An earlier railway.md (sha256 {earlier['sha256'][:12]}, added {earlier['added_at']}) is still in the "
        f"knowledge base; raptor forget {earlier['sha256'][:12]} --kb t removes it."
    )
    assert len(run("ingest", str(newer), "--kb", "t", "--quiet").output.splitlines()) == 1  # a duplicate: no note


def test_counts_of_one_are_said_in_the_singular(run, tmp_path):
    """'1 chunks, 1 layers, 1 nodes' read as a slip in every line a one-node document printed."""
    note = tmp_path / "note.txt"
    note.write_text("The keeper trims the lamp every evening at sunset.")
    added = run("ingest", str(note), "--kb", "one", "--quiet").output
    assert re.match(r"note\.txt: 1 chunk, 1 layer, 1 node, \d+ tokens in ", added), added
    assert " · 1 chunk · 1 layer · " in run("docs", "--kb", "one").output
    assert ", 1 node (L0: 1), " in run("ask", "When is the lamp trimmed?", "--kb", "one").output
    assert run("tree", "--kb", "one").output.startswith("one: 1 document, 1 node, ")


MEETING_VTT = """WEBVTT

1
00:00:01.000 --> 00:00:05.000
<v Priya Nair>Welcome everyone, this is the planning meeting for the harbour festival.

2
00:00:05.500 --> 00:00:09.000
<v Tom Becker>I booked the brass band for the Saturday evening concert on the pier.

3
00:00:09.500 --> 00:00:13.000
<v Priya Nair>Good. The fireworks permit from the council arrived on Monday.

4
00:00:13.500 --> 00:00:18.000
<v Tom Becker>The food stalls will be on the quay, twelve of them, all local bakers.
"""


def test_a_webvtt_meeting_is_ingested_and_quoted_with_its_speakers(run, tmp_path):
    """A meeting tool's .vtt export goes in like any document, and a quote says who spoke it."""
    meeting = tmp_path / "festival.vtt"
    meeting.write_text(MEETING_VTT)
    assert run("ingest", str(meeting), "--kb", "m", "--quiet").exit_code == 0
    asked = json.loads(run("ask", "Who booked the brass band?", "--kb", "m", "--json").output)
    assert "Tom Becker: I booked the brass band" in asked["answer"], asked["answer"]
    assert "-->" not in asked["answer"] and "<v" not in asked["answer"] and asked["answered"]


def test_a_question_with_bytes_that_are_not_utf8_is_answered(run, files):
    """A terminal in another encoding passes bytes that are not UTF-8: Python gives them to `ask` as
    lone surrogates ('\\udcff'), and chat reads them from stdin the same way; the tokenizer refused
    those with "Unexpected TypeError". They read as U+FFFD and the question is answered, the follow-up too."""
    railway, _, _ = files
    assert run("ingest", str(railway), "--kb", "t", "--quiet").exit_code == 0
    asked = run("ask", "Who led the passengers to safety \udcff\udcfe in 1903?", "--kb", "t", "--json")
    assert asked.exit_code == 0, asked.output
    assert json.loads(asked.output)["question"] == "Who led the passengers to safety \ufffd\ufffd in 1903?"
    talk = "Tell me about the great flood of 1903 \udcff.\nWho led the passengers to safety then?\n\n"
    chat = run("chat", "--kb", "t", "--json", input=talk.encode("utf-8", "surrogateescape"))
    assert chat.exit_code == 0, chat.output
    answers = [json.loads(line) for line in chat.output.splitlines() if line.startswith("{")]
    assert len(answers) == 2 and all(answer["citations"] for answer in answers)


def test_a_follow_up_whose_history_holds_lone_surrogates_is_answered(tmp_path, embedder):
    """The bot and other callers pass history as they stored it: a lone surrogate there (JSON's
    "\\ud800") must not break the next question either."""
    import asyncio

    from raptor_engine.types import Turn
    from tests.unhurried import unhurried_settings

    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        asyncio.run(engine.ingest("t", "railway.md", RAILWAY.encode()))
        history = [Turn("user", "Tell me about the great flood of 1903 \ud800."), Turn("assistant", "It was \udcff.")]
        answer = asyncio.run(engine.ask("t", "Who led the passengers to safety then?", history=history))
    finally:
        engine.close()
    assert answer.citations


def test_names_with_bytes_that_are_not_utf8_are_stored_readable(run, files):
    """`--kb` and `--as` typed in a terminal of another encoding arrive with lone surrogates, which
    SQLite cannot store ("Unexpected UnicodeEncodeError"): they read as U+FFFD, the same each time."""
    railway, _, _ = files
    added = run("ingest", str(railway), "--kb", "t\udcff", "--as", "me\udcfe", "--quiet")
    assert added.exit_code == 0, added.output
    listed = json.loads(run("docs", "--kb", "t\udcff", "--json").output)
    assert [(doc["name"], doc["added_by"]) for doc in listed] == [("railway.md", "me\ufffd")]


def test_names_with_terminal_escapes_are_stored_without_them(run, files):
    """A knowledge base or `--as` name is printed back by `tree` and `docs`: an escape sequence in it
    (a window title, a colour) would run in the terminal each time. Escape sequences go whole (files20:
    no `]0;pwned[31m` left behind) and other control characters are dropped; a name of nothing else is
    empty."""
    railway, _, _ = files
    escape = "\x1b]0;pwned\x07\x1b[31m"
    assert run("ingest", str(railway), "--kb", f"t{escape}", "--as", f"me{escape}", "--quiet").exit_code == 0
    tree = run("tree", "--kb", "t")
    assert tree.exit_code == 0 and tree.output.startswith("t: 1 document"), tree.output
    listed = json.loads(run("docs", "--kb", f"t{escape}", "--json").output)
    assert listed[0]["added_by"] == "me"
    assert "the knowledge base name is empty" in run("docs", "--kb", "\x1b\x07").output


def test_a_question_with_a_terminal_escape_is_asked_without_it(run, files):
    """chat shows the conversation a follow-up was searched with ("(context: …)"): an escape sequence
    typed or pasted into a question ran in the terminal there."""
    railway, _, _ = files
    assert run("ingest", str(railway), "--kb", "t", "--quiet").exit_code == 0
    talk = "Tell me about the great flood \x1b]0;pwned\x07of 1903.\nWho led the passengers to safety then?\n\n"
    chat = run("chat", "--kb", "t", input=talk)
    assert chat.exit_code == 0, chat.output
    assert "Searched as:" in chat.output and "\x1b" not in chat.output and "\x07" not in chat.output


def test_an_ingest_with_one_bad_file_prints_the_others_as_json_and_exits_1(run, files):
    """docs/CLI.md's exit status: every file's outcome is printed (valid JSON on stdout), the one
    that did not go in is also one `Error:` line on stderr, and the status is 1."""
    railway, _, bad = files
    result = run("ingest", str(railway), str(bad), "--kb", "t", "--json")
    assert result.exit_code == 1
    added, refused = json.loads(result.stdout)
    assert added["status"] == "added" and added["document"]["name"] == "railway.md"
    assert refused["status"] == "refused" and refused["file"] == str(bad)
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("Error: scan.pdf: "), result.stderr
    assert errors[0] == f"Error: {refused['error']}"


def test_ingest_says_how_many_subtitle_cues_it_skipped(run, tmp_path):
    """The cues of a damaged subtitle file that parse are added; the line (and --json) says how many
    were skipped, so the user knows part of it is missing."""
    from tests.test_load import BROKEN_SRT

    damaged = tmp_path / "damaged.srt"
    damaged.write_bytes(BROKEN_SRT)
    added = run("ingest", str(damaged), "--kb", "t", "--quiet")
    assert added.exit_code == 0, added.output
    assert added.output.strip().endswith("; 3 cues skipped: their timing line could not be read")
    again = tmp_path / "again.srt"
    again.write_bytes(BROKEN_SRT + b"\n6\n00:00:10,000 --> 00:00:11,000\nThe end.\n")
    listed = json.loads(run("ingest", str(again), "--kb", "t", "--quiet", "--json").output)
    assert listed[0]["notices"] == ["3 cues skipped: their timing line could not be read"]


def test_an_odt_and_an_epub_are_ingested_and_answer_questions(run, tmp_path):
    """LibreOffice's and an e-book's text goes in as any document's does; a DRM-locked book is refused in
    one line and stores nothing."""
    from raptor_tools.book_files import drm_encryption, epub_file, odt_file, xhtml

    report = tmp_path / "harbour.odt"
    report.write_bytes(odt_file(
        '<text:h text:outline-level="1">Harbour works</text:h>'
        "<text:p>The harbour wall was rebuilt in granite by the engineer Tobias Merrow in 1887.</text:p>"
    ))  # fmt: skip
    book = tmp_path / "lamps.epub"
    book.write_bytes(epub_file([
        ("one.xhtml", xhtml("<h1>Lamps</h1><p>The keepers burned colza oil until paraffin came in 1869.</p>")),
        ("two.xhtml", xhtml("<h1>Bells</h1><p>The fog bell was cast at Loughborough by the Taylor foundry.</p>")),
    ]))  # fmt: skip
    locked = tmp_path / "locked.epub"
    locked.write_bytes(epub_file([("one.xhtml", xhtml("<p>x</p>"))],
                                 extra={"META-INF/encryption.xml": drm_encryption("OEBPS/one.xhtml")}))
    assert run("ingest", str(report), str(book), "--kb", "b", "--quiet").exit_code == 0
    refused = run("ingest", str(locked), "--kb", "b", "--quiet")
    assert refused.exit_code == 1 and refused.output == (
        "Error: locked.epub: is protected by DRM (its chapters are encrypted); only DRM-free e-books can be read.\n"
    )
    assert "locked.epub" not in run("docs", "--kb", "b").output
    wall = json.loads(run("ask", "Who rebuilt the harbour wall?", "--kb", "b", "--json").output)
    assert "Merrow" in wall["answer"] and {c["document"] for c in wall["citations"]} == {"harbour.odt"}
    bell = json.loads(run("ask", "Where was the fog bell cast?", "--kb", "b", "--json").output)
    assert "Loughborough" in bell["answer"] and "lamps.epub" in {c["document"] for c in bell["citations"]}
