"""`@tool`: schemas from signatures and docstrings, validation, and the per-definition cache."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from think import ConfigurationError, Tool, ToolContext, tool
from think.tools import InvalidToolInput


class Address(BaseModel):
    city: str
    zip: str | None = None


def make(prefix: str) -> Tool:
    @tool
    def greet(ctx: ToolContext, who: str, *, times: int = 1) -> str:
        """Greet someone.

        Args:
            who: The person to greet.
            times: How many times.
        """
        return " ".join([f"{prefix} {who}"] * times)

    return greet


def test_the_schema_comes_from_the_signature_and_docstring() -> None:
    greet = make("hi")
    assert greet.description == "Greet someone."
    assert greet.input_schema == {
        "additionalProperties": False, "type": "object", "required": ["who"],
        "properties": {"who": {"type": "string", "description": "The person to greet."},
                       "times": {"type": "integer", "default": 1, "description": "How many times."}},
    }
    assert greet.check_input({"who": "Ada"}) == {"who": "Ada", "times": 1}
    with pytest.raises(InvalidToolInput, match="who"):
        greet.check_input({"times": 2})


def test_closures_of_one_definition_share_the_shape_but_not_their_state() -> None:
    a, b = make("hi"), make("hello")
    assert a.input_schema is b.input_schema  # built once per definition
    ctx = ToolContext(tool_call_id="c", tool_name="greet")
    assert a.execute is not None and b.execute is not None
    assert a.execute({"who": "Ada", "times": 2}, ctx) == "hi Ada hi Ada"
    assert b.execute({"who": "Ada"}, ctx) == "hello Ada"


def test_pydantic_models_are_allowed_as_arguments() -> None:
    @tool
    def ship(to: Address) -> str:
        """Ship a parcel."""
        return to.city

    assert ship.check_input({"to": {"city": "Lisbon"}})["to"] == Address(city="Lisbon")
    assert "$defs" in ship.input_schema or "properties" in ship.input_schema["properties"]["to"]


def test_var_args_and_bad_names_are_configuration_errors() -> None:
    def varargs(*items: str) -> None:
        """No."""

    with pytest.raises(ConfigurationError, match="args"):
        tool(varargs)
    with pytest.raises(ConfigurationError, match="not valid"):
        Tool(name="has space")


def test_one_rule_says_which_calls_the_client_answers() -> None:
    from think.messages import Message, ToolPart
    from think.tools.tool import client_tool, is_client_call, waits_for_answer

    @tool
    def server_side() -> str:
        """Runs here."""
        return "ok"

    tools = {"server_side": server_side, "declared": client_tool("declared")}
    assert not is_client_call("server_side", tools)
    assert is_client_call("declared", tools)  # a client tool among the agent's own tools
    assert is_client_call("registered_by_browser", tools)  # no tool of that name here

    def waiting(name: str, state: str) -> Message:
        return Message(id="m", role="assistant", parts=[ToolPart(type=f"tool-{name}", tool_call_id="c", state=state)])

    assert waits_for_answer(waiting("declared", "input-available"), tools)
    assert waits_for_answer(waiting("server_side", "approval-requested"), tools)
    assert not waits_for_answer(waiting("server_side", "input-available"), tools)  # it runs (or ran) here
    assert not waits_for_answer(waiting("declared", "output-available"), tools)
