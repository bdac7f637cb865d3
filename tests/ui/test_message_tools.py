"""What a message offers in the web UI, in headless Chromium against a live server: the
alternatives of a regenerated answer ("‹ 2/2 ›"), editing a question into a new branch, copying,
when a message was written, a "Stopped" note on a stopped answer, no Regenerate while an
approval is pending, and a running tool's progress on its card."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import httpx
from starlette.responses import PlainTextResponse

from tests.shared_tools import notify_team
from tests.ui.conftest import SCREENSHOTS, Browser
from think import Think, tool
from think.models.base import ModelRequest, ToolMessage
from think.testing import HANG, ScriptedModel, call, text
from think.testing.models import Reply

Serve = Callable[..., Any]


class Tree(Think):
    """Numbers its answers, so an alternative is told from another."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.answers = 0

        def reply(request: ModelRequest) -> Reply:
            if isinstance(request.messages[-1], ToolMessage):
                return "Sent."
            said = request.last_user_text
            if said.startswith("slow"):
                return [text("Counting slowly: one, two,"), HANG]
            if said.startswith("notify"):
                return call("notify_team", message="The deploy finished")
            self.answers += 1
            return f"Answer {self.answers} to {said}"

        self.model = ScriptedModel(reply, chunk_delay=0.005)

    def get_model(self) -> ScriptedModel:
        return self.model

    def get_tools(self) -> list[Any]:
        return [notify_team]


def _open(name: str) -> list[dict[str, Any]]:
    return [{"action": "goto", "path": f"/#/tree/{name}"}, {"action": "waitFor", "selector": "#composer-input"}]


def _send(message: str) -> list[dict[str, Any]]:
    return [{"action": "fill", "selector": "#composer-input", "text": message},
            {"action": "press", "selector": "#composer-input", "key": "Enter"}]


def _turn_over() -> dict[str, Any]:
    return {"action": "waitFor", "selector": "button[aria-label='Send message']", "state": "attached"}


def _answer(text: str) -> dict[str, Any]:
    return {"action": "waitText", "selector": ".msg-assistant .text-part", "text": text}


def test_alternatives_and_edits_can_be_browsed_and_copied(browser: Browser, serve: Serve) -> None:
    with serve([Tree]) as url:
        run = browser.run(url, [
            {"action": "grant", "permissions": ["clipboard-read", "clipboard-write"]},
            *_open("alts"),
            *_send("hello"),
            _answer("Answer 1 to hello"), _turn_over(),
            {"action": "waitFor", "selector": ".msg-assistant .msg-time"},
            {"action": "attr", "selector": ".msg-assistant", "name": "title", "as": "written"},
            {"action": "click", "selector": ".msg-regenerate"},
            _answer("Answer 2 to hello"), _turn_over(),
            {"action": "waitText", "selector": ".msg-assistant .branch-position", "text": "2/2"},
            {"action": "screenshot", "path": str(SCREENSHOTS / "alternatives.png")},
            {"action": "click", "selector": ".msg-assistant .branch-prev"},
            _answer("Answer 1 to hello"),
            {"action": "waitText", "selector": ".msg-assistant .branch-position", "text": "1/2"},
            {"action": "click", "selector": ".msg-assistant .msg-copy"},
            {"action": "waitText", "selector": ".msg-assistant .msg-copy", "text": "Copied"},
            {"action": "eval", "as": "clipboard", "js": "navigator.clipboard.readText()"},
            # Edit the question: a new branch beside it, answered.
            {"action": "click", "selector": ".msg-user .msg-edit"},
            {"action": "fill", "selector": "#edit-input", "text": "hello, edited"},
            {"action": "press", "selector": "#edit-input", "key": "Enter"},
            _answer("Answer 3 to hello, edited"), _turn_over(),
            {"action": "waitText", "selector": ".msg-user .branch-position", "text": "2/2"},
            {"action": "text", "selector": ".msg-user .user-text", "as": "question"},
            {"action": "click", "selector": ".msg-user .branch-prev"},
            {"action": "waitText", "selector": ".msg-user .branch-position", "text": "1/2"},
            _answer("Answer 2 to hello"),  # the original question's branch, down to its newest answer
            {"action": "text", "selector": ".msg-user .user-text", "as": "original"},
        ])
        transcript = httpx.get(url + "agents/tree/alts/get-messages").json()
    values = run.values
    assert values["written"]  # the hover title: when it was written
    assert values["clipboard"] == "Answer 1 to hello"
    assert values["question"] == ["hello, edited"]
    assert values["original"] == ["hello"]
    assert [m["parts"][-1]["text"] for m in transcript] == ["hello", "Answer 2 to hello"]  # the server's view


