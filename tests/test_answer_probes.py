"""The answer probe set (tests/fixtures/answer_probes, raptor_tools/answer_probes.py): its files are
sound, its scoring counts what it says, and on its development half every first quote answers."""

from __future__ import annotations

import asyncio
import json

import pytest

from raptor_engine.ingest.sentences import sentence_key
from raptor_tools.answer_probes import (
    KINDS_SET,
    PROBES,
    SPLITS,
    Outcome,
    Probe,
    document_path,
    holds_answer,
    load_probes,
    render,
    run_probes,
    tally,
)

KINDS = {
    "who", "what", "when", "how_many", "where", "measure", "why", "how_to", "yes_no", "which", "who_did",
    "attribute", "pronoun", "theme",
}
# the second set's (`--set kinds`): what the first barely asks
SECOND_KINDS = {
    "cause", "result", "when", "purpose", "superlative", "comparison", "manner", "negative", "responsible",
    "how_many",
}


@pytest.mark.parametrize(("root", "kinds", "documents"), [(PROBES, KINDS, 5), (KINDS_SET, SECOND_KINDS, 4)])
@pytest.mark.parametrize("split", SPLITS)
def test_every_probe_answer_is_a_passage_of_its_document(split, root, kinds, documents):
    probes = load_probes(split, root)
    assert len({p.doc for p in probes}) >= documents and len(probes) >= 25
    for probe in probes:
        text = f" {sentence_key(document_path(probe.split, probe.doc, root).read_text(encoding='utf-8'))} "
        assert probe.kind in kinds, probe
        for answer in probe.answers:
            assert f" {sentence_key(answer)} " in text, (probe.question, answer)


def test_the_two_halves_share_no_document():
    halves = [{p.doc for p in load_probes(split)} for split in SPLITS]
    assert not halves[0] & halves[1]
    assert len(load_probes("all")) == sum(len(load_probes(split)) for split in SPLITS)


def test_a_quote_holds_an_answer_whatever_its_case_punctuation_and_neighbours():
    answers = ("The jug holds 1.7 litres of water",)
    assert holds_answer("Fill it. The jug holds 1.7 litres of water, enough for seven cups.", answers)
    assert not holds_answer("The jug holds water.", answers)
    assert not holds_answer("XThe jug holds 1.7 litres of water", answers)  # whole words only


def test_the_tally_counts_first_quotes_and_quotes_by_kind():
    probe = Probe("dev", "a.md", "How many?", "how_many", ("nine arches",))
    outcomes = [
        Outcome(probe, ("It has nine arches.", "Other.")),
        Outcome(probe, ("Other.", "It has nine arches.")),
        Outcome(Probe("dev", "a.md", "Who?", "who", ("a mason",)), ("Nobody.",)),
        Outcome(Probe("dev", "a.md", "Who?", "who", ("a mason",)), ()),
    ]
    assert tally(outcomes) == {"all": (4, 1, 2), "how_many": (2, 1, 2), "who": (2, 0, 0)}
    assert "| how_many | 2 | 1 (50%) | 2 (100%) |" in render(outcomes)
    assert "MISS [dev/a.md] Who?\n  first: (nothing quoted)" in render(outcomes, show_misses=True)


def test_the_probe_files_are_json_lines_with_the_fields_the_loader_reads():
    for split in SPLITS:
        for line in (PROBES / split / "questions.jsonl").read_text(encoding="utf-8").splitlines():
            assert set(json.loads(line)) == {"doc", "question", "kind", "answers"}


# Development probes the first quote still misses (docs/EVALUATION.md): "Who was Elias Marrow?", whose
# describing sentence and "Elias Marrow died in March 1861 ..." are tied with fp32 vectors (0.777 against
# 0.775); with each sentence embedded alone (so quotes do not depend on earlier questions) the int8 rounding
# settles it for the death, where a batch's rounding settled it the other way ("Quotes that do not depend
# on what was asked before"). "Why is a new water tank needed?" is answered as the old tank's fault, stated
# in so many words, counts in full under the blend (`answer.stated_form_score`), and the Great Refractor's
# purpose as its sentence reads the section the leaf before it ends in, and as a purpose straight after the
# asked verb ("was built to measure", `answer._purpose_after_the_asked_verb`) is stated in so many words too.
KNOWN_MISSES = frozenset({"Who was Elias Marrow?"})


def test_every_development_probe_but_the_known_misses_is_answered_by_the_first_quote(tmp_path, embedder):
    outcomes = asyncio.run(run_probes(load_probes("dev"), tmp_path, embedder=embedder))
    missed = {o.probe.question: o.quotes[:1] for o in outcomes if not o.first_answers}
    assert set(missed) <= KNOWN_MISSES, missed


def test_the_two_sets_and_the_halves_of_the_second_share_no_document():
    first = {p.doc for p in load_probes("all")}
    halves = [{p.doc for p in load_probes(split, KINDS_SET)} for split in SPLITS]
    assert not halves[0] & halves[1]
    assert not (halves[0] | halves[1]) & first


# Development probes of the second set the first quote still misses (docs/EVALUATION.md): why the tide mill
# stopped (the learned model, which has most of a why question's say, prefers a sentence sharing more
# words), who restored the mill and how it was paid for (the
# answer names neither 'restoring' nor 'pay'), who was responsible for the breach (said as 'blamed the
# company', in a sentence sharing no word with the question), and why the dam failed (the inquiry's
# sentence leads: it blames the company for failing to inspect the culvert, a reason the set does not list).
# Whether the Alpen Mini is lighter than the Brisk 500 was lost, and how the trust paid for the restoration
# gained, when each sentence came to be embedded alone: the first quote is "The Brisk 500 ... weighs 420
# grams" or "We recommend the Brisk 500 ... light enough for a rucksack", both given the compared scale's
# bonus and 0.0055 apart with fp32 vectors (docs/EVALUATION.md, "Quotes that do not depend on what was
# asked before"). How the trust paid is said where the money came from ("raised by public appeal",
# `answer._means_score`), which its purchase at a price ("bought the mill ... for 4,000 pounds") is not.
SECOND_KNOWN_MISSES = frozenset(
    {
        "Why did the tide mill stop grinding?",
        "Who was responsible for restoring the mill?",
        "Why did the dam fail?",
        "Who was responsible for the breach?",
        "Is the Alpen Mini lighter than the Brisk 500?",
    }
)


def test_every_development_probe_of_the_second_set_but_its_known_misses_is_answered_first(tmp_path, embedder):
    outcomes = asyncio.run(run_probes(load_probes("dev", KINDS_SET), tmp_path, KINDS_SET, embedder=embedder))
    missed = {o.probe.question: o.quotes[:1] for o in outcomes if not o.first_answers}
    assert set(missed) <= SECOND_KNOWN_MISSES, missed
