"""A question's mistyped words are read as its knowledge base's documents write them, before anything is
searched: the vector search, the full-text index and the answer's quotes then all meet the documents'
words ("who kept the lighthose?" finds the lighthouse, "Elias Marow" finds Elias Marrow)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from raptor_engine.query.respell import respelled, respellings
from raptor_engine.storage.store import NewNode, Store

SAMPLE = Path(__file__).resolve().parents[1] / "raptor_tools" / "samples" / "lighthouse_keepers.md"
BUILD = {"action": "add"}
KEEPERS = (
    "The first principal keeper was Elias Marrow, who wrote the neatest logbook on the coast. "
    "The lighthouse stood on Skerrow Point, and its lamps were lit at sunset."
)


def _commit(store: Store, kb: str, text: str, name: str = "") -> int:
    document = {"name": name or kb, "sha256": (name or kb) * 8, "size": 1, "format": "txt", "chunks": 1, "layers": 1, "tokens": 9}
    leaf = NewNode(
        key=1, layer=0, kind="leaf", text=text, tokens=30, embedding=np.ones(4, dtype=np.float32), start=0, end=len(text)
    )
    kb_id, _ = store.commit_document(kb, document, [leaf], lambda ids: [], BUILD)
    return kb_id


def test_a_word_the_documents_write_one_slip_away_is_respelled_as_they_write_it(tmp_path):
    store = Store(tmp_path / "raptor.db")
    kb_id = _commit(store, "keepers", KEEPERS)
    found = respellings(
        ["lighthose", "Marow", "logbok", "keeper", "sunet", "Zighthouse", "France", "sunnsett", "lamsp"],
        store.word_forms(kb_id),
    )
    # dropped, changed and swapped letters; a name keeps its capital; a word the documents use, a first
    # letter, a word two slips away are left as typed
    assert found == {
        "lighthose": "lighthouse", "Marow": "Marrow", "logbok": "logbook", "sunet": "sunset", "lamsp": "lamps"
    }
    store.close()


def test_only_a_long_word_the_model_does_not_know_is_respelled(tmp_path):
    store = Store(tmp_path / "raptor.db")
    kb_id = _commit(store, "keepers", KEEPERS + " Langs were spoken there.")
    forms = store.word_forms(kb_id)

    def known(words: list[str]) -> list[bool]:
        return [w in {"large", "light"} for w in words]

    # "large" is a real word, though one slip from the documents' "langs": left as asked
    assert respelled("how large were the lamsp at Skerow?", known, lambda: forms) == (
        "how large were the lamps at Skerrow?"
    )
    assert respelled("was the lamp lit?", known, lambda: forms) == "was the lamp lit?"  # nothing long enough
    assert respelled("WHO KEPT THE LIGHTHOSE?", known, lambda: forms) == "WHO KEPT THE LIGHTHOUSE?"
    store.close()


def test_the_words_are_the_knowledge_bases_own_and_read_again_after_a_change(tmp_path):
    store = Store(tmp_path / "raptor.db")
    bees = _commit(store, "bees", "Bees turn nectar into honey by fanning their wings over the comb.")
    keepers = _commit(store, "keepers", KEEPERS)
    assert respellings(["Marow", "lighthose", "necter"], store.word_forms(bees)) == {"necter": "nectar"}
    assert "hives" not in store.word_forms(bees).forms
    _commit(store, "bees", "The keepers kept two hives of bees behind the cottage.", "hives")
    assert "hives" in store.word_forms(bees).forms  # a new version of the knowledge base: read again
    assert "marrow" in store.word_forms(keepers).forms
    store.delete_kb(keepers)
    # made again at once: the same name, version and (the last row deleted) id, likely the same second
    again = _commit(store, "keepers", "Hester Marrow kept the light after him.")
    assert again == keepers
    assert "lighthouse" not in store.word_forms(again).forms  # not the deleted knowledge base's words
    store.close()


@pytest.mark.parametrize(
    ("question", "searched", "quoted"),
    [
        ("wat did Elias Marow write?", "wat did Elias Marrow write?", "Elias Marrow"),
        ("who kept the lighthose in 1887?", "who kept the lighthouse in 1887?", "Ambrose Kittow"),
        ("When was Ambrose Kitow apointed?", "When was Ambrose Kittow appointed?", "Kittow"),
    ],
)
async def test_a_misspelt_question_is_searched_and_answered_as_the_documents_spell_it(
    samples, question, searched, quoted
):
    answer = await samples.ask("lighthouse_keepers", question)
    assert answer.query == searched and answer.rewritten
    assert quoted in answer.text.split("\n")[1]


async def test_a_question_spelt_as_the_documents_spell_it_is_left_as_asked(samples):
    answer = await samples.ask("lighthouse_keepers", "Who kept the light in 1887?")
    assert answer.query == "Who kept the light in 1887?" and not answer.rewritten
    off_topic = await samples.ask("lighthouse_keepers", "What is the capital of France?")
    assert off_topic.query == "What is the capital of France?"


def test_the_cli_shows_the_question_as_searched(tmp_path, embedder, monkeypatch):
    from click.testing import CliRunner

    from raptor_engine import cli

    monkeypatch.setenv("RAPTOR_DATA_DIR", str(tmp_path / "data"))
    runner = CliRunner()
    assert runner.invoke(cli.cli, ["ingest", "--kb", "k", str(SAMPLE)]).exit_code == 0
    shown = runner.invoke(cli.cli, ["ask", "--kb", "k", "--json", "wat did Elias Marow write?"])
    assert shown.exit_code == 0, shown.output
    reply = json.loads(shown.output)
    assert reply["query"] == "wat did Elias Marrow write?" and reply["rewritten"] is True


def test_the_misspelt_copy_of_a_set_keeps_ids_and_documents_and_slips_the_questions(tmp_path):
    from raptor_tools.misspelt_set import write_misspelt_set

    source = tmp_path / "set"
    source.mkdir()
    (source / "documents.jsonl").write_text('{"doc_id": "d", "title": "t", "doc_text": "x"}\n')
    asked = {"doc_id": "d", "question_id": "q1", "question": "Who kept the lighthouse in 1887?", "answers": ["A"]}
    (source / "questions.jsonl").write_text(json.dumps(asked) + "\n")
    assert write_misspelt_set(source, tmp_path / "copy") == 1
    copied = json.loads((tmp_path / "copy" / "questions.jsonl").read_text())
    assert copied["question_id"] == "q1" and copied["question"] != asked["question"]
    assert (tmp_path / "copy" / "documents.jsonl").read_text() == (source / "documents.jsonl").read_text()


def test_a_short_word_is_respelled_only_by_two_swapped_letters_to_one_word(tmp_path):
    """qa21: a slip of four letters or fewer ('lsit', 'lmap', 'rnet') was left as typed. Now two
    neighbouring letters swapped back give the documents' word when exactly one does; a letter dropped or
    changed in a short word ('lap', 'rnt'), a name ('Lnea' mid-question), an acronym and a real word stay."""
    store = Store(tmp_path / "raptor.db")
    kb_id = _commit(store, "minutes", "The lamp was lit. The rent rose. The waiting list was long. Lena and Lean sat.")
    forms = store.word_forms(kb_id)

    def known(words: list[str]) -> list[bool]:
        return [w.lower() in {"lap", "the", "was", "what", "who", "is", "did", "she", "see", "nad"} for w in words]

    def read(question: str) -> str:
        return respelled(question, known, lambda: forms)

    assert read("lsit the members") == "list the members"
    assert read("Lsit the members") == "List the members"
    assert read("when was teh lmap lit?") == "when was the lamp lit?"
    assert read("what was the rnet?") == "what was the rent?"
    assert read("what was the rnt?") == "what was the rnt?"  # a dropped letter in a short word: too many readings
    assert read("who is Lnea?") == "who is Lnea?"  # a name is spelled anyhow
    assert read("what did the NHS say?") == "what did the NHS say?"
    assert read("was the lap long?") == "was the lap long?"  # a real word
    assert read("did she see Lnea nad Lean?") == "did she see Lnea nad Lean?"
    store.close()


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("hwo many were there?", "how many were there?"),
        ("Hwo many were there?", "How many were there?"),
        ("hwo long was it?", "how long was it?"),
        ("hwo chaired it?", "who chaired it?"),
        ("Hwo chaired it?", "Who chaired it?"),
        ("hwo was he?", "hwo was he?"),  # how or who: left as typed
        ("waht was it?", "what was it?"),
        ("Whta was it?", "What was it?"),
        ("mnay were there?", "many were there?"),
    ],
)
def test_a_short_question_word_is_read_by_the_word_after_it_when_its_slip_is_ambiguous(tmp_path, typed, meant):
    store = Store(tmp_path / "raptor.db")
    kb_id = _commit(store, "minutes", "Eleven members came. Joan chaired the meeting.")
    known = lambda words: [w.lower() in {"was", "it", "were", "there", "long", "he", "chaired"} for w in words]  # noqa: E731
    assert respelled(typed, known, lambda: store.word_forms(kb_id)) == meant
    store.close()
