"""`Think`: an opinionated chat agent. Subclass it and override `get_model()`.

    class Assistant(Think):
        def get_model(self):
            return "openai:gpt-4.1-mini"

        def get_tools(self):
            return [get_weather]

The class holds defaults, override points and wiring; each stage of a turn lives in its own
folder (see `think.turns.runner` for the pipeline).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from think.context.history import ModelHistory
from think.context.prompt import DEFAULT_SYSTEM_PROMPT
from think.errors import ConfigurationError, ProtocolError, TurnError
from think.hooks import (
    StepConfig,
    StepContext,
    StepRecord,
    ToolCallContext,
    ToolCallResultContext,
    ToolDecision,
    TurnConfig,
    TurnContext,
)
from think.messages import JSONObject, Message
from think.models.base import Model
from think.runtime.agent import Agent
from think.sessions.session import MIGRATIONS as SESSION_MIGRATIONS
from think.sessions.session import Session
from think.stream.fanout import Fanout, TranscriptChanged
from think.tools.tool import Tool, as_tool_map
from think.turns.cancel import Cancellations
from think.turns.queue import TurnQueue
from think.turns.runner import new_request_id, run_turn
from think.turns.turn import TurnRequest, TurnResult

_IN_TURN: contextvars.ContextVar[bool] = contextvars.ContextVar("think_in_turn", default=False)
"""True inside a turn's task (and the tools and hooks it runs)."""

MessageLike = Message | str | JSONObject
"""What turn APIs accept: a `Message`, plain text (a user message), or a UIMessage as JSON."""


def to_message(value: MessageLike) -> Message:
    if isinstance(value, Message):
        return value
    if isinstance(value, str):
        return Message.user(value)
    if isinstance(value, dict):
        return Message.from_json(value)
    raise ProtocolError(f"expected a Message, a str or a UIMessage dict, got {type(value).__name__}")


