"""`DemoModel`: the offline demo model used when no real model is configured.

It is not an LLM. It reads the conversation, recognises a few requests and plays them out with
the demo tools (`think.models.demo_tools`), so the whole path of a turn (reasoning, streamed
text, tool calls, approvals) can be seen without an API key or a network:

* arithmetic ("what is 12*(3+4)?") calls `calculate`, then states the result;
* the time or date ("what time is it in Tokyo?") calls `get_time`, then reports it;
* "send", "email", "notify" or "delete" calls `send_notification`, which needs approval, then
  confirms it or acknowledges the denial;
* anything else gets a reply that says this is the demo and how to plug in a real model.

Replies are deterministic: the same conversation always gets the same reply. The model never
raises; whatever the request, the stream ends with a `Finish`.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import zoneinfo
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import orjson

from think.models.base import (
    ModelMessage,
    ModelRequest,
    ToolCallContent,
    ToolMessage,
    ToolResultContent,
)
from think.models.events import (
    Finish,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStart,
    Usage,
)

log = logging.getLogger("think.models.demo")

MAX_READ_CHARS = 2_000
"""The demo reads only this much of a message, so a huge paste cannot make it slow."""
DEMO_FOOTER = "_(Offline demo model: scripted, not a real LLM.)_"

HOW_TO_CONNECT = """\
To plug in a real model, do one of these and restart:

