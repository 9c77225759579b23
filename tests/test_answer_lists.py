"""qa27: 'Which lifeboats served the station?' quoted the count sentence and the first boat but not the
other two, and a sentence about something else. A question after several things of a kind ('Which X ...?',
'What X did ...?', 'Name the X', 'List the X') now quotes the sentences of the one document section that
name them, in the document's order, before anything else."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from raptor_engine.query.answer import listed_noun
from raptor_engine.query.followup import quotes_in
from tests.unhurried import engine_with

STATION = """# The Penmarrow Lifeboat Station

## Founding

The Penmarrow lifeboat station was founded in 1866 after the loss of the brig Ellen Vane on the Carrow Shoal. \
Nine sailors drowned within sight of the harbour wall that night. The station was built to give the fishing fleet \
a rescue boat of its own, since the nearest lifeboat was twenty miles away at Tolvan. The first boathouse cost \
420 pounds, which the vicar raised by a subscription among the fish merchants.

## The boats

Three lifeboats served the station. The Mary Trelawny was a pulling boat with ten oars, stationed from 1866 to \
1902. The Grace Pellow, a sailing lifeboat, replaced her and served until 1931. The third boat, the motor lifeboat \
Kernow, arrived in 1931 and could reach the Carrow Shoal in twenty minutes.

## Rescues

The station's crews launched 214 times and saved 361 lives. The worst night was 14 January 1907, when the Grace \
Pellow capsized while going to the schooner Alert. Four of her crew were lost. An inquiry held that the boat had \
been overloaded with rescued men in a breaking sea.

## Closure

The station closed in 1968, when a faster boat was placed at Tolvan and the harbour silted up. The boathouse became \
a museum in 1975. Its last coxswain, Elowen Pascoe's father Jory Pascoe, served for thirty-one years and died in 1980.
"""
# events and findings on them (tests/test_answer_findings.py), and no list
PIER = """# Saltby Pier

## The collapse

On 3 March 1954 the seaward end of the pier collapsed during a storm, taking the bandstand with it. Nobody was \
hurt. The borough engineer concluded that the iron piles had rusted through below the waterline.

## The fire

In August 1978 fire destroyed the pavilion at the landward end of the pier. The blaze was put down to a cigarette \
dropped between the boards.

## The closure

The pier was closed to the public in 1992. Its closure was blamed on the cost of repairs, which the council put at \
two million pounds.
"""
# no headings: the keepers are found by their nearness in the text
LIGHT = (
    "The Skerrow light was first lit in 1839 and was automated in 1989. Its lamp burned colza oil until 1870. "
    "Over its manned years the light had four principal keepers. Ambrose Kittow was the first keeper and "
    "stayed until 1868. Walter Dunstan kept the light from 1868 to 1885 and wrote its only surviving logbook. "
    "The longest serving keeper was Hannah Rowe, who took over from her husband in 1885 and kept it until 1921. "
    "The last keeper, Peter Kittow, left when the light was automated. The tower was painted white in 1901, "
    "and a fog bell was added in 1910. Visitors may climb the tower on summer afternoons."
)
BOATS = [
    "Three lifeboats served the station.",
    "The Mary Trelawny was a pulling boat",
    "The Grace Pellow, a sailing lifeboat",
    "the motor lifeboat Kernow",
]
KEEPERS = ["four principal keepers", "Ambrose Kittow", "Walter Dunstan", "Hannah Rowe", "Peter Kittow"]


@pytest.mark.parametrize(
    ("question", "noun"),
    [
        ("Which lifeboats served the station?", "lifeboat"),
        ("What boats did the station have?", "boat"),
        ("Name the lifeboats", "lifeboat"),
        ("List the lifeboats.", "lifeboat"),
        ("Please list all the keepers of the light", "keeper"),
        ("Which boat capsized?", None),  # one of them
        ("Which of the boats capsized?", None),
        ("What happens after the capsize?", None),  # a verb, not things
        ("What does the ferry cost?", None),
        ("What was the cause?", None),
        ("What do the Piruts want with the ship?", None),  # a people's name
        ("What normally happens when he meets people?", None),
        ("What best describes their friendship?", None),
        ("What are the students doing when Mark drives up?", None),  # what they do, not which they are
    ],
)
def test_a_list_question_asks_for_a_plural_noun(question, noun):
    assert listed_noun(question) == noun


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder):
    texts = {"station.md": STATION, "light.txt": LIGHT, "pier.md": PIER}
    with contextlib.closing(engine_with(tmp_path_factory.mktemp("lists"), embedder, texts)) as engine:
        yield engine


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("Which lifeboats served the station?", BOATS),
        ("What boats did the station have?", BOATS),
        ("Name the lifeboats", BOATS),
        ("List the lifeboats of the station", BOATS),
        ("Which keepers kept the Skerrow light?", KEEPERS),
        ("Name the keepers of the Skerrow light", KEEPERS),
    ],
)
def test_a_list_question_quotes_each_thing_in_the_documents_order_first(engine, question, named):
    answer = asyncio.run(engine.ask("harbour", question))
    quotes = quotes_in(answer.text)
    assert answer.answered, answer.text
    assert named[0] in quotes[0], answer.text
    # each named, in order, before anything else (a short sentence may be quoted with the next)
    shown = " ".join(quotes[: len(named)])
    at = [shown.find(name) for name in named]
    assert -1 not in at and at == sorted(at), answer.text


async def test_a_question_after_one_thing_keeps_its_three_quotes(engine):
    answer = await engine.ask("harbour", "Which boat capsized?")
    assert "Grace Pellow capsized" in quotes_in(answer.text)[0], answer.text
    assert len(quotes_in(answer.text)) <= 3
