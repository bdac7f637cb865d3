"""Think: an opinionated chat agent. Subclass `Think`, override `get_model()`, serve it.

`import think` is cheap: each public name is imported from its module the first time it is used
(PEP 562 `__getattr__`), so a program pays only for the subsystems it touches (`from think import
Think` loads the agent and what a turn needs; the server, Starlette and the CLI stay unloaded until
something serves). To export a new public name, add it to `_EXPORTS` (name → module), to the
`TYPE_CHECKING` imports (for type checkers and editors) and to `__all__`; a test checks the
three agree. Subpackages do the same where their `__init__` would otherwise import heavy modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from think._lazy import lazy_exports
from think._version import __version__

if TYPE_CHECKING:
    from think.actions import ActionContext, action
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
    from think.server import create_app
    from think.sessions import Session
    from think.subagents import agent_tool
    from think.submissions import Submission
    from think.tools import Tool, ToolContext, client_tool, tool
    from think.turns.turn import TurnRequest, TurnResult
    from think.workspace import Workspace

_EXPORTS: dict[str, str] = {
    "action": "think.actions",
    "ActionContext": "think.actions",
    "Agent": "think.runtime",
    "agent_tool": "think.subagents",
    "AgentRuntime": "think.runtime",
    "Allow": "think.hooks",
    "Block": "think.hooks",
    "callable": "think.runtime",
    "ChatErrorContext": "think.hooks",
    "client_tool": "think.tools",
    "ConfigurationError": "think.errors",
    "ContextOverflow": "think.errors",
    "create_app": "think.server",
    "DataDirInUse": "think.errors",
    "EmbeddedRuntime": "think.runtime",
    "Message": "think.messages",
    "Model": "think.models.base",
    "ModelError": "think.errors",
    "ModelRequest": "think.models.base",
    "open_agent": "think.runtime",
    "ProtocolError": "think.errors",
    "ScheduledTaskSpec": "think.scheduling.tasks",
    "Session": "think.sessions",
    "StepConfig": "think.hooks",
    "StepContext": "think.hooks",
    "StepRecord": "think.hooks",
    "StorageError": "think.errors",
    "Submission": "think.submissions",
    "Substitute": "think.hooks",
    "Think": "think.agent",
    "ThinkError": "think.errors",
    "Tool": "think.tools",
    "tool": "think.tools",
    "ToolCallContext": "think.hooks",
    "ToolCallResultContext": "think.hooks",
    "ToolContext": "think.tools",
    "ToolDecision": "think.hooks",
    "ToolFailed": "think.errors",
    "TurnConfig": "think.hooks",
    "TurnContext": "think.hooks",
    "TurnError": "think.errors",
    "TurnRequest": "think.turns.turn",
    "TurnResult": "think.turns.turn",
    "Workspace": "think.workspace",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


__all__ = [
    "ActionContext",
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
    "action",
    "agent_tool",
    "callable",
    "client_tool",
    "create_app",
    "open_agent",
    "tool",
]
