"""The page lists paused work (real Chromium, real server): a parked action shows in the message and
in the top bar's approvals list; another browser (another tab, another device) opened later
approves it from the list; a reload shows the outcome and an empty list."""

from __future__ import annotations

from typing import Any

from tests.ui.conftest import SCREENSHOTS, Browser
from tests.ui.test_chat_page import Serve, _send, _turn_over
from think import Think, action
from think.models.base import ModelRequest, ToolMessage
from think.testing import ScriptedModel, call
from think.testing.models import Reply

SENT: list[str] = []


@action(kind="durable-pause", approval_summary="Send the weekly report", approval_risk="high")
def send_report(to: str) -> dict[str, str]:
    """Send the weekly report by email."""
    SENT.append(to)
    return {"sent_to": to}


def script(request: ModelRequest) -> Reply:
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        output = last.results[0].output
        if isinstance(output, dict) and output.get("status") == "paused":
            return "It will go out once you approve it."
        if isinstance(output, dict) and "error" in output:
            return "Not sent."
        return "The report went out."
    return call("send_report", to="team@example.com")


class UiShop(Think):
    workspace_bash = False

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(script, chunk_delay=0.005)

    def get_actions(self) -> list[Any]:
        return [send_report]


CHIP = "button[aria-label='Pending approvals']"
ENTRY = "#approvals-panel .approval"
INLINE = "[data-tool-name=send_report] .tool-approval"


def test_a_parked_action_is_listed_and_approved_from_another_browser(browser: Browser, serve: Serve) -> None:
    SENT.clear()
    with serve([UiShop]) as url:
        parked = browser.run(url, [
            {"action": "goto", "path": "/#/ui-shop/weekly"}, {"action": "waitFor", "selector": "#composer-input"},
            *_send("Send the weekly report"),
            {"action": "waitText", "selector": ".msg-assistant .text-part",
             "text": "It will go out once you approve it."},
            _turn_over(),
            {"action": "waitFor", "selector": INLINE},
            {"action": "text", "selector": f"{INLINE} p", "as": "inline"},
            {"action": "waitFor", "selector": CHIP},
            {"action": "text", "selector": CHIP, "as": "chip"},
        ], timeout=10000)
        assert parked.values["inline"] == ["Waiting for you: send_report needs your approval to run "
                                           "(Send the weekly report)."]
        assert parked.values["chip"] == ["Approvals 1"] and SENT == []

        other = browser.run(url, [  # a fresh browser profile: another tab or device, later
            {"action": "goto", "path": "/#/ui-shop/weekly"}, {"action": "waitFor", "selector": CHIP},
            {"action": "click", "selector": CHIP},
            {"action": "waitFor", "selector": ENTRY},
            {"action": "text", "selector": f"{ENTRY} .approval-summary", "as": "summary"},
            {"action": "text", "selector": f"{ENTRY} .approval-risk", "as": "risk"},
            {"action": "text", "selector": f"{ENTRY} pre", "as": "input"},
            {"action": "screenshot", "path": str(SCREENSHOTS / "approvals-panel.png")},
            {"action": "click", "selector": f"{ENTRY} button:has-text('Approve')"},
            {"action": "waitText", "selector": ".msg-assistant .text-part", "text": "The report went out."},
            {"action": "waitGone", "selector": CHIP},
            {"action": "waitGone", "selector": INLINE},
        ], timeout=10000)
        assert other.values["summary"] == ["Send the weekly report"] and other.values["risk"] == ["high risk"]
        assert '"team@example.com"' in other.values["input"][0]
        assert [f["method"] for f in other.sent_of("rpc")].count("approve_execution") == 1
        assert SENT == ["team@example.com"]

        reloaded = browser.run(url, [
            {"action": "goto", "path": "/#/ui-shop/weekly"},
            {"action": "waitText", "selector": ".msg-assistant .text-part", "text": "The report went out."},
            {"action": "count", "selector": CHIP, "as": "chips"},
            {"action": "text", "selector": ".msg-assistant .text-part", "as": "texts"},
        ], timeout=10000)
        assert reloaded.values["chips"] == 0
        assert "It will go out once you approve it." not in reloaded.values["texts"]  # the note went with the pause
    assert SENT == ["team@example.com"]
