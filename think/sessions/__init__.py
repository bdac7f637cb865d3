"""Conversation memory: the message tree and what is stored."""

from think.sessions.session import ROOT_SESSION, Session

__all__ = ["ROOT_SESSION", "Session"]
