"""Multi-turn follow-up chains over a small knowledge base of three documents (a bridge, two ferries,
a harbour master), asked of the engine as `raptor chat` asks them: each turn's searched question and
its quotes are printed, so a change to the follow-up rules can be read chain by chain (docs/EVALUATION.md
has the table of what each chain got). The classes: pronouns, a choice among what an answer listed,
comparisons, a topic switch, corrections, acknowledgements, chat spelling, and chains that mix
'is that true?', a bare wh-word, 'and then?' and 'tell me more'.

Run: `python -m raptor_tools.followup_chains [CHAIN ...]` (no model; builds in a temporary folder).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

_ROOT = Path(__file__).resolve().parents[1]  # the checkout, for `python -m` from anywhere
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from raptor_engine import Engine, Turn  # noqa: E402
from raptor_engine.config import Settings  # noqa: E402

BRIDGE = """# The Kessel Bridge

The Kessel Bridge crosses the river Ambry at Port Lenning. It was designed by the engineer Edith Marlow and opened in 1884.

## Building the bridge

Work began in 1879 with two stone piers sunk into the riverbed. Edith Marlow chose wrought iron for the spans because timber rotted quickly in the salt air. She had trained under her father, a shipbuilder in Sunderland. The bridge is 240 metres long and has three spans.

## Later years

In 1921 a barge struck the middle pier and the bridge was closed for six months. After that the harbour board fitted timber fenders around both piers. In 1968 the bridge was closed to lorries, and a new road bridge was built upstream. Today only pedestrians and cyclists use it.
"""

FERRIES = """# Ferries of Port Lenning

Two ferries crossed the Ambry before the bridge opened. The Alder was a paddle steamer launched in 1862 at Greenock. It carried passengers and cattle and could take about 90 people. The Wren was a smaller screw ferry launched in 1871. The Wren carried only passengers, for example mill workers and schoolchildren, and held 40 people.

## The end of the ferries

When the Kessel Bridge opened, the Alder lost most of its trade and was sold to a company in Belfast in 1886. The Wren kept running for another decade, mainly on Sundays. It was broken up in 1897.
"""

HARBOUR = """# Harbour master Rowan Pike

Captain Rowan Pike was harbour master of Port Lenning from 1880 to 1902. He had commanded a clipper on the tea route before he came ashore.

Pike argued against the Kessel Bridge because he feared its piers would silt up the channel. He lost the argument, and the board approved the bridge in 1878.

In 1902 he left Port Lenning and moved to Hobart in Tasmania, where he ran a ship chandlery. He died there in 1915. His daughter, Clara Pike, became the first woman on the harbour board in 1931.

## The tunnel scheme

