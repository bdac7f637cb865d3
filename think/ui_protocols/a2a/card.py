"""The A2A agent card of a served agent class: who it is, where to reach it, what it can do.

    name, description   the class's name and its `description` (else the first paragraph of its
                        docstring)
    interface           JSON-RPC 1.0 at `<origin>/<prefix>/<agent>/a2a`, streaming on, no push
    skills              `chat` (the description), then one per tool of the agent's own
                        `get_tools()` that it runs itself (a client tool is not a skill)

The tools come from an instance: the card instance (`CARD_INSTANCE`) is leased once per class and
the skills kept for the life of the app (they describe the class, not a conversation).
"""

from __future__ import annotations

import inspect

from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill

from think._version import __version__
from think.agent import Think
from think.runtime.base import AgentRuntime
from think.tools.tool import as_tool_map

CARD_INSTANCE = "a2a-agent-card"
"""The instance whose tools the card lists."""
PROTOCOL_VERSION = "1.0"


def describe(cls: type[Think]) -> str:
    given = getattr(cls, "description", None)
    if isinstance(given, str) and given.strip():
        return given.strip()
    doc = inspect.getdoc(cls) if cls.__doc__ else None
    return doc.split("\n\n", 1)[0].replace("\n", " ") if doc else f"The {cls.__name__} agent."


class Cards:
    """The cards of the served classes, their skills worked out once."""

    def __init__(self, runtime: AgentRuntime) -> None:
        self.runtime = runtime
        self._skills: dict[type[Think], list[AgentSkill]] = {}

    async def skills(self, cls: type[Think]) -> list[AgentSkill]:
        if cls not in self._skills:
            skills = [AgentSkill(id="chat", name=f"Chat with {cls.__name__}", description=describe(cls),
                                 tags=["chat"], input_modes=["text/plain"], output_modes=["text/plain"])]
            async with self.runtime.lease(cls, CARD_INSTANCE) as agent:
                assert isinstance(agent, Think)
                for name, tool in as_tool_map(agent.get_tools()).items():
                    if tool.is_client_tool:
                        continue
                    skills.append(AgentSkill(id=name, name=tool.title or name, description=tool.description or name,
                                             tags=["tool"]))
            self._skills[cls] = skills
        return self._skills[cls]

    async def card(self, cls: type[Think], url: str) -> AgentCard:
        """The card of `cls`, whose JSON-RPC endpoint is `url`."""
        return AgentCard(
            name=cls.__name__, description=describe(cls), version=__version__,
            supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC",
                                                 protocol_version=PROTOCOL_VERSION)],
            capabilities=AgentCapabilities(streaming=True, push_notifications=False),
            default_input_modes=["text/plain", "application/json"], default_output_modes=["text/plain"],
            skills=await self.skills(cls))
