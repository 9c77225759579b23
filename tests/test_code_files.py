"""Source code, configuration and log files: read as text, the whole file one fenced block in its
language under its name, so leaves carry `code`, indentation is kept and a line is one sentence."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import raptor_engine.cli as cli_module
from raptor_engine.engine import Engine
from raptor_engine.errors import IngestError
from raptor_engine.ingest.chunk import chunk_document, split_sentences
from raptor_engine.ingest.load import CODE_LANGUAGES, JSON_MINIFIED_LINE, SUPPORTED_EXTENSIONS, load_document
from raptor_engine.query.code_answers import is_setting, setting_keys

PYTHON = '''"""Read the station's settings file."""

import os


def parse_config(path):
    """Parse the key=value file at path. It keeps the last value of a key."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"no settings at {path}")
    settings = {}
    with open(path) as handle:
        for line in handle:
            key, _, value = line.partition("=")
            settings[key.strip()] = value.strip()
    return settings
'''
YAML = """# Longships station settings
station:
  name: Longships
  keeper: Ambrose Kittow
lamp:
  fuel: paraffin
  hours: 14
foghorn:
  blasts_per_minute: 2
"""
GAUGE = {
    "service": {"name": "tide-gauge", "port": 9090, "retries": 3, "endpoints": [{"path": "/tides", "method": "GET"}]},
    "logging": {"level": "debug", "file": "/var/log/tide.log", "rotate": []},
    "owner": "Trinity House",
}
MINIFIED = json.dumps(GAUGE, separators=(",", ":")).replace('"retries":3', '"retries":3,"ratio":1.10')
LOG = """2026-11-27 08:00:01 INFO Server started on port 8080. Workers: 4.
2026-11-27 08:00:02 INFO Connected to database tides_db at 10.0.0.5.
2026-11-27 08:15:43 WARNING Disk usage at 91%. Consider cleanup.
2026-11-27 08:16:10 ERROR Failed to write /var/log/tide.log: No space left on device.
    at tide.writer.flush(writer.py:88)
