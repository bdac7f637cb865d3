"""Agents for the sub-agent tests: a lead that delegates, and researchers it runs as children."""

from __future__ import annotations

from typing import Any

from think import Think, agent_tool, callable
from think.models.base import ModelRequest, ToolMessage
from think.recovery import ChatRecoveryPolicy
from think.testing.models import HANG, Reply, ScriptedModel, call, text


def research(request: ModelRequest) -> Reply:
    topic = request.last_user_text
    if topic.startswith("forever"):
        return [text("Digging into it "), HANG]
    return [text(f"Findings on {topic}: it is well studied.", chunks=4)]


class Researcher(Think):
    """A child: answers "Findings on <topic>: …" in a few chunks; "forever …" never finishes."""

    model = ScriptedModel(research)

    def get_model(self) -> ScriptedModel:
        return self.model

    def shout(self, word: str) -> str:
        return word.upper() + f" (from {self.name})"


def lead(request: ModelRequest) -> Reply:
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        result = last.results[0]
        return f"Summary: {result.output}" if not result.is_error else f"The researcher failed: {result.output}"
    return [call("researcher", prompt=request.last_user_text)]


class Lead(Think):
    """A parent: hands every question to a `Researcher` through `agent_tool`, then summarizes."""

    model = ScriptedModel(lead)

    def get_model(self) -> ScriptedModel:
        return self.model

    def get_tools(self) -> list[Any]:
        return [agent_tool(Researcher, description="Research a topic in depth.", display_name="Researcher")]

    @callable
    async def delegate(self, topic: str) -> dict[str, Any]:
        """Run a researcher directly (no model turn); its progress streams to this agent's clients."""
        result = await self.run_agent_tool(Researcher, input=topic)
        return {"runId": result.run_id, "status": result.status, "output": result.output}


class Stalling(Think):
    """A child whose first stream stalls mid-answer; its recovery continues it."""

    chat_stream_stall_timeout = 0.2
    chat_recovery = ChatRecoveryPolicy(backoff=0.0)
    model = ScriptedModel([[text("Dig"), HANG], "ging done."])

    def get_model(self) -> ScriptedModel:
        return self.model


class StallLead(Lead):
    def get_tools(self) -> list[Any]:
        return [agent_tool(Stalling, description="Dig.", name="researcher")]
