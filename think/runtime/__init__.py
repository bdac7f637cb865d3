"""The agent runtime: addressable instances, their storage, state and RPC."""

from think.runtime.agent import Agent
from think.runtime.base import AgentRuntime
from think.runtime.embedded import EmbeddedRuntime, open_agent, shared_runtime
from think.runtime.naming import kebab_case
from think.runtime.rpc import callable

__all__ = ["Agent", "AgentRuntime", "EmbeddedRuntime", "callable", "kebab_case", "open_agent", "shared_runtime"]
