"""What `think chat` prints: labelled blocks, a streamed answer rendered as markdown, tool calls.

Two looks. On a terminal (`--rich`, the default there) an answer is rendered as markdown while it
streams — headings, lists, emphasis, code blocks, tables — and everything is wrapped at word
boundaries to the terminal's width: the finished blocks of an answer (up to its last blank line
outside a code fence) are printed once, for good, and the block still being written is shown in
a transient live view that is redrawn as deltas arrive. Plain text (`--plain`, or stdout is not a
terminal) keeps one labelled line per block (`you:`, `assistant:`, `thinking:`, `tool:`,
`error:`), the model's text verbatim, so a script can read it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from rich.console import Console, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment, Segments
from rich.text import Text

from think.messages import JSONObject, Message, ReasoningPart, TextPart, ToolPart

Kind = Literal["you", "assistant", "thinking", "tool", "result", "progress", "error", "notice"]
REDRAW_INTERVAL = 0.05
"""Seconds between redraws of the block being streamed (deltas in between are drawn together)."""


@dataclass(frozen=True)
class _Look:
    label: str
    label_style: str
    body_style: str


_RICH: dict[Kind, _Look] = {
    "you": _Look("you ", "bold blue", ""),
    "assistant": _Look("assistant", "bold green", ""),
    "thinking": _Look("thinking", "dim", "dim italic"),
    "tool": _Look("⚙ ", "bold cyan", "cyan"),
    "result": _Look("  → ", "green", "green"),
    "progress": _Look("  ⋯ ", "dim", "dim"),
    "error": _Look("✗ ", "bold red", "red"),
    "notice": _Look("", "", "yellow"),
}
_PLAIN: dict[Kind, _Look] = {
    "you": _Look("you: ", "", ""),
    "assistant": _Look("assistant: ", "", ""),
    "thinking": _Look("thinking: ", "", ""),
    "tool": _Look("tool: ", "", ""),
    "result": _Look("  -> ", "", ""),
    "progress": _Look("  .. ", "", ""),
    "error": _Look("error: ", "", ""),
    "notice": _Look("-- ", "", ""),
}
_RENDERED: tuple[Kind, ...] = ("assistant", "thinking")
"""Kinds whose body a rich printer renders below the label (markdown for answers)."""


def compact(value: Any) -> str:
    """A value on one line: a string as is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def block_ends(text: str) -> list[int]:
    """Where the finished blocks of streamed markdown end: just after each blank line that is not
    inside a fenced code block (the text after the last one is still being written)."""
    ends: list[int] = []
    fence: str | None = None
    position = 0
    for line in text.splitlines(keepends=True):
        position += len(line)
        if not line.endswith("\n"):
            break  # the line being written
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence) and stripped.strip(fence[0]) == "":
                fence = None
            continue
        if stripped.startswith(("```", "~~~")):
            marker = stripped[0]
            fence = marker * (len(stripped) - len(stripped.lstrip(marker)))
        elif not stripped:
            ends.append(position)
    return ends


def finished_prefix(text: str) -> int:
    """The length of the finished blocks at the start of `text` (0 when none is finished)."""
    ends = block_ends(text)
    return ends[-1] if ends else 0


def _blank(line: list[Segment]) -> bool:
    """A rendered line with no text and no background (a code block's shaded margin is kept)."""
    return all(not segment.text.strip() and not (segment.style and segment.style.bgcolor) for segment in line)