def test_a_stopped_answer_says_so_and_regenerate_waits_for_an_approval(browser: Browser, serve: Serve) -> None:
    with serve([Tree]) as url:
        run = browser.run(url, [
            *_open("stops"),
            *_send("slow please"),
            _answer("Counting slowly"),
            {"action": "click", "selector": "button[aria-label='Stop generating']"},
            _turn_over(),
            {"action": "waitFor", "selector": ".msg-stopped"},
            {"action": "text", "selector": ".msg-stopped", "as": "stopped"},
            *_send("notify the team"),
            {"action": "waitFor", "selector": "[data-tool-name=notify_team][data-tool-state=approval-requested]"},
            _turn_over(),
            {"action": "count", "selector": ".msg-regenerate", "as": "regenerate_while_pending"},
            {"action": "click", "selector": ".tool-approval button:has-text('Approve')"},
            _answer("Sent."), _turn_over(),
            {"action": "waitFor", "selector": ".msg-regenerate"},
            {"action": "count", "selector": ".msg-stopped", "as": "stopped_after"},
        ])
    assert run.values["stopped"] == ["Stopped"]
    assert run.values["regenerate_while_pending"] == 0
    assert run.values["stopped_after"] == 1  # still on the stopped answer only


class Cruncher(Think):
    """`crunch` reports progress and a milestone, then waits until `POST …/release`."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.release: anyio.Event | None = None

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(lambda request: "Crunched." if isinstance(request.messages[-1], ToolMessage)
                             else call("crunch"))

    def get_tools(self) -> list[Any]:
        agent = self

        @tool
        async def crunch() -> str:
            """Crunch the numbers, slowly."""
            agent.release = agent.release or anyio.Event()
            await agent.report_progress(milestone="loaded")
            await agent.report_progress(fraction=0.4, message="crunching row 4 of 10")
            await agent.release.wait()
            return "done"

        return [crunch]

    async def on_request(self, request: Any) -> Any:
        self.release = self.release or anyio.Event()
        self.release.set()
        return PlainTextResponse("released")


def test_a_running_tool_shows_its_progress_on_its_card(browser: Browser, serve: Serve) -> None:
    with serve([Cruncher]) as url:
        run = browser.run(url, [
            {"action": "goto", "path": "/#/cruncher/c1"}, {"action": "waitFor", "selector": "#composer-input"},
            *_send("crunch it"),
            {"action": "waitFor", "selector": "[data-tool-name=crunch] .tool-progress-bar[aria-valuenow='40']"},
            {"action": "text", "selector": "[data-tool-name=crunch] .tool-progress-text", "as": "shown"},
            {"action": "screenshot", "path": str(SCREENSHOTS / "progress.png")},
            {"action": "eval", "as": "released", "js": "fetch('agents/cruncher/c1/release', {method: 'POST'})"
                                                     ".then(r => r.text())"},
            {"action": "waitFor", "selector": "[data-tool-name=crunch][data-tool-state=output-available]"},
            _answer("Crunched."), _turn_over(),
            {"action": "count", "selector": ".tool-progress", "as": "after"},
        ])
    assert run.values["shown"] == ["40% · crunching row 4 of 10"]
    assert run.values["released"] == "released"
    assert run.values["after"] == 0  # a finished call shows its output, not its progress
