"""The chat protocol against the real npm client: the stock `useAgent` / `useAgentChat` hooks
(agents 0.32.0, @cloudflare/ai-chat 0.12.2, ai 7.0.173) in headless Chromium, on a real server.

The page is the protocol harness (`harness/`): the hooks and nothing else, driven through
`window.harness`. Each test reads what the person would see (the hook's messages) and checks it
against what the server saved.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.ui.conftest import Browser, live_server
from tests.ui.harness import ProtocolBrowser, ServerProcess, Tab, build_harness, free_port
from tests.ui.protocol_agents import protocol_app


@pytest.fixture(scope="module")
def protocol_browser(browser: Browser) -> Iterator[ProtocolBrowser]:
    build_harness()
    driver = ProtocolBrowser()
    try:
        yield driver
    finally:
        driver.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with live_server(protocol_app(tmp_path / "data")) as url:
        yield url


def saved(url: str, name: str, agent: str = "protocol-chat") -> list[dict[str, Any]]:
    response = httpx.get(f"{url}agents/{agent}/{name}/get-messages", timeout=10)
    response.raise_for_status()
    return list(response.json())


def texts(messages: list[dict[str, Any]]) -> list[str]:
    return [f"{m['role']}: " + "".join(p.get("text", "") for p in m["parts"] if p["type"] == "text")
            for m in messages]


def open_gate(url: str, name: str, agent: str = "protocol-chat") -> None:
    """Let the held `gated` reply of an instance go on."""
    httpx.post(f"{url}agents/{agent}/{name}/gate", timeout=10).raise_for_status()


OpenTab = Callable[..., Tab]


@pytest.fixture
def open_tab(protocol_browser: ProtocolBrowser, server: str) -> Iterator[OpenTab]:
    opened: list[Tab] = []

    def open_(tab: str, name: str, *, agent: str = "protocol-chat", **query: str) -> Tab:
        extra = "".join(f"&{k}={v}" for k, v in query.items())
        page = protocol_browser.open(f"{tab}", f"{server}harness/?agent={agent}&name={name}{extra}")
        opened.append(page)
        return page

    yield open_
    for page in opened:
        try:
            page.close()
        except AssertionError:
            pass


def test_reload_mid_stream_resumes_with_the_exact_text(open_tab: OpenTab, server: str) -> None:
    # The reply is held mid-stream until the reloaded page shows its first half again, so the
    # reload lands in a running stream however slow the machine is.
    tab = open_tab("a", "reload")
    tab.eval("harness.send('gated reload')")
    tab.wait("harness.texts().join('').includes('Gated: held')")
    tab.reload()
    tab.wait("harness.texts().join('').includes('Gated: held')")
    open_gate(server, "reload")
    tab.wait("harness.texts().join('').includes('held open')")
    tab.settled()
    assert tab.texts() == ["user: gated reload", "assistant: Gated: held open"]
    assert texts(saved(server, "reload")) == tab.texts()
    # The reloaded page was offered the stream on connect, ACKed it once and got it replayed.
    received = tab.frames()["received"]
    reloaded = received[max(i for i, f in enumerate(received) if f.get("type") == "cf_agent_identity") - 1:]
    assert reloaded[0]["type"] == "cf_agent_stream_resuming" and "probeId" not in reloaded[0]
    replayed = [f["seq"] for f in reloaded if f.get("replay") and "seq" in f]
    live = [f["seq"] for f in reloaded if f.get("type") == "cf_agent_use_chat_response" and not f.get("replay")
            and "seq" in f]
    assert replayed == list(range(len(replayed))) and live == list(range(len(replayed), len(replayed) + len(live)))
    assert len(tab.sent("cf_agent_stream_resume_ack")) == 1


def test_a_network_blip_on_the_same_page_resumes(open_tab: OpenTab, server: str) -> None:
    tab = open_tab("a", "blip")
    tab.eval("harness.send('gated blip')")
    tab.wait("harness.texts().join('').includes('Gated: held')")
    tab.eval("harness.reconnect()")
    tab.wait("harness.opens >= 2")
    open_gate(server, "blip")
    tab.wait("harness.texts().join('').includes('held open')")
    tab.settled()
    assert tab.texts() == ["user: gated blip", "assistant: Gated: held open"]
    assert tab.received("cf_agent_stream_resuming")  # the reopened socket was offered the running stream
    assert texts(saved(server, "blip")) == tab.texts()


def test_a_second_tab_opened_mid_stream_joins_the_live_stream(open_tab: OpenTab, server: str) -> None:
    # The reply is held mid-stream until the second tab shows its first half: however slow the
    # machine is at opening a tab, the second one joins a stream that is still running.
    first = open_tab("a", "join")
    first.eval("harness.send('gated join')")
    first.wait("harness.texts().join('').includes('Gated: held')")
    second = open_tab("b", "join")
    second.wait("harness.texts().join('').includes('Gated: held')")
    open_gate(server, "join")
    first.wait("harness.texts().join('').includes('held open')")
    second.wait("harness.texts().join('').includes('held open')")
    first.settled()
    second.settled()
    expected = ["user: gated join", "assistant: Gated: held open"]
    assert first.texts() == second.texts() == texts(saved(server, "join")) == expected
    assert second.received("cf_agent_stream_resuming")


def _tool_part(messages: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(p for m in messages for p in m["parts"] if p["type"] == f"tool-{name}")


def test_a_client_tool_declared_on_the_server_round_trips_to_a_final_answer(open_tab: OpenTab, server: str) -> None:
    tab = open_tab("a", "locate")
    tab.eval("harness.send('locate me')")
    tab.wait("harness.texts().join('').includes('Done: ')")
    tab.settled()
    stored = saved(server, "locate")
    assert [m["role"] for m in stored] == ["user", "assistant", "assistant"]  # the continuation is its own message
    part = _tool_part(stored, "get_location")
    assert (part["state"], part["output"]) == ("output-available", {"city": "Lisbon"})
    assert texts(stored)[-1] == 'assistant: Done: {"city":"Lisbon"}'
    assert tab.texts()[-1].endswith('Done: {"city":"Lisbon"}')
    [result] = tab.sent("cf_agent_tool_result")
    assert result["autoContinue"] is True and result["output"] == {"city": "Lisbon"}
    assert [e["toolName"] for e in tab.eval("harness.events") if e["type"] == "toolCall"] == ["get_location"]
    # The continuation came under a server-generated id, announced as pending, then resuming.
    [pending] = tab.received("cf_agent_stream_pending")
    resuming = [f for f in tab.received("cf_agent_stream_resuming") if f["id"] == pending["id"]]
    assert resuming and "probeId" not in resuming[0]
    assert any(f.get("continuation") for f in tab.received("cf_agent_use_chat_response") if f["id"] == pending["id"])


def test_a_tool_the_browser_registers_round_trips_to_a_final_answer(open_tab: OpenTab, server: str) -> None:
    tab = open_tab("a", "browser", clientTools="1")
    tab.eval("harness.send('browser details please')")
    tab.wait("harness.texts().join('').includes('Done: ')")
    tab.settled()
    stored = saved(server, "browser")
    part = _tool_part(stored, "getBrowserInfo")
    assert (part["state"], part["output"]) == ("output-available", {"userAgent": "protocol-harness"})
    assert texts(stored)[-1] == 'assistant: Done: {"userAgent":"protocol-harness"}'
    [request] = tab.sent("cf_agent_use_chat_request")
    assert '"clientTools":[{"name":"getBrowserInfo"' in request["init"]["body"]


def test_an_approval_approved_runs_the_tool_and_continues(open_tab: OpenTab, server: str) -> None:
    tab = open_tab("a", "approve")
    tab.eval("harness.send('notify the team')")
    tab.wait("harness.messages.some(m => m.parts.some(p => p.state === 'approval-requested'))")
    tab.settled()
    call_id = _tool_part(tab.messages(), "notify_team")["toolCallId"]
    assert tab.eval(f"harness.approve({call_id!r}, true)") is True
    tab.wait("harness.texts().join('').includes('Done: Sent: The deploy finished')")
    tab.settled()
    stored = saved(server, "approve")
    part = _tool_part(stored, "notify_team")
    assert part["state"] == "output-available" and part["output"] == "Sent: The deploy finished"
    assert part["approval"]["approved"] is True
    assert texts(stored)[-1] == "assistant: Done: Sent: The deploy finished"
    assert _tool_part(tab.messages(), "notify_team")["state"] == "output-available"


def test_an_approval_denied_ends_the_call_denied_and_the_model_answers(open_tab: OpenTab, server: str) -> None:
    tab = open_tab("a", "deny")
    tab.eval("harness.send('notify the team')")
    tab.wait("harness.messages.some(m => m.parts.some(p => p.state === 'approval-requested'))")
    tab.settled()
    call_id = _tool_part(tab.messages(), "notify_team")["toolCallId"]
    tab.eval(f"harness.approve({call_id!r}, false)")
    tab.wait("harness.texts().join('').includes('Denied.')")
    tab.settled()
    stored = saved(server, "deny")
    part = _tool_part(stored, "notify_team")
    assert part["state"] == "output-denied" and part["approval"]["approved"] is False
    assert texts(stored)[-1] == "assistant: Denied."


def test_a_pending_approval_is_answered_after_a_reload(open_tab: OpenTab, server: str) -> None:
    tab = open_tab("a", "later")
    tab.eval("harness.send('notify the team')")
    tab.wait("harness.messages.some(m => m.parts.some(p => p.state === 'approval-requested'))")
    tab.settled()
    tab.reload()
    tab.wait("harness.messages.some(m => m.parts.some(p => p.state === 'approval-requested'))")
    tab.settled()
    call_id = _tool_part(tab.messages(), "notify_team")["toolCallId"]
    assert tab.eval(f"harness.approve({call_id!r}, true)") is True
    tab.wait("harness.texts().join('').includes('Done: Sent: The deploy finished')")
    tab.settled()
    assert texts(saved(server, "later"))[-1] == "assistant: Done: Sent: The deploy finished"


def test_regenerate_replaces_the_answer(open_tab: OpenTab, server: str, tmp_path: Path) -> None:
    tab = open_tab("a", "regen")
    tab.eval("harness.send('hello there')")
    tab.wait("harness.texts().length === 2")
    tab.settled()
    first_id = tab.messages()[1]["id"]
    tab.eval("harness.regenerate()")
    tab.wait(f"harness.messages.length === 2 && harness.messages[1].id !== {first_id!r} "
             "&& harness.status === 'ready'")
    tab.settled()
    stored = saved(server, "regen")
    assert texts(stored) == tab.texts() == ["user: hello there", "assistant: Echo: hello there"]
    assert stored[1]["id"] != first_id and tab.messages()[1]["id"] == stored[1]["id"]
    tab.reload()
    tab.wait("harness.texts().length === 2")
    assert [m["id"] for m in tab.messages()] == [m["id"] for m in stored]


def test_an_error_turn_is_redelivered_on_reconnect_until_the_next_turn(open_tab: OpenTab, server: str) -> None:
    tab = open_tab("a", "fail")
    tab.eval("harness.send('fail please')")
    tab.wait("harness.error")
    assert "the scripted model failed" in tab.eval("harness.error")
    tab.reload()
    tab.wait("harness.error")  # the failure is delivered again through the resume handshake
    assert "the scripted model failed" in tab.eval("harness.error")
    assert tab.texts() == ["user: fail please", "assistant: Let me try"]
    tab.eval("harness.send('and now')")
    tab.wait("harness.texts().join('').includes('Echo: and now')")
    tab.settled()
    tab.reload()
    tab.wait("harness.texts().length === 4")
    tab.settled()
    assert tab.eval("harness.error") is None
    assert tab.texts() == texts(saved(server, "fail"))


HELD = ["user: gated hold", "assistant: Gated: held open"]


@pytest.mark.parametrize(("agent", "after"), [
    ("queue-chat", ["user: from a", "assistant: Echo: from a", "user: from b", "assistant: Echo: from b"]),
    ("latest-chat", ["user: from a", "user: from b", "assistant: Echo: from b"]),
    ("merge-chat", ["user: from a", "user: from b", "assistant: Echo: from b"]),
    ("debounce-chat", ["user: from a", "user: from b", "assistant: Echo: from b"]),
    ("drop-chat", []),
])
def test_overlapping_submits_from_two_tabs(open_tab: OpenTab, server: str, agent: str, after: list[str]) -> None:
    name = "overlap"
    holder = open_tab("holder", name, agent=agent)
    a = open_tab("a", name, agent=agent)
    b = open_tab("b", name, agent=agent)
    holder.eval("harness.send('gated hold')")
    holder.wait("harness.texts().join('').includes('Gated: held')")
    a.eval("harness.send('from a')")
    if agent == "drop-chat":  # refused at once: the sender gets the transcript and an empty done
        a.wait("harness.status === 'ready' && harness.texts().length === 2")
    else:
        _wait_queued(server, agent, name, 1)
    b.eval("harness.send('from b')")
    if agent == "drop-chat":
        b.wait("harness.status === 'ready' && harness.texts().length === 2")
    else:
        _wait_queued(server, agent, name, 2)
    open_gate(server, name, agent)
    expected = HELD + after
    # The whole text, not just the count: a tab that only watches a stream has its reply message
    # (empty) from the `start` chunk on, before the deltas arrive.
    want = json.dumps(json.dumps(expected, separators=(",", ":")))
    for tab in (holder, a, b):
        tab.wait(f"JSON.stringify(harness.texts()) === {want} && harness.status === 'ready'")
        tab.settled()
    stored = texts(saved(server, name, agent))
    assert stored == expected
    assert {"holder": holder.texts(), "a": a.texts(), "b": b.texts()} == {"holder": stored, "a": stored, "b": stored}
    [request_a] = a.sent("cf_agent_use_chat_request")
    frames_a = [f for f in a.received("cf_agent_use_chat_response") if f["id"] == request_a["id"]]
    if agent in ("latest-chat", "merge-chat", "debounce-chat", "drop-chat"):
        assert frames_a == [{"type": "cf_agent_use_chat_response", "id": request_a["id"], "body": "", "done": True}]
    else:
        assert frames_a[-1]["done"] and frames_a[-1]["outcome"] == "completed"


def _wait_queued(server: str, agent: str, name: str, count: int) -> None:
    """Until `count` turns wait behind the running one (the server has accepted them)."""
    for _ in range(200):  # ≤ 10 s
        if httpx.get(f"{server}agents/{agent}/{name}/queue", timeout=10).json()["waiting"] >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{count} turns never waited in the queue")


def test_a_server_restart_mid_stream_gives_the_partial_and_a_clean_end(protocol_browser: ProtocolBrowser,
                                                                       tmp_path: Path) -> None:
    server = ServerProcess(free_port(), tmp_path / "data")
    server.start()
    try:
        tab = protocol_browser.open("restart", f"{server.url}harness/?agent=protocol-chat&name=restart")
        tab.eval("harness.send('slow 80')")
        # Chunks are written in batches (at most 100 ms apart while a stream runs): after ~1 s of
        # streaming the first words are durable, the newest may not be.
        tab.wait("harness.texts().join('').includes('w35')")
        server.kill()  # no shutdown: the turn's last chunks may not even be written
        tab.wait("harness.closes >= 1")
        server.start()
        tab.wait("harness.opens >= 2", timeout=40)
        tab.wait("harness.status === 'ready' && !harness.busy && harness.texts().length === 2", timeout=20)
        stored = texts(saved(server.url, "restart"))
        assert tab.texts() == stored
        user, reply = stored
        assert user == "user: slow 80"
        words = reply.removeprefix("assistant: ").split()
        assert words == [f"w{i:02d}" for i in range(1, len(words) + 1)] and len(words) >= 5  # a clean prefix
        assert tab.eval("harness.error") is None
        # The reconnected page was offered the interrupted stream, replayed it and got a closing done.
        received = tab.frames()["received"]
        # Its connect frames: the stream offer, `cf_agent_chat_recovering` if the recovery was still
        # running, then the agent's identity.
        identity = max(i for i, f in enumerate(received) if f.get("type") == "cf_agent_identity")
        chat = [f for f in received[identity - 2:identity] if f.get("type") != "cf_agent_chat_recovering"]
        assert chat[-1]["type"] == "cf_agent_stream_resuming"
        after = received[identity - 2:]
        assert any(f.get("replay") and f.get("done") for f in after)
        tab.close()
    finally:
        server.stop()
