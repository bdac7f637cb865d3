"""A stored message larger than one row: its JSON split across continuation rows.

SQLite itself takes rows of a gigabyte, but every reader of a row pays for it whole (the path
walk, a client's transcript, the search index) and an oversized row is what a process runs out
of memory on first. So a message row holds at most `ROW_BYTES` of the message's JSON; the rest
goes, in slices of the same size, to `think_message_chunks` (`seq`, `idx` 1, 2, …), and
`think_messages.chunks` says how many there are (0 for nearly every message). A read joins the
slices back in `idx` order: what comes back is byte-for-byte what was written.

The message row and its slices are written in the caller's transaction, so a process killed in
the middle leaves the whole message or none of it. Deleting a message row deletes its slices
(a trigger, together with its search index entry: see `think.sessions.schema`).

Slices end on UTF-8 character boundaries, so every slice is valid text on its own and SQL that
concatenates them (the search index's view) reads the same JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from think.sessions.schema import reindex, unindex
from think.storage import Database, Row

ROW_BYTES = 1_800_000
"""The most bytes of a message's JSON one row holds; larger messages continue in slices."""


def split_body(body: bytes, size: int = ROW_BYTES) -> list[bytes]:
    """`body` in slices of at most `size` bytes, each ending on a UTF-8 character boundary."""
    if len(body) <= size:
        return [body]
    slices: list[bytes] = []
    start = 0
    while start < len(body):
        end = min(start + size, len(body))
        while end < len(body) and end > start + 1 and (body[end] & 0xC0) == 0x80:
            end -= 1  # never cut inside a multi-byte character
        slices.append(body[start:end])
        start = end
    return slices


def write_slices(db: Database, seq: int, slices: Sequence[bytes], old_chunks: int = 0) -> None:
    """Store the continuation slices (all but the first) of message `seq`, replacing the
    `old_chunks` it had."""
    if old_chunks > len(slices) - 1:
        db.sql("DELETE FROM think_message_chunks WHERE seq = ? AND idx >= ?", seq, len(slices))
    if len(slices) > 1:
        db.execute_many("INSERT OR REPLACE INTO think_message_chunks (seq, idx, data) VALUES (?, ?, ?)",
                        [(seq, idx, data) for idx, data in enumerate(slices) if idx])


def insert(db: Database, session_id: str, message_id: str, parent: int | None, role: str, body: bytes,
           created_at: float) -> int:
    """Store a new message row (and its slices); returns its seq. Call inside a transaction."""
    slices = split_body(body)
    seq = int(db.value(
        "INSERT INTO think_messages (session_id, id, parent, role, body, chunks, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING seq",
        session_id, message_id, parent, role, slices[0], len(slices) - 1, created_at))
    write_slices(db, seq, slices)
    return seq


def rewrite(db: Database, seq: int, role: str, body: bytes, old_chunks: int | None = None) -> None:
    """Replace the stored JSON of message `seq` (its slices too). Call inside a transaction.

    `old_chunks` is how many slices it had, when the caller knows (it saves a query).
    """
    if old_chunks is None:
        old_chunks = int(db.value("SELECT chunks FROM think_messages WHERE seq = ?", seq) or 0)
    slices = split_body(body)
    if not old_chunks and len(slices) == 1:  # the common case: the update trigger keeps the index
        db.sql("UPDATE think_messages SET body = ?, role = ? WHERE seq = ?", body, role, seq)
        return
    indexed = unindex(db, seq)  # while the index can still read the old slices
    db.sql("UPDATE think_messages SET body = ?, role = ?, chunks = ? WHERE seq = ?",
           slices[0], role, len(slices) - 1, seq)
    write_slices(db, seq, slices, old_chunks)
    if indexed:
        reindex(db, seq)


def chunks_of(body: bytes) -> int:
    """How many continuation slices a stored body of this size has."""
    return len(split_body(body)) - 1 if len(body) > ROW_BYTES else 0


def _bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else bytes(value)


def full_body(db: Database, seq: int, body: Any, chunks: int) -> bytes:
    """The whole stored JSON of message `seq`: its row's `body` and, if it has any, its slices."""
    head = _bytes(body)
    if not chunks:
        return head
    rest = db.sql("SELECT data FROM think_message_chunks WHERE seq = ? ORDER BY idx", seq)
    return head + b"".join(_bytes(row["data"]) for row in rest)


def join_rows(db: Database, rows: Sequence[Row]) -> list[Row]:
    """`rows` (with `seq`, `body` and `chunks` columns) with every split body joined back."""
    if not any(row["chunks"] for row in rows):
        return list(rows)
    out: list[Row] = []
    for row in rows:
        if row["chunks"]:
            joined = dict(row)
            joined["body"] = full_body(db, row["seq"], row["body"], row["chunks"])
            out.append(joined)
        else:
            out.append(row)
    return out
