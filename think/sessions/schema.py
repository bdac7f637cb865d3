"""The tables of sessions: messages (a tree), the session registry, compactions, context blocks, search.

    think_messages        one row per message; `parent` is the parent's `seq` (NULL for a root)
    think_sessions        the registry: one row per session, with its active leaf
    think_compactions     summaries laid over ranges of messages (the originals stay)
    think_context_blocks  writable context blocks and cached system prompts, by key
    think_messages_fts    FTS5 index of the text parts of every message (external content)
    think_message_chunks  the continuation slices of messages too large for one row
                          (`think.sessions.rows`; `think_messages.chunks` counts them)

Full-text indexing is batched: FTS5 writes a new index segment at every commit (~25 µs however
small the change), so indexing each message in its own write transaction would cost more than
storing it. Rows past `think_search_state.indexed_through` are indexed together, inside the
message write transaction of every `FTS_BATCH`th message a session writes, or before a search
(`catch_up_index`); never in a commit of their own per message.
"""

from __future__ import annotations

import sqlite3

from think.storage import Database, migration

FTS_BATCH = 16
"""Index new messages once this many are waiting (a search indexes whatever is waiting first)."""

_TEXT_OF = ("(SELECT group_concat(p.value ->> '$.text', char(10)) "
            "FROM json_each(CAST({body} AS TEXT), '$.parts') AS p WHERE p.value ->> '$.type' = 'text')")
"""SQL for the searchable text of a stored message body: its text parts, one per line. The index
and every delete from it must see the same text, so this one expression serves both."""


@migration("think.sessions.001_messages")
def _m001_messages(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_messages (
            seq        INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL,
            id         TEXT NOT NULL,
            parent_id  TEXT,                 -- NULL for a root; branches share a parent
            role       TEXT NOT NULL,
            body       BLOB NOT NULL,        -- the UIMessage as JSON
            created_at REAL NOT NULL,
            UNIQUE (session_id, id)
        )""")
    conn.execute("CREATE INDEX think_messages_parent ON think_messages (session_id, parent_id)")
    conn.execute("""
        CREATE TABLE think_sessions (
            id         TEXT PRIMARY KEY,
            leaf_id    TEXT,                 -- the newest message of the active branch
            created_at REAL NOT NULL
        )""")


@migration("think.sessions.002_parent_seq")
def _m002_parent_seq(conn: sqlite3.Connection) -> None:
    # Parents by integer `seq` instead of by text id: the tree walk becomes rowid lookups and
    # each message stores (and indexes) a small integer instead of a second 16-36 byte id.
    conn.execute("""
        CREATE TABLE think_messages_v2 (
            seq        INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL,
            id         TEXT NOT NULL,
            parent     INTEGER,              -- the parent's seq; NULL for a root
            role       TEXT NOT NULL,
            body       BLOB NOT NULL,        -- the UIMessage as JSON (`Message.dumps()`)
            created_at REAL NOT NULL,
            UNIQUE (session_id, id)
        )""")
    conn.execute("""
        INSERT INTO think_messages_v2 (seq, session_id, id, parent, role, body, created_at)
        SELECT m.seq, m.session_id, m.id,
               (SELECT p.seq FROM think_messages p WHERE p.session_id = m.session_id AND p.id = m.parent_id),
               m.role, m.body, m.created_at
        FROM think_messages m ORDER BY m.seq""")
    conn.execute("DROP TABLE think_messages")
    conn.execute("ALTER TABLE think_messages_v2 RENAME TO think_messages")
    conn.execute("CREATE INDEX think_messages_parent ON think_messages (parent)")
    for column in ("name TEXT", "parent_session_id TEXT", "forked_from TEXT", "updated_at REAL"):
        conn.execute(f"ALTER TABLE think_sessions ADD COLUMN {column}")
    conn.execute("UPDATE think_sessions SET updated_at = created_at")
    conn.execute("CREATE INDEX think_sessions_updated ON think_sessions (updated_at)")


@migration("think.sessions.003_compactions")
def _m003_compactions(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_compactions (
            id         TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            summary    TEXT NOT NULL,
            from_id    TEXT NOT NULL,        -- first message the summary replaces
            to_id      TEXT NOT NULL,        -- last message it replaces
            created_at REAL NOT NULL
        )""")
    conn.execute("CREATE INDEX think_compactions_session ON think_compactions (session_id, created_at)")


