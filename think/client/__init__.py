"""Python clients for served agents (the same protocol as the JavaScript clients)."""

from think.client.agent_client import AgentClient
from think.client.calls import ChatTurn, RpcCall, RpcError

__all__ = ["AgentClient", "ChatTurn", "RpcCall", "RpcError"]
