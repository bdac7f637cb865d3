"""Context-block changes announced as reminders after the cached prefix.

Rendering the system prompt again whenever a block changes makes every byte after the change
new to the provider: its prompt cache misses for the whole conversation. A block added with
`when_changed="remind"` leaves the frozen prompt alone. Before each turn that starts from a user
message, the content of each such block is compared with what the model last saw of it: the
newest reminder for it in the model's view of the active path (a reminder that was compacted
away or slid out of the loaded window no longer counts), or else the block as the frozen prompt
renders it.
When they differ, a `data-context-update` part (`{"label", "content"}`) is added to that user
message and stored with it. The model reads it as text after the user's words (`reminder_text`);
everything before it stays byte-identical, and, being stored, it stays in the same place on
every later turn, after a restart and on the branches that keep that message. Clients receive it
as an ordinary data part (the web UI does not show it).

What it trusts: the block providers (the application's), as for the system prompt itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from think.context.blocks import ContextBlock, render_block
from think.messages import DataPart, Message

if TYPE_CHECKING:
    from think.sessions.session import Session

REMINDER_PART = "data-context-update"


def reminder_text(label: str, content: str) -> str:
    """How the model reads a reminder."""
    body = content if content.strip() else "(empty)"
    return (f"[Context update: the {label.upper()} block changed since the system prompt was written; "
            f"it now reads:]\n{body}")


def _latest(history: Sequence[Message], roles: Sequence[str], labels: set[str]) -> dict[str, str]:
    """The newest reminded content of each label on the path (labels never reminded are absent)."""
    seen: dict[str, str] = {}
    for index in range(len(history) - 1, -1, -1):
        if roles[index] != "user":
            continue
        for part in reversed(history[index].parts):
            if isinstance(part, DataPart) and part.type == REMINDER_PART and isinstance(part.data, dict):
                label, content = part.data.get("label"), part.data.get("content")
                if isinstance(label, str) and label in labels and label not in seen and isinstance(content, str):
                    seen[label] = content
        if len(seen) == len(labels):
            break
    return seen


def _known(block: ContextBlock, seen: dict[str, str], prompt: str) -> bool:
    if block.label in seen:
        return seen[block.label] == block.content
    if block.kind == "readonly" and not block.content.strip():
        return True  # an empty read-only block is left out of the prompt, and still is
    return render_block(block) in prompt


async def announce_changes(session: Session) -> bool:
    """Add reminders for the changed `remind` blocks to the newest message, if it is the user's.

    True if it added any (the message is stored again with them)."""
    labels = session.context.reminding()
    if not labels:
        return False
    history, roles = session.history(), session.history_roles()
    if not history or roles[-1] != "user":
        return False  # a continuation: the next user message carries the news
    prompt = await session.system_prompt()
    view = session.model_view()  # a reminder compacted away or out of the window is not seen
    seen = _latest(view, [m.role for m in view], set(labels))
    updates: list[DataPart] = []
    for label in labels:
        block = await session.context.get(label)
        if not _known(block, seen, prompt):
            updates.append(DataPart(type=REMINDER_PART, data={"label": label, "content": block.content}))
    if not updates:
        return False
    message = history[-1].copy_deep()
    message.parts.extend(updates)
    session.save([message])
    return True
