"""A document's own bracketed numbers ("[2]", "[2, 3]", "【2】", ...) never become an answer's citation
markers, through the real engine with the extractive answerer and with an OpenAI-protocol model."""

from __future__ import annotations

import re

import pytest

from raptor_engine import Engine, Settings
from raptor_engine.llm import OpenAIAnswerer, format_context
from raptor_engine.query.answer import neutralise_markers
from raptor_engine.types import ContextNode
from tests.llm_server import FakeLLMServer
from tests.unhurried import unhurried_settings

ASCII_MARKER = re.compile(r"\[(\d+)\]")

# Every sentence carries a reference in one of the forms a document uses, so whatever is quoted has one.
REFERENCES = ["[2]", "[ 3 ]", "[12]", "[2, 3]", "[2-4]", "【2】", "^[2]", "[^3]", "[1]", "[٣]"]
TOPICS = [
    ("The Harlow bridge", "was completed in 1902 after four years of work"),
    ("Its granite piers", "were quarried at Penrith and carried by barge"),
    ("The engineer Mary Voss", "designed the cantilever spans of the bridge"),
    ("Tolls on the bridge", "paid for its maintenance until 1950"),
    ("A flood in 1911", "damaged the eastern pier of the bridge"),
    ("The repairs to the bridge", "used steel bands around the cracked granite"),
    ("The bridge keeper", "lived in a cottage at the western end"),
    ("Painters of the bridge", "renewed its red paint every seven years"),
]


def bridge_document() -> str:
    """Paragraphs whose every sentence ends with, or quotes, a bracketed number."""
    paragraphs = []
    for round_ in range(3):
        sentences = []
        for i, (subject, rest) in enumerate(TOPICS):
            ref = REFERENCES[(i + round_) % len(REFERENCES)]
            if i % 3 == 0:
                sentences.append(f"“{subject} {rest},” the report says {ref}.")
            else:
                sentences.append(f"{subject} {rest} {ref}.")
        paragraphs.append(" ".join(sentences))
    return "# The Harlow bridge\n\n" + "\n\n".join(paragraphs) + "\n"


def assert_only_real_markers(text: str, citations: int) -> None:
    """Every ASCII [n] left in the answer is one of its citations, numbered 1..citations."""
    markers = {int(m) for m in ASCII_MARKER.findall(text)}
    assert markers == set(range(1, citations + 1)), text
    stripped = ASCII_MARKER.sub("", text)
    assert not re.search(r"[\[【]\s*\^?\s*\d", stripped), f"a document's number left marker-shaped: {text}"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("see [2].", "see ［2］."),
        ("[ 2 ]", "［ 2 ］"),
        ("[12]", "［12］"),
        ("[2, 3]", "［2, 3］"),
        ("[2-4]", "［2-4］"),
        ("[2–4]", "［2–4］"),
        ("【2】", "［2］"),
        ("^[2]", "^［2］"),
        ("[^2]", "［^2］"),
        ("“as noted [3]”", "“as noted ［3］”"),
        ("[٣]", "［٣］"),
        ("[sic] and [a]", "[sic] and [a]"),
    ],
)
def test_document_numbers_are_shown_but_never_marker_shaped(raw, shown):
    assert neutralise_markers(raw) == shown
    assert len(neutralise_markers(raw)) == len(raw)  # offsets into the text (sentences, page marks) hold
    assert neutralise_markers(shown) == shown  # idempotent: applying it twice changes nothing


NESTED = str.maketrans({"\u201c": "\u2018", "\u201d": "\u2019"})


async def test_the_extractive_answer_never_turns_a_documents_numbers_into_markers(tmp_path, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)
    try:
        await engine.ingest("kb", "bridge.md", bridge_document().encode())
        for question in (
            "Who designed the spans of the bridge?",
            "Where were the piers quarried, and what did the flood damage?",
            "When was the bridge completed and who paid for its maintenance?",
        ):
            answer = await engine.ask("kb", question)
            assert len(answer.context.nodes) >= 3  # numbers up to 3 would have found a block to point at
            lines = [ln for ln in answer.text.splitlines() if ln.startswith("- ")]
            assert lines and all(len(ASCII_MARKER.findall(ln)) == 1 for ln in lines), answer.text
            assert all(re.search(r"” \[\d+\]$", ln) for ln in lines), answer.text
            assert "［" in answer.text  # the document's own numbers are still shown, neutralised
            assert_only_real_markers(answer.text, len(answer.citations))
            for citation in answer.citations:  # each marker points at the block its quote came from
                line = next(ln for ln in lines if ln.endswith(f"[{citation.marker}]"))
                quote = line[3 : line.rindex("”")]
                node = next(n for n in answer.context.nodes if n.node_id == citation.node_id)
                shown = neutralise_markers(" ".join(node.text.split()))
                assert quote[:30] in shown.translate(NESTED)  # a quotation inside a quote is in single marks
    finally:
        engine.close()


