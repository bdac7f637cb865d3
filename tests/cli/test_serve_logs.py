"""What a real `think serve` writes to its log: a line per turn, failed provider calls with their
status, retries, recoveries; JSON lines with `--log-format json`. The model is the fake provider
(`tests.models.fake_llm_server`, a real HTTP server) behind `openai-compatible:`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.logged_server import logged_serve
from tests.models.fake_llm_server import FakeLLMServer, serve_in_thread
from tests.recovery.crash_lanes import held_env, holds
from tests.submissions.server_process import eventually
from think.client import AgentClient

READY = "/agents/plain/probe/get-messages"
TURN = re.compile(r"think\.turns: plain/alice (\S+) model=(\S+) steps=(\d+) tools=(\d+) tokens=(\S+) ms=(\d+) "
                  r"outcome=(\S+)(?: error=\"(.*)\")?$")


@pytest.fixture
def provider() -> Iterator[FakeLLMServer]:
    with serve_in_thread(FakeLLMServer()) as fake:
        yield fake


def model_env(provider: FakeLLMServer, scenario: str, tmp_path: Path) -> dict[str, str]:
    return {"THINK_MODEL": f"openai-compatible:{provider.url}/v1#{scenario}", "THINK_DATA_DIR": str(tmp_path / "d")}


async def chat_once(server_ws: str, text: str) -> str:
    async with AgentClient.connect(f"{server_ws}/agents/plain/alice", call_timeout=10) as client:
        turn = await client.send_chat(text)
        await turn
        return turn.request_id


async def test_a_completed_turn_is_one_info_line_with_its_model_steps_tokens_and_outcome(
        tmp_path: Path, provider: FakeLLMServer) -> None:
    log = tmp_path / "serve.log"
    with logged_serve(["tests.cli.ops_agents:Plain"], model_env(provider, "text", tmp_path), log,
                      ready_path=READY) as server:
        request_id = await chat_once(server.ws, "hi")
        [line] = await server.wait_line("think.turns:")
    match = TURN.search(line)
    assert match is not None, line
    assert match.group(1, 2) == (request_id, "openai-compatible:text"), line  # the label: no base URL
    assert match.group(3, 4, 5, 7) == ("1", "0", "12/3", "completed"), line
    assert " INFO " in line
    assert "uvicorn.access" not in log.read_text()  # the access log is off by default


async def test_a_401_is_logged_with_its_status_and_the_providers_message_and_the_turn_as_an_error(
        tmp_path: Path, provider: FakeLLMServer) -> None:
    log = tmp_path / "serve.log"
    with logged_serve(["tests.cli.ops_agents:Plain"], model_env(provider, "http-401", tmp_path), log,
                      ready_path=READY) as server:
        await chat_once(server.ws, "hi")
        [turn] = await server.wait_line("think.turns:")
    [failed] = [line for line in log.read_text().splitlines() if "think.models:" in line]
    assert " WARNING " in failed and "(status 401)" in failed and "Incorrect API key provided" in failed, failed
    assert f"{provider.url}/v1/chat/completions" in failed
    assert "retry" not in log.read_text()  # a 401 is not retried
    match = TURN.search(turn)
    assert match is not None and match.group(7) == "error" and "HTTP 401" in (match.group(8) or ""), turn
    assert len(provider.requests) == 1


async def test_a_500_is_logged_for_every_attempt_with_the_retry_between(
        tmp_path: Path, provider: FakeLLMServer) -> None:
    log = tmp_path / "serve.log"
    with logged_serve(["tests.cli.ops_agents:Plain"], model_env(provider, "http-500", tmp_path), log,
                      ready_path=READY) as server:
        await chat_once(server.ws, "hi")
        [turn] = await server.wait_line("think.turns:")
    text = log.read_text()
    failures = [line for line in text.splitlines() if "think.models:" in line]
    assert len(failures) == 2 and all("(status 500)" in line and "The server had an error" in line
                                      for line in failures), text
    [retry] = [line for line in text.splitlines() if "retry 1 of 1" in line]
    assert "status 500" in retry, retry
    assert text.index(failures[0]) < text.index(retry) < text.index(failures[1]) < text.index(turn)
    assert "outcome=error" in turn and len(provider.requests) == 2


async def test_json_format_writes_one_object_per_line_with_the_turns_fields(
        tmp_path: Path, provider: FakeLLMServer) -> None:
    log = tmp_path / "serve.log"
    with logged_serve(["tests.cli.ops_agents:Plain"], model_env(provider, "text", tmp_path), log,
                      "--log-format", "json", "--access-log", ready_path=READY) as server:
        request_id = await chat_once(server.ws, "hi")
        await server.wait_line('"think.turns"')
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    [turn] = [r for r in records if r["logger"] == "think.turns"]
    assert turn["level"] == "info" and turn["request_id"] == request_id and turn["agent"] == "plain/alice"
    assert (turn["steps"], turn["tools"], turn["tokens_in"], turn["tokens_out"], turn["outcome"]) == (
        1, 0, 12, 3, "completed")
    assert any(r["logger"] == "think.server" and "ws://localhost" in r["message"] for r in records)  # the banner
    assert any(r["logger"] == "uvicorn.access" and "get-messages" in r["message"] for r in records)


async def test_a_recovered_turn_logs_the_recovery_and_how_it_ended(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    gate, tools, env = held_env(tmp_path)
    target, ready = ["tests.recovery.crash_agents:Crashy"], "/agents/crashy/probe/get-messages"
    with logged_serve(target, env, log, ready_path=ready) as server:
        async with AgentClient.connect(f"{server.ws}/agents/crashy/chat", call_timeout=10) as client:
            await client.send_chat("hi")
            await eventually(lambda: holds(tools) == 1)  # mid-answer, held there
            server.kill()
    gate.unlink()
    with logged_serve(target, env, log, ready_path=ready) as server:
        async with AgentClient.connect(f"{server.ws}/agents/crashy/chat", call_timeout=10):
            [began] = await server.wait_line("think.recovery:")
            [ended] = await server.wait_line("attempt 1 ended")
            await server.wait_line("think.turns: crashy/chat")
    assert re.search(r"recovery of interrupted turn \S+: continue \(attempt 1\) as \S+", began), began
    assert "ended completed" in ended and " INFO " in ended
    [turn] = [line for line in log.read_text().splitlines() if "think.turns: crashy/chat" in line]
    assert "outcome=completed" in turn


async def test_refused_frames_are_logged_a_few_per_connection_then_counted(
        tmp_path: Path, provider: FakeLLMServer) -> None:
    from websockets.asyncio.client import connect as ws_connect

    log = tmp_path / "serve.log"
    with logged_serve(["tests.cli.ops_agents:Plain"], model_env(provider, "text", tmp_path), log,
                      ready_path=READY) as server:
        async with ws_connect(f"{server.ws}/agents/plain/alice") as ws:
            for i in range(30):
                await ws.send(f"not a frame {i}")
            answered = 0
            while answered < 30:  # every refusal is answered before the client leaves
                answered += "cf_agent_protocol_error" in str(await ws.recv())
        await server.wait_line("closed after 30 refusals (25 not logged)")
    refused = [line for line in log.read_text().splitlines() if "think.protocol:" in line]
    assert len(refused) == 7, refused  # five refusals, "the rest are counted", the count at close
    assert all("refused a frame: Not a protocol frame" in line for line in refused[:5])
