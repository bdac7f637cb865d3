"""The chat page shows each answer's tokens (and cost, when the model's price is known) and the
conversation's, read off the page in headless Chromium against a real server."""

from __future__ import annotations

from typing import Any

from tests.shared_tools import add
from tests.ui.conftest import SCREENSHOTS, Browser
from tests.ui.test_chat_page import Serve, _open, _send, _turn_over
from think import Think
from think.models.base import ModelRequest, ToolMessage
from think.testing import ScriptedModel, call, usage
from think.testing.models import Reply
from think.usage import cost_of
from think.usage.meter import format_cost

MODEL = "openai:gpt-4.1-mini"


def script(request: ModelRequest) -> Reply:
    if isinstance(request.messages[-1], ToolMessage):
        return ["The sum is 42.", usage(input=1300, output=8)]
    if "again" in request.last_user_text:
        return ["Still 42.", usage(input=1500, output=4)]
    return [call("add", a=19, b=23), usage(input=1200, output=30, cached=1000)]


class PricedUi(Think):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(script, model_id=MODEL)

    def get_tools(self) -> list[Any]:
        return [add]


class UnpricedUi(PricedUi):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel(script)


def _usage_reads() -> list[dict[str, Any]]:
    return [
        {"action": "text", "selector": ".msg-usage", "as": "answers"},
        {"action": "text", "selector": ".usage-conversation", "as": "conversation"},
        {"action": "attr", "selector": ".usage-conversation", "name": "data-output-tokens", "as": "out"},
    ]


def cost(*calls: tuple[int, int, int]) -> float:
    total = 0.0
    for i, o, c in calls:
        price = cost_of(MODEL, input_tokens=i, output_tokens=o, cached_input_tokens=c)
        assert price is not None
        total += price
    return total


def test_tokens_and_cost_per_answer_and_per_conversation(browser: Browser, serve: Serve) -> None:
    with serve([PricedUi]) as url:
        run = browser.run(url, [
            *_open("priced"),
            *_send("What is 19 + 23?"),
            {"action": "waitFor", "selector": ".msg-usage"},
            _turn_over(),
            {"action": "text", "selector": ".msg-usage", "as": "first"},
            {"action": "attr", "selector": ".msg-usage", "name": "title", "as": "detail"},
            *_send("and again?"),
            {"action": "waitText", "selector": ".msg-assistant:nth-of-type(4) .msg-usage", "text": "tokens"},
            _turn_over(),
            *_usage_reads(),
            {"action": "screenshot", "path": str(SCREENSHOTS / "usage.png")},
            # A reload shows the same figures, from the transcript the server stored.
            *_open("priced"),
            {"action": "waitText", "selector": ".usage-conversation", "text": "tokens"},
            {"action": "text", "selector": ".msg-usage", "as": "reloaded_answers"},
            {"action": "text", "selector": ".usage-conversation", "as": "reloaded_conversation"},
        ])
    first = cost((1200, 30, 1000), (1300, 8, 0))
    second = cost((1500, 4, 0))
    values = run.values
    assert values["first"] == [f"2,538 tokens · {format_cost(first)}"]
    assert values["detail"] == "2,500 in · 38 out · 1,000 cached"
    assert values["answers"] == [f"2,538 tokens · {format_cost(first)}", f"1,504 tokens · {format_cost(second)}"]
    assert values["conversation"] == [f"4,042 tokens · {format_cost(first + second)}"]
    assert values["out"] == "42"
    assert values["reloaded_answers"] == values["answers"]
    assert values["reloaded_conversation"] == values["conversation"]


def test_a_model_without_a_price_shows_tokens_only(browser: Browser, serve: Serve) -> None:
    with serve([UnpricedUi]) as url:
        run = browser.run(url, [
            *_open("unpriced"),
            *_send("What is 19 + 23?"),
            {"action": "waitFor", "selector": ".msg-usage"},
            _turn_over(),
            *_usage_reads(),
            {"action": "attr", "selector": ".msg-usage", "name": "title", "as": "detail"},
        ])
    assert run.values["answers"] == ["2,538 tokens"]
    assert run.values["conversation"] == ["2,538 tokens"]
    assert run.values["detail"] == "2,500 in · 38 out · 1,000 cached · price unknown for this model"