def copy_first_block(body: dict) -> str:
    """A model that copies the first block's text verbatim, reference numbers and all, then cites [1]."""
    user = body["messages"][-1]["content"]
    block = re.search(r"^\[1\] \([^\n]*\)\n(.*?)(?:\n\n\[\d+\] \(|\Z)", user, flags=re.S | re.M)
    assert block, user
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(block.group(1).split()))
    return " ".join(sentences[:3]) + " [1]"


async def test_an_llm_copying_a_reference_list_cannot_forge_citations(tmp_path, embedder):
    async with FakeLLMServer(responder=copy_first_block) as server:
        llm = Settings(
            data_dir=tmp_path / "data",
            llm_base_url=server.base_url,
            llm_api_key="sk-test",
            llm_answer_model="answer-model",
        )
        answerer = OpenAIAnswerer(llm, backoff_base=0.001)
        engine = Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder, answerer=answerer)
        try:
            await engine.ingest("kb", "bridge.md", bridge_document().encode())
            answer = await engine.ask("kb", "Who designed the spans of the bridge?")
            prompt = server.requests[-1].messages[-1]["content"]
            labels = re.findall(r"^\[(\d+)\] \(node \d+", prompt, flags=re.M)
            assert len(labels) == len(answer.context.nodes) >= 3
            # the only [n] the model sees are the block labels
            assert len(ASCII_MARKER.findall(prompt)) == len(labels), prompt
            assert "［" in answer.text and len(answer.citations) == 1
            assert answer.citations[0].node_id == answer.context.nodes[0].node_id
            assert_only_real_markers(answer.text, 1)
        finally:
            engine.close()


def test_block_labels_are_neutralised_too():
    """A heading or file name with a bracketed number does not put a second [n] into a block's label."""
    node = ContextNode(5, 0, "refs[2].md", 0.9, "Text [3].", 3, 1, heading=("Notes [4]",))
    block = format_context([node])
    assert ASCII_MARKER.findall(block) == ["1"]
    assert "refs［2］.md" in block and "Notes ［4］" in block and "Text ［3］." in block


# ---- cross-document summaries name their documents ------------------------------------------


def test_cross_document_citations_name_their_documents_in_the_cli(tmp_path, embedder, monkeypatch):
    import json

    from click.testing import CliRunner

    import raptor_engine.cli as cli_module
    from tests.sample_texts import BEEKEEPING, RAILWAY

    monkeypatch.setattr(cli_module, "Engine", lambda settings: Engine(settings, embedder=embedder))
    paths = {
        "railway.md": RAILWAY,
        "railway-2nd.md": RAILWAY.replace("The Harrow Valley Railway", "The Harrow Valley Line, 2nd edition"),
        "bees.md": BEEKEEPING,
    }
    for name, text in paths.items():
        (tmp_path / name).write_text(text)

    def raptor(*args: str):
        result = CliRunner().invoke(
            cli_module.cli, ["--data-dir", str(tmp_path / "data"), *args], catch_exceptions=False
        )
        assert result.exit_code == 0, result.output
        return result.output

    raptor("ingest", *(str(tmp_path / name) for name in paths), "--kb", "t", "--quiet")
    tree = json.loads(raptor("tree", "--kb", "t", "--json"))
    top = next(layer["layer"] for layer in tree["layers"] if layer["kind"] == "kb")
    assert "cross-document summaries" in raptor("tree", "--kb", "t")

    asked = json.loads(
        raptor("ask", "When was the railway line built?", "--kb", "t", "--layer", str(top), "--json")
    )
    assert asked["citations"]
    for citation in asked["citations"]:
        assert citation["document"] is None and citation["documents"]
        leaves = [d["leaves"] for d in citation["documents"]]
        assert leaves == sorted(leaves, reverse=True)  # most leaves first
        assert sum(leaves) == citation["leaf_count"]  # every leaf belongs to exactly one document
        assert {d["name"] for d in citation["documents"]} <= set(paths)
    printed = raptor("ask", "When was the railway line built?", "--kb", "t", "--layer", str(top))
    assert "all documents" not in printed
    assert re.search(r"\d documents: [\w.-]+(, [\w.-]+)+|· (railway|railway-2nd|bees)\.md", printed)
