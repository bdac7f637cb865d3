"""The AI SDK HTTP protocol driven by the real `ai` package (`Chat` over `DefaultChatTransport`,
what `useChat` runs) under Node, against a live uvicorn server: a turn and a regeneration, a
server tool, an approval, client tools (declared on the server, and registered by the page), a
page closed mid-stream whose successor resumes the stream (also mid-continuation), an idle
resume, and `on_before_connect` refusing both endpoints. See tests/node/ai_sdk.mjs."""

from __future__ import annotations

import json
from typing import Any

from tests.ui_protocols.conftest import AiSdkRun

WORDS = "w01 w02 w03 w04 w05"


def _shape(messages: list[dict[str, Any]]) -> list[tuple[str, str, list[tuple[Any, ...]]]]:
    """What a person sees of a transcript: ids, roles, and each part's kind and content."""
    out = []
    for message in messages:
        parts: list[tuple[Any, ...]] = []
        for part in message["parts"]:
            if part["type"] in ("text", "reasoning"):
                parts.append((part["type"], part["text"]))
            elif part["type"].startswith("tool-"):
                parts.append((part["type"], part["state"], json.dumps(part.get("output"), sort_keys=True)))
            else:
                parts.append((part["type"],))
        out.append((message["id"], message["role"], parts))
    return out


def _as_shown(transcript: list[dict[str, Any]]) -> list[tuple[str, str, list[tuple[Any, ...]]]]:
    """The stored transcript as `useChat` shows it: the server keeps a continuation's reply (after a
    tool answer) as an assistant message of its own; the client appends it to the message it
    continues, under that message's id."""
    out: list[tuple[str, str, list[tuple[Any, ...]]]] = []
    for entry in _shape(transcript):
        if out and out[-1][1] == entry[1] == "assistant":
            out[-1] = (out[-1][0], "assistant", out[-1][2] + entry[2])
        else:
            out.append(entry)
    return out


def _events(received: str) -> list[Any]:
    """The SSE body as the `ai` package parses it: `data: <json>` events, then `[DONE]`."""
    assert received.endswith("data: [DONE]\n\n"), received[-200:]
    blocks = received.split("\n\n")
    assert blocks[-1] == ""
    assert all(block.startswith("data: ") and "\n" not in block for block in blocks[:-1]), received
    *chunks, done = (block.removeprefix("data: ") for block in blocks[:-1])
    assert done == "[DONE]"
    return [json.loads(chunk) for chunk in chunks]


def _posts(page: dict[str, Any]) -> list[dict[str, Any]]:
    return [entry for entry in page["http"] if entry["method"] == "POST"]


def test_a_turn_streams_with_the_headers_the_ai_package_expects(ai_sdk_run: AiSdkRun) -> None:
    outcome = ai_sdk_run.scenario("turn")
    first = outcome["first"]
    (post,) = _posts(first)
    assert post["status"] == 200
    assert {k: post["headers"][k] for k in ("content-type", "cache-control", "connection",
                                            "x-vercel-ai-ui-message-stream", "x-accel-buffering")} == {
        "content-type": "text/event-stream", "cache-control": "no-cache", "connection": "keep-alive",
        "x-vercel-ai-ui-message-stream": "v1", "x-accel-buffering": "no"}
    body = json.loads(post["body"])
    assert body["trigger"] == "submit-message" and body["id"].startswith("chat-turn-")
    events = _events(post["received"])
    assert events[0]["type"] == "start" and events[-1]["type"] == "finish"
    assert first["status"] == "ready" and first["error"] is None
    user, reply = _shape(first["messages"])
    assert user[1:] == ("user", [("text", "hello there")])
    assert reply[1:] == ("assistant", [("step-start",), ("reasoning", "The user greets me."),
                                       ("text", "Hello! You said: hello there")])
    assert reply[0] == events[0]["messageId"]


def test_regenerate_replaces_the_reply_on_the_server_too(ai_sdk_run: AiSdkRun) -> None:
    outcome = ai_sdk_run.scenario("turn")
    regenerated = outcome["regenerated"]
    second = json.loads(_posts(regenerated)[1]["body"])
    assert second["trigger"] == "regenerate-message"
    old = _shape(outcome["first"]["messages"])
    new = _shape(regenerated["messages"])
    assert len(new) == 2 and new[0] == old[0] and new[1][0] != old[1][0] and new[1][1:] == old[1][1:]
    assert _shape(outcome["transcript"]) == new


def test_a_server_tool_call_and_its_result(ai_sdk_run: AiSdkRun) -> None:
    outcome = ai_sdk_run.scenario("tool")
    page = outcome["page"]
    assert page["status"] == "ready"
    (_, reply) = _shape(page["messages"])
    assert reply[2] == [("step-start",), ("tool-add", "output-available", "5"), ("step-start",),
                        ("text", "The sum is 5.")]
    assert _shape(outcome["transcript"]) == _shape(page["messages"])


