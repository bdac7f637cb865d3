"""Think: an opinionated chat agent. Subclass `Think`, override `get_model()`, serve it."""

from think._version import __version__
from think.agent import Think
from think.errors import (
    ConfigurationError,
    ContextOverflow,
    DataDirInUse,
    ModelError,
    ProtocolError,
    StorageError,
    ThinkError,
    ToolFailed,
    TurnError,
)
from think.hooks import (
    Allow,
    Block,
    ChatErrorContext,
    StepConfig,
    StepContext,
    StepRecord,
    Substitute,
    ToolCallContext,
    ToolCallResultContext,
    ToolDecision,
    TurnConfig,
    TurnContext,
)
from think.messages import Message
from think.models.base import Model, ModelRequest
from think.runtime import Agent, AgentRuntime, EmbeddedRuntime, callable, open_agent
from think.scheduling.tasks import ScheduledTaskSpec
from think.sessions import Session
from think.subagents import agent_tool
from think.submissions import Submission
from think.tools import Tool, ToolContext, client_tool, tool
from think.turns.turn import TurnRequest, TurnResult
from think.workspace import Workspace


def __getattr__(name: str) -> object:
    # The server pulls in Starlette: load it only for code that serves.
    if name == "create_app":
        from think.server import create_app

        return create_app
    raise AttributeError(f"module 'think' has no attribute {name!r}")

__all__ = [
    "Agent",
    "AgentRuntime",
    "Allow",
    "Block",
    "ChatErrorContext",
    "ConfigurationError",
    "ContextOverflow",
    "DataDirInUse",
    "EmbeddedRuntime",
    "Message",
    "Model",
    "ModelError",
    "ModelRequest",
    "ProtocolError",
    "ScheduledTaskSpec",
    "Session",
    "StepConfig",
    "StepContext",
    "StepRecord",
    "StorageError",
    "Submission",
    "Substitute",
    "Think",
    "ThinkError",
    "Tool",
    "ToolCallContext",
    "ToolCallResultContext",
    "ToolContext",
    "ToolDecision",
    "ToolFailed",
    "TurnConfig",
    "TurnContext",
    "TurnError",
    "TurnRequest",
    "TurnResult",
    "Workspace",
    "__version__",
    "agent_tool",
    "callable",
    "client_tool",
    "create_app",
    "open_agent",
    "tool",
]