- set `THINK_MODEL`, e.g. `openai:gpt-4.1-mini`, `anthropic:claude-sonnet-4-5` or `ollama:qwen3`;
- or set an API key: `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` or `GEMINI_API_KEY`;
- or run Ollama locally (https://ollama.com) with a model pulled;
- or override `get_model()` in your agent class."""

_TRIES = {
    "calculate": '"what is 12*(3+4)?"',
    "get_time": '"what time is it?"',
    "send_notification": '"send a notification to the team"',
}
_ACTION = re.compile(r"\b(?:send|e-?mail|notify|notification|delete)\b", re.IGNORECASE)
_TIME = re.compile(r"\b(?:time|clock|date|what day)\b", re.IGNORECASE)
_MATH_RUN = re.compile(r"[-+(]*\d[\d\s.+\-*/%^×÷−()]*")
_MATH_OPERATION = re.compile(r"[\d.)]\s*(?:\*\*|//|[-+*/%^×÷−])\s*[-+(−]*\s*[\d.(]")
_PLACE = re.compile(r"\bin\s+([A-Za-z][\w/+\-' ]{0,40})", re.IGNORECASE)
_RECIPIENT = re.compile(
    r"\b(?:to|notify|e-?mail)\s+(?!a\b|an\b|to\b)(.+?)(?=\s+(?:saying|that|about|with|and)\b|[:,.!?;\"]|$)",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"[\"“]([^\"”]{1,200})[\"”]")
_SAYING = re.compile(r"\b(?:saying|that)\s+(.{1,200}?)[.!?]*$|:\s*(.{1,200}?)[.!?]*$", re.IGNORECASE)


@dataclass(frozen=True)
class _Call:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class _Reply:
    reasoning: str
    text: str = ""
    call: _Call | None = None


class DemoModel:
    """The offline demo model (`model_id` "demo"). See the module docstring.

    `delay` is the pause before each streamed piece, in seconds, so streaming is visible in a UI;
    0 streams without pausing (for tests).
    """

    def __init__(self, *, delay: float = 0.015) -> None:
        self.delay = delay

    @property
    def model_id(self) -> str:
        return "demo"

    def __repr__(self) -> str:
        return f"DemoModel(delay={self.delay!r})"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        try:
            reply = _reply(request)
        except Exception:  # the demo must never break a turn, whatever the transcript holds
            log.exception("the demo model could not plan a reply; falling back to the introduction")
            reply = _introduction("", request)
        for piece in _pieces(reply.reasoning, words=4):
            await self._pause()
            yield ReasoningDelta(piece)
        for piece in _pieces(reply.text, words=1):
            await self._pause()
            yield TextDelta(piece)
        if reply.call is not None:
            call_id = _call_id(request)
            raw = orjson.dumps(reply.call.arguments).decode()
            await self._pause()
            yield ToolCallStart(call_id, reply.call.name)
            third = max(1, len(raw) // 3)
            for start in range(0, len(raw), third):
                await self._pause()
                yield ToolCallDelta(call_id, raw[start : start + third])
            yield ToolCallReady(call_id, reply.call.name, raw)
        usage = Usage(input_tokens=_estimate_tokens(request),
                      output_tokens=_tokens(reply.reasoning + reply.text))
        yield Finish("tool-calls" if reply.call is not None else "stop", usage=usage)

    async def _pause(self) -> None:
        if self.delay:
            await anyio.sleep(self.delay)


# ---- deciding the reply (pure functions of the request) ------------------------------------------


def _reply(request: ModelRequest) -> _Reply:
    last = request.messages[-1] if request.messages else None
    if isinstance(last, ToolMessage):
        return _after_tools(last.results, request.messages)
    text = request.last_user_text.strip()[:MAX_READ_CHARS]
    tools = {spec.name for spec in request.tools}
    if _ACTION.search(text) and "send_notification" in tools:
        arguments = {"to": _recipient(text), "message": _notification_text(text)}
        return _Reply(
            "Demo reasoning (scripted): the user wants something sent or done. The send_notification "
            "tool needs a person's approval before it runs, so I'll call it and let them decide.",
            "I'll send that with the `send_notification` tool; it needs your approval first.",
            call=_Call("send_notification", arguments),
        )
    if (expression := _expression(text)) and "calculate" in tools:
        return _Reply(
            f"Demo reasoning (scripted): the message contains the arithmetic {expression}. Rather than "
            "guess, I'll ask the calculate tool.",
            "Let me work that out with the `calculate` tool.",
            call=_Call("calculate", {"expression": expression}),
        )
    if _TIME.search(text) and "get_time" in tools:
        zone = _time_zone(text)
        return _Reply(
            f"Demo reasoning (scripted): the user asks for the time or date. I can't know it myself, "
            f"so I'll call get_time for {zone}.",
            "Let me check the clock with the `get_time` tool.",
            call=_Call("get_time", {"timezone": zone}),
        )
    return _introduction(text, request)


def _after_tools(results: Sequence[ToolResultContent], messages: Sequence[ModelMessage]) -> _Reply:
    arguments = _call_arguments(messages)
    sentences = [_after_tool(r, arguments.get(r.call_id, {})) for r in results]
    names = ", ".join(sorted({r.name for r in results})) or "the tool"
    return _Reply(
        f"Demo reasoning (scripted): {names} answered, so I can reply without calling anything else.",
        "\n\n".join([*sentences, DEMO_FOOTER]),
    )


def _after_tool(result: ToolResultContent, arguments: dict[str, Any]) -> str:
    output = result.output
    if result.name == "send_notification":
        if result.is_error and "denied" in str(output).lower():
            return "Understood: the notification was denied, so nothing was sent."
        if result.is_error:
            return f"The notification could not be sent: {output}"
        to = output.get("to") if isinstance(output, dict) else arguments.get("to")
        return (f"Done: the notification to {to} was approved and recorded "
                "(the demo tool records it; nothing is delivered).")
    if result.is_error:
        return f"The {result.name} tool failed: {output}"
    if result.name == "calculate":
        return f"{arguments.get('expression', 'The result')} = {output}."
    if result.name == "get_time" and isinstance(output, dict):
        return f"It is {output.get('readable', output.get('iso'))} in {output.get('timezone', 'UTC')}."
    shown = output if isinstance(output, str) else orjson.dumps(output, default=str).decode()
    return f"The {result.name} tool returned: {shown[:500]}"


def _introduction(text: str, request: ModelRequest) -> _Reply:
    tools = {spec.name for spec in request.tools}
    said = " ".join(text.split())
    echo = f'You said: "{said[:200]}{"…" if len(said) > 200 else ""}"' if said else "I got your message."
    tries = [phrase for name, phrase in _TRIES.items() if name in tools]
    if tries:
        demo = f"Meanwhile I can demo tool calls. Try {_or(tries)}."
    else:
        demo = ("I can also demo tool calls: return `DEMO_TOOLS` from `think.models.demo_tools` in "
                "your agent's `get_tools()`.")
    return _Reply(
        "Demo reasoning (scripted): no arithmetic, time or notification request I can demo here, so "
        "I'll say what I am and how to connect a real model.",
        "\n\n".join([
            echo,
            "I'm the **offline demo model** that ships with Think, not a real LLM: my replies are "
            "scripted, so I can't really understand or answer you.",
            HOW_TO_CONNECT,
            demo,
        ]),
    )


# ---- reading the conversation --------------------------------------------------------------------


def _call_arguments(messages: Sequence[ModelMessage]) -> dict[str, dict[str, Any]]:
    return {
        content.id: content.arguments
        for message in messages
        if message.role == "assistant"
        for content in message.content
        if isinstance(content, ToolCallContent)
    }


def _call_id(request: ModelRequest) -> str:
    """Deterministic, and distinct from the conversation's earlier calls."""
    earlier = len(_call_arguments(request.messages))
    digest = hashlib.sha256(request.last_user_text.strip().encode()).hexdigest()[:8]
    return f"call_demo_{earlier}_{digest}"


def _expression(text: str) -> str | None:
    """The longest run of the text that reads as arithmetic, such as "12*(3+4)"."""
    found: list[str] = []
    for match in _MATH_RUN.finditer(text):
        candidate = match.group().strip().rstrip("+-*/%^×÷−( ").strip()
        while candidate.startswith("(") and candidate.count("(") > candidate.count(")"):
            candidate = candidate[1:].strip()
        while candidate.endswith(")") and candidate.count(")") > candidate.count("("):
            candidate = candidate[:-1].strip()
        if _MATH_OPERATION.search(candidate):
            found.append(candidate)
    return max(found, key=len) if found else None


@functools.cache
def _zones_by_place() -> dict[str, str]:
    """"tokyo" → "Asia/Tokyo", "new york" → "America/New_York" (the shortest name wins)."""
    try:
        names = sorted(zoneinfo.available_timezones(), key=lambda n: (len(n), n))
    except Exception:  # no time zone database on this machine
        return {}
    places: dict[str, str] = {}
    for name in names:
        places.setdefault(name.rsplit("/", 1)[-1].replace("_", " ").lower(), name)
        places.setdefault(name.lower(), name)
    return places


def _time_zone(text: str) -> str:
    match = _PLACE.search(text)
    if match is None:
        return "UTC"
    words = match.group(1).strip().split()
    places = _zones_by_place()
    for end in range(len(words), 0, -1):
        phrase = " ".join(words[:end])
        if phrase.upper() in ("UTC", "GMT"):
            return "UTC"
        if zone := places.get(phrase.lower()):
            return zone
    # "in Mars/Olympus" looks like a zone name: let the tool say whether it is one.
    return words[0] if words and "/" in words[0] else "UTC"


def _recipient(text: str) -> str:
    if email := re.search(r"[\w.+-]+@[\w-]+\.[\w.-]+", text):
        return email.group()
    match = _RECIPIENT.search(text)
    return match.group(1).strip() if match else "the team"


def _notification_text(text: str) -> str:
    if quoted := _QUOTED.search(text):
        return quoted.group(1).strip()
    if saying := _SAYING.search(text):
        return (saying.group(1) or saying.group(2)).strip()
    return f"Requested in the Think demo: {' '.join(text.split())[:200]}"


# ---- streaming helpers ---------------------------------------------------------------------------


def _pieces(text: str, *, words: int) -> list[str]:
    """`text` in pieces of about `words` words, keeping every character (spaces, newlines)."""
    tokens = re.findall(r"\s*\S+\s*", text) or ([text] if text else [])
    return ["".join(tokens[i : i + words]) for i in range(0, len(tokens), words)]


def _or(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4  # a rough estimate: about four characters a token


def _estimate_tokens(request: ModelRequest) -> int:
    size = len(request.system)
    for message in request.messages:
        size += len(orjson.dumps(message, default=str))
    return (size + 3) // 4
