"""Test doubles we ship: a scripted model (and, with the server, a chat test client)."""

from think.testing.models import HANG, ScriptedModel, call, delay, error, reasoning, text, usage

__all__ = ["HANG", "ScriptedModel", "call", "delay", "error", "reasoning", "text", "usage"]
