"""What a script reads from `raptor ingest` and `raptor chat`: every file's (every question's) outcome in the
JSON, in the order given, and an exit status that says whether any was not done (docs/CLI.md)."""

from __future__ import annotations

import json

import pytest

from raptor_engine.engine import Engine, QuestionTimeoutError
from tests.test_cli_outside import run  # noqa: F401  (fixture: a data dir holding 'Railway')

GOOD = "The lighthouse keeper rang the fog bell at dusk every evening of the winter.\n"
OTHER = "The ferry to the island left the harbour at dawn and came back after dark.\n"


@pytest.fixture
def three(tmp_path):
    """A good file, a damaged PDF, and another good file."""
    good = tmp_path / "notes.md"
    good.write_text(GOOD)
    bad = tmp_path / "scan.pdf"
    bad.write_bytes(b"%PDF-1.4 truncated")
    other = tmp_path / "ferry.md"
    other.write_text(OTHER)
    return good, bad, other


def _names(run):  # noqa: F811
    return sorted(d["name"] for d in json.loads(run("docs", "--kb", "Railway", "--json").stdout))


def test_ingest_json_says_every_files_outcome_in_order_and_exits_1_when_one_was_refused(run, three, tmp_path):  # noqa: F811
    good, bad, other = three
    copy = tmp_path / "notes copy.md"
    copy.write_text(GOOD)  # the same text under another name: a duplicate once notes.md is in
    done = run("ingest", str(good), str(bad), str(copy), str(other), "--kb", "Railway", "--json")
    assert done.exit_code == 1
    outcomes = json.loads(done.stdout)
    assert [(o["file"], o["status"]) for o in outcomes] == [
        (str(good), "added"),
        (str(bad), "refused"),
        (str(copy), "duplicate"),
        (str(other), "added"),
    ]
    refused = outcomes[1]
    assert set(refused) == {"file", "status", "error"} and refused["error"].startswith("scan.pdf: ")
    assert done.stderr == f"Error: {refused['error']}\n"  # the same sentence, once
    assert outcomes[0]["document"]["name"] == "notes.md" and outcomes[2]["document"]["name"] == "notes.md"
    assert outcomes[3]["chunks"] >= 1 and outcomes[3]["document"]["name"] == "ferry.md"
    assert _names(run) == ["ferry.md", "notes.md", "railway.md"]


def test_ingest_json_of_one_refused_file_says_why_instead_of_an_empty_list(run, three):  # noqa: F811
    _, bad, _ = three
    done = run("ingest", str(bad), "--kb", "Railway", "--json")
    assert done.exit_code == 1
    [refused] = json.loads(done.stdout)
    assert refused["status"] == "refused" and refused["error"].startswith("scan.pdf: ")


def test_ingest_json_with_nothing_refused_exits_0_duplicates_included(run, three):  # noqa: F811
    good, _, other = three
    assert run("ingest", str(good), "--kb", "Railway", "--quiet").exit_code == 0
    done = run("ingest", str(good), str(other), "--kb", "Railway", "--json")
    assert done.exit_code == 0 and done.stderr == ""
    assert [o["status"] for o in json.loads(done.stdout)] == ["duplicate", "added"]


def test_a_refusal_that_does_not_name_its_file_is_said_with_the_file_name(run, three, monkeypatch):  # noqa: F811
    """The document limit (or a busy knowledge base, a full disk) is a sentence about the knowledge base:
    with several files, stderr and the JSON still say which file it stopped."""
    good, _, other = three
    monkeypatch.setenv("RAPTOR_MAX_DOCUMENTS", "2")
    done = run("ingest", str(good), str(other), "--kb", "Railway", "--json")
    assert done.exit_code == 1
    added, refused = json.loads(done.stdout)
    assert added["status"] == "added" and refused["status"] == "refused"
    assert refused["error"] == "ferry.md: This knowledge base already holds 2 documents, the most allowed."
    assert done.stderr == f"Error: {refused['error']}\n"
    human = run("ingest", str(other), "--kb", "Railway")
    assert human.exit_code == 1 and human.stderr.startswith("Error: ferry.md: This knowledge base")