class Think(Agent):
    """An opinionated chat agent. Subclass it and override `get_model()`."""

    max_steps: int = 10
    """Most model ⇄ tool rounds in one turn."""
    send_reasoning: bool = True
    """Stream the model's reasoning to clients."""
    max_persisted_messages: int | None = None
    """Keep at most this many messages of the conversation in storage (None: all)."""

    _framework_migrations: ClassVar[tuple[Any, ...]] = tuple(SESSION_MIGRATIONS)

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.session = Session(self.db, max_persisted_messages=self.max_persisted_messages)
        self.fanout = Fanout()
        self.model_history = ModelHistory()
        self.turn_queue = TurnQueue()
        self.cancellations = Cancellations()
        self._turns_running = 0

    # ---- override points -------------------------------------------------------------------------

    def get_model(self) -> Model | str:
        """The model for this agent: a `Model`, or an id such as `"openai:gpt-4.1-mini"`.

        The default picks, in order: `THINK_MODEL`, a provider key in the environment, a local
        Ollama server, the `local` extra, and finally the offline demo model.
        """
        from think.models.default import default_model

        return default_model()

    def get_system_prompt(self) -> str:
        return DEFAULT_SYSTEM_PROMPT

    def get_tools(self) -> Sequence[Tool] | Mapping[str, Tool] | None:
        """Tools for every turn: a list of `Tool`s (see `@tool`) or a mapping of name to tool."""
        return None

    # ---- hooks (do-nothing defaults) -------------------------------------------------------------

    async def before_turn(self, ctx: TurnContext) -> TurnConfig | None:
        return None

    async def before_step(self, ctx: StepContext) -> StepConfig | None:
        return None

    async def before_tool_call(self, ctx: ToolCallContext) -> ToolDecision | None:
        return None

    async def after_tool_call(self, ctx: ToolCallResultContext) -> None:
        return None

    async def on_step_finish(self, step: StepRecord) -> None:
        return None

    async def on_chunk(self, chunk: JSONObject) -> None:
        return None

    async def on_chat_response(self, result: TurnResult) -> None:
        """After a turn that streamed has ended and its reply is persisted."""
        return None

    async def on_chat_error(self, error: BaseException, *, request_id: str, stage: str,
                            messages_persisted: bool) -> BaseException | str | None:
        """A turn failed; return a replacement error (its text is what clients see)."""
        return error

    # ---- models and tools ------------------------------------------------------------------------

    def resolve_model(self, model: Model | str) -> Model:
        if isinstance(model, str):
            from think.models.registry import resolve_model

            return resolve_model(model)
        if isinstance(model, Model):
            return model
        raise ConfigurationError(f"get_model() returned {type(model).__name__}; return a Model or a model id string")

    def all_tools(self) -> dict[str, Tool]:
        """Every server tool of a turn, before `before_turn` adjusts them."""
        return as_tool_map(self.get_tools())

    # ---- configuration -------------------------------------------------------------------------

    def configure(self, config: Any) -> None:
        """Persist a JSON-serializable configuration object for this instance."""
        self.kv_set("_think_config", {"value": config})

    def get_config(self) -> Any:
        """The last `configure()` value, or None."""
        stored = self.kv_get("_think_config")
        return stored["value"] if stored else None

    # ---- messages --------------------------------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        """The live transcript (active branch). Do not modify; see `get_messages()`."""
        return self.session.history()

    def get_messages(self) -> list[Message]:
        """A copy of the transcript."""
        return [m.copy_deep() for m in self.session.history()]

    async def clear_messages(self) -> None:
        """Cancel every turn, make queued turns stale and delete the conversation."""
        self.turn_queue.reset()
        self.cancellations.cancel_all()
        self.session.clear()
        await self.fanout.publish(TranscriptChanged(()))

    # ---- turns -----------------------------------------------------------------------------------

    def is_busy(self) -> bool:
        return self._turns_running > 0 or self.turn_queue.busy

    async def run(self, turn: TurnRequest) -> TurnResult:
        """Admit a turn and wait for it to finish (the entry every turn path goes through)."""
        if _IN_TURN.get():
            raise TurnError("a blocking turn API cannot be called from inside an active turn "
                            "(it would wait for itself); submit the messages instead")
        self._turns_running += 1
        token = _IN_TURN.set(True)
        try:
            return await run_turn(self, turn)
        finally:
            _IN_TURN.reset(token)
            self._turns_running -= 1

    async def save_messages(
        self,
        messages: Sequence[MessageLike] | Callable[[list[Message]], Sequence[MessageLike]],
        *,
        request_id: str | None = None,
        body: JSONObject | None = None,
    ) -> TurnResult:
        """Save messages (usually a user message) and run a turn that answers them.

        A function instead of a list is called with the transcript when the turn reaches the front
        of the queue. Returns when the reply is persisted: `status` is `completed`, `error`,
        `aborted` (cancelled) or `skipped` (the chat was cleared while it waited).
        """
        if callable(messages):
            fn = messages

            def resolved(history: list[Message]) -> list[Message]:
                return [to_message(m) for m in fn(history)]

            payload: Any = resolved
        else:
            if isinstance(messages, str | Message | dict) or not isinstance(messages, Sequence):
                raise ProtocolError("save_messages takes a list of messages (or a function returning one); "
                                    f"got {type(messages).__name__}")
            payload = [to_message(m) for m in messages]
        return await self.run(TurnRequest(request_id=request_id or new_request_id(), messages=payload, body=body))

    async def continue_last_turn(self, body: JSONObject | None = None) -> TurnResult:
        """Run a continuation turn when the newest message is the assistant's; else `skipped`."""
        history = self.session.history()
        if not history or history[-1].role != "assistant":
            return TurnResult(request_id="", status="skipped", continuation=True)
        return await self.run(TurnRequest(request_id=new_request_id(), continuation=True, body=body))

    def cancel_chat(self, request_id: str) -> bool:
        """Stop a running turn (its partial reply is kept); True if it was running."""
        return self.cancellations.cancel(request_id)

    def cancel_all_chats(self) -> int:
        return self.cancellations.cancel_all()
