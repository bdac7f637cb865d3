"""`Window`: the part of a session's active path that is in memory.

A transcript can be far larger than what a process should hold, so a session loads only its
newest messages: as many as fit in a byte budget of stored JSON, and never fewer than the last
`MIN_HYDRATED`. The window grows with appends and slides back to its budget once it has grown
`SLIDE_AT` times past it (in steps, so cached model histories are not thrown away every turn).
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from think.context.convert import has_unsettled_tools
from think.errors import StorageError
from think.messages import Message
from think.sessions.rows import full_body
from think.storage import Database

MIN_HYDRATED = 4
SLIDE_AT = 1.5

# The path walks parent links from the leaf, adding up stored sizes until the budget is spent.
# The walk carries only numbers (`length()` of a stored body reads its record header, not the body)
# and the bodies are joined in at the end; and no ORDER BY: sorting the rows by depth in SQLite
# moved every body through a sorter, while the walk yields them newest first, so Python's sort
# (linear on a run) puts them oldest first.
PATH_SQL = """
    WITH RECURSIVE path(seq, parent, depth, total) AS (
        SELECT seq, parent, 0, length(body) + {slices} FROM think_messages m WHERE seq = ?1
        UNION ALL
        SELECT m.seq, m.parent, p.depth + 1, p.total + length(m.body) + {slices}
        FROM path p JOIN think_messages m ON m.seq = p.parent
        WHERE p.total < ?2 OR p.depth < ?3
    )
    SELECT m.seq, m.parent, m.id, m.body, m.chunks, p.depth FROM path p CROSS JOIN think_messages m ON m.seq = p.seq
    """.format(slices="(CASE WHEN m.chunks = 0 THEN 0 ELSE (SELECT sum(length(data)) FROM think_message_chunks c "
                      "WHERE c.seq = m.seq) END)")
ANCESTORS_SQL = """
    WITH RECURSIVE anc(seq, depth) AS (
        SELECT parent, 1 FROM think_messages WHERE seq = ?1
        UNION ALL
        SELECT m.parent, a.depth + 1 FROM anc a JOIN think_messages m ON m.seq = a.seq
        WHERE m.parent IS NOT NULL
    )"""


PathRow = tuple[int, int | None, str, bytes]
"""A stored message of a path: its `seq`, `parent` seq, `id` and whole stored JSON."""


def read_path_rows(db: Database, leaf_seq: int, budget: int) -> list[PathRow]:
    """The stored messages of the path ending at `leaf_seq`, oldest first, within `budget` bytes
    (split messages joined back: `think.sessions.rows`)."""
    rows = db.rows(PATH_SQL, leaf_seq, budget, MIN_HYDRATED - 1)
    rows.sort(key=itemgetter(5), reverse=True)  # by depth: the oldest first
    return [(seq, parent, message_id, full_body(db, seq, body, chunks))
            for seq, parent, message_id, body, chunks, _ in rows]


def decode(message_id: str, body: Any) -> Message:
    try:
        return Message.from_json(body if isinstance(body, bytes) else bytes(body))
    except ValueError as exc:
        raise StorageError(f"stored message {message_id!r} is not a valid UIMessage: {exc}") from exc


def decode_all(rows: Sequence[PathRow]) -> list[Message]:
    """`decode` of every row, in one pass (a row's body is bytes already: `read_path_rows`)."""
    from_json = Message.from_json
    try:
        return [from_json(body) for _, _, _, body in rows]
    except ValueError:
        return [decode(message_id, body) for _, _, message_id, body in rows]  # raises, naming the bad one


class Window:
    """Messages of the active path, oldest first, with their row `seq`s and stored JSON.

    `ids`, `roles` and `bodies` run parallel to `messages`, so a whole transcript is compared or
    sent with list operations, not a Python loop per message.
    """

    def __init__(self, rows: Sequence[PathRow] = ()) -> None:
        # Column by column (as `append` would, message by message): thousands of rows at once.
        self.messages: list[Message] = decode_all(rows)
        self.seqs: list[int] = [row[0] for row in rows]
        self.ids: list[str] = [message.id for message in self.messages]
        self.roles: list[str] = [message.role for message in self.messages]
        self.bodies: list[bytes] = [row[3] for row in rows]
        self.index: dict[str, int] = {message_id: i for i, message_id in enumerate(self.ids)}
        self.stored: dict[str, bytes] = dict(zip(self.ids, self.bodies, strict=True))  # to skip unchanged writes
        self.unsettled: set[str] = set()  # ids of messages with tool calls still waiting
        self.bytes = sum(map(len, self.bodies))
        self.windowed = bool(rows) and rows[0][1] is not None
        """Older messages of the path are stored but not in memory."""
        for message in self.messages:
            if message.role == "assistant":
                self.track(message)

    def append(self, message: Message, seq: int, body: bytes) -> None:
        self.index[message.id] = len(self.messages)
        self.messages.append(message)
        self.seqs.append(seq)
        self.ids.append(message.id)
        self.roles.append(message.role)
        self.bodies.append(body)
        self.stored[message.id] = body
        self.bytes += len(body)
        self.track(message)

    def replace(self, position: int, message: Message, body: bytes) -> None:
        self.bytes += len(body) - len(self.stored[message.id])
        self.stored[message.id] = body
        self.messages[position] = message
        self.roles[position] = message.role
        self.bodies[position] = body
        self.track(message)

    def track(self, message: Message) -> None:
        if has_unsettled_tools(message):
            self.unsettled.add(message.id)
        else:
            self.unsettled.discard(message.id)

    def _columns(self) -> tuple[list[Any], ...]:
        return self.messages, self.seqs, self.ids, self.roles, self.bodies

    def _forget(self, dropped: Sequence[Message]) -> None:
        for message in dropped:
            self.index.pop(message.id, None)
            self.bytes -= len(self.stored.pop(message.id, b""))
            self.unsettled.discard(message.id)

    def cut_after(self, position: int) -> None:
        """Drop the messages after `position` (a new branch starts there)."""
        self._forget(self.messages[position + 1:])
        for column in self._columns():
            del column[position + 1:]

    def drop_front(self, count: int) -> None:
        """Drop the oldest `count` messages from memory (they stay stored)."""
        self._forget(self.messages[:count])
        for column in self._columns():
            del column[:count]
        self.index = {m.id: i for i, m in enumerate(self.messages)}
        self.windowed = True

    def slide(self, budget: int) -> bool:
        """Drop old messages once the window is `SLIDE_AT` times its budget; True if it did."""
        if self.bytes <= budget * SLIDE_AT or len(self.messages) <= MIN_HYDRATED:
            return False
        drop, size = 0, self.bytes
        while size > budget and len(self.messages) - drop > MIN_HYDRATED:
            size -= len(self.stored[self.messages[drop].id])
            drop += 1
        self.drop_front(drop)
        return True
