"""How tests/data/pre_migrations.db was made: run with PYTHONPATH at an export of commit 10feedd (before named
migrations): `git archive 10feedd raptor_engine bot | tar -x -C OLD; PYTHONPATH=OLD python this.py DIR`."""
import asyncio
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sample_texts import BEEKEEPING  # noqa: E402

from bot.state import BotState
from raptor_engine import Engine, Settings
from raptor_engine.storage.llm_cache import SummaryCache

data = Path(sys.argv[1])
engine = Engine(Settings.from_env(data_dir=data))
text = BEEKEEPING + "\n\n" + ("The harbour of Saltmere was built in 1820. Fishermen landed herring there every autumn. "
        "A lighthouse on the northern rock guided the boats home. In 1887 Mara Quill kept the light. "
        "She wrote a logbook of every storm. The logbook is now in the town museum.\n\n"
        "The railway reached Saltmere in 1902. Tourists came in summer to walk the cliffs. "
        "The herring left the bay in the 1950s and the fleet shrank. Today the harbour holds yachts.")
asyncio.run(engine.ingest("old", "saltmere.md", text.encode(), added_by="fixture"))
engine.close()
cache = SummaryCache(engine.settings.db_path)
cache.put("k" * 64, "model-x", "a cached summary", 11, 7)
async def bot():
    state = BotState(engine.settings.db_path)
    await state.set_autoingest("old", 1, 2, True, "fixture")
    state.close()
asyncio.run(bot())
conn = sqlite3.connect(engine.settings.db_path)
conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
conn.execute("PRAGMA journal_mode=DELETE")
conn.execute("VACUUM")
conn.close()
