"""Every schema a store file may hold, as named migrations (see `migrations.py`): the store's tables,
the summary cache, and the bot's tables.

The bot's set is defined here, not in `bot/`, because a server's store file carries the bot's rows:
`raptor guilds import` and `raptor doctor` check a file's schema against these sets without the bot
(see `schema.py`). The bot applies it (and a store opening a file that has the bot's tables brings them
up to date); only the bot writes those tables, except `bot_removals`, which every removal writes
(storage/removals.py).

Never edit a step that has shipped: databases already ran it. Change the schema by appending a step.
"""

from __future__ import annotations

import sqlite_utils

from .migrations import Migrations
from .text_index import LEGACY_TEXT_INDEX, TOKENIZE, split_text_index

store_migrations = Migrations("store")
summary_cache_migrations = Migrations("summary_cache")
bot_migrations = Migrations("bot")  # the bot's own tables (bot/state.py): settings, threads, answers

@store_migrations
def m001_initial(db: sqlite_utils.Database) -> None:
    """The tables as the first releases created them (IF NOT EXISTS: a database made then is left as is)."""
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute(
        """CREATE TABLE IF NOT EXISTS kbs (
            id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL,
            version INTEGER NOT NULL DEFAULT 0)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS documents (
            id INTEGER PRIMARY KEY, kb_id INTEGER NOT NULL REFERENCES kbs(id) ON DELETE CASCADE,
            name TEXT NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL, format TEXT NOT NULL,
            added_by TEXT NOT NULL DEFAULT '', added_at TEXT NOT NULL,
            chunks INTEGER NOT NULL, layers INTEGER NOT NULL, nodes INTEGER NOT NULL,
            tokens INTEGER NOT NULL, UNIQUE (kb_id, sha256))"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS nodes (
            id INTEGER PRIMARY KEY, kb_id INTEGER NOT NULL REFERENCES kbs(id) ON DELETE CASCADE,
            doc_id INTEGER REFERENCES documents(id) ON DELETE CASCADE,
            layer INTEGER NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL, tokens INTEGER NOT NULL,
            embedding BLOB NOT NULL, leaf_ids TEXT NOT NULL, leaf_count INTEGER NOT NULL,
            start INTEGER, "end" INTEGER, page INTEGER, heading TEXT NOT NULL DEFAULT '[]',
            spans TEXT NOT NULL DEFAULT '[]')"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS nodes_kb ON nodes(kb_id, layer)")
    db.execute("CREATE INDEX IF NOT EXISTS nodes_doc ON nodes(doc_id)")
    db.execute(
        """CREATE TABLE IF NOT EXISTS edges (
            parent_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
            child_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
            kb_id INTEGER NOT NULL, PRIMARY KEY (parent_id, child_id))"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS edges_child ON edges(child_id)")
    db.execute(
        """CREATE TABLE IF NOT EXISTS builds (
            id INTEGER PRIMARY KEY, kb_id INTEGER NOT NULL REFERENCES kbs(id) ON DELETE CASCADE,
            document TEXT, action TEXT NOT NULL, status TEXT NOT NULL, started_at TEXT NOT NULL,
            finished_at TEXT NOT NULL, seconds REAL NOT NULL, embedder TEXT NOT NULL,
            summarizer TEXT NOT NULL, layers TEXT NOT NULL DEFAULT '[]', notes TEXT NOT NULL DEFAULT '[]',
            prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
            error TEXT)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS questions (
            id INTEGER PRIMARY KEY, kb_id INTEGER NOT NULL REFERENCES kbs(id) ON DELETE CASCADE,
            asked_at TEXT NOT NULL, asked_by TEXT NOT NULL DEFAULT '', mode TEXT NOT NULL,
            backend TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
            context_tokens INTEGER NOT NULL, nodes INTEGER NOT NULL)"""
    )
    db.execute("INSERT OR IGNORE INTO meta VALUES ('next_node_id', '1')")


@store_migrations
def m002_drop_schema_version(db: sqlite_utils.Database) -> None:
    """The `_migrations` table now says which schema a database has; the old version number goes."""
    db.execute("DELETE FROM meta WHERE key = 'schema_version'")


