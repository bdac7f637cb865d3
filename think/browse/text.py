"""Plain-text views of the agents browser for the terminal (`think agents`, `think show`)."""

from __future__ import annotations

import time
from typing import Any

from think.browse.reader import AgentSummary, InstanceSummary, Transcript, TranscriptMessage

NAME_WIDTH = 32
"""Names are padded to the longest up to this width (a longer one pushes its line)."""


def when(stamp: float | None) -> str:
    """A Unix time as local `YYYY-MM-DD HH:MM`, or `-`."""
    return "-" if stamp is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


def agents_text(agents: list[tuple[AgentSummary, list[InstanceSummary]]]) -> list[str]:
    """The agents with their instance counts, then each agent's instances."""
    if not agents:
        return ["no agents yet"]
    width = max(len(a.agent) for a, _ in agents)
    lines = [f"{a.agent.ljust(width)}  {_count(a.instances, 'instance')}  last {when(a.last_activity)}"
             for a, _ in agents]
    for agent, instances in agents:
        lines += ["", f"{agent.agent}:"]
        names = min(NAME_WIDTH, max(len(i.name) for i in instances)) if instances else 0
        for i in instances:
            if i.error is not None:
                lines.append(f"  {i.name.ljust(names)}  ({i.error})")
                continue
            title = f'"{i.title}"' if i.title else "(no messages)"
            lines.append(f"  {i.name.ljust(names)}  {when(i.last_activity)}  {_count(i.messages, 'message')}"
                         f"  {title}")
    return lines


def transcript_text(transcript: Transcript) -> list[str]:
    """The transcript, one block per message, with a marker where a message has other branches."""
    head = f"{transcript.agent}/{transcript.name}"
    if not transcript.active:
        head += "  (not the active branch)"
    if not transcript.messages:
        return [head, "(no messages)"]
    lines = [head]
    for message in transcript.messages:
        lines += ["", _label(message), *("  " + line for line in _body(message.message))]
    return lines


def _label(message: TranscriptMessage) -> str:
    label = f"{message.role}  {when(message.created_at)}  [{message.id}]"
    if len(message.branches) > 1:
        others = ", ".join(b for b in message.branches if b != message.id)
        label += f"  ⑂ branch {message.branch + 1}/{len(message.branches)} (others: {others})"
    return label


def _body(message: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for part in message.get("parts") or []:
        if not isinstance(part, dict):
            continue
        kind = str(part.get("type", ""))
        if kind == "text":
            lines += str(part.get("text", "")).splitlines() or [""]
        elif kind == "reasoning":
            lines += [f"(thinking) {line}" for line in str(part.get("text", "")).splitlines()]
        elif kind.startswith("tool-") or kind == "dynamic-tool":
            name = part.get("toolName") or kind.removeprefix("tool-")
            lines.append(f"[tool {name}: {part.get('state', '?')}] input={_short(part.get('input'))}"
                         + (f" output={_short(part.get('output'))}" if "output" in part else "")
                         + (f" error={part.get('errorText')}" if part.get("errorText") else ""))
        elif kind == "file":
            lines.append(f"[file {part.get('filename') or part.get('mediaType', '')}]")
    return lines or ["(empty)"]


def _short(value: Any, limit: int = 120) -> str:
    import orjson

    text = orjson.dumps(value).decode() if value is not None else "null"
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
