"""`python -m raptor_tools.support_threshold`: the paraphrases keep what a claim states, the data set
knows which node holds each sentence, and the command prints its table from a folder shaped like
../shared/evaldata (two small documents here, so the test needs no evaluation data)."""

from __future__ import annotations

import json
import random
import re

from raptor_tools import support_threshold as tool
from tests.sample_texts import BEEKEEPING, RAILWAY

SENTENCE = (
    "In October 1903, the river Merrow rose eight feet and the company began to rebuild the embankment."
)


def test_paraphrases_keep_the_numbers_and_change_the_words():
    rng = random.Random(1)
    for kind in ("reordered", "dropped", "synonyms", "paraphrased"):
        changed = tool.paraphrase(SENTENCE, kind, rng)
        assert changed != SENTENCE and "1903" in changed, kind
    assert tool.reorder(SENTENCE).startswith("The company began to rebuild the embankment, ")
    assert "started" in tool.swap_synonyms(SENTENCE)
    assert tool.change_number(SENTENCE, rng) != SENTENCE


def test_each_supported_sentence_knows_the_node_that_holds_it():
    rng = random.Random(3)
    built = tool.build_answer("railway", "dev", RAILWAY, tool.claims_of(BEEKEEPING), rng)
    assert built is not None
    supported = [c for c in built.cases if c.gold]
    assert len(supported) == tool.SUPPORTED
    copy = next(c for c in supported if c.kind == "copy")
    assert all(copy.claim in built.nodes[p - 1].text for p in copy.gold)
    assert all(not c.gold for c in built.cases if c.kind in ("other", "elsewhere", "number"))


def test_the_command_prints_the_table_and_the_choice(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(tool, "SETS", ("small",))
    monkeypatch.setattr(tool, "CONTEXT_NODES", 3)  # windows smaller than the documents, so some are elsewhere
    folder = tmp_path / "small"
    folder.mkdir()
    rows = [{"doc_id": name, "doc_text": text} for name, text in (("railway", RAILWAY), ("bees", BEEKEEPING))]
    (folder / "documents.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    code = tool.main(["--data", str(tmp_path), "--no-timing"])
    out = capsys.readouterr().out
    assert re.search(r"^\d+ answers, \d+ sentences", out)
    assert "| weight | threshold | dev P |" in out
    assert code in (0, 1) and (("Chosen: weight" in out) == (code == 0))


def test_no_documents_is_one_clear_line(tmp_path, capsys):
    assert tool.main(["--data", str(tmp_path), "--no-timing"]) == 1
    assert "no documents under" in capsys.readouterr().err