@store_migrations
def m003_page_marks(db: sqlite_utils.Database) -> None:
    """Where each page begins in a leaf's text, so a citation names the quoted sentence's page."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(nodes)").fetchall()}
    if "page_marks" not in columns:
        db.execute("ALTER TABLE nodes ADD COLUMN page_marks TEXT NOT NULL DEFAULT '[]'")


@store_migrations
def m004_sentence_spans(db: sqlite_utils.Database) -> None:
    """Each node's sentences (spans, token counts, key fingerprints), so retrieval need not split them.

    NULL for nodes stored before this step: retrieval splits those when it meets them.
    """
    columns = {row[1] for row in db.execute("PRAGMA table_info(nodes)").fetchall()}
    if "sentences" not in columns:
        db.execute("ALTER TABLE nodes ADD COLUMN sentences TEXT")


@store_migrations
def m005_chat_messages(db: sqlite_utils.Database) -> None:
    """Chat messages as documents (ingest/messages.py): each message's text and origin, which document
    (group and part) holds it, and which message each leaf holds, so an answer cites "message by NAME,
    DATE" and a deleted message's document can be rebuilt without it. Rows go with their document or
    node (ON DELETE CASCADE)."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS message_documents (
            doc_id INTEGER PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
            kb_id INTEGER NOT NULL REFERENCES kbs(id) ON DELETE CASCADE,
            group_key TEXT NOT NULL, group_name TEXT NOT NULL, part INTEGER NOT NULL)"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS message_documents_group ON message_documents(kb_id, group_key)")
    db.execute(
        """CREATE TABLE IF NOT EXISTS messages (
            kb_id INTEGER NOT NULL REFERENCES kbs(id) ON DELETE CASCADE,
            doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            message_id INTEGER NOT NULL, channel_id INTEGER NOT NULL, author_id INTEGER NOT NULL,
            author TEXT NOT NULL, created_at TEXT NOT NULL, url TEXT NOT NULL, text TEXT NOT NULL,
            PRIMARY KEY (kb_id, message_id))"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS messages_doc ON messages(doc_id)")
    db.execute("CREATE INDEX IF NOT EXISTS messages_author ON messages(author_id)")
    db.execute("CREATE INDEX IF NOT EXISTS messages_channel ON messages(kb_id, channel_id)")
    db.execute(
        """CREATE TABLE IF NOT EXISTS leaf_messages (
            node_id INTEGER PRIMARY KEY REFERENCES nodes(id) ON DELETE CASCADE,
            kb_id INTEGER NOT NULL REFERENCES kbs(id) ON DELETE CASCADE, message_id INTEGER NOT NULL)"""
    )


@store_migrations
def m006_text_index(db: sqlite_utils.Database) -> None:
    """A full-text (FTS5, BM25) index over every node's text, so a question naming a rare term (a code,
    a part number, a surname) finds the nodes that hold it (text_index.py: the store keeps it in the
    nodes' own transactions; it is derived, so `raptor doctor` rebuilds it). One table for every
    knowledge base of the file: m007 replaces it with one per knowledge base."""
    db.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {LEGACY_TEXT_INDEX} USING fts5("
        f"text, content='nodes', content_rowid='id', tokenize='{TOKENIZE}')"
    )
    db.execute(f"INSERT INTO {LEGACY_TEXT_INDEX}({LEGACY_TEXT_INDEX}) VALUES ('rebuild')")


@store_migrations
def m007_text_index_per_kb(db: sqlite_utils.Database) -> None:
    """One full-text index per knowledge base (text_index.py), so BM25's statistics are the knowledge
    base's own and no other knowledge base of the file shifts its ranking; the shared table goes. One
    transaction, as every step: a crash midway leaves the shared table, and the next open splits it again."""
    split_text_index(db)



@store_migrations
def m008_document_text_fingerprint(db: sqlite_utils.Database) -> None:
    """Each document's text fingerprint (ingest/load.py `text_fingerprint`), so the same document uploaded
    again under other bytes (CRLF, a BOM, another encoding, .md saved as .txt) is recognised, not stored
    twice. NULL (unknown) for documents stored before this step: their leaves are slices of the text but
    the whitespace between them (a space, a line break, a blank line) is not kept, so the fingerprint
    cannot be recomputed exactly; only their identical bytes are recognised."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(documents)").fetchall()}
    if "text_sha256" not in columns:
        db.execute("ALTER TABLE documents ADD COLUMN text_sha256 TEXT")
    db.execute("CREATE INDEX IF NOT EXISTS documents_text ON documents(kb_id, text_sha256)")


