"""`think chat` against a live server, as a real subprocess driven through pipes; and `think`'s
other entry points (`--version`, `serve --help`)."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx

from tests.chat.live_server import LiveServer, serve_in_thread
from tests.cli.agents import MARKDOWN, CliChat
from tests.cli.conftest import ChatProcess, FrameRecorder, run_think
from tests.shared_tools import NOTIFIED
from think import __version__
from think.client import AgentClient
from think.runtime import EmbeddedRuntime
from think.server import create_app

Chat = Callable[..., ChatProcess]


def transcript(server: LiveServer, room: str) -> list[dict[str, object]]:
    response = httpx.get(server.http_url("cli-chat", room, "get-messages"), timeout=10)
    response.raise_for_status()
    messages: list[dict[str, object]] = response.json()
    return messages


def texts(messages: list[dict[str, object]]) -> list[str]:
    return ["".join(str(p.get("text", "")) for p in m["parts"] if p["type"] == "text")  # type: ignore[attr-defined]
            for m in messages]


def sent(frames: list[str], kind: str) -> list[dict[str, object]]:
    parsed = [json.loads(f) for f in frames]
    return [f for f in parsed if f.get("type") == kind]


# ---- the command's other entry points ---------------------------------------------------------------


def test_version_names_think_and_its_key_dependencies() -> None:
    from importlib import metadata

    result = run_think("--version")
    assert result.returncode == 0, result.stderr
    first, *rest = result.stdout.strip().splitlines()
    assert first == f"think, version {__version__}"
    assert rest[0].strip().startswith(f"python {sys.version.split()[0]}")
    shown = dict(line.split()[:2] for line in rest[1:])
    for name in ("anyio", "starlette", "uvicorn", "pydantic", "httpx"):
        assert shown[name] == metadata.version(name)
    installed = shutil.which("think")
    if installed is not None:  # the console script of the editable install
        script = subprocess.run([installed, "-V"], capture_output=True, text=True, timeout=30, check=False)
        assert script.stdout.strip().splitlines()[0] == f"think, version {__version__}"


def test_serve_help_still_works() -> None:
    result = run_think("serve", "--help")
    assert result.returncode == 0, result.stderr
    assert "Serve agents over the chat WebSocket protocol" in result.stdout
    for option in ("--host", "--port", "--data-dir", "--ui / --no-ui"):
        assert option in result.stdout


def test_chat_help() -> None:
    result = run_think("chat", "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage: python -m think.cli chat [OPTIONS] URL" in result.stdout
    assert "ws://localhost:8000/agents/assistant/alice" in result.stdout and "--plain / --rich" in result.stdout
    listed = run_think("--help")
    assert re.search(r"^\s+chat\s+Chat with a served agent from the terminal", listed.stdout, re.MULTILINE)


# ---- chatting ---------------------------------------------------------------------------------------


def test_answers_stream_with_reasoning_tools_and_errors(chat: Chat, server: LiveServer) -> None:
    cli = chat("stream")
    header = cli.expect("Ctrl-D quits")
    assert f"-- think chat {__version__} · ws://127.0.0.1:{server.port}/agents/cli-chat/stream" in header
    assert f"-- agent cli-chat · instance stream · model scripted-cli · server think {__version__}" in header
    assert "-- no messages yet" in header

    cli.send("hello there")
    assert cli.expect("assistant: Hello! You said: hello there\n") == (
        "\nyou: hello there\nthinking: The user greets me.\nassistant: Hello! You said: hello there\n")

    # After each answer: its tokens (the scripted model counts 10 in per message it is sent, 1 out
    # per word), and the conversation's.
    assert cli.expect("\n") == "-- tokens 10 in · 5 out (conversation: 10 in · 5 out)\n"

    cli.send("add 2 3")
    assert cli.expect("assistant: The sum is 5.\n") == (
        'you: add 2 3\ntool: add {"a":2,"b":3}\n  -> 5\nassistant: The sum is 5.\n')
    assert cli.expect("\n") == "-- tokens 80 in · 4 out (conversation: 90 in · 9 out)\n"  # two model calls

    cli.send("boom now")
    assert cli.expect("error: mock model exploded\n") == (
        "you: boom now\nassistant: About to fail. \nerror: mock model exploded\n")

    cli.send("/history")
    history = cli.expect("-- history (6 messages):\n") + cli.expect("assistant: About to fail. \n")
    assert 'tool: add {"a":2,"b":3}\n  -> 5\n' in history

    cli.close_stdin()  # Ctrl-D
    assert cli.wait() == 0
    assert cli.errors == ""
    assert texts(transcript(server, "stream")) == [
        "hello there", "Hello! You said: hello there", "add 2 3", "The sum is 5.", "boom now", "About to fail. "]


def test_ctrl_c_stops_an_answer_and_a_second_one_quits(chat: Chat, server: LiveServer,
                                                       recorder: FrameRecorder) -> None:
    cli = chat("cancel")
    cli.expect("Ctrl-D quits")
    cli.send("slow please")
    cli.expect("assistant: w01 w02 w03 ")  # streamed: the answer is still going
    cli.interrupt()
    assert cli.expect("(Ctrl-C again to quit)\n") == "\n-- stopping the answer… (Ctrl-C again to quit)\n"
    (request,) = sent(recorder.frames, "cf_agent_use_chat_request")
    frames = recorder.wait_for(lambda fs: bool(sent(fs, "cf_agent_chat_request_cancel")))
    cancel = sent(frames, "cf_agent_chat_request_cancel")
    assert cancel == [{"id": request["id"], "type": "cf_agent_chat_request_cancel"}]
    partial = transcript(server, "cancel")[-1]
    assert partial["parts"] == [{"type": "step-start"}, {"type": "text", "text": "w01 w02 w03 ", "state": "streaming"}]

    # The next line is read once the stopped answer has ended; nothing was printed in between.
    cli.send("after")  # the conversation goes on
    assert cli.expect("you: after\nassistant: Echo: after\n") == "you: after\nassistant: Echo: after\n"
    cli.expect("-- tokens 30 in · 2 out (conversation: 30 in · 2 out)\n")  # printed once the answer has ended
    cli.interrupt()  # at the prompt: quit
    assert cli.wait() == 130


def test_a_tools_progress_is_printed_under_its_call(chat: Chat, server: LiveServer) -> None:
    cli = chat("progress")
    cli.expect("Ctrl-D quits")
    cli.send("crunch it")
    assert cli.expect("assistant: Done: crunched\n") == (
        "\nyou: crunch it\ntool: crunch {}\n  .. milestone: loaded\n  .. 40% · crunching\n"
        "  .. 100% · finished\n  -> crunched\nassistant: Done: crunched\n")
    cli.close_stdin()
    assert cli.wait() == 0


def test_a_terminal_gets_answers_as_markdown_wrapped_at_word_boundaries(server: LiveServer) -> None:
    cli = ChatProcess(server.agent_url("cli-chat", "markdown"), "--rich", env={"COLUMNS": "40"})
    try:
        cli.expect("Ctrl-D quits")
        cli.send("markdown please")
        answer = cli.expect(re.compile(r"Done\. *\n"))
        cli.close_stdin()
        assert cli.wait() == 0
    finally:
        cli.kill()
    lines = answer.splitlines()
    assert max(len(line) for line in lines) <= 40, answer
    assert "assistant" in lines
    assert "**" not in answer and "`" not in answer and "# Plan" not in answer  # rendered, not shown raw
    assert "Here is bold text and code:" in answer
    assert any(line.lstrip().startswith("• first item") for line in lines)
    item = MARKDOWN.split("- a second item ")[1].split("\n")[0]
    first = next(i for i, line in enumerate(lines) if "• a second item" in line)
    wrapped = [line.strip(" •") for line in lines[first:first + 2]]
    assert " ".join(wrapped) == f"a second item {item}", answer  # on two lines, split between words
    code = [line.strip() for line in lines if "print(" in line]
    assert code == ["print('hi')", "print('after a blank line')"]  # one code block, its blank line inside


def test_clear_and_history(chat: Chat, server: LiveServer) -> None:
    async def earlier_conversation() -> None:
        async with AgentClient.connect(server.agent_url("cli-chat", "clear")) as client:
            await (await client.send_chat("one"))

    anyio.run(earlier_conversation)
    cli = chat("clear")
    header = cli.expect("Ctrl-D quits")
    assert "-- history (2 messages):\nyou: one\nassistant: Echo: one\n" in header
    cli.send("/clear")
    cli.expect("-- conversation cleared\n")
    assert transcript(server, "clear") == []
    cli.send("/history")
    cli.expect("-- no messages yet\n")
    cli.send("two")
    cli.expect("assistant: Echo: two\n")
    cli.send("/quit")
    assert cli.wait() == 0
    assert texts(transcript(server, "clear")) == ["two", "Echo: two"]


def test_regenerate_replaces_the_answer(chat: Chat, server: LiveServer) -> None:
    cli = chat("regen")
    cli.expect("Ctrl-D quits")
    cli.send("/regenerate")
    cli.expect("-- nothing to regenerate yet\n")
    cli.send("regen me")
    cli.expect("assistant: Echo: regen me\n")
    cli.expect("-- tokens 10 in · 3 out (conversation: 10 in · 3 out)\n")
    first = transcript(server, "regen")
    cli.send("/regenerate")
    assert cli.expect("assistant: Echo: regen me\n") == "-- regenerating the last answer\nassistant: Echo: regen me\n"
    # The conversation is the branch shown: the replaced answer no longer counts.
    assert cli.expect("\n") == "-- tokens 10 in · 3 out (conversation: 10 in · 3 out)\n"
    cli.send("/bogus")
    cli.expect("error: unknown command /bogus (try /help)\n")
    cli.close_stdin()
    assert cli.wait() == 0
    again = transcript(server, "regen")
    assert texts(again) == ["regen me", "Echo: regen me"] and again[1]["id"] != first[1]["id"]


def test_an_approval_is_asked_and_sent(chat: Chat, server: LiveServer, recorder: FrameRecorder) -> None:
    notified = NOTIFIED.count("The deploy finished")
    cli = chat("approve")
    cli.expect("Ctrl-D quits")
    cli.send("notify the team")
    asked = cli.expect('-- Allow notify_team {"message":"The deploy finished"}? [y/N]\n')
    assert 'tool: notify_team {"message":"The deploy finished"}\n-- notify_team needs your approval\n' in asked
    cli.send("y")
    cli.expect("you: y\n")

    def approval_then_probe(frames: list[str]) -> bool:
        kinds = [json.loads(f)["type"] for f in frames]
        return "cf_agent_tool_approval" in kinds and kinds[-1] != "cf_agent_tool_approval"

    frames = recorder.wait_for(approval_then_probe)
    call_id = next(p["toolCallId"] for m in transcript(server, "approve") for p in m["parts"]  # type: ignore[attr-defined]
                   if p["type"] == "tool-notify_team")
    approval = next(f for f in frames if '"cf_agent_tool_approval"' in f)
    assert approval == ('{"type":"cf_agent_tool_approval","toolCallId":"' + call_id
                        + '","approved":true,"autoContinue":true}')
    # Like useAgentChat, a resume probe follows at once, to attach to the continuation.
    probe = json.loads(frames[frames.index(approval) + 1])
    assert probe["type"] == "cf_agent_stream_resume_request" and len(probe["probeId"]) == 8
    # The server runs the tool and continues; the client follows the continuation stream.
    assert cli.expect("assistant: Done: Sent: The deploy finished\n") == (
        "  -> Sent: The deploy finished\nassistant: Done: Sent: The deploy finished\n")
    assert NOTIFIED.count("The deploy finished") == notified + 1

    cli.send("notify them again")
    cli.expect("? [y/N]\n")
    cli.send("no")
    cli.expect("you: n\n-- notify_team was not approved\nassistant: Done: ")  # the model is told, and answers
    cli.send("/quit")
    assert cli.wait() == 0
    assert NOTIFIED.count("The deploy finished") == notified + 1  # not run when denied
    parts = [p for m in transcript(server, "approve") for p in m["parts"]]  # type: ignore[attr-defined]
    assert [p["state"] for p in parts if p["type"] == "tool-notify_team"] == ["output-available", "output-denied"]


def test_joining_while_an_answer_streams_follows_it(chat: Chat, server: LiveServer) -> None:
    async def start_a_slow_answer_and_leave() -> None:
        async with AgentClient.connect(server.agent_url("cli-chat", "join")) as client:
            turn = await client.send_chat("slow for the other tab")
            await client.wait_until(lambda c: turn.text == "w01 w02 w03 ")

    anyio.run(start_a_slow_answer_and_leave)  # the turn goes on without its tab
    cli = chat("join")
    header = cli.expect("Ctrl-D quits\n")
    assert "-- history (1 message):\nyou: slow for the other tab\n" in header
    cli.expect("-- an answer is streaming; following it\nassistant: w01 w02 w03 ")
    cli.interrupt()
    cli.expect("-- stopping the answer… (Ctrl-C again to quit)\n")
    cli.close_stdin()  # read once the stopped answer has ended
    assert cli.wait() == 0
    assert cli.output.endswith("-- stopping the answer… (Ctrl-C again to quit)\n")  # nothing after it
    assert texts(transcript(server, "join")) == ["slow for the other tab", "w01 w02 w03 "]


def test_an_http_url_works_too(chat: Chat, server: LiveServer) -> None:
    cli = chat("", url=server.http_url("cli-chat", "over-http"))
    assert f"· ws://127.0.0.1:{server.port}/agents/cli-chat/over-http\n" in cli.expect("Ctrl-D quits")
    cli.send("hi")
    cli.expect("assistant: Echo: hi\n")
    cli.close_stdin()
    assert cli.wait() == 0


def test_the_server_going_away_ends_the_chat(tmp_path: Path) -> None:
    app = create_app([CliChat], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60))  # no /_think/info
    with serve_in_thread(app) as live:
        cli = ChatProcess(live.agent_url("cli-chat", "gone"))
        try:
            assert "model unknown (no /_think/info on this server)" in cli.expect("Ctrl-D quits")
            cli.send("hi")
            cli.expect("assistant: Echo: hi\n")
        except BaseException:
            cli.kill()
            raise
    try:  # the server has shut down
        cli.expect(re.compile(r"error: the server closed the connection \(\d+.*\)\n"))
        assert cli.wait() == 1
    finally:
        cli.kill()


# ---- bad addresses ----------------------------------------------------------------------------------


def test_bad_urls_get_a_clear_error(server: LiveServer) -> None:
    not_a_url = run_think("chat", "localhost:8000")
    assert not_a_url.returncode == 2 and not_a_url.stdout == ""
    assert "think chat: 'localhost:8000' is not a ws://, wss://, http:// or https:// URL" in not_a_url.stderr

    no_agent = run_think("chat", f"ws://127.0.0.1:{server.port}")
    assert no_agent.returncode == 2
    assert "does not name an agent instance: the path must end with <agent>/<name>" in no_agent.stderr

    unknown_agent = run_think("chat", server.agent_url("no-such-agent", "x"))
    assert unknown_agent.returncode == 1
    assert "the server refused the connection to" in unknown_agent.stderr
    assert "(HTTP 400 Bad Request: Invalid request)" in unknown_agent.stderr

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    refused = run_think("chat", f"ws://127.0.0.1:{free_port}/agents/cli-chat/x")
    assert refused.returncode == 1
    assert "connection refused (is the server running?)" in refused.stderr
    assert "Traceback" not in refused.stderr + unknown_agent.stderr + no_agent.stderr + not_a_url.stderr

