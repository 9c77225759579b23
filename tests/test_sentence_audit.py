"""The splitter audit (`raptor_tools.sentence_audit`) on small sets written here: no evaluation data needed."""

from __future__ import annotations

import json
from pathlib import Path

from raptor_tools import sentence_audit as audit
from raptor_tools.sentence_audit import Boundary, classify


def _classes(before: str, after: str | None, quote_open: bool = False) -> set[str]:
    return set(classify([Boundary("t", before, after, quote_open)]))


def test_each_class_catches_its_boundary_and_passes_an_ordinary_one():
    assert _classes("The cat sat.", "It purred.") == set()
    assert _classes("Shown by Davidson et al.", "BIBREF9 collected tweets.") == {
        "end-abbreviation",
        "start-citation",
    }
    assert _classes("As shown in Fig.", "3 it works.") == {"end-abbreviation"}
    assert _classes("It was J. R.", "R. Tolkien.") == {"end-initial"}
    assert _classes("Too many would", "know.") == {"start-lowercase"}
    assert _classes("It uses VerbNet.", "garg2012unsupervised proposed it.") == {"start-citation"}
    assert _classes('" Ivy!', '" Strike was beside her.', quote_open=True) == {"start-closing"}
    assert _classes("She fell.", '" Ivy! "', quote_open=False) == set()
    assert _classes("It rose by 3.", "5 points.") == {"number-cut"}
    assert _classes("She waited....", "Then she left.") == {"ellipsis"}
    assert _classes("See https://example.org/x.", "Then run it.") == {"url-email"}
    assert _classes("2.", "We show it works.") == {"list-number-alone"}
    assert _classes('"Stop!"', "Tom said.") == {"dialogue"}
    assert _classes(" ".join(["word"] * 81) + ".", None) == {"long"}
    assert _classes("The end.", None) == set()


def _write_set(root: Path, name: str, texts: list[str]) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    rows = [{"doc_id": f"d{i}", "doc_text": text} for i, text in enumerate(texts)]
    (folder / "documents.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    question = {"doc_id": "d0", "question": "What?", "answer": "x"}
    (folder / "questions.jsonl").write_text(json.dumps(question), encoding="utf-8")


def test_the_audit_splits_every_document_of_every_set_and_counts_by_set(tmp_path, capsys):
    _write_set(
        tmp_path, "papers", ["Zhang et al. [12] used a CNN. It worked.", "As shown in Fig. 3, it works."]
    )
    _write_set(tmp_path, "stories", ['"Wait!" Ninon said. He left. "No." Then silence.'])
    sentences, by_set = audit.audit(tmp_path)
    assert sentences == {"papers": 3, "stories": 4}
    assert "end-abbreviation" not in by_set.get("papers", {})  # the splitter keeps "et al. [12]" whole
    assert [b.before for b in by_set["stories"]["end-abbreviation"]] == ['"No."']

    assert audit.main(["--data", str(tmp_path), "--show", "end-abbreviation"]) == 0
    out = capsys.readouterr().out
    assert "| sentences | 3 | 4 | 7 |" in out
    assert "| end-abbreviation | 0 | 1 | 1 |" in out
    assert "[stories/d0]" in out


def test_the_audit_says_so_when_there_is_no_data(tmp_path, capsys):
    assert audit.main(["--data", str(tmp_path / "missing")]) == 2
    assert "not a folder" in capsys.readouterr().err
