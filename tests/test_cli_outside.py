"""The `raptor` command line as someone who has not read the code drives it: a mistyped --kb names the
knowledge base meant, --json gives JSON on stdout even when the command fails, `--json` may come before
the command, and `ask -` reads the question from stdin. Run in-process against a real data directory."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import raptor_engine.cli as cli_module
from raptor_engine.cli import SHOWN_KBS, kb_suggestion
from raptor_engine.engine import Engine
from raptor_engine.errors import did_you_mean
from tests.sample_texts import RAILWAY


@pytest.fixture
def run(tmp_path, embedder, monkeypatch):
    """Invoke `raptor ARGS` (stdout and stderr apart) on a data dir holding 'Railway' with one document."""
    monkeypatch.setattr(cli_module, "Engine", lambda settings: Engine(settings, embedder=embedder))
    data_dir = tmp_path / "data"

    def invoke(*args: str, **options):
        return CliRunner().invoke(cli_module.cli, ["--data-dir", str(data_dir), *args], **options)

    railway = tmp_path / "railway.md"
    railway.write_text(RAILWAY)
    assert invoke("ingest", str(railway), "--kb", "Railway", "--quiet").exit_code == 0
    return invoke


def test_the_suggestion_is_the_close_name_else_the_names_there_are():
    assert kb_suggestion("railway", ["Railway", "bees"]) == " Did you mean 'Railway'?"
    assert kb_suggestion("raiway", ["Railway", "bees"]) == " Did you mean 'Railway'?"
    assert kb_suggestion("zzz", ["Railway", "bees"]) == " The knowledge bases here: 'Railway', 'bees'."
    many = [f"kb{i:02}" for i in range(SHOWN_KBS + 3)]
    assert kb_suggestion("zzz", many).endswith("'kb04' and 3 more.")
    assert kb_suggestion("zzz", []) == ""
    assert kb_suggestion("Railway", ["Railway"]) == ""  # never itself


def test_did_you_mean_is_only_a_close_name_and_never_the_same_one():
    assert did_you_mean("RAILWAY.MD", ["railway.md", "bees.md"]) == " Did you mean 'railway.md'?"
    assert did_you_mean("lighthouse.pdf", ["railway.md", "bees.md"]) == ""
    assert did_you_mean("bees.md", ["bees.md"]) == ""


def test_forget_of_a_name_two_documents_share_names_them_and_removes_neither(run, tmp_path):
    """Two files called notes.md from two folders: `forget notes.md` cannot choose, so it says which sha256
    prefixes to choose from (and one of them removes just that one); a typo names the close document."""
    for folder, text in (("a", "The keeper rang the fog bell."), ("b", "The ferry left at dawn.")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "notes.md").write_text(f"{text} It was a quiet evening on the coast.\n")
        assert run("ingest", str(tmp_path / folder / "notes.md"), "--kb", "Railway", "--quiet").exit_code == 0
    listed = json.loads(run("docs", "--kb", "Railway", "--json").stdout)
    prefixes = [d["sha256"][:12] for d in listed if d["name"] == "notes.md"]
    both = run("forget", "notes.md", "--kb", "Railway")
    assert both.exit_code == 1 and both.stdout == ""
    assert both.stderr == (
        f"Error: Several documents are named 'notes.md' (sha256 {', '.join(prefixes)}); "
        "name one by its sha256 prefix instead.\n"
    )
    typo = run("forget", "note.md", "--kb", "Railway")
    assert typo.stderr == "Error: No document named 'note.md' in this knowledge base. Did you mean 'notes.md'?\n"
    assert json.loads(run("docs", "--kb", "Railway", "--json").stdout) == listed
    assert run("forget", prefixes[0], "--kb", "Railway").exit_code == 0
    left = [d["sha256"][:12] for d in json.loads(run("docs", "--kb", "Railway", "--json").stdout)]
    assert prefixes[0] not in left and prefixes[1] in left


@pytest.mark.parametrize(
    "command",
    [
        ("ask", "Who surveyed the railway?", "--kb", "railway"),
        ("forget", "railway.md", "--kb", "railway"),
        ("chat", "--kb", "railway"),
        ("tree", "--kb", "railway", "--png", "out.png"),
    ],
    ids=["ask", "forget", "chat", "tree --png"],
)
def test_a_mistyped_kb_is_one_sentence_that_names_the_one_meant(run, command):
    done = run(*command, input="Who?\n\n")
    assert done.exit_code == 1 and done.stdout == ""
    assert done.stderr.startswith("Error: The knowledge base 'railway' has no documents"), done.stderr
    assert done.stderr.rstrip().endswith("Did you mean 'Railway'?") and done.stderr.count("\n") == 1
    assert [d["name"] for d in json.loads(run("docs", "--kb", "Railway", "--json").stdout)] == ["railway.md"]


@pytest.mark.parametrize("command", [("docs", "--kb", "railway"), ("tree", "--kb", "railway")])
def test_listing_a_mistyped_kb_names_the_one_meant(run, command):
    """As every command on one knowledge base: status 1 and the sentence (tests/test_cli_script.py)."""
    done = run(*command)
    assert done.exit_code == 1 and done.stdout == ""
    assert done.stderr.rstrip().endswith("Did you mean 'Railway'?")


@pytest.mark.parametrize(
    ("command", "status", "error"),
    [
        (("ask", "   ", "--kb", "Railway", "--json"), 1, "The question is empty."),
        (("ask", "Who?", "--kb", "nope", "--json"), 1, "The knowledge base 'nope' has no documents yet;"),
        (("forget", "ghost.md", "--kb", "Railway", "--json"), 1, "No document named 'ghost.md'"),
        (("ask", "--json", "--kb", "Railway"), 2, "Missing argument 'QUESTION'."),
        (("docs", "--json"), 2, "Missing option '--kb'."),
        (("tree", "--kb", "Railway", "--json", "--budget", "3"), 2, "No such option '--budget'."),
        (("--json", "docs", "--kb", ""), 2, "Invalid value for '--kb': the knowledge base name is empty."),
        (("--json", "--bogus"), 2, "No such option '--bogus'."),
        (("--json", "guilds", "delete", "123", "--yes"), 1, "There is no store for 123"),
    ],
    ids=["empty question", "no such kb", "no such document", "no question", "no --kb", "unknown option",
         "empty kb name", "unknown global option", "guilds delete"],
)
def test_with_json_a_failure_is_json_on_stdout_too(run, command, status, error):
    """A program that reads stdout gets JSON whatever happened: {"error": the sentence, "status": the
    exit status}; the sentence is on stderr as without --json, and nothing changed in the store."""
    done = run(*command)
    assert done.exit_code == status, done.output
    failure = json.loads(done.stdout)
    assert failure["status"] == status and failure["error"].startswith(error), failure
    assert done.stderr == f"Error: {failure['error']}\n"
    assert [d["name"] for d in json.loads(run("docs", "--kb", "Railway", "--json").stdout)] == ["railway.md"]


def test_an_ingest_that_printed_its_json_adds_no_second_document(run, tmp_path):
    """`ingest --json` of a good and a bad file prints every file's outcome; the failure's exit
    status is 1 and stdout stays one JSON document (no error object after it)."""
    good = tmp_path / "notes.md"
    good.write_text("The lighthouse keeper rang the fog bell at dusk every evening.\n")
    bad = tmp_path / "scan.pdf"
    bad.write_bytes(b"%PDF-1.4 truncated")
    done = run("--json", "ingest", str(good), str(bad), "--kb", "Railway")
    assert done.exit_code == 1
    outcomes = json.loads(done.stdout)
    assert [o["status"] for o in outcomes] == ["added", "refused"] and outcomes[0]["document"]["name"] == "notes.md"


@pytest.mark.parametrize("command", [("docs", "--kb", "Railway"), ("tree", "--kb", "Railway"), ("guilds", "list")])
def test_json_before_the_command_is_the_commands_own_json(run, command):
    assert json.loads(run("--json", *command).stdout) == json.loads(run(*command, "--json").stdout)


def test_a_question_of_dash_is_read_from_stdin(run):
    asked = run("ask", "-", "--kb", "Railway", "--json", input="Who surveyed\n the railway?\n")
    assert asked.exit_code == 0, asked.output
    answer = json.loads(asked.stdout)
    assert answer["question"] == "Who surveyed the railway?" and "Pennick" in answer["answer"]

    undecodable = run("ask", "-", "--kb", "Railway", "--json", input=b"Who surveyed the railway \xff?")
    assert json.loads(undecodable.stdout)["question"] == "Who surveyed the railway \ufffd?"


@pytest.mark.parametrize(
    ("text", "error"),
    [("", "The question is empty."), (" \n\t ", "The question is empty."), ("why " * 40_000, "longer than")],
    ids=["empty", "whitespace", "endless"],
)
def test_a_question_from_stdin_that_cannot_be_asked_is_one_sentence(run, text, error):
    done = run("ask", "-", "--kb", "Railway", input=text)
    assert done.exit_code == 1 and done.stdout == ""
    assert done.stderr.startswith("Error: ") and error in done.stderr and done.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("asked", "said"),
    [
        ("guild-42-note", " Did you mean 'guild-42-notes'?"),  # before: "The knowledge bases here: 'Railway'."
        ("guild-42-Lists", " Did you mean 'guild-42-lists'?"),
        ("guild-42-zzz", " The knowledge bases here: 'guild-42-lists', 'guild-42-notes'."),  # no name is close
        ("guild-43-note", " Did you mean 'guild-43-notes'?"),
        ("guild-44-notes", ""),  # a guild with no store: nothing, and never another guild's names
        ("railway", " Did you mean 'Railway'?"),
        ("zzz", " The knowledge bases here: 'Railway'."),  # the main store's own, no guild's
    ],
)
def test_a_mistyped_kb_is_helped_within_its_own_guilds_store_and_never_shown_anothers(run, tmp_path, asked, said):
    """The suggestion came from the main store alone, whatever store --kb was in: a guild's knowledge base
    mistyped got the main store's names. Now only names of the store the asked one would be in, the
    guild's prefix weighing nothing in how close a name is (else 'guild-42-zzz' is close to every name)."""
    note = tmp_path / "secret.md"
    note.write_text("The vault code of guild 43 is 4471. The keeper holds it.\n")
    for kb in ("guild-42-notes", "guild-42-lists", "guild-43-notes", "guild-43-secretplans"):
        assert run("ingest", str(note), "--kb", kb, "--quiet").exit_code == 0
    done = run("ask", "Who?", "--kb", asked)
    assert done.exit_code == 1
    sentence = f"The knowledge base {asked!r} has no documents yet; add one with: raptor ingest FILE --kb {asked}"
    assert done.stderr == f"Error: {sentence}{said}\n"
    own = asked.split("-")[1] if asked.startswith("guild-") else None
    assert all(f"guild-{guild}-" not in done.stderr for guild in ("42", "43") if guild != own)


def test_a_question_longer_than_the_engine_searches_is_shortened_and_said(run):
    """The CLI shortens a long question as the bot does and says so (before: refused, "longer than 2000
    characters", while the bot cut the same question without a word)."""
    question = "I was reading about the line and the stations it passed. " * 40 + "Who surveyed the railway?"
    done = run("ask", question, "--kb", "Railway")
    assert done.exit_code == 0, done.stderr
    assert f"This question is {len(question):,} characters, more than the 2,000" in done.stdout
    assert "Searched as: Who surveyed the railway?" in done.stdout
    answer = json.loads(run("ask", question, "--kb", "Railway", "--json").stdout)
    assert answer["shortened_from"] == len(question) and answer["searched"] == "Who surveyed the railway?"
    assert "Pennick" in answer["answer"]
