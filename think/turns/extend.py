"""A recovery continuation extends the reply a crash cut short: one answer, one message.

When recovery continues an interrupted reply (`TurnRequest.extend`), the continuation's chunks
stream into the stored partial, under the same message id: its open text and reasoning parts are
closed (`state: "done"`) and the new parts follow them. Clients see the continuation frames
with `continuation: true` and append them to the message they already show. When the turn is
stored, text that continues a cut-off text part is appended to that part (`joined`): the
transcript holds the whole answer as one assistant message that reads as one text.

The model is asked to go on from exactly where the partial stops: a model request that ends
with an assistant message gets an ephemeral user message (`CONTINUE_PROMPT`) appended, which is
never stored (many chat models refuse an assistant "prefill" at the end of a request).
"""

from __future__ import annotations

from collections.abc import Sequence

from think.messages import Message, Part, ReasoningPart, StepStartPart, TextPart
from think.models.base import CONTINUE_PROMPT, AssistantMessage, ModelMessage, TextContent, UserMessage

__all__ = ["CONTINUE_PROMPT", "closed", "extended_reply", "joined", "with_continue_prompt"]


def closed(message: Message) -> tuple[Message, bool]:
    """A copy of `message` whose text and reasoning parts are all `done`; True if one was open."""
    copy = message.copy_deep()
    changed = False
    for part in copy.parts:
        if isinstance(part, TextPart | ReasoningPart) and part.state == "streaming":
            part.state = "done"
            changed = True
    return copy, changed


def extended_reply(history: Sequence[Message]) -> Message | None:
    """The message a recovery continuation streams into: the newest message if it is the
    assistant's (closed), else None (the continuation then gets a message of its own)."""
    if not history or history[-1].role != "assistant":
        return None
    return closed(history[-1])[0]


def joined(message: Message) -> Message:
    """`message` with each text part that follows another text part (only step starts between:
    a continuation picking up where a cut-off text stopped) appended to that one, so the stored
    answer reads as the model wrote it. Other parts (tools, reasoning) keep their places."""
    copy = message.copy_deep()
    parts: list[Part] = []
    for part in copy.parts:
        if isinstance(part, TextPart):
            at = len(parts) - 1
            while at >= 0 and isinstance(parts[at], StepStartPart):
                at -= 1
            previous = parts[at] if at >= 0 else None
            if isinstance(previous, TextPart):
                previous.text += part.text
                previous.state = part.state
                del parts[at + 1:]  # the step starts between the two: one text, one step
                continue
        parts.append(part)
    if len(parts) == len(message.parts):
        return message
    copy.parts = parts
    return copy


def with_continue_prompt(messages: Sequence[ModelMessage]) -> list[ModelMessage]:
    """`messages`, with `CONTINUE_PROMPT` appended when they end with an assistant message (a
    list is returned as it is when nothing is appended: no copy of a long conversation)."""
    if messages and isinstance(messages[-1], AssistantMessage):
        return [*messages, UserMessage((TextContent(CONTINUE_PROMPT),))]
    return messages if isinstance(messages, list) else list(messages)
