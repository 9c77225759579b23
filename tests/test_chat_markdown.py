"""A channel's messages are stored as Discord shows them: their markdown read, not quoted raw."""

from __future__ import annotations

import pytest

from raptor_engine.ingest.messages import clean_text


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        ("**Meeting** moved to [Friday](https://example.com/cal)", "Meeting moved to Friday"),
        ("__underline__ ~~strike~~ ||the butler did it|| `make test` *soon*", "underline strike the butler did it make test soon"),
        ("> quoted line\n-# small print\n>>> long quote", "quoted line\nsmall print\nlong quote"),
        ("see <https://example.org/x> \\*not bold\\*", "see https://example.org/x *not bold*"),
        ("<@987654321098765432> and <#111111111111111111> <:wave:123> <t:1700000000:F>",
         "<@987654321098765432> and <#111111111111111111>  <t:1700000000:F>"),  # mentions as written, emoji out
        ("## Agenda\n  > point one\n|| the vote is on Friday ||", "Agenda\npoint one\n the vote is on Friday"),
        ("run ```py\nprint('**x**')\n``` then **go**", "run ```py\nprint('**x**')\n``` then go"),  # code kept
        ("snake_case_name and 2*3*4", "snake_case_name and 2*3*4"),
    ],
)
def test_discord_markdown_reads_as_the_client_shows_it(raw, stored):
    assert clean_text(raw) == stored


def test_a_message_of_markup_alone_is_no_text():
    assert clean_text("[](https://example.com)") == ""
