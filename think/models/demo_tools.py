"""The tools the offline demo model knows how to use: small, real and safe.

    class Assistant(Think):
        def get_tools(self):
            return DEMO_TOOLS

* `calculate` evaluates arithmetic without `eval`: numbers, `+ - * / // % **`, parentheses and
  signs, with limits on how big numbers may grow.
* `get_time` reads the clock in an IANA time zone.
* `send_notification` needs a person's approval, and then only records the notification: nothing
  is delivered anywhere. It is there to show the approval flow.
"""

from __future__ import annotations

import ast
import math
import operator
import zoneinfo
from collections.abc import Callable
from datetime import UTC, datetime, tzinfo
from typing import Any

from think.errors import ToolFailed
from think.tools.tool import Tool, tool

MAX_EXPRESSION_CHARS = 500
MAX_INT_BITS = 10_000
"""Integers in a calculation may grow to about 3,000 digits, no further."""
MAX_EXPONENT = 10_000
EXACT_JSON_INT = 2**53
"""Beyond this a JSON number loses digits in a browser, so larger integers come back as strings."""

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_SPELLINGS = {"×": "*", "÷": "/", "−": "-", "^": "**"}


def _too_big(value: Number) -> bool:
    return isinstance(value, int) and value.bit_length() > MAX_INT_BITS


def _check_power(base: Number, exponent: Number) -> None:
    """Refuse powers whose result would be enormous, before computing them (sums and products of
    bounded integers stay cheap, so only powers need checking in advance)."""
    if abs(exponent) > MAX_EXPONENT:
        raise ToolFailed(f"The exponent {exponent} is too large (the limit is {MAX_EXPONENT}).")
    if isinstance(base, int) and exponent > 0 and abs(base).bit_length() * exponent > 2 * MAX_INT_BITS:
        raise ToolFailed("The result would be too large to compute.")


def _evaluate(node: ast.AST) -> Number:
    match node:
        case ast.Expression(body=body):
            return _evaluate(body)
        case ast.Constant(value=value) if isinstance(value, int | float) and not isinstance(value, bool):
            return value
        case ast.UnaryOp(op=op, operand=operand) if type(op) in _UNARY:
            return _UNARY[type(op)](_evaluate(operand))  # type: ignore[no-any-return]
        case ast.BinOp(left=left, op=op, right=right) if type(op) in _BINARY:
            a, b = _evaluate(left), _evaluate(right)
            if isinstance(op, ast.Pow):
                _check_power(a, b)
            result = _BINARY[type(op)](a, b)
            if isinstance(result, complex):
                raise ToolFailed("The result is not a real number.")
            if _too_big(result):
                raise ToolFailed("The result is too large.")
            return result  # type: ignore[no-any-return]
    raise ToolFailed(
        f"Unsupported syntax: {ast.unparse(node) if isinstance(node, ast.expr) else type(node).__name__}. "
        "Use numbers, + - * / // % **, and parentheses."
    )


def _tidy(value: Number) -> Number | str:
    """A calculator's answer: 2 rather than 2.0, 0.3 rather than 0.30000000000000004."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ToolFailed("The result is not a finite number.")
        value = float(f"{value:.12g}")
        if value.is_integer() and abs(value) < EXACT_JSON_INT:
            return int(value)
        return value
    return value if abs(value) <= EXACT_JSON_INT else str(value)


@tool
def calculate(expression: str) -> Number | str:
    """Evaluate an arithmetic expression exactly, instead of guessing the answer.

    Args:
        expression: Numbers with + - * / // % ** (or ^ for powers) and parentheses, such as "12*(3+4)".
    """
    text = expression.strip()
    for spelling, python in _SPELLINGS.items():
        text = text.replace(spelling, python)
    if not text:
        raise ToolFailed("The expression is empty.")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ToolFailed(f"The expression is longer than {MAX_EXPRESSION_CHARS} characters.")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ToolFailed(f"{expression!r} is not a valid arithmetic expression.") from None
    try:
        return _tidy(_evaluate(tree))
    except ZeroDivisionError:
        raise ToolFailed("Division by zero.") from None
    except (OverflowError, RecursionError):
        raise ToolFailed("The result is too large.") from None


def _zone(name: str) -> tzinfo:
    if name.strip().upper() in ("UTC", "Z", "GMT"):
        return UTC  # needs no time zone database
    try:
        return zoneinfo.ZoneInfo(name.strip())
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ToolFailed(
            f"Unknown time zone {name!r}. Use an IANA name such as 'Europe/Paris', "
            "'America/New_York' or 'UTC'."
        ) from None


@tool
def get_time(timezone: str = "UTC") -> dict[str, str]:
    """The current date and time in a time zone.

    Args:
        timezone: An IANA time zone name, such as "Europe/Paris" or "Asia/Tokyo".
    """
    zone = _zone(timezone)
    now = datetime.now(zone)
    label = "UTC" if zone is UTC else timezone.strip()
    return {
        "timezone": label,
        "iso": now.isoformat(timespec="seconds"),
        "readable": f"{now:%A} {now.day} {now:%B %Y, %H:%M}",
    }


@tool(needs_approval=True)
def send_notification(to: str, message: str) -> dict[str, Any]:
    """Send a short notification to a person or a team, once a person has approved it.

    This is a demo tool: it only records the notification in the conversation; nothing is delivered.

    Args:
        to: Who should get it, such as "the team" or "alice@example.com".
        message: The text of the notification.
    """
    return {"sent": True, "to": to, "message": message}


DEMO_TOOLS: list[Tool] = [calculate, get_time, send_notification]