class BlockStream:
    """One streamed body: finished blocks printed for good, the open one in a transient live view
    (only on a terminal; elsewhere it is printed when it is finished)."""

    def __init__(self, console: Console, render: Callable[[str], RenderableType]) -> None:
        self.console = console
        self.render = render
        self.pending = ""
        self._printed = False
        self._live: Live | None = None
        self._drawn_at = 0.0

    def feed(self, delta: str) -> None:
        self.pending += delta
        ends = block_ends(self.pending)
        if ends:
            self._stop_live()
            start = 0
            for end in ends:  # one render per block, however many deltas it came in
                self._print(self.pending[start:end])
                start = end
            self.pending = self.pending[start:]
        if not self.pending.strip() or not self.console.is_terminal:
            return
        now = time.monotonic()
        if self._live is None:
            self._live = Live(console=self.console, transient=True, auto_refresh=False,
                              vertical_overflow="ellipsis")
            self._live.start()
        elif now - self._drawn_at < REDRAW_INTERVAL:
            return
        self._drawn_at = now
        self._live.update(self.render(self.pending), refresh=True)

    def finish(self) -> None:
        self._stop_live()
        self._print(self.pending)
        self.pending = ""

    def _print(self, text: str) -> None:
        if not text.strip():
            return
        lines = self.console.render_lines(self.render(text.strip("\n")), pad=False, new_lines=True)
        while lines and _blank(lines[0]):  # a block's own leading and trailing blank lines: this
            lines.pop(0)  # stream puts exactly one between blocks
        while lines and _blank(lines[-1]):
            lines.pop()
        if self._printed:
            self.console.print()
        self.console.print(Segments(segment for line in lines for segment in line), soft_wrap=True, end="")
        self.console.file.flush()
        self._printed = True

    def _stop_live(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None


class Printer:
    """Writes labelled blocks; `open_block` + `write` stream one, `line` prints a whole one."""

    def __init__(self, console: Console, *, plain: bool) -> None:
        self.console = console
        self.plain = plain
        self._looks = _PLAIN if plain else _RICH
        self._open: Kind | None = None
        self._body: BlockStream | None = None

    @property
    def open_kind(self) -> Kind | None:
        """The block being streamed, if one is open."""
        return self._open

    def _emit(self, text: Text, *, end: str = "") -> None:
        # Plain output keeps long lines whole; rich output wraps at word boundaries.
        self.console.print(text, end=end, soft_wrap=self.plain, highlight=False)
        self.console.file.flush()

    def _render(self, kind: Kind) -> Callable[[str], RenderableType]:
        if kind == "assistant":
            return lambda text: Markdown(text)
        style = self._looks[kind].body_style
        return lambda text: Text(text, style=style)

    def open_block(self, kind: Kind) -> None:
        self.close_block()
        look = self._looks[kind]
        if not self.plain and kind in _RENDERED:
            self._emit(Text(look.label, style=look.label_style), end="\n")
            self._body = BlockStream(self.console, self._render(kind))
        else:
            self.console.print(Text(look.label, style=look.label_style), end="", soft_wrap=True)
        self._open = kind

    def write(self, text: str) -> None:
        if self._open is None:
            self.open_block("assistant")
        assert self._open is not None
        if self._body is not None:
            self._body.feed(text)
        else:
            self.console.print(Text(text, style=self._looks[self._open].body_style), end="", soft_wrap=True,
                               highlight=False)
            self.console.file.flush()

    def close_block(self) -> None:
        if self._body is not None:
            self._body.finish()
            self._body = None
            self._open = None
        elif self._open is not None:
            self._emit(Text(""), end="\n")
            self._open = None

    def line(self, kind: Kind, text: str) -> None:
        self.close_block()
        look = self._looks[kind]
        if not self.plain and kind in _RENDERED:
            self._emit(Text(look.label, style=look.label_style), end="\n")
            body = BlockStream(self.console, self._render(kind))
            body.feed(text)
            body.finish()
            return
        self._emit(Text.assemble((look.label, look.label_style), (text, look.body_style)), end="\n")

    def tool_call(self, name: str, input: Any) -> None:
        self.line("tool", f"{name} {compact(input)}" if input is not None else name)

    def tool_part(self, part: ToolPart, *, with_call: bool = True) -> None:
        if with_call:
            self.tool_call(part.name, part.input)
        match part.state:
            case "output-available":
                self.line("result", compact(part.output))
            case "output-error":
                self.line("error", f"{part.name} failed: {part.error_text or 'no details'}")
            case "output-denied":
                self.line("notice", f"{part.name} was not approved")
            case "approval-requested":
                self.line("notice", f"{part.name} is waiting for approval")
            case "approval-responded":
                self.line("notice", f"{part.name} was approved")
            case "input-available":
                self.line("notice", f"{part.name} is waiting for its output from a client")

    def message(self, message: Message) -> None:
        """A whole message, as the history shows it."""
        if message.role == "user":
            self.line("you", message.text)
            return
        for part in message.parts:
            if isinstance(part, TextPart) and part.text:
                self.line("assistant", part.text)
            elif isinstance(part, ReasoningPart) and part.text:
                self.line("thinking", part.text)
            elif isinstance(part, ToolPart):
                self.tool_part(part)


@dataclass
class StreamView:
    """Prints one turn's chunks as they arrive; `mute()` (a stop was asked for) prints no more."""

    printer: Printer
    shown_outputs: set[str] = field(default_factory=set)
    """Tool calls whose outcome was printed (so a replayed output is not printed twice)."""
    names: dict[str, str] = field(default_factory=dict)
    muted: bool = False
    progress: dict[str, tuple[float, str]] = field(default_factory=dict)
    """Per tool call: the fraction and text last printed (a line only when either moves on)."""

    def mute(self) -> None:
        self.muted = True

    def apply(self, chunk: JSONObject) -> None:
        if self.muted:
            return
        p = self.printer
        kind = chunk.get("type")
        call_id = str(chunk.get("toolCallId", ""))
        match kind:
            case "text-start":
                p.open_block("assistant")
            case "text-delta":
                if p.open_kind != "assistant":
                    p.open_block("assistant")
                p.write(str(chunk.get("delta", "")))
            case "reasoning-start":
                p.open_block("thinking")
            case "reasoning-delta":
                if p.open_kind != "thinking":
                    p.open_block("thinking")
                p.write(str(chunk.get("delta", "")))
            case "text-end" | "reasoning-end":
                p.close_block()
            case "tool-input-start":
                self.names[call_id] = str(chunk.get("toolName", ""))
            case "tool-input-available":
                name = str(chunk.get("toolName") or self.names.get(call_id, ""))
                self.names[call_id] = name
                p.tool_call(name, chunk.get("input"))
            case "tool-input-error":
                p.line("error", f"{chunk.get('toolName', '')}: bad input: {chunk.get('errorText', '')}")
            case "tool-output-available" | "tool-output-error" | "tool-output-denied":
                if call_id in self.shown_outputs:  # already shown (a replay, or reported before)
                    return
                self.shown_outputs.add(call_id)
                name = self.names.get(call_id, "tool")
                if kind == "tool-output-available":
                    p.line("result", compact(chunk.get("output")))
                elif kind == "tool-output-error":
                    p.line("error", f"{name} failed: {chunk.get('errorText', '')}")
                else:
                    p.line("notice", f"{name} was not approved")
            case "data-agent-progress" | "data-agent-milestone":
                self._progress(kind, chunk.get("data"))
            case "tool-approval-request":
                p.line("notice", f"{self.names.get(call_id, 'tool')} needs your approval")
            case "error":
                p.line("error", str(chunk.get("errorText", "")))
            case _:
                pass

    def _progress(self, kind: str, data: Any) -> None:
        """`report_progress` from a tool: a line under its call when the text changes or the
        fraction moves on by a tenth (or reaches the end); every milestone."""
        if not isinstance(data, dict):
            return
        key = str(data.get("toolCallId", ""))
        if kind == "data-agent-milestone":
            self.printer.line("progress", f"milestone: {data.get('name', '')}")
            return
        fraction = data.get("fraction")
        share = float(fraction) if isinstance(fraction, int | float) else -1.0
        text = str(data.get("message") or data.get("phase") or "")
        last_share, last_text = self.progress.get(key, (-1.0, ""))
        if text == last_text and share < 1 and share - last_share < 0.1:
            return
        self.progress[key] = (share, text)
        shown = f"{round(min(max(share, 0.0), 1.0) * 100)}%" if share >= 0 else ""
        self.printer.line("progress", " · ".join(x for x in (shown, text) if x))

    def close(self) -> None:
        self.printer.close_block()
