"""The chat page shows a paused `execute` run's pending call with Approve / Deny (real Chromium,
real server): approving runs the call and the model answers in a continuation; denying rejects it."""

from __future__ import annotations

from typing import Any

from tests.tools.execute.agents import SIDE_EFFECTS, get_weather, send_email
from tests.tools.execute.test_approval import MAIL
from tests.ui.conftest import SCREENSHOTS, Browser
from tests.ui.test_chat_page import Serve, _send, _turn_over
from think import Think
from think.models.base import ModelRequest, ToolMessage
from think.testing import ScriptedModel, call
from think.testing.models import Reply
from think.tools.execute import create_execute_tool


def script(request: ModelRequest) -> Reply:
    seen = str(request.messages)
    if "sent to ada@example.com" in seen:
        return "The mail went out."
    if "was rejected" in seen:
        return "No mail, then."
    if isinstance(request.messages[-1], ToolMessage):
        return "Waiting for your approval."
    return call("execute", code=MAIL)


class UiCoder(Think):
    workspace_bash = False

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(script, chunk_delay=0.005)

    def get_tools(self) -> list[Any]:
        return [get_weather, send_email, create_execute_tool(self)]


PAUSED = "[data-tool-name=execute] .tool-approval"


def test_approve_a_paused_execution_from_the_page(browser: Browser, serve: Serve) -> None:
    SIDE_EFFECTS.clear()
    with serve([UiCoder]) as url:
        run = browser.run(url, [
            {"action": "goto", "path": "/#/ui-coder/approve"}, {"action": "waitFor", "selector": "#composer-input"},
            *_send("Mail Ada the weather"),
            {"action": "waitFor", "selector": PAUSED},
            _turn_over(),
            {"action": "text", "selector": f"{PAUSED} p", "as": "prompt"},
            {"action": "screenshot", "path": str(SCREENSHOTS / "execute-paused.png")},
            {"action": "click", "selector": f"{PAUSED} button:has-text('Approve')"},
            {"action": "waitText", "selector": ".msg-assistant .text-part", "text": "The mail went out."},
            {"action": "waitGone", "selector": PAUSED},
            _turn_over(),
        ], timeout=10000)
    assert run.values["prompt"] == ["The code is paused: tools.send_email needs your approval to run (Send an email.)."]
    assert SIDE_EFFECTS == ["weather:Oslo", "email:ada@example.com"]


def test_deny_a_paused_execution_from_the_page(browser: Browser, serve: Serve) -> None:
    SIDE_EFFECTS.clear()
    with serve([UiCoder]) as url:
        browser.run(url, [
            {"action": "goto", "path": "/#/ui-coder/deny"}, {"action": "waitFor", "selector": "#composer-input"},
            *_send("Mail Ada the weather"),
            {"action": "waitFor", "selector": PAUSED},
            _turn_over(),
            {"action": "click", "selector": f"{PAUSED} button:has-text('Deny')"},
            {"action": "waitText", "selector": ".msg-assistant .text-part", "text": "No mail, then."},
            {"action": "waitGone", "selector": PAUSED},
        ], timeout=10000)
    assert SIDE_EFFECTS == ["weather:Oslo"]
