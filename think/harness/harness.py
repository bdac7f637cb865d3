"""`ThinkHarness`: the original's options-object face over the same engine as `Think`.

Standalone, a harness runs its own agent (a `Think` configured by the options, with its own
SQLite database under `data_dir`); inside an agent, `ThinkHarness.of(agent)` is a face over that
agent. Either way every call goes to the agent's own turns, submissions and sessions: one
engine, two faces.

    async with ThinkHarness(model=my_model, system="Be brief.", tools=[lookup], data_dir="data") as harness:
        session = harness.session("support-42")
        done = await session.prompt("Where is my order?")
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from think.harness.agent import HOOK_NAMES, HarnessAgent, HarnessOptions, RecoveryPolicy
from think.harness.session import HarnessSession
from think.hooks import ToolCall
from think.sessions.session import Session
from think.turns.trust import UnansweredReason

if TYPE_CHECKING:
    from types import TracebackType

    from think.agent import Think
    from think.sessions.manager import SessionInfo


class HarnessSessions:
    """`harness.sessions`: create, fork and list sessions (handles, not `Session` objects)."""

    def __init__(self, harness: ThinkHarness) -> None:
        self._harness = harness

    def create(self, name: str | None = None, *, id: str | None = None) -> HarnessSession:
        created = self._harness.agent.sessions.create(name, id=id)
        return self._harness.session(created.id)

    def fork(self, from_id: str, *, at_message: str | None = None, name: str | None = None) -> HarnessSession:
        forked = self._harness.agent.sessions.fork(from_id, at_message=at_message, name=name)
        return self._harness.session(forked.id)

    def list(self) -> list[SessionInfo]:
        return self._harness.agent.sessions.list()


class ThinkHarness:
    """Many sessions over one agent, configured by options instead of overrides (see the module
    docstring). `model`, `system` and `tools` may be functions of `{"session": <HarnessSession>}`;
    `tool_approval(call) -> bool` asks a person before a call on top of the tool's own
    `needs_approval`; `reserved_metadata_keys` are stripped from client input; `hooks` maps hook
    names (`before_turn`, `before_tool_call`, …) to functions."""

    def __init__(self, *, model: Any = None, system: Any = None, tools: Any = None, max_steps: int = 10,
                 tool_approval: Callable[[ToolCall], Any] | None = None,
                 recovery: RecoveryPolicy | None = None, reserved_metadata_keys: tuple[str, ...] = (),
                 configure_session: Callable[[Session], Session | None] | None = None,
                 hooks: Mapping[str, Callable[..., Any]] | None = None,
                 data_dir: str | Path | None = None, name: str = "default") -> None:
        unknown = set(hooks or {}) - HOOK_NAMES
        if unknown:
            raise ValueError(f"unknown hook(s) {sorted(unknown)}; use {sorted(HOOK_NAMES)}")
        self.options = HarnessOptions(model=model, system=system, tools=tools, max_steps=max_steps,
                                      tool_approval=tool_approval, recovery=recovery or RecoveryPolicy(),
                                      reserved_metadata_keys=tuple(reserved_metadata_keys),
                                      configure_session=configure_session, hooks=dict(hooks or {}))
        self.data_dir, self.name = data_dir, name
        self._agent: Think | None = None
        self._stack: AsyncExitStack | None = None
        self._refused: dict[str, UnansweredReason] = {}
        self.sessions = HarnessSessions(self)

    @classmethod
    def of(cls, agent: Think) -> ThinkHarness:
        """A harness face over an existing agent (its own model, tools and hooks apply)."""
        harness = cls()
        harness._agent = agent
        return harness

    @property
    def agent(self) -> Think:
        if self._agent is None:
            raise RuntimeError("the harness is not open: use `async with ThinkHarness(...) as harness:`")
        return self._agent

    async def __aenter__(self) -> ThinkHarness:
        from think.runtime.embedded import open_agent

        options = self.options
        cls = type("ThinkHarnessAgent", (HarnessAgent,), {"options": options, "handle": staticmethod(self._handle)})
        self._stack = AsyncExitStack()
        self._agent = await self._stack.enter_async_context(open_agent(cls, self.name, data_dir=self.data_dir))
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await self._agent.wait_until_stable(timeout=0) if self._agent is not None else None
            await stack.aclose()
        self._agent = None

    def _handle(self, agent: Think, session_id: str) -> HarnessSession:
        return HarnessSession(agent, session_id, self._refused)

    def session(self, id: str = "") -> HarnessSession:
        """The handle of session `id` (`""`: the root session, the chat transcript); another id
        is created on first use."""
        agent = self.agent
        if id and agent.sessions.get(id) is None:
            agent.sessions.create(id=id)
        return self._handle(agent, id)