@store_migrations
def m009_document_words_fingerprint(db: sqlite_utils.Database) -> None:
    """Each document stored so far gets the fingerprint of its words (ingest/load.py `words_fingerprint`),
    read from its leaves in order (each leaf from where the one before it ended): its `text_sha256` was
    computed by the loader of its day, which wrote fenced code otherwise (and documents from before m008
    have none), so an upload of it under other bytes would be stored a second time. The leaves hold every
    word of the text, so the words' fingerprint is exact where the text's cannot be rebuilt. Documents
    stored after this step keep NULL: they are matched by `text_sha256`, which counts line breaks."""
    from ..ingest.load import words_fingerprint

    columns = {row[1] for row in db.execute("PRAGMA table_info(documents)").fetchall()}
    if "words_sha256" not in columns:
        db.execute("ALTER TABLE documents ADD COLUMN words_sha256 TEXT")
    for (doc_id,) in db.execute("SELECT id FROM documents WHERE words_sha256 IS NULL").fetchall():
        db.execute("UPDATE documents SET words_sha256 = ? WHERE id = ?", [words_fingerprint(_leaf_text(db, doc_id)), doc_id])
    db.execute("CREATE INDEX IF NOT EXISTS documents_words ON documents(kb_id, words_sha256)")


def _leaf_text(db: sqlite_utils.Database, doc_id: int) -> str:
    """A document's text as its leaves hold it, in order, each leaf from where the one before it ended
    (the whitespace between leaves a line break: exact for its words, not for its spacing)."""
    leaves = db.execute(
        'SELECT text, start, "end" FROM nodes WHERE doc_id = ? AND layer = 0 ORDER BY start, id', [doc_id]
    ).fetchall()
    reached, parts = 0, []
    for text, start, end in leaves:
        skip = max(0, reached - start) if start is not None else 0
        parts.append(text[skip:])
        reached = max(reached, end if end is not None else reached)
    return "\n".join(parts)


@store_migrations
def m010_node_code(db: sqlite_utils.Database) -> None:
    """Whether a leaf lies wholly inside a block of code (`Chunk.code`): such a leaf holds no fence to tell
    it by, so its unindented lines would read as prose. 0 for the leaves stored before this step (read
    as they were)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(nodes)").fetchall()}
    if "code" not in columns:
        db.execute("ALTER TABLE nodes ADD COLUMN code INTEGER NOT NULL DEFAULT 0")


@store_migrations
def m011_document_words_alone(db: sqlite_utils.Database) -> None:
    """Every document's `words_sha256` becomes the fingerprint of its words alone (ingest/load.py
    `words_fingerprint`: no punctuation, spacing or markup), read from its leaves (a .txt's as Markdown
    renders them), and documents stored since m009 get one: the duplicate check matches it for every
    document, so the same document uploaded under another kind (.md, then .docx) is not stored twice.
    A channel's messages (no upload) keep none."""
    from ..ingest.load import markdown_text, words_fingerprint
    from ..ingest.messages import MESSAGE_FORMAT

    for doc_id, fmt in db.execute("SELECT id, format FROM documents").fetchall():
        text = _leaf_text(db, doc_id) if fmt != MESSAGE_FORMAT else ""
        words = words_fingerprint(markdown_text(text) if fmt == "txt" else text) if text else None
        db.execute("UPDATE documents SET words_sha256 = ? WHERE id = ?", [words or None, doc_id])

@summary_cache_migrations
def m001_summary_cache(db: sqlite_utils.Database) -> None:
    """LLM summaries by the sha256 of everything that shapes them (see `llm_cache.summary_cache_key`)."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS summary_cache (
            "key" TEXT PRIMARY KEY, model TEXT, text TEXT, prompt_tokens INTEGER,
            completion_tokens INTEGER, created_at REAL)"""
    )


