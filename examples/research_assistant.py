"""A research assistant that asks two sub-agents for opposite views and merges their answers.

    think serve examples/research_assistant.py:ResearchLead      # chat; watch the sub-agents work
    python examples/research_assistant.py                        # offline: scripted models play it

`agent_tool(Advocate, ...)` is a tool that runs a fresh `Advocate` child agent for each call: the
child has its own prompt, model, tools and SQLite file, and its answer is the tool's output. The
lead's model calls `advocate` and `critic` in one step, so the two children run in parallel;
while they run, the lead's clients get `agent-tool-event` frames with the children's streamed
text (the web UI shows them under the tool call, `useAgentToolEvents` in your own page). The
lead's model then reads both answers and writes one balanced reply.

A child run is durable: its run id comes from the lead's message and tool call, so if the
process dies mid-run, the lead's recovery re-attaches to the same child and collects its answer
instead of starting the research again.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from think import Think, open_agent
from think.models.base import ModelRequest, ToolMessage
from think.subagents.tools import agent_tool
from think.testing import ScriptedModel, call
from think.testing.models import Reply


class Advocate(Think):
    """Makes the strongest honest case *for* a proposal."""

    workspace_bash = False

    def get_system_prompt(self) -> str:
        return ("You argue for the proposal you are given: its three strongest benefits, each with the "
                "evidence a sceptic would accept. Stay honest; say what would change your mind. Be brief.")


class Critic(Think):
    """Makes the strongest honest case *against* a proposal."""

    workspace_bash = False

    def get_system_prompt(self) -> str:
        return ("You argue against the proposal you are given: its three biggest risks or costs, and "
                "what would have to be true for them not to matter. Be brief.")


class ResearchLead(Think):
    """Delegates a question to an advocate and a critic, then merges their answers."""

    workspace_bash = False
    advocate: ClassVar[type[Think]] = Advocate
    critic: ClassVar[type[Think]] = Critic
    welcome = "Ask about a decision: an advocate and a critic research it, and I weigh their answers."
    suggestions = ("Should our town build a tram line?", "Should we move our team to a four-day week?")

    def get_system_prompt(self) -> str:
        return ("You lead a small research team. For every question, call `advocate` and `critic` in the "
                "same step, each with the full question. Then answer with a short, balanced summary: the "
                "best point of each side, where they agree, and what you would check next.")

    def get_tools(self) -> list[Any]:
        return [agent_tool(self.advocate, name="advocate", description="Research the case for a proposal."),
                agent_tool(self.critic, name="critic", description="Research the case against a proposal.")]


# ---- offline: rule-based stand-ins for real models ------------------------------------------------


def lead_model(request: ModelRequest) -> Reply:
    """Delegate to both children at once, then merge what they answered."""
    last = request.messages[-1] if request.messages else None
    if isinstance(last, ToolMessage):
        answers = {r.name: r.output for r in last.results}
        return (f"For: {answers.get('advocate')}\nAgainst: {answers.get('critic')}\n"
                "Both sides agree it depends on ridership, so that is what I would check next.")
    question = request.last_user_text
    return [call("advocate", prompt=question), call("critic", prompt=question)]


class OfflineAdvocate(Advocate):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(lambda request: f"It would cut car trips and noise ({request.last_user_text!r}).")


class OfflineCritic(Critic):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(lambda request: f"It costs a lot up front and takes years ({request.last_user_text!r}).")


class OfflineResearchLead(ResearchLead):
    advocate = OfflineAdvocate
    critic = OfflineCritic

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(lead_model)


async def main() -> None:
    async with open_agent(OfflineResearchLead, "demo", data_dir=".think-example") as agent:
        await agent.clear_messages()
        await agent.save_messages("Should our town build a tram line?")
        for message in agent.messages:
            for part in message.parts:
                print(message.role, getattr(part, "text", None) or getattr(part, "output", None))


if __name__ == "__main__":
    asyncio.run(main())
