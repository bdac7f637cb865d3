"""The `Think` a standalone `ThinkHarness` runs: its options as the agent's override points.

`model`, `system` and `tools` may be functions of `{"session": <HarnessSession>}`; they are
resolved per turn in `before_turn` (the turn's `session_id` names the session), and for the
root session where `Think` asks without a turn (`get_model`, `get_tools`). Hooks given as
`hooks={"before_tool_call": fn, …}` run as the agent's hooks.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from think.agent import Think
from think.hook_results import turn_config
from think.hooks import ToolCall, TurnConfig, TurnContext
from think.models.base import Model
from think.recovery import ChatRecoveryPolicy
from think.sessions.session import Session
from think.tools.tool import Tool

if TYPE_CHECKING:
    from think.harness.session import HarnessSession

HOOK_NAMES = frozenset({"before_turn", "before_step", "before_tool_call", "after_tool_call", "on_step_finish",
                        "on_chunk", "on_chat_response", "on_chat_error", "on_submission_status"})


@dataclass(frozen=True, slots=True)
class RecoveryPolicy:
    """The harness's recovery options (the original's `recovery`): mapped onto `ChatRecoveryPolicy`
    (`max_attempts`, `backoff`) and `Think.chat_stream_stall_timeout` (`stall_timeout`, seconds)."""

    max_attempts: int = 10
    backoff: float = 1.0
    stall_timeout: float = 120.0


@dataclass(frozen=True, kw_only=True)
class HarnessOptions:
    model: Any = None
    system: Any = None
    tools: Any = None
    max_steps: int = 10
    tool_approval: Callable[[ToolCall], Any] | None = None
    recovery: RecoveryPolicy = field(default_factory=RecoveryPolicy)
    reserved_metadata_keys: tuple[str, ...] = ()
    configure_session: Callable[[Session], Session | None] | None = None
    hooks: Mapping[str, Callable[..., Any]] = field(default_factory=dict)


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class HarnessAgent(Think):
    """A `Think` configured by `HarnessOptions` (subclassed per harness with `options` set)."""

    options: ClassVar[HarnessOptions] = HarnessOptions()
    handle: ClassVar[Callable[[Think, str], HarnessSession] | None] = None

    def __init__(self, name: str, **kwargs: Any) -> None:
        options = type(self).options
        self.max_steps = options.max_steps
        self.chat_recovery = ChatRecoveryPolicy(max_attempts=options.recovery.max_attempts,
                                                backoff=options.recovery.backoff)
        self.chat_stream_stall_timeout = options.recovery.stall_timeout
        self.reserved_metadata_keys = tuple(options.reserved_metadata_keys)
        super().__init__(name, **kwargs)

    def _for(self, value: Any, session_id: str) -> Any:
        if callable(value) and not isinstance(value, Model | Tool):
            make = type(self).handle
            assert make is not None
            return value({"session": make(self, session_id)})
        return value

    def get_model(self) -> Model | str:
        model = self._for(type(self).options.model, "")
        return model if model is not None else super().get_model()

    def get_system_prompt(self) -> str:
        system = self._for(type(self).options.system, "")
        return str(system) if system is not None else super().get_system_prompt()

    def get_tools(self) -> Sequence[Tool] | Mapping[str, Tool] | None:
        tools = self._for(type(self).options.tools, "")
        return tools  # type: ignore[no-any-return]

    def configure_session(self, session: Session) -> Session:
        configure = type(self).options.configure_session
        return (configure(session) or session) if configure is not None else session

    async def tool_approval(self, call: ToolCall) -> bool:
        decide = type(self).options.tool_approval
        return bool(await _maybe(decide(call))) if decide is not None else False

    async def before_turn(self, ctx: TurnContext) -> TurnConfig | None:
        options = type(self).options
        fields: dict[str, Any] = {}
        if ctx.session_id and callable(options.model) and not isinstance(options.model, Model):
            fields["model"] = self._for(options.model, ctx.session_id)
        if options.system is not None:  # the harness's system prompt, and the session's notes (a handoff)
            notes = [m.text for m in self.sessions.session(ctx.session_id).history() if m.role == "system"]
            fields["system"] = "\n\n".join([str(self._for(options.system, ctx.session_id)), *notes])
        if ctx.session_id and callable(options.tools):
            fields["tools"] = self._for(options.tools, ctx.session_id)
        own = turn_config(await _maybe(options.hooks["before_turn"](ctx))) if "before_turn" in options.hooks else None
        if own is not None:
            fields.update({f.name: getattr(own, f.name) for f in dataclasses.fields(own)
                           if getattr(own, f.name) is not None})
        return TurnConfig(**fields) if fields else None

    async def before_step(self, ctx: Any) -> Any:
        return await self._hook("before_step", ctx)

    async def before_tool_call(self, ctx: Any) -> Any:
        return await self._hook("before_tool_call", ctx)

    async def after_tool_call(self, ctx: Any) -> None:
        await self._hook("after_tool_call", ctx)

    async def on_step_finish(self, step: Any) -> None:
        await self._hook("on_step_finish", step)

    async def on_chunk(self, chunk: Any) -> None:
        await self._hook("on_chunk", chunk)

    async def on_chat_response(self, result: Any) -> None:
        await self._hook("on_chat_response", result)

    async def on_chat_error(self, error: BaseException, ctx: Any) -> Any:
        hook = type(self).options.hooks.get("on_chat_error")
        return await _maybe(hook(error, ctx)) if hook is not None else error

    async def on_submission_status(self, submission: Any) -> None:
        await self._hook("on_submission_status", submission)

    async def _hook(self, name: str, *args: Any) -> Any:
        hook = type(self).options.hooks.get(name)
        return await _maybe(hook(*args)) if hook is not None else None