@bot_migrations
def m001_bot_tables(db: sqlite_utils.Database) -> None:
    """The tables as the first releases created them (IF NOT EXISTS: a database made then is left as is)."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS bot_channel_settings (
            kb TEXT PRIMARY KEY, guild_id INTEGER, channel_id INTEGER, autoingest INTEGER,
            updated_by TEXT, updated_at TEXT)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS bot_guild_settings (
            guild_id INTEGER PRIMARY KEY, manager_role_id INTEGER, updated_by TEXT, updated_at TEXT)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS bot_threads (
            thread_id INTEGER PRIMARY KEY, kb TEXT, guild_id INTEGER, channel_id INTEGER,
            opened_by TEXT, created_at TEXT)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS bot_turns (
            id INTEGER PRIMARY KEY, thread_id INTEGER, role TEXT, content TEXT, created_at TEXT)"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS idx_bot_turns_thread_id ON bot_turns (thread_id)")
    db.execute(
        """CREATE TABLE IF NOT EXISTS bot_answers (
            id INTEGER PRIMARY KEY, kb TEXT, question TEXT, context_json TEXT, created_at TEXT)"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS idx_bot_answers_kb ON bot_answers (kb)")


@bot_migrations
def m002_message_sync(db: sqlite_utils.Database) -> None:
    """Chat messages as documents (bot/messages.py, bot/sync.py): which channels sync their messages into
    their knowledge base, which members asked to be forgotten, and each history import until it is done
    (a restarted bot carries on from the last message it stored)."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS bot_message_sync (
            kb TEXT PRIMARY KEY, guild_id INTEGER, channel_id INTEGER, enabled INTEGER,
            updated_by TEXT, updated_at TEXT)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS bot_forget_me (
            guild_id INTEGER NOT NULL, user_id INTEGER NOT NULL, created_at TEXT,
            PRIMARY KEY (guild_id, user_id))"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS bot_message_imports (
            id INTEGER PRIMARY KEY, kb TEXT NOT NULL, guild_id INTEGER NOT NULL, source_id INTEGER NOT NULL,
            status_channel_id INTEGER, requester_id INTEGER, added_by TEXT NOT NULL, remaining INTEGER,
            after_id INTEGER, status TEXT NOT NULL, created_at TEXT, updated_at TEXT,
            run_id TEXT NOT NULL DEFAULT '')"""
    )


@bot_migrations
def m003_turn_sources(db: sqlite_utils.Database) -> None:
    """Which chat messages each thread turn's answer drew on (storage/removals.py): a message deleted in Discord,
    or its author forgotten, takes the turns that drew on it out of the thread's memory. NULL for turns
    stored before this step and for turns of answers that drew on no message."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(bot_turns)").fetchall()}
    if "message_ids" not in columns:
        db.execute("ALTER TABLE bot_turns ADD COLUMN message_ids TEXT")


@bot_migrations
def m004_turn_messages(db: sqlite_utils.Database) -> None:
    """The Discord messages of each thread turn (the member's question, the bot's answer messages), so a
    follow-up sent as a reply to an older one is read against that exchange (bot/answering.py). NULL
    for turns stored before this step and for a question asked with /ask (no message of its own)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(bot_turns)").fetchall()}
    if "posted_ids" not in columns:
        db.execute("ALTER TABLE bot_turns ADD COLUMN posted_ids TEXT")