2026-11-27 09:00:00 INFO Shutdown requested by operator ambrose.
"""


def _words(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize("ext", sorted(ext for ext, fmt in SUPPORTED_EXTENSIONS.items() if fmt in ("code", "log")))
def test_every_code_extension_reads_as_one_fenced_block_in_its_language(ext: str) -> None:
    source = "first = 1\n    indented: two  spaces\n\n\nlast = 'x'  # end\n"
    doc = load_document(f"settings{ext}", source.encode())
    assert doc.text == f"```{CODE_LANGUAGES[ext]}\nfirst = 1\n    indented: two  spaces\n\nlast = 'x'  # end\n```"
    assert [s.heading for s in doc.sections] == [(f"settings{ext}",)]


def test_a_python_module_keeps_its_indentation_and_its_leaves_are_code() -> None:
    doc = load_document("settings_loader.py", PYTHON.encode())
    assert "        raise FileNotFoundError(f\"no settings at {path}\")\n" in doc.text
    chunks = chunk_document(doc, _words, max_tokens=25)
    assert len(chunks) > 2 and all(c.heading == ("settings_loader.py",) for c in chunks)
    inside = [c for c in chunks if "```" not in c.text]
    assert inside and all(c.code for c in inside)
    docstring = next(c for c in chunks if "It keeps" in c.text)
    said = [docstring.text[a:b].strip() for a, b in split_sentences(docstring.text, docstring.code)]
    assert '    """Parse the key=value file at path. It keeps the last value of a key."""'.strip() in said


def test_backticks_inside_a_file_do_not_close_its_fence() -> None:
    doc = load_document("notes.sh", b"echo '```'\necho done\n")
    assert doc.text == "````sh\necho '```'\necho done\n````"


def test_minified_json_is_reindented_with_its_values_as_written() -> None:
    assert max(map(len, MINIFIED.split("\n"))) > JSON_MINIFIED_LINE
    text = load_document("gauge.json", MINIFIED.encode()).text
    body = text.removeprefix("```json\n").removesuffix("\n```")
    assert json.loads(body) == json.loads(MINIFIED)
    assert '\n    "port": 9090,\n' in body and '"ratio": 1.10,' in body  # 1.10 stays 1.10, as the file says
    assert '"rotate": []' in body and body.startswith('{\n  "service": {\n')
    assert max(map(len, body.split("\n"))) < 60


@pytest.mark.parametrize(
    "source",
    [
        json.dumps(GAUGE, indent=4),  # written over lines: the author's layout is kept
        MINIFIED[:-1],  # not valid JSON: read as it is
        '{"a": ' + "[" * 5000 + "]" * 5000 + "}",  # nested too deeply for json.loads
    ],
)
def test_json_that_is_not_minified_or_not_valid_is_read_as_it_is(source: str) -> None:
    assert load_document("gauge.json", source.encode()).text == f"```json\n{source}\n```"


def test_huge_minified_json_is_read_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    import raptor_engine.ingest.load as load

    monkeypatch.setattr(load, "JSON_REINDENT_MAX_CHARS", len(MINIFIED) - 1)
    assert load_document("gauge.json", MINIFIED.encode()).text == f"```json\n{MINIFIED}\n```"


def test_deeply_nested_minified_json_is_read_as_it_is() -> None:
    """Re-indented, 900 levels would put 1,800 spaces before each of its values: many times its size."""
    source = "[" * 900 + ",".join(["1"] * 5000) + "]" * 900
    text = load_document("deep.json", source.encode()).text
    assert text == f"```json\n{source}\n```"


def test_a_log_is_lines_never_joined_nor_cut_at_full_stops() -> None:
    doc = load_document("server.log", LOG.encode())
    assert doc.text == f"```log\n{LOG.strip()}\n```"
    for chunk in chunk_document(doc, _words, max_tokens=30):
        said = [chunk.text[a:b].strip() for a, b in split_sentences(chunk.text, chunk.code)]
        assert set(said) - {"```log", "```"} <= {line.strip() for line in LOG.splitlines()}
    assert "Server started on port 8080. Workers: 4." in doc.text


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8,
        b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8,
        bytes(range(256)) * 8,
    ],
    ids=["png", "elf", "noise"],
)
@pytest.mark.parametrize("name", ["tool.py", "server.log", "config.json"])
def test_a_binary_file_under_a_code_name_is_refused_in_one_sentence(name: str, data: bytes) -> None:
    with pytest.raises(IngestError) as raised:
        load_document(name, data)
    what = {b"\x89PNG": "is a PNG image", b"\x7fELF": "is a program (an executable)"}.get(data[:4])
    mismatch = f", not text (the {name[name.rindex('.'):]} extension does not match its content)."
    assert str(raised.value) == f"{name}: " + (f"{what}{mismatch}" if what else "contains binary data, not text.")


def test_a_pdf_under_a_code_name_says_what_it_is() -> None:
    with pytest.raises(IngestError, match=r"is a PDF file, not text"):
        load_document("report.py", b"%PDF-1.4\n1 0 obj << >> endobj\n")


def test_a_code_file_over_the_size_limit_is_refused() -> None:
    with pytest.raises(IngestError, match="over the"):
        load_document("big.py", b"x = 1\n" * 100, max_bytes=100)


@pytest.mark.parametrize(
    ("line", "setting"),
    [
        ("  fuel: paraffin", True),
        ('    "port": 9090,', True),
        ("port = 8080", True),
        ("- name: Longships", True),
        ("lamp:", False),
        ('  "service": {', False),
        ("if a == b:", False),
        ("std::cout << x;", False),
    ],
)
def test_a_setting_is_a_line_that_sets_a_value(line: str, setting: bool) -> None:
    assert is_setting(line) is setting


def test_a_settings_keys_are_the_mappings_it_stands_under() -> None:
    assert setting_keys(YAML, YAML.index("fuel")) == "lamp"
    toml = "[server]\nhost = \"a\"\n\n[server.tls]\nport = 443\n"
    assert setting_keys(toml, toml.index("port")) == "server.tls"
    body = load_document("gauge.json", MINIFIED.encode()).text
    assert setting_keys(body, body.index('"method"')) == "service endpoints"


@pytest.fixture
def run(tmp_path, embedder, monkeypatch):
    monkeypatch.setattr(cli_module, "Engine", lambda settings: Engine(settings, embedder=embedder))
    data_dir = tmp_path / "data"

    def invoke(*args: str):
        return CliRunner().invoke(cli_module.cli, ["--data-dir", str(data_dir), *args], catch_exceptions=False)

    return invoke


def test_ingest_and_ask_quote_the_right_lines_of_code_config_and_logs(run, tmp_path) -> None:
    files = {"settings_loader.py": PYTHON, "station.yaml": YAML, "gauge.json": MINIFIED, "server.log": LOG}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    ingested = run("ingest", *(str(tmp_path / name) for name in files), "--kb", "t", "--quiet")
    assert ingested.exit_code == 0, ingested.output
    asked = {
        "What does parse_config return?": "return settings",
        "What fuel does the lamp use?": "fuel: paraffin",
        "How many blasts per minute does the foghorn sound?": "blasts_per_minute: 2",
        "What port does the tide-gauge service use?": '"port": 9090,',
        "Why did the write to /var/log/tide.log fail?": "ERROR Failed to write /var/log/tide.log: No space left on device.",
        "When was the shutdown requested?": "09:00:00 INFO Shutdown requested by operator ambrose.",
    }
    for question, line in asked.items():
        answer = json.loads(run("ask", question, "--kb", "t", "--json").output)
        assert line in answer["answer"], (question, answer["answer"])
