"""A recovery continuation extends the reply a crash cut short: one answer, one message.

When recovery continues an interrupted reply (`TurnRequest.extend`), the continuation's chunks
stream into the stored partial: its open text and reasoning parts are closed (`state: "done"`)
and the new parts are appended to it, under the same message id. Clients see the continuation
frames with `continuation: true` and append them to the message they already show, and the
stored transcript holds the whole answer as one assistant message.

The model is asked to go on from exactly where the partial stops: a model request that ends
with an assistant message gets an ephemeral user message (`CONTINUE_PROMPT`) appended, which is
never stored (many chat models refuse an assistant "prefill" at the end of a request).
"""

from __future__ import annotations

from collections.abc import Sequence

from think.messages import Message, ReasoningPart, TextPart
from think.models.base import CONTINUE_PROMPT, AssistantMessage, ModelMessage, TextContent, UserMessage

__all__ = ["CONTINUE_PROMPT", "closed", "extended_reply", "with_continue_prompt"]


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


def with_continue_prompt(messages: Sequence[ModelMessage]) -> list[ModelMessage]:
    """`messages`, with `CONTINUE_PROMPT` appended when they end with an assistant message."""
    out = list(messages)
    if out and isinstance(out[-1], AssistantMessage):
        out.append(UserMessage((TextContent(CONTINUE_PROMPT),)))
    return out
