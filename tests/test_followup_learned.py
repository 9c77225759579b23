"""qa16: a follow-up's he/she learns the gender of a name the names table does not know ('Jude',
'Frankie', a story's invented 'Ansel') from what the documents say around it: the name followed by
she/her or he/his in its sentence or the next, a title, a relative's word ('his sister Frankie'), when
that evidence is one-sided. `said` stands for `Engine.said_about` (the knowledge base's full-text index,
read at question time) in the pure tests; the last tests ask the real engine."""

from __future__ import annotations

import asyncio

import pytest

from raptor_engine import Engine, Turn
from raptor_engine.query.followup import standalone_question
from tests.unhurried import unhurried_settings


def talk(*turns: str) -> list[Turn]:
    return [
        Turn("user", text) if i % 2 == 0 else Turn("assistant", f"\u201c{text}\u201d [1]")
        for i, text in enumerate(turns)
    ]


KEEPERS = talk("Who kept the Skerry light?", "Jude Penhallow and Ansel Trask kept the Skerry light from 1890.")


def documents(*sentences: str):
    """A `said` over these sentences: those holding the name, one a line; the names looked up."""
    asked: list[str] = []

    def said(name: str) -> str:
        asked.append(name)
        return "\n".join(sentence for sentence in sentences if name in sentence)

    return said, asked


STORM = "Jude climbed the tower each time, and she relit the lamp by hand."
OIL = "Ansel rowed to the mainland for oil, and his boat was the only one on the island."


def asked_as(question: str, conversation: list[Turn], said=None) -> str:
    return standalone_question(question, conversation, said=said).split(" (context: ")[0]


@pytest.mark.parametrize(
    ("sentences", "question", "standalone"),
    [
        ((STORM, OIL), "what did she do in the storm?", "What did Jude Penhallow do in the storm?"),
        ((STORM, OIL), "where did he row to?", "Where did Ansel Trask row to?"),
        ((STORM,), "what did she do in the storm?", "What did Jude Penhallow do in the storm?"),  # Ansel: the only other
        ((OIL,), "where did he row to?", "Where did Ansel Trask row to?"),
        # a relative's word or a title before the name
        (("Mrs Penhallow left; his sister Jude stayed on.",), "what did she do?", "What did Jude Penhallow do?"),
        (("Everyone knew Miss Jude at Porthgwarra.",), "what did she do?", "What did Jude Penhallow do?"),
        # the she opening the next sentence
        (("Jude came from Porthgwarra. She was the keeper's daughter.",), "what did she do?", "What did Jude Penhallow do?"),
    ],
)
def test_a_names_gender_is_learned_from_what_the_documents_say_around_it(sentences, question, standalone):
    said, _ = documents(*sentences)
    assert asked_as(question, KEEPERS) == question[0].upper() + question[1:]  # two people, neither known
    assert asked_as(question, KEEPERS, said) == standalone


def test_evidence_both_ways_gives_no_gender_and_nothing_is_asked_without_a_he_or_she():
    said, asked = documents(STORM, "Jude lost his oilskin in the storm.")
    assert asked_as("what did she do?", KEEPERS, said) == "What did she do?"
    assert asked == ["Jude", "Ansel"]
    said, asked = documents(STORM, OIL)
    standalone_question("when did the storm come?", KEEPERS, said=said)
    assert asked == []


def test_a_name_the_table_knows_or_the_conversation_shows_is_not_looked_up():
    said, asked = documents("Margaret lost his oilskin.", OIL)
    conversation = talk("Who kept the light?", "Margaret Penhallow and Ansel Trask kept the light. Ansel fished, and he sold oil.")
    assert asked_as("what did she do?", conversation, said) == "What did Margaret Penhallow do?"
    assert asked == []


FRANKIE = """# The weaving shed

Frankie Dunmore ran the weaving shed at Milton, and Jude Ashby kept its accounts.

## Later years

In 1861 the shed closed. Frankie went to Manchester, where she opened a school for mill girls.
Jude stayed at the mill; his ledgers are kept in the town library.
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    engine = Engine(unhurried_settings(data_dir=tmp_path_factory.mktemp("learned") / "data"), embedder=embedder)
    asyncio.run(engine.ingest("shed", "shed.md", FRANKIE.encode()))
    try:
        yield engine
    finally:
        engine.close()


async def test_the_engine_reads_a_names_gender_from_the_documents_at_question_time(engine):
    """The answer to 'who ran the weaving shed?' shows neither's gender; the documents do, further on."""
    assert "Jude Ashby" in engine.said_about("shed", "Jude Ashby")
    assert "his ledgers" in engine.said_about("shed", "Jude")
    assert engine.said_about("shed", "Orrin") == ""
    history = [
        Turn("user", "Who ran the weaving shed?"),
        Turn("assistant", "From the documents:\n- \u201cFrankie Dunmore ran the weaving shed at Milton, and Jude Ashby kept its accounts.\u201d [1]"),
    ]
    she = await engine.ask("shed", "where did she go?", history=history)
    assert she.query.startswith("Where did Frankie Dunmore go?"), she.query
    he = await engine.ask("shed", "where did he stay?", history=history)
    assert he.query.startswith("Where did Jude Ashby stay?"), he.query
