"""Full-text search over stored messages (SQLite FTS5, porter stemming), ranked by BM25.

Every message of every branch is searchable, compacted ones included: compaction changes what the
model sees, never what is stored. Query words are quoted, so FTS5 operators in user text are
plain words; all words must appear (in any order, any inflection: "running" finds "runs").

Ranking costs a BM25 score per matching message, so a very common word over a long history
would cost far more than a rare one. A query matching more than `RANKED_CANDIDATES` messages is
therefore ranked among its newest `RANKED_CANDIDATES` matches (FTS5 reads its matches in rowid
order and stops there): the answer is the best of the recent ones, in bounded time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from think.sessions.schema import catch_up_index
from think.storage import Database

_WORD = re.compile(r"\w+", re.UNICODE)
SNIPPET_WORDS = 16
RANKED_CANDIDATES = 4000
"""At most this many matches (the newest) are ranked for one query."""


@dataclass(frozen=True, kw_only=True)
class SearchResult:
    """One matching message."""

    id: str
    session_id: str
    role: str
    snippet: str
    """The best matching passage, matched words in `**bold**`."""
    content: str
    """The message's whole text."""
    created_at: float
    rank: float
    """BM25 score: lower is better (results come best first)."""


def fts_query(text: str) -> str | None:
    """An FTS5 query that matches messages containing every word of `text` (None: no words)."""
    words = _WORD.findall(text)
    return " ".join(f'"{word}"' for word in words) if words else None


def search_messages(db: Database, query: str, *, session_id: str | None, limit: int = 10) -> list[SearchResult]:
    """The best `limit` messages for `query`, in one session or (`session_id=None`) in all."""
    match = fts_query(query)
    if match is None or limit <= 0:
        return []
    catch_up_index(db)  # messages written since the last batch become searchable first
    where = "think_messages_fts MATCH ?"
    params: list[object] = [match]
    if session_id is not None:
        where += " AND m.session_id = ?"
        params.append(session_id)
    oldest = db.value(f"""
        SELECT f.rowid FROM think_messages_fts f JOIN think_messages m ON m.seq = f.rowid
        WHERE {where} ORDER BY f.rowid DESC LIMIT 1 OFFSET ?""", *params, RANKED_CANDIDATES - 1)
    if oldest is not None:  # more matches than are worth ranking: rank the newest ones
        where += " AND f.rowid >= ?"
        params.append(oldest)
    rows = db.sql(f"""
        SELECT m.id, m.session_id, m.role, m.created_at, f.rank AS rank, f.text AS content,
               snippet(think_messages_fts, 0, '**', '**', '…', {SNIPPET_WORDS}) AS snippet
        FROM think_messages_fts f JOIN think_messages m ON m.seq = f.rowid
        WHERE {where} ORDER BY f.rank LIMIT ?""", *params, limit)
    return [SearchResult(id=r["id"], session_id=r["session_id"], role=r["role"], snippet=r["snippet"] or "",
                         content=r["content"] or "", created_at=r["created_at"], rank=r["rank"]) for r in rows]


def format_results(results: Sequence[SearchResult], *, with_session: bool = False) -> list[str]:
    """One line per result, the way the model reads them."""
    lines = []
    for r in results:
        where = f" session={r.session_id!r}" if with_session else ""
        lines.append(f"[{r.role}{where} id={r.id}] {r.snippet}")
    return lines


class HistorySearch:
    """A searchable context block over stored messages (one session's, or all of them)."""

    def __init__(self, db: Database, session_id: str | None) -> None:
        self.db = db
        self.session_id = session_id

    async def get(self) -> str:
        scope = "every conversation" if self.session_id is None else "this conversation"
        return (f"Every message of {scope} is searchable here, including older messages that were "
                "summarized. Use search_context to find exact earlier wording, names or numbers.")

    async def search(self, query: str) -> list[str]:
        results = search_messages(self.db, query, session_id=self.session_id, limit=10)
        return format_results(results, with_session=self.session_id is None)
