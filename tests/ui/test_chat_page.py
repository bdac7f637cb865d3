"""The shipped chat page, in headless Chromium, against a real server on 127.0.0.1.

The page runs the unmodified `useAgent` / `useAgentChat` hooks; the agent is a `Think` subclass
with a scripted model and real tools. Screenshots land in $THINK_UI_SCREENSHOTS (default
/tmp/think-ui) for a person to look at.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx

from tests.shared_tools import NOTIFIED, add, notify_team
from tests.ui.conftest import SCREENSHOTS, Browser
from think import Think
from think.models.base import ModelRequest, ToolMessage
from think.testing import HANG, ScriptedModel, call, error, reasoning, text
from think.testing.models import Reply

PROBE = "<img src=x onerror=alert(1)>"



def script(request: ModelRequest) -> Reply:
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        result = last.results[0]
        if result.name == "add":
            return f"The sum is **{result.output}**, computed with `add`. {PROBE}"
        return f"Done: {result.output}."
    prompt = request.last_user_text.lower()
    if "notify" in prompt:
        return call("notify_team", message="The deploy finished")
    if "slow" in prompt:
        return [text("Counting slowly: one, two,"), HANG]
    if "fail" in prompt:
        return [text("Let me try"), error("the scripted model failed")]
    return [reasoning("The user wants a sum; the add tool does that."), call("add", a=19, b=23)]


class UiAssistant(Think):
    welcome = "Ask me to add numbers or to notify the team."
    suggestions = ("What is 19 + 23?", "Notify the team")

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(script, chunk_delay=0.01)

    def get_tools(self) -> list[Any]:
        return [add, notify_team]


Serve = Callable[..., Any]
ADDRESS = "ui-assistant"


def _send(message: str) -> list[dict[str, Any]]:
    return [
        {"action": "fill", "selector": "#composer-input", "text": message},
        {"action": "press", "selector": "#composer-input", "key": "Enter"},
    ]


def _turn_over() -> dict[str, Any]:
    """The send button is back (the stop button is gone) once the turn has ended."""
    return {"action": "waitFor", "selector": "button[aria-label='Send message']", "state": "attached"}


def _eventually(read: Callable[[], Any], expected: Any, timeout: float = 3.0) -> Any:
    """`read()` until it returns `expected` (the server may still be handling the last frame)."""
    deadline = time.monotonic() + timeout
    while (value := read()) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


def _open(name: str) -> list[dict[str, Any]]:
    return [{"action": "goto", "path": f"/#/{ADDRESS}/{name}"}, {"action": "waitFor", "selector": "#composer-input"}]


def test_a_message_streams_a_tool_call_and_a_markdown_answer(browser: Browser, serve: Serve) -> None:
    with serve([UiAssistant]) as url:
        info = httpx.get(url + "_think/info").json()
        run = browser.run(url, [
            *_open("first"),
            {"action": "text", "selector": ".suggestion", "as": "suggestions"},
            {"action": "text", "selector": ".empty-hint", "as": "welcome"},
            {"action": "text", "selector": ".model-badge", "as": "badge"},
            {"action": "screenshot", "path": str(SCREENSHOTS / "empty.png")},
            # Shift+Enter is a new line, not a send.
            {"action": "fill", "selector": "#composer-input", "text": "draft"},
            {"action": "press", "selector": "#composer-input", "key": "Shift+Enter"},
            {"action": "eval", "as": "draft", "js": "document.querySelector('#composer-input').value"},
            *_send("What is 19 + 23?"),
            {"action": "waitFor", "selector": "[data-tool-name=add][data-tool-state=output-available]"},
            {"action": "waitText", "selector": ".msg-assistant .text-part", "text": "The sum is"},
            _turn_over(),
            {"action": "waitFor", "selector": ".msg-actions"},
            {"action": "text", "selector": ".msg-user .bubble", "as": "user"},
            {"action": "text", "selector": ".msg-assistant .text-part", "as": "answer"},
            {"action": "eval", "as": "strong", "js": "document.querySelector('.text-part strong')?.textContent"},
            {"action": "eval", "as": "code", "js": "document.querySelector('.text-part code')?.textContent"},
            {"action": "count", "selector": ".msg-assistant img", "as": "images"},
            {"action": "text", "selector": "[data-tool-name=add] .tool-summary", "as": "summary"},
            {"action": "text", "selector": ".reasoning-head", "as": "reasoning"},
            {"action": "click", "selector": "[data-tool-name=add] .tool-head"},
            {"action": "text", "selector": "[data-tool-name=add] .tool-value", "as": "tool_values"},
            {"action": "text", "selector": "[data-tool-name=add] .pill", "as": "tool_state"},
            {"action": "screenshot", "path": str(SCREENSHOTS / "chat.png")},
            # A reload shows the same conversation, from the server.
            *_open("first"),
            {"action": "waitText", "selector": ".msg-assistant .text-part", "text": "The sum is"},
            {"action": "text", "selector": ".msg-assistant .text-part", "as": "reloaded"},
            {"action": "eval", "as": "recent", "js": "JSON.parse(localStorage.getItem('think.conversations.v1'))"},
        ])

    values = run.values
    assert values["suggestions"] == ["What is 19 + 23?", "Notify the team"]  # the agent's own
    assert values["welcome"] == ["Ask me to add numbers or to notify the team."]
    assert values["badge"] == ["Offline demo model" if info["demo"] else info["model"]]
    assert values["draft"] == "draft\n"
    assert values["user"] == ["What is 19 + 23?"]
    [answer] = values["answer"]
    assert answer.startswith("The sum is 42, computed with add.")
    assert PROBE in answer  # shown as text ...
    assert values["images"] == 0  # ... never turned into markup
    assert (values["strong"], values["code"]) == ("42", "add")
    assert values["summary"] == ["{\"a\":19,\"b\":23} → 42"]
    assert values["reasoning"] == ["Reasoning"]
    assert json.loads(values["tool_values"][0]) == {"a": 19, "b": 23}
    assert values["tool_values"][1] == "42"
    assert values["tool_state"] == ["done"]
    assert values["reloaded"] == values["answer"]
    assert {"agent": ADDRESS, "name": "first", "title": "What is 19 + 23?"}.items() <= values["recent"][0].items()

    # The stock hooks: get-messages over HTTP, then the socket on the agent's address.
    assert f"GET /agents/{ADDRESS}/first/get-messages" in run.requests
    assert "GET /_think/info" in run.requests
    assert all(s.split("?")[0].endswith(f"/agents/{ADDRESS}/first") for s in run.sockets)
    [request] = run.sent_of("cf_agent_use_chat_request")
    body = json.loads(request["init"]["body"])
    assert body["trigger"] == "submit-message"
    assert body["messages"][-1]["parts"] == [{"type": "text", "text": "What is 19 + 23?"}]
    assert not [line for line in run.console if line.startswith(("pageerror", "error"))]


def test_approve_sends_the_tool_approval_keyed_by_tool_call(browser: Browser, serve: Serve) -> None:
    with serve([UiAssistant]) as url:
        run = browser.run(url, [
            *_open("approve"),
            *_send("Please notify the team"),
            {"action": "waitFor", "selector": "[data-tool-name=notify_team][data-tool-state=approval-requested]"},
            _turn_over(),
            {"action": "text", "selector": ".tool-approval p", "as": "prompt"},
            {"action": "attr", "selector": "[data-tool-name=notify_team]", "name": "data-tool-call-id", "as": "id"},
            {"action": "screenshot", "path": str(SCREENSHOTS / "approval.png")},
            {"action": "click", "selector": ".tool-approval button:has-text('Approve')"},
            {"action": "waitGone", "selector": "[data-tool-state=approval-requested]"},
        ])
    assert run.values["prompt"] == ["notify_team needs your approval to run."]
    [approval] = run.sent_of("cf_agent_tool_approval")
    assert approval == {"type": "cf_agent_tool_approval", "toolCallId": run.values["id"], "approved": True,
                        "autoContinue": True}


def test_deny_sends_a_refusal_and_shows_the_call_as_denied(browser: Browser, serve: Serve) -> None:
    with serve([UiAssistant]) as url:
        run = browser.run(url, [
            *_open("deny"),
            *_send("Please notify the team"),
            {"action": "waitFor", "selector": "[data-tool-state=approval-requested]"},
            _turn_over(),
            {"action": "click", "selector": ".tool-approval button:has-text('Deny')"},
            {"action": "waitText", "selector": "[data-tool-name=notify_team] .pill", "text": "denied"},
        ])
    [approval] = run.sent_of("cf_agent_tool_approval")
    assert approval["approved"] is False


def test_a_message_sent_as_the_page_connects_keeps_its_place_above_the_answer(browser: Browser,
                                                                               serve: Serve) -> None:
    # The server's frames are held back, so the page is connected but has not had the server's
    # transcript yet. A message sent now would be overwritten by that transcript in the stock hook
    # and its answer would land above it; the page holds it until the connection is in sync.
    with serve([UiAssistant]) as url:
        run = browser.run(url, [
            {"action": "holdSocket", "url": f"/agents/{ADDRESS}/"},
            *_open("early"),
            {"action": "waitOpen", "url": f"/agents/{ADDRESS}/early"},
            *_send("What is 19 + 23?"),
            {"action": "waitFor", "selector": "form.composer[data-held]"},
            {"action": "count", "selector": ".msg-user", "as": "shown_while_held"},
            {"action": "text", "selector": "#composer-hint", "as": "hint"},
            {"action": "releaseSocket"},
            {"action": "waitText", "selector": ".msg-assistant .text-part", "text": "The sum is"},
            _turn_over(),
            {"action": "eval", "as": "order",
             "js": "Array.from(document.querySelectorAll('.msg')).map((el) => el.getAttribute('aria-label'))"},
            {"action": "eval", "as": "draft", "js": "document.querySelector('#composer-input').value"},
        ])
    assert run.values["shown_while_held"] == 0
    assert "sent as soon as the chat is in sync" in run.values["hint"][0]
    assert run.values["order"] == ["You", "Assistant"]
    assert run.values["draft"] == ""
    [request] = run.sent_of("cf_agent_use_chat_request")
    assert "What is 19 + 23?" in request["init"]["body"]


def test_an_approved_tool_runs_and_the_answer_continues(browser: Browser, serve: Serve) -> None:
    NOTIFIED.clear()
    with serve([UiAssistant]) as url:
        run = browser.run(url, [
            *_open("approved"),
            *_send("Please notify the team"),
            {"action": "waitFor", "selector": "[data-tool-state=approval-requested]"},
            _turn_over(),
            {"action": "click", "selector": ".tool-approval button:has-text('Approve')"},
            {"action": "waitFor", "selector": "[data-tool-name=notify_team][data-tool-state=output-available]"},
            {"action": "waitText", "selector": ".msg-assistant .text-part", "text": "Done: Sent: The deploy finished."},
            _turn_over(),
            {"action": "count", "selector": ".error-banner", "as": "errors"},
        ], timeout=8000)
    assert NOTIFIED == ["The deploy finished"]
    assert run.values["errors"] == 0


def test_stop_cancels_the_running_turn_and_keeps_the_partial_answer(browser: Browser, serve: Serve) -> None:
    with serve([UiAssistant]) as url:
        run = browser.run(url, [
            *_open("stop"),
            *_send("Count slowly please"),
            {"action": "waitText", "selector": ".msg-assistant .text-part", "text": "two,"},
            {"action": "click", "selector": "button[aria-label='Stop generating']"},
            _turn_over(),
            {"action": "waitFor", "selector": ".msg-actions"},
            {"action": "text", "selector": ".msg-assistant .text-part", "as": "answer"},
        ])
    [request] = run.sent_of("cf_agent_use_chat_request")
    cancels = run.sent_of("cf_agent_chat_request_cancel")
    assert cancels and cancels[0]["id"] == request["id"]
    assert run.values["answer"][0].strip() == "Counting slowly: one, two,"


def test_a_failed_turn_shows_an_error_banner(browser: Browser, serve: Serve) -> None:
    with serve([UiAssistant]) as url:
        run = browser.run(url, [
            *_open("fail"),
            *_send("Please fail"),
            {"action": "waitFor", "selector": ".error-banner"},
            {"action": "text", "selector": ".error-banner", "as": "banner"},
            {"action": "screenshot", "path": str(SCREENSHOTS / "error.png")},
        ])
    assert "the scripted model failed" in run.values["banner"][0]


class PlainAgent(Think):
    """No welcome text and no suggestions of its own."""

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(script, chunk_delay=0.01)


def test_an_agents_suggestions_are_offered_and_one_click_sends_it(browser: Browser, serve: Serve) -> None:
    with serve([UiAssistant, PlainAgent]) as url:
        info = httpx.get(url + "_think/info").json()
        run = browser.run(url, [
            {"action": "goto", "path": "/#/plain-agent/quiet"},
            {"action": "waitFor", "selector": ".empty-hint"},
            {"action": "count", "selector": ".suggestion", "as": "plain_suggestions"},
            {"action": "text", "selector": ".empty-hint", "as": "plain_hint"},
            *_open("clicked"),
            {"action": "click", "selector": ".suggestion:has-text('What is 19 + 23?')"},
            {"action": "waitText", "selector": ".msg-assistant .text-part", "text": "The sum is"},
            _turn_over(),
            {"action": "text", "selector": ".msg-user .bubble", "as": "user"},
        ])
    assert info["suggestions"] == {"ui-assistant": ["What is 19 + 23?", "Notify the team"], "plain-agent": []}
    assert info["welcome"] == {"ui-assistant": "Ask me to add numbers or to notify the team.", "plain-agent": None}
    assert run.values["plain_suggestions"] == 0
    assert run.values["plain_hint"][0].startswith("You are talking to “plain-agent”")
    assert run.values["user"] == ["What is 19 + 23?"]


def test_regenerate_and_clear(browser: Browser, serve: Serve) -> None:
    with serve([UiAssistant]) as url:
        run = browser.run(url, [
            *_open("redo"),
            *_send("What is 19 + 23?"),
            {"action": "waitText", "selector": ".msg-assistant .text-part", "text": "The sum is"},
            _turn_over(),
            {"action": "click", "selector": ".msg-actions button:has-text('Regenerate')"},
            {"action": "waitSent", "type": "cf_agent_use_chat_request", "count": 2},
            {"action": "waitFor", "selector": ".msg-actions"},
            _turn_over(),
            {"action": "waitText", "selector": ".msg-assistant .text-part", "text": "The sum is"},
            {"action": "count", "selector": ".msg-assistant", "as": "answers"},
            {"action": "click", "selector": "button:has-text('Clear')"},
            {"action": "click", "selector": "button:has-text('Click again to clear')"},
            {"action": "waitFor", "selector": ".suggestion"},
            {"action": "waitSent", "type": "cf_agent_chat_clear"},
        ])
        history = _eventually(lambda: httpx.get(url + f"agents/{ADDRESS}/redo/get-messages").json(), [])
    _, again = run.sent_of("cf_agent_use_chat_request")
    regenerate = json.loads(again["init"]["body"])
    assert regenerate["trigger"] == "regenerate-message"
    assert [m["role"] for m in regenerate["messages"]] == ["user"]  # the whole last answer is redone
    assert run.values["answers"] == 1
    assert run.sent_of("cf_agent_chat_clear") == [{"type": "cf_agent_chat_clear"}]
    assert history == []


def test_switching_conversations_reconnects_and_remembers_names(browser: Browser, serve: Serve) -> None:
    with serve([UiAssistant]) as url:
        run = browser.run(url, [
            *_open("one"),
            *_send("What is 19 + 23?"),
            {"action": "waitText", "selector": ".msg-assistant .text-part", "text": "The sum is"},
            _turn_over(),
            {"action": "fill", "selector": "#conversation-name", "text": "two"},
            {"action": "press", "selector": "#conversation-name", "key": "Enter"},
            {"action": "waitFor", "selector": ".suggestion"},
            {"action": "eval", "as": "hash", "js": "location.hash"},
            {"action": "text", "selector": ".recent-title", "as": "recent"},
            {"action": "click", "selector": ".recent-item:has-text('What is 19 + 23?')"},
            {"action": "waitText", "selector": ".msg-assistant .text-part", "text": "The sum is"},
            # The transcript may show (from get-messages) before the new socket has opened.
            {"action": "waitOpen", "url": f"/agents/{ADDRESS}/one"},
            {"action": "eval", "as": "hash_back", "js": "location.hash"},
        ])
    paths = [s.split("?")[0].rsplit("/agents/", 1)[1] for s in run.sockets]
    assert paths[0] == f"{ADDRESS}/one"
    assert f"{ADDRESS}/two" in paths
    assert paths[-1] == f"{ADDRESS}/one"
    assert [s.split("?")[0].rsplit("/agents/", 1)[1] for s in run.open] == [f"{ADDRESS}/one"]  # "two" closed
    assert run.values["hash"] == f"#/{ADDRESS}/two"
    assert run.values["hash_back"] == f"#/{ADDRESS}/one"
    assert run.values["recent"] == ["two", "What is 19 + 23?"]


def test_the_page_fits_a_phone_and_follows_dark_mode(browser: Browser, serve: Serve) -> None:
    with serve([UiAssistant]) as url:
        run = browser.run(url, [
            *_open("phone"),
            *_send("What is 19 + 23?"),
            {"action": "waitText", "selector": ".msg-assistant .text-part", "text": "The sum is"},
            _turn_over(),
            {"action": "eval", "as": "background", "js": "getComputedStyle(document.documentElement).backgroundColor"},
            {"action": "eval", "as": "overflow",
             "js": "document.documentElement.scrollWidth - document.documentElement.clientWidth"},
            {"action": "screenshot", "path": str(SCREENSHOTS / "phone-dark.png")},
        ], viewport={"width": 390, "height": 780}, colorScheme="dark")
    assert run.values["background"] == "rgb(22, 22, 24)"
    assert run.values["overflow"] == 0
