"""Structured output for one turn (`TurnConfig.output`): the answer comes through a tool.

    class Verdict(BaseModel):
        label: Literal["spam", "ham"]
        confidence: float

    async def before_turn(self, ctx):
        return TurnConfig(output=Verdict)
    ...
    result = await agent.save_messages(["Is this spam? …"])
    result.output  # Verdict(label="spam", confidence=0.93)

The turn gets one more tool, `final_answer`, whose input schema is the output's JSON Schema, and
one more sentence in the system prompt asking the model to finish by calling it. The turn ends
after the step in which it is called with a valid answer, which is the turn's `output`. A call
with invalid arguments is a tool input error the model sees and can correct in its next step. Tool calls
work as usual before the answer, with every model adapter (no provider JSON mode is needed).
The `final_answer` call stays in the transcript like any other tool call.

`output` is a pydantic model class (or any type pydantic can validate, such as `list[int]` or a
dataclass), or a JSON Schema dict (the answer is then the parsed JSON, not validated further).
A schema that does not describe an object is wrapped as `{"answer": …}` for the tool call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from think.errors import ConfigurationError
from think.hooks import StepRecord, StopCondition, TurnConfig
from think.messages import JSONObject
from think.tools.tool import InvalidToolInput, Tool, ToolContext

FINAL_ANSWER = "final_answer"
INSTRUCTION = (f"When you have the final answer, call the `{FINAL_ANSWER}` tool with it: its arguments are "
               "your answer. Finish every reply that way, never with plain text alone.")


@dataclass(frozen=True)
class OutputSpec:
    """A turn's structured output: the tool's schema, and how to read the answer back."""

    schema: JSONObject
    adapter: TypeAdapter[Any] | None
    wrapped: bool
    """The schema is not an object's: the tool takes `{"answer": <value>}`."""

    @classmethod
    def of(cls, output: Any) -> OutputSpec:
        if isinstance(output, dict):
            schema, adapter = dict(output), None
        else:
            try:
                adapter = TypeAdapter(output)
                schema = adapter.json_schema()
            except Exception as exc:
                raise ConfigurationError(f"TurnConfig.output must be a pydantic model, a type pydantic can "
                                         f"validate or a JSON Schema dict; {output!r}: {exc}") from exc
        wrapped = schema.get("type") != "object"
        if wrapped:
            schema = {"type": "object", "properties": {"answer": schema}, "required": ["answer"]}
        return cls(schema, adapter, wrapped)

    def _parse(self, arguments: JSONObject) -> Any:
        value = arguments.get("answer") if self.wrapped else arguments
        return self.adapter.validate_python(value) if self.adapter is not None else value

    def tool(self) -> Tool:
        def validate(arguments: JSONObject) -> JSONObject:
            try:
                self._parse(arguments)
            except ValidationError as exc:
                raise InvalidToolInput(f"The answer does not match the required schema: {exc}") from exc
            return arguments

        def execute(arguments: JSONObject, ctx: ToolContext) -> JSONObject:
            return arguments

        return Tool(name=FINAL_ANSWER, description="Give your final answer, in the required structure.",
                    input_schema=self.schema, execute=execute, validate_input=validate)

    def answer(self, steps: Sequence[StepRecord]) -> Any:
        """The answer of the newest successful `final_answer` call, parsed; None if there was none."""
        for step in reversed(steps):
            for result in reversed(step.tool_results):
                if result.name == FINAL_ANSWER and not result.is_error and isinstance(result.output, dict):
                    return self._parse(result.output)
        return None


def _answered(steps: Sequence[StepRecord]) -> bool:
    """The last step gave a valid final answer (an invalid one is an error the model corrects)."""
    return bool(steps) and any(r.name == FINAL_ANSWER and not r.is_error for r in steps[-1].tool_results)


DEFAULT_MAX_RETRIES = 2
"""Retries of a model call that failed before any content (the AI SDK's default)."""


@dataclass(frozen=True)
class TurnExtras:
    """What a `TurnConfig` adds to the loop: stop conditions, model-call retries, structured output."""

    stop_when: tuple[StopCondition, ...] = ()
    max_retries: int = DEFAULT_MAX_RETRIES
    output: OutputSpec | None = None
    stall_timeout: float | None = None
    """This turn's stream-stall watchdog in seconds (None: the agent's `chat_stream_stall_timeout`; 0: off)."""

    @classmethod
    def of(cls, config: TurnConfig | None) -> TurnExtras:
        if config is None:
            return cls()
        stop = config.stop_when
        conditions: tuple[StopCondition, ...] = () if stop is None else (stop,) if callable(stop) else tuple(stop)
        output = OutputSpec.of(config.output) if config.output is not None else None
        if output is not None:
            conditions = (*conditions, _answered)
        retries = DEFAULT_MAX_RETRIES if config.max_retries is None else max(0, config.max_retries)
        return cls(conditions, retries, output, config.stream_stall_timeout)

    def apply(self, tools: dict[str, Tool], system: str) -> str:
        """Add the `final_answer` tool (when there is an output) to `tools`; the system prompt to use."""
        if self.output is None:
            return system
        tools[FINAL_ANSWER] = self.output.tool()
        return f"{system}\n\n{INSTRUCTION}" if system else INSTRUCTION
