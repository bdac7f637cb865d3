"""`think chat`'s printer: where a streamed answer's finished blocks end, and a streamed answer
printed through a terminal console ends up exactly as the whole answer rendered at once."""

from __future__ import annotations

import io
import re

from rich.console import Console

from think.client.printer import Printer, StreamView, finished_prefix

ANSWER = ("Intro with **bold**.\n\n1. one\n2. two\n\n```\ncode\n\nmore code\n```\n\n"
          "| a | b |\n|---|---|\n| 1 | 2 |\n\nThe end.")


def test_finished_blocks_end_at_a_blank_line_outside_code_fences() -> None:
    assert finished_prefix("no block ends yet") == 0
    assert finished_prefix("a paragraph\n\nthe next one is being wr") == len("a paragraph\n\n")
    inside = "text\n\n```\ncode\n\nstill code"
    assert finished_prefix(inside) == len("text\n\n")  # the blank line in the fence does not count
    closed = inside + "\n```\n\nafter"
    assert finished_prefix(closed) == len(inside + "\n```\n\n")
    assert finished_prefix("~~~~\n```\n\n~~~~\n\nx") == len("~~~~\n```\n\n~~~~\n\n")  # longer fence, other marker


def _terminal(width: int) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=width, force_terminal=True, color_system=None, highlight=False), out


def _visible(raw: str) -> list[str]:
    """What a terminal shows at the end: a transient live view erases its lines (cursor up, erase
    line) before the final text is printed, so replay those controls."""
    screen: list[str] = [""]
    for token in re.split(r"(\x1b\[[0-9;?]*[A-Za-z]|\r|\n)", raw):
        if token == "\n":
            screen.append("")
        elif token == "\r":
            screen[-1] = ""
        elif token.startswith("\x1b["):
            if token.endswith("A"):  # cursor up N
                for _ in range(int(token[2:-1] or 1)):
                    screen.pop()
            elif token.endswith("K") or token.endswith("J"):
                screen[-1] = ""
        else:
            screen[-1] += token
    return [line.rstrip() for line in screen]


def test_a_streamed_answer_ends_as_the_whole_answer_rendered_at_once() -> None:
    whole, whole_out = _terminal(36)
    Printer(whole, plain=False).line("assistant", ANSWER)
    streamed, streamed_out = _terminal(36)
    printer = Printer(streamed, plain=False)
    printer.open_block("assistant")
    for index in range(0, len(ANSWER), 3):  # three characters per delta: blocks end mid-delta
        printer.write(ANSWER[index:index + 3])
    printer.close_block()
    assert _visible(streamed_out.getvalue()) == _visible(whole_out.getvalue())
    shown = "\n".join(_visible(whole_out.getvalue()))
    assert "**" not in shown and "Intro with bold." in shown and "more code" in shown and "The end." in shown


def test_progress_is_printed_when_it_has_news() -> None:
    out = io.StringIO()
    view = StreamView(Printer(Console(file=out, width=80, color_system=None), plain=True))
    for data in ({"fraction": 0.1, "message": "rows", "toolCallId": "a"},
                 {"fraction": 0.15, "message": "rows", "toolCallId": "a"},  # not a tenth further: no line
                 {"fraction": 0.1, "toolCallId": "b"},  # another call keeps its own count
                 {"fraction": 0.25, "message": "rows", "toolCallId": "a"},
                 {"fraction": 0.3, "message": "indexing", "toolCallId": "a"},  # new text: a line
                 {"fraction": 1.0, "message": "indexing", "toolCallId": "a"},
                 {"phase": "cleanup"}):
        view.apply({"type": "data-agent-progress", "data": data, "transient": True})
    view.apply({"type": "data-agent-milestone", "data": {"name": "saved", "sequence": 0}})
    assert out.getvalue().splitlines() == [
        "  .. 10% · rows", "  .. 10%", "  .. 25% · rows", "  .. 30% · indexing", "  .. 100% · indexing",
        "  .. cleanup", "  .. milestone: saved"]
