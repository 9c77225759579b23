"""Every list of the file types people read says the same: the kinds of `load.FILE_KINDS`, in its order
(the empty knowledge base's sentence, `/kb add`'s option, a refused file's line, `raptor ingest --help`,
docs/BOT.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from raptor_engine.cli import cli
from raptor_engine.errors import IngestError
from raptor_engine.ingest.load import (
    FILE_KINDS,
    SUPPORTED_EXTENSIONS,
    check_upload,
    file_extensions,
    file_kinds,
    file_types,
)

ROOT = Path(__file__).resolve().parents[1]


def test_the_kinds_hold_every_supported_extension_once():
    listed = [ext for _, extensions in FILE_KINDS for ext in extensions]
    assert sorted(listed) == sorted(SUPPORTED_EXTENSIONS) and len(set(listed)) == len(listed)


def test_the_short_list_is_short_and_the_full_one_names_every_extension():
    assert file_kinds().startswith("text, Markdown, PDF, Word, ") and file_kinds().endswith(" and log files")
    assert len(file_kinds()) <= 120  # about a line, read at a glance
    assert len(file_kinds("or", capital=True)) <= 100  # an option's description: Discord allows 100
    assert file_kinds("or", capital=True).startswith("Text, Markdown, PDF, Word, ODT, EPUB, ")
    assert all(f" {ext}" in f" {file_types().replace('(', ' ')}" for ext in SUPPORTED_EXTENSIONS)
    assert sorted(file_extensions().split()) == sorted(SUPPORTED_EXTENSIONS)


@pytest.mark.parametrize("name", ["setup.exe", "README"])
def test_a_refused_type_names_every_extension_read(name):
    with pytest.raises(IngestError) as refused:
        check_upload(name, 10, 1000)
    assert refused.value.reason.endswith(f"supported types are {file_extensions()}."), refused.value.reason
    assert len(refused.value.reason) < 300  # one sentence, read at once


def test_the_cli_help_and_the_bot_guide_list_the_same_types():
    shown = CliRunner().invoke(cli, ["ingest", "--help"], terminal_width=1000).output
    assert file_types() in " ".join(shown.split())
    assert file_types() in (ROOT / "docs" / "BOT.md").read_text()
    assert file_kinds() in (ROOT / "README.md").read_text()