def test_an_approval_answered_with_add_tool_approval_response(ai_sdk_run: AiSdkRun) -> None:
    outcome = ai_sdk_run.scenario("approval")
    asked = outcome["asked"]["messages"][-1]
    (part,) = [p for p in asked["parts"] if p["type"] == "tool-danger"]
    assert part["state"] == "approval-requested" and part["approval"]["id"].startswith("approval-")
    page = outcome["page"]
    _, answer = _posts(page)
    sent = json.loads(answer["body"])
    assert sent["trigger"] == "submit-message" and sent["messageId"] == asked["id"]
    assert sent["messages"][-1]["parts"][-1]["state"] == "approval-responded"
    assert answer["status"] == 200 and _events(answer["received"])[-1]["type"] == "finish"
    (_, reply) = _shape(page["messages"])
    assert reply == (asked["id"], "assistant", [
        ("step-start",), ("tool-danger", "output-available", json.dumps({"deleted": "notes.txt"})),
        ("step-start",), ("text", "Deleted notes.txt.")])
    assert _as_shown(outcome["transcript"]) == _shape(page["messages"])
    assert [m["role"] for m in outcome["transcript"]] == ["user", "assistant", "assistant"]


def test_a_denied_approval_is_denied_on_the_server(ai_sdk_run: AiSdkRun) -> None:
    outcome = ai_sdk_run.scenario("denied")
    page = outcome["page"]
    (_, reply) = _shape(page["messages"])
    assert reply[2][1][:2] == ("tool-danger", "output-denied")
    assert reply[2][-1][0] == "text" and reply[2][-1][1].startswith("Kept it: ")
    assert "Removed" not in json.dumps(outcome["transcript"])
    assert _as_shown(outcome["transcript"]) == _shape(page["messages"])


def test_a_client_tool_answered_with_add_tool_output(ai_sdk_run: AiSdkRun) -> None:
    outcome = ai_sdk_run.scenario("clientTool")
    page = outcome["page"]
    assert len(_posts(page)) == 2 and page["status"] == "ready"
    (_, reply) = _shape(page["messages"])
    assert reply[2] == [("step-start",), ("tool-get_city", "output-available", json.dumps({"city": "Paris"})),
                        ("step-start",), ("text", "You are in Paris.")]
    assert _as_shown(outcome["transcript"]) == _shape(page["messages"])


def test_a_tool_the_page_registers_in_the_body(ai_sdk_run: AiSdkRun) -> None:
    outcome = ai_sdk_run.scenario("pageTool")
    page = outcome["page"]
    (_, reply) = _shape(page["messages"])
    assert reply[2][1] == ("tool-get_location", "output-available", json.dumps({"lat": 48.85}))
    assert reply[2][-1] == ("text", "Located.")
    assert _as_shown(outcome["transcript"]) == _shape(page["messages"])


def _deltas(received: str) -> list[str]:
    return [e["delta"] for e in _events(received) if e["type"] == "text-delta"]


def test_a_page_closed_mid_stream_is_resumed_by_the_next_without_gaps_or_duplicates(ai_sdk_run: AiSdkRun) -> None:
    outcome = ai_sdk_run.scenario("reload")
    before = outcome["before"]
    assert before["messages"][-1]["parts"][-1]["text"] == "w01 w02 w03 "
    assert [m["role"] for m in outcome["loaded"]] == ["user"]  # the reply is not saved yet
    after = outcome["after"]
    (resume,) = after["http"]
    assert resume["method"] == "GET" and resume["url"].endswith("/chat/chat-" + resume["url"].split("/")[-4]
                                                                + "/stream")
    assert resume["status"] == 200 and resume["headers"]["x-vercel-ai-ui-message-stream"] == "v1"
    assert "".join(_deltas(resume["received"])) == WORDS  # every word once, in order
    assert outcome["midway"][-1]["parts"][-1]["text"] == "w01 w02 w03 "  # the replay, before the gate opened
    (user, reply) = _shape(after["messages"])
    assert reply == (before["messages"][-1]["id"], "assistant", [("step-start",), ("text", WORDS)])
    assert _shape(outcome["transcript"]) == [user, reply]


def test_a_page_closed_mid_continuation_is_resumed_with_the_whole_message(ai_sdk_run: AiSdkRun) -> None:
    outcome = ai_sdk_run.scenario("reloadContinuation")
    before = outcome["before"]
    assert before["messages"][-1]["parts"][-1]["text"] == "w01 w02 w03 "
    after = outcome["after"]
    (resume,) = after["http"]
    assert "".join(_deltas(resume["received"])) == WORDS
    assert after["status"] == "ready"
    (user, reply) = _shape(after["messages"])
    assert reply == (before["messages"][-1]["id"], "assistant", [
        ("step-start",), ("tool-get_city", "output-available", json.dumps({"city": "Oslo"})),
        ("step-start",), ("text", WORDS)])
    assert _as_shown(outcome["transcript"]) == [user, reply]


def test_resuming_when_nothing_runs_is_a_204(ai_sdk_run: AiSdkRun) -> None:
    page = ai_sdk_run.scenario("idle")["page"]
    (resume,) = page["http"]
    assert (resume["method"], resume["status"]) == ("GET", 204)
    assert page["status"] == "ready" and page["messages"] == [] and page["error"] is None


def test_on_before_connect_refuses_both_endpoints(ai_sdk_run: AiSdkRun) -> None:
    outcome = ai_sdk_run.scenario("refused")
    sent, resumed = outcome["sent"], outcome["resumed"]
    assert (sent["http"][0]["status"], sent["http"][0]["received"]) == (401, "locked out")
    assert sent["status"] == "error" and sent["error"] == "locked out"
    assert resumed["http"][0]["status"] == 401 and resumed["error"] == "locked out"
