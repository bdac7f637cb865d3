"""Conversation memory: the message tree, compaction, search and many sessions per agent."""

from think.sessions.compaction import Compaction, CompactionContext, CompactionResult
from think.sessions.manager import SessionInfo, Sessions
from think.sessions.schema import MIGRATIONS
from think.sessions.search import SearchResult
from think.sessions.session import DEFAULT_HYDRATION_BYTES, ROOT_SESSION, Session
from think.sessions.summarize import create_compact_function, summarizer_from_model

__all__ = [
    "DEFAULT_HYDRATION_BYTES",
    "MIGRATIONS",
    "ROOT_SESSION",
    "Compaction",
    "CompactionContext",
    "CompactionResult",
    "SearchResult",
    "Session",
    "SessionInfo",
    "Sessions",
    "create_compact_function",
    "summarizer_from_model",
]
