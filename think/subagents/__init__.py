"""Sub-agents: child agents a parent creates, calls, exposes as tools and serves at sub-URLs."""

from think.subagents.children import SubAgents, SubAgentStub
from think.subagents.tools import AgentToolResult, agent_tool, run_agent_tool

__all__ = ["AgentToolResult", "SubAgentStub", "SubAgents", "agent_tool", "run_agent_tool"]
