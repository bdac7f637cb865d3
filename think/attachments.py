"""Reply attachments: delivery metadata a tool attaches to the turn's reply (`ctx.attach_reply`).

    @tool
    def draft_email(ctx: ToolContext, to: str, body: str) -> str:
        '''Draft an email for the user to send.'''
        ctx.attach_reply({"type": "email_draft", "to": to, "body": body})
        return "Drafted."

An attachment is advisory: a JSON object with a `type` (`email_draft`, `card`, `voice_note` or
your own) that a channel may render next to the reply. A turn keeps at most
`MAX_REPLY_ATTACHMENTS_PER_TURN`; the attachments of a tool call that fails are dropped. The
turn's attachments are in `TurnResult.attachments` (so `on_chat_response` sees them) and, stored
in the agent's database, in `Think.reply_attachments(request_id)`.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from typing import Any

import orjson

from think.errors import ConfigurationError
from think.messages import JSONObject
from think.storage import Database, migration

log = logging.getLogger("think.attachments")

MAX_REPLY_ATTACHMENTS_PER_TURN = 32


@migration("think.attachments.001_reply_attachments")
def _m001(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE think_reply_attachments (
            seq          INTEGER PRIMARY KEY AUTOINCREMENT,
            request_id   TEXT NOT NULL,
            tool_call_id TEXT NOT NULL,
            body         BLOB NOT NULL,      -- JSON
            created_at   REAL NOT NULL
        )""")
    conn.execute("CREATE INDEX think_reply_attachments_request ON think_reply_attachments (request_id, seq)")


MIGRATIONS = [_m001]


def _checked(attachment: Any) -> JSONObject:
    if not isinstance(attachment, dict) or not isinstance(attachment.get("type"), str) or not attachment["type"]:
        raise ConfigurationError('a reply attachment is a JSON object with a "type" string, such as '
                                 '{"type": "card", "title": "…"}')
    try:
        return dict(orjson.loads(orjson.dumps(attachment)))
    except TypeError as exc:
        raise ConfigurationError(f"a reply attachment must be JSON-serializable: {exc}") from exc


class ReplyAttachments:
    """The attachments of one turn: staged per tool call, kept when the call succeeds."""

    def __init__(self, request_id: str, db: Database | None = None, *,
                 limit: int = MAX_REPLY_ATTACHMENTS_PER_TURN) -> None:
        self.request_id = request_id
        self.db = db
        self.limit = limit
        self.kept: list[JSONObject] = []
        self._staged: dict[str, list[JSONObject]] = {}

    def attach(self, tool_call_id: str, attachment: Any) -> bool:
        """Stage an attachment of a running tool call; False (and a warning) past the turn's cap."""
        checked = _checked(attachment)
        if len(self.kept) + sum(len(v) for v in self._staged.values()) >= self.limit:
            log.warning("turn %s already has %d reply attachments; dropping one of type %r",
                        self.request_id, self.limit, checked["type"])
            return False
        self._staged.setdefault(tool_call_id, []).append(checked)
        return True

    def settle(self, tool_call_id: str, *, success: bool) -> None:
        """The tool call ended: keep (and store) its attachments, or drop them if it failed."""
        staged = self._staged.pop(tool_call_id, [])
        if not success or not staged:
            return
        self.kept.extend(staged)
        if self.db is not None and not self.db.closed:
            now = time.time()
            self.db.execute_many(
                "INSERT INTO think_reply_attachments (request_id, tool_call_id, body, created_at) VALUES (?, ?, ?, ?)",
                [(self.request_id, tool_call_id, orjson.dumps(a), now) for a in staged])

    def observe(self, chunk: JSONObject) -> None:
        """Settle staged attachments from the turn's chunks (a tool's final output or error)."""
        kind = chunk.get("type")
        if kind == "tool-output-available" and not chunk.get("preliminary"):
            self.settle(str(chunk.get("toolCallId")), success=True)
        elif kind == "tool-output-error":
            self.settle(str(chunk.get("toolCallId")), success=False)


def stored_attachments(db: Database, request_id: str | None = None) -> list[JSONObject]:
    """The stored attachments of a turn (default: of the newest turn that has any)."""
    if request_id is None:
        request_id = db.value("SELECT request_id FROM think_reply_attachments ORDER BY seq DESC LIMIT 1")
        if request_id is None:
            return []
    rows = db.sql("SELECT body FROM think_reply_attachments WHERE request_id = ? ORDER BY seq", request_id)
    return [orjson.loads(row["body"]) for row in rows]
