"""Small helpers the tests share (not fixtures: plain functions)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from think.loop import LoopResult, run_loop
from think.messages import JSONObject, Message
from think.models.base import Model, ModelRequest, TextContent, ToolSpec, UserMessage
from think.stream.fold import Fold
from think.tools.tool import Tool, as_tool_map


def request_for(prompt: str, tools: Mapping[str, Tool]) -> ModelRequest:
    return ModelRequest(system="test", messages=(UserMessage((TextContent(prompt),)),),
                        tools=tuple(ToolSpec(t.name, t.description, t.input_schema) for t in tools.values()))


async def run(model: Model, tools: Sequence[Tool] = (), *, prompt: str = "hi", max_steps: int = 10,
              message_id: str = "reply") -> tuple[list[JSONObject], Message, LoopResult]:
    """Run the real loop; return the chunks, the folded reply and the loop result."""
    tool_map = as_tool_map(list(tools))
    chunks: list[JSONObject] = []
    message = Message(id=message_id, role="assistant")
    fold = Fold(message)

    async def emit(chunk: JSONObject) -> None:
        chunks.append(chunk)
        fold.apply(chunk)

    result = await run_loop(model, request_for(prompt, tool_map), tool_map, emit=emit,
                            max_steps=max_steps, message_id=message_id)
    return chunks, message, result


def types(chunks: Sequence[JSONObject]) -> list[str]:
    return [str(c["type"]) for c in chunks]