@migration("think.sessions.004_context_blocks")
def _m004_context_blocks(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_context_blocks (
            key        TEXT PRIMARY KEY,     -- label, or label_<session id>; _system_prompt[_<id>]
            content    TEXT NOT NULL,
            updated_at REAL NOT NULL
        )""")


@migration("think.sessions.005_search")
def _m005_search(conn: sqlite3.Connection) -> None:
    conn.execute(f"""
        CREATE VIEW think_message_text AS
        SELECT m.seq AS seq, m.session_id AS session_id, m.id AS id, m.role AS role,
               m.created_at AS created_at, {_TEXT_OF.format(body="m.body")} AS text
        FROM think_messages AS m""")
    conn.execute("""
        CREATE VIRTUAL TABLE think_messages_fts USING fts5(
            text, content='think_message_text', content_rowid='seq', tokenize='porter unicode61')""")
    conn.execute("CREATE TABLE think_search_state (indexed_through INTEGER NOT NULL)")
    conn.execute("INSERT INTO think_search_state VALUES (0)")
    # Rows already indexed must leave the index exactly as they entered it (external content).
    indexed = "(SELECT indexed_through FROM think_search_state)"
    conn.execute(f"""
        CREATE TRIGGER think_messages_fts_delete AFTER DELETE ON think_messages
        WHEN old.seq <= {indexed} BEGIN
            INSERT INTO think_messages_fts (think_messages_fts, rowid, text)
            VALUES ('delete', old.seq, {_TEXT_OF.format(body="old.body")});
        END""")
    conn.execute(f"""
        CREATE TRIGGER think_messages_fts_update AFTER UPDATE OF body ON think_messages
        WHEN old.seq <= {indexed} BEGIN
            INSERT INTO think_messages_fts (think_messages_fts, rowid, text)
            VALUES ('delete', old.seq, {_TEXT_OF.format(body="old.body")});
            INSERT INTO think_messages_fts (rowid, text) VALUES (new.seq, {_TEXT_OF.format(body="new.body")});
        END""")
    # FTS5's full scans of the content ('rebuild', 'integrity-check' with rank=1) fail on SQLite
    # 3.40 when the view uses json_each; reads by rowid (snippets, columns) work. This is 'rebuild'.
    conn.execute("INSERT INTO think_messages_fts (rowid, text) SELECT seq, text FROM think_message_text ORDER BY seq")
    conn.execute("UPDATE think_search_state SET indexed_through = (SELECT coalesce(max(seq), 0) FROM think_messages)")


_WHOLE_BODY = ("(CASE WHEN {m}.chunks = 0 THEN {m}.body ELSE CAST({m}.body AS TEXT) || "
               "(SELECT group_concat(CAST(c.data AS TEXT), '') FROM "
               "(SELECT data FROM think_message_chunks WHERE seq = {m}.seq ORDER BY idx) AS c) END)")
"""SQL for the whole stored JSON of message row `{m}`: its body, then its slices in order."""


@migration("think.sessions.006_message_chunks")
def _m006_message_chunks(conn: sqlite3.Connection) -> None:
    # A message larger than a row continues in slices (think.sessions.rows). The search view and
    # its delete trigger read the whole body; deleting a message row deletes its slices in the
    # same trigger, after the index has seen them. Updates of split messages are indexed by the
    # session itself (the trigger would see the slices of only one side of the change).
    conn.execute("ALTER TABLE think_messages ADD COLUMN chunks INTEGER NOT NULL DEFAULT 0")
    conn.execute("""
        CREATE TABLE think_message_chunks (
            seq  INTEGER NOT NULL,           -- the message row's seq
            idx  INTEGER NOT NULL,           -- 1, 2, ... after the row's own body
            data BLOB NOT NULL,
            PRIMARY KEY (seq, idx)
        ) WITHOUT ROWID""")
    conn.execute("DROP TRIGGER think_messages_fts_delete")
    conn.execute("DROP TRIGGER think_messages_fts_update")
    conn.execute("DROP VIEW think_message_text")
    conn.execute(f"""
        CREATE VIEW think_message_text AS
        SELECT m.seq AS seq, m.session_id AS session_id, m.id AS id, m.role AS role,
               m.created_at AS created_at, {_TEXT_OF.format(body=_WHOLE_BODY.format(m="m"))} AS text
        FROM think_messages AS m""")
    indexed = "(SELECT indexed_through FROM think_search_state)"
    conn.execute(f"""
        CREATE TRIGGER think_messages_fts_delete AFTER DELETE ON think_messages BEGIN
            INSERT INTO think_messages_fts (think_messages_fts, rowid, text)
            SELECT 'delete', old.seq, {_TEXT_OF.format(body=_WHOLE_BODY.format(m="old"))}
            WHERE old.seq <= {indexed};
            DELETE FROM think_message_chunks WHERE seq = old.seq AND old.chunks > 0;
        END""")
    conn.execute(f"""
        CREATE TRIGGER think_messages_fts_update AFTER UPDATE OF body ON think_messages
        WHEN old.seq <= {indexed} AND old.chunks = 0 AND new.chunks = 0 BEGIN
            INSERT INTO think_messages_fts (think_messages_fts, rowid, text)
            VALUES ('delete', old.seq, {_TEXT_OF.format(body="old.body")});
            INSERT INTO think_messages_fts (rowid, text) VALUES (new.seq, {_TEXT_OF.format(body="new.body")});
        END""")


MIGRATIONS = [_m001_messages, _m002_parent_seq, _m003_compactions, _m004_context_blocks, _m005_search,
              _m006_message_chunks]


def unindex(db: Database, seq: int) -> bool:
    """Take message `seq` out of the search index before its split body changes; True if it
    was indexed (then `reindex` puts it back once the new body is stored)."""
    if seq > int(db.value("SELECT indexed_through FROM think_search_state") or 0):
        return False
    db.sql("INSERT INTO think_messages_fts (think_messages_fts, rowid, text) "
           "SELECT 'delete', seq, text FROM think_message_text WHERE seq = ?", seq)
    return True


def reindex(db: Database, seq: int) -> None:
    db.sql("INSERT INTO think_messages_fts (rowid, text) SELECT seq, text FROM think_message_text WHERE seq = ?", seq)


def catch_up_index(db: Database, *, upto: int | None = None, batch: int = 1) -> None:
    """Index the messages written since the last catch-up, if at least `batch` are waiting.

    Joins the caller's transaction (or opens one). `upto` is the newest seq, when the caller
    knows it (it saves a query).
    """
    through = int(db.value("SELECT indexed_through FROM think_search_state") or 0)
    newest = upto if upto is not None else int(db.value("SELECT coalesce(max(seq), 0) FROM think_messages"))
    if newest - through < batch:
        return
    with db.transaction():
        db.sql("INSERT INTO think_messages_fts (rowid, text) "
               "SELECT seq, text FROM think_message_text WHERE seq > ? AND seq <= ? ORDER BY seq", through, newest)
        db.sql("UPDATE think_search_state SET indexed_through = ?", newest)