@bot_migrations
def m005_posted_files(db: sqlite_utils.Database) -> None:
    """Which documents came from a file attached to a Discord message (auto-ingest, the message menu), and
    who posted it, so the document leaves when its message is deleted or edited to drop the file, or its
    author runs /kb forget-me (bot/posted.py)."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS bot_posted_files (
            kb TEXT NOT NULL, channel_id INTEGER NOT NULL, message_id INTEGER NOT NULL,
            attachment_id INTEGER NOT NULL, sha256 TEXT NOT NULL, author_id INTEGER NOT NULL,
            PRIMARY KEY (kb, message_id, attachment_id))"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS idx_bot_posted_files_message ON bot_posted_files (message_id)")
    db.execute("CREATE INDEX IF NOT EXISTS idx_bot_posted_files_channel ON bot_posted_files (channel_id)")


@bot_migrations
def m006_turn_documents(db: sqlite_utils.Database) -> None:
    """Which documents each thread answer cited, and which removed ones a follow-up's answer already named
    (bot/answering.py): a follow-up after such a document was removed says that it is gone. JSON
    {"cited": [[id, name], ...], "told": [id, ...]}; NULL for turns stored before this step (nothing is
    said for them) and for question turns."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(bot_turns)").fetchall()}
    if "documents" not in columns:
        db.execute("ALTER TABLE bot_turns ADD COLUMN documents TEXT")


@bot_migrations
def m007_removals(db: sqlite_utils.Database) -> None:
    """Each removal of text from a knowledge base (a document, every document, chat messages), written in
    the removal's own transaction, whoever makes it (`record_removal`, storage/removals.py): `pending` (JSON:
    what the bot's records must still lose, the removed text's marks included) until the bot has redacted
    its saved answers and thread turns, then NULL; `nodes` (JSON node ids, no text) is kept a while after, so an answer that was being
    written while the removal landed is checked as it is saved (bot/state.py)."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS bot_removals (
            id INTEGER PRIMARY KEY AUTOINCREMENT, kb TEXT NOT NULL, at REAL NOT NULL, note TEXT NOT NULL,
            source TEXT, pending TEXT, nodes TEXT NOT NULL)"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS bot_removals_kb ON bot_removals (kb, at)")


@bot_migrations
def m008_turn_pending(db: sqlite_utils.Database) -> None:
    """An exchange recorded before its answer is posted (bot/answering.py): `pending` 1 until the answer's
    messages are attached, then NULL. Follow-ups are not given a pending exchange; a start finds the
    answer in Discord (then attaches it) or drops the exchange (`settle_pending`). NULL for every turn
    stored before this step."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(bot_turns)").fetchall()}
    if "pending" not in columns:
        db.execute("ALTER TABLE bot_turns ADD COLUMN pending INTEGER")


@bot_migrations
def m009_turn_asker(db: sqlite_utils.Database) -> None:
    """Who asked an exchange (bot/answering.py): `asked_by`, the Discord member id on a question's turn
    whose answer searched the documents, so a member's follow-up in a shared thread goes on from their own
    latest exchange after a restart as before it (`BotState.member_exchange`). NULL for small talk's
    turns, answers, and every turn stored before this step."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(bot_turns)").fetchall()}
    if "asked_by" not in columns:
        db.execute("ALTER TABLE bot_turns ADD COLUMN asked_by INTEGER")


@bot_migrations
def m010_questions_asked(db: sqlite_utils.Database) -> None:
    """Each question from its arrival until the bot has handled it (answered, refused, or found to ask
    nothing), ids and time only, no text (bot/answering.py, `kept_until_handled`): a member's message in an
    answer thread (`message_id` the message's, `channel_id` the thread's), or an /ask (`message_id` the
    interaction's, with its `token` and until when it works). A bot killed meanwhile (a build the question
    waited for, the answer being written) finds the row at its next start: it answers the message, and
    tells the /ask's member in its response to ask again (`answer_left_questions`)."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS bot_questions (
            message_id INTEGER PRIMARY KEY, guild_id INTEGER NOT NULL, channel_id INTEGER NOT NULL,
            asked_at REAL NOT NULL, token TEXT, token_until REAL)"""
    )


@bot_migrations
def m011_question_replies(db: sqlite_utils.Database) -> None:
    """A kept question's reply that ends its handling without an exchange (a refusal: the cooldown, a
    message of links only, a failure), noted before it is posted (`reply_digest`, a digest of its text, no
    text) and with its message id once it is (`reply_id`). A bot killed between posting it and letting the
    question go finds the reply at its next start and does not answer the message a second time."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(bot_questions)").fetchall()}
    for column, kind in (("reply_digest", "TEXT"), ("reply_id", "INTEGER")):
        if column not in columns:
            db.execute(f"ALTER TABLE bot_questions ADD COLUMN {column} {kind}")