def test_an_unexpected_failure_of_one_file_refuses_that_file_and_adds_the_others(run, three, monkeypatch):  # noqa: F811
    """A failure no code turned into a sentence used to end the whole command, and the JSON of the files
    already added was never printed (only `{"error": ...}`)."""
    good, _, other = three
    real = Engine.ingest

    async def failing(self, kb, filename, data, **kwargs):
        if filename == "notes.md":
            raise ValueError("a bug")
        return await real(self, kb, filename, data, **kwargs)

    monkeypatch.setattr(Engine, "ingest", failing)
    done = run("ingest", str(good), str(other), "--kb", "Railway", "--json")
    assert done.exit_code == 1
    refused, added = json.loads(done.stdout)
    assert refused == {
        "file": str(good),
        "status": "refused",
        "error": "notes.md: Unexpected ValueError: a bug (run with -v for the details).",
    }
    assert added["status"] == "added" and added["document"]["name"] == "ferry.md"


def test_ingest_json_interrupted_says_what_was_added_and_what_was_not(run, three, monkeypatch):  # noqa: F811
    good, bad, other = three
    real = Engine.ingest

    async def interrupted(self, kb, filename, data, **kwargs):
        if filename == "ferry.md":
            raise KeyboardInterrupt
        return await real(self, kb, filename, data, **kwargs)

    monkeypatch.setattr(Engine, "ingest", interrupted)
    done = run("ingest", str(good), str(bad), str(other), str(good), "--kb", "Railway", "--json")
    assert done.exit_code == 130
    assert [(o["file"], o["status"]) for o in json.loads(done.stdout)] == [
        (str(good), "added"),
        (str(bad), "refused"),
        (str(other), "interrupted"),
        (str(good), "skipped"),
    ]
    assert done.stderr.endswith("Interrupted; nothing unfinished was stored.\n")
    assert _names(run) == ["notes.md", "railway.md"]


def test_a_folder_among_the_files_is_a_wrong_command_line_and_adds_nothing(run, three, tmp_path):  # noqa: F811
    """A folder (or a glob that matched one) is refused before any file is read: status 2, JSON error."""
    good, _, other = three
    folder = tmp_path / "folder"
    folder.mkdir()
    done = run("ingest", str(good), str(folder), str(other), "--kb", "Railway", "--json")
    assert done.exit_code == 2
    failure = json.loads(done.stdout)
    assert failure["status"] == 2 and "is a directory" in failure["error"], failure
    assert _names(run) == ["railway.md"]


def test_chat_json_says_a_failed_question_on_its_own_line_and_exits_1(run, monkeypatch):  # noqa: F811
    """One JSON line per question, so a program that writes a question and reads a line stays in step;
    a question that failed is `{"question", "error", "status"}` and the status at the end is 1."""
    real = Engine.ask

    async def timing_out(self, kb, question, **kwargs):
        if "fog" in question:
            raise QuestionTimeoutError("Answering took longer than 120 seconds, so it was stopped; try again.")
        return await real(self, kb, question, **kwargs)

    monkeypatch.setattr(Engine, "ask", timing_out)
    talk = "Who surveyed the railway?\nWhat about the fog?\nWhen did it open?\n\n"
    done = run("chat", "--kb", "Railway", "--json", input=talk)
    assert done.exit_code == 1
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == 3 and "answer" in lines[0] and "answer" in lines[2], lines
    assert lines[1] == {
        "question": "What about the fog?",
        "error": "Answering took longer than 120 seconds, so it was stopped; try again.",
        "status": 1,
    }
    human = run("chat", "--kb", "Railway", input="Who surveyed the railway?\n\n")
    assert human.exit_code == 0


def test_the_guilds_commands_print_json_on_success_as_on_failure(run, tmp_path, embedder):  # noqa: F811
    """`raptor --json guilds export/import/delete` printed JSON when it failed but a line of text when it
    worked; each now has --json (and the global --json turns it on), so a script always reads JSON."""
    from tests.test_cli_failures import add_guild_42

    data = tmp_path / "data"
    add_guild_42(data, embedder)
    archive = tmp_path / "g42.tar"
    exported = run("--json", "guilds", "export", "42", str(archive))
    assert exported.exit_code == 0, exported.output
    assert json.loads(exported.stdout) == {"guild": "42", "archive": str(archive), "knowledge_bases": ["guild-42-channel-7"]}
    deleted = run("guilds", "delete", "42", "--yes", "--json")
    assert deleted.exit_code == 0 and json.loads(deleted.stdout) == {"guild": "42", "deleted": True}
    imported = run("guilds", "import", str(archive), "--json")
    assert imported.exit_code == 0 and json.loads(imported.stdout) == {"guild": "42", "knowledge_bases": ["guild-42-channel-7"]}
    again = run("guilds", "import", str(archive), "--json")
    assert again.exit_code == 1 and set(json.loads(again.stdout)) == {"error", "status"}