In 1895 Pike proposed a foot tunnel under the Ambry. The tunnel would have cost 60,000 pounds. The board rejected it as too expensive, and it was never built.
"""

DOCUMENTS = {"bridge.md": BRIDGE, "ferries.md": FERRIES, "harbour.md": HARBOUR}

# (class, turns separated by ' | '): the first turn is a question of its own, the rest follow it up
CHAINS: list[tuple[str, str]] = [
    ("pronoun", "Who designed the Kessel Bridge? | who is she? | where did she train?"),
    ("pronoun", "Who was harbour master of Port Lenning? | where did he go after that? | when did he die?"),
    ("pronoun", "who designed the kessel bridge | what did she choose for the spans | why"),
    ("pronoun", "What did Rowan Pike propose in 1895? | how much would it have cost? | why was it rejected?"),
    ("pronoun", "Who was Clara Pike? | who was her father? | what did he command before?"),
    ("pronoun", "When did Rowan Pike leave Port Lenning? | where did he move to | what did he do there?"),
    ("pronoun", "Who designed the bridge? | when did it open? | how long is it?"),
    ("pronoun", "What was the Alder? | where was it launched? | what happened to it?"),
    ("choice", "Which ferries crossed the Ambry? | the second one? | how many people did it hold?"),
    ("choice", "Which ferries crossed the Ambry? | tell me about the first one | what about the other one?"),
    ("choice", "Which ferries crossed the Ambry? | which of those is older? | when was it broken up?"),
    ("choice", "What ferries were there before the bridge? | which one was smaller? | what did it carry?"),
    ("choice", "Name the two ferries of Port Lenning | what happened to the first one | and the second?"),
    ("choice", "Which ferries crossed the Ambry? | which of them carried cattle? | where was it sold?"),
    ("choice", "What ferries crossed the river? | the last one | when was it launched"),
    ("comparison", "How many people could the Alder take? | is that more than the Wren? | when was the Wren launched?"),
    ("comparison", "How long is the Kessel Bridge? | is that more than 200 metres? | how many spans does it have?"),
    ("comparison", "What would the tunnel have cost? | is that more than 50,000 pounds? | who proposed it?"),
    ("comparison", "When did the Kessel Bridge open? | is that before the Wren was launched? | ok"),
    ("comparison", "How many people did the Wren hold? | is that less than the Alder? | why was it smaller?"),
    ("topic switch", "Who designed the Kessel Bridge? | When was the Wren broken up? | where did she train?"),
    ("topic switch", "Where did Rowan Pike move in 1902? | What did the barge strike in 1921? | what happened after that?"),
    ("topic switch", "Who was harbour master of Port Lenning? | How long is the Kessel Bridge? | when did he die?"),
    ("topic switch", "When did the Alder launch? | Who became the first woman on the harbour board? | when?"),
    ("topic switch", "Why did Pike oppose the bridge? | What did the Wren carry? | how many people did it hold?"),
    ("topic switch", "What happened to the Alder? | Who designed the Kessel Bridge? | what material did she choose?"),
    ("correction", "When was the tunnel proposed? | no, I meant the bridge | who designed it?"),
    ("correction", "When was the Alder sold? | sorry i meant the Wren | when was it broken up?"),
    ("correction", "Who was Edith Marlow? | no I meant Clara Pike | when did she join the board?"),
    ("correction", "What did Rowan Pike do in Hobart? | no, I meant in Port Lenning | when did he leave?"),
    ("correction", "When was the bridge closed to lorries? | I mean closed after the barge | what was fitted after that?"),
    ("acknowledgement", "Who designed the Kessel Bridge? | ok thanks | when did it open?"),
    ("acknowledgement", "When did the Wren stop running? | cool | and the Alder?"),
    ("acknowledgement", "Where did Pike move in 1902? | great, thank you! | what did he do there"),
    ("acknowledgement", "How long is the bridge? | got it | nice one"),
    ("chat spelling", "who desgined the kessel brige | wen did it open | why iron"),
    ("chat spelling", "wat happend to the alder | and the wren | when was it broken up"),
    ("chat spelling", "who was rowan pike | where did he go afterwards | wat did he do there"),
    ("chat spelling", "HOW LONG IS THE KESSEL BRIDGE | HOW MANY SPANS | WHO DESIGNED IT"),
    ("mixed", "Who designed the Kessel Bridge? | r u sure? | when?"),
    ("mixed", "What happened to the bridge in 1921? | what happened next? | are you sure? | when?"),
    ("mixed", "Why did Pike argue against the bridge? | is that true | tell me more | when did he leave?"),
    ("mixed", "What did the Alder carry? | really? | and the Wren? | give me an example"),
    ("mixed", "When did Rowan Pike leave Port Lenning? | and then? | r u sure | why?"),
    ("mixed", "What was the tunnel scheme? | tell me more | is that correct? | who proposed it?"),
    ("mixed", "When was the Kessel Bridge opened? | what happened next | and then? | how do you know"),
    ("mixed", "Who designed the Kessel Bridge? | why did she choose iron? | r u sure? | where did she train?"),
    ("mixed", "When was the Kessel Bridge opened? | what happened next | and then? | when?"),
]


async def run(chosen: list[int], data_dir: Path) -> None:
    """Build the knowledge base, then ask each chosen chain, printing every turn as it was searched."""
    engine = Engine(Settings(data_dir=data_dir))
    try:
        for name, text in DOCUMENTS.items():
            await engine.ingest("port", name, text.encode())
        for index in chosen:
            kind, turns = CHAINS[index]
            print(f"## {index} ({kind})")
            history: list[Turn] = []
            for question in turns.split(" | "):
                answer = await engine.ask("port", question, history=list(history))
                history += [Turn("user", question), Turn("assistant", answer.text)]
                print(f"> {question}\n  {answer.searched_as or '(searched as asked)'}")
                print("  " + answer.text.replace("\n", "\n  "))
    finally:
        engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chains", nargs="*", type=int, help="chain numbers (default: all)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(run(args.chains or list(range(len(CHAINS))), Path(folder) / "data"))


if __name__ == "__main__":
    main()
